/* SPDX-License-Identifier: MIT */
/* Local memory registration: one rw_mr per rail's domain, so any rail can
 * carry any slice of a transfer that uses the registration. */
#include <stdlib.h>

#include "common/log.h"
#include "common/parallel.h"
#include "gpu/near_mem.h"
#include "gpu/staging.h"
#include "rail/client/rail_state.h"

/* Registrations at least this big run on every rail in parallel. */
#define RW_PARALLEL_REG_BYTES (64u << 20)

static void dereg_all(railwire_railset *rs, struct railwire_mr *m)
{
    for (unsigned i = 0; i < rs->n_rails; i++) {
        if (m->per_rail[i])
            rs->ops->mr_dereg(m->per_rail[i]);
        m->per_rail[i] = NULL;
    }
}

/* What one registration registers on: the rails' domains as they were when
 * it started (another thread may heal a rail meanwhile). */
struct reg_job {
    railwire_railset *rs;
    struct railwire_mr *m;
    struct rw_domain **dom;   /* per rail; NULL: the rail was down */
};

int rw_mr_reg_dom(railwire_railset *rs, struct rw_domain *dom, const struct railwire_mr *m,
                  struct rw_mr **out)
{
    if (m->mem.kind == RAILWIRE_MEM_HOST)
        return rs->ops->mr_reg(dom, m->addr, m->len, RW_ACCESS_LOCAL, out);
    if (!rs->ops->mr_reg_mem) {
        rw_err("mr_register: the %s transport cannot register %s memory; use host memory "
               "or another transport", rs->ops->name, rw_mem_kind_name((int)m->mem.kind));
        return RAILWIRE_E_UNSUPPORTED;
    }
    int rc = rs->ops->mr_reg_mem(dom, &m->mem, RW_ACCESS_LOCAL, out);
    if (rc == 0)
        rw_info("mr_register: %zu bytes of %s memory on %s: path %s", m->len,
                rw_mem_kind_name((*out)->mem_kind), dom->name,
                rw_mem_path_name((*out)->mem_path));
    return rc;
}

static int reg_one(void *arg, unsigned i)
{
    struct reg_job *j = arg;
    railwire_railset *rs = j->rs;
    struct railwire_mr *m = j->m;
    if (!j->dom[i])
        return 0; /* a dead rail never carries a slice again; a heal registers it */
    int rc = rw_mr_reg_dom(rs, j->dom[i], m, &m->per_rail[i]);
    if (rc < 0) {
        m->per_rail[i] = NULL;
        rw_err("mr_register: registering %zu bytes on rail %u (%s) failed: %s", m->len, i,
               j->dom[i]->name, railwire_strerror(rc));
    }
    return rc;
}

/* Registers on every domain of the job, without the railset's lock. */
static int reg_all(struct reg_job *j)
{
    railwire_railset *rs = j->rs;
    struct railwire_mr *m = j->m;
    if (!rs->reg_multi || m->mem.kind != RAILWIRE_MEM_HOST)
        return rw_parallel_for(rs->n_rails, m->len >= RW_PARALLEL_REG_BYTES, reg_one, j);
    struct rw_domain **doms = calloc(rs->n_rails, sizeof(*doms));
    struct rw_mr **got = calloc(rs->n_rails, sizeof(*got));
    unsigned *idx = calloc(rs->n_rails, sizeof(*idx)), n = 0;
    int rc = RAILWIRE_E_NOMEM;
    if (doms && got && idx) {
        for (unsigned i = 0; i < rs->n_rails; i++)
            if (j->dom[i]) {
                idx[n] = i;
                doms[n++] = j->dom[i];
            }
        rc = rs->reg_multi(doms, n, m->addr, m->len, RW_ACCESS_LOCAL, got);
        if (rc == 0)
            for (unsigned k = 0; k < n; k++)
                m->per_rail[idx[k]] = got[k];
        else
            rw_err("mr_register: registering %zu bytes on %u rail(s) failed: %s", m->len, n,
                   railwire_strerror(rc));
    }
    free(doms);
    free(got);
    free(idx);
    return rc;
}

/* With the lock held, after an unlocked registration: rails healed
 * meanwhile got new domains, so what was registered on their old ones is
 * released (the old domains were kept open for it) and the new ones
 * registered now. */
