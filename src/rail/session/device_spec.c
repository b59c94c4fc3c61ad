/* SPDX-License-Identifier: MIT */
/* Per-rail domain placement: by local address (tcp) or by "dev[:port]"
 * (verbs), as the transport's ops say. */
#include "rail/session/device_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rw_default_places(const struct rw_transport_ops *ops, struct rw_domain_place *out,
                      unsigned max)
{
    if (!ops || !ops->default_places)
        return 0;
    return ops->default_places(out, max);
}

void rw_domain_place_fill(struct rw_domain_cfg *cfg, struct rw_domain_place *place,
                          const struct rw_transport_ops *ops, const char *addr,
                          const char *dev, unsigned i)
{
    cfg->device = NULL;
    cfg->port = 0;
    place->device[0] = '\0';
    if (!ops->places_by_device) {
        if (addr && *addr) {
            snprintf(place->device, sizeof(place->device), "%s", addr);
            cfg->device = place->device;
        }
        return;
    }
    if (dev && *dev) {
        snprintf(place->device, sizeof(place->device), "%s", dev);
    } else {
        struct rw_domain_place defaults[RAILWIRE_MAX_DEFAULT_PLACES];
        int n = rw_default_places(ops, defaults, RAILWIRE_MAX_DEFAULT_PLACES);
        if (n <= 0)
            return; /* the transport picks (and explains what is missing) */
        memcpy(place->device, defaults[i % (unsigned)n].device, sizeof(place->device));
    }
    char *colon = strrchr(place->device, ':');
    if (colon) {
        *colon = '\0';
        cfg->port = (unsigned)strtoul(colon + 1, NULL, 10);
    }
    cfg->device = place->device;
}
