/* SPDX-License-Identifier: MIT */
/* Domains.  A client domain remembers the local address its rails bind to.
 * A server domain listens on its address with an ephemeral port, runs one
 * accept thread that hands authenticated connections to eps, and holds a
 * reference on the process-wide event loops that serve them. */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_cc.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_loop.h"
#include "tcp/tcp_sock.h"

/* Link speed of the interface owning `a` in Gb/s from sysfs, or the default
 * when unknown (wildcard, loopback, virtual links report no speed). */
static double link_gbps(const struct sockaddr_storage *a)
{
    struct ifaddrs *ifs, *i;
    double gbps = RW_TCP_DEFAULT_GBPS;

    if (rw_tcp_addr_is_any(a) || getifaddrs(&ifs) < 0)
        return gbps;
    for (i = ifs; i; i = i->ifa_next) {
        struct sockaddr_storage s;
        char path[128];
        FILE *f;
        long mbps = 0;

        if (!i->ifa_addr || i->ifa_addr->sa_family != a->ss_family)
            continue;
        memset(&s, 0, sizeof(s));
        memcpy(&s, i->ifa_addr, a->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                        : sizeof(struct sockaddr_in6));
        if (!rw_tcp_addr_same_ip(&s, a))
            continue;
        snprintf(path, sizeof(path), "/sys/class/net/%s/speed", i->ifa_name);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld", &mbps) == 1 && mbps > 0)
                gbps = (double)mbps / 1000.0;
            fclose(f);
        }
        break;
    }
    freeifaddrs(ifs);
    return gbps;
}

static int listen_on(struct rw_tcp_domain *d)
{
    char abuf[64];
    socklen_t len = sizeof(d->local);
    int one = 1, zero = 0;
    int fd = socket(d->local.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    rw_tcp_addr_format(&d->local, 0, abuf, sizeof(abuf));
    if (fd < 0) {
        rw_err("tcp: socket() failed: %s", strerror(errno));
        return RAILWIRE_E_SYSTEM;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* Accepted sockets inherit the buffers (and the window scale they
     * imply, fixed at the SYN) from the listener. */
    rw_tcp_tune(fd, d->io_timeout_ms, (unsigned)(RW_TCP_CAP_MAX * 7 / 16));
    /* ... and the congestion control, set before any connection starts
     * (tcp_cc.h: BBR's pacing would outlive a later switch). */
    rw_tcp_cc_prepare(fd);
    /* A "::" listener also takes IPv4 clients (IPv4-mapped). */
    if (d->local.ss_family == AF_INET6 && rw_tcp_addr_is_any(&d->local))
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, (struct sockaddr *)&d->local, rw_tcp_addr_len(&d->local)) < 0) {
        rw_err("tcp: cannot listen on %s: bind failed: %s; check that this host owns the address",
               abuf, strerror(errno));
        close(fd);
        return RAILWIRE_E_INVALID;
    }
    if (listen(fd, 512) < 0 || getsockname(fd, (struct sockaddr *)&d->local, &len) < 0) {
        rw_err("tcp: listen on %s failed: %s", abuf, strerror(errno));
        close(fd);
        return RAILWIRE_E_SYSTEM;
    }
    d->listen_fd = fd;
    return 0;
}

