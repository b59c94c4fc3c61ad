/* SPDX-License-Identifier: MIT */
/* The server's TLS state, shared by server_tls.c (credentials, lockout, the
 * TLS handshake) and server_tls_conn.c (a connection's TLS teardown). */
#ifndef RW_RAIL_SERVER_TLS_STATE_H
#define RW_RAIL_SERVER_TLS_STATE_H
#if defined(RW_LAYER_RAIL_CLIENT) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/server/ is private to the server (docs/architecture.md)"
#endif

#if RAILWIRE_HAVE_TLS
#include <stdint.h>

#include "rail/server/server_internal.h"
#include "tls/tls_allow.h"
#include "tls/tls_creds.h"
#include "tls/tls_gate.h"

#define RW_SRV_LOCKOUT_PEERS 256 /* addresses remembered (the stalest is reused) */

struct rw_srv_lockout_entry {
    struct rw_ip ip;
    unsigned fails;
    int64_t last_ms, until_ms;
};

/* railwire_server's `tls`: owned by the server (rw_srv_tls_init/_fini). */
struct rw_srv_tls {
    struct rw_tls_slot slot;
    int slot_live;
    struct rw_tls_allow allow;
    struct rw_tls_gate gate;
    int gate_live;
    unsigned per_peer_max; /* places one address may hold */
    struct rw_srv_lockout_entry lock[RW_SRV_LOCKOUT_PEERS]; /* loop thread only */
};
#endif

#endif
