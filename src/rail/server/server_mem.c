/* SPDX-License-Identifier: MIT */
/* The memory a server publishes: RO layers or the RW arena, given as host
 * regions (layers, arena) or as memory descriptors (layer_mems, arena_mem:
 * host, CUDA or DMA-BUF memory), checked once at create and registered on
 * every domain through the transport (docs/gpu.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"
#include "gpu/staging.h"
#include "rail/server/server_internal.h"

#define MIN_STAGING (16u << 10)

static const char *what(const struct railwire_server *srv)
{
    return srv->dialect == RAILWIRE_DIALECT_RO ? "layer" : "arena";
}

/* Counts one registration of the published memory: bytes, and ns it took
 * (the stats lock: read from any thread). */
static void count_registration(struct railwire_server *srv, uint64_t bytes, uint64_t ns)
{
    pthread_mutex_lock(&srv->stats_lock);
    srv->st.registered_bytes += bytes;
    srv->st.registrations++;
    srv->st.registration_ns += ns;
    if (ns > srv->st.registration_max_ns)
        srv->st.registration_max_ns = ns;
    pthread_mutex_unlock(&srv->stats_lock);
}

/* The host regions of the options (layers / arena) into srv->mems. */
static int take_regions(struct railwire_server *srv, const railwire_server_opts *o)
{
    if (srv->dialect == RAILWIRE_DIALECT_RO) {
        if (!o->layers || o->n_layers == 0 || o->n_layers > RW_MAX_LAYERS) {
            rw_err("server: the RO dialect needs 1..%d layers (got %u)", RW_MAX_LAYERS,
                   o->n_layers);
            return RAILWIRE_E_INVALID;
        }
        for (unsigned i = 0; i < o->n_layers; i++)
            if (!o->layers[i].addr || o->layers[i].len == 0) {
                rw_err("server: layer %u is empty", i);
                return RAILWIRE_E_INVALID;
            }
        srv->n_mems = o->n_layers;
    } else {
        if (!o->arena.addr || o->arena.len == 0) {
            rw_err("server: the RW dialect needs an arena");
            return RAILWIRE_E_INVALID;
        }
        srv->n_mems = 1;
    }
    srv->mems = calloc(srv->n_mems, sizeof(*srv->mems));
    if (!srv->mems)
        return RAILWIRE_E_NOMEM;
    for (unsigned i = 0; i < srv->n_mems; i++) {
        const railwire_region *r = srv->dialect == RAILWIRE_DIALECT_RO ? &o->layers[i] : &o->arena;
        rw_mem_host(&srv->mems[i], r->addr, r->len);
    }
    return 0;
}

/* The descriptors of the options (layer_mems / arena_mem) into srv->mems,
 * each checked by rw_mem_normalise. */
static int take_descriptors(struct railwire_server *srv, const railwire_server_opts *o)
{
    const railwire_mem *d = srv->dialect == RAILWIRE_DIALECT_RO ? o->layer_mems : o->arena_mem;
    unsigned n = srv->dialect == RAILWIRE_DIALECT_RO ? o->n_layer_mems : 1;
    const char *field = srv->dialect == RAILWIRE_DIALECT_RO ? "layer_mems" : "arena_mem";

    if (srv->dialect == RAILWIRE_DIALECT_RO && (!d || n == 0 || n > RW_MAX_LAYERS)) {
        rw_err("server: layer_mems needs 1..%d descriptors (got %u%s)", RW_MAX_LAYERS, n,
               d ? "" : ", and layer_mems is NULL");
        return RAILWIRE_E_INVALID;
    }
    srv->mems = calloc(n, sizeof(*srv->mems));
    if (!srv->mems)
        return RAILWIRE_E_NOMEM;
    srv->n_mems = n;
    for (unsigned i = 0; i < n; i++) {
        int rc = rw_mem_normalise(&d[i], &srv->mems[i]);
        if (rc < 0) {
            char idx[16] = "";
            if (srv->dialect == RAILWIRE_DIALECT_RO)
                snprintf(idx, sizeof(idx), "[%u]", i);
            rw_err("server: %s%s cannot be published (%s): the message above says which "
                   "field of the descriptor is wrong", field, idx, railwire_strerror(rc));
            return rc;
        }
    }
    return 0;
}

static size_t staging_chunk(size_t bound)
{
    size_t chunk = bound / 4;
    if (chunk > RW_STAGE_DEFAULT_CHUNK)
        chunk = RW_STAGE_DEFAULT_CHUNK;
    return chunk & ~(size_t)4095;
}

/* The staging pool, when any published memory is CUDA. */
static int make_pool(struct railwire_server *srv, const railwire_server_opts *o)
{
    int device = -1;
    for (unsigned i = 0; i < srv->n_mems && device < 0; i++)
        if (srv->mems[i].kind == RAILWIRE_MEM_CUDA)
            device = srv->mems[i].device;
    if (device < 0)
        return 0;
    size_t bound = o->staging_bytes ? o->staging_bytes : RW_STAGE_DEFAULT_BYTES;
    int rc = rw_stage_pool_create(device, bound, staging_chunk(bound), &srv->stage_pool);
    if (rc < 0) {
        rw_err("server: the staging pool of CUDA memory (%zu bytes) could not be created (%s)",
               bound, railwire_strerror(rc));
        return rc;
    }
    for (unsigned i = 0; i < srv->n_mems; i++)
        if (srv->mems[i].kind == RAILWIRE_MEM_CUDA)
            srv->mems[i].stage_pool = srv->stage_pool;
    return 0;
}

