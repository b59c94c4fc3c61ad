/* SPDX-License-Identifier: MIT */
/* The results of one `railwire bench` run, printed as a table or as JSON. */
#ifndef RAILWIRE_TOOL_BENCH_REPORT_H
#define RAILWIRE_TOOL_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <railwire.h>

#define BENCH_MAX_SIZES 32

/* One transfer size's figures. */
struct bench_result {
    uint64_t size;              /* bytes per transfer */
    uint64_t transfers;         /* completed successfully */
    uint64_t failed;            /* completed with an error */
    double seconds;             /* wall time of this size's run */
    double gbps;                /* 1e9 bytes/s, successful transfers only */
    double tps;                 /* transfers per second */
    double p50_us, p99_us;      /* submit -> complete latency */
    double rail_gbps[RAILWIRE_MAX_RAILS]; /* bytes each rail moved / seconds */
};

/* The whole run.  Strings are borrowed. */
struct bench_summary {
    const char *transport;
    const char *dialect;
    const char *op;             /* "read" or "write" */
    const char *target;         /* HOST:PORT */
    int loopback;
    unsigned rails;
    unsigned depth;
    uint64_t slice;             /* 0 = library default */
    uint64_t warmup;            /* untimed transfers run before each size */
    double connect_ms;          /* railwire_railset_connect */
    double reg_ms;              /* railwire_mr_register of the client buffers */
    uint64_t reg_bytes;
    double server_reg_ms;       /* --loopback: server create (registers its memory) */
    struct bench_result results[BENCH_MAX_SIZES];
    unsigned n_results;
    railwire_rail_stats rail[RAILWIRE_MAX_RAILS];
    unsigned n_rail;
    const char *verify;         /* "off", "ok" or "mismatch" */
    uint64_t failed;            /* all failed transfers */
    char first_error[256];      /* what failed first, "" if nothing */
};

/* Prints the human-readable table to f. */
void bench_report_table(FILE *f, const struct bench_summary *s);

/* Prints one JSON object (and a newline) to f. */
void bench_report_json(FILE *f, const struct bench_summary *s);

#endif
