/* SPDX-License-Identifier: MIT */
/* The data path: post READ/WRITE chains with selective signalling, poll the
 * CQ, report one completion per WR in posting order, kill and drain.
 *
 * Every WR gets a sequence number (its ibv wr_id).  RC completes a send
 * queue in order, so a CQE for sequence s also settles every unsignaled WR
 * before it; the ring keeps each WR until it is reported, and ep_poll
 * reports every WR (signaled or not) exactly once, in order, like tcp. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/time.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

#define RW_VERBS_POST_BATCH 32
#define RW_VERBS_POLL_BATCH 16
#define RW_VERBS_DRAIN_MS 5000
#define RW_VERBS_LINK_CHECK_MS 100

static struct rw_vslot *slot(struct rw_vep *ve, uint64_t seq)
{
    return &ve->ring[seq % ve->depth];
}

static void mark_dead(struct rw_vep *ve, int err)
{
    if (ve->state != RW_VEP_DEAD) {
        ve->state = RW_VEP_DEAD;
        ve->dead_err = err;
    }
}

/* Returns 1 if the ep's port is not ACTIVE any more. */
static int port_down(struct rw_vep *ve)
{
    struct ibv_port_attr pa;
    if (ibv_query_port(ve->dom->dev->ctx, ve->dom->port, &pa))
        return 0;
    return pa.state != IBV_PORT_ACTIVE;
}

/* Settles every WR up to `seq` from one CQE. */
static void settle(struct rw_vep *ve, const struct ibv_wc *wc)
{
    uint64_t seq = wc->wr_id;
    int code = rw_wc_status_code(wc->status);

    if (seq < ve->hw_seq || seq >= ve->next_seq) {
        rw_warn("verbs: %s: QP %u: completion for unknown WR %llu ignored", ve->dom->base.name,
                ve->qp->qp_num, (unsigned long long)seq);
        return;
    }
    for (uint64_t s = ve->hw_seq; s < seq; s++) {
        struct rw_vslot *sl = slot(ve, s);
        /* Earlier WRs finished before this one; once the QP failed, none did. */
        sl->status = ve->state == RW_VEP_DEAD ? RAILWIRE_E_RAIL_DOWN : 0;
        sl->done = 1;
    }
    struct rw_vslot *sl = slot(ve, seq);
    sl->status = code;
    sl->done = 1;
    ve->hw_seq = seq + 1;
    if (code == 0)
        return;
    if (code != RAILWIRE_E_RAIL_DOWN && code != RAILWIRE_E_REMOTE_ACCESS &&
        ve->state != RW_VEP_DEAD && port_down(ve)) {
        /* rxe fails sends with a local QP error once its netdev is down, a
         * NIC with retry-exceeded: either way the link went away. */
        rw_err("verbs: %s: QP %u: %s of %u bytes failed (%s) and the port is no longer "
               "ACTIVE: the link went down; the rail is dead (check the cable/netdev, "
               "`railwire devices`)", ve->dom->base.name, ve->qp->qp_num,
               sl->opcode == RW_OP_READ ? "READ" : "WRITE", sl->len, ibv_wc_status_str(wc->status));
        sl->status = code = RAILWIRE_E_RAIL_DOWN;
        mark_dead(ve, code);
        return;
    }
    if (code == RAILWIRE_E_RAIL_DOWN || ve->state == RW_VEP_DEAD) {
        rw_debug("verbs: %s: QP %u: WR %llu %s", ve->dom->base.name, ve->qp->qp_num,
                 (unsigned long long)seq, ibv_wc_status_str(wc->status));
    } else {
        rw_err("verbs: %s: QP %u: %s of %u bytes failed: %s (vendor error 0x%x): %s; the rail "
               "is dead", ve->dom->base.name, ve->qp->qp_num,
               sl->opcode == RW_OP_READ ? "READ" : "WRITE",
               sl->len, ibv_wc_status_str(wc->status), wc->vendor_err, rw_wc_status_hint(wc->status));
    }
    mark_dead(ve, code);
}

