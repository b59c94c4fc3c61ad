/* SPDX-License-Identifier: MIT */
/* A control connection's TLS teardown: its place in the handshake gate,
 * close_notify, freeing its TLS state.  Every close calls it (the
 * handshake's drop and reject, a session's release, the loop's reaping),
 * so it sits below them all and calls nothing of the server's files. */
#include "rail/server/server_internal.h"
#include "rail/server/server_tls_state.h"

#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"

void rw_conn_tls_leave_gate(struct rw_conn *c)
{
    if (c->tls_state != RW_CTLS_HS)
        return;
    rw_tls_gate_leave(&c->srv->tls->gate);
    c->peer->tls_hs--;
    c->tls_state = RW_CTLS_DONE; /* or dropped right after */
}

void rw_conn_tls_close_notify(struct rw_conn *c)
{
    if (c->tls && c->tls_state == RW_CTLS_DONE)
        rw_tls_conn_shutdown(c->tls);
}

void rw_conn_tls_free(struct rw_conn *c)
{
    rw_tls_conn_free(c->tls);
    c->tls = NULL;
}

#else /* !RAILWIRE_HAVE_TLS */

void rw_conn_tls_leave_gate(struct rw_conn *c) { (void)c; }
void rw_conn_tls_close_notify(struct rw_conn *c) { (void)c; }
void rw_conn_tls_free(struct rw_conn *c) { (void)c; }
#endif
