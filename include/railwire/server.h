/* SPDX-License-Identifier: MIT */
/* The server side: publishes read-only layers (RO dialect) or one
 * read-write arena (RW dialect) on one listening port, and serves many
 * clients at once.
 *
 * Admission (docs/security.md has the threat model and every bound):
 * - A connection is checked against the allowlist at accept (refused: closed
 *   at once).  Until its handshake completes it lives in a bounded pool of
 *   pending connections (max_pending; when full the oldest is evicted), with
 *   a deadline per step: first_byte_timeout_ms for the request byte, then
 *   io_timeout_ms for the params and the client's ids, and for the ack.
 * - Caps (max_clients, max_sessions_per_peer, max_rails_per_client) are
 *   checked when the request arrives, before anything is allocated; a client
 *   over a cap is rejected by closing its control connection (it sees
 *   peer-rejected; the reason goes to the log).  Only complete handshakes
 *   (ack sent) count against max_clients: a connection still in its
 *   handshake takes no session's place (the pending pool and the per-peer
 *   cap bound those).  max_clients is checked again before the ack, and a
 *   client whose handshake ran while the last places were taken is refused
 *   there (it sees refused).
 * - Rails that have not attached within io_timeout_ms of the ack are
 *   released; a session none of whose rails attached is released.
 * - When a client's control connection ends, its session lingers: its rails
 *   are released once they are dead as well (tcp: every rail connection
 *   closed or failed) or when the linger runs out (verbs has no other
 *   liveness signal, so there the linger is the bound).  A session whose
 *   every rail has closed is released even while its control connection is
 *   open (a session cannot get a rail back).  The log says why each session
 *   was released, and railwire_server_stats() counts it.
 *
 * Threads: one event loop serves every control connection (handshakes,
 * deadlines, lingers); the transport may add its own (tcp: per rail
 * connection today).  Every function here is thread-safe: create, destroy,
 * stats and the getters may be called from any thread (destroy once). */
#ifndef RAILWIRE_SERVER_H
#define RAILWIRE_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <railwire/error.h>
#include <railwire/export.h>
#include <railwire/mem.h>
#include <railwire/tls.h>
#include <railwire/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct railwire_server railwire_server;

/* One region of the caller's memory. */
typedef struct railwire_region {
    void *addr;
    size_t len;
} railwire_region;

/* Server options.  Initialise with railwire_server_opts_init(); pointers are
 * borrowed for railwire_server_create() only, except the memory they
 * describe, which must outlive the server.
 *
 * ABI (docs/abi.md): struct_size comes first and is set by
 * railwire_server_opts_init() to the sizeof the caller was compiled with.
 * The library reads only struct_size bytes; every field beyond them takes
 * its default.  Fields are only ever appended. */
