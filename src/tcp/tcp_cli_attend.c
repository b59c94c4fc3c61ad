/* SPDX-License-Identifier: MIT */
/* A waiting caller receives on its own rail (see tcp_cli_io.h,
 * rw_tcp_cli_arm and rw_tcp_cli_attend).
 *
 * At depth 1 the loop's hand-offs cost more than the round trip: the
 * answer woke the loop thread, which read it and woke the caller through
 * the ep's eventfd.  While a caller with a busy-poll window awaits a few
 * small answers, the ep's wait fd (an epoll set of the eventfd) also
 * watches the rail socket, so the caller wakes on the answer itself and
 * reads it in ep_poll, as a blocking request/response client would.
 *
 * Whoever receives owns the receive state machine (rx_owner, under
 * ep->lock): the loop skips a rail the caller is reading and leaves a note
 * (rx_missed) that the caller honours before it lets go, so no edge of the
 * edge-triggered loop is lost.  A loop that drops the ep while the caller
 * reads leaves the completion of what is outstanding to the caller
 * (finish_deferred), so no buffer is written after its completion. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_cli_io.h"
#include "tcp/tcp_cli_loop.h"

/* The caller attends to a rail only while few answers are awaited and no
 * READ among them is large (a caller must never read a large payload
 * while it holds the railset): up to ATTEND_MAX_OUT of any WRITE size, or
 * up to ATTEND_MAX_OUT_SMALL when every entry, READ or WRITE, is small.
 * The second tier is the small-transfer queue an engine keeps (4 KiB at
 * depth 8): there the loop's hand-off to the waiting caller cost a third
 * of the rate (75k against 117k READs/s, one rail, docs/benchmarks.md);
 * large WRITEs stay with the loop, which sends while the caller sleeps
 * (2 rails of 64 KiB WRITEs at depth 8 lost a quarter when attended).
 * Deeper queues keep the loop busy anyway and batch their answers. */
#define ATTEND_MAX_OUT 2u
#define ATTEND_MAX_OUT_SMALL 8u
#define ATTEND_SMALL (16u * 1024)
/* ... and only while the process has at most ATTEND_MAX_EPS client rails:
 * a caller that read dozens of rails itself would do alone what the loops
 * do in parallel (64 rails at depth 64: half the rate, measured).  Past
 * ATTEND_FEW_EPS rails the caller reads at most ATTEND_MAX_OUT_MANY small
 * answers a rail, and no large WRITE's: 4 rails of 4 KiB READs gained
 * 1.4x at depth 8 (2 a rail) and 1.1x at 16 (4 a rail) from attending,
 * but lost 0.79x at 32 (8 a rail; docs/benchmarks.md, sixth session). */
#define ATTEND_MAX_EPS 4u
#define ATTEND_FEW_EPS 2u
#define ATTEND_MAX_OUT_MANY 4u
/* Receive passes a caller makes for the loop's missed edges before it
 * hands the rail back to the loop instead. */
#define ATTEND_RERUNS 4
/* A caller that has neither armed nor polled the rail for this long has
 * gone: the loop's timeout scan gives the input back to the loop. */
#define ATTEND_IDLE_MS 20

int rw_tcp_cli_wait_init(struct rw_tcp_cli_ep *ep)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = ep->evfd};

    ep->wfd = epoll_create1(EPOLL_CLOEXEC);
    if (ep->wfd < 0 || epoll_ctl(ep->wfd, EPOLL_CTL_ADD, ep->evfd, &ev) < 0) {
        rw_err("tcp: cannot create a rail's wait set: %s; check the process's file descriptor "
               "limit", strerror(errno));
        if (ep->wfd >= 0)
            close(ep->wfd);
        ep->wfd = -1;
        return RAILWIRE_E_SYSTEM;
    }
    return 0;
}

/* With ep->lock held: whether a waiting caller should watch the socket.
 * With nothing outstanding it stays as it is (no input is due), so a rail
 * that alternates between one answer awaited and none does not move its
 * socket between the sets at every request. */
static int want_attend_locked(const struct rw_tcp_cli_ep *ep)
{
    uint64_t out = ep->posted - ep->answered;
    unsigned eps = rw_tcp_cli_pool_eps();
    int few = eps <= ATTEND_FEW_EPS;

    if (ep->tls || ep->state != RW_TCP_CLI_UP || ep->fd < 0 || eps > ATTEND_MAX_EPS ||
        out > (few ? ATTEND_MAX_OUT_SMALL : ATTEND_MAX_OUT_MANY))
        return 0;
    if (!out)
        return ep->attend;
    for (uint64_t i = ep->answered; i < ep->posted; i++) {
        const struct rw_wr *w = &ep->ring[i & ep->mask].wr;
        if (w->length > ATTEND_SMALL &&
            (w->opcode == RW_OP_READ || !few || out > ATTEND_MAX_OUT))
            return 0;
    }
    return 1;
}

