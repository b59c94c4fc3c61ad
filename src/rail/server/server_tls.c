/* SPDX-License-Identifier: MIT */
/* TLS on the server's control connections (docs/security.md):
 *   - credentials in a reloadable slot (railwire_server_reload_tls, SIGHUP);
 *   - the TLS handshake runs on the event loop, one non-blocking step per
 *     edge, inside the admission deadlines: the first byte within
 *     first_byte_timeout_ms, the whole TLS handshake within io_timeout_ms
 *     of it, then WIRE.md's handshake inside TLS with its own steps;
 *   - a gate bounds concurrent TLS handshakes (tls_gate.h); one address
 *     holds at most half of its places, so a flood of ClientHellos from one
 *     address never keeps another address's client out;
 *   - failed authentications (bad certificate, unknown CA, wrong PSK,
 *     identity not allowed ...) count toward a per-address lockout;
 *   - authorisation by identity (tls_allow) right after the handshake.
 * A connection it refuses is closed by its caller (server_handshake.c),
 * told so by the return value; a connection's TLS teardown, which every
 * close calls, is server_tls_conn.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/server/server_internal.h"
#include "rail/server/server_tls_state.h"

#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"

#define LOCKOUT_FAILS 16    /* failed authentications ... */
#define LOCKOUT_WINDOW_MS 60000 /* ... each within this of the previous: locked out */
#define LOCKOUT_MS 60000    /* for this long */

