/* SPDX-License-Identifier: MIT */
/* Admission of a new control connection: the allowlist, per-peer counts
 * and the bounded pool of connections still in their handshake. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/server/server_internal.h"
#include "common/sock.h"

/* A connection refused before its handshake starts. */
static struct rw_conn *bare_conn(struct railwire_server *srv, int fd, const struct rw_ip *ip,
                                 const char *name)
{
    struct rw_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ev.kind = RW_EV_CONN;
    c->srv = srv;
    c->fd = fd;
    c->ip = *ip;
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->born_ms = rw_now_ms();
    return c;
}

void rw_srv_admit(struct railwire_server *srv, int fd, const struct sockaddr_storage *ss)
{
    char name[80];
    struct rw_ip ip;
    rw_sockaddr_str((const struct sockaddr *)ss, name, sizeof(name));
    rw_srv_count(srv, RW_ST(accepted), 1);
    if (rw_ip_from_sockaddr(ss, &ip) < 0) {
        rw_warn_rl("server: connection from %s: not an IP peer; closed", name);
        close(fd);
        return;
    }
    if (!rw_srv_allowed(srv, &ip)) {
        rw_warn_rl("server: refusing %s: not in the allowlist (--allow); closed", name);
        rw_srv_count(srv, RW_ST(rejected_allowlist), 1);
        close(fd);
        return;
    }
    if (rw_srv_locked_out(srv, &ip, rw_now_ms())) {
        rw_warn_rl("server: refusing %s: its address failed to authenticate (TLS) too often "
                   "lately; closed", name);
        rw_srv_count(srv, RW_ST(rejected_lockout), 1);
        close(fd);
        return;
    }
    struct rw_srv_peer *peer = rw_srv_peer_get(srv, &ip, 1);
    struct rw_conn *c = peer ? bare_conn(srv, fd, &ip, name) : NULL;
    if (!c) {
        rw_err_rl("server: out of memory for client %s; closing it", name);
        close(fd);
        rw_srv_peer_put(srv, peer);
        return;
    }
    if (srv->max_per_peer && peer->pending >= srv->max_per_peer) {
        rw_warn_rl("server: rejecting client %s: %u connections from this address are still in "
                   "their handshake (max_sessions_per_peer %u)", name, peer->pending,
                   srv->max_per_peer);
        rw_srv_count(srv, RW_ST(rejected_per_peer), 1);
        rw_srv_peer_put(srv, peer);
        rw_conn_reject_close(c);
        return;
    }
    int evicted = 0;
    if (srv->pending.count >= srv->max_pending && srv->pending.head) {
        struct rw_conn *old = rw_conn_of(srv->pending.head);
        rw_warn_rl("server: %zu connections are in their handshake (max_pending); closing the "
                   "oldest, %s (%lld ms old), to take %s", srv->pending.count, old->name,
                   (long long)(rw_now_ms() - old->born_ms), name);
        rw_conn_drop(old);
        evicted = 1;
    }
    c->peer = peer;
    peer->pending++;
    rw_conn_set_phase(c, RW_CONN_HANDSHAKE);
    rw_srv_count(srv, RW_ST(pending), 1);
    /* Counted once the newcomer holds its place, so a stats snapshot that
     * sees this eviction also sees the pool it left (pending back at
     * max_pending), never the moment in between. */
    if (evicted)
        rw_srv_count(srv, RW_ST(evicted), 1);
    rw_conn_start(c);
}
