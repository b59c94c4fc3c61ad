/* SPDX-License-Identifier: MIT */
/* The server side: publishes read-only layers (RO dialect) or one
 * read-write arena (RW dialect) on one listening port, and serves many
 * clients at once.  A client over a cap is rejected by closing its control
 * connection (the reason goes to the log).  When a client's control
 * connection ends, its session lingers: its rails are released once they
 * are dead as well (tcp: every rail connection closed or failed) or when
 * the linger runs out (verbs has no other liveness signal, so there the
 * linger is the bound); the log says why each session was released. */
#ifndef RAILWIRE_SERVER_H
#define RAILWIRE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <railwire/error.h>
#include <railwire/export.h>
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
 * describe, which must outlive the server. */
typedef struct railwire_server_opts {
    enum railwire_dialect dialect;     /* default RO */
    enum railwire_transport transport; /* default AUTO */
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
} railwire_server_opts;

/* Fills *o with the defaults. */
RAILWIRE_API void railwire_server_opts_init(railwire_server_opts *o);

/* Registers the memory (once per domain), binds the listening port and
 * starts serving in background threads: one accept thread, one thread per
 * client session.  Returns 0, RAILWIRE_E_INVALID (bad options),
 * RAILWIRE_E_LIMIT (over max_bytes), RAILWIRE_E_CONNECT (cannot listen), or a
 * transport error.  On success *out is owned by the caller; release it with
 * railwire_server_destroy(). */
RAILWIRE_API int railwire_server_create(const railwire_server_opts *o, railwire_server **out);

/* The bound control port (useful with listen_port "0"). */
RAILWIRE_API unsigned railwire_server_port(const railwire_server *srv);

/* Number of live sessions. */
RAILWIRE_API unsigned railwire_server_sessions(const railwire_server *srv);

/* Stops accepting, closes every session, deregisters the memory and frees
 * the server.  Returns within about the accept poll interval plus any rail
 * connect in progress (bounded by io_timeout_ms).  NULL is a no-op. */
RAILWIRE_API void railwire_server_destroy(railwire_server *srv);

#ifdef __cplusplus
}
#endif
#endif
