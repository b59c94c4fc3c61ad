/* SPDX-License-Identifier: MIT */
/* The server's private structures, shared by server.c (create, accept
 * thread, destroy) and server_session.c (one thread per client). */
#ifndef RW_RAIL_SERVER_INTERNAL_H
#define RW_RAIL_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include <railwire/server.h>

#include "rail/device_spec.h"
#include "transport/transport.h"
#include "wire/wire.h"

#define RW_SERVER_MAX_REJECTING 64
#define RW_SERVER_MAX_LISTENERS 16
#define RW_DEFAULT_SESSION_LINGER_MS 30000

/* One local domain and the published memory registered on it. */
struct rw_srv_domain {
    struct rw_domain *dom;    /* owned */
    struct rw_mr **mrs;       /* owned: RO one per layer, RW the arena */
    struct rw_mr_desc *descs; /* owned: what the params advertise, same order */
    unsigned n;
};

/* One client.  The accept thread creates it; its thread runs
 * rw_session_main(); the reaper (accept thread or destroy) joins it, closes
 * fd and frees it. */
struct rw_session {
    struct railwire_server *srv;
    int fd;
    char peer[80];
    pthread_t thread;
    atomic_int done;          /* set by the session thread as it ends */
    struct rw_session *next;
};

struct railwire_server {
    const struct rw_transport_ops *ops;
    enum railwire_dialect dialect;
    unsigned max_rails;
    unsigned max_clients;
    int io_timeout_ms;
    int linger_ms;            /* session_linger_ms */
    struct rw_srv_domain *doms;
    unsigned n_doms;
    int lfd[RW_SERVER_MAX_LISTENERS]; /* control listeners, all on `port` */
    unsigned n_lfd;
    unsigned port;
    char listen_addr[RW_SERVER_MAX_LISTENERS][64]; /* numeric address of each listener */
    pthread_t accept_thread;
    int accept_started;
    atomic_int stop;
    pthread_mutex_t lock;     /* guards sessions and n_live */
    struct rw_session *sessions;
    unsigned n_live;          /* sessions whose thread has not ended (lingering included) */
    unsigned n_lingering;     /* of those, sessions whose control connection ended */
    int rej_fd[RW_SERVER_MAX_REJECTING];    /* accept thread only */
    int64_t rej_deadline[RW_SERVER_MAX_REJECTING];
    unsigned n_rej;
    struct rw_domain_place *defaults; /* owned: verbs ports used when none are named */
};

/* Serves one client: handshake, rails, then waits for the control
 * connection to end; releases the session's rails, decrements n_live and
 * sets done.  Thread entry point; arg is the struct rw_session. */
void *rw_session_main(void *arg);

#endif
