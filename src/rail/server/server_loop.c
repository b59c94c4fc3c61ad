/* SPDX-License-Identifier: MIT */
/* The server's event loop: one thread, one epoll set over the listeners,
 * every control connection and a wake eventfd.  It accepts (pausing when
 * the process is out of descriptors or memory), dispatches socket events to
 * the connections' state machines, expires handshake steps and drains, and
 * ticks the sessions (attach deadlines, rail liveness, lingers). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/server/server_internal.h"

#define RW_LOOP_EVENTS 64
#define RW_ACCEPT_BURST 64   /* accepts per listener per wakeup: the others get a turn */
#define RW_LOOP_IDLE_MS 1000

/* epoll reported `events` on conn's fd: the connection's phase says who
 * takes them. */
static void conn_event(struct rw_conn *c, unsigned events)
{
    switch (c->phase) {
    case RW_CONN_HANDSHAKE:
        rw_conn_hs_progress(c);
        return;
    case RW_CONN_SESSION: {
        /* Bytes after the ack are not part of the conversation: dropped.
         * End of stream or an error ends the control connection. */
        if (rw_conn_drain(c->fd) || (events & (EPOLLHUP | EPOLLERR)))
            rw_conn_control_ended(c, rw_now_ms());
        return;
    }
    case RW_CONN_CLOSING:
        if (rw_conn_drain(c->fd) || (events & (EPOLLHUP | EPOLLERR))) {
            rw_conn_close_fd(c);
            rw_conn_set_phase(c, RW_CONN_DEAD);
        }
        return;
    default:
        return; /* released earlier in this round */
    }
}

static void listeners_watch(struct railwire_server *srv, int on)
{
    for (unsigned i = 0; i < srv->n_lfd; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &srv->lev[i]};
        if (epoll_ctl(srv->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, srv->lfd[i], &ev) < 0)
            rw_err_rl("server: epoll_ctl on listener %u failed: %s", i, strerror(errno));
    }
}

/* Out of descriptors or memory: accept() would fail again at once, and a
 * level-triggered listener would wake the loop for ever.  Stop watching the
 * listeners for a while; the pending connections wait in the backlog. */
static void pause_accepts(struct railwire_server *srv, int err, int64_t now)
{
    srv->accept_paused = 1;
    srv->accept_resume_ms = now + RW_ACCEPT_PAUSE_MS;
    listeners_watch(srv, 0);
    rw_srv_count(srv, RW_ST(accept_pauses), 1);
    rw_srv_count(srv, RW_ST(accept_paused), 1);
    if (srv->pause_log_ms && now - srv->pause_log_ms < RW_LOG_RL_INTERVAL_MS) {
        srv->pauses_unlogged++;
        return;
    }
    rw_warn("server: cannot accept control connections: %s; accepting pauses for %d ms at a "
            "time until it clears (%lu pause(s) since the last line); check `ulimit -n` "
            "(each session needs 1 + its rails descriptors) and the host's memory",
            strerror(err), RW_ACCEPT_PAUSE_MS, srv->pauses_unlogged);
    srv->pause_log_ms = now;
    srv->pauses_unlogged = 0;
}

static void resume_accepts(struct railwire_server *srv)
{
    srv->accept_paused = 0;
    listeners_watch(srv, 1);
    rw_srv_count(srv, RW_ST(accept_paused), -1);
}

