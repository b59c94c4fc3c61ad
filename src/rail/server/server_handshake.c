/* SPDX-License-Identifier: MIT */
/* One control connection's handshake on the server's event loop: the
 * handshake state machine of wire/handshake.h over a non-blocking socket
 * (each step with its deadline), up to the session (server_session.c) or a
 * rejection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/server/server_internal.h"
#include "common/sock.h"

#define RW_WATCH_IN (EPOLLIN | EPOLLRDHUP)

static const char *const step_what[3] = {"its request byte", "its rail ids (after the params)",
                                         "the ack"};
static const char *const step_late[3] = {"sent no request byte", "did not send its rail ids",
                                         "did not take the ack"};

/* Leaves the pending pool (the handshake ended one way or another). */
static void leave_pool(struct rw_conn *c)
{
    if (c->phase != RW_CONN_HANDSHAKE)
        return;
    rw_conn_tls_leave_gate(c);
    c->peer->pending--;
    rw_srv_count(c->srv, RW_ST(pending), -1);
}

/* The handshake ended without a session: frees what it held. */
static void end_handshake(struct rw_conn *c)
{
    rw_conn_destroy_eps(c);
    rw_conn_give_slot(c);
    leave_pool(c);
    struct rw_srv_peer *p = c->peer;
    c->peer = NULL;
    rw_srv_peer_put(c->srv, p);
}

void rw_conn_reject_close(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    if (c->phase == RW_CONN_HANDSHAKE)
        end_handshake(c);
    rw_conn_tls_close_notify(c);
    int done = rw_conn_drain(c->fd);
    shutdown(c->fd, SHUT_WR);
    if (done || srv->closing.count >= RW_SERVER_MAX_REJECTING) {
        rw_conn_close_fd(c);
        rw_conn_set_phase(c, RW_CONN_DEAD);
        return;
    }
    c->deadline_ms = rw_now_ms() + RW_REJECT_LINGER_MS;
    rw_conn_set_phase(c, RW_CONN_CLOSING);
    if (rw_srv_watch(c, RW_WATCH_IN) < 0) {
        rw_conn_close_fd(c);
        rw_conn_set_phase(c, RW_CONN_DEAD);
    }
}

void rw_conn_drop(struct rw_conn *c)
{
    end_handshake(c);
    rw_conn_close_fd(c);
    rw_conn_set_phase(c, RW_CONN_DEAD);
}

/* A failed handshake: counted, logged (rate-limited) and closed. */
static void hs_failed(struct rw_conn *c, const char *what)
{
    rw_srv_count(c->srv, RW_ST(handshake_failures), 1);
    rw_warn_rl("server: client %s: handshake failed (%s); closing", c->name, what);
    rw_conn_drop(c);
}

/* Returns NULL when the request is acceptable, else the reason. */
static const char *check_rails(const struct railwire_server *srv, unsigned n, char *buf,
                               size_t cap)
{
    if (n == 0)
        return "it asked for 0 rails";
    if (srv->dialect == RAILWIRE_DIALECT_RO && n > RW_MAX_RO_RAILS) {
        snprintf(buf, cap, "it asked for %u rails; the RO dialect allows at most %d", n,
                 RW_MAX_RO_RAILS);
        return buf;
    }
    if (n > srv->max_rails) {
        snprintf(buf, cap, "it asked for %u rails; the cap is %u rails per client (max_rails)",
                 n, srv->max_rails);
        return buf;
    }
    return NULL;
}

static int create_eps(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    c->eps = calloc(c->n, sizeof(*c->eps));
    if (!c->eps)
        return RAILWIRE_E_NOMEM;
    for (unsigned i = 0; i < c->n; i++) {
        struct rw_srv_domain *d = &srv->doms[i % srv->n_doms];
        unsigned depth = d->dom->max_qp_wr ? d->dom->max_qp_wr : 64;
        if (depth > 256)
            depth = 256;
        struct rw_ep_cfg cfg = {.depth = depth, .exposed = d->mrs, .n_exposed = d->n,
                                .advertise = &c->local,
                                /* the session's rails share one slice of the
                                 * tcp queue budget */
                                .same_session = i ? c->eps[0] : NULL,
                                .set_rails = c->n};
        int rc = srv->ops->ep_create(d->dom, &cfg, &c->eps[i]);
        if (rc < 0) {
            c->eps[i] = NULL;
            rw_err_rl("server: client %s: cannot create rail %u on %s (%s)", c->name, i,
                      d->dom->name, railwire_error_class(rc));
            return rc;
        }
    }
    return 0;
}

