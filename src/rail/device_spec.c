/* SPDX-License-Identifier: MIT */
/* Per-rail domain placement: tcp local addresses, verbs "dev[:port]". */
#include "rail/device_spec.h"

#if RAILWIRE_HAVE_VERBS
#include "verbs/verbs.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rw_default_places(const char *tname, struct rw_domain_place *out, unsigned max)
{
#if RAILWIRE_HAVE_VERBS
    if (strcmp(tname, "verbs") == 0) {
        struct rw_devspec list[RW_VERBS_MAX_PORTS];
        int n = rw_verbs_port_list(list, RW_VERBS_MAX_PORTS);
        if (n <= 0)
            return n;
        if ((unsigned)n > max)
            n = (int)max;
        for (int i = 0; i < n; i++) {
            if (list[i].port)
                snprintf(out[i].device, sizeof(out[i].device), "%.63s:%u", list[i].dev,
                         list[i].port);
            else
                snprintf(out[i].device, sizeof(out[i].device), "%.63s", list[i].dev);
        }
        return n;
    }
#else
    (void)out;
    (void)max;
#endif
    (void)tname;
    return 0;
}

void rw_domain_place_fill(struct rw_domain_cfg *cfg, struct rw_domain_place *place,
                          const char *tname, const char *addr, const char *dev, unsigned i)
{
    cfg->device = NULL;
    cfg->port = 0;
    place->device[0] = '\0';
    if (strcmp(tname, "verbs") != 0) {
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
        int n = rw_default_places(tname, defaults, RAILWIRE_MAX_DEFAULT_PLACES);
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
