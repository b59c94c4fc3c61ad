/* SPDX-License-Identifier: MIT */
/* Distances between NICs and GPUs, and NICs ordered nearest first (see
 * topology.h).  Pure functions of an rw_topo: no hwloc needed. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <railwire/error.h>

#include "common/log.h"
#include "gpu/topology.h"

const char *rw_topo_rel_name(enum rw_topo_rel rel)
{
    switch (rel) {
    case RW_TOPO_SAME_SWITCH: return "same-switch";
    case RW_TOPO_SAME_ROOT: return "same-root";
    case RW_TOPO_SAME_NUMA: return "same-numa";
    case RW_TOPO_SAME_SOCKET: return "same-socket";
    default: return "cross-socket";
    }
}

static int is_host_bridge(const char *id)
{
    return !strncmp(id, "host", 4);
}

enum rw_topo_rel rw_topo_relation(const struct rw_topo_dev *a, const struct rw_topo_dev *b,
                                  unsigned *hops)
{
    /* Paths run device-first: compare them from the root end. */
    size_t common = 0;
    while (common < a->depth && common < b->depth &&
           !strcmp(a->path[a->depth - 1 - common], b->path[b->depth - 1 - common]))
        common++;
    enum rw_topo_rel rel;
    unsigned h = (unsigned)(a->depth - common + b->depth - common);
    if (common > 0) {
        /* The lowest shared element: a PCI bridge (switch or root port) or
         * only the host bridge. */
        const char *low = a->path[a->depth - common];
        rel = is_host_bridge(low) ? RW_TOPO_SAME_ROOT : RW_TOPO_SAME_SWITCH;
    } else {
        h += 2;
        if (a->numa >= 0 && a->numa == b->numa)
            rel = RW_TOPO_SAME_NUMA;
        else if (a->package >= 0 && a->package == b->package)
            rel = RW_TOPO_SAME_SOCKET;
        else
            rel = RW_TOPO_CROSS_SOCKET;
    }
    if (hops)
        *hops = h;
    return rel;
}

unsigned rw_topo_distance(const struct rw_topo_dev *a, const struct rw_topo_dev *b)
{
    unsigned hops;
    enum rw_topo_rel rel = rw_topo_relation(a, b, &hops);
    return 100u * (unsigned)rel + hops;
}

static int parse_index(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0 || v > 4095)
        return -1;
    *out = (int)v;
    return 0;
}

int rw_near_parse(const char *s, struct rw_near *out)
{
    memset(out, 0, sizeof(*out));
    if (!s || !*s)
        return 0;
    if (!strcmp(s, "auto")) {
        out->kind = RW_NEAR_AUTO;
        return 0;
    }
    if (!strncmp(s, "cuda:", 5) && parse_index(s + 5, &out->index) == 0) {
        out->kind = RW_NEAR_CUDA;
        return 0;
    }
    if (!strncmp(s, "numa:", 5) && parse_index(s + 5, &out->index) == 0) {
        out->kind = RW_NEAR_NUMA;
        return 0;
    }
    rw_err("near: '%s' is not \"cuda:N\", \"numa:N\" or \"auto\"", s);
    return RAILWIRE_E_INVALID;
}

const struct rw_topo_dev *rw_topo_gpu(const struct rw_topo *t, int cuda, const char *busid)
{
    for (size_t i = 0; i < t->n_gpus; i++) {
        const struct rw_topo_dev *g = &t->gpus[i];
        if (busid && *busid ? !strcasecmp(g->busid, busid) : g->cuda == cuda)
            return g;
    }
    return NULL;
}

const struct rw_topo_dev *rw_topo_nic(const struct rw_topo *t, const char *name)
{
    for (size_t i = 0; name && *name && i < t->n_nics; i++)
        if (!strcmp(t->nics[i].rdma, name) || !strcmp(t->nics[i].netdev, name))
            return &t->nics[i];
    return NULL;
}

/* A NIC's closeness to NUMA node `node`: 0 same node, 1 same socket, 2 other. */
static unsigned numa_distance(const struct rw_topo *t, const struct rw_topo_dev *nic, int node)
{
    if (nic->numa == node)
        return 0;
    int pkg = node >= 0 && (size_t)node < t->n_numa ? t->numa_package[node] : -1;
    return pkg >= 0 && nic->package == pkg ? 1 : 2;
}

struct ranked {
    size_t idx;
    unsigned key;
};