static int give_params(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    int rc;
    if (srv->dialect == RAILWIRE_DIALECT_RO) {
        struct rw_ro_params *p = calloc(c->n, sizeof(*p));
        if (!p)
            return RAILWIRE_E_NOMEM;
        for (unsigned i = 0; i < c->n; i++) {
            struct rw_srv_domain *d = &srv->doms[i % srv->n_doms];
            p[i].qp = c->eps[i]->local;
            p[i].n_layers = d->n;
            p[i].layers = d->descs;
        }
        rc = rw_hs_server_set_ro_params(&c->hs, p, c->n);
        free(p);
    } else {
        struct rw_rw_params *p = calloc(c->n, sizeof(*p));
        if (!p)
            return RAILWIRE_E_NOMEM;
        for (unsigned i = 0; i < c->n; i++) {
            p[i].qp = c->eps[i]->local;
            p[i].arena = srv->doms[i % srv->n_doms].descs[0];
        }
        rc = rw_hs_server_set_rw_params(&c->hs, p, c->n);
        free(p);
    }
    if (rc < 0)
        rw_err_rl("server: client %s: cannot encode the params (%s)", c->name,
                  railwire_error_class(rc));
    return rc;
}

/* Sessions whose handshake completed and that are not released (the loop
 * thread is the only writer of the count). */
static unsigned sessions_complete(const struct railwire_server *srv)
{
    return (unsigned)srv->st.sessions_live;
}

/* c's peer is at max_sessions_per_peer: releases that peer's oldest
 * lingering session (control connection ended, rails kept for a while), if
 * it has one, so a client that reconnects is not refused for sessions it
 * has left.  On verbs a lingering session cannot tell whether its rails are
 * still used, so without this a client that closes and reopens quickly was
 * refused for the whole linger.  Sessions whose control connection is open
 * are never displaced. */
static void displace_lingering(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    struct rw_conn *old = NULL;
    rw_list_for_each(s, &srv->sessions, struct rw_conn, link)
        if (s->phase == RW_CONN_LINGER && s->peer == c->peer &&
            (!old || s->control_end_ms < old->control_end_ms))
            old = s;
    if (old)
        rw_conn_release(old, RW_ST(released_displaced),
                        "its control connection had ended and a new session from the same "
                        "address needs its place (max_sessions_per_peer)");
}

/* The request byte arrived (NEED_PARAMS): caps, then a slot and the rails,
 * or a rejection. */
static void on_request(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    char buf[160];
    c->n = c->hs.n_rails;
    const char *why = check_rails(srv, c->n, buf, sizeof(buf));
    size_t counter = RW_ST(rejected_rails);
    if (!why && srv->max_per_peer && c->peer->sessions >= srv->max_per_peer)
        displace_lingering(c);
    if (!why && srv->max_per_peer && c->peer->sessions >= srv->max_per_peer) {
        snprintf(buf, sizeof(buf), "%u sessions from this address already "
                 "(max_sessions_per_peer)", c->peer->sessions);
        why = buf;
        counter = RW_ST(rejected_per_peer);
    }
    /* Only complete handshakes count against max_clients (on_ids checks
     * again): connections that stall in their handshake cannot take the
     * sessions' places; the pending pool and the per-peer cap bound them. */
    if (!why && sessions_complete(srv) >= srv->max_clients) {
        snprintf(buf, sizeof(buf), "%u sessions already (max_clients)", sessions_complete(srv));
        why = buf;
        counter = RW_ST(rejected_max_clients);
    }
    if (!why) {
        c->slot = 1;
        srv->slots_held++;
        c->peer->sessions++;
        rw_srv_count(srv, RW_ST(slots_held), 1);
        int rc = create_eps(c);
        if (rc == 0)
            rc = give_params(c);
        if (rc < 0) {
            snprintf(buf, sizeof(buf), "cannot set up its %u rail(s) (%s)", c->n,
                     railwire_error_class(rc));
            why = buf;
            counter = RW_ST(rejected_setup);
        }
    }
    if (why) {
        rw_warn_rl("server: rejecting client %s: %s", c->name, why);
        rw_srv_count(srv, counter, 1);
        if (c->hs.state == RW_HS_NEED_PARAMS)
            rw_hs_server_reject(&c->hs);
        rw_conn_reject_close(c);
        return;
    }
    c->step = 1;
    c->deadline_ms = rw_now_ms() + srv->io_timeout_ms;
}

