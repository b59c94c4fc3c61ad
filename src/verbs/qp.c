/* SPDX-License-Identifier: MIT */
/* One RC QP per rail: create, RESET->INIT->RTR->RTS, destroy.  Each failed
 * step's error names the step and what to check. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "verbs/gid_rank.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

#define RW_VERBS_DEF_DEPTH 64u

static int random_psn(uint32_t *psn)
{
    uint32_t v;
    ssize_t r;

    do {
        r = getrandom(&v, sizeof(v), 0);
    } while (r < 0 && errno == EINTR);
    if (r != (ssize_t)sizeof(v)) {
        rw_err("verbs: getrandom for the QP's PSN failed (errno %d)", errno);
        return RAILWIRE_E_SYSTEM;
    }
    *psn = v & 0xffffffu;
    return 0;
}

static int to_init(struct rw_vep *ve)
{
    struct rw_vdom *vd = ve->dom;
    struct ibv_qp_attr a;
    int rc;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = vd->port;
    /* The server's QP answers READ/WRITE; each MR's own access flags then
     * decide (an RO layer has no remote write).  Nobody accesses a client. */
    a.qp_access_flags = vd->role == RW_ROLE_SERVER
                            ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE : 0;
    rc = ibv_modify_qp(ve->qp, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc) {
        rw_err("verbs: %s: QP %u RESET->INIT failed (errno %d): check the port number and that "
               "the port is ACTIVE (`railwire devices`)", vd->base.name, ve->qp->qp_num,
               rw_verbs_errno(rc, errno));
        return RAILWIRE_E_VERBS;
    }
    return 0;
}

/* The ep's completion channel (non-blocking) and its CQ of depth + 1
 * entries.  Returns 0, or an error (logged) with neither left. */
