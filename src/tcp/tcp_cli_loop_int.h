/* SPDX-License-Identifier: MIT */
/* Private to the client event loops: one loop (tcp_cli_loop.c) as the pool
 * (tcp_cli_pool.c) sees it.  Nothing else includes this. */
#ifndef RW_TCP_CLI_LOOP_INT_H
#define RW_TCP_CLI_LOOP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/list.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_evloop.h"

struct rw_tcp_cli_loop {
    struct rw_evloop_fds fds;          /* epoll set; its eventfd wakes the loop: commands */
    pthread_t thread;
    pthread_mutex_t run;               /* held while the loop handles events (fork) */
    pthread_mutex_t lock;
    pthread_cond_t cond;               /* signalled when an ep is released */
    /* guarded by lock */
    struct rw_tcp_cli_ep *adds, *kicks, *kills;
    int stop;
    int woken;                         /* evfd written since the thread fell asleep */
    /* written under lock, read without it (hints; the lists are the truth) */
    atomic_int kicked;                 /* kicks queued that the loop has not taken */
    atomic_int asleep;                 /* the thread blocks (or is about to) in epoll_wait:
                                        * a kick must write evfd; awake, it takes kicks
                                        * before it sleeps */
    /* guarded by pool_lock */
    unsigned n_eps;                    /* eps attached and not yet detached */
    int orphan;                        /* inherited by a fork()ed child: no thread */
    /* loop thread only */
    struct rw_evloop_set set;          /* every watched ep; the ready FIFO */
    uint64_t spin_ns;                  /* spin before the next sleep */
    int64_t next_scan_ms;
};

/* Creates and starts loop `id` (its thread runs until stop is set and it is
 * woken).  Returns it, owned by the caller (the pool), or NULL (logged). */
struct rw_tcp_cli_loop *rw_tcp_cli_loop_start(unsigned id);
/* Wakes the loop's thread (its eventfd). */
void rw_tcp_cli_loop_wake(struct rw_tcp_cli_loop *l);
/* The ep a loop member is. */
static inline struct rw_tcp_cli_ep *rw_tcp_cli_ep_of(struct rw_evloop_member *m)
{
    return rw_list_entry(m, struct rw_tcp_cli_ep, link.member);
}
/* Closes and frees a loop whose thread has ended (or, in a fork()ed child,
 * never ran there). */
void rw_tcp_cli_loop_free(struct rw_tcp_cli_loop *l);

#endif
