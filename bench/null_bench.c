/* SPDX-License-Identifier: MIT */
/* railwire_null_bench: main, the measured loop and small helpers. */
#include "null_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NB_POLL_MAX 64
#define NB_MAX_BATCH 1024

uint64_t nb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double nb_median(double *v, unsigned n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int nb_parse_list(const char *s, unsigned *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v == 0 || v > 65535 || n == max)
            return -1;
        out[n++] = (unsigned)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

/* Never inlined (an LTO build would otherwise merge it into its caller and
 * callgrind's --toggle-collect=nb_measure would count nothing). */
__attribute__((noinline)) uint64_t nb_measure(railwire_railset *rs, const railwire_op *op,
                                              const struct nb_case *c, uint64_t n)
{
    static railwire_op ops[NB_MAX_BATCH];
    static railwire_handle handles[NB_MAX_BATCH];
    railwire_completion comp[NB_POLL_MAX];
    uint64_t submitted = 0, done = 0, errors = 0;
    unsigned inflight = 0, batch = c->batch > NB_MAX_BATCH ? NB_MAX_BATCH : c->batch;
    unsigned depth = c->depth ? c->depth : 1;

    for (unsigned i = 0; i < batch; i++)
        ops[i] = *op;
    while (done < n) {
        if (batch) {
            if (inflight == 0) {
                uint64_t k = n - submitted < batch ? n - submitted : batch;
                int rc = railwire_submit_batch(rs, ops, (size_t)k, handles);
                if (rc < 0 || (uint64_t)rc != k)
                    return n - done; /* count what never ran as failed */
                submitted += k;
                inflight += (unsigned)k;
            }
        } else {
            while (inflight < depth && submitted < n) {
                if (railwire_submit(rs, op, &handles[0]) < 0)
                    return n - done;
                submitted++;
                inflight++;
            }
        }
        int got = c->use_wait ? railwire_wait(rs, comp, NB_POLL_MAX, 1000)
                              : railwire_poll(rs, comp, NB_POLL_MAX);
        if (got < 0)
            return n - done;
        for (int i = 0; i < got; i++)
            errors += comp[i].status != 0;
        done += (uint64_t)got;
        inflight -= (unsigned)got;
    }
    return errors;
}

static const char usage[] =
    "usage: railwire_null_bench cost [OPTIONS]   the railset's own cost per transfer\n"
    "       railwire_null_bench rate [OPTIONS]   aggregate vs a modelled line rate\n"
    "       railwire_null_bench MODE --help      the options of a mode\n";

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "cost"))
        return nb_cost_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "rate"))
        return nb_rate_main(argc - 1, argv + 1);
    fputs(usage, argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
    return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
}
