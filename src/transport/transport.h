/* SPDX-License-Identifier: MIT */
/* The internal transport interface.  Two implementations: src/tcp/ (software,
 * one-sided READ/WRITE carried over TCP) and src/verbs/ (RDMA RC QPs).  The
 * rail layer (src/rail/) uses only this table; transports know nothing about
 * striping or handshakes.
 *
 * Objects: a domain is one local NIC (a verbs device+port, or a tcp local
 * address); an mr is memory registered on a domain; an ep is one rail
 * endpoint (an RC QP, or a TCP connection).  Each transport's structs embed
 * the generic ones as their first member and get back with container_of.
 *
 * All functions return 0 / a count, or a negative RAILWIRE_E_* code; the
 * transport logs the first failure with what to check. */
#ifndef RW_TRANSPORT_TRANSPORT_H
#define RW_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <railwire/error.h>
#include <railwire/types.h>

#include "gpu/mem_desc.h"
#include "wire/wire.h"

#define rw_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct rw_transport_ops;

enum rw_access {
    RW_ACCESS_LOCAL = 0,        /* local use only (client buffers) */
    RW_ACCESS_REMOTE_READ = 1,  /* peers may READ it */
    RW_ACCESS_REMOTE_WRITE = 2, /* peers may WRITE it */
    /* With REMOTE_READ: a transport whose CPU sends READ answers may hand
     * them to the kernel by reference to this memory (tcp: vmsplice), the
     * owner having promised that it outlives every queued answer
     * (railwire_server_opts.zero_copy_reads).  Others ignore it. */
    RW_ACCESS_READ_BY_REFERENCE = 4,
};

enum rw_opcode { RW_OP_READ = 0, RW_OP_WRITE = 1 };

enum rw_role { RW_ROLE_CLIENT = 0, RW_ROLE_SERVER = 1 };

/* What a server ep knows of its rail (ops->ep_liveness). */
enum rw_ep_liveness {
    RW_EP_UNKNOWN = 0,  /* the transport has no signal (verbs): only a timeout can tell */
    RW_EP_WAITING = 1,  /* connected in expect mode, the client's rail has not arrived */
    RW_EP_LIVE = 2,     /* the rail is attached and serving */
    RW_EP_DEAD = 3,     /* the rail was attached and has closed or failed */
};

struct rw_tls_slot;
struct rw_tls_creds;

/* Where and how to open a domain. */
struct rw_domain_cfg {
    enum rw_role role;
    /* verbs: device name ("mlx5_0", "rxe_a0") or NULL for the first active
     * port; tcp: local IP address to bind (client) or listen on (server),
     * NULL = any. */
    const char *device;
    unsigned port;          /* verbs: port number (0 = first active) */
    int gid_index;          /* verbs: -1 = choose (RAILWIRE_GID_INDEX overrides) */
    unsigned mtu_cap;       /* verbs: path MTU cap in bytes, 0 = 4096 (RAILWIRE_MTU) */
    unsigned timeout;       /* verbs: local ACK timeout exponent, 0 = default */
    unsigned retry_cnt;     /* verbs: transport retries, 0 = default */
    int io_timeout_ms;      /* tcp: per-operation I/O timeout, 0 = default */
    /* tcp server: bytes that may be queued towards clients (READ answers in
     * the kernel's send queues plus staged headers), shared by every server
     * domain of the process; 0 = 256 MiB.  The last server domain_open that
     * gives a non-zero value sets it: give every domain the same one. */
    uint64_t tcp_queue_budget;
    /* tcp server: the most one session (its eps together, see
     * rw_ep_cfg.same_session) may have queued; 0 = 64 MiB.  Process-wide,
     * set like tcp_queue_budget. */
    uint64_t tcp_session_share;
    /* tcp server: how long an event-loop thread that just served requests
     * keeps polling its sockets before it sleeps, in microseconds (see
     * common/busy_poll.h): 0 = default, negative = none.  Process-wide:
     * the last server domain_open sets it. */
    int busy_poll_us;
    /* tcp server: the TLS credentials of the rail connections (each runs
     * TLS 1.3 before its hello; read again for every connection, so a
     * reload applies to new rails); NULL = plain.  verbs: unused. */
    struct rw_tls_slot *tls_server;
    /* tcp client: every rail connection runs TLS 1.3 with these
     * credentials (borrowed; they outlive the domain) before its hello,
     * checking the server's certificate against their server name or
     * tls_host; NULL = plain.  verbs: unused (the control connection is
     * the railset's). */
    struct rw_tls_creds *tls_client;
    const char *tls_host;
};

