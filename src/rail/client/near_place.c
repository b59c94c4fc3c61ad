/* SPDX-License-Identifier: MIT */
/* The `near` option at connect (near_place.h). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "gpu/near_mem.h"
#include "rail/client/near_place.h"
#include "rail/session/device_spec.h"

#define MAX_CANDS 128

int rw_near_place_names(const struct rw_topo *t, const struct rw_near *t_near,
                        const char *const *cands, size_t n, unsigned n_rails, const char **out)
{
    /* NICs are named without the ":port" of a verbs place. */
    char names[MAX_CANDS][128];
    const char *nv[MAX_CANDS];
    size_t rail_cand[RAILWIRE_MAX_RAILS];
    if (n > MAX_CANDS)
        n = MAX_CANDS;
    if (n_rails > RAILWIRE_MAX_RAILS)
        n_rails = RAILWIRE_MAX_RAILS;
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "%s", cands[i]);
        char *colon = strchr(names[i], ':');
        if (colon)
            *colon = '\0';
        nv[i] = names[i];
    }
    int tier = rw_topo_place_rails(t, t_near, nv, n, n_rails, rail_cand);
    for (unsigned i = 0; tier > 0 && i < n_rails; i++)
        out[i] = cands[rail_cand[i]];
    return tier;
}

/* The server's address family (AF_UNSPEC when it cannot be resolved). */
static int host_family(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0)
        return AF_UNSPEC;
    int fam = ai->ai_family;
    freeaddrinfo(ai);
    return fam;
}

/* tcp candidates: the interfaces the topology knows that have an address
 * of family fam (link-local IPv6 left out: it needs a scope).  Fills
 * ifname[i] / addr[i]; returns the count. */
static size_t tcp_candidates(const struct rw_topo *t, int fam, char ifname[][IF_NAMESIZE],
                             char addr[][INET6_ADDRSTRLEN], size_t max, size_t *n_if)
{
    struct ifaddrs *ifs, *a;
    size_t n = 0;
    *n_if = 0;
    if (getifaddrs(&ifs) != 0)
        return 0;
    for (a = ifs; a && n < max; a = a->ifa_next) {
        if (!a->ifa_addr || !(a->ifa_flags & IFF_UP))
            continue;
        int f = a->ifa_addr->sa_family;
        if ((f != AF_INET && f != AF_INET6) || (fam != AF_UNSPEC && f != fam))
            continue;
        (*n_if)++;
        if (!rw_topo_nic(t, a->ifa_name))
            continue;
        const void *src = f == AF_INET ? (const void *)&((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr
                                       : (const void *)&((struct sockaddr_in6 *)(void *)a->ifa_addr)->sin6_addr;
        if (f == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)src))
            continue;
        if (!inet_ntop(f, src, addr[n], INET6_ADDRSTRLEN))
            continue;
        snprintf(ifname[n], IF_NAMESIZE, "%s", a->ifa_name);
        n++;
    }
    freeifaddrs(ifs);
    return n;
}

/* Places the rails of a tcp railset.  Returns 0 (plan->place set, or kept
 * the usual placement: logged) or an error. */
static int place_tcp(const char *host, const struct rw_topo *t, unsigned n_rails,
                     struct rw_near_plan *plan, const char *what)
{
    struct tables {
        char ifname[MAX_CANDS][IF_NAMESIZE];
        char addr[MAX_CANDS][INET6_ADDRSTRLEN];
    } *tb = calloc(1, sizeof(*tb));
    const char *cands[MAX_CANDS], *out[RAILWIRE_MAX_RAILS];
    size_t n_if;
    if (!tb)
        return RAILWIRE_E_NOMEM;
    char(*ifname)[IF_NAMESIZE] = tb->ifname;
    char(*addr)[INET6_ADDRSTRLEN] = tb->addr;
    size_t n = tcp_candidates(t, host_family(host), ifname, addr, MAX_CANDS, &n_if);
    for (size_t i = 0; i < n; i++)
        cands[i] = ifname[i];
    int tier = n ? rw_near_place_names(t, &plan->target, cands, n, n_rails, out) : 0;
    if (tier == 0)
        rw_info("connect: near=%s: the topology (%s) knows none of this host's %zu "
                "interface address(es) of the server's family; tcp rails keep the usual local "
                "address", what, t->source, n_if);
    for (unsigned i = 0; tier > 0 && i < n_rails; i++) {
        size_t k = 0;
        while (k < n && cands[k] != out[i])
            k++;
        plan->place[i] = strdup(addr[k]);
        rw_info("connect: near=%s: tcp rail %u leaves by %s (%s, nearest of %d)", what, i,
                addr[k], ifname[k], tier);
    }
    free(tb);
    return tier < 0 ? tier : 0;
}