/* With ep->lock held: moves the socket's input between the loop and the
 * wait set. */
static void set_attend_locked(struct rw_tcp_cli_ep *ep, int want)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = -1};

    if (want == ep->attend)
        return;
    if (want) {
        /* A failed ADD leaves the receiving to the loop alone. */
        if (epoll_ctl(ep->wfd, EPOLL_CTL_ADD, ep->fd, &ev) < 0)
            return;
        ep->attend = 1;
        rw_tcp_cli_loop_watch_in(ep, 0);
    } else {
        /* A failed DEL (the socket shut down) changes nothing either. */
        epoll_ctl(ep->wfd, EPOLL_CTL_DEL, ep->fd, &ev);
        ep->attend = 0;
        rw_tcp_cli_loop_watch_in(ep, 1); /* reports input already waiting */
    }
}

int rw_tcp_cli_arm(struct rw_tcp_cli_ep *ep, unsigned want)
{
    uint64_t v;
    int rc;

    /* A railset arms every rail before each sleep: no read() for the
     * eventfds nobody wrote.  evfd_pending counts the writes begun
     * (rw_tcp_cli_notify adds 1 before its write); a read takes back the
     * ones it consumed, so a write still on its way is read next time. */
    if (atomic_load_explicit(&ep->evfd_pending, memory_order_acquire)) {
        if (read(ep->evfd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
            atomic_fetch_sub_explicit(&ep->evfd_pending, v, memory_order_acq_rel);
        } else if (errno != EAGAIN) {
            rw_err("tcp: reading the completion eventfd failed: %s", strerror(errno));
            return RAILWIRE_E_SYSTEM;
        }
    }
    pthread_mutex_lock(&ep->lock);
    ep->wake_at = ep->polled + (want ? want : 1);
    set_attend_locked(ep, want_attend_locked(ep));
    ep->attend_ms = rw_now_ms();
    rc = ep->attend;
    pthread_mutex_unlock(&ep->lock);
    return rc;
}

void rw_tcp_cli_attend_scan_locked(struct rw_tcp_cli_ep *ep, int64_t now)
{
    if (ep->attend && !ep->rx_owner && now - ep->attend_ms >= ATTEND_IDLE_MS)
        set_attend_locked(ep, 0);
}

int rw_tcp_cli_rx_idle(struct rw_tcp_cli_ep *ep)
{
    int idle;

    pthread_mutex_lock(&ep->lock);
    idle = !ep->need_verdict && ep->answered == ep->posted;
    pthread_mutex_unlock(&ep->lock);
    return idle;
}

int rw_tcp_cli_attend(struct rw_tcp_cli_ep *ep)
{
    uint64_t spin = 0;
    int reruns = 0, fin, kick;

    pthread_mutex_lock(&ep->lock);
    if (!ep->attend || ep->rx_owner || ep->answered == ep->posted) {
        pthread_mutex_unlock(&ep->lock);
        return 0;
    }
    if (!want_attend_locked(ep)) {
        set_attend_locked(ep, 0); /* deeper now, or dead: the loop receives */
        pthread_mutex_unlock(&ep->lock);
        return 0;
    }
    ep->attend_ms = rw_now_ms();
    ep->rx_owner = RW_TCP_RX_CALLER;
    ep->rx_missed = 0;
    pthread_mutex_unlock(&ep->lock);
    for (;;) {
        rw_tcp_cli_rx_run(ep, &spin);
        pthread_mutex_lock(&ep->lock);
        if (!ep->rx_missed || ep->state != RW_TCP_CLI_UP || ++reruns > ATTEND_RERUNS)
            break;
        ep->rx_missed = 0; /* the loop skipped an edge: read what it announced */
        pthread_mutex_unlock(&ep->lock);
    }
    kick = ep->rx_missed && ep->state == RW_TCP_CLI_UP;
    ep->rx_missed = 0;
    fin = ep->finish_deferred;
    ep->finish_deferred = 0;
    if (fin) {
        /* Still owned (an ep_kill waits), but no longer deferring. */
        ep->rx_owner = RW_TCP_RX_FINISHING;
        pthread_mutex_unlock(&ep->lock);
        rw_tcp_cli_finish(ep);
        pthread_mutex_lock(&ep->lock);
    }
    ep->rx_owner = 0;
    if (kick)
        rw_tcp_cli_loop_kick(ep); /* the loop reads the rest */
    pthread_cond_broadcast(&ep->cond); /* an ep_kill may wait for us */
    pthread_mutex_unlock(&ep->lock);
    return 1;
}
