/* SPDX-License-Identifier: MIT */
/* Private objects of the tcp transport (see docs/tcp-transport.md).
 *
 * Locking: a domain's `lock` guards its slot table, its counters and the
 * connection fields of its server eps (the accept thread attaches
 * connections under it).  A client ep's `lock` guards its ring counters and
 * state.  Nothing calls out of the transport with a lock held. */
#ifndef RW_TCP_INTERNAL_H
#define RW_TCP_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "tcp/tcp_evloop.h"
#include "tcp/tcp_proto.h"
#include "tcp/tcp_served.h"
#include "transport/transport.h"

#define RW_TCP_DEFAULT_IO_TIMEOUT_MS 10000
#define RW_TCP_DEFAULT_GBPS 10.0
#define RW_TCP_MAX_QP_WR 1024u
#define RW_TCP_MAX_MSG (1u << 30)
#define RW_TCP_DEFAULT_DEPTH 64u
#define RW_TCP_MAX_SLOTS 65536u   /* server qpn = slot << 16 | port */
#define RW_TCP_MAX_PENDING 256    /* accepted connections still sending their hello */
#define RW_TCP_MAX_PARKED 4       /* hellos waiting for their ep's ep_connect, per ep */

struct rw_tcp_srv_ep;

struct rw_tcp_domain {
    struct rw_domain base;
    enum rw_role role;
    int io_timeout_ms;
    struct sockaddr_storage local; /* bind (client) / listen (server, with its port) address */

    pthread_mutex_t lock;
    unsigned n_eps;                /* live eps of this domain */
    unsigned n_mrs;                /* live MRs of this domain */
    struct rw_tcp_served served;   /* server: requests served (atomics, no lock) */

    /* server only */
    struct rw_tls_slot *tls_server; /* rails run TLS with these credentials (NULL: plain) */
    /* client only */
    struct rw_tls_creds *tls_client; /* one reference: rails dial TLS with these (NULL: plain) */
    char tls_host[256];              /* the name the server's certificate must carry */
    int listen_fd;
    int wake_fd;                   /* eventfd: tells the accept thread to stop */
    pthread_t accept_thread;
    int accept_started;
    struct rw_tcp_srv_ep **slots;  /* RW_TCP_MAX_SLOTS entries, NULL = free */
    int pool_held;                 /* holds a reference on the loop pool */
};

static inline struct rw_tcp_domain *rw_tcp_dom(struct rw_domain *d)
{
    return rw_container_of(d, struct rw_tcp_domain, base);
}

/* One region as a server ep checks it (a copy: the ep never dereferences
 * the rw_mr, only the memory it describes). */
struct rw_tcp_key {
    uint32_t rkey;
    int access;
    uint64_t base;      /* remote_base */
    uint64_t len;
    uint8_t *addr;      /* a device pointer when stage_pool is set: never dereferenced */
    /* CUDA memory (path staged, tcp_serve_stage.c): the server's pinned
     * pool (struct rw_stage_pool) and the CUDA device; NULL / -1 for host. */
    void *stage_pool;
    int stage_dev;
};

struct rw_tcp_sess;
struct rw_tls_conn;
struct rw_tls_slot;
struct rw_tcp_loop;
struct rw_tcp_conn_ops;

/* States of an attached server connection (tcp_serve.c). */
enum rw_tcp_conn_state {
    RW_TCP_C_HDR,     /* reading a request header */
    RW_TCP_C_WPAY,    /* receiving a WRITE payload (into the region, or discarded) */
    RW_TCP_C_TX,      /* sending a response (and a READ payload) */
    RW_TCP_C_CLOSED,  /* the loop closed the socket; nothing touches it again */
};

/* What a connection waits for when its handler returns. */
enum rw_tcp_conn_wait {
    RW_TCP_W_NONE,
    RW_TCP_W_IN,       /* readable (idle, or mid-request) */
    RW_TCP_W_OUT,      /* writable: the kernel's send queue is full */
    RW_TCP_W_CAP,      /* its own queue cap: bytes queued must drain first */
    RW_TCP_W_BUDGET,   /* the server-wide budget is used up */
    RW_TCP_W_COPY,     /* a staging copy to complete, or a staging chunk to come back */
};

