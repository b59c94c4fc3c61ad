/* SPDX-License-Identifier: MIT */
/* One client event loop (see tcp_cli_loop.h).  It waits in
 * epoll_wait for its rail sockets, its eventfd (commands) and the timeout
 * scan; runs each rail with an event for one quantum (tcp_cli_io.c), then
 * the rails that used up their quantum last turn.  A loop whose rails await
 * small answers polls for a short window before it sleeps (busy_poll_us,
 * common/busy_poll.h).  The pool of loops, attaching rails to them and
 * fork() handling are in tcp_cli_pool.c. */
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_cli_loop_int.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_cli_io.h"

#define SCAN_MS 50  /* timeout scan period while the loop has rails */
#define EVENTS 128  /* epoll events per wait */

void rw_tcp_cli_loop_wake(struct rw_tcp_cli_loop *l)
{
    rw_evloop_wake(&l->fds);
}

/* Loop thread: stops watching a dead ep, completes what it left
 * outstanding and releases it to whoever waits in rw_tcp_cli_loop_kill. */
static void drop(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep)
{
    if (ep->link.member.idx != (unsigned)-1)
        rw_evloop_unwatch(&l->fds, ep->fd);
    rw_evloop_set_remove(&l->set, &ep->link.member);
    rw_tcp_cli_finish(ep);
    pthread_mutex_lock(&l->lock);
    ep->link.released = 1;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Loop thread: runs ep once for the epoll events it had (0: a re-run from
 * the ready FIFO); drops it when it died, queues it when it used its
 * quantum.  A hang-up or error is noted for the receiver (rx->hup): its
 * edge will not come again. */
static void run_ep(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep, uint32_t events)
{
    uint64_t spin = 0;
    int again;

    if (ep->link.released)
        return;
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        rw_tcp_cli_rx_hup(ep);
    again = rw_tcp_cli_run(ep, (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0, &spin);
    if (again < 0) {
        drop(l, ep);
        return;
    }
    if (again)
        rw_evloop_ready_push(&l->set, &ep->link.member);
    if (spin > l->spin_ns)
        l->spin_ns = spin;
}

/* The loop's events for an ep's socket: no input while a waiting caller
 * receives on the rail itself (tcp_cli_attend.c). */
static uint32_t ep_events(int in)
{
    return (in ? EPOLLIN : 0) | EPOLLOUT | EPOLLRDHUP | EPOLLET;
}

void rw_tcp_cli_loop_watch_in(struct rw_tcp_cli_ep *ep, int in)
{
    struct epoll_event ev = {.events = ep_events(in), .data.ptr = ep};

    /* ENOENT: not registered yet (do_register reads ep->attend) or
     * dropped already. */
    if (ep->link.loop && !ep->link.orphan &&
        epoll_ctl(ep->link.loop->fds.epfd, EPOLL_CTL_MOD, ep->fd, &ev) < 0 && errno != ENOENT &&
        errno != EBADF)
        rw_warn_rl("tcp: client event loop %u: epoll_ctl(MOD) failed: %s", ep->link.loop->fds.id,
                   strerror(errno));
}

static int do_register(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep)
{
    struct epoll_event ev = {.data.ptr = ep};
    int rc = 0;

    if (rw_evloop_set_add(&l->set, &ep->link.member, 16))
        return RAILWIRE_E_NOMEM;
    pthread_mutex_lock(&ep->lock); /* against rw_tcp_cli_arm changing ep->attend */
    ev.events = ep_events(!ep->attend);
    if (epoll_ctl(l->fds.epfd, EPOLL_CTL_ADD, ep->fd, &ev) < 0)
        rc = RAILWIRE_E_SYSTEM;
    pthread_mutex_unlock(&ep->lock);
    if (rc)
        rw_evloop_set_remove(&l->set, &ep->link.member);
    return rc;
}

/* Runs the queued commands: adds, then kicks, then kills (a kick is always
 * queued before its ep's kill, so a killed ep is never on a later list).
 * read_evfd: the eventfd was seen readable (an awake loop takes kicks
 * without one).  Returns 1 when the loop must stop. */
static int do_commands(struct rw_tcp_cli_loop *l, int read_evfd)
{
    struct rw_tcp_cli_ep *adds, *kicks, *kills, *ep, *next;
    int stop;

    if (read_evfd)
        rw_evloop_drain(&l->fds);
    pthread_mutex_lock(&l->lock);
    adds = l->adds;
    kicks = l->kicks;
    kills = l->kills;
    l->adds = l->kicks = l->kills = NULL;
    atomic_store_explicit(&l->kicked, 0, memory_order_relaxed);
    stop = l->stop;
    pthread_mutex_unlock(&l->lock);
    for (ep = adds; ep; ep = next) {
        next = ep->link.add_next;
        if (do_register(l, ep)) {
            rw_err_rl("tcp: client event loop %u: cannot watch a rail socket (%s); the rail fails",
                      l->fds.id, strerror(errno));
            rw_tcp_cli_fail(ep, RAILWIRE_E_SYSTEM, NULL);
            drop(l, ep);
            continue;
        }
        run_ep(l, ep, EPOLLOUT); /* requests may have been posted before the registration */
    }
    for (ep = kicks; ep; ep = next) {
        /* Once `kicked` is clear, ep_post may queue the ep again (and
         * rewrite kick_next): read the link first, under the lock. */
        pthread_mutex_lock(&l->lock);
        next = ep->link.kick_next;
        ep->link.kicked = 0;
        pthread_mutex_unlock(&l->lock);
        run_ep(l, ep, 0);
    }
    for (ep = kills; ep; ep = next) {
        next = ep->link.kill_next;
        if (!ep->link.released)
            drop(l, ep);
        /* After this the killer may free the ep: nothing below touches it. */
        pthread_mutex_lock(&l->lock);
        ep->link.kill_done = 1;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
    }
    return stop;
}

static void run_ready(struct rw_tcp_cli_loop *l)
{
    struct rw_evloop_member *m = rw_evloop_ready_take(&l->set), *next;

    /* Run what was ready at this point only: an ep that yields again waits
     * for the next poll, behind the events that arrived meanwhile. */
    for (; m; m = next) {
        next = rw_evloop_ready_next(m);
        run_ep(l, rw_tcp_cli_ep_of(m), 0);
    }
}

static void scan(struct rw_tcp_cli_loop *l, int64_t now)
{
    for (unsigned i = l->set.n; i-- > 0;) {
        struct rw_tcp_cli_ep *ep;
        if (i >= l->set.n)
            continue;
        ep = rw_tcp_cli_ep_of(l->set.tab[i]);
        if (rw_tcp_cli_scan(ep, now))
            drop(l, ep);
    }
}

/* The epoll set of a loop's spin (rw_busy_poll_run). */
struct spin_set {
    struct rw_tcp_cli_loop *l;
    struct epoll_event *ev;
    int n; /* the last epoll_wait's result */
};

/* One turn of the spin: ends it on events or on a kick (an awake loop is
 * not woken through its eventfd). */
static int spin_wait_once(void *arg)
{
    struct spin_set *s = arg;
    s->n = epoll_wait(s->l->fds.epfd, s->ev, EVENTS, 0);
    return s->n != 0 || atomic_load_explicit(&s->l->kicked, memory_order_acquire);
}

/* Blocks in epoll_wait for at most timeout ms (unless a kick is queued),
 * marked asleep so that the next kick writes the eventfd. */
static int sleep_events(struct rw_tcp_cli_loop *l, struct epoll_event *ev, int timeout)
{
    int n;

    pthread_mutex_lock(&l->lock);
    if (atomic_load_explicit(&l->kicked, memory_order_relaxed)) {
        timeout = 0;
    } else {
        l->woken = 0;
        atomic_store_explicit(&l->asleep, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&l->lock);
    n = rw_evloop_wait(&l->fds, ev, EVENTS, timeout);
    if (timeout != 0) {
        pthread_mutex_lock(&l->lock);
        atomic_store_explicit(&l->asleep, 0, memory_order_relaxed);
        pthread_mutex_unlock(&l->lock);
    }
    return n;
}

/* Waits for events, commands, ready work or the next scan.  Returns the
 * number of events in ev (0 when none). */
static int wait_events(struct rw_tcp_cli_loop *l, struct epoll_event *ev)
{
    int64_t now = rw_now_ms();
    int timeout = -1, n = 0, done = 0;

    if (l->set.ready_head || atomic_load_explicit(&l->kicked, memory_order_acquire))
        timeout = 0;
    else if (l->set.n)
        timeout = l->next_scan_ms <= now ? 0 : (int)(l->next_scan_ms - now);
    if (l->spin_ns && timeout != 0) {
        struct spin_set set = {l, ev, 0};
        done = rw_busy_poll_run(spin_wait_once, &set, l->spin_ns, timeout);
        n = set.n;
    }
    l->spin_ns = 0;
    if (!done)
        n = timeout ? sleep_events(l, ev, timeout) : rw_evloop_wait(&l->fds, ev, EVENTS, 0);
    return n < 0 ? 0 : n; /* a spin's failed look counts as none */
}

static void *loop_main(void *arg)
{
    struct rw_tcp_cli_loop *l = arg;
    struct epoll_event ev[EVENTS];
    char name[16];

    snprintf(name, sizeof(name), "rw-tcp-cli%u", l->fds.id);
    pthread_setname_np(pthread_self(), name);
    l->next_scan_ms = rw_now_ms() + SCAN_MS;
    for (;;) {
        int n = wait_events(l, ev), cmd = 0, stop = 0;
        int64_t now;

        pthread_mutex_lock(&l->run);
        for (int i = 0; i < n; i++) {
            struct rw_tcp_cli_ep *ep = ev[i].data.ptr;
            if (!ep)
                cmd = 1;
            else
                run_ep(l, ep, ev[i].events);
        }
        if (cmd || atomic_load_explicit(&l->kicked, memory_order_acquire))
            stop = do_commands(l, cmd);
        if (!stop) {
            run_ready(l);
            now = rw_now_ms();
            if (now >= l->next_scan_ms) {
                scan(l, now);
                l->next_scan_ms = now + SCAN_MS;
            }
        }
        pthread_mutex_unlock(&l->run);
        if (stop)
            break;
    }
    return NULL;
}

void rw_tcp_cli_loop_free(struct rw_tcp_cli_loop *l)
{
    rw_evloop_fds_close(&l->fds);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->run);
    rw_evloop_set_free(&l->set);
    free(l);
}

struct rw_tcp_cli_loop *rw_tcp_cli_loop_start(unsigned id)
{
    struct rw_tcp_cli_loop *l = calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    l->fds.epfd = l->fds.evfd = -1;
    if (pthread_mutex_init(&l->run, NULL)) {
        free(l);
        return NULL;
    }
    if (pthread_mutex_init(&l->lock, NULL)) {
        pthread_mutex_destroy(&l->run);
        free(l);
        return NULL;
    }
    if (rw_tcp_cond_init(&l->cond)) {
        pthread_mutex_destroy(&l->lock);
        pthread_mutex_destroy(&l->run);
        free(l);
        return NULL;
    }
    if (rw_evloop_fds_open(&l->fds, "client event loop", id)) {
        rw_tcp_cli_loop_free(l);
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l)) {
        rw_err("tcp: cannot start client event loop thread %u; check the process's thread limit",
               id);
        rw_tcp_cli_loop_free(l);
        return NULL;
    }
    return l;
}

/* Queues ep's send queue for its loop; may_wake: a sleeping loop gets one
 * eventfd write (rw_tcp_cli_loop_kick), else it runs the queue on its next
 * wake-up (rw_tcp_cli_loop_defer). */
static void kick(struct rw_tcp_cli_ep *ep, int may_wake)
{
    struct rw_tcp_cli_loop *l = ep->link.loop;
    int w = 0;

    pthread_mutex_lock(&l->lock);
    if (!ep->link.kicked && !ep->link.released) {
        ep->link.kicked = 1;
        ep->link.kick_next = l->kicks;
        l->kicks = ep;
        atomic_store_explicit(&l->kicked, 1, memory_order_release);
        /* An awake loop looks at `kicked` before it sleeps (sleep_events
         * checks it under this lock): only a sleeping one needs the
         * eventfd, and only once. */
        if (may_wake && atomic_load_explicit(&l->asleep, memory_order_relaxed) && !l->woken) {
            l->woken = 1;
            w = 1;
        }
    }
    pthread_mutex_unlock(&l->lock);
    if (w)
        rw_tcp_cli_loop_wake(l);
}

void rw_tcp_cli_loop_kick(struct rw_tcp_cli_ep *ep)
{
    kick(ep, 1);
}

void rw_tcp_cli_loop_defer(struct rw_tcp_cli_ep *ep)
{
    kick(ep, 0);
}

int rw_tcp_cli_loop_awake(const struct rw_tcp_cli_ep *ep)
{
    const struct rw_tcp_cli_loop *l = ep->link.loop;

    return l && !ep->link.orphan && !atomic_load_explicit(&l->asleep, memory_order_relaxed);
}

void rw_tcp_cli_loop_kill(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = ep->link.loop;

    if (ep->link.orphan) {
        /* no loop thread in this process: nothing else touches the ep */
        if (!ep->link.released) {
            rw_tcp_cli_finish(ep);
            ep->link.released = 1;
        }
        return;
    }
    /* Always through the loop's command list, even when the loop dropped
     * the ep already: once the kill command has run, the ep is on none of
     * the loop's lists (a kick queued before the ep died is run first). */
    pthread_mutex_lock(&l->lock);
    if (!ep->link.kill_requested) {
        ep->link.kill_requested = 1;
        ep->link.kill_next = l->kills;
        l->kills = ep;
        rw_tcp_cli_loop_wake(l);
    }
    rw_evloop_await_release(&l->cond, &l->lock, &ep->link.kill_done, &l->fds, "rail");
    pthread_mutex_unlock(&l->lock);
}