static int make_cq(struct rw_vep *ve, const char *name)
{
    struct rw_vdom *vd = ve->dom;
    ve->ch = ibv_create_comp_channel(vd->dev->ctx);
    if (!ve->ch) {
        rw_err("verbs: %s: ibv_create_comp_channel failed (errno %d): check the open-files limit",
               name, errno);
        return RAILWIRE_E_VERBS;
    }
    int fl = fcntl(ve->ch->fd, F_GETFL);
    if (fl < 0 || fcntl(ve->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        rw_err("verbs: %s: fcntl(O_NONBLOCK) on the completion channel failed (errno %d)",
               name, errno);
        ibv_destroy_comp_channel(ve->ch);
        return RAILWIRE_E_SYSTEM;
    }
    ve->cq = ibv_create_cq(vd->dev->ctx, (int)ve->depth + 1, NULL, ve->ch, 0);
    if (!ve->cq) {
        rw_err("verbs: %s: ibv_create_cq(%u entries) failed (errno %d): lower the queue depth "
               "or check the device's CQ limits", name, ve->depth + 1, errno);
        ibv_destroy_comp_channel(ve->ch);
        return RAILWIRE_E_VERBS;
    }
    return 0;
}

int rw_vep_create(struct rw_domain *dom, const struct rw_ep_cfg *cfg, struct rw_ep **out)
{
    struct rw_vdom *vd = rw_container_of(dom, struct rw_vdom, base);
    struct ibv_qp_init_attr qa;
    struct rw_vep *ve;
    unsigned depth = cfg && cfg->depth ? cfg->depth : RW_VERBS_DEF_DEPTH;
    int rc;

    if (depth > dom->max_qp_wr)
        depth = dom->max_qp_wr;
    ve = calloc(1, sizeof(*ve));
    if (!ve)
        return RAILWIRE_E_NOMEM;
    ve->dom = vd;
    ve->depth = depth;
    ve->ring = calloc(depth, sizeof(*ve->ring));
    if (!ve->ring) {
        rc = RAILWIRE_E_NOMEM;
        goto err_free;
    }
    rc = make_cq(ve, dom->name);
    if (rc)
        goto err_ring;
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = ve->cq;
    qa.recv_cq = ve->cq;
    qa.cap.max_send_wr = depth;
    qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.qp_context = ve; /* async events name the ep (events.c) */
    ve->qp = ibv_create_qp(vd->dev->pd, &qa);
    if (!ve->qp) {
        rw_err("verbs: %s: ibv_create_qp(RC, %u WRs) failed (errno %d): lower the queue depth "
               "or check the device's QP limits", dom->name, depth, errno);
        rc = RAILWIRE_E_VERBS;
        goto err_cq;
    }
    rc = to_init(ve);
    if (rc)
        goto err_qp;
    uint32_t psn;
    rc = random_psn(&psn);
    if (rc)
        goto err_qp;
    ve->base.dom = dom;
    ve->base.local.qpn = ve->qp->qp_num;
    ve->base.local.psn = psn;
    memcpy(ve->base.local.gid, vd->gid.raw, 16);
    ve->state = RW_VEP_INIT;
    rw_debug("verbs: %s: created QP %u (psn %u, depth %u)", dom->name, ve->qp->qp_num, psn, depth);
    *out = &ve->base;
    return 0;

err_qp:
    ibv_destroy_qp(ve->qp);
err_cq:
    ibv_destroy_cq(ve->cq);
    ibv_destroy_comp_channel(ve->ch);
err_ring:
    free(ve->ring);
err_free:
    free(ve);
    return rc;
}

int rw_vep_connect(struct rw_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    struct rw_vdom *vd = ve->dom;
    struct ibv_qp_attr a;
    char rg[64], lg[64];
    int rc;

    (void)timeout_ms; /* modify_qp is synchronous and local */
    if (ve->state != RW_VEP_INIT) {
        rw_err("verbs: %s: QP %u: connect called twice or after a failure", vd->base.name,
               ve->qp->qp_num);
        return RAILWIRE_E_STATE;
    }
    rw_gid_format(remote->gid, rg, sizeof(rg));
    rw_gid_format(vd->gid.raw, lg, sizeof(lg));

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = (enum ibv_mtu)vd->mtu_code;
    a.dest_qp_num = remote->qpn & 0xffffffu;
    a.rq_psn = remote->psn & 0xffffffu;
    a.max_dest_rd_atomic = vd->max_dest_rd_atomic;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, remote->gid, 16);
    a.ah_attr.grh.sgid_index = (uint8_t)vd->gid_index;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = vd->port;
    rc = ibv_modify_qp(ve->qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) {
        rw_err("verbs: %s: QP %u INIT->RTR failed (errno %d) towards QP %u at GID %s from local "
               "GID index %d (%s), path MTU %u: check the MTU (RAILWIRE_MTU) and the GID "
               "(RAILWIRE_GID_INDEX) on both sides, and that the peer's GID is reachable from "
               "this port", vd->base.name, ve->qp->qp_num, rw_verbs_errno(rc, errno),
               remote->qpn, rg, vd->gid_index, lg, rw_mtu_bytes(vd->mtu_code));
        ve->state = RW_VEP_DEAD;
        ve->dead_err = RAILWIRE_E_QP_RTR;
        return RAILWIRE_E_QP_RTR;
    }

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = vd->timeout;
    a.retry_cnt = vd->retry_cnt;
    a.rnr_retry = vd->rnr_retry;
    a.sq_psn = ep->local.psn & 0xffffffu;
    a.max_rd_atomic = vd->max_rd_atomic;
    rc = ibv_modify_qp(ve->qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc) {
        rw_err("verbs: %s: QP %u RTR->RTS failed (errno %d): check the timeout "
               "(RAILWIRE_QP_TIMEOUT 0..31) and retry (RAILWIRE_QP_RETRY 0..7) settings and the "
               "device's max_qp_init_rd_atom", vd->base.name, ve->qp->qp_num,
               rw_verbs_errno(rc, errno));
        ve->state = RW_VEP_DEAD;
        ve->dead_err = RAILWIRE_E_VERBS;
        return RAILWIRE_E_VERBS;
    }
    ve->state = RW_VEP_RTS;
    /* Port errors seen from now on concern this QP (events.c). */
    rw_vdev_drain_events(vd->dev);
    ve->port_gen = atomic_load(&vd->dev->port_err_gen[vd->port]);
    if (vd->post_thread && vd->role == RW_ROLE_CLIENT) {
        rc = rw_vposter_start(ve);
        if (rc) {
            ve->state = RW_VEP_DEAD;
            ve->dead_err = rc;
            return rc;
        }
    }
    rw_debug("verbs: %s: QP %u connected to QP %u at %s (path MTU %u)", vd->base.name,
             ve->qp->qp_num, remote->qpn, rg, rw_mtu_bytes(vd->mtu_code));
    return 0;
}

void rw_vep_destroy(struct rw_ep *ep)
{
    if (!ep)
        return;
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    const char *name = ve->dom->base.name;
    int rc;

    /* Nothing may still be in flight on our buffers once we return. */
    if (ve->hw_seq != ve->next_seq)
        rw_vep_kill(ep);
    rw_vposter_stop(ve);
    rc = ibv_destroy_qp(ve->qp);
    if (rc)
        rw_warn("verbs: %s: ibv_destroy_qp failed (errno %d)", name, rw_verbs_errno(rc, errno));
    rc = ibv_destroy_cq(ve->cq);
    if (rc)
        rw_warn("verbs: %s: ibv_destroy_cq failed (errno %d)", name, rw_verbs_errno(rc, errno));
    rc = ibv_destroy_comp_channel(ve->ch);
    if (rc)
        rw_warn("verbs: %s: ibv_destroy_comp_channel failed (errno %d)", name,
                rw_verbs_errno(rc, errno));
    free(ve->ring);
    free(ve);
}
