/* SPDX-License-Identifier: MIT */
#include "compq.h"

#include <stdlib.h>
#include <string.h>

int rwpy_compq_reserve(struct rwpy_compq *q, size_t need)
{
    if (need <= q->cap)
        return 0;
    size_t cap = q->cap ? q->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(*q->v))
            return -1;
        cap *= 2;
    }
    railwire_completion *v = malloc(cap * sizeof(*v));
    if (!v)
        return -1;
    /* Unwrap the ring into the new storage, oldest first. */
    size_t first = q->cap - q->head < q->len ? q->cap - q->head : q->len;
    if (q->len) {
        memcpy(v, q->v + q->head, first * sizeof(*v));
        memcpy(v + first, q->v, (q->len - first) * sizeof(*v));
    }
    free(q->v);
    q->v = v;
    q->cap = cap;
    q->head = 0;
    return 0;
}

int rwpy_compq_push(struct rwpy_compq *q, const railwire_completion *c)
{
    if (q->len == q->cap)
        return -1;
    q->v[(q->head + q->len) % q->cap] = *c;
    q->len++;
    return 0;
}

size_t rwpy_compq_pop(struct rwpy_compq *q, railwire_completion *out, size_t max)
{
    size_t n = 0;
    while (n < max && q->len) {
        out[n++] = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    return n;
}

void rwpy_compq_free(struct rwpy_compq *q)
{
    free(q->v);
    q->v = NULL;
    q->cap = q->head = q->len = 0;
}