typedef struct railwire_server_opts {
    uint32_t struct_size;              /* sizeof(railwire_server_opts) of the caller's
                                          header; set by railwire_server_opts_init() */
    uint32_t dialect;                  /* enum railwire_dialect, default RO */
    uint32_t transport;                /* enum railwire_transport, default AUTO */
    const char *listen_host;           /* control address, default "0.0.0.0" (every address) */
    const char *listen_port;           /* default "0": ephemeral, see railwire_server_port() */
    /* Several control addresses (e.g. one per NIC, so a client that lost
     * one path reaches the server through another): when n_listen_hosts > 0
     * they replace listen_host, all on one port (listen_port, or the port
     * the first one got).  tcp rails without rail_addrs then listen on these
     * addresses too (rail i on the (i mod n)-th). */
    const char *const *listen_hosts;
    unsigned n_listen_hosts;
    /* tcp: addresses the rail listeners bind to (rail i uses i mod n); NULL =
     * the control address.  verbs: devices "dev[:port]" (NULL = every active
     * port). */
    const char *const *rail_addrs;
    unsigned n_rail_addrs;
    const char *const *devices;
    unsigned n_devices;
    int gid_index;                     /* verbs: -1 = choose */
    unsigned mtu;                      /* verbs: path MTU cap, 0 = 4096 */
    /* RO: the layers, in order (1..4096). */
    const railwire_region *layers;
    unsigned n_layers;
    /* RW: the arena. */
    railwire_region arena;
    /* Caps, checked before anything is allocated for a client. */
    unsigned max_rails_per_client;     /* default 255: the wire's limit (RO requests are
                                          bounded to 8 by their framing) */
    unsigned max_clients;              /* concurrent sessions, default 64 */
    uint64_t max_bytes;                /* RO: total bytes of the layers, RW: arena size;
                                          create fails with RAILWIRE_E_LIMIT above it; 0 = no cap */
    int io_timeout_ms;                 /* bounds each handshake step (request, ids, ack)
                                          as a whole and each rail connect; default 10000;
                                          also how long after the ack a rail may take to
                                          attach before it counts as dead */
    int session_linger_ms;             /* after a session's control connection ends, its
                                          rails are kept until they are all dead or this
                                          long has passed; default 30000, 0 = release at
                                          once.  A lingering session counts against the caps */
    /* Admission. */
    unsigned max_sessions_per_peer;    /* per client IP address: at most this many sessions
                                          (lingering and in-handshake ones included) and at
                                          most this many pending connections; default 16,
                                          0 = no cap */
    unsigned max_pending;              /* connections still in the handshake, server-wide;
                                          when full the oldest is evicted; default 256 */
    int first_byte_timeout_ms;         /* a new connection must send its request byte
                                          within this long; default 2000, never more than
                                          io_timeout_ms */
    /* Who may connect: CIDR blocks ("10.1.0.0/16", "fd00::/8", or one address,
     * "192.0.2.7"); IPv4 peers on an IPv6 listener (::ffff:a.b.c.d) match IPv4
     * blocks.  n_allow == 0: everyone.  Borrowed for create only. */
    const char *const *allow;
    unsigned n_allow;
    /* tcp: how long an event-loop thread that just served requests keeps
     * polling its sockets before it sleeps, in microseconds, so that the
     * next request of an active client is not delayed by a wake-up (it
     * gives way to any other runnable thread; an idle server sleeps; a
     * spin that loses its CPU to another process for a time slice stops
     * every spin of the process for 10 ms to 1 s, as for
     * railwire_railset_opts).  The
     * loops are shared by every server of the process: the last server
     * created sets it.  0 = default (50), -1 = sleep at once, at most
     * 1000000.  verbs: unused (the NICs serve). */
    int busy_poll_us;
    /* TLS 1.3 (include/railwire/tls.h, docs/security.md): NULL = a plain
     * listener.  With it, the control connection and every tcp rail run
     * TLS; a plain client is refused with a TLS alert.  The files are read
     * at create and again by railwire_server_reload_tls(). */
    const struct railwire_tls_opts *tls;
    /* With tls: only clients whose certificate's subject CN or a DNS SAN,
     * or whose PSK identity, equals one entry (or matches "*.suffix") get
     * a session; the others are refused after the TLS handshake, logged
     * with their identity and counted (rejected_identity).  n_tls_allow ==
     * 0: every authenticated client.  Borrowed for create only. */
    const char *const *tls_allow;
    unsigned n_tls_allow;
    uint32_t reserved1;                /* 0 (makes the tail padding a field: a member
                                          appended later starts past every byte an
                                          older caller's struct_size covers) */
    /* Memory descriptors (include/railwire/mem.h, docs/gpu.md), so a server
     * can publish GPU memory.  RO: n_layer_mems descriptors (1..4096), in
     * order, replace layers (setting both is RAILWIRE_E_INVALID).  RW:
     * arena_mem, when not NULL, replaces arena (setting both is
     * RAILWIRE_E_INVALID).  HOST descriptors behave exactly as layers and
     * arena; CUDA memory is registered through the transport (verbs:
     * DMA-BUF, else nvidia-peermem; tcp: staged through pinned host
     * buffers, the server's CPU never touching device memory).  The
     * descriptors are borrowed for create only, the memory they describe
     * must outlive the server. */
    const railwire_mem *layer_mems;
    unsigned n_layer_mems;
    uint32_t reserved2;                /* 0 (padding made a field, as reserved1) */
    const railwire_mem *arena_mem;
    size_t staging_bytes;              /* tcp, CUDA memory: the most pinned host memory the
                                          server holds to stage payloads between the device
                                          and the sockets, shared by every session; chunks
                                          of min(1 MiB, staging_bytes / 4) are allocated on
                                          demand; when all are in use, requests wait for
                                          one (back-pressure) and nothing more is
                                          allocated.  0 = default (64 MiB); at least 16 KiB.
                                          Unused without CUDA memory */
    /* tcp: READ answers of at least 128 KiB from host memory are handed to
     * the socket by reference (vmsplice and splice: the kernel takes the
     * published pages, not a copy of them), which spares the server one
     * copy of every byte read (docs/tcp-transport.md, "Zero-copy READ
     * answers").  The kernel then holds the pages until the client has
     * received the answer, which can be after railwire_server_destroy()
     * has returned: such an answer carries what the memory holds when the
     * client receives it.  Set it only when nothing you would not publish
     * is written into the published memory after the server is destroyed:
     * unmapping it then is fine (the kernel keeps the pages it holds),
     * free() to a heap that reuses it is not (`railwire serve` sets it for
     * the mappings it keeps until it exits).  0 = copy (default), 1 = by
     * reference; anything else is RAILWIRE_E_INVALID.  TLS rails and CUDA
     * memory always copy.  verbs: unused (the NICs serve). */
    uint32_t zero_copy_reads;
    uint32_t reserved3;                /* 0 (tail padding made a field, as reserved1) */
} railwire_server_opts;