/* The client's ids arrived (NEED_DECISION): every rail expects its
 * connection, then the ack.  The ack never waits for the rails. */
static int on_ids(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    int accept = 1;
    if (sessions_complete(srv) >= srv->max_clients) {
        /* others completed while this one ran its handshake */
        rw_warn_rl("server: refusing client %s: %u sessions already (max_clients)", c->name,
                   sessions_complete(srv));
        rw_srv_count(srv, RW_ST(rejected_max_clients), 1);
        accept = 0;
    }
    for (unsigned i = 0; i < c->n && accept; i++) {
        int rc = srv->ops->ep_connect(c->eps[i], &c->hs.ids[i], 0);
        if (rc < 0) {
            rw_warn_rl("server: refusing client %s: rail %u did not connect (%s); check the "
                       "client's log and the rail addresses", c->name, i,
                       railwire_error_class(rc));
            accept = 0;
        }
    }
    rw_hs_server_decide(&c->hs, accept);
    c->step = 2;
    c->deadline_ms = rw_now_ms() + srv->io_timeout_ms;
    return accept;
}

static void become_session(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    leave_pool(c);
    rw_hs_server_fini(&c->hs);
    c->hs_live = 0;
    c->acked_ms = rw_now_ms();
    rw_conn_set_phase(c, RW_CONN_SESSION);
    pthread_mutex_lock(&srv->stats_lock);
    srv->st.sessions_live++;
    srv->st.sessions_opened++;
    srv->st.rails_live += c->n;
    pthread_mutex_unlock(&srv->stats_lock);
    rw_info_rl("server: client %s: %u %s rail(s) up", c->name, c->n, srv->ops->name);
    if (rw_srv_watch(c, RW_WATCH_IN) < 0)
        rw_conn_release(c, RW_ST(released_control_ended), "its control connection cannot be "
                        "watched (epoll_ctl failed)");
}

/* The socket would block (k is RW_CONN_WANT_READ or _WRITE): watches it for
 * what it waits for; any other k: the handshake failed for `what`. */
static void hs_stall(struct rw_conn *c, ssize_t k, const char *what)
{
    if (k != RW_CONN_WANT_READ && k != RW_CONN_WANT_WRITE)
        hs_failed(c, what);
    else if (rw_srv_watch(c, RW_WATCH_IN | (k == RW_CONN_WANT_WRITE ? EPOLLOUT : 0)) < 0)
        hs_failed(c, "epoll_ctl failed");
}

/* RW_HS_SEND: sends what the handshake has pending.  Returns 1 to go on, 0
 * when it waits for the socket or the connection was dropped. */
static int hs_send(struct rw_conn *c, char *what, size_t cap)
{
    const uint8_t *p;
    size_t n = rw_hs_server_pending(&c->hs, &p);
    ssize_t k = rw_conn_send(c, p, n, what, cap);
    if (k <= 0) {
        hs_stall(c, k, what);
        return 0;
    }
    rw_hs_server_sent(&c->hs, (size_t)k);
    return 1;
}

/* RW_HS_RECV: reads exactly what the message still needs, never a byte
 * past it.  Returns 1 to go on, 0 when it waits for the socket or the
 * connection was dropped. */
static int hs_recv(struct rw_conn *c, char *what, size_t cap)
{
    uint8_t buf[4096];
    size_t n = rw_hs_server_need(&c->hs);
    n = n == 0 ? 1 : n > sizeof(buf) ? sizeof(buf) : n;
    if (rw_conn_plain_sniff(c)) {
        rw_conn_reject_close(c);
        return 0;
    }
    ssize_t k = rw_conn_recv(c, buf, n, what, cap);
    if (k > 0) {
        ssize_t used = rw_hs_server_feed(&c->hs, buf, (size_t)k);
        if (used >= 0)
            return 1;
        snprintf(what, cap, "%s", railwire_error_class((int)used));
        hs_failed(c, what);
    } else if (k == 0) {
        int e = rw_hs_server_eof(&c->hs);
        snprintf(what, cap, "it closed the connection before %s: %s", step_what[c->step],
                 railwire_error_class(e));
        hs_failed(c, what);
    } else {
        hs_stall(c, k, what);
    }
    return 0;
}

