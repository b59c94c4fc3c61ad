/* SPDX-License-Identifier: MIT */
/* The process-wide table of opened devices (context + PD + MR cache). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "verbs/gid_rank.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rw_vdev *devs;

static int open_dev(const char *name, struct rw_vdev **out)
{
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    struct rw_vdev *d;
    int num = 0, rc, e;

    list = ibv_get_device_list(&num);
    if (!list) {
        rw_err("verbs: ibv_get_device_list failed (errno %d): is the RDMA stack (ib_uverbs) loaded?",
               errno);
        return RAILWIRE_E_NO_DEVICE;
    }
    for (int i = 0; i < num; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            ctx = ibv_open_device(list[i]);
            e = errno;
            if (!ctx) {
                ibv_free_device_list(list);
                rw_err("verbs: ibv_open_device(%s) failed (errno %d): check permissions on "
                       "/dev/infiniband/uverbs*", name, e);
                return RAILWIRE_E_VERBS;
            }
            break;
        }
    }
    ibv_free_device_list(list);
    if (!ctx) {
        rw_err("verbs: no RDMA device named '%s' (%d devices present): check RAILWIRE_DEVICES "
               "and `railwire devices`", name, num);
        return RAILWIRE_E_NO_DEVICE;
    }

    d = calloc(1, sizeof(*d));
    if (!d) {
        rc = RAILWIRE_E_NOMEM;
        goto err_close;
    }
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->ctx = ctx;
    e = ibv_query_device(ctx, &d->attr);
    if (e) {
        rw_err("verbs: ibv_query_device(%s) failed (errno %d)", name, rw_verbs_errno(e, errno));
        rc = RAILWIRE_E_VERBS;
        goto err_free;
    }
    d->pd = ibv_alloc_pd(ctx);
    if (!d->pd) {
        rw_err("verbs: ibv_alloc_pd(%s) failed (errno %d)", name, errno);
        rc = RAILWIRE_E_VERBS;
        goto err_free;
    }
    pthread_mutex_init(&d->mr_lock, NULL);
    pthread_mutex_init(&d->ev_lock, NULL);
    /* Async events are drained without blocking (events.c). */
    int fl = fcntl(ctx->async_fd, F_GETFL);
    if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
        rw_warn("verbs: %s: cannot make the async event fd non-blocking (errno %d); port and "
                "QP events are not read", name, errno);
    d->refs = 1;
    *out = d;
    return 0;

err_free:
    free(d);
err_close:
    ibv_close_device(ctx);
    return rc;
}

int rw_vdev_get(const char *name, struct rw_vdev **out)
{
    int rc = 0;
    struct rw_vdev *d;

    pthread_mutex_lock(&devs_lock);
    for (d = devs; d; d = d->next) {
        if (!strcmp(d->name, name)) {
            d->refs++;
            *out = d;
            goto out;
        }
    }
    rc = open_dev(name, &d);
    if (rc == 0) {
        d->next = devs;
        devs = d;
        *out = d;
    }
out:
    pthread_mutex_unlock(&devs_lock);
    return rc;
}

void rw_vdev_ref(struct rw_vdev *d)
{
    pthread_mutex_lock(&devs_lock);
    d->refs++;
    pthread_mutex_unlock(&devs_lock);
}

void rw_vdev_put(struct rw_vdev *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&devs_lock);
    if (--d->refs > 0) {
        pthread_mutex_unlock(&devs_lock);
        return;
    }
    for (struct rw_vdev **pp = &devs; *pp; pp = &(*pp)->next) {
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    }
    pthread_mutex_unlock(&devs_lock);

    if (d->mrs)
        rw_warn("verbs: %s closed with registrations still cached (a missing mr_dereg)", d->name);
    int e = ibv_dealloc_pd(d->pd);
    if (e)
        rw_warn("verbs: ibv_dealloc_pd(%s) failed (errno %d): resources still use the PD",
                d->name, rw_verbs_errno(e, errno));
    e = ibv_close_device(d->ctx);
    if (e)
        rw_warn("verbs: ibv_close_device(%s) failed (errno %d)", d->name, rw_verbs_errno(e, errno));
    pthread_mutex_destroy(&d->mr_lock);
    pthread_mutex_destroy(&d->ev_lock);
    free(d);
}

static enum rw_gid_type gid_type(unsigned t)
{
    switch (t) {
    case IBV_GID_TYPE_ROCE_V1: return RW_GID_TYPE_ROCE_V1;
    case IBV_GID_TYPE_ROCE_V2: return RW_GID_TYPE_ROCE_V2;
    default: return RW_GID_TYPE_IB;
    }
}

int rw_vport_gids(struct ibv_context *ctx, uint8_t port, struct rw_gid_entry **out, size_t *n)
{
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    struct ibv_gid_entry *ents = NULL;
    struct rw_gid_entry *res = NULL;
    size_t max = 0, cnt = 0;
    ssize_t got;
    int e;

    *out = NULL;
    *n = 0;
    e = ibv_query_device(ctx, &da);
    if (e) {
        rw_err("verbs: ibv_query_device(%s) failed (errno %d)", ibv_get_device_name(ctx->device),
               rw_verbs_errno(e, errno));
        return RAILWIRE_E_VERBS;
    }
    for (unsigned p = 1; p <= da.phys_port_cnt; p++) {
        if (ibv_query_port(ctx, (uint8_t)p, &pa) == 0)
            max += (size_t)pa.gid_tbl_len;
    }
    if (max == 0)
        return 0;
    ents = calloc(max, sizeof(*ents));
    if (!ents)
        return RAILWIRE_E_NOMEM;
    got = ibv_query_gid_table(ctx, ents, max, 0);
    if (got < 0) {
        rw_err("verbs: ibv_query_gid_table(%s) failed (errno %d)", ibv_get_device_name(ctx->device),
               rw_verbs_errno((int)got, errno));
        free(ents);
        return RAILWIRE_E_VERBS;
    }
    if (got > 0) {
        res = calloc((size_t)got, sizeof(*res));
        if (!res) {
            free(ents);
            return RAILWIRE_E_NOMEM;
        }
    }
    for (ssize_t i = 0; i < got; i++) {
        if (ents[i].port_num != port)
            continue;
        res[cnt].index = ents[i].gid_index;
        memcpy(res[cnt].gid, ents[i].gid.raw, 16);
        res[cnt].type = gid_type(ents[i].gid_type);
        res[cnt].ifindex = (int)ents[i].ndev_ifindex;
        cnt++;
    }
    free(ents);
    if (cnt == 0) {
        free(res);
        res = NULL;
    }
    *out = res;
    *n = cnt;
    return 0;
}
