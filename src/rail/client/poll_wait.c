/* SPDX-License-Identifier: MIT */
/* Delivering finished transfers through railwire_poll/railwire_wait, and
 * the synchronous railwire_read/railwire_write.  Waiting sleeps in poll()
 * on the eps' wait fds after arming them, bounded by the caller's timeout
 * and by the railset's next deadline.  Several threads may wait at once:
 * one of them (the poller) sleeps in poll() with the railset's lock
 * released, the others on their condition variables (see struct
 * railwire_railset).  Each round of progress is rw_progress (progress.c). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/time.h"
#include "rail/client/dispatch.h"
#include "rail/client/heal.h"
#include "rail/client/rail_state.h"
#include "rail/client/xfer.h"

#define RW_MAX_WAIT_MS (24 * 3600 * 1000)

static int deliver(railwire_railset *rs, railwire_completion *out, int max)
{
    int n = 0;
    /* n_reserved counts every reserved or claimed transfer not yet
     * returned: while it is 0 none of those fields needs a look. */
    int any_reserved = rs->n_reserved != 0;
    struct rw_xfer *x = rw_xfer_of(rs->done.head);
    while (n < max && x) {
        struct rw_xfer *nx = rw_xfer_of(x->link.next);
        if (!x->sync_owned && (!any_reserved || (!x->reserved && !x->claims))) {
            /* A synchronous helper's transfer is its own: never taken here
             * (nor one reserved for railwire_wait_handle). */
            rw_list_remove(&rs->done, &x->link);
            /* Every byte of the completion, reserved space included. */
            railwire_completion *c = &out[n];
            c->handle = x->handle;
            c->user_data = x->op.user_data;
            c->status = x->status;
            c->flags = 0;
            c->length = x->op.length;
            c->bytes_moved = rw_xfer_bytes_moved(x);
            memset(c->reserved, 0, sizeof(c->reserved));
            rw_xfer_recycle(rs, x); /* on the done list: completed, its mr use dropped */
            rs->n_async--;
            rs->n_async_done--;
            n++;
        }
        x = nx;
    }
    return n;
}

/* A follower's wait: on its own condition variable until it is woken (its
 * transfer, an async completion, or the poller stepping down) or ms pass. */
/* A follower re-checks at least this often, so that no missed hand-over
 * of the polling can leave completions unreaped for longer. */
#define RW_FOLLOW_MAX_MS 50

static void follow(railwire_railset *rs, struct rw_waiter *w, int ms)
{
    if (ms > RW_FOLLOW_MAX_MS)
        ms = RW_FOLLOW_MAX_MS;
    struct timespec ts = rw_monotonic_in_ms(ms);
    w->woken = 0;
    rw_list_push_tail(&rs->waiters, &w->link);
    rs_release_work(rs, RS_RELEASE_WAITERS, 1);
    /* The wait releases the lock: whatever this thread finished meanwhile
     * (perhaps the sleeping poller's own transfer) must reach the others. */
    rs_release_prepare(rs);
    while (!w->woken && pthread_cond_timedwait(&w->cond, &rs->lock, &ts) == 0)
        ;
    rw_list_remove(&rs->waiters, &w->link);
    rs_release_work(rs, RS_RELEASE_WAITERS, rs->waiters.head != NULL);
}

/* The poll set of a sleep_on_rails spin (rw_busy_poll_run). */
struct spin_set {
    struct pollfd *pfd;
    nfds_t n;
};

/* One non-blocking look at the poll set: poll()'s result. */
static int spin_poll_once(void *arg)
{
    struct spin_set *s = arg;
    return poll(s->pfd, s->n, 0);
}

static void add_fd(struct pollfd *pfd, nfds_t *n, int fd)
{
    pfd[*n].fd = fd;
    pfd[*n].events = POLLIN;
    pfd[*n].revents = 0;
    (*n)++;
}

/* How many completions of rail r a sleeping poller can let pass before
 * one may finish a transfer: up to and including the first of r's
 * outstanding slices that is the last of its transfer on r (the next one
 * belongs to another transfer, or there is none).  An ep_arm_after
 * transport completes an ep's WRs in order, so a slice followed on its
 * rail by one of the same transfer cannot finish that transfer, and its
 * completion need not wake anyone.  With slices pending, at most half of
 * r's outstanding slices pass, so that the rail is refilled while half of
 * its queue is still in flight.  One 1 MiB READ is two 512 KiB slices, and
 * its first slice woke the poller for nothing: 1 rail at depth 8, about
 * 1.5 sleeps a transfer (docs/benchmarks.md, twentieth session). */