int rw_tcp_domain_open(const struct rw_domain_cfg *cfg, struct rw_domain **out)
{
    struct rw_tcp_domain *d;
    char abuf[56]; /* "[" 39-char IPv6 "]:" 5-digit port fits */
    int rc;

    *out = NULL;
    if (!cfg || (cfg->role != RW_ROLE_CLIENT && cfg->role != RW_ROLE_SERVER) ||
        cfg->io_timeout_ms < 0) {
        rw_err("tcp: domain_open: invalid configuration (role or io_timeout_ms)");
        return RAILWIRE_E_INVALID;
    }
    d = calloc(1, sizeof(*d));
    if (!d)
        return RAILWIRE_E_NOMEM;
    d->role = cfg->role;
    d->io_timeout_ms = cfg->io_timeout_ms ? cfg->io_timeout_ms : RW_TCP_DEFAULT_IO_TIMEOUT_MS;
    d->listen_fd = -1;
    d->wake_fd = -1;
    rc = rw_tcp_addr_parse(cfg->device, &d->local);
    if (rc)
        goto fail_d;
    if (pthread_mutex_init(&d->lock, NULL)) {
        rc = RAILWIRE_E_SYSTEM;
        goto fail_d;
    }
    d->base.gbps = link_gbps(&d->local);
    d->base.max_qp_wr = RW_TCP_MAX_QP_WR;
    d->base.default_depth = RW_TCP_DEFAULT_DEPTH;
    d->base.max_msg = RW_TCP_MAX_MSG;

    if (d->role == RW_ROLE_SERVER) {
        d->slots = calloc(RW_TCP_MAX_SLOTS, sizeof(*d->slots));
        if (!d->slots) {
            rc = RAILWIRE_E_NOMEM;
            goto fail_lock;
        }
        d->tls_server = cfg->tls_server;
        rw_tcp_budget_configure(cfg->tcp_queue_budget, cfg->tcp_session_share);
        rw_tcp_pool_busy_poll(cfg->busy_poll_us);
        rc = rw_tcp_pool_acquire();
        if (rc)
            goto fail_slots;
        d->pool_held = 1;
        rc = listen_on(d);
        if (rc)
            goto fail_slots;
        d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (d->wake_fd < 0) {
            rw_err("tcp: eventfd() failed: %s", strerror(errno));
            rc = RAILWIRE_E_SYSTEM;
            goto fail_listen;
        }
        if (pthread_create(&d->accept_thread, NULL, rw_tcp_accept_main, d)) {
            rw_err("tcp: cannot start the accept thread");
            rc = RAILWIRE_E_SYSTEM;
            goto fail_wake;
        }
        d->accept_started = 1;
    }
    if (d->role != RW_ROLE_SERVER)
        rw_tcp_domain_tls_client(d, cfg->tls_client, cfg->tls_host);
    rw_tcp_addr_format(&d->local, d->role == RW_ROLE_SERVER, abuf, sizeof(abuf));
    snprintf(d->base.name, sizeof(d->base.name), "tcp:%s", abuf);
    rw_debug("tcp: opened %s domain %s (%.1f Gb/s)",
             d->role == RW_ROLE_SERVER ? "server" : "client", d->base.name, d->base.gbps);
    *out = &d->base;
    return 0;

fail_wake:
    close(d->wake_fd);
fail_listen:
    close(d->listen_fd);
fail_slots:
    if (d->pool_held)
        rw_tcp_pool_release();
    free(d->slots);
fail_lock:
    pthread_mutex_destroy(&d->lock);
fail_d:
    free(d);
    return rc;
}

void rw_tcp_domain_close(struct rw_domain *dom)
{
    struct rw_tcp_domain *d;
    uint64_t one = 1;
    unsigned eps, mrs;

    if (!dom)
        return;
    d = rw_tcp_dom(dom);
    if (d->accept_started) {
        if (write(d->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
            rw_warn("tcp: cannot wake the accept thread of %s: %s", d->base.name, strerror(errno));
        pthread_join(d->accept_thread, NULL);
        d->accept_started = 0;
    }
    pthread_mutex_lock(&d->lock);
    eps = d->n_eps;
    mrs = d->n_mrs;
    pthread_mutex_unlock(&d->lock);
    if (eps || mrs) {
        /* Their threads and descriptors still point here: keep the domain
         * rather than free memory in use. */
        rw_err("tcp: domain %s closed with %u endpoint(s) and %u MR(s) still open; destroy "
               "endpoints and deregister memory first (the domain is leaked)", d->base.name, eps, mrs);
        return;
    }
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    if (d->wake_fd >= 0)
        close(d->wake_fd);
    free(d->slots);
    rw_tcp_domain_tls_release(d);
    if (d->pool_held)
        rw_tcp_pool_release();
    pthread_mutex_destroy(&d->lock);
    free(d);
}
