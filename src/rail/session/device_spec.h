/* SPDX-License-Identifier: MIT */
/* Filling a transport domain config from the user's per-rail choices. */
#ifndef RW_RAIL_DEVICE_SPEC_H
#define RW_RAIL_DEVICE_SPEC_H
#if defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/session/ serves src/rail/ only: transports, wire and common never include it"
#endif

#include <stddef.h>

#include "transport/transport.h"

#define RAILWIRE_MAX_DEFAULT_PLACES 64

/* The domains transport `ops` uses when the caller names none
 * (ops->default_places; 0 for a transport without it, e.g. tcp).  Fills up
 * to max entries; returns the count or an error. */
int rw_default_places(const struct rw_transport_ops *ops, struct rw_domain_place *out,
                      unsigned max);

/* Fills cfg->device/cfg->port for rail `i` of transport `ops`.
 * Placed by address (tcp): `addr` (a local IP address, NULL = any).  Placed by device (verbs): `dev` as
 * "name[:port]", or when NULL entry i (mod count) of rw_default_places(), or
 * NULL (the transport's first active port) when there is none.  cfg->device
 * points into *place, which must outlive cfg's use. */
void rw_domain_place_fill(struct rw_domain_cfg *cfg, struct rw_domain_place *place,
                          const struct rw_transport_ops *ops, const char *addr,
                          const char *dev, unsigned i);

#endif