unsigned rw_rail_wake_after(const railwire_railset *rs, const struct rw_rail *r)
{
    unsigned k = 0;

    for (struct rw_list_node *n = r->outstanding.head; n; n = n->next) {
        k++;
        if (!n->next || rw_slice_of(n->next)->xfer != rw_slice_of(n)->xfer)
            break;
    }
    if (rs->pending.head && k > r->outstanding.count / 2)
        k = (unsigned)(r->outstanding.count / 2);
    return k ? k : 1;
}

int rw_rail_arm(railwire_railset *rs, struct rw_rail *r)
{
    if (!rs->ops->ep_arm_after || !r->outstanding.head)
        return rs->ops->ep_arm(r->ep);
    return rs->ops->ep_arm_after(r->ep, rw_rail_wake_after(rs, r));
}

/* Arms every busy rail (one with outstanding slices: the others can have
 * no completion, and rw_progress polls only these) and puts its wait fd in
 * pfd, then the heal worker's eventfd.  Each rail looked at is stamped
 * with this round (armed_round), so that a rail made busy after it, by
 * this thread's progress or by another thread while the poller sleeps, is
 * known to be missing from the set (see sleep_on_rails and
 * rw_rail_out_push).  Sets *busy when slices wait for a live rail or a
 * rail could not be armed (the sleep must then be short), and *direct
 * when every rail's fd wakes on the rail's own input (ep_arm returned 1:
 * no spin needed).  Returns the fds set. */
static nfds_t arm_poll_set(railwire_railset *rs, struct pollfd *pfd, int *busy, int *direct)
{
    nfds_t n = 0;
    uint64_t round = ++rs->arm_round;
    *busy = rs->pending.head != NULL && rs->n_live > 0;
    *direct = 1;
    for (unsigned k = 0; k < rs->n_busy; k++) {
        struct rw_rail *r = &rs->rails[rs->busy[k]];
        if (!rw_rail_is_up(r))
            continue;
        r->armed_round = round;
        int fd = rs->ops->ep_wait_fd(r->ep);
        int armed = fd < 0 ? -1 : rw_rail_arm(rs, r);
        if (armed < 0) {
            *busy = 1;
            continue;
        }
        if (armed != 1)
            *direct = 0;
        add_fd(pfd, &n, fd);
    }
    int hfd = rw_heal_wait_fd(rs);
    if (hfd >= 0)
        add_fd(pfd, &n, hfd);
    return n;
}

/* Whether a busy rail is missing from the poll set armed this round: its
 * completion would not wake the sleep. */
static int poll_set_lacks_busy(const railwire_railset *rs)
{
    for (unsigned k = 0; k < rs->n_busy; k++) {
        const struct rw_rail *r = &rs->rails[rs->busy[k]];
        if (r->armed_round != rs->arm_round && rw_rail_is_up(r))
            return 1;
    }
    return 0;
}

/* A waiter whose last SPIN_MISSES_MAX windows found nothing sleeps at once
 * (spin_misses), until a sleep ends sooner than a window would have, or
 * one window every SPIN_PROBE_EVERY sleeps finds something.  A window the
 * process's quiet time cut short (common/busy_poll.h) counts as empty.
 * Where answers come further apart than the window, each finished
 * transfer opened one more window that spun for nothing: 1 MiB READs over
 * loopback shaped to 16 Gbit/s (an answer every 250 us) found something in
 * 4% of 5,300-5,600 windows in 3 s; with this rule the waiter opened
 * 1,000-1,100 and used 5% of a CPU instead of 8-11%.  On plain loopback
 * three windows in four catch their answer, and the rule skips few
 * (docs/benchmarks.md, nineteenth session). */
#define SPIN_MISSES_MAX 4u
#define SPIN_PROBE_EVERY 16u

/* With the lock held: sleeps until a rail may have completions, at most ms
 * milliseconds, and returns with the lock held.  While slices are
 * outstanding it first spins for rs->busy_poll_ns (see common/busy_poll.h),
 * unless the last window found nothing and no transfer finished since, or
 * the last windows all found nothing (above).  Returns the number of
 * completions processed while arming. */
