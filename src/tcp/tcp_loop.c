/* SPDX-License-Identifier: MIT */
/* The pool of event-loop threads (see tcp_loop.h).  Each loop waits in
 * epoll_wait for its sockets, its eventfd (commands), the next tick of a
 * connection waiting on its queue cap or the budget, and the timeout scan;
 * then runs each connection that has work, for at most one quantum.  A loop
 * that just ran a connection first polls for a short window before it
 * sleeps (common/busy_poll.h): an active client's next request is then
 * taken without a wake-up. */
#include "tcp/tcp_loop.h"
#include "tcp/tcp_serve_splice.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/cpus.h"
#include "common/list.h"
#include "common/log.h"
#include "common/time.h"

#define SCAN_MS 50          /* timeout scan period */
#define EVENTS 128          /* epoll events per wait */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned pool_refs, pool_n;
static struct rw_tcp_loop *pool;
static _Atomic uint64_t pool_spin_ns = RW_DEFAULT_BUSY_POLL_US * 1000u;

void rw_tcp_pool_busy_poll(int us)
{
    atomic_store_explicit(&pool_spin_ns, rw_busy_poll_ns(us), memory_order_relaxed);
}

static void wake(struct rw_tcp_loop *l)
{
    rw_evloop_wake(&l->fds);
}

/* The connection a loop member is. */
static struct rw_tcp_conn *conn_of(struct rw_evloop_member *m)
{
    return rw_list_entry(m, struct rw_tcp_conn, member);
}

void rw_tcp_loop_ready(struct rw_tcp_conn *c)
{
    rw_evloop_ready_push(&c->loop->set, &c->member);
}

void rw_tcp_loop_tick_add(struct rw_tcp_conn *c, int delay_ms)
{
    struct rw_tcp_loop *l = c->loop;
    c->tick_due_ms = rw_now_ms() + delay_ms;
    if (c->on_tick)
        return;
    c->on_tick = 1;
    c->tick_prev = NULL;
    c->tick_next = l->tick_head;
    if (l->tick_head)
        l->tick_head->tick_prev = c;
    l->tick_head = c;
}

void rw_tcp_loop_tick_del(struct rw_tcp_conn *c)
{
    struct rw_tcp_loop *l = c->loop;
    if (!c->on_tick)
        return;
    if (c->tick_prev)
        c->tick_prev->tick_next = c->tick_next;
    else
        l->tick_head = c->tick_next;
    if (c->tick_next)
        c->tick_next->tick_prev = c->tick_prev;
    c->on_tick = 0;
    c->tick_next = c->tick_prev = NULL;
}

void rw_tcp_loop_forget(struct rw_tcp_conn *c)
{
    struct rw_tcp_loop *l = c->loop;

    rw_evloop_unwatch(&l->fds, c->fd);
    rw_tcp_loop_tick_del(c);
    rw_evloop_set_remove(&l->set, &c->member);
}

static int do_register(struct rw_tcp_loop *l, struct rw_tcp_conn *c)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};

    if (rw_evloop_set_add(&l->set, &c->member, 64))
        return RAILWIRE_E_NOMEM;
    if (epoll_ctl(l->fds.epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        rw_evloop_set_remove(&l->set, &c->member);
        return RAILWIRE_E_SYSTEM;
    }
    return 0;
}

/* 1 when fd has an error pending (a reset: see rx_reset in tcp_internal.h),
 * without taking the error. */
static int socket_failed(int fd)
{
    struct pollfd p = {.fd = fd};

    return poll(&p, 1, 0) > 0 && (p.revents & POLLERR);
}

/* Runs the queued commands.  Returns 1 when the loop must stop. */
static int do_commands(struct rw_tcp_loop *l)
{
    struct rw_tcp_conn *adds, *kills, *c, *next;
    int stop;

    rw_evloop_drain(&l->fds);
    pthread_mutex_lock(&l->lock);
    adds = l->adds;
    kills = l->kills;
    l->adds = l->kills = NULL;
    stop = l->stop;
    pthread_mutex_unlock(&l->lock);
    /* The queues are LIFO; order within one batch does not matter, and
     * every add of a batch runs before its kills. */
    for (c = adds; c; c = next) {
        next = c->add_next;
        if (do_register(l, c)) {
            rw_err_rl("tcp: event loop %u: cannot watch a rail connection (%s); closing it",
                      l->fds.id, strerror(errno));
            c->ops->close(c, NULL);
            continue;
        }
        /* Requests may have arrived before the registration, and with
         * them a reset that no event has reported yet. */
        c->rx_reset = socket_failed(c->fd);
        c->ops->run(c);
    }
    for (c = kills; c; c = next) {
        next = c->kill_next;
        c->ops->close(c, NULL);
        pthread_mutex_lock(&l->lock);
        c->released = 1;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
    }
    return stop;
}

