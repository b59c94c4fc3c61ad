/* SPDX-License-Identifier: MIT */
/* The mock world (see mock_world.h). */
#include "mock_world.h"

#include <stdlib.h>
#include <string.h>

uint32_t mock_world_max_msg;
uint32_t mock_world_last_max_msg;

int mock_world_init(struct mock_world *w, enum railwire_dialect d, unsigned n_rails,
                    unsigned n_layers, size_t layer_len, const double *gbps,
                    const railwire_railset_opts *o)
{
    memset(w, 0, sizeof(*w));
    mock_reset();
    w->n_rails = n_rails;
    w->n_layers = n_layers;
    w->layer_len = layer_len;
    int access = d == RAILWIRE_DIALECT_RO ? RW_ACCESS_REMOTE_READ
                                          : RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE;
    for (unsigned l = 0; l < n_layers; l++) {
        w->layer[l] = malloc(layer_len);
        if (!w->layer[l])
            return RAILWIRE_E_NOMEM;
        for (size_t i = 0; i < layer_len; i++)
            w->layer[l][i] = mock_pattern(l, i);
    }
    struct rw_rail_init init[RAILWIRE_MAX_RAILS];
    struct rw_mr_desc desc[RAILWIRE_MAX_RAILS][16];
    struct rw_domain_cfg dc = {.role = RW_ROLE_CLIENT};
    for (unsigned r = 0; r < n_rails; r++) {
        int rc = rw_mock_ops.domain_open(&dc, &w->srv_dom[r]);
        if (rc < 0)
            return rc;
        for (unsigned l = 0; l < n_layers; l++) {
            rc = rw_mock_ops.mr_reg(w->srv_dom[r], w->layer[l], layer_len, access,
                                    &w->srv_mr[r][l]);
            if (rc < 0)
                return rc;
            desc[r][l].base_addr = w->srv_mr[r][l]->remote_base;
            desc[r][l].rkey = w->srv_mr[r][l]->rkey;
        }
        mock_next_domain(gbps ? gbps[r] : 10.0, 1024,
                         r + 1 == n_rails && mock_world_last_max_msg ? mock_world_last_max_msg
                                                                     : mock_world_max_msg);
        struct rw_domain *cd;
        rc = rw_mock_ops.domain_open(&dc, &cd);
        if (rc < 0)
            return rc;
        struct rw_ep_cfg ec = {.depth = 1024};
        rc = rw_mock_ops.ep_create(cd, &ec, &w->ep[r]);
        if (rc < 0)
            return rc;
        init[r].dom = cd;
        init[r].ep = w->ep[r];
        init[r].remote = desc[r];
        init[r].n_remote = n_layers;
    }
    railwire_railset_opts def;
    if (!o) {
        railwire_railset_opts_init(&def);
        o = &def;
    }
    railwire_railset_opts oo = *o;
    oo.dialect = d;
    return rw_railset_create_local(&rw_mock_ops, &oo, init, n_rails, &w->rs);
}

void mock_world_fini(struct mock_world *w)
{
    railwire_railset_close(w->rs);
    for (unsigned r = 0; r < w->n_rails; r++) {
        for (unsigned l = 0; l < w->n_layers; l++)
            if (w->srv_mr[r][l])
                rw_mock_ops.mr_dereg(w->srv_mr[r][l]);
        if (w->srv_dom[r])
            rw_mock_ops.domain_close(w->srv_dom[r]);
    }
    for (unsigned l = 0; l < w->n_layers; l++)
        free(w->layer[l]);
    memset(w, 0, sizeof(*w));
}

int mock_world_wait_n(struct mock_world *w, railwire_completion *out, int n)
{
    int got = 0;
    while (got < n) {
        int k = railwire_wait(w->rs, out + got, n - got, 20000);
        if (k <= 0)
            break;
        got += k;
    }
    return got;
}

int mock_world_xfer(struct mock_world *w, enum railwire_opcode opc, railwire_mr *mr, void *local,
                    size_t len, uint32_t layer, uint64_t off)
{
    if (opc == RAILWIRE_OP_READ)
        return railwire_read(w->rs, mr, local, len, layer, off, 20000);
    return railwire_write(w->rs, mr, local, len, layer, off, 20000);
}

railwire_railset_opts mock_world_opts(size_t slice, int op_timeout_ms)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.slice_size = slice;
    o.queue_depth = 8;
    o.op_timeout_ms = op_timeout_ms;
    return o;
}