/* Generic part of a domain.  The transport fills every field. */
struct rw_domain {
    const struct rw_transport_ops *ops;
    char name[64];          /* "rxe_a0:1" or "tcp:127.0.0.1" */
    double gbps;            /* link speed estimate, the rail's striping weight (> 0) */
    unsigned max_qp_wr;     /* bound on outstanding WRs per ep */
    unsigned default_depth; /* slices a rail keeps in flight when the user gives no
                               queue_depth; 0 = RW_DEFAULT_QUEUE_DEPTH (16) */
    uint32_t max_msg;       /* largest single READ/WRITE the ep accepts */
};

/* Generic part of a memory registration. */
struct rw_mr {
    struct rw_domain *dom;
    void *addr;
    size_t len;
    int access;             /* RW_ACCESS_* bits */
    uint32_t lkey;
    uint32_t rkey;
    uint64_t remote_base;   /* base_addr to advertise; the peer addresses byte
                               i of the region as remote_base + i */
    /* What the memory is and how the transport reached it, for stats and
     * logs: mem_kind RAILWIRE_MEM_*, mem_path enum rw_mem_path (names:
     * rw_mem_kind_name, rw_mem_path_name).  mr_reg leaves both 0 (host). */
    uint8_t mem_kind;
    uint8_t mem_path;
};

/* Options for one endpoint. */
struct rw_ep_cfg {
    unsigned depth;                     /* max outstanding WRs (<= dom->max_qp_wr) */
    /* server side: the regions this ep's peer may access (tcp enforces per
     * session; verbs relies on the PD and each MR's access flags). */
    struct rw_mr *const *exposed;
    size_t n_exposed;
    /* tcp server side: the local address to advertise in the GID when the
     * domain listens on a wildcard address (the control connection's local
     * address); NULL otherwise. */
    const struct sockaddr_storage *advertise;
    /* tcp client side: when non-zero, ep_connect returns once the rail's
     * connection is up and its hello is sent, without waiting for the
     * server's verdict, so the rails of one railset come up in parallel
     * rather than one round trip each.  A refusal then kills the ep later
     * (its WRs complete with RAILWIRE_E_RAIL_DOWN); the handshake's ack
     * still says whether the server accepted every rail.  0 (default):
     * ep_connect returns only once the server attached the rail.  verbs
     * ignores it. */
    int lazy_verdict;
    /* tcp server side: an ep of the same session created earlier (e.g. the
     * session's first rail), or NULL for a session of its own.  The eps of
     * one session share one tcp_session_share of the queue budget.  The
     * named ep must outlive nothing: each ep holds its own reference to the
     * session's share.  verbs ignores it. */
    struct rw_ep *same_session;
    /* tcp client side: the receive thread's spin window while requests are
     * outstanding, in microseconds (see common/busy_poll.h): 0 = default,
     * negative = none.  verbs ignores it (its waits are the railset's). */
    int busy_poll_us;
    /* tcp: how many rails the ep's railset (client) or session (server)
     * has, 0 = unknown (counted as 1); it picks the congestion control of a
     * same-host rail (tcp_cc.h).  verbs ignores it. */
    unsigned set_rails;
};

/* Generic part of an endpoint. */
struct rw_ep {
    struct rw_domain *dom;
    struct rw_qp_id local;  /* our identity, sent in the handshake */
    uint32_t tls;           /* enum railwire_rail_tls of the rail's connection (tcp),
                               set by ep_connect; 0 = plain */
    uint32_t tls_ktls;      /* RAILWIRE_KTLS_SEND | RAILWIRE_KTLS_RECV */
};

/* One work request.  `local` lies inside `mr`. */
struct rw_wr {
    uint64_t wr_id;
    enum rw_opcode opcode;
    void *local;
    struct rw_mr *mr;
    uint32_t length;        /* 1..dom->max_msg */
    uint64_t remote_addr;
    uint32_t rkey;
    int signaled;           /* verbs may leave unsignaled WRs out of the CQ;
                               the rail layer always signals the last WR of a
                               chain, and tcp completes every WR */
};