static int next_timeout(struct rw_tcp_loop *l, int64_t now)
{
    int64_t due = l->next_scan_ms;
    struct rw_tcp_conn *c;

    if (l->set.ready_head)
        return 0;
    for (c = l->tick_head; c; c = c->tick_next)
        if (c->tick_due_ms < due)
            due = c->tick_due_ms;
    return due <= now ? 0 : (int)(due - now);
}

static void run_ready(struct rw_tcp_loop *l)
{
    struct rw_evloop_member *m = rw_evloop_ready_take(&l->set), *next;

    /* Run what was ready at this point only: a connection that yields again
     * goes to the new list and waits for the next poll. */
    for (; m; m = next) {
        struct rw_tcp_conn *c = conn_of(m);
        next = rw_evloop_ready_next(m);
        if (c->state != RW_TCP_C_CLOSED)
            c->ops->run(c);
    }
}

static void run_ticks(struct rw_tcp_loop *l, int64_t now)
{
    struct rw_tcp_conn *c, *next;

    for (c = l->tick_head; c; c = next) {
        next = c->tick_next;
        if (c->tick_due_ms <= now) {
            c->ops->tick(c, now);
            /* the tick may have closed c or others: restart the walk */
            next = l->tick_head;
            while (next && next->tick_due_ms > now)
                next = next->tick_next;
        }
    }
}

/* The epoll set of a loop's spin (rw_busy_poll_run). */
struct spin_set {
    struct rw_tcp_loop *l;
    struct epoll_event *ev;
};

/* One non-blocking look at the loop's sockets: epoll_wait's result. */
static int spin_wait_once(void *arg)
{
    struct spin_set *s = arg;
    return epoll_wait(s->l->fds.epfd, s->ev, EVENTS, 0);
}

