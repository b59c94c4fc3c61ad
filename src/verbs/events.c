/* SPDX-License-Identifier: MIT */
/* Device async events: a port that went down (IBV_EVENT_PORT_ERR) or a QP
 * the device declared broken (QP fatal, request or access errors) ends a
 * rail at once, without waiting for the op timeout or for every transport
 * retry.  The events are drained without blocking by whichever ep asks
 * (rw_vep_check, called by the rail layer about every 100 ms while work is
 * outstanding) and recorded on the device (port errors) or the ep (QP
 * faults, through the QP's context). */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

void rw_vdev_drain_events(struct rw_vdev *d)
{
    struct ibv_async_event ev;

    pthread_mutex_lock(&d->ev_lock);
    while (ibv_get_async_event(d->ctx, &ev) == 0) {
        switch (ev.event_type) {
        case IBV_EVENT_PORT_ERR:
            if (ev.element.port_num <= RW_VERBS_MAX_PORTS)
                atomic_fetch_add(&d->port_err_gen[ev.element.port_num], 1u);
            rw_warn("verbs: %s:%d: port error event: the link went down", d->name,
                    ev.element.port_num);
            break;
        case IBV_EVENT_PORT_ACTIVE:
            rw_info("verbs: %s:%d: port active event: the link is back (a rail comes back on it "
                    "only once a heal's probe READ succeeds)", d->name, ev.element.port_num);
            break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR: {
            struct rw_vep *ve = ev.element.qp ? ev.element.qp->qp_context : NULL;
            if (ve)
                atomic_store(&ve->fatal, 1);
            rw_warn("verbs: %s: QP %u: %s event: the QP is broken", d->name,
                    ev.element.qp ? ev.element.qp->qp_num : 0u, ibv_event_type_str(ev.event_type));
            break;
        }
        default:
            rw_debug("verbs: %s: async event %s", d->name, ibv_event_type_str(ev.event_type));
            break;
        }
        ibv_ack_async_event(&ev);
    }
    pthread_mutex_unlock(&d->ev_lock);
}

/* Moves the QP to ERR so its outstanding WRs flush with errors. */
static void fail_qp(struct rw_vep *ve, const char *why)
{
    struct ibv_qp_attr a;

    rw_err("verbs: %s: QP %u: %s; the rail is dead (check the cable/netdev, `railwire devices`)",
           ve->dom->base.name, ve->qp->qp_num, why);
    ve->state = RW_VEP_DEAD;
    ve->dead_err = RAILWIRE_E_RAIL_DOWN;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    int rc = ibv_modify_qp(ve->qp, &a, IBV_QP_STATE);
    if (rc)
        rw_warn("verbs: %s: QP %u: moving to ERR failed (errno %d)", ve->dom->base.name,
                ve->qp->qp_num, rw_verbs_errno(rc, errno));
}

int rw_vep_check(struct rw_ep *ep)
{
    struct rw_vep *ve = rw_container_of(ep, struct rw_vep, base);
    struct ibv_port_attr pa;

    if (ve->state != RW_VEP_RTS)
        return ve->state == RW_VEP_DEAD ? ve->dead_err : 0;
    rw_vdev_drain_events(ve->dom->dev);
    if (atomic_load(&ve->fatal)) {
        fail_qp(ve, "the device reported a fatal QP event");
        return RAILWIRE_E_RAIL_DOWN;
    }
    if (atomic_load(&ve->dom->dev->port_err_gen[ve->dom->port]) != ve->port_gen &&
        ibv_query_port(ve->dom->dev->ctx, ve->dom->port, &pa) == 0 &&
        pa.state != IBV_PORT_ACTIVE) {
        fail_qp(ve, "a port error event arrived and the port is not ACTIVE");
        return RAILWIRE_E_RAIL_DOWN;
    }
    return 0;
}
