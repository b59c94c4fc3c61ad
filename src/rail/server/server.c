/* SPDX-License-Identifier: MIT */
/* The server: options, publishing the memory on every domain once, the
 * listeners, and tearing everything down in bounded time.  The serving
 * itself runs on the event loop (server_loop.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/time.h"
#include "rail/session/device_spec.h"
#include "common/parallel.h"
#include "rail/server/server_internal.h"
#include "rail/server/server_opts.h"
#include "common/sock.h"
#include "transport/select.h"

#define RW_SERVER_BACKLOG 1024

/* Everything but the published memory (server_mem.c checks that). */
static int check_opts(const railwire_server_opts *o)
{
    if (rw_busy_poll_check("server", o->busy_poll_us) < 0)
        return RAILWIRE_E_INVALID;
    if (o->dialect != RAILWIRE_DIALECT_RO && o->dialect != RAILWIRE_DIALECT_RW) {
        rw_err("server: unknown dialect %d", (int)o->dialect);
        return RAILWIRE_E_INVALID;
    }
    if (o->zero_copy_reads > 1) {
        rw_err("server: zero_copy_reads is %u: use 0 (copy READ answers) or 1 (by reference)",
               o->zero_copy_reads);
        return RAILWIRE_E_INVALID;
    }
    if (o->reserved3) {
        rw_err("server: railwire_server_opts.reserved3 is %u: leave it 0", o->reserved3);
        return RAILWIRE_E_INVALID;
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
    if (o->max_pending == 0) {
        rw_err("server: max_pending must be at least 1");
        return RAILWIRE_E_INVALID;
    }
    if (o->first_byte_timeout_ms < 0) {
        rw_err("server: first_byte_timeout_ms %d is negative", o->first_byte_timeout_ms);
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
                               .mtu_cap = o->mtu, .io_timeout_ms = o->io_timeout_ms,
                               .busy_poll_us = o->busy_poll_us,
                               .tls_server = rw_srv_tls_slot(srv)};
    struct rw_domain_place place;
    /* i runs over the domains of the transport in use (n_rail_addrs for
     * tcp, n_devices for verbs): the other list may be shorter. */
    const char *addr = o->n_rail_addrs ? o->rail_addrs[i % o->n_rail_addrs]
                                       : srv->listen_addr[i % srv->n_lfd];
    const char *dev = o->n_devices ? o->devices[i % o->n_devices]
                      : srv->defaults ? srv->defaults[i].device : NULL;
    rw_domain_place_fill(&dc, &place, srv->ops, addr, dev, i);
    int rc = srv->ops->domain_open(&dc, &d->dom);
    if (rc < 0) {
        d->dom = NULL;
        rw_err("server: cannot open the %s domain %s (%s)", srv->ops->name,
               dc.device ? dc.device : "(default)", railwire_error_class(rc));
        return rc;
    }
    unsigned n = srv->n_mems;
    d->mrs = calloc(n, sizeof(*d->mrs));
    d->descs = calloc(n, sizeof(*d->descs));
    if (!d->mrs || !d->descs) {
        rw_err("server: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    d->n = n;
    for (unsigned k = 0; k < n; k++) {
        int access = srv->dialect == RAILWIRE_DIALECT_RO
                         ? RW_ACCESS_REMOTE_READ
                         : RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE;
        if (srv->zero_copy_reads)
            access |= RW_ACCESS_READ_BY_REFERENCE;
        rc = rw_srv_mem_register(srv, d->dom, k, access, &d->mrs[k]);
        if (rc < 0)
            return rc;
        d->descs[k].base_addr = d->mrs[k]->remote_base;
        d->descs[k].rkey = d->mrs[k]->rkey;
    }
    return 0;
}

/* Tries of listen_all when the kernel picks the port: the first address
 * gets a free port of its own, and another process may hold that port on
 * one of the other addresses. */
#define RW_LISTEN_TRIES 8

static void close_listeners(struct railwire_server *srv)
{
    for (unsigned i = 0; i < srv->n_lfd; i++)
        close(srv->lfd[i]);
    srv->n_lfd = 0;
}

/* Binds every control address on one port.  tcp rails without rail_addrs
 * listen where the control port does: each listener's numeric address is
 * kept, even when the host was a name.  With port 0 the first address's
 * port is taken for all; when another address has it in use already, all
 * start over on a new port (RW_LISTEN_TRIES times). */
static int listen_all(struct railwire_server *srv, const railwire_server_opts *o)
{
    const char *one = o->listen_host;
    const char *const *hosts = o->n_listen_hosts ? o->listen_hosts : &one;
    unsigned n = o->n_listen_hosts ? o->n_listen_hosts : 1;
    const char *asked = o->listen_port ? o->listen_port : "0";
    int any_port = !strcmp(asked, "0");
    char bound[16];

    for (int t = 1;; t++) {
        const char *port = asked;
        int rc = 0, sys_err = 0;
        unsigned i;
        for (i = 0; i < n; i++) {
            /* The last try, or a port the user named: its failure is reported. */
            if (i == 0 || !any_port || t == RW_LISTEN_TRIES)
                rc = rw_sock_listen(hosts[i], port, RW_SERVER_BACKLOG, &srv->lfd[i]);
            else
                rc = rw_sock_listen_try(hosts[i], port, RW_SERVER_BACKLOG, &srv->lfd[i], &sys_err);
            if (rc < 0)
                break;
            srv->n_lfd = i + 1;
            if (i == 0) {
                srv->port = rw_sock_local_port(srv->lfd[0]);
                snprintf(bound, sizeof(bound), "%u", srv->port);
                port = bound; /* the others share the first one's port */
            }
            rw_sock_host(srv->lfd[i], srv->listen_addr[i], sizeof(srv->listen_addr[i]));
        }
        if (rc == 0)
            return 0;
        if (sys_err != EADDRINUSE)
            return rc;
        rw_debug("server: port %s is in use on %s already; all listen addresses try another",
                 bound, hosts[i]);
        close_listeners(srv);
    }
}

int railwire_server_create(const railwire_server_opts *o, railwire_server **out)
{
    if (!o || !out) {
        rw_err("server: NULL options or out");
        return RAILWIRE_E_INVALID;
    }
    railwire_server_opts mine; /* the caller's options read through struct_size */
    int rc = rw_server_opts_take(o, &mine);
    if (rc < 0)
        return rc;
    o = &mine;
    rc = check_opts(o);
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
    srv->max_per_peer = o->max_sessions_per_peer;
    srv->max_pending = o->max_pending;
    srv->zero_copy_reads = o->zero_copy_reads != 0;
    srv->first_byte_ms = o->first_byte_timeout_ms > 0 ? o->first_byte_timeout_ms
                                                      : RW_DEFAULT_FIRST_BYTE_MS;
    if (srv->first_byte_ms > srv->io_timeout_ms)
        srv->first_byte_ms = srv->io_timeout_ms;
    srv->epfd = srv->wake_fd = -1;
    atomic_init(&srv->stop, 0);
    pthread_mutex_init(&srv->stats_lock, NULL);
    rc = rw_srv_allow_parse(srv, o->allow, o->n_allow);
    if (rc < 0)
        goto fail;
    rc = rw_srv_mem_prepare(srv, o);
    if (rc < 0)
        goto fail;
    rc = rw_srv_tls_init(srv, o);
    if (rc < 0)
        goto fail;
    rc = rw_transport_select(o->transport, &srv->ops);
    if (rc < 0)
        goto fail;
    rc = listen_all(srv, o);
    if (rc < 0)
        goto fail;
    unsigned nd = srv->ops->places_by_device ? o->n_devices : o->n_rail_addrs;
    if (nd == 0 && srv->ops->places_by_device) {
        /* No devices named: serve on every active port (or RAILWIRE_DEVICES). */
        srv->defaults = calloc(RAILWIRE_MAX_DEFAULT_PLACES, sizeof(*srv->defaults));
        int n = srv->defaults ? rw_default_places(srv->ops, srv->defaults,
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
    rw_srv_mem_settle(srv);
    rc = rw_srv_loop_start(srv);
    if (rc < 0)
        goto fail;
    rw_info("server: %s dialect on port %u (%u address(es)) over %s (%u domain(s)), session "
            "linger %d ms; admission: %u sessions, %u per peer%s, %u pending, first byte "
            "within %d ms, %s", srv->dialect == RAILWIRE_DIALECT_RO ? "RO" : "RW", srv->port,
            srv->n_lfd, srv->ops->name, nd, srv->linger_ms, srv->max_clients, srv->max_per_peer,
            srv->max_per_peer ? "" : " (no cap)", srv->max_pending, srv->first_byte_ms,
            srv->n_allow ? "allowlist" : "every address may connect");
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

void railwire_server_destroy(railwire_server *srv)
{
    if (!srv)
        return;
    rw_srv_loop_stop(srv);
    for (unsigned i = 0; i < srv->n_lfd; i++)
        close(srv->lfd[i]);
    if (srv->doms)
        for (unsigned i = srv->n_doms; i-- > 0;)
            close_domain(srv->ops, &srv->doms[i]);
    rw_srv_peers_free(srv);
    rw_srv_mem_free(srv);
    free(srv->doms);
    free(srv->defaults);
    free(srv->allow);
    rw_srv_tls_fini(srv);
    pthread_mutex_destroy(&srv->stats_lock);
    free(srv);
}
