/* SPDX-License-Identifier: MIT */
/* The pool of client event loops (see tcp_cli_loop.h).  Each loop waits in
 * epoll_wait for its rail sockets, its eventfd (commands) and the timeout
 * scan; runs each rail with an event for one quantum (tcp_cli_io.c), then
 * the rails that used up their quantum last turn.  A loop whose rails await
 * small answers polls for a short window before it sleeps (busy_poll_us,
 * common/busy_poll.h). */
#include "tcp/tcp_cli_loop.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_cli_io.h"

#define SCAN_MS 50  /* timeout scan period while the loop has rails */
#define EVENTS 128  /* epoll events per wait */

struct rw_tcp_cli_loop {
    unsigned id;
    int epfd;
    int evfd;                          /* wakes the loop: commands waiting */
    pthread_t thread;
    pthread_mutex_t run;               /* held while the loop handles events (fork) */
    pthread_mutex_t lock;
    pthread_cond_t cond;               /* signalled when an ep is released */
    /* guarded by lock */
    struct rw_tcp_cli_ep *adds, *kicks, *kills;
    int stop;
    /* guarded by pool_lock */
    unsigned n_eps;                    /* eps attached and not yet detached */
    int orphan;                        /* inherited by a fork()ed child: no thread */
    /* loop thread only */
    struct rw_tcp_cli_ep **eps;
    unsigned n_tab, cap_tab;
    struct rw_tcp_cli_ep *ready_head, *ready_tail;
    uint64_t spin_ns;                  /* spin before the next sleep */
    int64_t next_scan_ms;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rw_tcp_cli_loop *pool[RW_TCP_CLI_LOOPS_MAX];
static unsigned pool_n;                /* loops running */
static unsigned pool_eps;              /* eps attached to them */
static _Atomic unsigned pool_eps_seen; /* pool_eps, for rw_tcp_cli_pool_eps */
static unsigned pool_want;             /* rw_tcp_cli_pool_configure; 0 = cores */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void wake(struct rw_tcp_cli_loop *l)
{
    uint64_t one = 1;
    /* EAGAIN: the counter is already non-zero, the loop will wake. */
    if (write(l->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rw_err_rl("tcp: cannot wake client event loop %u: %s", l->id, strerror(errno));
}

static void ready_add(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep)
{
    if (ep->link.on_ready)
        return;
    ep->link.on_ready = 1;
    ep->link.ready_next = NULL;
    if (l->ready_tail)
        l->ready_tail->link.ready_next = ep;
    else
        l->ready_head = ep;
    l->ready_tail = ep;
}

static void ready_del(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_ep **pp, *prev = NULL;

    if (!ep->link.on_ready)
        return;
    for (pp = &l->ready_head; *pp; prev = *pp, pp = &(*pp)->link.ready_next) {
        if (*pp == ep) {
            *pp = ep->link.ready_next;
            if (l->ready_tail == ep)
                l->ready_tail = prev;
            break;
        }
    }
    ep->link.on_ready = 0;
}

/* Loop thread: stops watching a dead ep, completes what it left
 * outstanding and releases it to whoever waits in rw_tcp_cli_loop_kill. */
static void drop(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep)
{
    if (ep->link.idx != (unsigned)-1) {
        if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, ep->fd, NULL) < 0 && errno != ENOENT && errno != EBADF)
            rw_warn_rl("tcp: client event loop %u: epoll_ctl(DEL) failed: %s", l->id,
                       strerror(errno));
        if (ep->link.idx < l->n_tab && l->eps[ep->link.idx] == ep) {
            l->eps[ep->link.idx] = l->eps[--l->n_tab];
            l->eps[ep->link.idx]->link.idx = ep->link.idx;
        }
        ep->link.idx = (unsigned)-1;
    }
    ready_del(l, ep);
    rw_tcp_cli_finish(ep);
    pthread_mutex_lock(&l->lock);
    ep->link.released = 1;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Loop thread: runs ep once; drops it when it died, queues it when it used
 * its quantum. */
static void run_ep(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep, int writable)
{
    uint64_t spin = 0;
    int again;

    if (ep->link.released)
        return;
    again = rw_tcp_cli_run(ep, writable, &spin);
    if (again < 0) {
        drop(l, ep);
        return;
    }
    if (again)
        ready_add(l, ep);
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
        epoll_ctl(ep->link.loop->epfd, EPOLL_CTL_MOD, ep->fd, &ev) < 0 && errno != ENOENT &&
        errno != EBADF)
        rw_warn_rl("tcp: client event loop %u: epoll_ctl(MOD) failed: %s", ep->link.loop->id,
                   strerror(errno));
}

static int do_register(struct rw_tcp_cli_loop *l, struct rw_tcp_cli_ep *ep)
{
    struct epoll_event ev = {.data.ptr = ep};
    int rc = 0;

    if (l->n_tab == l->cap_tab) {
        unsigned nc = l->cap_tab ? l->cap_tab * 2 : 16;
        struct rw_tcp_cli_ep **n = realloc(l->eps, nc * sizeof(*n));
        if (!n)
            return RAILWIRE_E_NOMEM;
        l->eps = n;
        l->cap_tab = nc;
    }
    pthread_mutex_lock(&ep->lock); /* against rw_tcp_cli_arm changing ep->attend */
    ev.events = ep_events(!ep->attend);
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, ep->fd, &ev) < 0)
        rc = RAILWIRE_E_SYSTEM;
    pthread_mutex_unlock(&ep->lock);
    if (rc)
        return rc;
    ep->link.idx = l->n_tab;
    l->eps[l->n_tab++] = ep;
    return 0;
}

