/* SPDX-License-Identifier: MIT */
/* Filling a transport domain config from the user's per-rail choices. */
#ifndef RW_RAIL_DEVICE_SPEC_H
#define RW_RAIL_DEVICE_SPEC_H

#include <stddef.h>

#include "transport/transport.h"

/* Where one domain opens: the strings a rw_domain_cfg points into. */
struct rw_domain_place {
    char device[128];
};

#define RAILWIRE_MAX_DEFAULT_PLACES 64

/* The domains a transport uses when the caller names none: verbs, the
 * items of RAILWIRE_DEVICES or else every active port, as "dev[:port]";
 * tcp: none (0).  Fills up to max entries; returns the count or an error. */
int rw_default_places(const char *tname, struct rw_domain_place *out, unsigned max);

/* Fills cfg->device/cfg->port for rail `i` of a transport named `tname`.
 * tcp: `addr` (a local IP address, NULL = any).  verbs: `dev` as
 * "name[:port]", or when NULL entry i (mod count) of rw_default_places(), or
 * NULL (the transport's first active port) when there is none.  cfg->device
 * points into *place, which must outlive cfg's use. */
void rw_domain_place_fill(struct rw_domain_cfg *cfg, struct rw_domain_place *place,
                          const char *tname, const char *addr, const char *dev, unsigned i);

#endif