static int reg_fixup(struct reg_job *j)
{
    railwire_railset *rs = j->rs;
    struct railwire_mr *m = j->m;
    for (unsigned i = 0; i < rs->n_rails; i++) {
        struct rw_rail *r = &rs->rails[i];
        if (r->dom == j->dom[i] || !rw_rail_is_up(r))
            continue;
        if (m->per_rail[i])
            rs->ops->mr_dereg(m->per_rail[i]);
        m->per_rail[i] = NULL;
        int rc = rw_mr_reg_dom(rs, r->dom, m, &m->per_rail[i]);
        if (rc < 0) {
            m->per_rail[i] = NULL;
            rw_err("mr_register: registering %zu bytes on healed rail %u (%s) failed: %s",
                   m->len, i, r->stats.name, railwire_strerror(rc));
            return rc;
        }
    }
    return 0;
}

void rw_rail_retire_domain(railwire_railset *rs, struct rw_domain *dom)
{
    if (!rs->regs_busy) {
        rs->ops->domain_close(dom);
        return;
    }
    /* A registration in progress may hold an MR on it: close it after. */
    for (unsigned k = 0; k < rs->n_rails * 4; k++)
        if (!rs->graveyard[k]) {
            rs->graveyard[k] = dom;
            return;
        }
    rw_err("railset: too many retired domains waiting for registrations in progress; leaking one");
}

static void close_graveyard(railwire_railset *rs)
{
    for (unsigned k = 0; k < rs->n_rails * 4; k++)
        if (rs->graveyard[k]) {
            rs->ops->domain_close(rs->graveyard[k]);
            rs->graveyard[k] = NULL;
        }
}

/* With the lock held: counts m's registrations in the rails' stats. */
static void count_paths(railwire_railset *rs, const struct railwire_mr *m)
{
    for (unsigned i = 0; i < rs->n_rails; i++) {
        const struct rw_mr *r = m->per_rail[i];
        railwire_rail_stats *st = &rs->rails[i].stats;
        if (!r)
            continue;
        switch (r->mem_path) {
        case RW_MEM_PATH_DMABUF: st->regs_dmabuf++; break;
        case RW_MEM_PATH_PEERMEM: st->regs_peermem++; break;
        case RW_MEM_PATH_STAGED:
            st->regs_staged++;
            /* a staged slice passes through one staging chunk */
            rw_railset_shrink_slices(rs, RW_STAGE_DEFAULT_CHUNK);
            break;
        default: st->regs_host++; break;
        }
    }
}