/* One completion.  status: 0, RAILWIRE_E_REMOTE_ACCESS (the op was refused;
 * the ep may still be usable on tcp), RAILWIRE_E_RAIL_DOWN (the ep failed or
 * was killed: the op did not complete and may be re-issued elsewhere),
 * RAILWIRE_E_RETRY_EXCEEDED, RAILWIRE_E_TIMEOUT, ... */
struct rw_wc {
    uint64_t wr_id;
    int status;
    uint32_t byte_len;
};

/* What a server domain has served (ops->domain_served): requests whose
 * payload the server's CPU moved.  Counters since domain_open. */
struct rw_served {
    uint64_t reads, writes;             /* READ / WRITE requests served */
    uint64_t bytes_read, bytes_written; /* their payload bytes */
    uint64_t refused;                   /* requests refused (remote access) */
    uint64_t bytes_read_by_ref;         /* of bytes_read: handed to the kernel by reference
                                           (RW_ACCESS_READ_BY_REFERENCE) */
    /* The tcp queue budget (tcp_budget.h).  It is process-wide, shared by
     * every server domain: each domain reports the same values, so a
     * reader takes them from one domain and never sums them. */
    uint64_t queue_budget;              /* bytes that may be queued towards clients */
    uint64_t queue_share;               /* the most one session may have queued */
    uint64_t queued;                    /* bytes queued now */
    uint64_t queued_peak;               /* highest value of queued since start */
    uint64_t queue_evictions;           /* connections evicted to free budget */
    uint64_t queue_starved;             /* times a connection found the budget used up */
};

/* Where one domain opens: the string a rw_domain_cfg's device points into. */
struct rw_domain_place {
    char device[128];
};

struct rw_transport_ops {
    const char *name; /* "tcp" or "verbs": for logs and stats only; nothing
                         above src/transport/ branches on it */
    /* 1: rails are placed by device "dev[:port]" (verbs); 0: by local
     * address (tcp). */
    int places_by_device;
    /* 1: the process serves every rail with a pool of about one thread a
     * core (tcp's event loops), so rails beyond half the cores share CPUs
     * and a railset packs its small transfers onto few rails
     * (rw_stripe_packs); 0: each rail's work is its device's (verbs). */
    int rails_share_cores;
    /* Optional (NULL: none).  The places rails use when the caller names
     * none (verbs: the items of RAILWIRE_DEVICES or else every active port,
     * as "dev[:port]").  Fills up to max entries; returns the count or an
     * error. */
    int (*default_places)(struct rw_domain_place *out, unsigned max);

    int (*domain_open)(const struct rw_domain_cfg *cfg, struct rw_domain **out);
    void (*domain_close)(struct rw_domain *dom);

    /* Registers [addr, addr+len) with RW_ACCESS_* `access`. */
    int (*mr_reg)(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out);
    void (*mr_dereg)(struct rw_mr *mr);