/* Counters of one server, filled by railwire_server_stats() (a struct tag,
 * not a typedef, like struct stat and stat()).  Gauges say what is now;
 * every other field counts events since create.  Fields may be appended in
 * later versions, never reordered: railwire_server_stats() takes the
 * caller's sizeof. */
struct railwire_server_stats {
    /* Gauges. */
    uint64_t sessions_live;      /* handshake complete and not released (lingering included) */
    uint64_t sessions_lingering; /* of those, sessions whose control connection ended */
    uint64_t pending;            /* connections in the handshake pool */
    uint64_t slots_held;         /* live sessions plus handshakes past the params (whose
                                    rails exist); only the sessions count against
                                    max_clients */
    uint64_t rails_live;         /* rails of live sessions not yet released */
    uint64_t accept_paused;      /* 1 while accepting is paused (out of descriptors/memory) */
    /* Connections. */
    uint64_t accepted;           /* control connections accepted */
    uint64_t sessions_opened;    /* handshakes completed (ack sent) */
    /* Sessions released, by reason (they add up to sessions_opened - sessions_live). */
    uint64_t released_control_ended;    /* control connection ended and every rail closed
                                           (or session_linger_ms is 0) */
    uint64_t released_linger_expired;   /* control ended, rails still up when the linger ran out */
    uint64_t released_no_rail_attached; /* no rail attached within io_timeout_ms of the ack */
    uint64_t released_rails_closed;     /* every rail closed while the control connection was open */
    uint64_t released_server_stopping;  /* railwire_server_destroy() */
    uint64_t rails_never_attached;      /* rails released because they had not attached within
                                           io_timeout_ms of the ack */
    /* Refusals, by class. */
    uint64_t rejected_allowlist;   /* peers outside `allow`, closed at accept */
    uint64_t rejected_per_peer;    /* over max_sessions_per_peer (pending or sessions) */
    uint64_t rejected_max_clients; /* over max_clients */
    uint64_t rejected_rails;       /* rail count 0, over max_rails_per_client, or RO over 8 */
    uint64_t rejected_setup;       /* the server could not create the rails (see the log) */
    uint64_t evicted;              /* pending connections closed because the pool was full */
    uint64_t handshake_timeouts;   /* a step missed its deadline (first byte, ids, ack) */
    uint64_t handshake_failures;   /* malformed bytes, end of stream or reset mid-handshake,
                                      a rail that could not be connected */
    /* Faults. */
    uint64_t accept_errors;        /* accept failures other than "nothing to accept" */
    uint64_t accept_pauses;        /* times accepting was paused for lack of descriptors or
                                      memory (EMFILE, ENFILE, ENOMEM, ENOBUFS) */
    /* Data served (appended in 0.1).  Counted where the server's CPU moves
     * the payload: on tcp.  verbs READ/WRITE are one-sided RDMA that never
     * reach the server's CPU: there these stay 0 and data_counted is 0. */
    uint64_t data_counted;         /* 1 when the transport counts the fields below (tcp) */
    uint64_t requests_read;        /* READ requests served */
    uint64_t requests_written;     /* WRITE requests served */
    uint64_t bytes_read;           /* payload bytes clients read */
    uint64_t bytes_written;        /* payload bytes clients wrote */
    uint64_t requests_refused;     /* requests refused: rkey, access or range (remote access) */
    /* Rails of live sessions by what the transport knows of them (gauges,
     * refreshed about every 100 ms; they add up to rails_live). */
    uint64_t rails_attached;       /* the client's rail is attached and serving */
    uint64_t rails_waiting;        /* the client's rail has not arrived yet */
    uint64_t rails_closed;         /* the rail was attached and has closed; its session
                                      is not released yet */
    uint64_t rails_unknown;        /* the transport has no signal (verbs) */
    /* Registration of the published memory at create. */
    uint64_t registered_bytes;     /* bytes registered, over every domain (published bytes
                                      x domains) */
    uint64_t registrations;        /* registrations made (regions x domains) */
    uint64_t registration_ns;      /* time spent registering, summed over registrations
                                      (domains register in parallel, so the wall time of
                                      create can be less) */
    uint64_t registration_max_ns;  /* the longest single registration */
    /* The tcp queue budget: bytes queued towards clients (READ answers in
     * the kernel's send queues), one budget for every tcp server of the
     * process, with a share per session (docs/tcp-transport.md, "Budgets").
     * All 0 on verbs, which queues nothing on the server's CPU. */
    uint64_t queue_budget_bytes;   /* the budget */
    uint64_t queue_share_bytes;    /* the most one session may have queued */
    uint64_t queued_bytes;         /* queued now (gauge) */
    uint64_t queued_peak_bytes;    /* the highest queued_bytes seen */
    uint64_t queue_evictions;      /* rail connections closed because their queued bytes
                                      had not moved while the budget was used up */
    uint64_t queue_starved;        /* times a connection found the budget used up */
    /* Sessions released, one more reason (added with the fields above to
     * the sum in "Sessions released, by reason"). */
    uint64_t released_displaced;   /* a lingering session (control connection ended)
                                      released because a new session from the same
                                      address was at max_sessions_per_peer */
    /* TLS (all 0 on a plain listener). */
    uint64_t tls;                  /* 1 when the listener runs TLS */
    uint64_t tls_handshakes;       /* control connections whose TLS handshake completed */
    uint64_t tls_failures;         /* TLS handshakes that failed (bad or missing
                                      credentials, a plain client, a bad record, a
                                      timeout); also counted in handshake_failures or
                                      handshake_timeouts */
    uint64_t rejected_identity;    /* authenticated clients refused by tls_allow */
    uint64_t rejected_lockout;     /* connections refused at accept because their
                                      address failed to authenticate too often */
    uint64_t tls_gate_waits;       /* TLS handshakes that waited for a place
                                      (concurrent handshakes are bounded) */
    uint64_t tls_reloads;          /* railwire_server_reload_tls() (SIGHUP) that took */
    uint64_t tls_reload_failures;  /* reloads that failed and kept the old credentials */
    uint64_t plain_at_tls;         /* TLS listener: clients that did not speak TLS */
    uint64_t tls_at_plain;         /* plain listener: clients that spoke TLS */
    /* Registrations of the published memory at create, by the path each
     * took (docs/gpu.md; they add up to registrations): regions x domains. */
    uint64_t regs_host;            /* host memory */
    uint64_t regs_dmabuf;          /* verbs: CUDA memory exported as a DMA-BUF, or a DMA-BUF */
    uint64_t regs_peermem;         /* verbs: CUDA memory through nvidia-peermem */
    uint64_t regs_staged;          /* tcp: CUDA memory staged through pinned host buffers */
    /* tcp staging of CUDA memory (all 0 without CUDA memory). */
    uint64_t staging_bound;        /* staging_bytes in force, rounded down to whole chunks */
    uint64_t staging_chunk;        /* bytes per chunk */
    uint64_t staging_allocated;    /* pinned bytes allocated so far (never above the bound) */
    uint64_t staging_in_use;       /* bytes held by requests now (gauge) */
    uint64_t staging_waits;        /* times a request asked for a chunk and found every
                                      chunk in use (it waits and asks again) */
    /* tcp, zero_copy_reads (appended after 1.0). */
    uint64_t bytes_read_by_reference; /* of bytes_read: payload bytes handed to the sockets
                                         by reference to the published memory, not
                                         copied (0 when zero_copy_reads is off) */
};

