/* SPDX-License-Identifier: MIT */
/* One client session of the server, in its own thread: caps, rails,
 * handshake, then the control connection as the liveness signal. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/handshake_drive.h"
#include "rail/server_internal.h"
#include "rail/sock.h"
#include "wire/handshake.h"

struct session_run {
    struct rw_session *ss;
    struct railwire_server *srv;
    struct rw_hs_io io;
    struct rw_hs_server hs;
    struct sockaddr_storage local;
    unsigned n;
    struct rw_ep **eps;
};

/* Returns NULL when the request is acceptable, else the reason. */
static const char *check_caps(const struct railwire_server *srv, unsigned n, char *buf, size_t cap)
{
    if (n == 0)
        return "it asked for 0 rails";
    if (srv->dialect == RAILWIRE_DIALECT_RO && n > RW_MAX_RO_RAILS) {
        snprintf(buf, cap, "it asked for %u rails; the RO dialect allows at most %d", n,
                 RW_MAX_RO_RAILS);
        return buf;
    }
    if (n > srv->max_rails) {
        snprintf(buf, cap, "it asked for %u rails; the cap is %u rails per client", n,
                 srv->max_rails);
        return buf;
    }
    return NULL;
}

static int create_eps(struct session_run *r)
{
    struct railwire_server *srv = r->srv;
    r->eps = calloc(r->n, sizeof(*r->eps));
    if (!r->eps)
        return RAILWIRE_E_NOMEM;
    for (unsigned i = 0; i < r->n; i++) {
        struct rw_srv_domain *d = &srv->doms[i % srv->n_doms];
        unsigned depth = d->dom->max_qp_wr ? d->dom->max_qp_wr : 64;
        if (depth > 256)
            depth = 256;
        struct rw_ep_cfg cfg = {.depth = depth, .exposed = d->mrs, .n_exposed = d->n,
                                .advertise = &r->local};
        int rc = srv->ops->ep_create(d->dom, &cfg, &r->eps[i]);
        if (rc < 0) {
            r->eps[i] = NULL;
            rw_err("server: client %s: cannot create rail %u on %s (%s)", r->ss->peer, i,
                   d->dom->name, railwire_error_class(rc));
            return rc;
        }
    }
    return 0;
}

static int send_params(struct session_run *r)
{
    struct railwire_server *srv = r->srv;
    int rc;
    if (srv->dialect == RAILWIRE_DIALECT_RO) {
        struct rw_ro_params *p = calloc(r->n, sizeof(*p));
        if (!p)
            return RAILWIRE_E_NOMEM;
        for (unsigned i = 0; i < r->n; i++) {
            struct rw_srv_domain *d = &srv->doms[i % srv->n_doms];
            p[i].qp = r->eps[i]->local;
            p[i].n_layers = d->n;
            p[i].layers = d->descs;
        }
        rc = rw_hs_server_set_ro_params(&r->hs, p, r->n);
        free(p);
    } else {
        struct rw_rw_params *p = calloc(r->n, sizeof(*p));
        if (!p)
            return RAILWIRE_E_NOMEM;
        for (unsigned i = 0; i < r->n; i++) {
            p[i].qp = r->eps[i]->local;
            p[i].arena = srv->doms[i % srv->n_doms].descs[0];
        }
        rc = rw_hs_server_set_rw_params(&r->hs, p, r->n);
        free(p);
    }
    if (rc < 0)
        rw_err("server: client %s: cannot encode the params (%s)", r->ss->peer,
               railwire_error_class(rc));
    return rc;
}

/* Waits until the control connection ends or the server stops.  Returns 1
 * when the control connection ended, 0 when the server is stopping. */
static int hold_control(struct session_run *r)
{
    uint8_t junk[256];
    while (!atomic_load(&r->srv->stop)) {
        struct pollfd p = {.fd = r->ss->fd, .events = POLLIN};
        int rc = poll(&p, 1, 200);
        if (rc < 0 && errno != EINTR)
            return 1;
        if (rc <= 0)
            continue;
        ssize_t n = recv(r->ss->fd, junk, sizeof(junk), 0);
        if (n == 0)
            return 1;
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return 1;
        /* Bytes after the ack are not part of the conversation: ignore them. */
    }
    return 0;
}

/* Counts the session's rails that may still carry traffic: attached and
 * serving, of unknown state (verbs), or still expected within the attach
 * deadline. */
static unsigned rails_alive(const struct session_run *r, int64_t now, int64_t attach_deadline)
{
    unsigned alive = 0;
    for (unsigned i = 0; i < r->n; i++) {
        int st = r->srv->ops->ep_liveness ? r->srv->ops->ep_liveness(r->eps[i]) : RW_EP_UNKNOWN;
        if (st == RW_EP_LIVE || st == RW_EP_UNKNOWN || (st == RW_EP_WAITING && now < attach_deadline))
            alive++;
    }
    return alive;
}

/* The control connection ended: keeps the session while its rails live,
 * for at most the linger.  Writes why it ends into why. */
