/* SPDX-License-Identifier: MIT */
/* Local memory registration: one rw_mr per rail's domain, so any rail can
 * carry any slice of a transfer that uses the registration. */
#include <stdlib.h>

#include "common/log.h"
#include "rail/parallel.h"
#include "rail/railset_internal.h"

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

static int reg_one(void *arg, unsigned i)
{
    struct railwire_mr *m = arg;
    railwire_railset *rs = m->rs;
    struct rw_rail *r = &rs->rails[i];
    if (r->stats.state != RAILWIRE_RAIL_UP)
        return 0; /* a dead rail never carries a slice again */
    int rc = rs->ops->mr_reg(r->dom, m->addr, m->len, RW_ACCESS_LOCAL, &m->per_rail[i]);
    if (rc < 0) {
        m->per_rail[i] = NULL;
        rw_err("mr_register: registering %zu bytes on rail %u (%s) failed: %s", m->len, i,
               r->stats.name, railwire_strerror(rc));
    }
    return rc;
}

int railwire_mr_register(railwire_railset *rs, void *addr, size_t len, railwire_mr **out)
{
    if (!rs || !addr || len == 0 || !out) {
        rw_err("mr_register: NULL railset/address/out or zero length");
        return RAILWIRE_E_INVALID;
    }
    struct railwire_mr *m = calloc(1, sizeof(*m));
    if (!m) {
        rw_err("mr_register: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    m->rs = rs;
    m->addr = addr;
    m->len = len;
    int rc;
    if (rs->reg_multi) {
        struct rw_domain *doms[RAILWIRE_MAX_RAILS] = {0};
        struct rw_mr *got[RAILWIRE_MAX_RAILS] = {0};
        unsigned idx[RAILWIRE_MAX_RAILS], n = 0;
        for (unsigned i = 0; i < rs->n_rails; i++)
            if (rs->rails[i].stats.state == RAILWIRE_RAIL_UP) {
                idx[n] = i;
                doms[n++] = rs->rails[i].dom;
            }
        rc = rs->reg_multi(doms, n, addr, len, RW_ACCESS_LOCAL, got);
        if (rc == 0)
            for (unsigned k = 0; k < n; k++)
                m->per_rail[idx[k]] = got[k];
        else
            rw_err("mr_register: registering %zu bytes on %u rail(s) failed: %s", len, n,
                   railwire_strerror(rc));
    } else {
        rc = rw_parallel_for(rs->n_rails, len >= RW_PARALLEL_REG_BYTES, reg_one, m);
    }
    if (rc < 0) {
        dereg_all(rs, m);
        free(m);
        return rc;
    }
    m->next = rs->mrs;
    if (rs->mrs)
        rs->mrs->prev = m;
    rs->mrs = m;
    *out = m;
    return 0;
}

int railwire_mr_deregister(railwire_mr *mr)
{
    if (!mr)
        return 0;
    if (mr->users) {
        rw_err("mr_deregister: %u unfinished transfer(s) still use this registration; "
               "wait for them first", mr->users);
        return RAILWIRE_E_STATE;
    }
    railwire_railset *rs = mr->rs;
    if (mr->prev)
        mr->prev->next = mr->next;
    else
        rs->mrs = mr->next;
    if (mr->next)
        mr->next->prev = mr->prev;
    dereg_all(rs, mr);
    free(mr);
    return 0;
}