static int sleep_on_rails(railwire_railset *rs, struct rw_waiter *w, int ms)
{
    if (rs->poller) {
        follow(rs, w, ms);
        return 0;
    }
    struct pollfd pfd[RAILWIRE_MAX_RAILS + 2];
    int busy = 0, direct = 0;
    nfds_t n = arm_poll_set(rs, pfd, &busy, &direct);
    size_t done_before = rs->done.count;
    int got = rw_progress(rs);
    /* A transfer may also finish without a completion being polled (a rail
     * timed out or failed to post and it was the last one): do not sleep
     * then either. */
    if (got > 0 || rs->done.count != done_before)
        return got;
    /* This round's progress posted to a rail that was idle when the set
     * was armed: arm again (the caller's next round) rather than sleep
     * deaf to it.  Arming after the post could miss its completion. */
    if (poll_set_lacks_busy(rs))
        return 0;
    int outstanding = rs->n_busy > 0;
    int64_t now = rw_now_ms();
    int64_t left = rw_railset_next_deadline(rs, now) - now;
    if (left < ms)
        ms = left < 0 ? 0 : (int)left;
    if (busy && ms > 1)
        ms = 1;
    nfds_t kick = n; /* its slot, when there is a kick fd */
    if (rs->kick_fd >= 0)
        add_fd(pfd, &n, rs->kick_fd);
    rs->poller = 1;
    rs_release_work(rs, RS_RELEASE_POLLER, 1);
    rs_notify(rs);
    rs->poller_gen = rs->done_gen;
    rs->poller_rails_gen = rs->rails_gen;
    rs->poll_set_stale = 0;
    uint64_t gen = rs->done_gen;
    /* Rails whose fd wakes on their own input are woken by the answer
     * itself, as a blocking receive would be: no spin for them, unless one
     * slice alone is awaited (depth 1), where the spin catches the answer
     * sooner than the wake-up (4 KiB READs, 1 and 2 rails: 40k-51k a
     * second spinning, 27k-35k not; docs/benchmarks.md, eighteenth
     * session).  A spin that loses its CPU to a busy machine stops every
     * spin for a while (common/busy_poll.h). */
    int lone = rs->n_busy == 1 && rs->rails[rs->busy[0]].outstanding.count == 1;
    int want_spin = outstanding && n > 0 && ms > 0 && (!direct || lone) &&
                    gen != rs->spin_idle_gen && rs->busy_poll_ns;
    int skipped = want_spin && rs->spin_misses >= SPIN_MISSES_MAX;
    if (skipped && ++rs->spin_skips >= SPIN_PROBE_EVERY) {
        rs->spin_skips = 0;
        rs->spin_misses = SPIN_MISSES_MAX - 1; /* one window, to look again */
        skipped = 0;
    }
    uint64_t spin = want_spin && !skipped ? rs->busy_poll_ns : 0;
    pthread_mutex_unlock(&rs->lock);
    struct spin_set set = {pfd, n};
    uint64_t t0 = skipped ? rw_now_ns() : 0;
    int ready = spin ? rw_busy_poll_run(spin_poll_once, &set, spin, ms) : 0;
    int polled = 0;
    if (ready != 0) {
        /* the spin found work: no sleep */
    } else if (n == 0 && ms > 0) {
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    } else if ((polled = poll(pfd, n, ms)) < 0 && errno != EINTR) {
        rw_debug("progress: poll failed: %s", strerror(errno));
    }
    uint64_t t1 = skipped && polled > 0 ? rw_now_ns() : 0;
    pthread_mutex_lock(&rs->lock);
    if (spin && ready == 0)
        rs->spin_idle_gen = gen;
    if (spin)
        rs->spin_misses = ready > 0 ? 0 : rs->spin_misses + 1;
    else if (t1 && t1 - t0 < rs->busy_poll_ns)
        rs->spin_misses = 0; /* a window would have caught this one */
    rs->poller = 0;
    rs_release_work(rs, RS_RELEASE_POLLER, 0);
    /* Drain the kick eventfd only when poll saw it written: it stays
     * readable until read, so a write that came after the poll's look makes
     * the next sleep return at once and is drained then. */
    if (rs->kick_fd >= 0 && (pfd[kick].revents & POLLIN)) {
        uint64_t v;
        if (read(rs->kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            rw_debug("progress: reading the kick eventfd failed: %s", strerror(errno));
    }
    /* Let a follower take over the polling if one still waits. */
    rw_list_for_each(f, &rs->waiters, struct rw_waiter, link)
        if (!f->woken) {
            rs_wake(f);
            break;
        }
    return 0;
}

int railwire_poll(railwire_railset *rs, railwire_completion *out, int max)
{
    if (!rs || max < 0 || (max > 0 && !out))
        return RAILWIRE_E_INVALID;
    rs_lock(rs);
    rw_progress(rs);
    int n = deliver(rs, out, max);
    unsigned work = rs->release_work; /* one load for the fd and the waiters */
    if (work & RS_RELEASE_HOOK) /* the railset fd fires again only for something new */
        rw_rsfd_rearm(rs);
    int others = (work & RS_RELEASE_WAITERS) != 0;
    rs_unlock(rs);
    /* A caller that polls in a loop must not starve the threads that wait
     * for the lock or for their completions: give way when it got nothing. */
    if (n == 0 && (others || atomic_load_explicit(&rs->lock_waiters, memory_order_relaxed)))
        sched_yield();
    return n;
}

int railwire_wait(railwire_railset *rs, railwire_completion *out, int max, int timeout_ms)
{
    if (!rs || max <= 0 || !out)
        return RAILWIRE_E_INVALID;
    if (timeout_ms < 0 || timeout_ms > RW_MAX_WAIT_MS)
        timeout_ms = RW_MAX_WAIT_MS;
    int64_t deadline = rw_now_ms() + timeout_ms;
    int rc;
    struct rw_waiter w = {.handle = 0};
    if (rw_cond_init_monotonic(&w.cond) < 0)
        return RAILWIRE_E_SYSTEM;
    rs_lock(rs);
    for (;;) {
        rw_progress(rs);
        rc = deliver(rs, out, max);
        if (rc > 0)
            break;
        int left = rw_ms_left(deadline);
        /* Nothing this call could deliver is pending: do not sleep for nothing. */
        if (left == 0 || rs->n_async == 0) {
            rc = RAILWIRE_E_TIMEOUT;
            break;
        }
        sleep_on_rails(rs, &w, left);
    }
    rs_unlock(rs);
    pthread_cond_destroy(&w.cond);
    return rc;
}

/* Submits one transfer and waits for it alone; other completions stay queued. */
static int sync_op(railwire_railset *rs, enum railwire_opcode opc, railwire_mr *mr, void *local,
                   size_t length, uint32_t layer, uint64_t remote_offset, int timeout_ms)
{
    railwire_op op = {.opcode = opc, .mr = mr, .local = local, .length = length,
                      .layer = layer, .remote_offset = remote_offset};
    railwire_handle h;
    if (!rs)
        return RAILWIRE_E_INVALID;
    struct rw_waiter w = {.handle = 0};
    if (rw_cond_init_monotonic(&w.cond) < 0)
        return RAILWIRE_E_SYSTEM;
    rs_lock(rs);
    int rc = rw_submit_locked(rs, &op, &w, &h);
    if (rc < 0) {
        rs_unlock(rs);
        pthread_cond_destroy(&w.cond);
        return rc;
    }
    w.handle = h;
    if (timeout_ms < 0 || timeout_ms > RW_MAX_WAIT_MS)
        timeout_ms = RW_MAX_WAIT_MS;
    int64_t deadline = rw_now_ms() + timeout_ms;
    for (;;) {
        struct rw_xfer *x;
        for (x = rw_xfer_of(rs->done.head); x; x = rw_xfer_of(x->link.next))
            if (x->handle == h)
                break;
        if (x) {
            rw_list_remove(&rs->done, &x->link);
            rc = x->status;
            rw_xfer_free(rs, x);
            break;
        }
        int left = rw_ms_left(deadline);
        if (left == 0) {
            /* Still pending: it completes later and is delivered by
             * poll/wait like any other transfer. */
            for (x = rw_xfer_of(rs->active.head); x; x = rw_xfer_of(x->link.next))
                if (x->handle == h) {
                    x->sync_owned = 0;
                    x->waiter = NULL;
                    rs->n_async++;
                    break;
                }
            rw_warn("transfer %llu did not finish within %d ms; it stays pending",
                    (unsigned long long)h, timeout_ms);
            rc = RAILWIRE_E_TIMEOUT;
            break;
        }
        /* Sleep only if this round finished nothing: a transfer failed by
         * the op timeout or a failed post finishes with no completion
         * polled, and sleeping then would wait for the whole timeout. */
        size_t done_before = rs->done.count;
        if (rw_progress(rs) == 0 && rs->done.count == done_before)
            sleep_on_rails(rs, &w, left);
    }
    rs_unlock(rs);
    pthread_cond_destroy(&w.cond);
    return rc;
}

int railwire_read(railwire_railset *rs, railwire_mr *mr, void *local, size_t length, uint32_t layer,
                  uint64_t remote_offset, int timeout_ms)
{
    return sync_op(rs, RAILWIRE_OP_READ, mr, local, length, layer, remote_offset, timeout_ms);
}

int railwire_write(railwire_railset *rs, railwire_mr *mr, const void *local, size_t length,
                   uint32_t layer, uint64_t remote_offset, int timeout_ms)
{
    return sync_op(rs, RAILWIRE_OP_WRITE, mr, (void *)(uintptr_t)local, length, layer,
                   remote_offset, timeout_ms);
}
