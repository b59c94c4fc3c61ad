/* SPDX-License-Identifier: MIT */
/* Memory registration with a per-device cache: a region (addr, len, access)
 * is registered once per device and shared by every domain, session and ep
 * on it; large regions go to several devices in parallel threads.
 *
 * Regions peers may access are registered at a random I/O virtual address
 * (ibv_reg_mr_iova2), so the base_addr a server publishes says nothing of
 * its address space layout (ASLR).  The iova keeps the region's offset
 * within a 2 MiB page (some devices map with large pages only when the two
 * agree) and is drawn per cache entry: every user of one registration sees
 * the same base.  Local-only regions keep iova == addr, since the data path
 * puts virtual addresses in its scatter entries. */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/time.h"
#include "verbs/status.h"
#include "verbs/verbs.h"
#include "verbs/verbs_int.h"

int rw_vmr_access(int access)
{
    int a = 0;
    /* READ results land in local memory; the RW arena takes WRITEs.  RO layers
     * (REMOTE_READ only) get neither local nor remote write, so read-only
     * mappings register and a WRITE into them fails at the responder. */
    if (access == RW_ACCESS_LOCAL || (access & RW_ACCESS_REMOTE_WRITE))
        a |= IBV_ACCESS_LOCAL_WRITE;
    if (access & RW_ACCESS_REMOTE_READ)
        a |= IBV_ACCESS_REMOTE_READ;
    if (access & RW_ACCESS_REMOTE_WRITE)
        a |= IBV_ACCESS_REMOTE_WRITE;
    return a;
}

/* A cache entry with the iova it was registered at. */
struct rw_vmr_ent_iova {
    struct rw_vmr_ent e;
    uint64_t iova;
};

#define RW_IOVA_KEEP_BITS 21 /* the offset within a 2 MiB page */
#define RW_IOVA_TOP_BIT 52   /* iova in [2^52, 2^53): never 0, never wraps */

static uint64_t ent_iova(const struct rw_vmr_ent *e)
{
    return rw_container_of(e, const struct rw_vmr_ent_iova, e)->iova;
}

/* A random iova for a remotely accessible region at addr, or addr itself
 * (local regions, or no randomness available). */
uint64_t rw_vmr_pick_iova(void *addr, int access)
{
    uint64_t va = (uint64_t)(uintptr_t)addr, r = 0;
    if (!(access & (RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE)))
        return va;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        rw_warn_rl("verbs: getrandom failed (errno %d); publishing the region's virtual "
                   "address as its base", errno);
        return va;
    }
    uint64_t keep = (1ull << RW_IOVA_KEEP_BITS) - 1, span = (1ull << RW_IOVA_TOP_BIT) - 1;
    return (1ull << RW_IOVA_TOP_BIT) | (r & span & ~keep) | (va & keep);
}

struct ibv_mr *rw_vmr_reg_at_iova(struct rw_vdev *d, void *addr, size_t len, int access,
                                  uint64_t *iova)
{
    int flags = rw_vmr_access(access);
    *iova = rw_vmr_pick_iova(addr, access);
    if (*iova == (uint64_t)(uintptr_t)addr)
        return ibv_reg_mr(d->pd, addr, len, flags);
    struct ibv_mr *mr = ibv_reg_mr_iova2(d->pd, addr, len, *iova, (unsigned)flags);
    if (mr || (errno != EOPNOTSUPP && errno != EINVAL))
        return mr;
    rw_warn_rl("verbs: %s: registering at a random iova failed (errno %d); publishing the "
               "region's virtual address as its base", d->name, errno);
    *iova = (uint64_t)(uintptr_t)addr;
    return ibv_reg_mr(d->pd, addr, len, flags);
}

/* Finds or creates the cache entry; takes one reference on it. */
static int cache_get(struct rw_vdev *d, void *addr, size_t len, int access, struct rw_vmr_ent **out)
{
    struct rw_vmr_ent *e;
    int rc = 0;

    pthread_mutex_lock(&d->mr_lock);
    for (e = d->mrs; e; e = e->next) {
        if (e->addr == addr && e->len == len && e->access == access) {
            e->refs++;
            rw_debug("verbs: %s: reusing the registration of %p+%zu (%u users)", d->name, addr,
                     len, e->refs);
            goto out;
        }
    }
    struct rw_vmr_ent_iova *ei = calloc(1, sizeof(*ei));
    if (!ei) {
        rc = RAILWIRE_E_NOMEM;
        goto out;
    }
    e = &ei->e;
    uint64_t t0 = rw_now_ns();
    /* Registration is slow for big regions; the lock is per device, so other
     * devices register in parallel. */
    e->mr = rw_vmr_reg_at_iova(d, addr, len, access, &ei->iova);
    if (!e->mr) {
        int en = errno;
        rw_err("verbs: ibv_reg_mr(%s, %p, %zu bytes) failed (errno %d%s)", d->name, addr, len, en,
               en == ENOMEM || en == EAGAIN || en == EPERM
                   ? ": check `ulimit -l` (locked memory) and the device's MR limits"
               : en == EFAULT
                   ? ": the range is not mapped, or it is a MAP_SHARED read-only file mapping, "
                     "which Linux cannot pin for RDMA: map such files MAP_PRIVATE"
                   : "");
        free(ei);
        rc = RAILWIRE_E_VERBS;
        goto out;
    }
    rw_debug("verbs: %s: registered %zu bytes in %.3f ms", d->name, len,
             (double)(rw_now_ns() - t0) / 1e6);
    e->addr = addr;
    e->len = len;
    e->access = access;
    e->refs = 1;
    e->next = d->mrs;
    d->mrs = e;
out:
    pthread_mutex_unlock(&d->mr_lock);
    if (rc == 0)
        *out = e;
    return rc;
}

