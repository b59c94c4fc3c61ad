/* SPDX-License-Identifier: MIT */
/* Opening one client session: the control connection, the handshake and
 * the session's rails (domain + connected ep each).  railwire_railset_connect
 * opens the first session of a railset with it, and healing (heal_open.c)
 * every later one. */
#ifndef RW_RAIL_SESSION_OPEN_H
#define RW_RAIL_SESSION_OPEN_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <stdint.h>

#include <railwire/railset.h>

#include "transport/transport.h"
#include "wire/wire.h"

struct rw_tls_creds;

/* What to open.  Strings are borrowed for the call. */
struct rw_session_spec {
    const struct rw_transport_ops *ops;
    enum railwire_dialect dialect;
    const char *host, *port;
    unsigned n_rails;                     /* 1..RAILWIRE_MAX_RAILS */
    const char *local_addr[RAILWIRE_MAX_RAILS]; /* tcp: rail i's local address, NULL = any */
    const char *device[RAILWIRE_MAX_RAILS];     /* verbs: rail i's "dev[:port]", NULL = default */
    /* NULL: every rail must come up or the session fails.  Else the
     * session succeeds when at least one rail with need[i] != 0 comes up; a
     * rail that fails to connect is destroyed and left NULL in the result
     * (its server side sees a rail that never arrived). */
    const uint8_t *need;
    unsigned expect_layers;               /* RO: fail unless the server publishes this
                                             many layers per rail; 0 = any */
    int gid_index;
    unsigned mtu;
    unsigned queue_depth;                 /* 0 = RW_DEFAULT_QUEUE_DEPTH */
    int connect_timeout_ms;
    int io_timeout_ms;
    int busy_poll_us;                     /* the rails' receive spin (rw_ep_cfg.busy_poll_us) */
    /* TLS client credentials (tls/tls_creds.h), borrowed; NULL = plain.
     * The control connection and every tcp rail run TLS 1.3 with them; the
     * server's certificate must carry the creds' server name or `host`. */
    struct rw_tls_creds *tls;
};

/* An opened session.  Everything is owned by whoever holds it; release
 * with rw_session_close(). */
struct rw_session_out {
    int fd;                               /* the control connection, -1 if none */
    unsigned n_rails;
    unsigned n_remote;                    /* RO: layers per rail; RW: 1 */
    struct rw_domain *dom[RAILWIRE_MAX_RAILS];
    struct rw_ep *ep[RAILWIRE_MAX_RAILS]; /* connected (NULL: a rail not needed that failed) */
    struct rw_mr_desc *remote[RAILWIRE_MAX_RAILS]; /* n_remote entries each, malloc'ed */
    struct rw_qp_id peer[RAILWIRE_MAX_RAILS];      /* the server's identity of rail i */
};

/* Connects to sp->host:sp->port, runs the handshake for sp->n_rails rails
 * and brings the rails up (each on its own local domain, all in parallel).
 * Returns 0 and fills *out, or the error (logged) with nothing left open:
 * RAILWIRE_E_PEER_REJECTED, REFUSED, TRUNCATED, TIMEOUT, CONNECT, PROTOCOL,
 * a wire class or a transport error. */
int rw_session_open(const struct rw_session_spec *sp, struct rw_session_out *out);

/* Destroys the eps, closes the domains and the control connection, frees
 * the remote arrays and zeroes *out (fd = -1).  Safe on a zeroed out. */
void rw_session_close(const struct rw_transport_ops *ops, struct rw_session_out *out);

#endif
