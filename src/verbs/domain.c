/* SPDX-License-Identifier: MIT */
/* Domain = one device port: GID choice, path MTU, QP timing, link weight. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "verbs/gid_rank.h"
#include "verbs/verbs.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

#define RW_VERBS_DEF_TIMEOUT 14 /* 4.096 us * 2^14 = 67 ms per try */
#define RW_VERBS_DEF_RETRY 7
#define RW_VERBS_MAX_QP_WR 4096u
#define RW_VERBS_MAX_MSG (1u << 30)

/* Resolves the device name and port the domain should use. */
static int pick_target(const struct rw_domain_cfg *cfg, struct rw_devspec *t)
{
    struct rw_devspec list[RW_VERBS_MAX_PORTS];
    int n;

    if (cfg->device && *cfg->device) {
        n = rw_devspec_parse(cfg->device, list, 1);
        if (n != 1) {
            rw_err("verbs: device '%s' is not of the form dev[:port]", cfg->device);
            return RAILWIRE_E_INVALID;
        }
        *t = list[0];
        if (cfg->port)
            t->port = cfg->port;
        return 0;
    }
    n = rw_verbs_port_list(list, RW_VERBS_MAX_PORTS);
    if (n < 0)
        return n;
    if (n == 0) {
        rw_err("verbs: no active RDMA port found: check `railwire devices` (or use --transport tcp)");
        return RAILWIRE_E_NO_DEVICE;
    }
    *t = list[0];
    if (cfg->port)
        t->port = cfg->port;
    return 0;
}

/* Finds the port: the given one, or the first ACTIVE one when port == 0. */
static int pick_port(struct rw_vdev *d, unsigned want, uint8_t *port, struct ibv_port_attr *pa)
{
    for (unsigned p = want ? want : 1; p <= d->attr.phys_port_cnt; p++) {
        int e = ibv_query_port(d->ctx, (uint8_t)p, pa);
        if (e) {
            rw_err("verbs: ibv_query_port(%s:%u) failed (errno %d)", d->name, p,
                   rw_verbs_errno(e, errno));
            return RAILWIRE_E_VERBS;
        }
        if (pa->state == IBV_PORT_ACTIVE) {
            *port = (uint8_t)p;
            return 0;
        }
        if (want) {
            rw_err("verbs: %s:%u is %s, not ACTIVE: check the link (cable, netdev up, "
                   "`railwire devices`)", d->name, p, ibv_port_state_str(pa->state));
            return RAILWIRE_E_NO_DEVICE;
        }
    }
    if (want)
        rw_err("verbs: %s has no port %u (it has %u)", d->name, want, d->attr.phys_port_cnt);
    else
        rw_err("verbs: %s has no ACTIVE port: check the links (`railwire devices`)", d->name);
    return RAILWIRE_E_NO_DEVICE;
}

static int choose_gid(struct rw_vdom *vd, const struct rw_domain_cfg *cfg)
{
    struct rw_gid_entry *tab = NULL;
    struct rw_gid_choice ch;
    const char *src = NULL;
    size_t n = 0;
    int ovr, rc;

    ovr = rw_verbs_gid_override(cfg->gid_index, &src);
    if (ovr < 0 && ovr != -1)
        return ovr;
    rc = rw_vport_gids(vd->dev->ctx, vd->port, &tab, &n);
    if (rc)
        return rc;
    rc = rw_gid_choose(tab, n, vd->link_layer == IBV_LINK_LAYER_INFINIBAND, ovr, src, &ch);
    if (rc) {
        rw_err("verbs: %s: no GID to use: %s", vd->base.name, ch.reason);
        goto out;
    }
    vd->gid_index = ch.index;
    for (size_t i = 0; i < n; i++)
        if (tab[i].index == (unsigned)ch.index)
            memcpy(vd->gid.raw, tab[i].gid, 16);
    if (ch.cls == RW_GID_SKIP_LINK_LOCAL)
        rw_warn("verbs: %s uses GID %s", vd->base.name, ch.reason);
    else
        rw_info("verbs: %s uses GID %s", vd->base.name, ch.reason);
out:
    free(tab);
    return rc;
}

/* Software providers (rdma_rxe, siw) have no bus device behind them in
 * sysfs and do their protocol work inside ibv_post_send (see poster.c). */
