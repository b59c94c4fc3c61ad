/* SPDX-License-Identifier: MIT */
#include "bench_stats.h"

#include <stdlib.h>

int bench_lat_add(struct bench_lat *l, uint64_t ns)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        uint64_t *p = realloc(l->ns, cap * sizeof(*p));
        if (!p)
            return -1;
        l->ns = p;
        l->cap = cap;
    }
    l->ns[l->n++] = ns;
    return 0;
}

void bench_lat_reset(struct bench_lat *l)
{
    l->n = 0;
}

void bench_lat_free(struct bench_lat *l)
{
    free(l->ns);
    l->ns = NULL;
    l->n = l->cap = 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

uint64_t bench_lat_percentile(struct bench_lat *l, double p)
{
    double r;
    size_t rank;

    if (!l->n)
        return 0;
    qsort(l->ns, l->n, sizeof(*l->ns), cmp_u64);
    r = p / 100.0 * (double)l->n;
    rank = (size_t)r;
    if ((double)rank < r)
        rank++;
    if (rank < 1)
        rank = 1;
    if (rank > l->n)
        rank = l->n;
    return l->ns[rank - 1];
}