struct rw_tcp_sst;

/* Staging buffer for request headers: read in bulk, at most this many
 * payload bytes are ever copied out of it. */
#define RW_TCP_STAGE 1024u
/* A connection whose last request was a WRITE of at most RW_TCP_BULK_MAX
 * bytes reads into a bigger staging buffer (allocated at its first such
 * request, freed at close), so one recv takes several small WRITEs with
 * their payloads (copied out of it into the region). */
#define RW_TCP_BULK_MAX (16u * 1024)
#define RW_TCP_STAGE_BULK (64u * 1024)
/* Answers without payload held back to share one sendmsg, at most. */
#define RW_TCP_RESP_BATCH 64u

/* One attached rail connection of a server ep, served by an event loop
 * (tcp_loop.c) through the state machine of tcp_serve.c.  Everything but
 * the fields marked otherwise belongs to the loop thread once the
 * connection is handed over. */
struct rw_tcp_conn {
    struct rw_tcp_srv_ep *ep;
    struct rw_tcp_loop *loop;
    int fd;
    struct rw_tls_conn *tls;        /* owned: the rail runs TLS (NULL: plain) */
    uint64_t tls_retry;             /* TLS: the next write offers at least this many bytes
                                       (a write that wanted a retry sealed them) */
    enum rw_tcp_conn_state state;
    enum rw_tcp_conn_wait wait;
    /* the request in progress */
    struct rw_tcp_req req;
    uint8_t *mem;                   /* where its payload lives; NULL = refused (a device
                                       address when staged: never dereferenced) */
    int staged;                     /* the request is on CUDA memory (tcp_serve_stage.c) */
    struct rw_tcp_sst *sst;         /* owned: staging state, NULL until a staged request */
    uint64_t left;                  /* payload bytes still to receive / send */
    /* encoded response headers not yet sent: resp[resp_off, resp_len); the
     * answers without payload that precede the last one were held back
     * to go out with it (tcp_serve.c, set_response) */
    uint8_t resp[RW_TCP_RESP_BATCH * RW_TCP_RESP_SIZE];
    unsigned resp_off, resp_len;
    int more;                       /* the answer may be sent with MSG_MORE */
    unsigned refusals;
    size_t st_off, st_len;          /* staged request bytes: st[st_off, st_len) */
    uint8_t *st;                    /* the staging buffer in use: stage or bulk */
    uint8_t *bulk;                  /* RW_TCP_STAGE_BULK bytes, or NULL */
    int small_writes;               /* the last request was a WRITE of <= RW_TCP_BULK_MAX */
    uint8_t stage[RW_TCP_STAGE];
    /* budget (tcp_budget.c) */
    uint64_t charge;                /* bytes counted in the budget for this conn */
    uint64_t cap_set;               /* cap the socket buffers were last sized for */
    /* timing */
    int64_t last_progress_ms;       /* last byte moved, or last attach */
    int64_t tick_due_ms;            /* next refresh while on the tick list */
    int tick_backoff_ms;
    /* loop bookkeeping */
    const struct rw_tcp_conn_ops *ops; /* how the loop runs it (rw_tcp_loop_add) */
    struct rw_evloop_member member; /* the loop's table and ready FIFO */
    int on_tick;
    int rx_dry;                     /* a plain recv came back short: the socket was
                                       empty then, and the next byte brings an epoll
                                       edge (the loop clears this on every input
                                       event): no recv until then, it would only
                                       return EAGAIN */
    int rx_hup;                     /* the loop saw the socket hang up or fail: that
                                       edge does not come again, so a short read
                                       no longer sets rx_dry */
    /* READ answers by reference (tcp_serve_splice.c) */
    int by_ref;                     /* the request in progress is on memory registered
                                       with RW_ACCESS_READ_BY_REFERENCE */
    int pipe_state;                 /* 1: an answer goes through pipe_fd (a pipe of the
                                       process's pool), 0: no pipe held, -1: none
                                       could be made (answers are copied for a
                                       while: rw_tcp_splice_wanted) */
    int64_t pipe_failed_ms;         /* with pipe_state -1: when that try failed */
    int pipe_fd[2];                 /* held while pipe_state is 1: read, write end */
    size_t pipe_cap;                /* the pipe's capacity in bytes */
    size_t pipe_len;                /* answer bytes in the pipe, not yet in the socket
                                       (counted in charge) */
    int rx_reset;                   /* the loop saw the socket fail (EPOLLERR: a reset
                                       or a timeout): nothing more is read from it,
                                       so no WRITE queued by a client that gave the
                                       rail up is applied after the fact */
    struct rw_tcp_conn *tick_next, *tick_prev;
    /* guarded by loop->lock */
    struct rw_tcp_conn *add_next;   /* in loop->adds (links apart: a kill may be */
    struct rw_tcp_conn *kill_next;  /* queued while the loop walks its adds) */
    int kill_requested;
    int released;                   /* the loop will not touch this conn again */
};

