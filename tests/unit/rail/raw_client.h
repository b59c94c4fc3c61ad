/* SPDX-License-Identifier: MIT */
/* Raw clients for the server's adversarial and scale suites: control
 * connections from a chosen loopback source address, the WIRE.md handshake
 * driven by the library's own state machine (RW dialect), and tcp rails
 * opened with nothing but their hello, so a test can stop at any step and
 * hold thousands of sessions without a thread each. */
#ifndef RW_TEST_RAW_CLIENT_H
#define RW_TEST_RAW_CLIENT_H

#include <stdint.h>

#include "wire/wire.h"

#define RAW_MAX_RAILS 8

/* Connects from `src` (an IPv4 loopback address such as "127.0.0.2"; NULL:
 * the kernel's choice) to 127.0.0.1:port.  Returns a non-blocking socket,
 * or -1. */
int raw_dial(const char *src, const char *port);

/* A session opened by raw_handshake(). */
struct raw_session {
    int ctl;                               /* control connection (-1: closed) */
    unsigned n;
    struct rw_qp_id srv[RAW_MAX_RAILS];    /* the server's rail identities */
    struct rw_qp_id cli[RAW_MAX_RAILS];    /* the ids this client sent */
    struct rw_mr_desc arena;               /* rail 0's arena */
    int rail[RAW_MAX_RAILS];               /* rail connections (-1: not opened) */
};

/* Runs the whole RW handshake for n rails (1..8) on a connected socket
 * (taken over by s->ctl), within timeout_ms per step.  Returns 0 (acked),
 * RAILWIRE_E_PEER_REJECTED (closed before the params), or another class. */
int raw_handshake(int fd, unsigned n, int timeout_ms, struct raw_session *s);

/* Opens rail i of s: connect to the rail's address, hello, verdict.  Returns
 * 0 (attached; s->rail[i] set) or -1. */
int raw_open_rail(struct raw_session *s, unsigned i, int timeout_ms);

/* Closes every descriptor of s (rails first, then the control). */
void raw_close(struct raw_session *s);


#endif
