/* SPDX-License-Identifier: MIT */
/* Latency samples of `railwire bench` (per transfer, submit -> complete) and
 * their percentiles. */
#ifndef RAILWIRE_TOOL_BENCH_STATS_H
#define RAILWIRE_TOOL_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* A growable list of samples in nanoseconds.  Zero-initialise; owns `ns`. */
struct bench_lat {
    uint64_t *ns;
    size_t n;
    size_t cap;
};

/* Appends one sample.  Returns 0, or -1 when out of memory (the sample is
 * dropped). */
int bench_lat_add(struct bench_lat *l, uint64_t ns);

/* Forgets every sample (keeps the memory). */
void bench_lat_reset(struct bench_lat *l);

/* Frees the samples and zeroes *l. */
void bench_lat_free(struct bench_lat *l);

/* Returns the nearest-rank percentile p (0 < p <= 100) of the samples, or 0
 * when there are none.  Sorts the samples in place. */
uint64_t bench_lat_percentile(struct bench_lat *l, double p);

#endif
