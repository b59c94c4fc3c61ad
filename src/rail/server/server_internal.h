/* SPDX-License-Identifier: MIT */
/* The server's private structures, shared by its files:
 *   server.c          create (options, domains, listeners), destroy, getters
 *   server_loop.c     the event loop thread: epoll, accept, timers
 *   server_admit.c    admission: allowlist, per-peer caps, the pending pool
 *   server_peer.c     addresses, the allowlist, the per-peer table
 *   server_handshake.c  one connection's handshake, up to a session
 *   server_session.c  the session after it: ticks, linger, release
 *   server_tls.c, server_io.c  TLS on the control connection, its bytes
 *   server_tls_conn.c a connection's TLS teardown (below every close)
 *   server_conn.c     a connection's phase list and watched events (bottom)
 *   server_stats.c    counters
 * Everything below `loop-owned` is touched by the loop thread only (and by
 * create/destroy while no loop runs); the stats take their own lock. */
#ifndef RW_RAIL_SERVER_INTERNAL_H
#define RW_RAIL_SERVER_INTERNAL_H
#if defined(RW_LAYER_RAIL_CLIENT) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/server/ is private to the server (docs/architecture.md)"
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>

#include <railwire/server.h>

#include "common/list.h"
#include "rail/session/device_spec.h"
#include "transport/transport.h"
#include "wire/handshake.h"
#include "wire/wire.h"

#define RW_SERVER_MAX_REJECTING 64      /* connections closing gracefully at once */
#define RW_SERVER_MAX_LISTENERS 16
#define RW_DEFAULT_SESSION_LINGER_MS 30000
#define RW_DEFAULT_MAX_PER_PEER 16
#define RW_DEFAULT_MAX_PENDING 256
#define RW_DEFAULT_FIRST_BYTE_MS 2000
#define RW_REJECT_LINGER_MS 2000        /* a rejected client's bytes are drained this long */
#define RW_SESSION_TICK_MS 100          /* rail liveness, attach deadlines and lingers */
#define RW_ACCEPT_PAUSE_MS 250          /* accepting stops this long after EMFILE & co */
#define RW_PEER_BUCKETS 256

/* What an epoll event's data.ptr points at: the first member of a listener
 * slot, the wake eventfd's tag or a connection. */
enum rw_srv_ev_kind { RW_EV_LISTENER, RW_EV_WAKE, RW_EV_CONN };
struct rw_srv_ev {
    enum rw_srv_ev_kind kind;
    unsigned index; /* listener index */
};

/* One local domain and the published memory registered on it. */
struct rw_srv_domain {
    struct rw_domain *dom;    /* owned */
    struct rw_mr **mrs;       /* owned: RO one per layer, RW the arena */
    struct rw_mr_desc *descs; /* owned: what the params advertise, same order */
    unsigned n;
};

/* An IP address as 16 bytes (IPv4 as ::ffff:a.b.c.d). */
struct rw_ip {
    uint8_t b[16];
};

/* One allowlist entry. */
struct rw_cidr {
    struct rw_ip net;  /* masked */
    unsigned bits;     /* prefix length over the 16 bytes (IPv4 /n is 96 + n) */
};

/* Per peer address: what it holds now.  Freed when both are 0. */
struct rw_srv_peer {
    struct rw_ip ip;
    unsigned pending;   /* connections in the handshake */
    unsigned sessions;  /* connections holding a max_clients slot */
    unsigned tls_hs;    /* TLS handshakes holding a place in the gate */
    struct rw_srv_peer *next;
};

enum rw_conn_phase {
    RW_CONN_NEW,       /* just accepted, on no list */
    RW_CONN_HANDSHAKE, /* in the pending pool */
    RW_CONN_SESSION,   /* acked; the control connection is open */
    RW_CONN_LINGER,    /* acked; the control connection ended, rails may live */
    RW_CONN_CLOSING,   /* rejected: write side shut, draining until EOF or deadline */
    RW_CONN_DEAD,      /* released; freed at the end of the loop iteration */
};

/* One control connection, from accept to release.  ev is first: epoll's
 * data.ptr points at it. */
