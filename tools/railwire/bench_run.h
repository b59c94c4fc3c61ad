/* SPDX-License-Identifier: MIT */
/* The measuring loop of `railwire bench`: keeps `depth` transfers of one
 * size in flight on a connected railset, records each transfer's latency,
 * checks data when asked, and fills one bench_result. */
#ifndef RAILWIRE_TOOL_BENCH_RUN_H
#define RAILWIRE_TOOL_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <railwire.h>

#include "bench_report.h"
#include "bench_stats.h"

/* Seeds of the bench pattern (bench_pattern.h). */
#define BENCH_SEED_SERVED 0  /* what --loopback and `serve --fill` put in memory */
/* --write --verify: write i carries seed 1 + (i mod 250), never the served
 * seed, and consecutive writes to one range differ, so a WRITE that lost
 * bytes cannot pass for a good one; each is read back and checked as soon as
 * it completes. */
#define BENCH_SEED_WRITE(i) (1u + (uint32_t)((i) % 250u))

/* Everything one run needs.  The railset, registration and buffer are
 * borrowed; the caller owns them. */
struct bench_run {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf;               /* depth slots of the largest size, inside mr
                                   (twice that with --write --verify: the
                                   second half receives the read-backs) */
    size_t buf_len;
    enum railwire_opcode opcode;
    unsigned depth;
    int verify;
    unsigned n_layers;          /* remote layers to spread over (RO), 1 for RW */
    uint64_t span;              /* remote bytes per layer the bench may touch */
    int progress;               /* print a progress line once a second */
    int stall_ms;               /* give up after this long without a completion */
    /* Outputs, accumulated over runs. */
    uint64_t failed;
    int mismatch;
    char first_error[256];
    struct bench_lat lat;       /* owned: free with bench_lat_free */
};

/* Runs transfers of `size` bytes until `iters` completed (0 = no limit) or
 * `seconds` passed (0 = no limit).  Fills *res.  Returns 0 when the run went
 * to its end (even with failed transfers: see ->failed), or a negative code
 * when it had to stop early (a submit error, a stall). */
int bench_run_size(struct bench_run *b, uint64_t size, uint64_t iters, double seconds,
                   struct bench_result *res);

#endif
