/* SPDX-License-Identifier: MIT */
/* The event loops that serve every attached server connection of the
 * process: a pool of min(cores, 4) threads (rw_tcp_pool_configure
 * overrides), each an epoll set of edge-triggered, non-blocking sockets.  A
 * connection belongs to one loop for its life; only that loop's thread runs
 * its state machine (tcp_serve.c), so no lock guards a connection's data
 * path.  Other threads talk to a loop through its command queues (add,
 * kill) and its eventfd.
 *
 * Lock order: a domain's lock may be held while taking a loop's lock, never
 * the other way round. */
#ifndef RW_TCP_LOOP_H
#define RW_TCP_LOOP_H

#include <pthread.h>
#include <stdint.h>

#include "tcp/tcp_internal.h"

#define RW_TCP_LOOPS_MAX 4
#define RW_TCP_SCRATCH (64u * 1024) /* sink for refused WRITE payloads */

struct rw_tcp_loop {
    struct rw_evloop_fds fds;        /* epoll set; its eventfd wakes the loop: commands */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;             /* signalled when a kill is done */
    /* guarded by lock */
    struct rw_tcp_conn *adds, *kills;
    int stop;
    /* loop thread only */
    struct rw_evloop_set set;        /* every registered connection; the ready FIFO */
    struct rw_tcp_conn *tick_head;
    int64_t next_scan_ms;
    uint8_t scratch[RW_TCP_SCRATCH];
};

/* Takes a reference on the process-wide loop pool, starting its threads on
 * first use.  Returns 0 or RAILWIRE_E_SYSTEM (logged). */
int rw_tcp_pool_acquire(void);
/* Drops a reference; the last one stops and joins the threads (no
 * connection may be left: every server ep is destroyed first). */
void rw_tcp_pool_release(void);
/* Sets how many loop threads the pool starts with next time it starts
 * (1..64; 0 = min(the CPUs this process may run on, rw_cpus_usable, and
 * RW_TCP_LOOPS_MAX)).  For tests and benchmarks. */
void rw_tcp_pool_configure(unsigned n);
/* Sets the loops' spin window after served work (rw_domain_cfg.busy_poll_us:
 * 0 = default, negative = none); takes effect at once. */
void rw_tcp_pool_busy_poll(int us);
/* Number of loop threads running (0 when the pool is stopped). */
unsigned rw_tcp_pool_threads(void);

/* What a loop runs of a connection it serves, given at registration by
 * the connection's owner (tcp_serve.c's rw_tcp_serve_ops): the loop calls
 * a connection only through these, never by name, so the calls run one
 * way (tcp_serve.c -> tcp_loop.c).  Loop thread only. */
struct rw_tcp_conn_ops {
    void (*run)(struct rw_tcp_conn *c);                  /* rw_tcp_conn_run */
    void (*tick)(struct rw_tcp_conn *c, int64_t now);    /* rw_tcp_conn_tick */
    void (*scan)(struct rw_tcp_conn *c, int64_t now);    /* rw_tcp_conn_scan */
    void (*close)(struct rw_tcp_conn *c, const char *why); /* rw_tcp_conn_close */
};

/* Hands an initialised connection (rw_tcp_conn_init) to loop `place` mod
 * the pool's size, which registers it and runs it once; the loop runs it
 * through `ops` (static, not owned).  Consecutive places are consecutive
 * loops: a session's rails get consecutive places, so each server loop
 * talks to as few of a client's loops as it can (on one host, the rail's
 * two ends can then share a CPU and its cache).  May be called with its
 * domain's lock held.  Returns 0 or RAILWIRE_E_SYSTEM (no pool). */
int rw_tcp_loop_add(struct rw_tcp_conn *c, const struct rw_tcp_conn_ops *ops, unsigned place);
/* Asks c's loop to close c and waits until the loop no longer touches it
 * (nor the ep's regions).  Bounded: loop handlers never block.  Must not
 * be called from a loop thread. */
void rw_tcp_loop_kill(struct rw_tcp_conn *c);

/* Loop thread only: runs c again after the next poll (it used its quantum). */
void rw_tcp_loop_ready(struct rw_tcp_conn *c);
/* Loop thread only: refreshes c (rw_tcp_conn_tick) in delay_ms. */
void rw_tcp_loop_tick_add(struct rw_tcp_conn *c, int delay_ms);
void rw_tcp_loop_tick_del(struct rw_tcp_conn *c);
/* Loop thread only: removes c from the epoll set, the table and the lists
 * (called by rw_tcp_conn_close before it closes the socket). */
void rw_tcp_loop_forget(struct rw_tcp_conn *c);

#endif
