/* SPDX-License-Identifier: MIT */
/* A connection's place on the server's loop: the list of its phase, and
 * the events its fd is watched for.  The bottom of the server's files:
 * everything else may call it, it calls nothing of theirs. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "rail/server/server_internal.h"

struct rw_list *rw_conn_list_of(struct railwire_server *srv, const struct rw_conn *c)
{
    switch (c->phase) {
    case RW_CONN_HANDSHAKE:
        return &srv->pending;
    case RW_CONN_SESSION:
    case RW_CONN_LINGER:
        return &srv->sessions;
    case RW_CONN_CLOSING:
        return &srv->closing;
    case RW_CONN_DEAD:
        return &srv->dead;
    default:
        return NULL;
    }
}

void rw_conn_set_phase(struct rw_conn *c, enum rw_conn_phase phase)
{
    struct rw_list *from = rw_conn_list_of(c->srv, c);
    c->phase = phase;
    struct rw_list *to = rw_conn_list_of(c->srv, c);
    if (from == to)
        return;
    if (from)
        rw_list_remove(from, &c->link);
    if (to)
        rw_list_push_tail(to, &c->link);
}

int rw_srv_watch(struct rw_conn *c, unsigned events)
{
    if (c->fd < 0 || events == c->events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = &c->ev};
    int op = c->events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    if (epoll_ctl(c->srv->epfd, op, c->fd, &ev) < 0) {
        rw_err_rl("server: epoll_ctl on client %s failed: %s", c->name, strerror(errno));
        return -1;
    }
    c->events = events;
    return 0;
}
