/* SPDX-License-Identifier: MIT */
/* The `near` option at connect (docs/gpu.md): rails placed on the NICs
 * nearest the memory they carry, read from the machine's topology
 * (gpu/topology.h; RAILWIRE_HWLOC_XML names a saved one). */
#ifndef RW_RAIL_CLIENT_NEAR_PLACE_H
#define RW_RAIL_CLIENT_NEAR_PLACE_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <railwire/railset.h>

#include "gpu/topology.h"
#include "transport/transport.h"

/* What near decided for one connect.  Owned by the caller; release with
 * rw_near_plan_free. */
struct rw_near_plan {
    struct rw_near target;        /* resolved (CUDA or NUMA), kind NONE: no placement */
    int is_auto;                  /* near was "auto" */
    char *place[RAILWIRE_MAX_RAILS];      /* rail i's device or local address */
    const char *view[RAILWIRE_MAX_RAILS]; /* the same, for an opts array */
};

/* Decides where o's rails go for o->near.  When it places them, points
 * o->devices (verbs) or o->local_addrs (tcp) at plan->view with one entry
 * per rail, so the session and every heal use them.  Keeps the usual
 * placement (logged at info with the reason) when near is unset, when
 * the caller gave an explicit list, when no topology can be read, or when
 * the topology knows none of the candidates.  host: the server (tcp: only
 * local addresses of its address family are candidates).  Returns 0, or
 * RAILWIRE_E_INVALID (a GPU or NUMA node the topology does not have,
 * logged) / RAILWIRE_E_NOMEM. */
int rw_near_plan_make(const char *host, const struct rw_transport_ops *ops,
                      railwire_railset_opts *o, struct rw_near_plan *plan);

void rw_near_plan_free(struct rw_near_plan *plan);

/* Testing and the verbs path: places n_rails rails on the candidates
 * cands ("dev[:port]" or interface names) for target t_near in topology
 * t; out[i] = the candidate of rail i.  Returns the nearest tier's size,
 * 0 when the topology knows no candidate (out untouched), or an error
 * (rw_topo_place_rails). */
int rw_near_place_names(const struct rw_topo *t, const struct rw_near *t_near,
                        const char *const *cands, size_t n, unsigned n_rails, const char **out);

#endif