static void cache_put(struct rw_vdev *d, struct rw_vmr_ent *e)
{
    pthread_mutex_lock(&d->mr_lock);
    if (--e->refs > 0) {
        pthread_mutex_unlock(&d->mr_lock);
        return;
    }
    for (struct rw_vmr_ent **pp = &d->mrs; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    }
    pthread_mutex_unlock(&d->mr_lock);
    int rc = ibv_dereg_mr(e->mr);
    if (rc)
        rw_warn("verbs: ibv_dereg_mr(%s) failed (errno %d)", d->name, rw_verbs_errno(rc, errno));
    free(rw_container_of(e, struct rw_vmr_ent_iova, e));
}

int rw_vmr_reg(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out)
{
    struct rw_vdom *vd = rw_container_of(dom, struct rw_vdom, base);
    struct rw_vmr *m;
    int rc;

    if (!addr || len == 0) {
        rw_err("verbs: %s: cannot register an empty region", dom->name);
        return RAILWIRE_E_INVALID;
    }
    m = calloc(1, sizeof(*m));
    if (!m)
        return RAILWIRE_E_NOMEM;
    rc = cache_get(vd->dev, addr, len, access, &m->ent);
    if (rc) {
        free(m);
        return rc;
    }
    rw_vdev_ref(vd->dev);
    m->dev = vd->dev;
    m->base.dom = dom;
    m->base.addr = addr;
    m->base.len = len;
    m->base.access = access;
    m->base.lkey = m->ent->mr->lkey;
    m->base.rkey = m->ent->mr->rkey;
    m->base.remote_base = ent_iova(m->ent);
    *out = &m->base;
    return 0;
}

void rw_vmr_dereg(struct rw_mr *mr)
{
    if (!mr)
        return;
    struct rw_vmr *m = rw_container_of(mr, struct rw_vmr, base);
    if (m->direct) {
        int rc = ibv_dereg_mr(m->direct);
        if (rc)
            rw_warn("verbs: ibv_dereg_mr(%s, %s memory) failed (errno %d)", m->dev->name,
                    rw_mem_kind_name(mr->mem_kind), rw_verbs_errno(rc, errno));
        rw_vdev_put(m->dev);
        free(m);
        return;
    }
    cache_put(m->dev, m->ent);
    rw_vdev_put(m->dev);
    free(m);
}

struct reg_job {
    struct rw_domain *dom;
    void *addr;
    size_t len;
    int access;
    struct rw_mr *mr;
    int rc;
};

static void *reg_thread(void *arg)
{
    struct reg_job *j = arg;
    j->rc = rw_vmr_reg(j->dom, j->addr, j->len, j->access, &j->mr);
    return NULL;
}

int rw_vmr_reg_multi(struct rw_domain *const *doms, size_t n, void *addr, size_t len, int access,
                     struct rw_mr **out)
{
    struct reg_job *jobs;
    pthread_t *tids;
    char *started;
    int rc = 0;

    if (n == 0)
        return 0;
    jobs = calloc(n, sizeof(*jobs));
    tids = calloc(n, sizeof(*tids));
    started = calloc(n, 1);
    if (!jobs || !tids || !started) {
        rc = RAILWIRE_E_NOMEM;
        goto out;
    }
    /* One job per distinct device: the first domain of each device registers,
     * the others then hit the cache. */
    for (size_t i = 0; i < n; i++) {
        struct rw_vdom *vi = rw_container_of(doms[i], struct rw_vdom, base);
        int first = 1;
        for (size_t k = 0; k < i; k++)
            if (rw_container_of(doms[k], struct rw_vdom, base)->dev == vi->dev)
                first = 0;
        jobs[i] = (struct reg_job){doms[i], addr, len, access, NULL, 0};
        if (!first || len < RW_VERBS_PARALLEL_REG_MIN)
            continue;
        if (pthread_create(&tids[i], NULL, reg_thread, &jobs[i]) == 0)
            started[i] = 1;
        else
            reg_thread(&jobs[i]);
        started[i] |= 2;
    }
    for (size_t i = 0; i < n; i++)
        if (started[i] & 1)
            pthread_join(tids[i], NULL);
    for (size_t i = 0; i < n; i++) {
        if (!(started[i] & 2))
            reg_thread(&jobs[i]);
        if (jobs[i].rc && !rc)
            rc = jobs[i].rc;
    }
    if (rc) {
        for (size_t i = 0; i < n; i++)
            if (jobs[i].rc == 0)
                rw_vmr_dereg(jobs[i].mr);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = jobs[i].mr;
out:
    free(started);
    free(tids);
    free(jobs);
    return rc;
}

int rw_verbs_mr_reg_multi(struct rw_domain *const *doms, size_t n, void *addr, size_t len,
                          int access, struct rw_mr **out)
{
    return rw_vmr_reg_multi(doms, n, addr, len, access, out);
}