static int is_soft_device(const struct rw_vdev *d)
{
    char path[IBV_SYSFS_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/device", d->ctx->device->ibdev_path);
    return access(path, F_OK) != 0;
}

static int post_mode(struct rw_vdom *vd)
{
    unsigned long v;
    int r = rw_env_uint("RAILWIRE_VERBS_POST_THREAD", 1, &v);
    if (r < 0)
        return r;
    vd->post_thread = r > 0 ? (int)v : is_soft_device(vd->dev);
    r = rw_env_uint("RAILWIRE_VERBS_POST_THREADS", 1024, &v);
    if (r < 0)
        return r;
    vd->post_threads = r > 0 ? (unsigned)v : 0;
    return 0;
}

static int qp_params(struct rw_vdom *vd, const struct rw_domain_cfg *cfg, const struct ibv_port_attr *pa)
{
    unsigned long env_mtu = 0, v;
    int r;

    r = rw_env_uint("RAILWIRE_MTU", 1u << 20, &env_mtu);
    if (r < 0)
        return r;
    vd->mtu_code = rw_path_mtu(pa->active_mtu, cfg->mtu_cap, (unsigned)env_mtu);
    if (vd->mtu_code == 0) {
        rw_err("verbs: MTU cap %u / RAILWIRE_MTU=%lu is below 256 bytes", cfg->mtu_cap, env_mtu);
        return RAILWIRE_E_INVALID;
    }

    vd->timeout = RW_VERBS_DEF_TIMEOUT;
    if (cfg->timeout)
        vd->timeout = (uint8_t)(cfg->timeout > 31 ? 31 : cfg->timeout);
    else if ((r = rw_env_uint("RAILWIRE_QP_TIMEOUT", 31, &v)) != 0) {
        if (r < 0)
            return r;
        vd->timeout = (uint8_t)v;
    }
    vd->retry_cnt = RW_VERBS_DEF_RETRY;
    if (cfg->retry_cnt)
        vd->retry_cnt = (uint8_t)(cfg->retry_cnt > 7 ? 7 : cfg->retry_cnt);
    else if ((r = rw_env_uint("RAILWIRE_QP_RETRY", 7, &v)) != 0) {
        if (r < 0)
            return r;
        vd->retry_cnt = (uint8_t)v;
    }
    vd->rnr_retry = 7;
    int init = vd->dev->attr.max_qp_init_rd_atom, resp = vd->dev->attr.max_qp_rd_atom;
    vd->max_rd_atomic = (uint8_t)(init < 1 ? 1 : init > 16 ? 16 : init);
    vd->max_dest_rd_atomic = (uint8_t)(resp < 1 ? 1 : resp > 16 ? 16 : resp);
    return 0;
}

int rw_vdom_open(const struct rw_domain_cfg *cfg, struct rw_domain **out)
{
    struct rw_devspec t;
    struct ibv_port_attr pa;
    struct rw_vdom *vd;
    int rc;

    rc = pick_target(cfg, &t);
    if (rc)
        return rc;
    vd = calloc(1, sizeof(*vd));
    if (!vd)
        return RAILWIRE_E_NOMEM;
    rc = rw_vdev_get(t.dev, &vd->dev);
    if (rc)
        goto err_free;
    rc = pick_port(vd->dev, t.port, &vd->port, &pa);
    if (rc)
        goto err_put;
    vd->role = cfg->role;
    vd->link_layer = pa.link_layer;
    /* Device names are < 64 bytes; keep the name within base.name. */
    snprintf(vd->base.name, sizeof(vd->base.name), "%.59s:%u", vd->dev->name, vd->port);
    if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND) {
        rw_err("verbs: %s is an InfiniBand port: IB routing needs the peer's LID, which the "
               "frozen handshake does not carry; railwire's verbs rails need RoCE (Ethernet "
               "link layer). Use a RoCE port or --transport tcp", vd->base.name);
        rc = RAILWIRE_E_UNSUPPORTED;
        goto err_put;
    }
    rc = choose_gid(vd, cfg);
    if (rc)
        goto err_put;
    rc = qp_params(vd, cfg, &pa);
    if (rc)
        goto err_put;
    rc = post_mode(vd);
    if (rc)
        goto err_put;

    vd->base.gbps = rw_link_gbps(pa.active_speed, pa.active_width);
    vd->base.max_qp_wr = (unsigned)vd->dev->attr.max_qp_wr;
    if (vd->base.max_qp_wr > RW_VERBS_MAX_QP_WR)
        vd->base.max_qp_wr = RW_VERBS_MAX_QP_WR;
    vd->base.max_msg = pa.max_msg_sz < RW_VERBS_MAX_MSG ? pa.max_msg_sz : RW_VERBS_MAX_MSG;
    rw_info("verbs: opened %s (%s, %.1f Gbit/s, path MTU %u of active %u, GID index %d, "
            "ack timeout %u, retry %u%s)", vd->base.name,
            cfg->role == RW_ROLE_SERVER ? "server" : "client", vd->base.gbps,
            rw_mtu_bytes(vd->mtu_code), rw_mtu_bytes(pa.active_mtu), vd->gid_index, vd->timeout,
            vd->retry_cnt,
            vd->post_thread && cfg->role == RW_ROLE_CLIENT ? ", poster threads" : "");
    *out = &vd->base;
    return 0;

err_put:
    rw_vdev_put(vd->dev);
err_free:
    free(vd);
    return rc;
}

void rw_vdom_close(struct rw_domain *dom)
{
    if (!dom)
        return;
    struct rw_vdom *vd = rw_container_of(dom, struct rw_vdom, base);
    rw_vdev_put(vd->dev);
    free(vd);
}
