/* SPDX-License-Identifier: MIT */
/* Runs independent slow calls (memory registration on several devices,
 * opening several domains) in parallel threads. */
#ifndef RW_RAIL_PARALLEL_H
#define RW_RAIL_PARALLEL_H

/* Calls fn(ctx, i) for i in [0, n), in parallel threads when `parallel` and
 * n > 1 (falling back to the calling thread if a thread cannot start), and
 * returns the first negative result by index, or 0.  Every call runs even
 * when another fails, so the caller can clean up uniformly. */
int rw_parallel_for(unsigned n, int parallel, int (*fn)(void *ctx, unsigned i), void *ctx);

#endif