struct rw_tcp_srv_ep {
    struct rw_ep base;
    struct rw_tcp_domain *dom;
    unsigned slot;
    uint32_t max_msg;
    int io_timeout_ms;
    unsigned set_rails;             /* cfg->set_rails: the session's rails */
    struct rw_tcp_key *keys;        /* sorted by rkey */
    size_t n_keys;
    struct rw_tcp_sess *sess;       /* its session's share of the budget */
    unsigned loop_place;            /* which server loop serves it (rw_tcp_sess_place) */

    /* guarded by dom->lock */
    pthread_cond_t cond;            /* signalled when a connection is attached */
    int have_remote;                /* ep_connect gave the client's identity */
    struct rw_qp_id remote;
    int n_parked;                   /* hellos that arrived before ep_connect */
    int parked_fd[RW_TCP_MAX_PARKED];
    struct rw_tls_conn *parked_tls[RW_TCP_MAX_PARKED];
    struct rw_tcp_hello parked[RW_TCP_MAX_PARKED];
    int attached;                   /* conn was handed to a loop */
    int conn_ended;                 /* the loop has closed the connection */
    int killed;
    struct rw_tcp_conn conn;
};

struct rw_tcp_slot {
    struct rw_wr wr;
    uint8_t hdr[32];                /* encoded request */
    int status;
    uint32_t byte_len;
};

enum rw_tcp_cli_state { RW_TCP_CLI_NEW, RW_TCP_CLI_UP, RW_TCP_CLI_DEAD };

struct rw_tcp_cli_loop;
struct rw_tcp_rx;

/* How a client ep belongs to its event loop (tcp_cli_loop.c). */
struct rw_tcp_cli_link {
    struct rw_tcp_cli_loop *loop;   /* set at io_start, fixed for the ep's life */
    unsigned place;                 /* rw_tcp_cli_pool_place at ep_create: picks the loop */
    /* loop thread only */
    struct rw_evloop_member member; /* the loop's table and ready FIFO */
    /* guarded by loop->lock */
    struct rw_tcp_cli_ep *add_next, *kick_next, *kill_next;
    int kicked;                     /* on the kick list */
    int kill_requested;
    int kill_done;                  /* the loop ran the kill command: on no list any more */
    int released;                   /* the loop dropped the ep (dead, outstanding completed) */
    int orphan;                     /* inherited by a fork()ed child: no loop runs it */
};

/* Receive state of a client ep: loop thread only. */
struct rw_tcp_cli_rxs {
    struct rw_tcp_rx *rx;           /* staging buffer (malloc'd at io_start) */
    uint8_t *dst;                   /* READ payload being received: where it goes */
    uint64_t left;                  /* payload bytes still to come (0: reading headers) */
    unsigned lowat;                 /* SO_RCVLOWAT set for the payload (0: none set);
                                       the receiving thread's, as the rest of rxs */
};

