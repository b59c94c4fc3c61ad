/* SPDX-License-Identifier: MIT */
/* One session on the server's event loop, after its handshake
 * (server_handshake.c): the control connection as one liveness signal, the
 * rails as the other, the attach deadline, the linger and the release; and
 * the helpers both halves use to let go of a connection. */
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

#define RW_DRAIN_READS 16 /* reads per wakeup of bytes nobody expects */

void rw_conn_close_fd(struct rw_conn *c)
{
    if (c->fd < 0)
        return;
    rw_srv_watch(c, 0);
    close(c->fd);
    c->fd = -1;
}

/* Reads and drops what is readable now, so a close does not turn into a
 * reset.  Returns 1 at end of stream or on an error, 0 otherwise. */
int rw_conn_drain(int fd)
{
    uint8_t junk[4096];
    for (int i = 0; i < RW_DRAIN_READS; i++) {
        ssize_t k = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
        if (k > 0)
            continue;
        if (k < 0 && errno == EINTR)
            continue;
        return !(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
    return 0;
}

void rw_conn_destroy_eps(struct rw_conn *c)
{
    if (!c->eps)
        return;
    for (unsigned i = c->n; i-- > 0;)
        if (c->eps[i])
            c->srv->ops->ep_destroy(c->eps[i]);
    free(c->eps);
    c->eps = NULL;
}

static unsigned eps_left(const struct rw_conn *c)
{
    unsigned n = 0;
    for (unsigned i = 0; c->eps && i < c->n; i++)
        n += c->eps[i] != NULL;
    return n;
}

void rw_conn_give_slot(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    if (!c->slot)
        return;
    c->slot = 0;
    srv->slots_held--;
    c->peer->sessions--;
    rw_srv_count(srv, RW_ST(slots_held), -1);
}

/* Counts the rails that may still carry traffic: attached and serving, of
 * unknown state (verbs), or still expected within the attach deadline. */
static unsigned rails_alive(const struct rw_conn *c, int64_t now)
{
    const struct railwire_server *srv = c->srv;
    unsigned alive = 0;
    for (unsigned i = 0; i < c->n; i++) {
        if (!c->eps[i])
            continue;
        int st = srv->ops->ep_liveness ? srv->ops->ep_liveness(c->eps[i]) : RW_EP_UNKNOWN;
        if (st == RW_EP_LIVE || st == RW_EP_UNKNOWN ||
            (st == RW_EP_WAITING && now < c->acked_ms + srv->io_timeout_ms))
            alive++;
    }
    return alive;
}

void rw_conn_control_ended(struct rw_conn *c, int64_t now)
{
    struct railwire_server *srv = c->srv;
    rw_conn_close_fd(c);
    c->control_end_ms = now;
    unsigned alive = rails_alive(c, now);
    if (alive == 0) {
        rw_conn_release(c, RW_ST(released_control_ended),
                        "its control connection ended and every rail is closed");
        return;
    }
    if (srv->linger_ms == 0) {
        rw_conn_release(c, RW_ST(released_control_ended),
                        "its control connection ended (session linger 0)");
        return;
    }
    rw_info_rl("server: client %s: control connection ended; %u of %u rail(s) still live: the "
               "session lingers for up to %d ms", c->name, alive, c->n, srv->linger_ms);
    c->linger_end_ms = now + srv->linger_ms;
    c->phase = RW_CONN_LINGER; /* same list as SESSION */
    rw_srv_count(srv, RW_ST(sessions_lingering), 1);
}

/* io_timeout_ms after the ack: rails still waiting for their connection
 * will not get one.  Releases them, and the session when none attached. */
static void attach_deadline(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    unsigned never = 0, attached = 0;
    c->attach_checked = 1;
    for (unsigned i = 0; i < c->n; i++) {
        if (!c->eps[i])
            continue;
        int st = srv->ops->ep_liveness ? srv->ops->ep_liveness(c->eps[i]) : RW_EP_UNKNOWN;
        if (st == RW_EP_WAITING) {
            srv->ops->ep_destroy(c->eps[i]);
            c->eps[i] = NULL;
            never++;
        } else {
            attached++; /* LIVE, DEAD, or UNKNOWN (verbs cannot tell) */
        }
    }
    if (never == 0)
        return;
    pthread_mutex_lock(&srv->stats_lock);
    srv->st.rails_never_attached += never;
    srv->st.rails_live -= never;
    pthread_mutex_unlock(&srv->stats_lock);
    if (attached == 0) {
        char why[128];
        snprintf(why, sizeof(why), "none of its %u rail(s) attached within %d ms of the ack",
                 c->n, srv->io_timeout_ms);
        rw_conn_release(c, RW_ST(released_no_rail_attached), why);
        return;
    }
    rw_info_rl("server: client %s: %u of its %u rail(s) did not attach within %d ms of the ack; "
               "released them", c->name, never, c->n, srv->io_timeout_ms);
}

void rw_conn_tick(struct rw_conn *c, int64_t now)
{
    struct railwire_server *srv = c->srv;
    char why[160];
    if (!c->attach_checked && now >= c->acked_ms + srv->io_timeout_ms) {
        attach_deadline(c);
        if (c->phase == RW_CONN_DEAD)
            return;
    }
    unsigned alive = rails_alive(c, now);
    if (c->phase == RW_CONN_SESSION) {
        if (alive == 0)
            rw_conn_release(c, RW_ST(released_rails_closed),
                            "every rail has closed while its control connection was open");
        return;
    }
    if (alive == 0) {
        snprintf(why, sizeof(why), "its control connection ended and every rail has closed "
                 "since (lingered %lld ms)", (long long)(now - c->control_end_ms));
        rw_conn_release(c, RW_ST(released_control_ended), why);
    } else if (now >= c->linger_end_ms) {
        snprintf(why, sizeof(why), "its control connection ended and the linger of %d ms ran "
                 "out", srv->linger_ms);
        rw_conn_release(c, RW_ST(released_linger_expired), why);
    }
}

/* One limiter per release reason, so a storm of one kind (a flood of
 * clients that never open their rails) does not hide the others. */
static struct rw_log_rl release_rl[7] = {RW_LOG_RL_INIT, RW_LOG_RL_INIT, RW_LOG_RL_INIT,
                                         RW_LOG_RL_INIT, RW_LOG_RL_INIT, RW_LOG_RL_INIT,
                                         RW_LOG_RL_INIT};

static unsigned release_site(size_t reason)
{
    if (reason == RW_ST(released_control_ended))
        return 0;
    if (reason == RW_ST(released_linger_expired))
        return 1;
    if (reason == RW_ST(released_no_rail_attached))
        return 2;
    if (reason == RW_ST(released_rails_closed))
        return 3;
    if (reason == RW_ST(released_server_stopping))
        return 4;
    if (reason == RW_ST(released_displaced))
        return 5;
    return 6;
}

void rw_conn_release(struct rw_conn *c, size_t reason, const char *why)
{
    struct railwire_server *srv = c->srv;
    unsigned left = eps_left(c);
    rw_log_rl(&release_rl[release_site(reason)], RAILWIRE_LOG_INFO,
              "server: client %s: session released: %s; releasing its %u rail(s)", c->name, why,
              left);
    rw_conn_destroy_eps(c);
    /* The slot goes before the client can see the end of the stream, so a
     * client that reconnects at once is not refused for a cap. */
    rw_conn_give_slot(c);
    pthread_mutex_lock(&srv->stats_lock);
    srv->st.sessions_live--;
    srv->st.rails_live -= left;
    if (c->phase == RW_CONN_LINGER)
        srv->st.sessions_lingering--;
    pthread_mutex_unlock(&srv->stats_lock);
    rw_srv_count(srv, reason, 1);
    struct rw_srv_peer *p = c->peer;
    c->peer = NULL;
    rw_srv_peer_put(srv, p);
    if (c->fd >= 0) {
        rw_srv_watch(c, 0);
        rw_conn_tls_close_notify(c);
        shutdown(c->fd, SHUT_RDWR);
        rw_conn_close_fd(c);
    }
    rw_conn_set_phase(c, RW_CONN_DEAD);
}