static int by_key(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Resolves AUTO and checks the target exists.  Returns 0 with *target
 * (kind NONE: keep the order) or RAILWIRE_E_INVALID (logged). */
static int resolve_near(const struct rw_topo *t, const struct rw_near *near,
                        const struct rw_near *first_mem, struct rw_near *target,
                        const struct rw_topo_dev **gpu)
{
    *target = near ? *near : (struct rw_near){0};
    *gpu = NULL;
    if (target->kind == RW_NEAR_AUTO) {
        if (!first_mem || (first_mem->kind != RW_NEAR_CUDA && first_mem->kind != RW_NEAR_NUMA)) {
            rw_info("near=auto: no registered memory says where it lives yet; NICs keep "
                    "their order");
            target->kind = RW_NEAR_NONE;
            return 0;
        }
        *target = *first_mem;
    }
    if (target->kind == RW_NEAR_CUDA) {
        *gpu = rw_topo_gpu(t, target->index, target->busid);
        if (!*gpu) {
            rw_err("near: GPU cuda:%d%s%s is not in the topology (%s), which has %zu GPU%s: "
                   "check the ordinal, CUDA_VISIBLE_DEVICES, or " RW_TOPO_XML_ENV,
                   target->index, target->busid[0] ? " at " : "", target->busid, t->source,
                   t->n_gpus, t->n_gpus == 1 ? "" : "s");
            return RAILWIRE_E_INVALID;
        }
    } else if (target->kind == RW_NEAR_NUMA && (size_t)target->index >= t->n_numa) {
        rw_err("near: NUMA node %d is not in the topology (%s), which has %zu node%s",
               target->index, t->source, t->n_numa, t->n_numa == 1 ? "" : "s");
        return RAILWIRE_E_INVALID;
    }
    return 0;
}

int rw_topo_rank_nics(const struct rw_topo *t, const struct rw_near *near,
                      const struct rw_near *first_mem, const char *const *cands, size_t n,
                      size_t *order, unsigned *keys)
{
    struct rw_near target;
    const struct rw_topo_dev *gpu;
    int rc = resolve_near(t, near, first_mem, &target, &gpu);
    if (rc)
        return rc;
    struct ranked *r = calloc(n ? n : 1, sizeof(*r));
    if (!r)
        return RAILWIRE_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct rw_topo_dev *nic = rw_topo_nic(t, cands[i]);
        r[i].idx = i;
        if (!nic)
            r[i].key = UINT32_MAX; /* unknown to the topology: last */
        else if (target.kind == RW_NEAR_CUDA)
            r[i].key = rw_topo_distance(nic, gpu);
        else if (target.kind == RW_NEAR_NUMA)
            r[i].key = numa_distance(t, nic, target.index);
        else
            r[i].key = 0;
    }
    qsort(r, n, sizeof(*r), by_key);
    for (size_t i = 0; i < n; i++) {
        order[i] = r[i].idx;
        if (keys)
            keys[i] = r[i].key;
    }
    free(r);
    return 0;
}

int rw_topo_order_nics(const struct rw_topo *t, const struct rw_near *near,
                       const struct rw_near *first_mem, const char *const *cands, size_t n,
                       size_t *order)
{
    return rw_topo_rank_nics(t, near, first_mem, cands, n, order, NULL);
}

int rw_topo_place_rails(const struct rw_topo *t, const struct rw_near *near,
                        const char *const *cands, size_t n, unsigned n_rails, size_t *rail_cand)
{
    size_t *order = calloc(n ? n : 1, sizeof(*order));
    unsigned *keys = calloc(n ? n : 1, sizeof(*keys));
    int rc = order && keys ? 0 : RAILWIRE_E_NOMEM;
    if (rc == 0)
        rc = rw_topo_rank_nics(t, near, NULL, cands, n, order, keys);
    if (rc == 0) {
        /* The nearest tier: every candidate as near as the nearest one. */
        size_t tier = 0;
        while (n > 0 && keys[0] != UINT32_MAX && tier < n && keys[tier] == keys[0])
            tier++;
        for (unsigned i = 0; tier && i < n_rails; i++)
            rail_cand[i] = order[i % tier];
        rc = (int)tier;
    }
    free(order);
    free(keys);
    return rc;
}

int rw_topo_host_numa(const void *addr)
{
#ifdef SYS_move_pages
    long pg = sysconf(_SC_PAGESIZE);
    void *page = (void *)((uintptr_t)addr & ~(uintptr_t)(pg > 0 ? pg - 1 : 4095));
    int status = -1;
    /* nodes == NULL: only ask where the page is. */
    if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0) == 0 && status >= 0)
        return status;
#else
    (void)addr;
#endif
    return -1;
}
