/* SPDX-License-Identifier: MIT */
/* A transport that moves no bytes, for measuring what the railset itself
 * costs.  It implements the internal ops table (src/transport/transport.h):
 * ep_post turns each work request into a completion in the ep's ring, and
 * ep_poll hands them back in order.
 *
 * Two behaviours, chosen per ep when it is created (null_config):
 *  - immediate: a posted WR is complete at once;
 *  - rate model: each ep is one link of `line_gbs` GB/s (1e9 bytes/s) with a
 *    fixed one-way `latency_ns`.  WRs are serialised on the link in post
 *    order (a token bucket with no burst credit: the link never runs faster
 *    than its line rate), and a WR's completion becomes visible to ep_poll
 *    once CLOCK_MONOTONIC has passed the end of its serialisation plus the
 *    latency.  The modelled wire runs on real time, so every nanosecond the
 *    railset spends is time the wire may sit idle.
 *
 * Single-threaded, like a railset.  Benchmark code, not for production. */
#ifndef RW_BENCH_NULL_TRANSPORT_H
#define RW_BENCH_NULL_TRANSPORT_H

#include <stdint.h>

#include "transport/transport.h"

/* The ops table. */
extern const struct rw_transport_ops rw_null_ops;

/* Settings for the domains and eps opened from now on. */
struct null_config {
    double line_gbs;        /* 0: immediate completions; else GB/s per ep */
    uint64_t latency_ns;    /* rate model: fixed latency added to each WR */
    unsigned max_qp_wr;     /* ring size bound per ep (domain max_qp_wr), >= 1 */
    int use_eventfd;        /* 1: ep_wait_fd gives an eventfd that ep_arm keeps
                               readable while completions are owed; 0: -1.
                               The rate model is always busy-polled (-1). */
};

/* Replaces the settings (defaults: immediate, 4096, no eventfd). */
void null_configure(const struct null_config *c);

/* Counters over every ep since the last null_reset_counters(). */
struct null_counters {
    uint64_t post_calls;    /* ep_post calls */
    uint64_t wrs;           /* WRs accepted */
    uint64_t poll_calls;    /* ep_poll calls */
    uint64_t wcs;           /* completions returned */
    uint64_t bytes;         /* bytes of the completions returned */
    uint64_t clock_reads;   /* clock reads the rate model made */
};

/* Copies the counters into *out. */
void null_counters_get(struct null_counters *out);
/* Zeroes the counters. */
void null_reset_counters(void);

#endif
