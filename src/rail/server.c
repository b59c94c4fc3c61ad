/* SPDX-License-Identifier: MIT */
/* The server: publish memory on every domain once, listen, accept clients
 * into their own session threads, and tear everything down in bounded time. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/device_spec.h"
#include "rail/parallel.h"
#include "rail/server_internal.h"
#include "rail/sock.h"
#include "rail/transport_select.h"

#define RW_SERVER_BACKLOG 128
#define RW_REJECT_LINGER_MS 2000

void railwire_server_opts_init(railwire_server_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof(*o));
    o->dialect = RAILWIRE_DIALECT_RO;
    o->transport = RAILWIRE_TRANSPORT_AUTO;
    o->listen_host = "0.0.0.0";
    o->listen_port = "0";
    o->gid_index = -1;
    o->max_rails_per_client = RW_MAX_RW_RAILS; /* RO requests are bounded to 8 by the wire */
    o->max_clients = 64;
    o->io_timeout_ms = 10000;
    o->session_linger_ms = RW_DEFAULT_SESSION_LINGER_MS;
}

static int check_opts(const railwire_server_opts *o)
{
    uint64_t total = 0;
    if (o->dialect == RAILWIRE_DIALECT_RO) {
        if (!o->layers || o->n_layers == 0 || o->n_layers > RW_MAX_LAYERS) {
            rw_err("server: the RO dialect needs 1..%d layers (got %u)", RW_MAX_LAYERS,
                   o->n_layers);
            return RAILWIRE_E_INVALID;
        }
        for (unsigned i = 0; i < o->n_layers; i++) {
            if (!o->layers[i].addr || o->layers[i].len == 0) {
                rw_err("server: layer %u is empty", i);
                return RAILWIRE_E_INVALID;
            }
            total += o->layers[i].len;
        }
    } else if (o->dialect == RAILWIRE_DIALECT_RW) {
        if (!o->arena.addr || o->arena.len == 0) {
            rw_err("server: the RW dialect needs an arena");
            return RAILWIRE_E_INVALID;
        }
        total = o->arena.len;
    } else {
        rw_err("server: unknown dialect %d", (int)o->dialect);
        return RAILWIRE_E_INVALID;
    }
    if (o->max_bytes && total > o->max_bytes) {
        rw_err("server: %llu bytes to publish exceed the cap of %llu bytes (max_bytes)",
               (unsigned long long)total, (unsigned long long)o->max_bytes);
        return RAILWIRE_E_LIMIT;
    }
    if ((o->n_rail_addrs && !o->rail_addrs) || (o->n_devices && !o->devices)) {
        rw_err("server: n_rail_addrs %u / n_devices %u given without the array", o->n_rail_addrs,
               o->n_devices);
        return RAILWIRE_E_INVALID;
    }
    if (o->max_rails_per_client == 0 || o->max_rails_per_client > RW_MAX_RW_RAILS) {
        rw_err("server: max_rails_per_client %u is not 1..%d", o->max_rails_per_client,
               RW_MAX_RW_RAILS);
        return RAILWIRE_E_INVALID;
    }
    if (o->max_clients == 0) {
        rw_err("server: max_clients must be at least 1");
        return RAILWIRE_E_INVALID;
    }
    if (o->session_linger_ms < 0) {
        rw_err("server: session_linger_ms %d is negative", o->session_linger_ms);
        return RAILWIRE_E_INVALID;
    }
    if (o->n_listen_hosts > RW_SERVER_MAX_LISTENERS || (o->n_listen_hosts && !o->listen_hosts)) {
        rw_err("server: %u listen hosts given; 1..%d, with the array", o->n_listen_hosts,
               RW_SERVER_MAX_LISTENERS);
        return RAILWIRE_E_INVALID;
    }
    return 0;
}

static void close_domain(const struct rw_transport_ops *ops, struct rw_srv_domain *d)
{
    for (unsigned k = d->n; k-- > 0;)
        if (d->mrs && d->mrs[k])
            ops->mr_dereg(d->mrs[k]);
    free(d->mrs);
    free(d->descs);
    if (d->dom)
        ops->domain_close(d->dom);
    memset(d, 0, sizeof(*d));
}

struct open_ctx {
    struct railwire_server *srv;
    const railwire_server_opts *o;
};