int rw_srv_tls_init(struct railwire_server *srv, const railwire_server_opts *o)
{
    if (!o->tls) {
        if (o->n_tls_allow) {
            rw_err("server: tls_allow (--tls-allow) is given without TLS; add the TLS "
                   "options (--tls-cert/--tls-key/--tls-ca or --tls-psk)");
            return RAILWIRE_E_INVALID;
        }
        return 0;
    }
    struct rw_srv_tls *t = calloc(1, sizeof(*t));
    if (!t) {
        rw_err("server: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    srv->tls = t;
    rw_tls_allow_init(&t->allow);
    int rc = rw_tls_slot_init(&t->slot, o->tls, RW_TLS_SERVER);
    if (rc < 0)
        return rc; /* logged with the file and what to check */
    t->slot_live = 1;
    for (unsigned i = 0; i < o->n_tls_allow; i++) {
        rc = rw_tls_allow_add(&t->allow, o->tls_allow ? o->tls_allow[i] : NULL);
        if (rc < 0)
            return rc;
    }
    rc = rw_tls_gate_init(&t->gate, 0);
    if (rc < 0)
        return rc;
    t->gate_live = 1;
    t->per_peer_max = t->gate.max > 1 ? t->gate.max / 2 : 1;
    rw_srv_count(srv, RW_ST(tls), 1);
    rw_info("server: TLS 1.3 on the control connection and tcp rails (%s%s%s); at most %u "
            "TLS handshakes at once; %u allowed identit%s", t->slot.cur->has_certs
            ? "certificates" : "", t->slot.cur->has_certs && t->slot.cur->n_psk ? " and " : "",
            t->slot.cur->n_psk ? "pre-shared keys" : "", t->gate.max, t->allow.n,
            t->allow.n == 1 ? "y" : t->allow.n ? "ies" : "ies (every authenticated client)");
    return 0;
}

void rw_srv_tls_fini(struct railwire_server *srv)
{
    struct rw_srv_tls *t = srv->tls;
    if (!t)
        return;
    if (t->slot_live)
        rw_tls_slot_destroy(&t->slot);
    if (t->gate_live)
        rw_tls_gate_destroy(&t->gate);
    rw_tls_allow_clear(&t->allow);
    free(t);
    srv->tls = NULL;
}

struct rw_tls_slot *rw_srv_tls_slot(struct railwire_server *srv)
{
    return srv->tls ? &srv->tls->slot : NULL;
}

int railwire_server_reload_tls(railwire_server *srv)
{
    if (!srv || !srv->tls) {
        rw_err("server: reload_tls: %s", srv ? "this server does not run TLS" : "NULL server");
        return RAILWIRE_E_INVALID;
    }
    int rc = rw_tls_slot_reload(&srv->tls->slot);
    rw_srv_count(srv, rc == 0 ? RW_ST(tls_reloads) : RW_ST(tls_reload_failures), 1);
    if (rc == 0)
        rw_info("server: TLS credentials reloaded; new connections use them, established "
                "sessions keep theirs");
    return rc;
}

/* ---- lockout */

static struct rw_srv_lockout_entry *lockout_find(struct rw_srv_tls *t, const struct rw_ip *ip,
                                          int create)
{
    struct rw_srv_lockout_entry *stale = &t->lock[0];
    for (unsigned i = 0; i < RW_SRV_LOCKOUT_PEERS; i++) {
        struct rw_srv_lockout_entry *e = &t->lock[i];
        if (e->fails && memcmp(&e->ip, ip, sizeof(*ip)) == 0)
            return e;
        if (!e->fails || (stale->fails && e->last_ms < stale->last_ms))
            stale = e;
    }
    if (!create)
        return NULL;
    memset(stale, 0, sizeof(*stale));
    stale->ip = *ip;
    return stale;
}

int rw_srv_locked_out(struct railwire_server *srv, const struct rw_ip *ip, int64_t now)
{
    if (!srv->tls)
        return 0;
    struct rw_srv_lockout_entry *e = lockout_find(srv->tls, ip, 0);
    return e && now < e->until_ms;
}

/* One failed authentication from c's address. */
static void auth_failed(struct rw_conn *c)
{
    int64_t now = rw_now_ms();
    struct rw_srv_lockout_entry *e = lockout_find(c->srv->tls, &c->ip, 1);
    if (e->fails && now - e->last_ms > LOCKOUT_WINDOW_MS)
        e->fails = 0;
    e->fails++;
    e->last_ms = now;
    if (e->fails >= LOCKOUT_FAILS && now >= e->until_ms) {
        e->until_ms = now + LOCKOUT_MS;
        rw_warn_rl("server: client %s failed to authenticate %u times; its address is locked "
                   "out for %d s", c->name, e->fails, LOCKOUT_MS / 1000);
    }
}

static int is_auth_failure(enum rw_tls_reason r)
{
    switch (r) {
    case RW_TLS_R_CERT_EXPIRED: case RW_TLS_R_CERT_NOT_YET_VALID: case RW_TLS_R_UNKNOWN_CA:
    case RW_TLS_R_NO_PEER_CERT: case RW_TLS_R_NAME_MISMATCH: case RW_TLS_R_BAD_CERT:
    case RW_TLS_R_BAD_PSK: case RW_TLS_R_UNKNOWN_PSK_IDENTITY: case RW_TLS_R_NO_PSK:
        return 1;
    default:
        return 0;
    }
}

/* ---- the handshake gate */

/* Takes a place in the gate for c if one is free and its address holds
 * less than its share.  Returns 1 when it did. */
static int gate_take(struct rw_conn *c)
{
    struct rw_srv_tls *t = c->srv->tls;
    if (c->peer->tls_hs >= t->per_peer_max || !rw_tls_gate_try(&t->gate))
        return 0;
    c->peer->tls_hs++;
    c->tls_state = RW_CTLS_HS;
    return 1;
}

/* The TLS handshake failed: counted and logged.  Returns RW_CONN_TLS_DROP. */
static int tls_failed(struct rw_conn *c)
{
    enum rw_tls_reason r = rw_tls_conn_reason(c->tls);
    rw_srv_count(c->srv, RW_ST(tls_failures), 1);
    rw_srv_count(c->srv, RW_ST(handshake_failures), 1);
    if (r == RW_TLS_R_NOT_TLS)
        rw_srv_count(c->srv, RW_ST(plain_at_tls), 1);
    if (is_auth_failure(r))
        auth_failed(c);
    rw_warn_rl("server: client %s: %s; closing", c->name, rw_tls_conn_error(c->tls));
    return RW_CONN_TLS_DROP;
}

/* Authorisation once the handshake is done.  Returns 1 when allowed. */
static int authorise(struct rw_conn *c)
{
    struct rw_srv_tls *t = c->srv->tls;
    const struct rw_tls_peer *p = rw_tls_conn_peer(c->tls);
    const char *why = "";
    char who[320];
    rw_tls_peer_describe(p, who, sizeof(who));
    if (rw_tls_allow_check(&t->allow, p, &why)) {
        rw_info_rl("server: client %s: TLS (%s, %s) as %s%s%s", c->name,
                   rw_tls_conn_cipher(c->tls), rw_tls_conn_mode(c->tls), who,
                   *why ? ", allowed by " : "", why);
        return 1;
    }
    rw_srv_count(c->srv, RW_ST(rejected_identity), 1);
    auth_failed(c);
    rw_warn_rl("server: refusing client %s: TLS identity %s is not allowed (--tls-allow); "
               "closing", c->name, who);
    return 0;
}

int rw_conn_tls_progress(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    if (c->tls_state == RW_CTLS_DONE)
        return 1;
    if (c->tls_state != RW_CTLS_HS)
        return 0; /* waiting for the gate */
    if (!c->tls_saw_byte) {
        uint8_t b;
        if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
            /* The first byte came: the whole TLS handshake gets one step. */
            c->tls_saw_byte = 1;
            c->deadline_ms = rw_now_ms() + srv->io_timeout_ms;
        }
    }
    int rc = rw_tls_conn_handshake_step(c->tls);
    if (rc == RW_TLS_WANT_READ || rc == RW_TLS_WANT_WRITE) {
        unsigned ev = EPOLLIN | EPOLLRDHUP | (rc == RW_TLS_WANT_WRITE ? EPOLLOUT : 0);
        if (rw_srv_watch(c, ev) < 0) {
            rw_srv_count(srv, RW_ST(handshake_failures), 1);
            return RW_CONN_TLS_DROP;
        }
        return 0;
    }
    if (rc < 0)
        return tls_failed(c);
    rw_conn_tls_leave_gate(c);
    rw_srv_count(srv, RW_ST(tls_handshakes), 1);
    if (!authorise(c))
        return RW_CONN_TLS_REJECT;
    /* WIRE.md's request byte, inside TLS, within the first-byte bound. */
    c->deadline_ms = rw_now_ms() + srv->first_byte_ms;
    if (rw_srv_watch(c, EPOLLIN | EPOLLRDHUP) < 0) {
        rw_srv_count(srv, RW_ST(handshake_failures), 1);
        return RW_CONN_TLS_DROP;
    }
    return 1;
}

int rw_conn_tls_start(struct rw_conn *c)
{
    struct railwire_server *srv = c->srv;
    if (!srv->tls)
        return 1;
    struct rw_tls_creds *cr = rw_tls_slot_get(&srv->tls->slot);
    int rc = rw_tls_conn_new(cr, c->fd, NULL, &c->tls);
    rw_tls_creds_unref(cr);
    if (rc < 0) {
        c->tls = NULL;
        rw_err_rl("server: client %s: cannot start TLS (%s); closing", c->name,
                  railwire_error_class(rc));
        rw_srv_count(srv, RW_ST(handshake_failures), 1);
        return RW_CONN_TLS_DROP;
    }
    c->tls_state = RW_CTLS_WAIT;
    if (!gate_take(c)) {
        /* Waiting is the server's doing: the client gets io_timeout_ms. */
        rw_srv_count(srv, RW_ST(tls_gate_waits), 1);
        c->deadline_ms = c->born_ms + srv->io_timeout_ms;
        rw_srv_watch(c, 0);
        return 0;
    }
    return rw_conn_tls_progress(c);
}

int rw_srv_tls_gate_open(struct railwire_server *srv)
{
    return srv->tls && srv->tls->gate.busy < srv->tls->gate.max;
}

int rw_conn_tls_gate_take(struct rw_conn *c)
{
    return c->tls_state == RW_CTLS_WAIT && gate_take(c);
}

int rw_conn_tls_expired(struct rw_conn *c, int64_t now)
{
    struct railwire_server *srv = c->srv;
    if (!c->tls || c->tls_state == RW_CTLS_DONE)
        return 0;
    rw_srv_count(srv, RW_ST(handshake_timeouts), 1);
    rw_srv_count(srv, RW_ST(tls_failures), 1);
    if (c->tls_state == RW_CTLS_WAIT)
        rw_warn_rl("server: client %s: TLS: no place for its TLS handshake within %d ms (%u "
                   "handshakes at once); closing", c->name, srv->io_timeout_ms,
                   srv->tls->gate.max);
    else if (!c->tls_saw_byte)
        rw_warn_rl("server: client %s: TLS: it sent no TLS ClientHello within %d ms; closing",
                   c->name, srv->first_byte_ms);
    else
        rw_warn_rl("server: client %s: TLS: it did not complete the TLS handshake within %d ms "
                   "(%lld ms after it connected); closing", c->name, srv->io_timeout_ms,
                   (long long)(now - c->born_ms));
    return 1;
}

#else /* !RAILWIRE_HAVE_TLS */

int rw_srv_tls_init(struct railwire_server *srv, const railwire_server_opts *o)
{
    (void)srv;
    if (o->tls || o->n_tls_allow) {
        rw_err("server: TLS options given, but this railwire was built without TLS (OpenSSL "
               "3 was not found: install libssl-dev and rebuild)");
        return RAILWIRE_E_INVALID;
    }
    return 0;
}
void rw_srv_tls_fini(struct railwire_server *srv) { (void)srv; }
struct rw_tls_slot *rw_srv_tls_slot(struct railwire_server *srv) { (void)srv; return NULL; }
int railwire_server_reload_tls(railwire_server *srv)
{
    (void)srv;
    rw_err("server: reload_tls: this railwire was built without TLS");
    return RAILWIRE_E_INVALID;
}
int rw_srv_locked_out(struct railwire_server *srv, const struct rw_ip *ip, int64_t now)
{
    (void)srv, (void)ip, (void)now;
    return 0;
}
int rw_conn_tls_start(struct rw_conn *c) { (void)c; return 1; }
int rw_conn_tls_progress(struct rw_conn *c) { (void)c; return 1; }
int rw_srv_tls_gate_open(struct railwire_server *srv) { (void)srv; return 0; }
int rw_conn_tls_gate_take(struct rw_conn *c) { (void)c; return 0; }
int rw_conn_tls_expired(struct rw_conn *c, int64_t now)
{
    (void)c, (void)now;
    return 0;
}
#endif
