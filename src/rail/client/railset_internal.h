/* SPDX-License-Identifier: MIT */
/* The railset's private structures, shared by the files of src/rail/ that
 * implement the client: railset.c (life cycle, stats), mr.c, stripe.c
 * (slicing and rail choice), progress.c (completions, poll/wait),
 * failover.c (dead rails, re-issue) and railset_connect.c (the handshake).
 *
 * rw_railset_create_local() builds a railset over rails that are already
 * connected; railwire_railset_connect() uses it after the handshake, and the
 * unit tests use it over a mock transport, with no network. */
#ifndef RW_RAIL_RAILSET_INTERNAL_H
#define RW_RAIL_RAILSET_INTERNAL_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <railwire/railset.h>

#include "common/list.h"
#include "gpu/mem_desc.h"
#include "gpu/topology.h"
#include "transport/transport.h"
#include "wire/wire.h"

#define RW_DEFAULT_SLICE_SIZE (512u * 1024u)
#define RW_DEFAULT_QUEUE_DEPTH 16u
#define RW_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define RW_DEFAULT_IO_TIMEOUT_MS 10000
#define RW_DEFAULT_OP_TIMEOUT_MS 10000
#define RW_POST_BATCH_MAX 32u         /* slices posted to one rail per scheduling round */

struct rw_xfer;
struct rw_healer;

/* A rail's state (rail_state.h is its only writer). */
enum rw_rail_st { RW_RAIL_NEW = 0, RW_RAIL_UP, RW_RAIL_DOWN };

/* Events reported by the detectors and not yet reacted to (rail_state.c
 * writes them, dispatch.c drains them). */
struct rw_rail_events {
    unsigned pending;         /* n_lost + control_ended: one test on the hot path */
    unsigned lost_head, n_lost;
    int control_ended;        /* a session's control connection ended */
    uint8_t lost[RAILWIRE_MAX_RAILS]; /* rails that went down, oldest first (a ring) */
};

/* A thread that waits for completions while another one (the poller)
 * sleeps in poll() for everybody.  Lives on the waiting thread's stack,
 * linked in the railset's list while it waits; woken one at a time: for
 * its own transfer (handle != 0, a synchronous helper), for an async
 * completion (handle 0, railwire_wait), or to take over the polling. */
struct rw_waiter {
    struct rw_list_node link; /* in the railset's waiters */
    pthread_cond_t cond;
    railwire_handle handle;
    int woken;
};

/* One session (one control connection) some rails of the railset belong
 * to.  The railset opens session 0; every successful heal adds one.  Freed
 * once no rail belongs to it any more. */
struct rw_rsess {
    unsigned id;
    int fd;                   /* control connection, -1 if none or closed */
    int had_ctrl;             /* it had a control connection (fd was >= 0) */
    int ctrl_up;              /* the control connection is still open */
    unsigned users;           /* rails that belong to it */
    struct rw_rsess *next;
};

/* One piece of a transfer, carried by one work request.  Lives in its
 * transfer's slice array; linked into exactly one list at a time: the
 * railset's pending FIFO or its rail's outstanding list (oldest first). */
struct rw_slice {
    struct rw_list_node link; /* first: a NULL node is a NULL slice */
    struct rw_xfer *xfer;
    size_t offset;            /* from the start of the transfer */
    uint32_t length;
    int rail;                 /* rail carrying it, -1 while pending */
    int64_t posted_ms;        /* when it was posted on `rail` */
    unsigned tries;           /* times it was posted (and not merely taken back) */
};

/* The slice of list node n (NULL for NULL). */
static inline struct rw_slice *rw_slice_of(struct rw_list_node *n)
{
    return rw_list_entry_or_null(n, struct rw_slice, link);
}

/* One submitted transfer.  Owned by the railset from submit until it has
 * been delivered by poll/wait (or the railset is closed). */
