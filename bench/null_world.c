/* SPDX-License-Identifier: MIT */
/* The null world (see null_world.h). */
#include "null_world.h"

#include <stdlib.h>
#include <string.h>

#include "rail/client/railset_testing.h"

int null_world_open(struct null_world *w, unsigned n_rails, const railwire_railset_opts *o,
                    void *buf, size_t len)
{
    memset(w, 0, sizeof(*w));
    if (n_rails == 0 || n_rails > RAILWIRE_MAX_RAILS)
        return RAILWIRE_E_INVALID;
    struct rw_rail_init *init = calloc(n_rails, sizeof(*init));
    struct rw_mr_desc *desc = calloc(n_rails, sizeof(*desc));
    struct rw_domain_cfg dc = {.role = RW_ROLE_CLIENT};
    unsigned opened = 0;
    int rc = init && desc ? 0 : RAILWIRE_E_NOMEM;
    for (; rc == 0 && opened < n_rails; opened++) {
        struct rw_domain *d;
        rc = rw_null_ops.domain_open(&dc, &d);
        if (rc < 0)
            break;
        struct rw_ep_cfg ec = {.depth = d->max_qp_wr};
        rc = rw_null_ops.ep_create(d, &ec, &init[opened].ep);
        if (rc < 0) {
            rw_null_ops.domain_close(d);
            break;
        }
        desc[opened].base_addr = 0x10000000ull;
        desc[opened].rkey = 1;
        init[opened].dom = d;
        init[opened].remote = &desc[opened];
        init[opened].n_remote = 1;
    }
    if (rc == 0) {
        railwire_railset_opts oo = *o;
        oo.dialect = RAILWIRE_DIALECT_RW;
        rc = rw_railset_create_local(&rw_null_ops, &oo, init, n_rails, &w->rs);
    }
    if (rc < 0) {
        for (unsigned i = 0; init && i < opened; i++) {
            rw_null_ops.ep_destroy(init[i].ep);
            rw_null_ops.domain_close(init[i].dom);
        }
    } else {
        rc = railwire_mr_register(w->rs, buf, len, &w->mr);
        if (rc < 0) {
            railwire_railset_close(w->rs);
            w->rs = NULL;
        }
    }
    free(init);
    free(desc);
    return rc;
}

void null_world_close(struct null_world *w)
{
    railwire_railset_close(w->rs);
    memset(w, 0, sizeof(*w));
}
