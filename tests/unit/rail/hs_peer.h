/* SPDX-License-Identifier: MIT */
/* Test peers for the handshake driver: the server side of a handshake run
 * over a blocking socket, a client-side flush, and accept with a bound.
 * The library drives only the client side over a socket (the server runs
 * its state machine inside its event loops), so these live with the tests. */
#ifndef RW_TEST_HS_PEER_H
#define RW_TEST_HS_PEER_H

#include "rail/session/handshake_drive.h"

/* Client: sends what is pending without waiting for the reply.  Returns 0
 * or the socket error. */
int hs_peer_client_flush(struct rw_hs_io *io, struct rw_hs_client *c);

/* Server: sends what is pending and receives until the state is
 * NEED_PARAMS, NEED_DECISION, DONE or REJECTED (returns 0) or failed
 * (returns the class error, e.g. RAILWIRE_E_TRUNCATED at a mid-message end
 * of stream). */
int hs_peer_server_drive(struct rw_hs_io *io, struct rw_hs_server *s);

/* Accepts one connection on listening socket lfd within about timeout_ms.
 * Returns the fd (owned by the caller) or -1. */
int hs_peer_accept(int lfd, int timeout_ms);

#endif