struct rw_xfer {
    struct rw_list_node link; /* first; in the active or done list (link.next: in the pool) */
    railwire_handle handle;
    railwire_op op;
    int status;               /* first error of any slice, 0 while fine */
    int sync_owned;           /* a synchronous helper waits for it: poll/wait never deliver it */
    struct rw_waiter *waiter; /* that helper, woken when it finishes */
    size_t n_slices;
    size_t n_done;            /* slices finished (success or final error) */
    struct rw_slice *slices;  /* n_slices entries: `one` or owned */
    /* cancel.c, xfer_deadline.c, wait_handle.c: */
    int64_t deadline_ms;      /* op.timeout_ms after submit, 0 = none */
    int cancel;               /* RAILWIRE_E_CANCELED/_TIMEOUT once cancelled, else 0 */
    int reserved;             /* RAILWIRE_OP_F_RESERVED: only railwire_wait_handle returns it */
    unsigned claims;          /* threads waiting for it in railwire_wait_handle */
    struct rw_slice one;      /* the slice of a single-slice transfer (no allocation) */
};

/* One rail: a domain and a connected ep, plus where the remote memory is as
 * seen through this rail (each NIC may have its own base and rkey). */
struct rw_rail {
    unsigned index;
    struct rw_domain *dom;    /* owned */
    struct rw_ep *ep;         /* owned */
    struct rw_mr_desc *remote; /* owned: RO layers or the RW arena (1 entry) */
    unsigned n_remote;
    unsigned depth;           /* bound on outstanding slices */
    uint64_t byte_cap;        /* bound on inflight_bytes (rw_rail_byte_cap) */
    int blocked;              /* ep_post accepted fewer than offered: wait for a completion */
    uint64_t inflight_bytes;
    struct rw_list outstanding; /* slices; change it through rw_rail_out_push/_remove */
    int busy_pos;             /* index in the railset's busy set, -1 while nothing is outstanding */
    uint64_t armed_round;     /* rs->arm_round when the poller last put it in its poll set */
    struct rw_qp_id peer;     /* the server's identity of this rail (its GID says where) */
    double inv_gbps;          /* 1 / stats.gbps: the load's scale, kept for the rail choice */
    struct rw_rsess *sess;    /* the session it belongs to */
    int64_t up_since_ms;      /* when it was (last) put in service */
    enum rw_rail_st st;       /* written by rail_state.c only */
    railwire_rail_stats stats; /* counters; .state is derived (rw_rail_public_state) */
};

/* A local registration: one rw_mr per rail's domain. */
struct railwire_mr {
    struct rw_list_node link; /* in the railset's mrs */
    railwire_railset *rs;
    void *addr;
    size_t len;
    struct rw_mem mem;        /* what it covers (kind HOST for railwire_mr_register) */
    unsigned users;           /* unfinished transfers that use it */
    struct rw_mr **per_rail;  /* owned: one per rail (NULL where none) */
    struct rw_mr *staged;     /* healing: the registration on a rail being installed */
};