/* Places the rails of a verbs railset on the default devices. */
static int place_verbs(const struct rw_transport_ops *ops, const struct rw_topo *t,
                       unsigned n_rails, struct rw_near_plan *plan, const char *what)
{
    struct rw_domain_place defaults[RAILWIRE_MAX_DEFAULT_PLACES];
    const char *cands[RAILWIRE_MAX_DEFAULT_PLACES], *out[RAILWIRE_MAX_RAILS];
    int n = rw_default_places(ops, defaults, RAILWIRE_MAX_DEFAULT_PLACES);
    for (int i = 0; i < n; i++)
        cands[i] = defaults[i].device;
    int tier = n > 0 ? rw_near_place_names(t, &plan->target, cands, (size_t)n, n_rails, out) : 0;
    if (tier == 0)
        rw_info("connect: near=%s: the topology (%s) knows none of the %d RDMA device(s) "
                "here; rails keep the usual devices", what, t->source, n > 0 ? n : 0);
    for (unsigned i = 0; tier > 0 && i < n_rails; i++) {
        plan->place[i] = strdup(out[i]);
        rw_info("connect: near=%s: rail %u on %s (nearest of %d)", what, i, out[i], tier);
    }
    return tier < 0 ? tier : 0;
}

int rw_near_plan_make(const char *host, const struct rw_transport_ops *ops,
                      railwire_railset_opts *o, struct rw_near_plan *plan)
{
    struct rw_near near;
    char what[48];
    memset(plan, 0, sizeof(*plan));
    if (rw_near_parse(o->near, &near) < 0)
        return RAILWIRE_E_INVALID;
    if (near.kind == RW_NEAR_NONE)
        return 0;
    snprintf(what, sizeof(what), "%s", o->near);
    if (ops->places_by_device ? o->n_devices > 0 : o->n_local_addrs > 0) {
        rw_info("connect: near=%s ignored: the explicit %s list wins", what,
                ops->places_by_device ? "devices" : "local_addrs");
        return 0;
    }
    plan->target = near;
    if (near.kind == RW_NEAR_AUTO) {
        const char *why;
        plan->is_auto = 1;
        rw_near_auto_now(&plan->target, &why);
        char b[32];
        rw_info("connect: near=auto is %s, from %s", rw_near_str(&plan->target, b, sizeof(b)),
                why);
        if (plan->target.kind == RW_NEAR_NONE)
            return 0;
    }
    struct rw_topo t;
    if (rw_topo_load(NULL, &t) < 0) {
        rw_warn("connect: near=%s: the machine's topology could not be read (see above); "
                "rails keep the usual placement", what);
        plan->target.kind = RW_NEAR_NONE;
        return 0;
    }
    int rc = ops->places_by_device ? place_verbs(ops, &t, o->n_rails, plan, what)
                                   : place_tcp(host, &t, o->n_rails, plan, what);
    rw_topo_free(&t);
    if (rc < 0) {
        rw_near_plan_free(plan);
        return rc;
    }
    if (!plan->place[0])
        return 0;
    for (unsigned i = 0; i < o->n_rails; i++) {
        if (!plan->place[i]) {
            rw_near_plan_free(plan);
            return RAILWIRE_E_NOMEM;
        }
        plan->view[i] = plan->place[i];
    }
    if (ops->places_by_device) {
        o->devices = plan->view;
        o->n_devices = o->n_rails;
    } else {
        o->local_addrs = plan->view;
        o->n_local_addrs = o->n_rails;
    }
    return 0;
}

void rw_near_plan_free(struct rw_near_plan *plan)
{
    for (unsigned i = 0; i < RAILWIRE_MAX_RAILS; i++) {
        free(plan->place[i]);
        plan->place[i] = NULL;
        plan->view[i] = NULL;
    }
}