static int open_domain(void *arg, unsigned i)
{
    struct open_ctx *cx = arg;
    struct railwire_server *srv = cx->srv;
    const railwire_server_opts *o = cx->o;
    struct rw_srv_domain *d = &srv->doms[i];
    struct rw_domain_cfg dc = {.role = RW_ROLE_SERVER, .gid_index = o->gid_index,
                               .mtu_cap = o->mtu, .io_timeout_ms = o->io_timeout_ms};
    struct rw_domain_place place;
    /* i runs over the domains of the transport in use (n_rail_addrs for
     * tcp, n_devices for verbs): the other list may be shorter. */
    const char *addr = o->n_rail_addrs ? o->rail_addrs[i % o->n_rail_addrs]
                                       : srv->listen_addr[i % srv->n_lfd];
    const char *dev = o->n_devices ? o->devices[i % o->n_devices]
                      : srv->defaults ? srv->defaults[i].device : NULL;
    rw_domain_place_fill(&dc, &place, srv->ops->name, addr, dev, i);
    int rc = srv->ops->domain_open(&dc, &d->dom);
    if (rc < 0) {
        d->dom = NULL;
        rw_err("server: cannot open the %s domain %s (%s)", srv->ops->name,
               dc.device ? dc.device : "(default)", railwire_error_class(rc));
        return rc;
    }
    unsigned n = srv->dialect == RAILWIRE_DIALECT_RO ? o->n_layers : 1;
    d->mrs = calloc(n, sizeof(*d->mrs));
    d->descs = calloc(n, sizeof(*d->descs));
    if (!d->mrs || !d->descs) {
        rw_err("server: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    d->n = n;
    for (unsigned k = 0; k < n; k++) {
        const railwire_region *reg =
            srv->dialect == RAILWIRE_DIALECT_RO ? &o->layers[k] : &o->arena;
        int access = srv->dialect == RAILWIRE_DIALECT_RO
                         ? RW_ACCESS_REMOTE_READ
                         : RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE;
        rc = srv->ops->mr_reg(d->dom, reg->addr, reg->len, access, &d->mrs[k]);
        if (rc < 0) {
            d->mrs[k] = NULL;
            rw_err("server: registering %s %u (%zu bytes) on %s failed (%s)",
                   srv->dialect == RAILWIRE_DIALECT_RO ? "layer" : "arena", k, reg->len,
                   d->dom->name, railwire_error_class(rc));
            return rc;
        }
        d->descs[k].base_addr = d->mrs[k]->remote_base;
        d->descs[k].rkey = d->mrs[k]->rkey;
    }
    return 0;
}

/* Joins and frees finished sessions (all of them when `all`). */
static void reap(struct railwire_server *srv, int all)
{
    for (;;) {
        struct rw_session *victim = NULL;
        pthread_mutex_lock(&srv->lock);
        for (struct rw_session **pp = &srv->sessions; *pp; pp = &(*pp)->next) {
            if (all || atomic_load(&(*pp)->done)) {
                victim = *pp;
                *pp = victim->next;
                break;
            }
        }
        pthread_mutex_unlock(&srv->lock);
        if (!victim)
            return;
        pthread_join(victim->thread, NULL);
        close(victim->fd);
        free(victim);
    }
}

/* Rejects a client over the clients cap: end-of-stream now (the client sees
 * peer-rejected), then drain what it sent and close it later, so the close
 * does not turn into a reset. */
static void reject_over_cap(struct railwire_server *srv, int fd, const char *peer)
{
    rw_warn("server: rejecting client %s: %u sessions already (max_clients)", peer,
            srv->max_clients);
    shutdown(fd, SHUT_WR);
    if (srv->n_rej == RW_SERVER_MAX_REJECTING) {
        close(fd);
        return;
    }
    srv->rej_fd[srv->n_rej] = fd;
    srv->rej_deadline[srv->n_rej] = rw_now_ms() + RW_REJECT_LINGER_MS;
    srv->n_rej++;
}

static void drain_rejected(struct railwire_server *srv, const struct pollfd *pfd)
{
    int64_t now = rw_now_ms();
    for (unsigned i = 0; i < srv->n_rej;) {
        int fin = now >= srv->rej_deadline[i];
        if (!fin && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
            uint8_t junk[256];
            ssize_t n = recv(srv->rej_fd[i], junk, sizeof(junk), 0);
            fin = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
        }
        if (fin) {
            close(srv->rej_fd[i]);
            srv->rej_fd[i] = srv->rej_fd[srv->n_rej - 1];
            srv->rej_deadline[i] = srv->rej_deadline[srv->n_rej - 1];
            srv->n_rej--;
            break; /* pfd indices no longer match: the rest next round */
        }
        i++;
    }
}

static void accept_one(struct railwire_server *srv, int lfd)
{
    int fd;
    if (rw_sock_accept(lfd, &fd) < 0)
        return;
    char peer[80];
    rw_sock_name(fd, 1, peer, sizeof(peer));
    /* The control connection is the session's liveness signal: a client
     * that vanishes without a FIN must still end its session. */
    rw_sock_keepalive(fd, srv->io_timeout_ms);
    pthread_mutex_lock(&srv->lock);
    int full = srv->n_live >= srv->max_clients;
    pthread_mutex_unlock(&srv->lock);
    if (full) {
        reject_over_cap(srv, fd, peer);
        return;
    }
    struct rw_session *ss = calloc(1, sizeof(*ss));
    if (!ss) {
        rw_err("server: out of memory for client %s; closing it", peer);
        close(fd);
        return;
    }
    ss->srv = srv;
    ss->fd = fd;
    memcpy(ss->peer, peer, sizeof(ss->peer));
    atomic_init(&ss->done, 0);
    pthread_mutex_lock(&srv->lock);
    srv->n_live++;
    int rc = pthread_create(&ss->thread, NULL, rw_session_main, ss);
    if (rc == 0) {
        ss->next = srv->sessions;
        srv->sessions = ss;
    } else {
        srv->n_live--;
    }
    pthread_mutex_unlock(&srv->lock);
    if (rc != 0) {
        rw_err("server: cannot start a thread for client %s (%s); closing it", peer, strerror(rc));
        close(fd);
        free(ss);
        return;
    }
    rw_info("server: client %s connected", peer);
}

static void *accept_main(void *arg)
{
    struct railwire_server *srv = arg;
    struct pollfd pfd[RW_SERVER_MAX_REJECTING + RW_SERVER_MAX_LISTENERS];
    struct pollfd *lp = pfd + RW_SERVER_MAX_REJECTING;
    while (!atomic_load(&srv->stop)) {
        for (unsigned i = 0; i < srv->n_rej; i++) {
            pfd[i].fd = srv->rej_fd[i];
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
        }
        for (unsigned i = srv->n_rej; i < RW_SERVER_MAX_REJECTING; i++)
            pfd[i] = (struct pollfd){.fd = -1};
        for (unsigned i = 0; i < srv->n_lfd; i++)
            lp[i] = (struct pollfd){.fd = srv->lfd[i], .events = POLLIN};
        int rc = poll(pfd, RW_SERVER_MAX_REJECTING + srv->n_lfd, 100);
        if (rc < 0 && errno != EINTR) {
            rw_err("server: poll on the listening sockets failed: %s", strerror(errno));
            break;
        }
        if (srv->n_rej)
            drain_rejected(srv, pfd);
        for (unsigned i = 0; rc > 0 && i < srv->n_lfd; i++)
            if (lp[i].revents & POLLIN)
                accept_one(srv, srv->lfd[i]);
        reap(srv, 0);
    }
    return NULL;
}

/* Binds every control address on one port.  tcp rails without rail_addrs
 * listen where the control port does: each listener's numeric address is
 * kept, even when the host was a name. */
static int listen_all(struct railwire_server *srv, const railwire_server_opts *o)
{
    const char *one = o->listen_host;
    const char *const *hosts = o->n_listen_hosts ? o->listen_hosts : &one;
    unsigned n = o->n_listen_hosts ? o->n_listen_hosts : 1;
    const char *port = o->listen_port ? o->listen_port : "0";
    char bound[16];

    for (unsigned i = 0; i < n; i++) {
        int rc = rw_sock_listen(hosts[i], port, RW_SERVER_BACKLOG, &srv->lfd[i]);
        if (rc < 0)
            return rc;
        srv->n_lfd = i + 1;
        if (i == 0) {
            srv->port = rw_sock_local_port(srv->lfd[0]);
            snprintf(bound, sizeof(bound), "%u", srv->port);
            port = bound; /* the others share the first one's port */
        }
        rw_sock_host(srv->lfd[i], srv->listen_addr[i], sizeof(srv->listen_addr[i]));
    }
    return 0;
}

int railwire_server_create(const railwire_server_opts *o, railwire_server **out)
{
    if (!o || !out) {
        rw_err("server: NULL options or out");
        return RAILWIRE_E_INVALID;
    }
    int rc = check_opts(o);
    if (rc < 0)
        return rc;
    struct railwire_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        rw_err("server: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    srv->dialect = o->dialect;
    srv->max_rails = o->max_rails_per_client;
    srv->max_clients = o->max_clients;
    srv->io_timeout_ms = o->io_timeout_ms > 0 ? o->io_timeout_ms : 10000;
    srv->linger_ms = o->session_linger_ms;
    atomic_init(&srv->stop, 0);
    pthread_mutex_init(&srv->lock, NULL);
    rc = rw_transport_select(o->transport, &srv->ops);
    if (rc < 0)
        goto fail;
    rc = listen_all(srv, o);
    if (rc < 0)
        goto fail;
    unsigned nd = !strcmp(srv->ops->name, "verbs") ? o->n_devices : o->n_rail_addrs;
    if (nd == 0 && !strcmp(srv->ops->name, "verbs")) {
        /* No devices named: serve on every active port (or RAILWIRE_DEVICES). */
        srv->defaults = calloc(RAILWIRE_MAX_DEFAULT_PLACES, sizeof(*srv->defaults));
        int n = srv->defaults ? rw_default_places("verbs", srv->defaults,
                                                  RAILWIRE_MAX_DEFAULT_PLACES) : 0;
        if (n > 0)
            nd = (unsigned)n;
    }
    if (nd == 0)
        nd = srv->n_lfd; /* tcp: rails listen where the control port does */
    if (nd > RW_MAX_RW_RAILS) {
        rw_err("server: %u rail addresses/devices; at most %d", nd, RW_MAX_RW_RAILS);
        rc = RAILWIRE_E_INVALID;
        goto fail;
    }
    srv->doms = calloc(nd, sizeof(*srv->doms));
    if (!srv->doms) {
        rc = RAILWIRE_E_NOMEM;
        rw_err("server: out of memory");
        goto fail;
    }
    srv->n_doms = nd;
    /* Registering big memory is slow: each device registers in parallel. */
    struct open_ctx ocx = {srv, o};
    rc = rw_parallel_for(nd, 1, open_domain, &ocx);
    if (rc < 0)
        goto fail;
    int prc = pthread_create(&srv->accept_thread, NULL, accept_main, srv);
    if (prc != 0) {
        rw_err("server: cannot start the accept thread: %s", strerror(prc));
        rc = RAILWIRE_E_SYSTEM;
        goto fail;
    }
    srv->accept_started = 1;
    rw_info("server: %s dialect on port %u (%u address(es)) over %s (%u domain(s)), session "
            "linger %d ms", srv->dialect == RAILWIRE_DIALECT_RO ? "RO" : "RW", srv->port,
            srv->n_lfd, srv->ops->name, nd, srv->linger_ms);
    *out = srv;
    return 0;

fail:
    railwire_server_destroy(srv);
    return rc;
}

unsigned railwire_server_port(const railwire_server *srv)
{
    return srv ? srv->port : 0;
}

unsigned railwire_server_sessions(const railwire_server *srv)
{
    if (!srv)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&srv->lock);
    unsigned n = srv->n_live;
    pthread_mutex_unlock((pthread_mutex_t *)&srv->lock);
    return n;
}

void railwire_server_destroy(railwire_server *srv)
{
    if (!srv)
        return;
    atomic_store(&srv->stop, 1);
    if (srv->accept_started)
        pthread_join(srv->accept_thread, NULL);
    for (unsigned i = 0; i < srv->n_lfd; i++)
        close(srv->lfd[i]);
    for (unsigned i = 0; i < srv->n_rej; i++)
        close(srv->rej_fd[i]);
    pthread_mutex_lock(&srv->lock);
    for (struct rw_session *s = srv->sessions; s; s = s->next)
        shutdown(s->fd, SHUT_RDWR); /* wakes a session blocked in the handshake */
    pthread_mutex_unlock(&srv->lock);
    reap(srv, 1);
    if (srv->doms)
        for (unsigned i = srv->n_doms; i-- > 0;)
            close_domain(srv->ops, &srv->doms[i]);
    free(srv->doms);
    free(srv->defaults);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}