/* Runs the queued commands: adds, then kicks, then kills (a kick is always
 * queued before its ep's kill, so a killed ep is never on a later list).
 * Returns 1 when the loop must stop. */
static int do_commands(struct rw_tcp_cli_loop *l)
{
    struct rw_tcp_cli_ep *adds, *kicks, *kills, *ep, *next;
    uint64_t v;
    int stop;

    if (read(l->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        rw_err_rl("tcp: client event loop %u: reading its eventfd failed: %s", l->id,
                  strerror(errno));
    pthread_mutex_lock(&l->lock);
    adds = l->adds;
    kicks = l->kicks;
    kills = l->kills;
    l->adds = l->kicks = l->kills = NULL;
    stop = l->stop;
    pthread_mutex_unlock(&l->lock);
    for (ep = adds; ep; ep = next) {
        next = ep->link.add_next;
        if (do_register(l, ep)) {
            rw_err_rl("tcp: client event loop %u: cannot watch a rail socket (%s); the rail fails",
                      l->id, strerror(errno));
            ep->link.idx = (unsigned)-1;
            rw_tcp_cli_fail(ep, RAILWIRE_E_SYSTEM, NULL);
            drop(l, ep);
            continue;
        }
        run_ep(l, ep, 1); /* requests may have been posted before the registration */
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
    struct rw_tcp_cli_ep *ep = l->ready_head, *next;

    /* Run what was ready at this point only: an ep that yields again waits
     * for the next poll, behind the events that arrived meanwhile. */
    l->ready_head = l->ready_tail = NULL;
    for (; ep; ep = next) {
        next = ep->link.ready_next;
        ep->link.on_ready = 0;
        ep->link.ready_next = NULL;
        run_ep(l, ep, 0);
    }
}

static void scan(struct rw_tcp_cli_loop *l, int64_t now)
{
    for (unsigned i = l->n_tab; i-- > 0;) {
        struct rw_tcp_cli_ep *ep;
        if (i >= l->n_tab)
            continue;
        ep = l->eps[i];
        if (rw_tcp_cli_scan(ep, now))
            drop(l, ep);
    }
}

/* The epoll set of a loop's spin (rw_busy_poll_run). */
struct spin_set {
    struct rw_tcp_cli_loop *l;
    struct epoll_event *ev;
};

static int spin_wait_once(void *arg)
{
    struct spin_set *s = arg;
    return epoll_wait(s->l->epfd, s->ev, EVENTS, 0);
}

static int wait_events(struct rw_tcp_cli_loop *l, struct epoll_event *ev)
{
    int64_t now = rw_now_ms();
    int timeout = -1, n = 0;

    if (l->ready_head)
        timeout = 0;
    else if (l->n_tab)
        timeout = l->next_scan_ms <= now ? 0 : (int)(l->next_scan_ms - now);
    if (l->spin_ns && timeout != 0) {
        struct spin_set set = {l, ev};
        n = rw_busy_poll_run(spin_wait_once, &set, l->spin_ns, timeout);
    }
    l->spin_ns = 0;
    if (n == 0)
        n = epoll_wait(l->epfd, ev, EVENTS, timeout);
    if (n < 0) {
        if (errno != EINTR)
            rw_err_rl("tcp: client event loop %u: epoll_wait failed: %s", l->id, strerror(errno));
        n = 0;
    }
    return n;
}

static void *loop_main(void *arg)
{
    struct rw_tcp_cli_loop *l = arg;
    struct epoll_event ev[EVENTS];
    char name[16];

    snprintf(name, sizeof(name), "rw-tcp-cli%u", l->id);
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
                run_ep(l, ep, (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0);
        }
        if (cmd)
            stop = do_commands(l);
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

static void loop_free(struct rw_tcp_cli_loop *l)
{
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->evfd >= 0)
        close(l->evfd);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->run);
    free(l->eps);
    free(l);
}

/* Creates and starts loop `id`.  Returns it, or NULL (logged). */
static struct rw_tcp_cli_loop *loop_start(unsigned id)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    struct rw_tcp_cli_loop *l = calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    l->id = id;
    l->epfd = l->evfd = -1;
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
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev) < 0) {
        rw_err("tcp: cannot create client event loop %u: %s; check the process's file descriptor "
               "limit", id, strerror(errno));
        loop_free(l);
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l)) {
        rw_err("tcp: cannot start client event loop thread %u; check the process's thread limit",
               id);
        loop_free(l);
        return NULL;
    }
    return l;
}

