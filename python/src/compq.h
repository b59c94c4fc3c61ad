/* SPDX-License-Identifier: MIT */
/* A FIFO of completions taken from the C railset that no caller has been
 * given yet.  Its capacity is reserved before a transfer is submitted, so
 * storing a completion never fails.  Not thread-safe: the railset lock
 * guards it. */
#ifndef RWPY_COMPQ_H
#define RWPY_COMPQ_H

#include <stddef.h>

#include <railwire/railset.h>

struct rwpy_compq {
    railwire_completion *v;
    size_t cap, head, len;
};

/* Makes room for at least `need` entries in total.  Returns 0, or -1 (out
 * of memory; the queue is unchanged). */
int rwpy_compq_reserve(struct rwpy_compq *q, size_t need);

/* Appends *c; the caller reserved room (a full queue drops nothing: it
 * returns -1 instead). */
int rwpy_compq_push(struct rwpy_compq *q, const railwire_completion *c);

/* Moves up to `max` of the oldest entries to out; returns how many. */
size_t rwpy_compq_pop(struct rwpy_compq *q, railwire_completion *out, size_t max);

/* Frees the storage; the queue is then empty and usable again. */
void rwpy_compq_free(struct rwpy_compq *q);

#endif