struct railwire_railset {
    /* Thread safety: every public function takes `lock` (rs_lock/rs_unlock)
     * and the internal functions run with it held.  One waiting thread at a
     * time (the poller) sleeps in poll() on the rails' fds with the lock
     * released; the others (struct rw_waiter) each wait on their own
     * condition variable and are woken one at a time: a synchronous helper
     * when its transfer finishes, an async waiter per async completion, and
     * one of them to take over when the poller steps down.  A thread that
     * finishes transfers while the poller sleeps kicks it through kick_fd,
     * so no completion waits for the poller's timeout. */
    pthread_mutex_t lock;
    atomic_uint lock_waiters; /* threads blocked in rs_lock (contended only) */
    int poller;               /* a thread sleeps in poll() for everyone */
    unsigned release_work;    /* RS_RELEASE_*: who a lock release must look at (one test) */
    struct rw_list waiters;   /* followers (struct rw_waiter), oldest first */
    size_t n_async_done;      /* async transfers finished and not yet delivered */
    uint64_t done_gen;        /* bumped whenever a transfer finishes */
    uint64_t poller_gen;      /* done_gen when the poller went to sleep (or was kicked) */
    uint64_t rails_gen;       /* bumped when a rail is put in service (a new ep to poll) */
    uint64_t poller_rails_gen; /* rails_gen when the poller built its poll set */
    int kick_fd;              /* eventfd in the poller's poll set, -1 if none */
    uint64_t arm_round;       /* bumped each time a poller arms its poll set (poll_wait.c) */
    int poll_set_stale;       /* a rail turned busy after the sleeping poller armed its set */
    size_t n_async;           /* submitted by submit/submit_batch, not yet delivered */
    struct rw_list_node *xfer_pool; /* freed transfers kept for reuse (no allocation per
                                       transfer), chained through link.next */
    unsigned n_pool;
    uint64_t *layer_max_base; /* per layer: the largest base_addr over the rails (overflow check) */
    unsigned regs_busy;       /* registrations running without the lock */
    struct rw_domain **graveyard; /* retired domains waiting for them (n_rails * 4 slots) */
    const struct rw_transport_ops *ops;
    enum railwire_dialect dialect;
    unsigned n_rails;
    unsigned n_live;          /* rails UP (rail_state.c) */
    unsigned n_layers;        /* RO: layers per rail; RW: 1 */
    size_t slice_size;        /* effective (<= every rail's max_msg) */
    int op_timeout_ms;
    uint64_t busy_poll_ns;    /* the poller's spin window before poll() sleeps, 0 = none */
    uint64_t spin_idle_gen;   /* done_gen when a spin window last found nothing: no new
                                 window opens until a transfer finishes */
    unsigned spin_misses;     /* spin windows in a row that found nothing (poll_wait.c) */
    unsigned spin_skips;      /* sleeps since, with no window */
    unsigned max_tries;       /* posts per slice before its transfer fails, 0 = unbounded */
    struct rw_rsess *sessions; /* every session a rail belongs to */
    unsigned next_sess_id;
    struct rw_healer *healer; /* NULL: healing off */
    /* What railset_connect.c keeps for the network side (the TLS
     * credentials every heal authenticates with), released at close after
     * the healer stopped; NULL when none. */
    void *net_ctx;
    void (*net_ctx_free)(void *net_ctx);
    int all_down_timeout_ms;  /* with healing: no live rail this long fails everything */
    int64_t all_down_since_ms; /* when the last live rail went down (n_live == 0) */
    int all_down_expired;     /* the bound ran out: submits fail until a rail heals */
    int64_t next_check_ms;    /* next control-connection and ep_check pass */
    struct rw_rail_events ev; /* reported, not yet dispatched */
    railwire_handle next_handle;
    unsigned rr_start;        /* where the next rail choice starts scanning */
    unsigned post_first;      /* the rail a round posts first (stripe.c: refused turns) */
    uint32_t pack_max_len;    /* slices of at most this many bytes are packed onto one
                                 rail at a time (stripe.c); 0: never (few rails) */
    struct rw_rail *rails;    /* n_rails entries, owned */
    struct rw_wr *post_wrs;   /* scheduling scratch: post_batch WRs per rail */
    size_t *post_cnt;         /* scheduling scratch: WRs per rail this round */
    unsigned post_batch;      /* slices handed to one rail per scheduling round */
    double min_inv_gbps;      /* the smallest rails[i].inv_gbps (the fastest rail) */
    unsigned *busy;           /* the rails with outstanding slices (n_busy of n_rails slots):
                                 progress polls and checks only these */
    unsigned n_busy;
    unsigned n_blocked;       /* rails whose ep_post took fewer than offered */
    struct rw_list pending;   /* slices waiting for a rail, in order */
    struct rw_list active;    /* transfers submitted, not finished */
    struct rw_list done;      /* transfers finished, not delivered */
    struct rw_list mrs;       /* every live registration (railwire_mr) */
    /* railwire_railset_fd, railwire_wait_handle, per-transfer deadlines: */
    struct rw_rsfd *rsfd;     /* railwire_railset_fd's state, NULL until first asked for */
    /* Called at every lock release while RS_RELEASE_HOOK is set (the
     * railset fd registers it: railset_lock.c knows no caller above it). */
    void (*release_hook)(railwire_railset *rs);
    size_t n_reserved;        /* reserved or claimed transfers not yet returned (not in n_async) */
    size_t n_reserved_done;   /* of those, finished */
    size_t n_deadline;        /* active transfers with a deadline (an upper bound) */
    int64_t xd_next_ms;       /* earliest deadline among them (may be early) */
    size_t staging_bytes;     /* opts.staging_bytes (0: RW_STAGE_DEFAULT_BYTES) */
    struct rw_stage_pool *stage_pool; /* created by the first CUDA registration */
    /* near (near_place.h): what the rails were placed near at connect;
     * near_auto: it came from "auto", and the first registration checks
     * (once, near_checked) that its memory lives there. */
    struct rw_near near_target;
    int near_auto;
    int near_checked;
    /* ops->mr_reg_multi (verbs: in parallel per device, reusing a device's
     * registration), or NULL: mr_reg on each domain. */
    int (*reg_multi)(struct rw_domain *const *doms, size_t n, void *addr, size_t len, int access,
                     struct rw_mr **out);
};