/* With pool_lock held: stops and joins every loop of the pool (they have no
 * ep left). */
static void stop_all(void)
{
    for (unsigned i = 0; i < pool_n; i++) {
        struct rw_tcp_cli_loop *l = pool[i];
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_mutex_unlock(&l->lock);
        wake(l);
        pthread_join(l->thread, NULL);
        loop_free(l);
        pool[i] = NULL;
    }
    if (pool_n)
        rw_debug("tcp: stopped %u client event loop thread(s)", pool_n);
    pool_n = 0;
}

/* --- fork: the child has none of the loop threads --- */

static void fork_prepare(void)
{
    pthread_mutex_lock(&pool_lock);
    for (unsigned i = 0; i < pool_n; i++) {
        pthread_mutex_lock(&pool[i]->run);
        pthread_mutex_lock(&pool[i]->lock);
    }
}

static void fork_parent(void)
{
    for (unsigned i = pool_n; i-- > 0;) {
        pthread_mutex_unlock(&pool[i]->lock);
        pthread_mutex_unlock(&pool[i]->run);
    }
    pthread_mutex_unlock(&pool_lock);
}

/* In the child: every inherited ep is dead and orphaned (its connection
 * belongs to the parent; nothing may be sent on it, nor shut down), and the
 * pool forgets the loops (their epoll sets are shared with the parent). */
static void orphan_ep(struct rw_tcp_cli_ep *ep)
{
    ep->link.orphan = 1;
    if (ep->state == RW_TCP_CLI_UP) {
        ep->state = RW_TCP_CLI_DEAD;
        ep->err = RAILWIRE_E_RAIL_DOWN;
    }
}

static void fork_child(void)
{
    for (unsigned i = 0; i < pool_n; i++) {
        struct rw_tcp_cli_loop *l = pool[i];
        struct rw_tcp_cli_ep *ep;
        for (unsigned k = 0; k < l->n_tab; k++)
            orphan_ep(l->eps[k]);
        for (ep = l->adds; ep; ep = ep->link.add_next)
            orphan_ep(ep);
        l->adds = l->kicks = l->kills = NULL;
        l->orphan = 1;
        pthread_mutex_unlock(&l->lock);
        pthread_mutex_unlock(&l->run);
        if (!l->n_eps)
            loop_free(l);
        pool[i] = NULL;
    }
    pool_n = 0;
    pool_eps = 0;
    atomic_store_explicit(&pool_eps_seen, 0, memory_order_relaxed);
    pthread_mutex_unlock(&pool_lock);
}