/* Registers the checked memory *mem on every live rail. */
static int register_on_rails(railwire_railset *rs, const struct rw_mem *mem, railwire_mr **out)
{
    void *addr = mem->addr;
    size_t len = mem->len;
    struct railwire_mr *m = calloc(1, sizeof(*m));
    struct reg_job *j = calloc(1, sizeof(*j));
    if (m)
        m->per_rail = calloc(rs->n_rails, sizeof(*m->per_rail));
    if (j)
        j->dom = calloc(rs->n_rails, sizeof(*j->dom));
    if (!m || !j || !m->per_rail || !j->dom) {
        if (m)
            free(m->per_rail);
        if (j)
            free(j->dom);
        free(m);
        free(j);
        rw_err("mr_register: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    m->rs = rs;
    m->addr = addr;
    m->len = len;
    m->mem = *mem;
    j->rs = rs;
    j->m = m;
    /* Registration may be slow (verbs pins the pages): it runs without the
     * lock, so other threads keep moving data meanwhile. */
    rs_lock(rs);
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (rw_rail_is_up(&rs->rails[i]))
            j->dom[i] = rs->rails[i].dom;
    rs->regs_busy++;
    rs_unlock(rs);
    int rc = reg_all(j);
    rs_lock(rs);
    if (rc == 0)
        rc = reg_fixup(j);
    if (rc < 0) {
        dereg_all(rs, m);
    } else {
        rw_list_push_head(&rs->mrs, &m->link);
        count_paths(rs, m);
    }
    if (--rs->regs_busy == 0)
        close_graveyard(rs);
    rs_unlock(rs);
    free(j->dom);
    free(j);
    if (rc < 0) {
        free(m->per_rail);
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* The railset's staging pool (created on first use, on `device`) into
 * m->stage_pool: tcp moves CUDA memory through it; chunks are allocated
 * only when a transfer needs one, so other transports never pin any. */
static int staging_pool(railwire_railset *rs, int device, struct rw_mem *m)
{
    int rc = 0;
    rs_lock(rs);
    if (!rs->stage_pool)
        rc = rw_stage_pool_create(device, rs->staging_bytes, RW_STAGE_DEFAULT_CHUNK,
                                  &rs->stage_pool);
    m->stage_pool = rs->stage_pool;
    rs_unlock(rs);
    if (rc < 0)
        rw_err("mr_register_mem: the staging pool (%zu bytes) could not be created: %s",
               rs->staging_bytes ? rs->staging_bytes : (size_t)RW_STAGE_DEFAULT_BYTES,
               railwire_strerror(rc));
    return rc;
}

/* near=auto: the first registration of the railset says whether its
 * memory lives where the rails were placed at connect (docs/gpu.md). */
static void near_check(railwire_railset *rs, const struct rw_mem *m)
{
    if (!rs->near_auto || __atomic_exchange_n(&rs->near_checked, 1, __ATOMIC_ACQ_REL))
        return;
    struct rw_near at;
    char want[32], got[32];
    if (rw_near_from_mem(m, &at) < 0 || at.kind == RW_NEAR_NONE) {
        rw_info("mr_register: near=auto: where this first registered memory lives is unknown "
                "(untouched host pages or a DMA-BUF); rails stay near %s",
                rw_near_str(&rs->near_target, want, sizeof(want)));
        return;
    }
    if (rw_near_same(&at, &rs->near_target)) {
        rw_info("mr_register: near=auto: the first registered memory is on %s, where the rails "
                "were placed", rw_near_str(&at, got, sizeof(got)));
        return;
    }
    rw_warn("mr_register: near=auto placed the rails near %s at connect, but the first "
            "registered memory is on %s: the rails may cross a farther PCIe or socket path; "
            "connect with near=\"%s\" (or make that device current before connecting)",
            rw_near_str(&rs->near_target, want, sizeof(want)), rw_near_str(&at, got, sizeof(got)),
            got);
}

int railwire_mr_register(railwire_railset *rs, void *addr, size_t len, railwire_mr **out)
{
    if (!rs || !addr || len == 0 || !out) {
        rw_err("mr_register: NULL railset/address/out or zero length");
        return RAILWIRE_E_INVALID;
    }
    struct rw_mem mem;
    rw_mem_host(&mem, addr, len);
    int rc = register_on_rails(rs, &mem, out);
    if (rc == 0)
        near_check(rs, &mem);
    return rc;
}

int railwire_mr_register_mem(railwire_railset *rs, const railwire_mem *mem, railwire_mr **out)
{
    if (!rs || !mem || !out) {
        rw_err("mr_register_mem: NULL railset/descriptor/out");
        return RAILWIRE_E_INVALID;
    }
    struct rw_mem m;
    int rc = rw_mem_normalise(mem, &m);
    if (rc < 0)
        return rc;
    if (m.kind == RAILWIRE_MEM_CUDA) {
        rc = staging_pool(rs, m.device, &m);
        if (rc < 0)
            return rc;
    }
    rc = register_on_rails(rs, &m, out);
    if (rc == 0)
        near_check(rs, &m);
    return rc;
}

/* With the lock held: releases mr (no transfer may use it). */
void rw_mr_release(struct railwire_mr *mr)
{
    railwire_railset *rs = mr->rs;
    rw_list_remove(&rs->mrs, &mr->link);
    dereg_all(rs, mr);
    free(mr->per_rail);
    free(mr);
}

int railwire_mr_deregister(railwire_mr *mr)
{
    if (!mr)
        return 0;
    railwire_railset *rs = mr->rs;
    rs_lock(rs);
    if (mr->users) {
        unsigned u = mr->users;
        rs_unlock(rs);
        rw_err("mr_deregister: %u unfinished transfer(s) still use this registration; "
               "wait for them first", u);
        return RAILWIRE_E_STATE;
    }
    rw_mr_release(mr);
    rs_unlock(rs);
    return 0;
}