/* Slices in flight per rail: queue_depth, or when it is 0 the domain's
 * default_depth (tcp: 64), or RW_DEFAULT_QUEUE_DEPTH; capped by the
 * domain's queue size; at least 1. */
unsigned rw_rail_depth(unsigned queue_depth, const struct rw_domain *dom);
/* Bytes a rail may hold in flight: with the user's queue_depth unset and a
 * domain default deeper than RW_DEFAULT_QUEUE_DEPTH, what that many full
 * slices hold (so the deeper default adds small slices, not bytes: a
 * rail's backlog of large slices, and the time its last slice waits
 * behind the others, stay what they were); otherwise UINT64_MAX (none
 * beyond the depth).  Never below one slice. */
uint64_t rw_rail_byte_cap(unsigned queue_depth, unsigned depth, size_t slice_size);
/* Lowers rs->slice_size to size when that is smaller (a rail of a smaller
 * max_msg, a staged registration) and re-derives the byte cap of every
 * rail that has one from it, so a cap stays 16 slices of the size slices
 * now have.  Lock held. */
void rw_railset_shrink_slices(railwire_railset *rs, size_t size);

/* rs_lock's path when the lock is taken: counts the thread in
 * lock_waiters while it blocks. */
void rs_lock_contended(railwire_railset *rs);
/* Takes the railset's lock.  Inline: every API call takes it, and the
 * uncontended path is one trylock. */
static inline void rs_lock(railwire_railset *rs)
{
    if (pthread_mutex_trylock(&rs->lock) != 0)
        rs_lock_contended(rs);
}
/* With the lock held: wakes an async waiter per async transfer finished
 * since the last call. */
void rs_notify(railwire_railset *rs);
/* The bits of rs->release_work: what a lock release has to look at.  Set
 * and cleared with the lock held, where a waiter, the poller or the
 * release hook comes and goes, so the release tests one word. */
#define RS_RELEASE_WAITERS 1u /* rs->waiters is not empty */
#define RS_RELEASE_POLLER 2u  /* rs->poller: a thread sleeps in poll() */
#define RS_RELEASE_HOOK 4u    /* rs->release_hook is set */
/* With the lock held: sets (on) or clears the `bit` of rs->release_work. */
static inline void rs_release_work(railwire_railset *rs, unsigned bit, int on)
{
    rs->release_work = on ? rs->release_work | bit : rs->release_work & ~bit;
}
/* rs_release_prepare's work when another thread waits or polls. */
void rs_release_slow(railwire_railset *rs);
/* With the lock held, before anything that releases it (rs_unlock, a
 * condition wait): calls the release hook, rs_notify, and kicks a sleeping
 * poller when transfers finished or a rail joined since it went to sleep.
 * With no other thread waiting or polling and no hook there is nobody to
 * wake, kick or tell. */
static inline void rs_release_prepare(railwire_railset *rs)
{
    if (rs->release_work)
        rs_release_slow(rs);
}
/* Releases the lock, waking waiters (and kicking a sleeping poller) when
 * transfers finished meanwhile. */
static inline void rs_unlock(railwire_railset *rs)
{
    rs_release_prepare(rs);
    pthread_mutex_unlock(&rs->lock);
}
/* With the lock held: wakes w (once). */
void rs_wake(struct rw_waiter *w);
/* A condition variable on CLOCK_MONOTONIC (the clock of every deadline).
 * Returns 0 or -1. */
int rw_cond_init_monotonic(pthread_cond_t *c);

#include "rail/client/railset_local.h"

/* --- slice lists, outstanding lists and the busy set: railset_lists.h --- */

/* --- mr.c --- */
/* With the lock held (or at close): releases a registration no transfer uses. */
void rw_mr_release(struct railwire_mr *mr);
/* Registers m's memory on domain dom for local access: mr_reg for host
 * memory, the transport's mr_reg_mem for the other kinds (logged with the
 * kind and the path taken).  Returns 0 and *out, or an error (logged). */
