/* SPDX-License-Identifier: MIT */
/* The queue budget of the tcp server side (process-wide): bytes queued
 * towards clients, i.e. READ answers written into the kernel's send queues
 * and not yet acknowledged by the client's TCP (measured with SIOCOUTQ),
 * plus any response bytes staged and not yet written.
 *
 * - One budget B for every server connection of the process.  A write is
 *   only made with bytes reserved from it first, so the counter never
 *   exceeds B (rw_tcp_budget_take).
 * - Each connection has a cap: min(B / attached connections, share / eps of
 *   its session), clamped to [RW_TCP_CAP_MIN, RW_TCP_CAP_MAX].  Its socket
 *   buffers are sized just under the cap, so a connection at its cap is
 *   stopped by its own full socket (EPOLLOUT wakes it) and a session never
 *   holds more than its share.
 * - A connection that cannot get budget marks the budget "starving" (so
 *   does host TCP memory pressure); the loops then evict connections whose
 *   queued bytes have not moved for 1 s (tcp_serve.c).
 * See docs/tcp-transport.md, "Budgets". */
#ifndef RW_TCP_BUDGET_H
#define RW_TCP_BUDGET_H

#include <stdint.h>

#define RW_TCP_DEFAULT_BUDGET (256ull << 20)
/* A session's share: 64 MiB, so that a connection of a 64-rail session
 * may queue 1 MiB (two of the client's default 512 KiB slices).  At 16 MiB
 * each such connection got 256 KiB, under one slice, and every READ answer
 * waited for EPOLLOUT partway: 64 rails of 1 MiB READs at depth 8 on
 * loopback moved 6.6k-8.0k transfers/s against 8.8k-9.8k at 64 MiB, in
 * alternating runs (docs/benchmarks.md, seventeenth session).  The budget
 * still bounds the process, and the per-connection term (B / connections)
 * binds first under many sessions: tcp_srv_bench --f3 (63 hostile 8-rail
 * sessions) kept the legitimate client at 0.90-1.03 of its unloaded rate
 * (3 runs, medians 0.92-1.01), as at 16 MiB (0.92-1.00, medians
 * 0.93-1.00). */
#define RW_TCP_DEFAULT_SHARE (64ull << 20)
#define RW_TCP_CAP_MIN (128ull << 10)
#define RW_TCP_CAP_MAX (4ull << 20)

/* A session's share: counts the eps that split it.  Created by the
 * session's first ep, joined by the others (rw_ep_cfg.same_session).
 * It also places the session's rails on the server's loops: the ep that
 * took the k-th place is served by loop (loop_base + k) mod loops, so rail
 * i of every session runs on the loop after rail i-1's (see tcp_loop.h). */
struct rw_tcp_sess {
    _Atomic unsigned refs;
    _Atomic unsigned n_eps;
    _Atomic unsigned placed;  /* eps that took a place (rw_tcp_sess_place) */
    unsigned loop_base;       /* a process-wide round robin at creation */
};

/* Sets the process-wide budget and session share in bytes (0 keeps the
 * current value; the defaults apply until set). */
void rw_tcp_budget_configure(uint64_t budget, uint64_t share);

/* Returns a new session share held by one ep, or NULL (out of memory). */
struct rw_tcp_sess *rw_tcp_sess_new(void);
/* One more ep in session s (s stays valid until its last ep leaves). */
void rw_tcp_sess_join(struct rw_tcp_sess *s);
/* Returns the loop place of the next ep of s (its creator's first, then
 * each joining ep's in turn: see struct rw_tcp_sess). */
unsigned rw_tcp_sess_place(struct rw_tcp_sess *s);
/* The ep leaves; frees s with its last ep. */
void rw_tcp_sess_leave(struct rw_tcp_sess *s);

/* The queue cap of one connection of session s, now. */
uint64_t rw_tcp_budget_cap(const struct rw_tcp_sess *s);

/* An attached connection starts / stops counting in the caps. */
void rw_tcp_budget_conn_add(void);
void rw_tcp_budget_conn_del(void);

/* Reserves up to n bytes; returns how many were granted (less than n, even
 * 0, when the budget is used up: the budget is then marked starving). */
uint64_t rw_tcp_budget_take(uint64_t n);
/* Returns n reserved bytes (drained from the kernel, or not written). */
void rw_tcp_budget_give(uint64_t n);
/* Returns 1 if a connection could not get budget within the last 500 ms,
 * or the host's TCP memory is above its pressure threshold (tcp_mem[1]:
 * every socket of the host then slows down, whoever holds the memory). */
int rw_tcp_budget_starving(int64_t now_ms);
/* Returns the host's TCP memory in pages (/proc/net/sockstat) and sets
 * *pressure to its pressure threshold (tcp_mem[1]); either is -1 when
 * unknown.  Reads /proc on every call. */
long rw_tcp_host_tcp_pages(long *pressure);
/* Returns 1 if the host's TCP memory is above tcp_mem[1] (read at most
 * every 200 ms from /proc). */
int rw_tcp_budget_host_pressure(int64_t now_ms);
/* Turns eviction off (0) or on (1, the default): benchmarks measure what
 * the budget alone does. */
void rw_tcp_budget_set_eviction(int on);
/* Counts one connection evicted to free budget. */
void rw_tcp_budget_count_eviction(void);

/* What tests and benchmarks read (a snapshot; peak since the last reset). */
struct rw_tcp_budget_stats {
    uint64_t budget, share;
    uint64_t queued;       /* bytes counted now */
    uint64_t peak;         /* highest value of queued since the last reset */
    unsigned conns;        /* attached connections */
    uint64_t evicted;      /* connections evicted to free budget */
    uint64_t starved;      /* times a connection found the budget used up */
};
void rw_tcp_budget_get_stats(struct rw_tcp_budget_stats *out);
void rw_tcp_budget_reset_peak(void);

#endif