static void *loop_main(void *arg)
{
    struct rw_tcp_loop *l = arg;
    struct epoll_event ev[EVENTS];
    char name[16];

    snprintf(name, sizeof(name), "rw-tcp-loop%u", l->fds.id);
    pthread_setname_np(pthread_self(), name);
    int served = 0; /* the last wait returned a connection's event */

    l->next_scan_ms = rw_now_ms() + SCAN_MS;
    for (;;) {
        int timeout = next_timeout(l, rw_now_ms());
        uint64_t spin = served ? atomic_load_explicit(&pool_spin_ns, memory_order_relaxed) : 0;
        struct spin_set set = {l, ev};
        int n = spin && timeout != 0 ? rw_busy_poll_run(spin_wait_once, &set, spin, timeout) : 0;
        int cmd = 0;
        int64_t now;

        if (n <= 0)
            n = rw_evloop_wait(&l->fds, ev, EVENTS, timeout);
        served = 0;

        for (int i = 0; i < n; i++) {
            struct rw_tcp_conn *c = ev[i].data.ptr;
            if (!c) {
                cmd = 1;
            } else if (c->state != RW_TCP_C_CLOSED) {
                served = 1;
                if (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    c->rx_dry = 0;
                if (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    c->rx_hup = 1;
                if (ev[i].events & EPOLLERR)
                    c->rx_reset = 1;
                c->ops->run(c);
            }
        }
        if (cmd && do_commands(l))
            break;
        run_ready(l);
        now = rw_now_ms();
        /* ticks may re-run connections: the 'ready' ones wait for the next poll */
        run_ticks(l, now);
        if (now >= l->next_scan_ms) {
            for (unsigned i = l->set.n; i-- > 0;) {
                if (i < l->set.n) {
                    struct rw_tcp_conn *c = conn_of(l->set.tab[i]);
                    c->ops->scan(c, now);
                }
            }
            l->next_scan_ms = now + SCAN_MS;
        }
    }
    return NULL;
}

static void loop_fini(struct rw_tcp_loop *l)
{
    rw_evloop_fds_close(&l->fds);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    rw_evloop_set_free(&l->set);
}

static int loop_init(struct rw_tcp_loop *l, unsigned id)
{
    l->fds.epfd = l->fds.evfd = -1;
    if (pthread_mutex_init(&l->lock, NULL))
        return RAILWIRE_E_SYSTEM;
    if (rw_tcp_cond_init(&l->cond)) {
        pthread_mutex_destroy(&l->lock);
        return RAILWIRE_E_SYSTEM;
    }
    if (rw_evloop_fds_open(&l->fds, "event loop", id)) {
        loop_fini(l);
        return RAILWIRE_E_SYSTEM;
    }
    return 0;
}

static _Atomic unsigned pool_want; /* rw_tcp_pool_configure; 0 = by cores */

void rw_tcp_pool_configure(unsigned n)
{
    atomic_store(&pool_want, n > 64 ? 64 : n);
}

static unsigned pool_size(void)
{
    unsigned n = rw_cpus_usable(), want = atomic_load(&pool_want);

    if (want)
        return want;
    return n > RW_TCP_LOOPS_MAX ? RW_TCP_LOOPS_MAX : n;
}

static void stop_loops(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        pthread_mutex_lock(&pool[i].lock);
        pool[i].stop = 1;
        pthread_mutex_unlock(&pool[i].lock);
        wake(&pool[i]);
        pthread_join(pool[i].thread, NULL);
        loop_fini(&pool[i]);
    }
    free(pool);
    pool = NULL;
    pool_n = 0;
}

int rw_tcp_pool_acquire(void)
{
    int rc = 0;

    pthread_mutex_lock(&pool_lock);
    if (pool_refs == 0) {
        unsigned n = pool_size(), i;
        pool = calloc(n, sizeof(*pool));
        if (!pool) {
            rc = RAILWIRE_E_NOMEM;
            goto out;
        }
        for (i = 0; i < n; i++) {
            rc = loop_init(&pool[i], i);
            if (!rc && pthread_create(&pool[i].thread, NULL, loop_main, &pool[i])) {
                rw_err("tcp: cannot start event loop thread %u", i);
                loop_fini(&pool[i]);
                rc = RAILWIRE_E_SYSTEM;
            }
            if (rc)
                break;
        }
        if (rc) {
            stop_loops(i);
            goto out;
        }
        pool_n = n;
        rw_debug("tcp: started %u event loop thread(s)", n);
    }
    pool_refs++;
out:
    pthread_mutex_unlock(&pool_lock);
    return rc;
}

void rw_tcp_pool_release(void)
{
    pthread_mutex_lock(&pool_lock);
    if (pool_refs && --pool_refs == 0) {
        stop_loops(pool_n);
        rw_tcp_splice_drain(); /* no connection is left to hold a pipe */
    }
    pthread_mutex_unlock(&pool_lock);
}

unsigned rw_tcp_pool_threads(void)
{
    unsigned n;
    pthread_mutex_lock(&pool_lock);
    n = pool_n;
    pthread_mutex_unlock(&pool_lock);
    return n;
}

int rw_tcp_loop_add(struct rw_tcp_conn *c, const struct rw_tcp_conn_ops *ops, unsigned place)
{
    struct rw_tcp_loop *l;

    /* The pool lives while a server domain is open, and c's domain is. */
    pthread_mutex_lock(&pool_lock);
    if (!pool_n) {
        pthread_mutex_unlock(&pool_lock);
        return RAILWIRE_E_SYSTEM;
    }
    l = &pool[place % pool_n];
    pthread_mutex_unlock(&pool_lock);
    c->loop = l;
    c->ops = ops;
    pthread_mutex_lock(&l->lock);
    c->add_next = l->adds;
    l->adds = c;
    pthread_mutex_unlock(&l->lock);
    wake(l);
    return 0;
}

void rw_tcp_loop_kill(struct rw_tcp_conn *c)
{
    struct rw_tcp_loop *l = c->loop;

    pthread_mutex_lock(&l->lock);
    if (!c->released && !c->kill_requested) {
        c->kill_requested = 1;
        c->kill_next = l->kills;
        l->kills = c;
        wake(l);
    }
    rw_evloop_await_release(&l->cond, &l->lock, &c->released, &l->fds, "rail connection");
    pthread_mutex_unlock(&l->lock);
}
