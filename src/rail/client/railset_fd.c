/* SPDX-License-Identifier: MIT */
/* railwire_railset_fd: one fd an event loop watches for the whole railset.
 *
 * It is an epoll fd over:
 *  - ready_fd, an eventfd set while finished transfers wait to be
 *    returned (checked at every lock release, so whichever call returns
 *    the last of them clears it);
 *  - an inner epoll fd over the live rails' completion channels
 *    (ops->ep_wait_fd), armed (ops->ep_arm, then one more progress round, as
 *    the ops contract asks) by every poll before the caller sleeps again;
 *    rebuilt, as a new inner epoll fd swapped in, whenever healing put a
 *    rail in service (rails_gen), so a replaced ep's fd is never watched;
 *  - timer_fd, a timerfd set to the railset's next deadline (a
 *    per-transfer deadline, the oldest slice's op timeout, the check
 *    interval of ep_check, a heal attempt, the all-down bound), so time
 *    alone makes the fd readable;
 *  - the healer's wake fd (an attempt finished).
 * Every member is level-triggered, so the fd is too.  All of it is changed
 * with the railset's lock held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/client/dispatch.h"
#include "rail/client/heal.h"
#include "rail/client/railset_internal.h"

/* As progress.c: ep_check is asked about this often while work is out. */

struct rw_rsfd {
    int epfd;          /* the caller's fd */
    int inner;         /* the rails' channels, -1 if none */
    int ready_fd;
    int timer_fd;
    int ready_set;     /* ready_fd holds a count */
    int64_t timer_at;  /* armed for this time (ms, CLOCK_MONOTONIC), 0 = disarmed */
    uint64_t rails_gen; /* rails_gen the inner set was built for */
    int unwatched;     /* a live rail has no wait fd: the timer ticks every ms while busy */
};