struct rw_conn {
    struct rw_srv_ev ev;
    struct railwire_server *srv;
    enum rw_conn_phase phase;
    int fd;                       /* -1 once closed (a lingering session's is) */
    unsigned events;              /* epoll events registered (0: not in the set) */
    struct rw_ip ip;
    struct rw_srv_peer *peer;     /* counted in peer->pending while HANDSHAKE */
    char name[80];                /* "addr:port" for messages */
    struct sockaddr_storage local;
    int64_t born_ms;
    int64_t deadline_ms;          /* HANDSHAKE: this step's; CLOSING: the drain's */
    int step;                     /* 0 request byte, 1 params and ids, 2 ack */
    int refused;                  /* the ack says STATUS_ERR: close once it is sent */
    struct rw_hs_server hs;
    int hs_live;                  /* hs needs rw_hs_server_fini */
    int slot;                     /* holds a max_clients slot (and peer->sessions) */
    unsigned n;                   /* rails */
    struct rw_ep **eps;           /* owned; NULL entries are released rails */
    int64_t acked_ms;
    int attach_checked;           /* the attach deadline has been handled */
    int64_t linger_end_ms;
    int64_t control_end_ms;
    /* TLS (server_tls.c): the connection, NULL on a plain listener. */
    struct rw_tls_conn *tls;
    int tls_state;                /* enum rw_conn_tls_state */
    int tls_saw_byte;             /* the client has sent its first TLS bytes */
    struct rw_list_node link;     /* in one of the loop's lists */
};

/* The conn of list node n (NULL for NULL). */
static inline struct rw_conn *rw_conn_of(struct rw_list_node *n)
{
    return rw_list_entry_or_null(n, struct rw_conn, link);
}

/* Where a connection's TLS handshake stands. */
enum rw_conn_tls_state {
    RW_CTLS_NONE = 0, /* plain listener */
    RW_CTLS_WAIT,     /* waiting for a place in the handshake gate (unwatched) */
    RW_CTLS_HS,       /* handshaking, holds a place */
    RW_CTLS_DONE,     /* authenticated and allowed: WIRE.md's bytes flow inside */
};

struct rw_tls_conn;
struct rw_srv_tls;

struct railwire_server {
    /* Set by create, read-only afterwards. */
    const struct rw_transport_ops *ops;
    enum railwire_dialect dialect;
    unsigned max_rails;
    unsigned max_clients;
    unsigned max_per_peer;    /* 0 = no cap */
    unsigned max_pending;
    int io_timeout_ms;
    int first_byte_ms;
    int linger_ms;            /* session_linger_ms */
    int zero_copy_reads;      /* opts.zero_copy_reads: regions get RW_ACCESS_READ_BY_REFERENCE */
    struct rw_cidr *allow;    /* owned; n_allow == 0: everyone */
    unsigned n_allow;
    struct rw_srv_tls *tls;   /* owned; NULL: a plain listener (server_tls.c) */
    struct rw_srv_domain *doms;
    unsigned n_doms;
    /* The published memory (server_mem.c): RO one per layer, RW the arena. */
    struct rw_mem *mems;      /* owned, n_mems entries */
    unsigned n_mems;
    struct rw_stage_pool *stage_pool; /* owned: pinned staging of CUDA memory, NULL without */
    int lfd[RW_SERVER_MAX_LISTENERS]; /* control listeners, all on `port` */
    struct rw_srv_ev lev[RW_SERVER_MAX_LISTENERS];
    unsigned n_lfd;
    unsigned port;
    char listen_addr[RW_SERVER_MAX_LISTENERS][64]; /* numeric address of each listener */
    struct rw_domain_place *defaults; /* owned: verbs ports used when none are named */
    int epfd;                 /* -1 until created */
    int wake_fd;              /* eventfd: destroy wakes the loop */
    struct rw_srv_ev wake_ev;
    pthread_t loop_thread;
    int loop_started;
    atomic_int stop;

    /* Loop-owned. */
    struct rw_list pending, sessions, closing, dead; /* conns, appended at the tail (the
                                                        pending list runs oldest first) */
    struct rw_srv_peer *peers[RW_PEER_BUCKETS];
    unsigned slots_held;      /* live sessions + handshakes past the params */
    int accept_paused;
    int64_t accept_resume_ms;
    int64_t next_tick_ms;
    int64_t pause_log_ms;     /* last "accept paused" line */
    unsigned long pauses_unlogged;

    /* Counters, under stats_lock. */
    pthread_mutex_t stats_lock;
    struct railwire_server_stats st;
};

/* ---- server_loop.c */
/* Starts the loop thread.  Returns 0 or RAILWIRE_E_SYSTEM (logged). */
int rw_srv_loop_start(struct railwire_server *srv);
/* Stops the loop (it releases every connection first) and joins it. */
void rw_srv_loop_stop(struct railwire_server *srv);

/* ---- server_peer.c: addresses, the allowlist, the per-peer table */
/* Parses the allowlist into srv->allow.  Returns 0 or RAILWIRE_E_INVALID
 * (logged, naming the bad entry). */
int rw_srv_allow_parse(struct railwire_server *srv, const char *const *allow, unsigned n);
/* 1 when ip may connect. */
int rw_srv_allowed(const struct railwire_server *srv, const struct rw_ip *ip);
/* Parses one CIDR block ("a.b.c.d[/n]", "v6[/n]").  Returns 0 or -1. */
int rw_cidr_parse(const char *s, struct rw_cidr *out);
/* 1 when ip lies in c. */
int rw_cidr_match(const struct rw_cidr *c, const struct rw_ip *ip);
/* Fills ip from a socket address (v4-mapped IPv6 becomes IPv4).  Returns 0
 * or -1 for another family. */