struct rw_tcp_cli_ep {
    struct rw_ep base;
    struct rw_tcp_domain *dom;
    uint32_t max_msg;
    int io_timeout_ms;
    int evfd;                       /* wait fd: signalled when a completion is queued */
    int lazy_verdict;               /* cfg->lazy_verdict */
    uint64_t busy_poll_ns;          /* the loop's spin window for this ep (cfg->busy_poll_us) */
    unsigned set_rails;             /* cfg->set_rails: the railset's rails */
    int need_verdict;               /* the receiver reads the verdict first */
    struct rw_tcp_cli_link link;
    struct rw_tcp_cli_rxs rxs;
    struct rw_tcp_stage *stage;     /* CUDA staging (tcp_stage.c), NULL until first used */

    pthread_mutex_t lock;
    pthread_cond_t cond;            /* signalled when an inline send ends (ep_kill waits) */
    enum rw_tcp_cli_state state;
    int fd;                         /* non-blocking once connected */
    struct rw_tls_conn *tls;        /* owned: the rail runs TLS (NULL: plain) */
    int err;                        /* why the ep died */
    unsigned depth;
    uint32_t mask;
    struct rw_tcp_slot *ring;
    /* monotonic counters: polled <= done <= posted, sent <= posted,
     * answered <= posted, posted - polled <= depth; entry i lives at
     * ring[i & mask].  `answered` counts responses received; while the ep
     * is up done = min(answered, sent): a completion is published only once
     * the send call that carried its request has returned, so no thread is
     * inside a call that uses the WR's buffer when its owner sees it done */
    uint64_t posted, sent, answered, done, polled;
    /* The armed waiter's mark (ep_arm_after): a publication that leaves
     * `done` short of it wakes nobody, unless an entry failed.  wake_owed:
     * the waiter had taken every completion when one was published without
     * a wake-up, so the publication that reaches the mark wakes it. */
    uint64_t wake_at;
    int wake_owed;
    size_t sent_off;                /* bytes of entry `sent` already on the wire */
    int tx_busy;                    /* a thread is writing to the socket */
    int abort_due;                  /* died with requests unanswered: ep_kill aborts
                                       the connection (rw_tcp_abort) */
    int out_wait;                   /* the loop's send hit EAGAIN: EPOLLOUT will run it */
    int64_t tx_mark_ms;             /* last send progress, or when sending began */
    int64_t rx_mark_ms;             /* last byte received */
    /* A waiting caller receiving on the rail (tcp_cli_attend.c) */
    int wfd;                        /* ep_wait_fd: epoll set of evfd (+ fd while attend) */
    int attend;                     /* fd is in wfd: a waiting caller may receive */
    int rx_owner;                   /* who runs the receive state machine: 0, RW_TCP_RX_* */
    int rx_missed;                  /* the loop skipped a socket event while the caller read */
    int finish_deferred;            /* the loop dropped the ep while the caller read */
    int64_t attend_ms;              /* the caller's last arm or receive while attend */
    _Atomic uint64_t evfd_pending;  /* evfd writes begun and not yet read by ep_arm */
};

/* rx_owner values: the ep's loop thread, or a caller in ep_poll. */
#define RW_TCP_RX_LOOP 1
#define RW_TCP_RX_CALLER 2
#define RW_TCP_RX_FINISHING 3 /* the caller completes what the loop dropped */

/* --- condition variables on CLOCK_MONOTONIC (tcp_sync.c) --- */
/* Initialises *c to wait against CLOCK_MONOTONIC.  Returns 0 or
 * RAILWIRE_E_SYSTEM. */
int rw_tcp_cond_init(pthread_cond_t *c);
/* Waits on c (m held) until signalled or deadline_ms (rw_now_ms clock).
 * Returns 0, or RAILWIRE_E_TIMEOUT once the deadline has passed. */
int rw_tcp_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t deadline_ms);