int rw_srv_mem_prepare(struct railwire_server *srv, const railwire_server_opts *o)
{
    int ro = srv->dialect == RAILWIRE_DIALECT_RO;
    int descs = ro ? (o->layer_mems || o->n_layer_mems) : o->arena_mem != NULL;
    int regions = ro ? (o->layers || o->n_layers) : (o->arena.addr || o->arena.len);
    int rc;

    if (o->reserved2) {
        rw_err("server: railwire_server_opts.reserved2 is %u: leave it 0", o->reserved2);
        return RAILWIRE_E_INVALID;
    }
    if (ro ? o->arena_mem != NULL : (o->layer_mems || o->n_layer_mems)) {
        rw_err("server: %s is set but the dialect is %s: use %s", ro ? "arena_mem" : "layer_mems",
               ro ? "RO" : "RW", ro ? "layer_mems (RO layers)" : "arena_mem (the RW arena)");
        return RAILWIRE_E_INVALID;
    }
    if (descs && regions) {
        rw_err("server: both %s and %s are set: publish either host regions (%s) or memory "
               "descriptors (%s), not both", ro ? "layers" : "arena",
               ro ? "layer_mems" : "arena_mem", ro ? "layers" : "arena",
               ro ? "layer_mems" : "arena_mem");
        return RAILWIRE_E_INVALID;
    }
    if (o->staging_bytes && o->staging_bytes < MIN_STAGING) {
        rw_err("server: staging_bytes %zu is below the least (%u bytes); 0 = the default "
               "(%u bytes)", o->staging_bytes, MIN_STAGING, RW_STAGE_DEFAULT_BYTES);
        return RAILWIRE_E_INVALID;
    }
    rc = descs ? take_descriptors(srv, o) : take_regions(srv, o);
    if (rc < 0)
        return rc;
    uint64_t total = 0;
    for (unsigned i = 0; i < srv->n_mems; i++)
        total += srv->mems[i].len;
    if (o->max_bytes && total > o->max_bytes) {
        rw_err("server: %llu bytes to publish exceed the cap of %llu bytes (max_bytes)",
               (unsigned long long)total, (unsigned long long)o->max_bytes);
        return RAILWIRE_E_LIMIT;
    }
    return make_pool(srv, o);
}

static void count_path(struct railwire_server *srv, int path)
{
    pthread_mutex_lock(&srv->stats_lock);
    switch (path) {
    case RW_MEM_PATH_DMABUF:
        srv->st.regs_dmabuf++;
        break;
    case RW_MEM_PATH_PEERMEM:
        srv->st.regs_peermem++;
        break;
    case RW_MEM_PATH_STAGED:
        srv->st.regs_staged++;
        break;
    default:
        srv->st.regs_host++;
    }
    pthread_mutex_unlock(&srv->stats_lock);
}

int rw_srv_mem_register(struct railwire_server *srv, struct rw_domain *d, unsigned k, int access,
                        struct rw_mr **out)
{
    const struct rw_mem *m = &srv->mems[k];
    uint64_t t0 = rw_now_ns();
    int rc;

    *out = NULL;
    if (m->kind == RAILWIRE_MEM_HOST) {
        rc = srv->ops->mr_reg(d, m->addr, m->len, access, out);
    } else if (!srv->ops->mr_reg_mem) {
        rw_err("server: the %s transport registers host memory only; %s %u is %s memory",
               srv->ops->name, what(srv), k, rw_mem_kind_name((int)m->kind));
        rc = RAILWIRE_E_UNSUPPORTED;
    } else {
        rc = srv->ops->mr_reg_mem(d, m, access, out);
    }
    if (rc < 0) {
        *out = NULL;
        rw_err("server: registering %s %u (%zu bytes of %s memory) on %s failed (%s)", what(srv),
               k, m->len, rw_mem_kind_name((int)m->kind), d->name, railwire_error_class(rc));
        return rc;
    }
    count_registration(srv, m->len, rw_now_ns() - t0);
    count_path(srv, (*out)->mem_path);
    if (m->kind != RAILWIRE_MEM_HOST)
        rw_info("server: %s %u: %zu bytes of %s memory on %s: path %s", what(srv), k, m->len,
                rw_mem_kind_name((*out)->mem_kind), d->name, rw_mem_path_name((*out)->mem_path));
    else
        rw_debug("server: %s %u: %zu bytes of host memory on %s: path host", what(srv), k,
                 m->len, d->name);
    return 0;
}

void rw_srv_mem_settle(struct railwire_server *srv)
{
    pthread_mutex_lock(&srv->stats_lock);
    uint64_t staged = srv->st.regs_staged;
    pthread_mutex_unlock(&srv->stats_lock);
    if (staged || !srv->stage_pool)
        return;
    for (unsigned i = 0; i < srv->n_mems; i++)
        srv->mems[i].stage_pool = NULL;
    rw_stage_pool_destroy(srv->stage_pool);
    srv->stage_pool = NULL;
}

void rw_srv_mem_stats(const struct railwire_server *srv, struct railwire_server_stats *out)
{
    if (!srv->stage_pool)
        return;
    struct rw_stage_stats ss;
    rw_stage_pool_stats(srv->stage_pool, &ss);
    out->staging_bound = ss.bound;
    out->staging_chunk = ss.chunk;
    out->staging_allocated = ss.allocated;
    out->staging_in_use = ss.in_use;
    out->staging_waits = ss.waits;
}

void rw_srv_mem_free(struct railwire_server *srv)
{
    rw_stage_pool_destroy(srv->stage_pool);
    srv->stage_pool = NULL;
    free(srv->mems);
    srv->mems = NULL;
    srv->n_mems = 0;
}
