/* SPDX-License-Identifier: MIT */
/* A real railset (rw_railset_create_local) over N rails of the null
 * transport, with one registration covering a caller's buffer: what the
 * null-transport benchmarks drive. */
#ifndef RW_BENCH_NULL_WORLD_H
#define RW_BENCH_NULL_WORLD_H

#include <stddef.h>

#include <railwire.h>

#include "null_transport.h"

struct null_world {
    railwire_railset *rs;
    railwire_mr *mr;
};

/* Opens `n_rails` null rails (null_configure first), builds an RW railset
 * over them with options `o` and registers [buf, buf+len).  Returns 0, or
 * RAILWIRE_E_INVALID when the railset refuses the rail count (the API caps
 * it at RAILWIRE_MAX_RAILS), or another error; nothing is left open then. */
int null_world_open(struct null_world *w, unsigned n_rails, const railwire_railset_opts *o,
                    void *buf, size_t len);

/* Closes the railset (and its registration). */
void null_world_close(struct null_world *w);

#endif
