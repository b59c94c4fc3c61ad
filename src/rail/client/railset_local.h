/* SPDX-License-Identifier: MIT */
/* A railset over rails that are already connected: railwire_railset_connect
 * uses it after the handshake, and the unit tests and the null bench over
 * their own transports, with no network (through railset_testing.h). */
#ifndef RW_RAIL_CLIENT_RAILSET_LOCAL_H
#define RW_RAIL_CLIENT_RAILSET_LOCAL_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <railwire/railset.h>

#include "transport/transport.h"

/* One rail handed to rw_railset_create_local(). */
struct rw_rail_init {
    struct rw_domain *dom;          /* ownership passes to the railset on success */
    struct rw_ep *ep;               /* connected; ownership passes on success */
    const struct rw_mr_desc *remote; /* copied */
    unsigned n_remote;              /* RO: layer count (same on every rail); RW: 1 */
    struct rw_qp_id peer;           /* the server's identity of the rail (zero: unknown) */
};

/* Builds a railset over `n` connected rails of transport `ops`, with the
 * options of `o` (slice size, depth, op timeout, dialect, all-down bound,
 * slice tries; healing itself is turned on by the caller with
 * rw_heal_enable).  The rails belong to session 0, which has no control
 * connection until the caller gives it one.  Returns 0 and *out (caller owns; railwire_railset_close), or
 * RAILWIRE_E_INVALID / RAILWIRE_E_NOMEM, in which case nothing of `rails`
 * was taken over. */
int rw_railset_create_local(const struct rw_transport_ops *ops, const railwire_railset_opts *o,
                            const struct rw_rail_init *rails, unsigned n, railwire_railset **out);

#endif