/* TLS refused c (rc is RW_CONN_TLS_DROP or RW_CONN_TLS_REJECT; counted and
 * logged already): closes it that way.  0 (TLS goes on) does nothing. */
static void tls_refused(struct rw_conn *c, int rc)
{
    if (rc == RW_CONN_TLS_REJECT)
        rw_conn_reject_close(c);
    else if (rc < 0)
        rw_conn_drop(c);
}

/* Runs the handshake as far as the socket allows without waiting: TLS
 * first when the listener runs it, then WIRE.md's bytes (inside TLS). */
void rw_conn_hs_progress(struct rw_conn *c)
{
    char what[300];
    if (c->tls_state != RW_CTLS_NONE) {
        int rc = rw_conn_tls_progress(c);
        if (rc != 1) {
            tls_refused(c, rc);
            return;
        }
    }
    while (c->phase == RW_CONN_HANDSHAKE) {
        switch (c->hs.state) {
        case RW_HS_SEND:
            if (!hs_send(c, what, sizeof(what)))
                return;
            break;
        case RW_HS_RECV:
            if (!hs_recv(c, what, sizeof(what)))
                return;
            break;
        case RW_HS_NEED_PARAMS:
            on_request(c);
            break;
        case RW_HS_NEED_DECISION:
            c->refused = !on_ids(c);
            break;
        case RW_HS_DONE:
            if (c->refused || c->step != 2) {
                hs_failed(c, "a rail could not be connected");
                return;
            }
            become_session(c);
            return;
        case RW_HS_REJECTED:
            rw_conn_reject_close(c);
            return;
        default:
            snprintf(what, sizeof(what), "%s", railwire_error_class(c->hs.error));
            hs_failed(c, what);
            return;
        }
    }
}

void rw_conn_start(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    socklen_t sl = sizeof(c->local);
    if (getsockname(c->fd, (struct sockaddr *)&c->local, &sl) < 0)
        memset(&c->local, 0, sizeof(c->local));
    /* The control connection is the session's liveness signal: a client
     * that vanishes without a FIN must still end its session. */
    rw_sock_keepalive(c->fd, srv->io_timeout_ms);
    c->born_ms = rw_now_ms();
    c->deadline_ms = c->born_ms + srv->first_byte_ms;
    c->step = 0;
    if (rw_hs_server_init(&c->hs, srv->dialect) < 0) {
        hs_failed(c, "cannot start the handshake");
        return;
    }
    c->hs_live = 1;
    rw_info_rl("server: client %s connected", c->name);
    if (rw_srv_watch(c, RW_WATCH_IN) < 0) {
        hs_failed(c, "epoll_ctl failed");
        return;
    }
    int rc = rw_conn_tls_start(c);
    if (rc != 1) {
        tls_refused(c, rc); /* else TLS runs first (or waits for a place) */
        return;
    }
    rw_conn_hs_progress(c); /* the request byte is often there already */
}

void rw_srv_tls_kick(struct railwire_server *srv)
{
    if (!rw_srv_tls_gate_open(srv))
        return;
    struct rw_conn *c, *next;
    for (c = rw_conn_of(srv->pending.head); c; c = next) {
        next = rw_conn_of(c->link.next);
        if (!rw_conn_tls_gate_take(c))
            continue;
        /* Its handshake may drop it (moved to the dead list): the next one
         * was taken first, and nothing here touches another connection. */
        rw_conn_hs_progress(c); /* in the pending list: still in its handshake */
        if (!rw_srv_tls_gate_open(srv))
            return;
    }
}

void rw_conn_expired(struct rw_conn *c, int64_t now)
{
    struct railwire_server *srv = c->srv;
    if (c->phase == RW_CONN_CLOSING) {
        rw_conn_close_fd(c);
        rw_conn_set_phase(c, RW_CONN_DEAD);
        return;
    }
    if (c->phase != RW_CONN_HANDSHAKE)
        return;
    if (rw_conn_tls_expired(c, now)) {
        rw_conn_drop(c);
        return;
    }
    int limit = c->step == 0 ? srv->first_byte_ms : srv->io_timeout_ms;
    rw_srv_count(srv, RW_ST(handshake_timeouts), 1);
    rw_warn_rl("server: client %s %s within %d ms (%lld ms after it connected); closing",
               c->name, step_late[c->step], limit, (long long)(now - c->born_ms));
    rw_conn_drop(c);
}
