/* SPDX-License-Identifier: MIT */
/* The rail state machine: the only writer of a rail's state, of the
 * railset's live-rail count and of what is derived from the live rails
 * (the fastest live rail's min_inv_gbps, rails_gen, the all-down clock).
 *
 *   state  event                      next   effects
 *   NEW    in_service                 UP     n_live++, rails_gen++, min_inv_gbps
 *   DOWN   in_service (a heal)        UP     n_live++, heals++, all-down cleared
 *   UP     in_service (moved)         UP     rails_gen++ (new ep, same rail)
 *   UP     failed(reason)             DOWN   n_live--, queued as lost; all-down
 *                                            clock starts when none is left
 *   DOWN   failed(reason)             DOWN   nothing (reported twice)
 *   any    control_ended(session)     same   the session's rails lose control_up;
 *                                            queued for the healer
 *   -      all_down_due(now)          -      the bound ran out: expired = 1
 *
 * Detectors (a completion error, an op timeout, ep_check, a post error,
 * a control connection's end) call the report functions; the reactions
 * (failover: kill the ep, take its slices back; healing: schedule an
 * attempt) run later, when dispatch.c drains the queue.  No I/O and no
 * clock here: every function takes `now`.  The public
 * railwire_rail_stats.state is derived from the state (rw_rail_public_state). */
#ifndef RW_RAIL_CLIENT_RAIL_STATE_H
#define RW_RAIL_CLIENT_RAIL_STATE_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include "rail/client/railset_internal.h"

/* What a rail is put in service with; ownership of dom, ep and remote
 * passes to the rail. */
struct rw_rail_service {
    struct rw_domain *dom;
    struct rw_ep *ep;
    struct rw_mr_desc *remote; /* n_remote entries, malloc'd */
    unsigned n_remote;
    struct rw_qp_id peer;
    struct rw_rsess *sess;    /* gains one user */
    unsigned queue_depth;     /* railwire_railset_opts.queue_depth (0 = default) */
};

/* True while rail r is in service. */
static inline int rw_rail_is_up(const struct rw_rail *r)
{
    return r->st == RW_RAIL_UP;
}

/* The public state of rail r. */
static inline enum railwire_rail_state rw_rail_public_state(const struct rw_rail *r)
{
    return r->st == RW_RAIL_UP ? RAILWIRE_RAIL_UP : RAILWIRE_RAIL_DOWN;
}

/* Puts rail i in service with `svc` (connect and heal both come here).
 * The previous dom/ep/remote/sess of the rail must already have been
 * released or retired by the caller.  Returns the state the rail was in. */
enum rw_rail_st rw_rail_in_service(railwire_railset *rs, unsigned i,
                                   const struct rw_rail_service *svc, int64_t now);

/* A detector found rail i dead for `reason` (0: RAILWIRE_E_RAIL_DOWN).
 * UP -> DOWN and queued for the reactions; returns 1, or 0 when the rail
 * was not up (nothing changes). */
int rw_rail_report_failed(railwire_railset *rs, unsigned i, int reason, int64_t now);

/* The control connection of session s ended: its rails keep working but
 * lose control_up, and the healer is told at the next dispatch. */
void rw_rail_report_control_ended(railwire_railset *rs, struct rw_rsess *s);

/* Takes the oldest queued lost rail: returns 1 and *i, or 0 when none. */
int rw_rail_next_lost(railwire_railset *rs, unsigned *i);

/* Takes the queued control-connection end: returns 1 once per report. */
int rw_rail_take_control_ended(railwire_railset *rs);

/* With healing: returns 1 when no rail has been live for the all-down
 * bound at `now` and the bound had not run out yet (it is marked run out;
 * a rail put in service clears it), else 0. */
int rw_rail_all_down_due(railwire_railset *rs, int64_t now);

/* When the all-down bound runs out (INT64_MAX: not running). */
int64_t rw_rail_all_down_deadline(const railwire_railset *rs);

/* True while events wait for dispatch (inline: progress asks every round). */
static inline int rw_rail_events_pending(const railwire_railset *rs)
{
    return rs->ev.pending != 0;
}

#endif