int rw_mr_reg_dom(railwire_railset *rs, struct rw_domain *dom, const struct railwire_mr *m,
                  struct rw_mr **out);
/* With the lock held: closes the domain of a replaced rail, or keeps it
 * until no registration runs without the lock any more. */
void rw_rail_retire_domain(railwire_railset *rs, struct rw_domain *dom);

/* --- submit.c --- */
/* With the lock held: validates and submits one transfer (sync != NULL: owned
 * by that synchronous helper, woken when it finishes and never delivered by
 * poll/wait).  Returns 0 and *handle, or the error (logged) with nothing
 * submitted. */
int rw_submit_locked(railwire_railset *rs, const railwire_op *op, struct rw_waiter *sync,
                     railwire_handle *handle);

/* --- stripe.c --- */
/* Cuts a validated op into slices and queues them at the tail of the
 * pending FIFO.  Returns 0 and *out (linked in the active list), or
 * RAILWIRE_E_NOMEM.  With `direct` (for a single-slice op while the
 * pending FIFO is empty; ignored for more slices) the slice is left
 * unqueued: the caller hands it to rw_stripe_post_one. */
int rw_stripe_submit(railwire_railset *rs, const railwire_op *op, int direct, struct rw_xfer **out);
/* Posts s, the unqueued slice of a transfer submitted with `direct`, on the
 * rail rw_stripe_pick_rail chooses, in one ep_post of one WR (no pending
 * FIFO, no scheduling round).  When no rail takes it, it is queued in the
 * pending FIFO and scheduled as usual (a refused post fails the rail over,
 * a short one marks it blocked, as in a round). */
void rw_stripe_post_one(railwire_railset *rs, struct rw_slice *s);
/* rw_stripe_schedule's work when slices are pending and a rail is live. */
void rw_stripe_schedule_run(railwire_railset *rs);
/* Hands pending slices to live rails, least normalised load first, within
 * each rail's depth; stops at the first slice no rail can take (FIFO).
 * A rail whose ep_post fails is failed over.  Returns 0.  Inline: progress
 * calls it on every round, mostly with nothing pending. */
static inline int rw_stripe_schedule(railwire_railset *rs)
{
    if (rs->pending.head && rs->n_live > 0)
        rw_stripe_schedule_run(rs);
    return 0;
}
/* The rail (index) slice s would go to, -1 if none can take it now.  The
 * slices of small transfers (at most RW_PACK_MAX_LEN bytes) are packed onto
 * one rail at a time on railsets that rw_stripe_packs says pack (stripe.c);
 * the slices of bigger transfers spread over every rail. */
#define RW_PACK_MAX_LEN (64u * 1024)
#define RW_PACK_MIN_RAILS 4u
int rw_stripe_pick_rail(const railwire_railset *rs, const struct rw_slice *s);
/* Returns 1 if a railset of n_rails rails whose rails' work shares `cores`
 * CPUs (UINT_MAX: the rails' devices do it, rails_share_cores 0) packs its
 * small transfers: more than RW_PACK_MIN_RAILS rails, or at least 2 rails
 * and more rails than half the cores (see stripe.c). */
int rw_stripe_packs(unsigned n_rails, unsigned cores);

/* --- progress.c --- */
/* Polls every live rail, accounts completions, runs the detectors, the
 * dispatch of their events and the timers, and schedules pending slices.
 * Returns the number of completions processed. */
int rw_progress(railwire_railset *rs);
/* How many of rail r's next completions a sleeping poller may let pass
 * before one can finish a transfer, at least 1 (see poll_wait.c). */
unsigned rw_rail_wake_after(const railwire_railset *rs, const struct rw_rail *r);
/* Arms rail r's wait fd for a sleep: ops->ep_arm_after with
 * rw_rail_wake_after where the transport has it and r is busy, else
 * ops->ep_arm.  Returns as ep_arm. */
int rw_rail_arm(railwire_railset *rs, struct rw_rail *r);
/* Recomputes layer_max_base after a rail's remote regions changed. */
void rw_railset_update_bases(railwire_railset *rs);

/* --- sessions (rsess.c) --- */
/* Adds a session with control connection fd (-1: none; ownership passes).
 * Returns it, or NULL (out of memory: fd is closed). */
struct rw_rsess *rw_rsess_add(railwire_railset *rs, int fd);
/* Drops one rail's use of s; the last one closes its control connection
 * and frees it. */