    /* Creates an endpoint and fills (*out)->local with its identity. */
    int (*ep_create)(struct rw_domain *dom, const struct rw_ep_cfg *cfg, struct rw_ep **out);
    /* Connects to the peer's identity.  Client: makes the rail usable for
     * posting (tcp: connect + authenticate).  Server: completes the rail
     * (tcp: waits for the client's connection that names this ep; verbs:
     * RTR/RTS).  Bounded by timeout_ms.
     * Server side with timeout_ms == 0 ("expect"): record the peer's identity
     * and return at once; tcp attaches the peer's rail connection whenever
     * it arrives (verbs is synchronous anyway).
     * Order used by src/rail/: the server, having read the client's
     * identities, calls ep_connect(…, 0) on each rail and acks; the client,
     * having read the ack, calls ep_connect on its rails (in parallel).  So
     * the ack never waits for the client's rail connections, a peer that
     * speaks only WIRE.md sees STATUS_OK, and a refusal reaches the client
     * as `refused` before it dials any rail. */
    int (*ep_connect)(struct rw_ep *ep, const struct rw_qp_id *remote, int timeout_ms);
    /* Posts n WRs in order.  Returns how many were accepted (all of them, or
     * fewer when the queue is full) or a negative code if the ep is dead. */
    int (*ep_post)(struct rw_ep *ep, const struct rw_wr *wrs, size_t n);
    /* Non-blocking: moves up to max completions into wcs; returns the count. */
    int (*ep_poll)(struct rw_ep *ep, struct rw_wc *wcs, int max);
    /* An fd that becomes readable when completions may be ready after
     * ep_arm(); -1 if the transport must be busy-polled. */
    int (*ep_wait_fd)(struct rw_ep *ep);
    /* Re-arms the notification before sleeping on ep_wait_fd (clears a stale
     * wakeup).  The caller polls once more after arming, then sleeps.
     * Returns 0, 1 when the wait fd now wakes on the rail's own input and
     * ep_poll then receives in the calling thread (tcp: a few small answers
     * awaited; a busy-poll spin before the sleep gains nothing then), or a
     * negative code (the fd cannot be slept on). */
    int (*ep_arm)(struct rw_ep *ep);
    /* Optional (NULL: ep_arm).  As ep_arm, but the wait fd need not wake
     * before `want` (>= 1) completions past those ep_poll has returned are
     * ready, or one of them failed: the caller knows that the ones before
     * cannot finish anything it waits for (tcp completes an ep's WRs in
     * order).  The transport may wake sooner. */
    int (*ep_arm_after)(struct rw_ep *ep, unsigned want);
    /* Forces the ep into the failed state: every outstanding WR completes
     * with RAILWIRE_E_RAIL_DOWN, and once ep_kill returns no outstanding WR
     * touches its local buffer again. */
    void (*ep_kill)(struct rw_ep *ep);
    void (*ep_destroy)(struct rw_ep *ep);

    /* Optional (NULL: call mr_reg per domain).  Registers [addr, addr+len)
     * with `access` on n domains of this transport at once (verbs: one
     * thread per distinct device for large regions, and a region already
     * registered on a device is reused); out[i] is doms[i]'s registration,
     * each released with mr_dereg.  Returns 0, or an error with nothing left
     * registered. */
    int (*mr_reg_multi)(struct rw_domain *const *doms, size_t n, void *addr, size_t len,
                        int access, struct rw_mr **out);

    /* Optional (NULL: RW_EP_UNKNOWN).  Server side: what the ep knows of its
     * client's rail (enum rw_ep_liveness).  Thread-safe; never blocks. */
    int (*ep_liveness)(struct rw_ep *ep);
    /* Optional (NULL: nothing to report).  Client side, called by the rail
     * layer now and then (about every 100 ms while work is outstanding):
     * returns 0, or a negative code when the ep is known to be dead from a
     * signal other than its completions (verbs: a port-error or QP-fatal
     * async event), after which ep_poll reports its WRs as failed.  Never
     * blocks. */
    int (*ep_check)(struct rw_ep *ep);
    /* Optional (NULL: the transport cannot count, e.g. verbs, whose
     * one-sided READ/WRITE never reach the server's CPU).  Server domain:
     * fills *out with what it has served.  Thread-safe; never blocks.
     * Returns 0. */
    int (*domain_served)(struct rw_domain *dom, struct rw_served *out);

    /* Optional (NULL: the transport registers host memory only, through
     * mr_reg).  Registers the memory `mem` describes (checked by
     * rw_mem_normalise) with RW_ACCESS_* `access`, and says in
     * (*out)->mem_kind / mem_path what it is and how it was reached.  verbs:
     * HOST as mr_reg; CUDA exported as a DMA-BUF and ibv_reg_dmabuf_mr,
     * else ibv_reg_mr on the device pointer (nvidia-peermem); DMABUF with
     * ibv_reg_dmabuf_mr.  The caller keeps the memory and any fd; release
     * with mr_dereg.  Returns 0 or an error (logged, naming each attempt and
     * what to check). */
    int (*mr_reg_mem)(struct rw_domain *dom, const struct rw_mem *mem, int access,
                      struct rw_mr **out);
};

/* The built-in transports.  rw_verbs_ops exists only when RAILWIRE_HAVE_VERBS. */
extern const struct rw_transport_ops rw_tcp_ops;
#if RAILWIRE_HAVE_VERBS
extern const struct rw_transport_ops rw_verbs_ops;
/* Returns 1 if at least one active RDMA port exists (for TRANSPORT_AUTO). */
int rw_verbs_available(void);
#endif

#endif