static void linger(struct session_run *r, int64_t acked_ms, char *why, size_t cap)
{
    struct railwire_server *srv = r->srv;
    int64_t start = rw_now_ms(), attach_deadline = acked_ms + srv->io_timeout_ms;
    unsigned alive = rails_alive(r, start, attach_deadline);

    if (alive == 0) {
        snprintf(why, cap, "its control connection ended and every rail is closed");
        return;
    }
    if (srv->linger_ms == 0) {
        snprintf(why, cap, "its control connection ended (session linger 0)");
        return;
    }
    rw_info("server: client %s: control connection ended; %u of %u rail(s) still live: the "
            "session lingers for up to %d ms", r->ss->peer, alive, r->n, srv->linger_ms);
    pthread_mutex_lock(&srv->lock);
    srv->n_lingering++;
    pthread_mutex_unlock(&srv->lock);
    for (;;) {
        if (atomic_load(&srv->stop)) {
            snprintf(why, cap, "the server is stopping");
            break;
        }
        int64_t now = rw_now_ms();
        if (rails_alive(r, now, attach_deadline) == 0) {
            snprintf(why, cap, "its control connection ended and every rail has closed since "
                     "(lingered %lld ms)", (long long)(now - start));
            break;
        }
        if (now - start >= srv->linger_ms) {
            snprintf(why, cap, "its control connection ended and the linger of %d ms ran out",
                     srv->linger_ms);
            break;
        }
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&srv->lock);
    srv->n_lingering--;
    pthread_mutex_unlock(&srv->lock);
}

static void run(struct session_run *r)
{
    struct railwire_server *srv = r->srv;
    const char *peer = r->ss->peer;
    char why[160];
    socklen_t sl = sizeof(r->local);
    if (getsockname(r->ss->fd, (struct sockaddr *)&r->local, &sl) < 0)
        memset(&r->local, 0, sizeof(r->local));

    int rc = rw_hs_server_drive(&r->io, &r->hs);
    if (rc < 0 || r->hs.state != RW_HS_NEED_PARAMS) {
        rw_warn("server: client %s: no valid request (%s); closing", peer,
                rc < 0 ? railwire_error_class(rc) : "unexpected state");
        return;
    }
    r->n = r->hs.n_rails;
    const char *reason = check_caps(srv, r->n, why, sizeof(why));
    if (reason) {
        rw_warn("server: rejecting client %s: %s", peer, reason);
        rw_hs_server_reject(&r->hs);
        return;
    }
    rc = create_eps(r);
    if (rc == 0)
        rc = send_params(r);
    if (rc < 0) {
        rw_warn("server: rejecting client %s: cannot set up its %u rail(s) (%s)", peer, r->n,
                railwire_error_class(rc));
        rw_hs_server_reject(&r->hs);
        return;
    }
    rc = rw_hs_server_drive(&r->io, &r->hs);
    if (rc < 0 || r->hs.state != RW_HS_NEED_DECISION) {
        rw_warn("server: client %s: handshake failed after the params (%s); closing", peer,
                rc < 0 ? railwire_error_class(rc) : "unexpected state");
        return;
    }
    int accept = 1;
    for (unsigned i = 0; i < r->n && accept; i++) {
        /* Expect mode: the ack does not wait for the client's rail
         * connections (tcp attaches them when they arrive); the client
         * confirms each rail itself before its connect returns. */
        rc = srv->ops->ep_connect(r->eps[i], &r->hs.ids[i], 0);
        if (rc < 0) {
            rw_warn("server: refusing client %s: rail %u did not connect (%s); check the client's "
                    "log and the rail addresses", peer, i, railwire_error_class(rc));
            accept = 0;
        }
    }
    rw_hs_server_decide(&r->hs, accept);
    rc = rw_hs_server_drive(&r->io, &r->hs);
    if (!accept)
        return;
    if (rc < 0 || r->hs.state != RW_HS_DONE) {
        rw_warn("server: client %s: the ack could not be sent (%s); closing", peer,
                rc < 0 ? railwire_error_class(rc) : "unexpected state");
        return;
    }
    rw_info("server: client %s: %u %s rail(s) up", peer, r->n, srv->ops->name);
    int64_t acked = rw_now_ms();
    if (hold_control(r))
        linger(r, acked, why, sizeof(why));
    else
        snprintf(why, sizeof(why), "the server is stopping");
    rw_info("server: client %s: session released: %s; releasing its %u rail(s)", peer, why, r->n);
}

void *rw_session_main(void *arg)
{
    struct rw_session *ss = arg;
    struct railwire_server *srv = ss->srv;
    struct session_run *r = calloc(1, sizeof(*r));
    if (!r) {
        rw_err("server: client %s: out of memory", ss->peer);
        goto out;
    }
    r->ss = ss;
    r->srv = srv;
    rw_hs_io_init(&r->io, ss->fd, srv->io_timeout_ms);
    if (rw_hs_server_init(&r->hs, srv->dialect) < 0) {
        rw_err("server: client %s: cannot start the handshake", ss->peer);
        free(r);
        goto out;
    }
    run(r);
    if (r->eps) {
        for (unsigned i = r->n; i-- > 0;)
            if (r->eps[i])
                srv->ops->ep_destroy(r->eps[i]);
        free(r->eps);
    }
    rw_hs_server_fini(&r->hs);
    free(r);
out:
    /* Release the slot before the client can see the end of the stream, so
     * a client that reconnects at once is not refused for a cap. */
    pthread_mutex_lock(&srv->lock);
    srv->n_live--;
    pthread_mutex_unlock(&srv->lock);
    shutdown(ss->fd, SHUT_RDWR); /* the reaper closes the fd */
    atomic_store(&ss->done, 1);
    return NULL;
}
