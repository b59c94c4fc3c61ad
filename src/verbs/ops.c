/* SPDX-License-Identifier: MIT */
/* The verbs transport's ops table. */
#include "verbs/verbs.h"
#include "verbs/verbs_int.h"

/* domain_open: rw_vdom_open, then this table as the domain's ops (domain.c
 * does not name the table, so the ops file is the only one that points
 * both ways). */
static int vdom_open(const struct rw_domain_cfg *cfg, struct rw_domain **out)
{
    int rc = rw_vdom_open(cfg, out);
    if (rc == 0)
        (*out)->ops = &rw_verbs_ops;
    return rc;
}

const struct rw_transport_ops rw_verbs_ops = {
    .name = "verbs",
    .places_by_device = 1,
    .default_places = rw_verbs_default_places,
    .domain_open = vdom_open,
    .domain_close = rw_vdom_close,
    .mr_reg = rw_vmr_reg,
    .mr_dereg = rw_vmr_dereg,
    .ep_create = rw_vep_create,
    .ep_connect = rw_vep_connect,
    .ep_post = rw_vep_post,
    .ep_poll = rw_vep_poll,
    .ep_wait_fd = rw_vep_wait_fd,
    .ep_arm = rw_vep_arm,
    .ep_kill = rw_vep_kill,
    .ep_destroy = rw_vep_destroy,
    .mr_reg_multi = rw_vmr_reg_multi,
    .ep_check = rw_vep_check,
    .mr_reg_mem = rw_vmr_reg_mem,
};