/* Drains up to one batch of CQEs.  Returns the count or a negative code. */
static int drain_cq(struct rw_vep *ve)
{
    struct ibv_wc wc[RW_VERBS_POLL_BATCH];
    int n = ibv_poll_cq(ve->cq, RW_VERBS_POLL_BATCH, wc);

    if (n < 0) {
        rw_err("verbs: %s: QP %u: ibv_poll_cq failed (errno %d): the CQ is broken; the rail is dead",
               ve->dom->base.name, ve->qp->qp_num, rw_verbs_errno(n, errno));
        mark_dead(ve, RAILWIRE_E_VERBS);
        return RAILWIRE_E_VERBS;
    }
    for (int i = 0; i < n; i++)
        settle(ve, &wc[i]);
    return n;
}

static int valid_len(struct rw_vep *ve, const struct rw_wr *r)
{
    if (r->length > 0 && r->length <= ve->dom->base.max_msg)
        return 1;
    rw_err("verbs: %s: WR of %u bytes outside 1..%u", ve->dom->base.name, r->length,
           ve->dom->base.max_msg);
    return 0;
}

static void fill_wr(struct rw_vep *ve, const struct rw_wr *r, uint64_t seq, struct ibv_send_wr *w,
                    struct ibv_sge *sg)
{
    sg->addr = (uint64_t)(uintptr_t)r->local;
    sg->length = r->length;
    sg->lkey = r->mr->lkey;
    memset(w, 0, sizeof(*w));
    w->wr_id = seq;
    w->sg_list = sg;
    w->num_sge = 1;
    w->opcode = r->opcode == RW_OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    w->send_flags = r->signaled ? IBV_SEND_SIGNALED : 0;
    w->wr.rdma.remote_addr = r->remote_addr;
    w->wr.rdma.rkey = r->rkey;
    (void)ve;
}

/* Poster-thread mode: prepare the WRs in their ring slots and hand them to
 * the thread.  A slot is reused only once its WR was both posted and
 * reported. */
static int post_async(struct rw_vep *ve, const struct rw_wr *wrs, size_t n)
{
    uint64_t sent = atomic_load(&ve->sent_seq);
    uint64_t busy_from = sent < ve->head_seq ? sent : ve->head_seq;
    size_t room = ve->depth - (size_t)(ve->next_seq - busy_from);
    size_t k = n < room ? n : room;

    for (size_t i = 0; i < k; i++) {
        if (!valid_len(ve, &wrs[i])) {
            if (i == 0)
                return RAILWIRE_E_INVALID;
            k = i;
            break;
        }
        struct rw_vslot *sl = slot(ve, ve->next_seq + i);
        fill_wr(ve, &wrs[i], ve->next_seq + i, &sl->wr, &sl->sge);
        if (i + 1 == k)
            sl->wr.send_flags |= IBV_SEND_SIGNALED;
        sl->wr_id = wrs[i].wr_id;
        sl->len = wrs[i].length;
        sl->signaled = (sl->wr.send_flags & IBV_SEND_SIGNALED) != 0;
        sl->opcode = (uint8_t)wrs[i].opcode;
        sl->done = 0;
        sl->status = 0;
    }
    if (k == 0)
        return 0;
    ve->next_seq += k;
    rw_vposter_kick(ve, ve->next_seq);
    return (int)k;
}

