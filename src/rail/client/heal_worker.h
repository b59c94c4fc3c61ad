/* SPDX-License-Identifier: MIT */
/* The healer, shared by heal.c (the railset's thread) and heal_worker.c
 * (the worker thread that opens, brings up and probes new sessions). */
#ifndef RW_RAIL_CLIENT_HEAL_WORKER_H
#define RW_RAIL_CLIENT_HEAL_WORKER_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "rail/client/heal.h"

struct rw_healer {
    struct rw_heal_cfg cfg;
    char host[256];               /* the address the railset was opened with */
    rw_heal_open_fn open;
    void *open_ctx;               /* the healer's own reference (the TLS credentials) */
    void (*open_ctx_release)(void *open_ctx);

    pthread_mutex_t lock;         /* guards everything down to res_via */
    pthread_cond_t cond;          /* wakes the worker */
    int refs;                     /* the railset, and the worker while it runs */
    int stop;
    int thread_started;
    int has_req;
    int busy;
    int has_res;
    struct rw_heal_req req;
    struct rw_session_out res;
    int res_rc;
    char res_via[RW_HEAL_HOST_MAX];
    atomic_int res_ready;         /* has_res, readable without the lock */
    int wake_fd;                  /* eventfd written when a result is ready */

    /* The railset's thread only. */
    int in_flight;                /* an attempt was posted and not installed yet */
    int64_t due_ms;               /* next attempt, 0 = none scheduled */
    int backoff_ms;
    int64_t last_change_ms;       /* last heal or loss: the stability clock */
    int refresh;                  /* a session's control connection ended */
    uint64_t rng;
    char via[RW_HEAL_HOST_MAX];   /* the host the last successful heal went through */
};

/* Frees v[0..n) and v. */
void rw_heal_free_strings(char **v, unsigned n);
/* Frees the healer and what it holds (a pending result too); the last of
 * its refs calls it. */
void rw_healer_free(struct rw_healer *h);
/* The worker thread: waits for a request, runs the attempt without the
 * railset's lock, posts the result and wakes the railset through wake_fd;
 * drops its ref at stop (the last ref frees the healer). */
void *rw_heal_worker_main(void *arg);

#endif
