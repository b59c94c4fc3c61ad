/* SPDX-License-Identifier: MIT */
/* Runs the handshake state machines of wire/handshake.h over a socket.
 * Each call below (one step of the conversation) is bounded as a whole by
 * the I/O timeout, so a peer dribbling bytes cannot stretch it.  The error classes stay
 * apart: RAILWIRE_E_PEER_REJECTED (clean end of stream before the server's
 * params), RAILWIRE_E_TRUNCATED (end of stream later), RAILWIRE_E_TIMEOUT,
 * RAILWIRE_E_REFUSED (ack != 0), RAILWIRE_E_IO (reset), and the decoder
 * classes (bad-rail-count, ...).  Every failure is logged here with the
 * peer's address. */
#ifndef RW_RAIL_HANDSHAKE_DRIVE_H
#define RW_RAIL_HANDSHAKE_DRIVE_H
#if defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/session/ serves src/rail/ only: transports, wire and common never include it"
#endif

#include <stddef.h>
#include <stdint.h>

#include "wire/handshake.h"

struct rw_tls_conn;

/* A socket plus the bytes received but not yet consumed. */
struct rw_hs_io {
    int fd;
    struct rw_tls_conn *tls;  /* not owned: WIRE.md's bytes go inside TLS (NULL: plain) */
    int first_seen;           /* the server's first bytes were checked for TLS */
    int timeout_ms;           /* per read/write; <= 0: 10000 */
    size_t off, len;          /* unconsumed bytes are buf[off..len) */
    char peer[80];            /* the peer's address, for messages */
    uint8_t buf[4096];
};

/* Initialises io over a connected socket (not owned) and notes the peer's
 * address for messages.  Plain; set io->tls afterwards for a connection
 * whose TLS handshake is done. */
void rw_hs_io_init(struct rw_hs_io *io, int fd, int timeout_ms);

/* Client: sends what is pending and receives until the state is
 * NEED_LOCAL or DONE (returns 0) or the conversation failed (returns the
 * class error). */
int rw_hs_client_drive(struct rw_hs_io *io, struct rw_hs_client *c);

#endif