/* The smallest struct_size accepted: the fields up to and including the RW
 * arena (railwire_server_opts of 1.0 is larger; see docs/abi.md). */
#define RAILWIRE_SERVER_OPTS_MIN_SIZE 120u

/* Fills the first `size` bytes of *o with the defaults and sets
 * o->struct_size = size; writes no byte past `size`.  Returns 0, or
 * RAILWIRE_E_INVALID (NULL o, size below RAILWIRE_SERVER_OPTS_MIN_SIZE or
 * above 4 GiB).  Call it through railwire_server_opts_init(). */
RAILWIRE_API int railwire_server_opts_init_sized(railwire_server_opts *o, size_t size);

/* Fills *o with the defaults (and o->struct_size with sizeof *o, the size of
 * the caller's header); evaluates to railwire_server_opts_init_sized()'s
 * result. */
#define railwire_server_opts_init(o) railwire_server_opts_init_sized((o), sizeof(*(o)))

/* Registers the memory (once per domain), binds the listening port and
 * starts serving in one background thread (the event loop).  Returns 0,
 * RAILWIRE_E_INVALID (bad options, an allow entry that is not a CIDR block),
 * RAILWIRE_E_LIMIT (over max_bytes), RAILWIRE_E_CONNECT (cannot listen),
 * RAILWIRE_E_NO_DEVICE (CUDA memory and no CUDA driver: the log names what
 * was looked for), RAILWIRE_E_UNSUPPORTED (a memory kind the transport
 * cannot carry, e.g. a DMA-BUF on tcp), or a transport or driver error
 * (logged, naming each attempt and what to check).  On failure nothing is
 * left behind.  On success *out is owned by the caller; release it with
 * railwire_server_destroy(). */
