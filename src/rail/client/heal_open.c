/* SPDX-License-Identifier: MIT */
/* The network side of healing: one new session through one host, with the
 * railset's own options, on the same local NICs or devices as its rails. */
#include "rail/client/heal.h"

int rw_heal_open_network(const struct rw_heal_cfg *cfg, const struct rw_heal_req *req,
                         const char *host, struct rw_session_out *out, void *ctx)
{
    struct rw_session_spec sp = {
        .ops = cfg->ops,
        .dialect = cfg->dialect,
        .host = host,
        .port = cfg->port,
        .n_rails = req->n_rails,
        .need = req->need,
        .expect_layers = cfg->dialect == RAILWIRE_DIALECT_RO ? cfg->n_layers : 0,
        .gid_index = cfg->gid_index,
        .mtu = cfg->mtu,
        .queue_depth = cfg->queue_depth,
        .connect_timeout_ms = cfg->connect_timeout_ms,
        .io_timeout_ms = cfg->io_timeout_ms,
        .busy_poll_us = cfg->busy_poll_us,
        .tls = ctx, /* the railset's TLS credentials (NULL: plain): heals authenticate again */
    };
    for (unsigned i = 0; i < req->n_rails && i < cfg->n_rails; i++) {
        sp.local_addr[i] = cfg->local_addr ? cfg->local_addr[i] : NULL;
        sp.device[i] = cfg->device ? cfg->device[i] : NULL;
    }
    return rw_session_open(&sp, out);
}
