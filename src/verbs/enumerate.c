/* SPDX-License-Identifier: MIT */
/* Device inventory: rw_verbs_available, the default port list and the
 * data behind `railwire devices`. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "verbs/status.h"
#include "verbs/verbs.h"
#include "verbs/verbs_int.h"

static const char *link_layer_str(uint8_t ll)
{
    switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "unspecified";
    }
}

/* Appends every ACTIVE Ethernet port of every device to out (when non-NULL),
 * returns the total count found. */
static int active_ports(struct rw_devspec *out, size_t max)
{
    struct ibv_device **list;
    int num = 0, cnt = 0;

    list = ibv_get_device_list(&num);
    if (!list)
        return 0;
    for (int i = 0; i < num; i++) {
        struct ibv_context *ctx = ibv_open_device(list[i]);
        struct ibv_device_attr da;
        if (!ctx)
            continue;
        if (ibv_query_device(ctx, &da) == 0) {
            for (unsigned p = 1; p <= da.phys_port_cnt; p++) {
                struct ibv_port_attr pa;
                if (ibv_query_port(ctx, (uint8_t)p, &pa) || pa.state != IBV_PORT_ACTIVE ||
                    pa.link_layer == IBV_LINK_LAYER_INFINIBAND)
                    continue;
                if (out && (size_t)cnt < max) {
                    snprintf(out[cnt].dev, sizeof(out[cnt].dev), "%s", ibv_get_device_name(list[i]));
                    out[cnt].port = p;
                }
                cnt++;
            }
        }
        ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    return cnt;
}

int rw_verbs_port_list(struct rw_devspec *out, size_t max)
{
    const char *env = getenv("RAILWIRE_DEVICES");
    int n;

    if (env && *env) {
        n = rw_devspec_parse(env, out, max);
        if (n < 0)
            rw_err("verbs: RAILWIRE_DEVICES='%s' is not a list dev[:port],dev[:port],... "
                   "of at most %zu items", env, max);
        return n;
    }
    n = active_ports(out, max);
    return n > (int)max ? (int)max : n;
}

int rw_verbs_default_places(struct rw_domain_place *out, unsigned max)
{
    struct rw_devspec list[RW_VERBS_MAX_PORTS];
    int n = rw_verbs_port_list(list, RW_VERBS_MAX_PORTS);
    if (n <= 0)
        return n;
    if ((unsigned)n > max)
        n = (int)max;
    for (int i = 0; i < n; i++) {
        if (list[i].port)
            snprintf(out[i].device, sizeof(out[i].device), "%.63s:%u", list[i].dev,
                     list[i].port);
        else
            snprintf(out[i].device, sizeof(out[i].device), "%.63s", list[i].dev);
    }
    return n;
}

int rw_verbs_available(void)
{
    const char *env = getenv("RAILWIRE_DEVICES");
    if (env && *env) {
        struct rw_devspec s[RW_VERBS_MAX_PORTS];
        return rw_devspec_parse(env, s, RW_VERBS_MAX_PORTS) > 0 && active_ports(NULL, 0) > 0;
    }
    return active_ports(NULL, 0) > 0;
}

static int fill_port(struct ibv_context *ctx, unsigned p, int ovr, const char *src,
                     unsigned env_mtu, struct rw_vport_info *pi)
{
    struct ibv_port_attr pa;
    struct rw_gid_entry *tab = NULL;
    size_t n = 0;
    int rc;

    pi->port = p;
    rc = ibv_query_port(ctx, (uint8_t)p, &pa);
    if (rc) {
        rw_err("verbs: ibv_query_port(%s:%u) failed (errno %d)", ibv_get_device_name(ctx->device),
               p, rw_verbs_errno(rc, errno));
        return RAILWIRE_E_VERBS;
    }
    pi->state = ibv_port_state_str(pa.state);
    pi->active = pa.state == IBV_PORT_ACTIVE;
    pi->link_layer = link_layer_str(pa.link_layer);
    pi->speed_code = pa.active_speed;
    pi->width_code = pa.active_width;
    pi->gbps = rw_link_gbps(pa.active_speed, pa.active_width);
    pi->active_mtu = rw_mtu_bytes(pa.active_mtu);
    pi->max_mtu = rw_mtu_bytes(pa.max_mtu);
    pi->path_mtu = rw_mtu_bytes(rw_path_mtu(pa.active_mtu, 0, env_mtu));
    pi->gid_tbl_len = (unsigned)pa.gid_tbl_len;
    rc = rw_vport_gids(ctx, (uint8_t)p, &tab, &n);
    if (rc)
        return rc;
    if (n) {
        pi->gids = calloc(n, sizeof(*pi->gids));
        if (!pi->gids) {
            free(tab);
            return RAILWIRE_E_NOMEM;
        }
    }
    int ib = pa.link_layer == IBV_LINK_LAYER_INFINIBAND;
    for (size_t i = 0; i < n; i++) {
        pi->gids[i].e = tab[i];
        pi->gids[i].cls = rw_gid_classify(&tab[i], ib);
        if (tab[i].ifindex > 0) {
            char nm[IF_NAMESIZE + 1] = "";
            if (if_indextoname((unsigned)tab[i].ifindex, nm))
                snprintf(pi->gids[i].netdev, sizeof(pi->gids[i].netdev), "%s", nm);
        }
    }
    pi->n_gids = n;
    pi->choice_rc = rw_gid_choose(tab, n, ib, ovr, src, &pi->choice);
    if (ib && pi->choice_rc == 0)
        snprintf(pi->choice.reason, sizeof(pi->choice.reason),
                 "InfiniBand port: railwire's verbs rails need RoCE (the handshake carries no LID)");
    free(tab);
    return 0;
}

int rw_verbs_inventory(int gid_index, struct rw_vdev_info **out, size_t *n_out)
{
    struct ibv_device **list;
    struct rw_vdev_info *devs = NULL;
    const char *src = NULL;
    unsigned long env_mtu = 0;
    int num = 0, ovr, rc = 0;

    *out = NULL;
    *n_out = 0;
    ovr = rw_verbs_gid_override(gid_index, &src);
    if (ovr < -1)
        return ovr;
    if (rw_env_uint("RAILWIRE_MTU", 1u << 20, &env_mtu) < 0)
        return RAILWIRE_E_INVALID;
    list = ibv_get_device_list(&num);
    if (!list)
        return RAILWIRE_E_NO_DEVICE;
    if (num == 0)
        goto out;
    devs = calloc((size_t)num, sizeof(*devs));
    if (!devs) {
        rc = RAILWIRE_E_NOMEM;
        goto out;
    }
    for (int i = 0; i < num; i++) {
        struct rw_vdev_info *d = &devs[i];
        struct ibv_device_attr da;
        struct ibv_context *ctx;
        uint64_t g = be64toh(ibv_get_device_guid(list[i]));

        snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
        snprintf(d->node_guid, sizeof(d->node_guid), "%04x:%04x:%04x:%04x",
                 (unsigned)(g >> 48) & 0xffff, (unsigned)(g >> 32) & 0xffff,
                 (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
        ctx = ibv_open_device(list[i]);
        if (!ctx) {
            d->error = RAILWIRE_E_VERBS;
            continue;
        }
        if (ibv_query_device(ctx, &da) == 0 && da.phys_port_cnt > 0) {
            d->ports = calloc(da.phys_port_cnt, sizeof(*d->ports));
            if (!d->ports) {
                ibv_close_device(ctx);
                rc = RAILWIRE_E_NOMEM;
                break;
            }
            d->n_ports = da.phys_port_cnt;
            for (unsigned p = 1; p <= da.phys_port_cnt; p++) {
                int r = fill_port(ctx, p, ovr, src, (unsigned)env_mtu, &d->ports[p - 1]);
                if (r == RAILWIRE_E_NOMEM)
                    rc = r;
                else if (r)
                    d->error = r;
            }
        } else {
            d->error = RAILWIRE_E_VERBS;
        }
        ibv_close_device(ctx);
        if (rc)
            break;
    }
out:
    ibv_free_device_list(list);
    if (rc) {
        rw_verbs_inventory_free(devs, (size_t)num);
        return rc;
    }
    *out = devs;
    *n_out = devs ? (size_t)num : 0;
    return 0;
}

void rw_verbs_inventory_free(struct rw_vdev_info *devs, size_t n)
{
    if (!devs)
        return;
    for (size_t i = 0; i < n; i++) {
        for (unsigned p = 0; p < devs[i].n_ports; p++)
            free(devs[i].ports[p].gids);
        free(devs[i].ports);
    }
    free(devs);
}
