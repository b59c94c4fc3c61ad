/* SPDX-License-Identifier: MIT */
/* The verbs transport's API for the other layers (rail/, tools/): which
 * ports to use, the device inventory behind `railwire devices`, and parallel
 * registration.  The ops table itself is rw_verbs_ops (transport/transport.h).
 * Only built when RAILWIRE_HAVE_VERBS. */
#ifndef RW_VERBS_VERBS_H
#define RW_VERBS_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "verbs/gid_rank.h"
#include "verbs/params.h"

/* The ports railwire uses by default, in rail order: the items of
 * RAILWIRE_DEVICES when it is set (as given, port 0 = the device's first
 * active port), else every ACTIVE Ethernet-link-layer port of every device in
 * libibverbs' order.  Fills up to `max` entries of out.  Returns the count
 * (0 = none), or RAILWIRE_E_INVALID for a malformed RAILWIRE_DEVICES (logged). */
int rw_verbs_port_list(struct rw_devspec *out, size_t max);

/* rw_verbs_ops.default_places: rw_verbs_port_list() as "dev[:port]" strings.
 * Fills up to max entries; returns the count or an error. */
int rw_verbs_default_places(struct rw_domain_place *out, unsigned max);

/* One GID of a port, for display. */
struct rw_vgid_info {
    struct rw_gid_entry e;
    enum rw_gid_class cls;
    char netdev[32];            /* "" if none */
};

/* One port, as `railwire devices` shows it. */
struct rw_vport_info {
    unsigned port;
    const char *state;          /* "ACTIVE", "DOWN", ... (static) */
    int active;
    const char *link_layer;     /* "Ethernet", "InfiniBand", ... (static) */
    double gbps;                /* from active_speed x active_width */
    unsigned speed_code, width_code;
    unsigned active_mtu, max_mtu; /* bytes */
    unsigned path_mtu;          /* bytes railwire would use (0 if the cap is invalid) */
    unsigned gid_tbl_len;
    size_t n_gids;              /* non-empty entries only */
    struct rw_vgid_info *gids;
    int choice_rc;              /* 0, or why no GID could be chosen */
    struct rw_gid_choice choice;
};

struct rw_vdev_info {
    char name[RW_VERBS_DEV_NAME_MAX];
    char node_guid[24];         /* "xxxx:xxxx:xxxx:xxxx" */
    unsigned n_ports;
    struct rw_vport_info *ports;
    int error;                  /* non-zero: the device could not be opened/queried */
};

/* Enumerates every device, port and GID, with the GID choice under the
 * current environment (RAILWIRE_GID_INDEX, RAILWIRE_MTU) and `gid_index`
 * (>= 0 forces, as the API option).  *out is malloc'ed (NULL when *n is 0);
 * release with rw_verbs_inventory_free().  Returns 0 (also with no devices),
 * RAILWIRE_E_NO_DEVICE when the RDMA stack is absent, or
 * RAILWIRE_E_NOMEM / RAILWIRE_E_INVALID. */
int rw_verbs_inventory(int gid_index, struct rw_vdev_info **out, size_t *n);
void rw_verbs_inventory_free(struct rw_vdev_info *devs, size_t n);

/* Registers [addr, addr+len) with `access` on n verbs domains at once: one
 * thread per distinct device when len >= RW_VERBS_PARALLEL_REG_MIN, else in
 * turn; a device already holding the region reuses it.  out[i] receives the
 * registration for doms[i] (release each with mr_dereg).  Returns 0, or the
 * first error with nothing left registered. */
#define RW_VERBS_PARALLEL_REG_MIN (64u << 20)
int rw_verbs_mr_reg_multi(struct rw_domain *const *doms, size_t n, void *addr, size_t len,
                          int access, struct rw_mr **out);

#endif
