/* SPDX-License-Identifier: MIT */
/* The bookkeeping every tcp event loop shares (see tcp_evloop.h). */
#include "tcp/tcp_evloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_internal.h"

int rw_evloop_fds_open(struct rw_evloop_fds *f, const char *what, unsigned id)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

    f->what = what;
    f->id = id;
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    f->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (f->epfd < 0 || f->evfd < 0 || epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->evfd, &ev) < 0) {
        rw_err("tcp: cannot create %s %u: %s; check the process's file descriptor limit", what, id,
               strerror(errno));
        rw_evloop_fds_close(f);
        return RAILWIRE_E_SYSTEM;
    }
    return 0;
}

void rw_evloop_fds_close(struct rw_evloop_fds *f)
{
    if (f->epfd >= 0)
        close(f->epfd);
    if (f->evfd >= 0)
        close(f->evfd);
    f->epfd = f->evfd = -1;
}

void rw_evloop_wake(const struct rw_evloop_fds *f)
{
    uint64_t one = 1;
    /* EAGAIN: the counter is already non-zero, the loop will wake. */
    if (write(f->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rw_err_rl("tcp: cannot wake %s %u: %s", f->what, f->id, strerror(errno));
}

void rw_evloop_drain(const struct rw_evloop_fds *f)
{
    uint64_t v;
    if (read(f->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        rw_err_rl("tcp: %s %u: reading its eventfd failed: %s", f->what, f->id, strerror(errno));
}

int rw_evloop_wait(const struct rw_evloop_fds *f, struct epoll_event *ev, int max, int timeout)
{
    int n = epoll_wait(f->epfd, ev, max, timeout);
    if (n < 0) {
        if (errno != EINTR)
            rw_err_rl("tcp: %s %u: epoll_wait failed: %s", f->what, f->id, strerror(errno));
        n = 0;
    }
    return n;
}

void rw_evloop_unwatch(const struct rw_evloop_fds *f, int fd)
{
    if (epoll_ctl(f->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 && errno != ENOENT && errno != EBADF)
        rw_warn_rl("tcp: %s %u: epoll_ctl(DEL) failed: %s", f->what, f->id, strerror(errno));
}

void rw_evloop_member_init(struct rw_evloop_member *m)
{
    m->idx = (unsigned)-1;
    m->on_ready = 0;
    m->ready_next = NULL;
}

int rw_evloop_set_add(struct rw_evloop_set *s, struct rw_evloop_member *m, unsigned first_cap)
{
    if (s->n == s->cap) {
        unsigned nc = s->cap ? s->cap * 2 : first_cap;
        struct rw_evloop_member **t = realloc(s->tab, nc * sizeof(*t));
        if (!t)
            return RAILWIRE_E_NOMEM;
        s->tab = t;
        s->cap = nc;
    }
    m->idx = s->n;
    s->tab[s->n++] = m;
    return 0;
}

static void ready_del(struct rw_evloop_set *s, struct rw_evloop_member *m)
{
    struct rw_evloop_member **pp, *prev = NULL;

    if (!m->on_ready)
        return;
    for (pp = &s->ready_head; *pp; prev = *pp, pp = &(*pp)->ready_next) {
        if (*pp == m) {
            *pp = m->ready_next;
            if (s->ready_tail == m)
                s->ready_tail = prev;
            break;
        }
    }
    /* ready_next stays: a member removed while a taken list is walked
     * (rw_evloop_ready_take) keeps that walk going; the loop skips it
     * there by its own state. */
    m->on_ready = 0;
}

void rw_evloop_set_remove(struct rw_evloop_set *s, struct rw_evloop_member *m)
{
    ready_del(s, m);
    if (m->idx < s->n && s->tab[m->idx] == m) {
        s->tab[m->idx] = s->tab[--s->n];
        s->tab[m->idx]->idx = m->idx;
    }
    m->idx = (unsigned)-1;
}

void rw_evloop_set_free(struct rw_evloop_set *s)
{
    free(s->tab);
    s->tab = NULL;
    s->n = s->cap = 0;
}

void rw_evloop_ready_push(struct rw_evloop_set *s, struct rw_evloop_member *m)
{
    if (m->on_ready)
        return;
    m->on_ready = 1;
    m->ready_next = NULL;
    if (s->ready_tail)
        s->ready_tail->ready_next = m;
    else
        s->ready_head = m;
    s->ready_tail = m;
}

struct rw_evloop_member *rw_evloop_ready_take(struct rw_evloop_set *s)
{
    struct rw_evloop_member *m = s->ready_head;
    s->ready_head = s->ready_tail = NULL;
    return m;
}

struct rw_evloop_member *rw_evloop_ready_next(struct rw_evloop_member *m)
{
    struct rw_evloop_member *next = m->ready_next;
    m->on_ready = 0;
    m->ready_next = NULL;
    return next;
}

void rw_evloop_await_release(pthread_cond_t *cond, pthread_mutex_t *lock, const int *done,
                             const struct rw_evloop_fds *f, const char *member)
{
    int64_t start = rw_now_ms();
    int warned = 0;

    while (!*done) {
        if (rw_tcp_cond_wait_until(cond, lock, rw_now_ms() + 1000) && !warned &&
            rw_now_ms() - start >= 5000) {
            rw_err("tcp: %s %u has not released a %s for 5 s; still waiting (the loop thread "
                   "looks stuck: attach a debugger)", f->what, f->id, member);
            warned = 1;
        }
    }
}