void rw_rsess_unuse(railwire_railset *rs, struct rw_rsess *s);
/* Detector: checks every session's control connection without blocking;
 * an ended one is reported to the rail state machine. */
void rw_rsess_check(railwire_railset *rs);

/* --- detect.c (detectors: they report to rail_state.h, nothing else) --- */
/* Reports rails whose oldest outstanding slice is older than the op timeout. */
void rw_detect_timeouts(railwire_railset *rs, int64_t now_ms);
/* Asks each live rail's transport for out-of-band death signals
 * (ops->ep_check) and reports the dead ones. */
void rw_detect_eps(railwire_railset *rs, int64_t now_ms);

/* --- failover.c (reactions, called by dispatch.c and heal.c) --- */
/* Reaction to lost rail `i` (already DOWN in the state machine): kills its
 * ep, moves its unfinished slices to the front of the pending FIFO (or
 * fails everything when no rail is left and healing is off). */
void rw_failover_take_down(railwire_railset *rs, unsigned i);
/* Kills the ep of live rail i that is about to be replaced (healing moves
 * it to a new session) and takes its unfinished slices back to the pending
 * FIFO; the rail stays up.  The caller installs the new ep at once. */
void rw_failover_rail_retire(railwire_railset *rs, unsigned i);
/* Completes every unfinished transfer with `status` (no rail left). */
void rw_failover_fail_all(railwire_railset *rs, int status);
/* The all-down bound ran out: logs and fails everything. */
void rw_failover_all_down_expired(railwire_railset *rs);
/* True when `status` of a completion means the rail itself failed. */
static inline int rw_failover_is_rail_error(int status)
{
    return status != 0 && status != RAILWIRE_E_REMOTE_ACCESS;
}

/* --- issue 19: cancel.c, xfer_deadline.c, railset_fd.c, wait_handle.c --- */
/* With the lock held: cancels x with `code` (RAILWIRE_E_CANCELED or
 * RAILWIRE_E_TIMEOUT): drops its pending slices, and completes it when none
 * is on the wire.  Idempotent. */
void rw_xfer_cancel(railwire_railset *rs, struct rw_xfer *x, int code);
/* The slow part of rw_xfer_submit_extras: an op with flags or a deadline.
 * Returns x->reserved. */
int rw_xfer_submit_extras_slow(railwire_railset *rs, struct rw_xfer *x, const railwire_op *op);
/* With the lock held, right after rw_stripe_submit: takes what the op asks
 * for besides the slices (RAILWIRE_OP_F_RESERVED, timeout_ms).  Returns 1
 * when x is reserved (counted in n_reserved, not n_async), else 0.  Inline:
 * a plain op (no flags, no deadline) costs a few stores, and the caller's
 * test of the result folds away. */
static inline int rw_xfer_submit_extras(railwire_railset *rs, struct rw_xfer *x,
                                        const railwire_op *op)
{
    x->cancel = 0;
    x->claims = 0;
    x->reserved = 0;
    x->deadline_ms = 0;
    if (__builtin_expect((op->flags | op->timeout_ms) != 0, 0))
        return rw_xfer_submit_extras_slow(rs, x, op);
    return 0;
}
/* The opcode without its flags. */
static inline int rw_op_code(const railwire_op *op)
{
    return (int)op->opcode;
}
/* The next per-transfer deadline (absolute, ms), or -1 when none. */
int64_t rw_xfer_deadline_next(const railwire_railset *rs);
/* Cancels, with RAILWIRE_E_TIMEOUT, every transfer whose deadline passed. */
void rw_xfer_deadline_check(railwire_railset *rs, int64_t now_ms);
/* After a poll took completions: re-arms the rails, the timer and the
 * ready flag, so the fd fires again only for something new. */
void rw_rsfd_rearm(railwire_railset *rs);
/* The caller's fd (rs->rsfd set). */
int rw_rsfd_fd(const railwire_railset *rs);
/* Releases the fd's state (at close). */
void rw_rsfd_free(railwire_railset *rs);
/* Finds a transfer by handle in the active or done list (NULL if none). */
struct rw_xfer *rw_xfer_find(railwire_railset *rs, railwire_handle h, int *done);

#include "rail/client/railset_lists.h"

#endif