static void accept_burst(struct railwire_server *srv, unsigned li)
{
    for (int k = 0; k < RW_ACCEPT_BURST && !srv->accept_paused; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(srv->lfd[li], (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK)
                return;
            if (e == EINTR || e == ECONNABORTED || e == EPROTO)
                continue;
            if (e != EMFILE && e != ENFILE && e != ENOMEM && e != ENOBUFS) {
                rw_srv_count(srv, RW_ST(accept_errors), 1);
                rw_err_rl("server: accept on %s failed: %s", srv->listen_addr[li], strerror(e));
            }
            /* Any other failure would repeat just as fast: pause as well. */
            pause_accepts(srv, e, rw_now_ms());
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        rw_srv_admit(srv, fd, &ss);
    }
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int next_timeout(const struct railwire_server *srv, int64_t now)
{
    int64_t next = now + RW_LOOP_IDLE_MS;
    if (srv->sessions.count)
        next = min64(next, srv->next_tick_ms);
    for (const struct rw_conn *c = rw_conn_of(srv->pending.head); c; c = rw_conn_of(c->link.next))
        next = min64(next, c->deadline_ms);
    for (const struct rw_conn *c = rw_conn_of(srv->closing.head); c; c = rw_conn_of(c->link.next))
        next = min64(next, c->deadline_ms);
    if (srv->accept_paused)
        next = min64(next, srv->accept_resume_ms);
    return next <= now ? 0 : (int)(next - now);
}

static void free_dead(struct railwire_server *srv)
{
    while (srv->dead.head) {
        struct rw_conn *c = rw_conn_of(srv->dead.head);
        rw_list_remove(&srv->dead, &c->link);
        if (c->hs_live)
            rw_hs_server_fini(&c->hs);
        rw_conn_tls_free(c);
        if (c->fd >= 0)
            close(c->fd);
        free(c->eps);
        free(c);
    }
}

/* Deadlines and ticks.  A handler may move its own conn to another list
 * (`next` is taken first) but never another conn of the same list. */
static void run_timers(struct railwire_server *srv, int64_t now)
{
    struct rw_conn *c, *next;
    for (c = rw_conn_of(srv->pending.head); c; c = next) {
        next = rw_conn_of(c->link.next);
        if (now >= c->deadline_ms)
            rw_conn_expired(c, now);
    }
    for (c = rw_conn_of(srv->closing.head); c; c = next) {
        next = rw_conn_of(c->link.next);
        if (now >= c->deadline_ms)
            rw_conn_expired(c, now);
    }
    if (now >= srv->next_tick_ms) {
        for (c = rw_conn_of(srv->sessions.head); c; c = next) {
            next = rw_conn_of(c->link.next);
            rw_conn_tick(c, now);
        }
        rw_srv_rail_census(srv);
        srv->next_tick_ms = now + RW_SESSION_TICK_MS;
    }
    if (srv->accept_paused && now >= srv->accept_resume_ms)
        resume_accepts(srv);
}

static void close_everything(struct railwire_server *srv)
{
    while (srv->pending.head)
        rw_conn_drop(rw_conn_of(srv->pending.head));
    while (srv->sessions.head)
        rw_conn_release(rw_conn_of(srv->sessions.head), RW_ST(released_server_stopping),
                        "the server is stopping");
    while (srv->closing.head) {
        struct rw_conn *c = rw_conn_of(srv->closing.head);
        rw_srv_watch(c, 0);
        rw_conn_set_phase(c, RW_CONN_DEAD);
    }
    free_dead(srv);
}

static void *loop_main(void *arg)
{
    struct railwire_server *srv = arg;
    struct epoll_event evs[RW_LOOP_EVENTS];
    while (!atomic_load(&srv->stop)) {
        int n = epoll_wait(srv->epfd, evs, RW_LOOP_EVENTS, next_timeout(srv, rw_now_ms()));
        if (n < 0 && errno != EINTR) {
            rw_err("server: epoll_wait failed: %s; the server stops serving", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            struct rw_srv_ev *ev = evs[i].data.ptr;
            if (ev->kind == RW_EV_LISTENER) {
                if (!srv->accept_paused)
                    accept_burst(srv, ev->index);
            } else if (ev->kind == RW_EV_WAKE) {
                uint64_t v;
                if (read(srv->wake_fd, &v, sizeof(v)) < 0)
                    rw_debug("server: wake eventfd read: %s", strerror(errno));
            } else {
                conn_event((struct rw_conn *)(void *)ev, evs[i].events);
            }
        }
        run_timers(srv, rw_now_ms());
        rw_srv_tls_kick(srv);
        free_dead(srv);
    }
    close_everything(srv);
    return NULL;
}

int rw_srv_loop_start(struct railwire_server *srv)
{
    srv->epfd = epoll_create1(EPOLL_CLOEXEC);
    srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (srv->epfd < 0 || srv->wake_fd < 0) {
        rw_err("server: cannot create the event loop's epoll set or eventfd: %s; check "
               "`ulimit -n`", strerror(errno));
        return RAILWIRE_E_SYSTEM;
    }
    srv->wake_ev.kind = RW_EV_WAKE;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &srv->wake_ev};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->wake_fd, &ev) < 0) {
        rw_err("server: epoll_ctl on the wake eventfd failed: %s", strerror(errno));
        return RAILWIRE_E_SYSTEM;
    }
    for (unsigned i = 0; i < srv->n_lfd; i++)
        srv->lev[i] = (struct rw_srv_ev){.kind = RW_EV_LISTENER, .index = i};
    listeners_watch(srv, 1);
    int e = pthread_create(&srv->loop_thread, NULL, loop_main, srv);
    if (e != 0) {
        rw_err("server: cannot start the event loop thread: %s", strerror(e));
        return RAILWIRE_E_SYSTEM;
    }
    srv->loop_started = 1;
    return 0;
}

void rw_srv_loop_stop(struct railwire_server *srv)
{
    atomic_store(&srv->stop, 1);
    if (srv->loop_started) {
        uint64_t one = 1;
        if (write(srv->wake_fd, &one, sizeof(one)) < 0)
            rw_debug("server: wake eventfd write: %s", strerror(errno));
        pthread_join(srv->loop_thread, NULL);
        srv->loop_started = 0;
    } else {
        close_everything(srv);
    }
    if (srv->wake_fd >= 0)
        close(srv->wake_fd);
    if (srv->epfd >= 0)
        close(srv->epfd);
    srv->wake_fd = srv->epfd = -1;
}