/* --- keys (tcp_mr.c) --- */
/* Reserves a random non-zero 32-bit key unused in this process, whose low
 * byte is never RW_STATUS_OK (tcp_mr.c says why).  Returns 0 or
 * RAILWIRE_E_NOMEM. */
int rw_tcp_key_alloc(uint32_t *key);
/* Releases a key from rw_tcp_key_alloc. */
void rw_tcp_key_free(uint32_t key);

int rw_tcp_mr_reg(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out);
void rw_tcp_mr_dereg(struct rw_mr *mr);

int rw_tcp_domain_open(const struct rw_domain_cfg *cfg, struct rw_domain **out);
void rw_tcp_domain_close(struct rw_domain *dom);

/* --- constant-time comparison (tcp_guard.c) --- */
/* Returns 1 when the n 32-bit words of a and b are equal, taking the same
 * time whichever words differ. */
int rw_tcp_ct_equal(const uint32_t *a, const uint32_t *b, size_t n);

/* --- accept path (tcp_accept.c) --- */
/* Body of a server domain's accept thread: accepts, reads hellos without
 * letting one connection delay another, and hands matching connections to
 * their eps.  arg is the struct rw_tcp_domain. */
void *rw_tcp_accept_main(void *arg);

/* --- server eps (tcp_ep_server.c) --- */
int rw_tcp_srv_ep_create(struct rw_tcp_domain *d, const struct rw_ep_cfg *cfg, struct rw_ep **out);
int rw_tcp_srv_ep_connect(struct rw_tcp_srv_ep *ep, const struct rw_qp_id *remote, int timeout_ms);
void rw_tcp_srv_ep_kill(struct rw_tcp_srv_ep *ep);
void rw_tcp_srv_ep_destroy(struct rw_tcp_srv_ep *ep);
/* enum rw_ep_liveness of a server ep (see transport.h). */
int rw_tcp_srv_ep_liveness(struct rw_tcp_srv_ep *ep);
/* Called by the accept thread with dom->lock held for a well-formed hello
 * on this domain's port.  Takes ownership of fd: attaches it, parks it on
 * its ep until ep_connect gives the client's identity, or refuses it.
 * Returns 1 if attached, parked, or refused after a check of its secrets
 * (logged and counted against the peer here), 0 if refused for naming no
 * ep that can take it (the caller logs and counts that). */
int rw_tcp_srv_offer_locked(struct rw_tcp_domain *d, int fd, struct rw_tls_conn *tls,
                            const struct rw_tcp_hello *h);

/* Sends the refusal verdict (best effort; inside TLS when tls is set),
 * frees tls and closes fd. */
void rw_tcp_refuse(int fd, struct rw_tls_conn *tls);

/* --- TLS on server rail connections (tcp_tls.c) --- */
/* Frees tls (NULL ignored) after a best-effort close_notify, then closes fd. */
void rw_tcp_tls_close(int fd, struct rw_tls_conn *tls);
/* One verdict byte to the client, inside TLS when tls is set.  Returns 0
 * or -1 (errno set). */
int rw_tcp_send_verdict(int fd, struct rw_tls_conn *tls, uint8_t v);
/* The served connection's reads and writes: recv(2)/sendmsg(2) semantics
 * (-1 with errno EAGAIN when the socket would block, ECONNRESET for a TLS
 * failure, logged, and for every read once the loop saw the socket fail:
 * c->rx_reset), inside TLS when c->tls is set. */
ssize_t rw_tcp_conn_recv(struct rw_tcp_conn *c, void *buf, size_t n);
ssize_t rw_tcp_conn_sendmsg(struct rw_tcp_conn *c, const struct msghdr *mh, int flags);
/* Client rails, the same: a receive through rx->tls when set, a send
 * through ep->tls (a send that had to wait is retried with at least the
 * same bytes, which the send queue's order guarantees). */