int rw_vep_post(struct rw_ep *ep, const struct rw_wr *wrs, size_t n)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    struct ibv_send_wr w[RW_VERBS_POST_BATCH], *bad = NULL;
    struct ibv_sge sg[RW_VERBS_POST_BATCH];
    size_t done = 0;

    if (ve->state == RW_VEP_DEAD)
        return RAILWIRE_E_RAIL_DOWN;
    if (ve->state != RW_VEP_RTS) {
        rw_err("verbs: %s: post before the rail was connected", ve->dom->base.name);
        return RAILWIRE_E_STATE;
    }
    if (rw_vposter_wanted(ve))
        return post_async(ve, wrs, n);
    while (done < n) {
        size_t room = ve->depth - (size_t)(ve->next_seq - ve->head_seq);
        size_t k = n - done;
        if (k > room)
            k = room;
        if (k > RW_VERBS_POST_BATCH)
            k = RW_VERBS_POST_BATCH;
        if (k == 0)
            break;
        for (size_t i = 0; i < k; i++) {
            const struct rw_wr *r = &wrs[done + i];
            if (!valid_len(ve, r)) {
                if (i == 0 && done == 0)
                    return RAILWIRE_E_INVALID;
                k = i;
                n = done + i; /* stop after the valid prefix */
                break;
            }
            fill_wr(ve, r, ve->next_seq + i, &w[i], &sg[i]);
        }
        for (size_t i = 0; i < k; i++)
            w[i].next = i + 1 < k ? &w[i + 1] : NULL;
        if (k == 0)
            break;
        /* The last WR of every post is signaled, so no WR can wait forever
         * for a later signaled one that never comes. */
        w[k - 1].send_flags |= IBV_SEND_SIGNALED;
        int rc = ibv_post_send(ve->qp, w, &bad);
        size_t posted = k;
        if (rc) {
            int en = rw_verbs_errno(rc, errno);
            posted = bad ? (size_t)(bad - w) : 0;
            if (posted > k)
                posted = 0;
            if (posted > 0 && !(w[posted - 1].send_flags & IBV_SEND_SIGNALED))
                rw_warn("verbs: %s: partial post ended on an unsignaled WR", ve->dom->base.name);
            if (en != ENOMEM) {
                rw_err("verbs: %s: QP %u: ibv_post_send failed (errno %d): the rail is dead",
                       ve->dom->base.name, ve->qp->qp_num, en);
                mark_dead(ve, RAILWIRE_E_VERBS);
            }
        }
        for (size_t i = 0; i < posted; i++) {
            struct rw_vslot *sl = slot(ve, ve->next_seq + i);
            sl->wr_id = wrs[done + i].wr_id;
            sl->len = wrs[done + i].length;
            sl->signaled = (w[i].send_flags & IBV_SEND_SIGNALED) != 0;
            sl->opcode = (uint8_t)wrs[done + i].opcode;
            sl->done = 0;
            sl->status = 0;
        }
        ve->next_seq += posted;
        done += posted;
        if (rc)
            break;
    }
    if (ve->poster_on)
        rw_vposter_posted_inline(ve);
    if (done == 0 && ve->state == RW_VEP_DEAD)
        return RAILWIRE_E_RAIL_DOWN;
    return (int)done;
}

/* With WRs outstanding and no completion, checks the port now and then: a
 * link that went down fails the QP at once (its WRs flush) instead of after
 * every transport retry, or never on providers that just stop. */
static void check_link(struct rw_vep *ve)
{
    int64_t now = rw_now_ms();
    struct ibv_qp_attr a;

    if (ve->state != RW_VEP_RTS || now - ve->port_check_ms < RW_VERBS_LINK_CHECK_MS)
        return;
    ve->port_check_ms = now;
    if (!port_down(ve))
        return;
    rw_err("verbs: %s: QP %u: the port is no longer ACTIVE (the link went down) with %llu WRs "
           "outstanding; failing the rail (check the cable/netdev, `railwire devices`)",
           ve->dom->base.name, ve->qp->qp_num, (unsigned long long)(ve->next_seq - ve->hw_seq));
    mark_dead(ve, RAILWIRE_E_RAIL_DOWN);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    int rc = ibv_modify_qp(ve->qp, &a, IBV_QP_STATE);
    if (rc)
        rw_warn("verbs: %s: QP %u: moving to ERR failed (errno %d)", ve->dom->base.name,
                ve->qp->qp_num, rw_verbs_errno(rc, errno));
}