static int ep_add(int epfd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Builds a new inner set over the live rails and swaps it in.  0 or -1. */
static int build_inner(railwire_railset *rs, struct rw_rsfd *f)
{
    int in = epoll_create1(EPOLL_CLOEXEC);
    if (in < 0)
        return -1;
    f->unwatched = 0;
    for (unsigned i = 0; i < rs->n_rails; i++) {
        struct rw_rail *r = &rs->rails[i];
        if (r->stats.state != RAILWIRE_RAIL_UP || !r->ep)
            continue;
        int fd = rs->ops->ep_wait_fd(r->ep);
        if (fd < 0 || ep_add(in, fd) < 0)
            f->unwatched = 1;
    }
    if (ep_add(f->epfd, in) < 0) {
        close(in);
        return -1;
    }
    if (f->inner >= 0) {
        epoll_ctl(f->epfd, EPOLL_CTL_DEL, f->inner, NULL);
        close(f->inner);
    }
    f->inner = in;
    f->rails_gen = rs->rails_gen;
    return 0;
}

/* The railset's next deadline (absolute ms), 0 when nothing is due: the
 * railset's one deadline (rw_railset_next_deadline), and at once while a
 * busy rail's completions cannot be watched through an fd. */
static int64_t next_deadline(railwire_railset *rs, const struct rw_rsfd *f, int64_t now)
{
    int64_t t = rw_railset_next_deadline(rs, now);
    if (rs->n_busy && f->unwatched && now + 1 < t)
        t = now + 1;
    return t == INT64_MAX ? 0 : t;
}

static void set_timer(struct rw_rsfd *f, int64_t at)
{
    if (at == f->timer_at)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    if (at) {
        /* Absolute on CLOCK_MONOTONIC, like rw_now_ms; never 0 (disarms). */
        its.it_value.tv_sec = at / 1000;
        its.it_value.tv_nsec = (long)(at % 1000) * 1000000L;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    }
    if (timerfd_settime(f->timer_fd, at ? TFD_TIMER_ABSTIME : 0, &its, NULL) < 0) {
        rw_warn("railset fd: timerfd_settime failed (%s); deadlines are seen at the next poll",
                strerror(errno));
        return;
    }
    f->timer_at = at;
}

static void set_ready(struct rw_rsfd *f, int on)
{
    uint64_t v = 1;
    if (on && !f->ready_set) {
        if (write(f->ready_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
            f->ready_set = 1;
    } else if (!on && f->ready_set) {
        if (read(f->ready_fd, &v, sizeof(v)) == (ssize_t)sizeof(v) || errno == EAGAIN)
            f->ready_set = 0;
    }
}

/* The release hook (rs->release_hook): the fd's work at every lock
 * release. */
static void rsfd_on_release(railwire_railset *rs)
{
    struct rw_rsfd *f = rs->rsfd;
    /* Readable exactly while there is something for the caller to take
     * or a rail the inner set lacks (set_ready changes nothing otherwise). */
    set_ready(f, rs->n_async_done || rs->n_reserved_done || f->rails_gen != rs->rails_gen);
    /* Work went out with no timer running (a submit after an idle
     * spell), or a deadline earlier than the timer's: arm it. */
    if ((f->timer_at == 0 && (rs->n_busy || rs->n_deadline || rs->pending.head)) ||
        (rs->n_deadline && rs->xd_next_ms < f->timer_at))
        set_timer(f, next_deadline(rs, f, rw_now_ms()));
}

void rw_rsfd_rearm(railwire_railset *rs)
{
    struct rw_rsfd *f = rs->rsfd;
    if (f->rails_gen != rs->rails_gen && build_inner(rs, f) < 0)
        rw_warn("railset fd: cannot rebuild the rails' epoll set (%s); retrying at the next poll",
                strerror(errno));
    for (unsigned i = 0; i < rs->n_rails; i++) {
        struct rw_rail *r = &rs->rails[i];
        if (r->stats.state == RAILWIRE_RAIL_UP && r->ep && rw_rail_arm(rs, r) < 0)
            f->unwatched = 1;
    }
    /* The ops contract: poll once more after arming. */
    rw_progress(rs);
    int64_t now = rw_now_ms();
    if (f->timer_at && f->timer_at <= now) {
        uint64_t ticks;
        if (read(f->timer_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
            rw_debug("railset fd: reading the timerfd failed: %s", strerror(errno));
        f->timer_at = 0; /* expired: set_timer below re-arms it */
    }
    set_timer(f, next_deadline(rs, f, now));
    set_ready(f, rs->n_async_done || rs->n_reserved_done || f->rails_gen != rs->rails_gen);
}

int rw_rsfd_fd(const railwire_railset *rs)
{
    return rs->rsfd->epfd;
}

void rw_rsfd_free(railwire_railset *rs)
{
    struct rw_rsfd *f = rs->rsfd;
    if (!f)
        return;
    if (f->inner >= 0)
        close(f->inner);
    if (f->ready_fd >= 0)
        close(f->ready_fd);
    if (f->timer_fd >= 0)
        close(f->timer_fd);
    if (f->epfd >= 0)
        close(f->epfd);
    free(f);
    rs->rsfd = NULL;
    rs->release_hook = NULL;
    rs_release_work(rs, RS_RELEASE_HOOK, 0);
}

/* With the lock held: makes the fd and its members.  0 or an error. */
static int rsfd_create(railwire_railset *rs)
{
    struct rw_rsfd *f = calloc(1, sizeof(*f));
    if (!f)
        return RAILWIRE_E_NOMEM;
    f->inner = -1;
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    f->ready_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    f->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    int hfd = rw_heal_wait_fd(rs);
    rs->rsfd = f; /* rw_rsfd_free releases whatever was made */
    if (f->epfd < 0 || f->ready_fd < 0 || f->timer_fd < 0 || ep_add(f->epfd, f->ready_fd) < 0 ||
        ep_add(f->epfd, f->timer_fd) < 0 || (hfd >= 0 && ep_add(f->epfd, hfd) < 0) ||
        build_inner(rs, f) < 0) {
        rw_err("railset fd: cannot make the epoll, eventfd or timerfd (%s); check the process's "
               "fd limit (ulimit -n)", strerror(errno));
        rw_rsfd_free(rs);
        return RAILWIRE_E_SYSTEM;
    }
    rs->release_hook = rsfd_on_release;
    rs_release_work(rs, RS_RELEASE_HOOK, 1);
    rw_rsfd_rearm(rs);
    return 0;
}

int railwire_railset_fd(railwire_railset *rs)
{
    if (!rs) {
        rw_err("railset fd: NULL railset");
        return RAILWIRE_E_INVALID;
    }
    rs_lock(rs);
    int rc = rs->rsfd ? 0 : rsfd_create(rs);
    if (rc == 0)
        rc = rs->rsfd->epfd;
    rs_unlock(rs);
    return rc;
}