static void fork_setup(void)
{
    if (pthread_atfork(fork_prepare, fork_parent, fork_child))
        rw_warn("tcp: cannot register the client loops' fork handlers; a fork()ed child must not "
                "close railsets it inherited");
}

/* --- the pool --- */

static unsigned max_loops(void)
{
    unsigned want = pool_want;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    if (n < 1)
        n = 1;
    if (n > (long)RW_TCP_CLI_LOOPS_MAX)
        n = RW_TCP_CLI_LOOPS_MAX;
    return want && want < (unsigned)n ? want : (unsigned)n;
}

void rw_tcp_cli_pool_configure(unsigned n)
{
    pthread_mutex_lock(&pool_lock);
    pool_want = n > RW_TCP_CLI_LOOPS_MAX ? RW_TCP_CLI_LOOPS_MAX : n;
    pthread_mutex_unlock(&pool_lock);
}

unsigned rw_tcp_cli_pool_eps(void)
{
    return atomic_load_explicit(&pool_eps_seen, memory_order_relaxed);
}

unsigned rw_tcp_cli_pool_threads(void)
{
    unsigned n;
    pthread_mutex_lock(&pool_lock);
    n = pool_n;
    pthread_mutex_unlock(&pool_lock);
    return n;
}

pthread_t rw_tcp_cli_loop_thread(const struct rw_tcp_cli_ep *ep)
{
    return ep->link.loop->thread;
}

int rw_tcp_cli_loop_attach(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = NULL;

    pthread_once(&fork_once, fork_setup);
    pthread_mutex_lock(&pool_lock);
    if (pool_n < max_loops() && pool_n <= pool_eps) {
        l = loop_start(pool_n);
        if (l)
            pool[pool_n++] = l;
    }
    if (!l) {
        /* the least loaded loop */
        for (unsigned i = 0; i < pool_n; i++)
            if (!l || pool[i]->n_eps < l->n_eps)
                l = pool[i];
    }
    if (!l) {
        pthread_mutex_unlock(&pool_lock);
        return RAILWIRE_E_SYSTEM;
    }
    l->n_eps++;
    pool_eps++;
    atomic_store_explicit(&pool_eps_seen, pool_eps, memory_order_relaxed);
    ep->link.loop = l;
    ep->link.idx = (unsigned)-1;
    pthread_mutex_lock(&l->lock);
    ep->link.add_next = l->adds;
    l->adds = ep;
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_unlock(&pool_lock);
    wake(l);
    return 0;
}

void rw_tcp_cli_loop_kick(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = ep->link.loop;
    int w = 0;

    pthread_mutex_lock(&l->lock);
    if (!ep->link.kicked && !ep->link.released) {
        ep->link.kicked = 1;
        ep->link.kick_next = l->kicks;
        l->kicks = ep;
        w = 1;
    }
    pthread_mutex_unlock(&l->lock);
    if (w)
        wake(l);
}

void rw_tcp_cli_loop_kill(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = ep->link.loop;
    int64_t start = rw_now_ms();
    int warned = 0;

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
        wake(l);
    }
    while (!ep->link.kill_done) {
        /* Handlers never block, so this ends within one loop turn; the
         * deadline only makes a stuck loop visible. */
        if (rw_tcp_cond_wait_until(&l->cond, &l->lock, rw_now_ms() + 1000) && !warned &&
            rw_now_ms() - start >= 5000) {
            rw_err("tcp: client event loop %u has not released a rail for 5 s; still waiting (the "
                   "loop thread looks stuck: attach a debugger)", l->id);
            warned = 1;
        }
    }
    pthread_mutex_unlock(&l->lock);
}

void rw_tcp_cli_loop_detach(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = ep->link.loop;

    if (!l)
        return;
    ep->link.loop = NULL;
    pthread_mutex_lock(&pool_lock);
    if (ep->link.orphan) {
        if (--l->n_eps == 0)
            loop_free(l);
    } else {
        l->n_eps--;
        --pool_eps;
        atomic_store_explicit(&pool_eps_seen, pool_eps, memory_order_relaxed);
        if (pool_eps == 0)
            stop_all();
    }
    pthread_mutex_unlock(&pool_lock);
}