int rw_ip_from_sockaddr(const struct sockaddr_storage *ss, struct rw_ip *ip);
/* The peer entry of ip, created when `create` (NULL: none, or out of memory). */
struct rw_srv_peer *rw_srv_peer_get(struct railwire_server *srv, const struct rw_ip *ip,
                                    int create);
/* Frees p when it holds nothing any more. */
void rw_srv_peer_put(struct railwire_server *srv, struct rw_srv_peer *p);
/* Frees every peer entry (destroy). */
void rw_srv_peers_free(struct railwire_server *srv);

/* ---- server_admit.c */
/* Takes one accepted connection: allowlist, per-peer pending cap, pool
 * (evicting the oldest when full), then starts its handshake.  Owns fd. */
void rw_srv_admit(struct railwire_server *srv, int fd, const struct sockaddr_storage *ss);

/* ---- server_handshake.c */
/* A new connection in the pool: starts its handshake and runs it as far as
 * the bytes already received allow. */
void rw_conn_start(struct rw_conn *c);
/* Runs a HANDSHAKE connection's handshake as far as the socket allows
 * without waiting (TLS first when the listener runs it). */
void rw_conn_hs_progress(struct rw_conn *c);
/* A handshake step's deadline passed (HANDSHAKE) or the drain's (CLOSING). */
void rw_conn_expired(struct rw_conn *c, int64_t now);
/* Closes a connection still in the handshake (evicted, server stopping). */
void rw_conn_drop(struct rw_conn *c);
/* Shuts the write side and drains the connection for a while so the client
 * reads a clean end of stream (peer-rejected), never a reset; closes at
 * once when too many are draining already. */
void rw_conn_reject_close(struct rw_conn *c);
/* Loop thread, once per iteration: gives free places in the TLS handshake
 * gate to the connections waiting for one, oldest first, and runs their
 * handshakes. */
void rw_srv_tls_kick(struct railwire_server *srv);

/* ---- server_session.c */
/* A session's control connection ended (end of stream or an error) at
 * `now`: released when no rail is left or linger is 0, else it lingers. */
void rw_conn_control_ended(struct rw_conn *c, int64_t now);
/* Periodic check of a session (SESSION or LINGER): attach deadline, rails,
 * linger. */
void rw_conn_tick(struct rw_conn *c, int64_t now);
/* Releases a session for `reason` (a railwire_server_stats field offset)
 * and logs `why`. */
void rw_conn_release(struct rw_conn *c, size_t reason, const char *why);
/* Stops watching and closes conn's fd (nothing when closed already). */
void rw_conn_close_fd(struct rw_conn *c);
/* Reads and drops what is readable now on fd, so a close does not turn
 * into a reset.  Returns 1 at end of stream or on an error, 0 otherwise. */
int rw_conn_drain(int fd);
/* Destroys conn's eps and frees their array (nothing when none). */
void rw_conn_destroy_eps(struct rw_conn *c);
/* Gives back conn's slot (max_clients, per-peer count), if it holds one. */
void rw_conn_give_slot(struct rw_conn *c);

/* ---- server_tls.c */
/* Builds the TLS credentials, allow list, handshake gate and lockout table
 * from o->tls (nothing when NULL).  Returns 0 or RAILWIRE_E_INVALID /
 * RAILWIRE_E_NOMEM (logged). */
int rw_srv_tls_init(struct railwire_server *srv, const railwire_server_opts *o);
void rw_srv_tls_fini(struct railwire_server *srv);
/* The credentials slot for the tcp rails (NULL on a plain listener). */
struct rw_tls_slot *rw_srv_tls_slot(struct railwire_server *srv);
/* 1 when ip failed to authenticate too often lately (refuse at accept). */
int rw_srv_locked_out(struct railwire_server *srv, const struct rw_ip *ip, int64_t now);
/* What the TLS functions below return for a connection they refuse
 * (counted and logged already); the caller closes it, they never do. */
#define RW_CONN_TLS_DROP (-1)   /* close it at once: rw_conn_drop */
#define RW_CONN_TLS_REJECT (-2) /* close it cleanly: rw_conn_reject_close */
/* Starts a connection's TLS (a place in the gate, or waiting for one).
 * Returns 1 when the connection may go on to WIRE.md's handshake now, 0
 * when TLS runs first (or waits for a place), RW_CONN_TLS_DROP or
 * RW_CONN_TLS_REJECT when it is refused. */
