/* SPDX-License-Identifier: MIT */
/* railwire_null_bench: the railset's own cost over the null transport.
 *   cost  submit -> post -> completion -> poll, ns per transfer (null_cost.c)
 *   rate  aggregate against a modelled line rate per rail (null_rate.c) */
#ifndef RW_BENCH_NULL_BENCH_H
#define RW_BENCH_NULL_BENCH_H

#include <stdint.h>

#include <railwire.h>

/* One shape of work for the cost loop. */
struct nb_case {
    const char *name;
    unsigned slices;        /* slices per transfer */
    unsigned depth;         /* transfers kept in flight (submit one by one) */
    unsigned batch;         /* > 0: submit_batch of `batch` transfers, then drain */
    int use_wait;           /* railwire_wait instead of railwire_poll */
};

/* Runs `n` transfers of case c on rs (every op is a copy of *op) and
 * returns how many completed with an error.  Out of line, under this name,
 * so that callgrind's --toggle-collect=nb_measure counts only this loop. */
uint64_t nb_measure(railwire_railset *rs, const railwire_op *op, const struct nb_case *c,
                    uint64_t n);

/* Entry points of the two modes; argv[0] is the mode name. */
int nb_cost_main(int argc, char **argv);
int nb_rate_main(int argc, char **argv);

/* Monotonic clock in ns. */
uint64_t nb_now_ns(void);
/* Median of v[0..n) (sorts v). */
double nb_median(double *v, unsigned n);
/* Parses a comma list of rail counts into out (at most max); returns the count or -1. */
int nb_parse_list(const char *s, unsigned *out, int max);

#endif