RAILWIRE_API int railwire_server_create(const railwire_server_opts *o, railwire_server **out);

/* The bound control port (useful with listen_port "0"). */
RAILWIRE_API unsigned railwire_server_port(const railwire_server *srv);

/* Number of live sessions: handshake complete and not released, lingering
 * ones included (connections still in the handshake are not sessions; see
 * railwire_server_stats() for them).  0 for NULL. */
RAILWIRE_API unsigned railwire_server_sessions(const railwire_server *srv);

/* The smallest size railwire_server_stats() accepts (sessions_live). */
#define RAILWIRE_SERVER_STATS_MIN_SIZE 8u

/* Copies a consistent snapshot of the server's counters into *out (owned by
 * the caller), `size` bytes of it (pass sizeof *out): the first `size`
 * bytes of the library's record, zeros beyond the fields the library knows,
 * and no byte past `size`.  Returns 0, or RAILWIRE_E_INVALID for a NULL
 * argument or a size below RAILWIRE_SERVER_STATS_MIN_SIZE.  Thread-safe;
 * never blocks on the network. */
RAILWIRE_API int railwire_server_stats(const railwire_server *srv,
                                       struct railwire_server_stats *out, size_t size);

/* Renders one railwire_server_stats() snapshot in the Prometheus text
 * exposition format (version 0.0.4; every family and label is in
 * docs/metrics.md) into buf, like snprintf: writes at most `size` bytes,
 * the terminating NUL included, and returns the length of the whole text
 * without the NUL.  A return >= size means the text was cut: call again
 * with a buffer of at least the returned length + 1 (the text may grow a
 * little between calls as counters gain digits).  buf may be NULL when
 * size is 0.  buf stays owned by the caller.  Returns RAILWIRE_E_INVALID
 * for a NULL srv (or a NULL buf with size > 0).  Thread-safe; never blocks
 * on the network or on the server's event loop. */
RAILWIRE_API ssize_t railwire_server_metrics(const railwire_server *srv, char *buf, size_t size);

/* Reads the server's TLS files again (certificate, key, CA, PSK file):
 * connections accepted afterwards use the new credentials, established
 * sessions keep running.  Returns 0, RAILWIRE_E_INVALID (NULL srv, a server
 * without TLS, or files that cannot be used: the old credentials stay and
 * the log says why), RAILWIRE_E_NOMEM.  Thread-safe (e.g. from a thread
 * that handles SIGHUP; never from the signal handler itself). */
RAILWIRE_API int railwire_server_reload_tls(railwire_server *srv);

/* Stops accepting, closes every connection and session (each released
 * session is logged and counted as released_server_stopping), deregisters
 * the memory and frees the server.  Returns once the event loop has
 * finished its current step and released every rail.  NULL is a no-op. */
RAILWIRE_API void railwire_server_destroy(railwire_server *srv);

#ifdef __cplusplus
}
#endif
#endif