int rw_conn_tls_start(struct rw_conn *c);
/* Runs the TLS handshake as far as the socket allows.  Returns 1 when done
 * (authenticated and allowed), 0 when waiting, RW_CONN_TLS_DROP or
 * RW_CONN_TLS_REJECT when it is refused. */
int rw_conn_tls_progress(struct rw_conn *c);
/* 1 when the server runs TLS and its handshake gate has a free place. */
int rw_srv_tls_gate_open(struct railwire_server *srv);
/* A connection waiting for a place in the gate takes one if it may (the
 * gate has room, its address holds less than its share).  Returns 1 when
 * it did: its TLS handshake may run. */
int rw_conn_tls_gate_take(struct rw_conn *c);
/* A deadline passed while the TLS handshake ran: logs and counts.  Returns
 * 1 when it did (the caller drops the connection), 0 when TLS is done. */
int rw_conn_tls_expired(struct rw_conn *c, int64_t now);

/* ---- server_tls_conn.c: a connection's TLS teardown, below every close */
/* The connection leaves the handshake pool: releases its place in the gate. */
void rw_conn_tls_leave_gate(struct rw_conn *c);
/* Sends close_notify when the connection runs TLS (before a shutdown). */
void rw_conn_tls_close_notify(struct rw_conn *c);
/* Frees the connection's TLS state (dead connections). */
void rw_conn_tls_free(struct rw_conn *c);

/* ---- server_io.c: WIRE.md's bytes over the control connection, inside TLS
 * when it runs it.  Return the bytes moved (> 0), 0 at the peer's end of
 * stream (recv), RW_CONN_WANT_READ / RW_CONN_WANT_WRITE when the socket
 * would block, or a negative RAILWIRE_E_* code with `what` filled. */
#define RW_CONN_WANT_READ (-2)
#define RW_CONN_WANT_WRITE (-3)
ssize_t rw_conn_send(struct rw_conn *c, const void *p, size_t n, char *what, size_t cap);
ssize_t rw_conn_recv(struct rw_conn *c, void *p, size_t n, char *what, size_t cap);
/* Plain listener, first received bytes: 1 when they start a TLS
 * ClientHello (logged, counted, answered with a TLS alert; the caller
 * closes the connection with rw_conn_reject_close), else 0. */
int rw_conn_plain_sniff(struct rw_conn *c);

/* ---- server_stats.c (any thread) */
/* Adds d to the counter at offset `field` of railwire_server_stats. */
void rw_srv_count(struct railwire_server *srv, size_t field, int64_t d);
#define RW_ST(f) offsetof(struct railwire_server_stats, f)

/* ---- server_mem.c: the published memory (docs/gpu.md) */
struct rw_stage_pool;
/* Checks the layers / layer_mems / arena / arena_mem of *o (mixing a
 * region list and descriptors is an error naming both fields; a bad
 * descriptor names its field) and the max_bytes cap, and fills srv->mems;
 * creates srv->stage_pool (staging_bytes) when any memory is CUDA.
 * Returns 0, RAILWIRE_E_INVALID, RAILWIRE_E_LIMIT, or the driver's error
 * (RAILWIRE_E_NO_DEVICE without one), all logged. */
int rw_srv_mem_prepare(struct railwire_server *srv, const railwire_server_opts *o);
/* Registers srv->mems[k] on domain d with `access` (host memory through
 * ops->mr_reg as always, other kinds through ops->mr_reg_mem), counts and
 * logs its kind and path.  Returns 0 and *out, or the transport's error
 * (logged). */
int rw_srv_mem_register(struct railwire_server *srv, struct rw_domain *d, unsigned k, int access,
                        struct rw_mr **out);
/* After every domain registered the memory: frees the staging pool when
 * no registration took the staged path (verbs), so only a staging server
 * reports staging_* and holds a pool. */
void rw_srv_mem_settle(struct railwire_server *srv);
/* Fills the regs_* and staging_* fields of *out. */
void rw_srv_mem_stats(const struct railwire_server *srv, struct railwire_server_stats *out);
/* Frees srv->mems and the staging pool (every domain closed first). */
void rw_srv_mem_free(struct railwire_server *srv);
/* Loop thread: refreshes the rails_attached/waiting/closed/unknown gauges
 * from the live sessions' eps. */
void rw_srv_rail_census(struct railwire_server *srv);

/* ---- server_conn.c: a connection's list and watched events */
/* (Re)registers conn's fd for `events` (0: removes it).  Returns 0 or -1. */
int rw_srv_watch(struct rw_conn *c, unsigned events);

/* The list conn is on, given its phase. */
struct rw_list *rw_conn_list_of(struct railwire_server *srv, const struct rw_conn *c);
/* Moves conn to `phase` (and to that phase's list). */
void rw_conn_set_phase(struct rw_conn *c, enum rw_conn_phase phase);

#endif