int rw_vep_poll(struct rw_ep *ep, struct rw_wc *wcs, int max)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    int got = 0;

    if (ve->poster_on && atomic_load(&ve->post_err)) {
        rw_err("verbs: %s: QP %u: ibv_post_send failed in the poster thread (errno %d): the rail "
               "is dead", ve->dom->base.name, ve->qp->qp_num, atomic_load(&ve->post_err));
        mark_dead(ve, RAILWIRE_E_VERBS);
        rw_vep_kill(ep);
    }

    while (got < max) {
        while (got < max && ve->head_seq < ve->hw_seq) {
            struct rw_vslot *sl = slot(ve, ve->head_seq);
            wcs[got].wr_id = sl->wr_id;
            wcs[got].status = sl->status;
            wcs[got].byte_len = sl->status == 0 ? sl->len : 0;
            got++;
            ve->head_seq++;
        }
        if (got == max || ve->hw_seq == ve->next_seq)
            break;
        int n = drain_cq(ve);
        if (n == 0 && got == 0)
            check_link(ve);
        if (n <= 0)
            break;
        ve->port_check_ms = rw_now_ms();
    }
    return got;
}

int rw_vep_wait_fd(struct rw_ep *ep)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    return ve->ch->fd;
}

int rw_vep_arm(struct rw_ep *ep)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    struct ibv_cq *cq;
    void *ctx;
    unsigned events = 0;

    /* The channel fd is non-blocking: collect every pending event. */
    while (ibv_get_cq_event(ve->ch, &cq, &ctx) == 0)
        events++;
    if (events)
        ibv_ack_cq_events(ve->cq, events);
    int rc = ibv_req_notify_cq(ve->cq, 0);
    if (rc) {
        rw_err("verbs: %s: ibv_req_notify_cq failed (errno %d)", ve->dom->base.name,
               rw_verbs_errno(rc, errno));
        return RAILWIRE_E_VERBS;
    }
    return 0;
}

void rw_vep_kill(struct rw_ep *ep)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    struct ibv_qp_attr a;
    int64_t deadline = rw_now_ms() + RW_VERBS_DRAIN_MS;

    /* No more posts: WRs the poster thread never handed to the QP cannot
     * complete and are failed below without waiting. */
    int async = ve->poster_on;
    rw_vposter_stop(ve);
    uint64_t sent = async ? atomic_load(&ve->sent_seq) : ve->next_seq;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    int rc = ibv_modify_qp(ve->qp, &a, IBV_QP_STATE);
    if (rc)
        rw_warn("verbs: %s: QP %u: moving to ERR failed (errno %d)", ve->dom->base.name,
                ve->qp->qp_num, rw_verbs_errno(rc, errno));
    mark_dead(ve, RAILWIRE_E_RAIL_DOWN);
    /* Every posted WR completes (flushed) once the QP is in ERR; wait for
     * all of them so none touches its local buffer after we return. */
    while (ve->hw_seq < sent && rw_now_ms() < deadline) {
        int n = drain_cq(ve);
        if (n < 0)
            break;
        if (n == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    if (ve->hw_seq < ve->next_seq) {
        if (ve->hw_seq < sent)
            rw_warn("verbs: %s: QP %u: %llu WRs did not flush within %d ms after ERR; "
                    "reporting them as failed", ve->dom->base.name, ve->qp->qp_num,
                    (unsigned long long)(sent - ve->hw_seq), RW_VERBS_DRAIN_MS);
        for (uint64_t s = ve->hw_seq; s < ve->next_seq; s++) {
            slot(ve, s)->status = RAILWIRE_E_RAIL_DOWN;
            slot(ve, s)->done = 1;
        }
        ve->hw_seq = ve->next_seq;
    }
}
