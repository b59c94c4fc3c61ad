/* SPDX-License-Identifier: MIT */
/* railwire_wait_handle: wait for one given transfer.  While a thread waits
 * for it (x->claims) or it was submitted reserved (RAILWIRE_OP_F_RESERVED),
 * poll and wait leave it alone (progress.c's deliver) and it is counted in
 * n_reserved rather than n_async.  The waiter sleeps in poll() on the
 * railset fd, which every thread may watch at once. */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/client/railset_internal.h"
#include "rail/client/xfer.h"

#define RW_WH_MAX_WAIT_MS (24 * 3600 * 1000)

/* Moves x between the async and the reserved counts when its claim or
 * reservation changes from `was` to `now` (1 = reserved). */
static void recount(railwire_railset *rs, const struct rw_xfer *x, int done, int was, int now)
{
    if (was == now)
        return;
    if (now) {
        rs->n_async--;
        rs->n_reserved++;
        if (done) {
            rs->n_async_done--;
            rs->n_reserved_done++;
        }
    } else {
        rs->n_reserved--;
        rs->n_async++;
        if (done) {
            rs->n_reserved_done--;
            rs->n_async_done++;
        }
    }
    (void)x;
}

static int is_reserved(const struct rw_xfer *x)
{
    return x->reserved || x->claims;
}

/* Takes finished x out of the done list into *out and frees it. */
static void take(railwire_railset *rs, struct rw_xfer *x, railwire_completion *out)
{
    rw_list_remove(&rs->done, &x->link);
    memset(out, 0, sizeof(*out)); /* every byte, reserved space included */
    out->handle = x->handle;
    out->user_data = x->op.user_data;
    out->status = x->status;
    out->length = x->op.length;
    out->bytes_moved = rw_xfer_bytes_moved(x);
    rs->n_reserved--;
    rs->n_reserved_done--;
    rw_xfer_recycle(rs, x); /* completed: its mr use already dropped */
}

/* Lifts the reservation of h (out == NULL).  Lock held. */
static int unreserve(railwire_railset *rs, railwire_handle h)
{
    int done = 0;
    struct rw_xfer *x = rw_xfer_find(rs, h, &done);
    if (!x || x->sync_owned)
        return RAILWIRE_E_INVALID;
    int was = is_reserved(x);
    x->reserved = 0;
    recount(rs, x, done, was, is_reserved(x));
    return 0;
}

/* Sleeps on the railset fd for up to ms with the lock released.  Returns
 * with the lock held. */
static void sleep_on_fd(railwire_railset *rs, int ms)
{
    struct pollfd p = {.fd = rw_rsfd_fd(rs), .events = POLLIN};
    rs_unlock(rs);
    if (poll(&p, 1, ms) < 0 && errno != EINTR)
        rw_debug("wait_handle: poll failed: %s", strerror(errno));
    rs_lock(rs);
}

int railwire_wait_handle(railwire_railset *rs, railwire_handle h, int timeout_ms,
                         railwire_completion *out)
{
    if (!rs || !h)
        return RAILWIRE_E_INVALID;
    if (timeout_ms < 0 || timeout_ms > RW_WH_MAX_WAIT_MS)
        timeout_ms = RW_WH_MAX_WAIT_MS;
    int64_t deadline = rw_now_ms() + timeout_ms;
    int rc, claimed = 0;
    rs_lock(rs);
    if (!out) {
        rc = unreserve(rs, h);
        rs_unlock(rs);
        return rc;
    }
    if (timeout_ms > 0 && !rs->rsfd) {
        /* The fd is how a waiter sleeps; make it once. */
        rs_unlock(rs);
        rc = railwire_railset_fd(rs);
        rs_lock(rs);
        if (rc < 0) {
            rs_unlock(rs);
            return rc;
        }
    }
    for (;;) {
        int done = 0;
        struct rw_xfer *x = rw_xfer_find(rs, h, &done);
        if (x && !done) {
            rw_progress(rs);
            x = rw_xfer_find(rs, h, &done);
        }
        if (!x || x->sync_owned || (claimed && !x->claims)) {
            /* Unknown, or (a waiter of the same handle in another thread)
             * taken meanwhile. */
            rc = RAILWIRE_E_INVALID;
            break;
        }
        if (!claimed) {
            int was = is_reserved(x);
            x->claims++;
            claimed = 1;
            recount(rs, x, done, was, 1);
        }
        if (done) {
            x->claims = 0; /* other waiters of h find it gone */
            take(rs, x, out);
            rc = 0;
            break;
        }
        int left = rw_ms_left(deadline);
        if (left == 0) {
            int was = is_reserved(x);
            x->claims--;
            recount(rs, x, done, was, is_reserved(x));
            rc = RAILWIRE_E_TIMEOUT;
            break;
        }
        if (rs->rsfd)
            rw_rsfd_rearm(rs);
        x = rw_xfer_find(rs, h, &done);
        if (x && !done)
            sleep_on_fd(rs, left);
    }
    if (rs->rsfd)
        rw_rsfd_rearm(rs);
    rs_unlock(rs);
    return rc;
}