ssize_t rw_tcp_rx_recv(struct rw_tcp_rx *rx, void *buf, size_t n);
ssize_t rw_tcp_cli_sendmsg(struct rw_tcp_cli_ep *ep, const struct msghdr *mh);
/* Client dial with TLS: the handshake on the connected fd (checking the
 * server's certificate against the domain's tls_host), then the hello and
 * (unless lazy) the verdict inside TLS, all before deadline_ms.  Returns
 * 0 and *out (owned by the caller), or an error (logged). */
int rw_tcp_cli_tls_dial(struct rw_tcp_domain *d, int fd, const uint8_t *hello, size_t n,
                        int want_verdict, uint8_t *verdict, int64_t deadline_ms,
                        struct rw_tls_conn **out);
/* Domain open/close: keeps a reference on the client credentials. */
void rw_tcp_domain_tls_client(struct rw_tcp_domain *d, struct rw_tls_creds *c,
                              const char *host);
void rw_tcp_domain_tls_release(struct rw_tcp_domain *d);
/* Notes in ep->base.tls/tls_ktls who runs the rail's record layer. */
void rw_tcp_cli_tls_mode(struct rw_tcp_cli_ep *ep);

/* --- serving state machine (tcp_serve.c) --- */
/* Prepares ep->conn for fd (non-blocking) before it goes to a loop. */
void rw_tcp_conn_init(struct rw_tcp_conn *c, struct rw_tcp_srv_ep *ep, int fd);
/* Sizes a server rail socket's receive buffer to 7/16 of max(its
 * session's queue cap, 2 MiB), once, before the verdict lets the client
 * send requests: the window offered until then is the initial one, so the
 * smaller buffer drops nothing.  It is never shrunk later (see tcp_serve.c, size_buffers).  A
 * failure is logged; the socket keeps the listener's buffer. */
void rw_tcp_conn_size_rcvbuf(int fd, const struct rw_tcp_sess *sess);
/* Runs the connection until it must wait, yields its quantum, or closes.
 * Called by its loop thread only. */
void rw_tcp_conn_run(struct rw_tcp_conn *c);
/* Periodic refresh while on the tick list (budget/cap waits and queued
 * bytes still draining).  Loop thread only. */
void rw_tcp_conn_tick(struct rw_tcp_conn *c, int64_t now);
/* Timeout scan: closes a connection stalled mid-request or not reading for
 * the I/O timeout, or holding queued bytes while the budget starves others
 * (see docs/tcp-transport.md).  Loop thread only. */
void rw_tcp_conn_scan(struct rw_tcp_conn *c, int64_t now);
/* Closes the socket (abortively when bytes are still queued), releases its
 * budget and marks the ep's connection ended.  `why` is logged (NULL: not).
 * Loop thread only; idempotent. */
void rw_tcp_conn_close(struct rw_tcp_conn *c, const char *why);
/* The four above, for the loop (rw_tcp_loop_add). */
extern const struct rw_tcp_conn_ops rw_tcp_serve_ops;

/* --- client eps (tcp_ep_client.c) --- */
int rw_tcp_cli_ep_create(struct rw_tcp_domain *d, const struct rw_ep_cfg *cfg, struct rw_ep **out);
int rw_tcp_cli_ep_connect(struct rw_tcp_cli_ep *ep, const struct rw_qp_id *remote, int timeout_ms);
int rw_tcp_cli_ep_post(struct rw_tcp_cli_ep *ep, const struct rw_wr *wrs, size_t n);
int rw_tcp_cli_ep_poll(struct rw_tcp_cli_ep *ep, struct rw_wc *wcs, int max);
void rw_tcp_cli_ep_kill(struct rw_tcp_cli_ep *ep);
/* An ep's destruction, in two steps around rw_tcp_stage_ep_free (tcp_ops.c
 * runs the three): _stop kills it and takes it off its event loop, so no
 * thread touches it any more; _free closes and frees the rest. */
void rw_tcp_cli_ep_stop(struct rw_tcp_cli_ep *ep);
void rw_tcp_cli_ep_free(struct rw_tcp_cli_ep *ep);

#endif
