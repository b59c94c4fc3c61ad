/* SPDX-License-Identifier: MIT */
/* Loopback TCP pairs, options from the test certificates, and a
 * single-threaded driver that steps a client and a server connection (and
 * an optional byte-flipping relay between them) until both are done. */
#ifndef RW_TEST_TLS_FIXTURE_H
#define RW_TEST_TLS_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "tls/tls_conn.h"
#include "tls_certs.h"

/* The test's certificate directory (made by tls_fx_setup). */
extern char tls_dir[256];

/* Criterion init/fini: make and remove the certificates, capture log lines. */
void tls_fx_setup(void);
void tls_fx_teardown(void);

/* Non-zero when a captured log line contains `needle`. */
int tls_log_has(const char *needle);
void tls_log_reset(void);

/* Options from file names in tls_dir (NULL: unset). */
railwire_tls_opts tls_opts(const char *cert, const char *key, const char *ca, const char *psk);

/* Credentials, asserted to build. */
struct rw_tls_creds *tls_creds(enum rw_tls_role role, const char *cert, const char *key,
                               const char *ca, const char *psk);

/* A connected loopback TCP pair.  Returns 0. */
int tls_tcp_pair(int *client_fd, int *server_fd);

/* A client and a server connection over one loopback pair (or two pairs
 * and a relay, when relay is set). */
struct tls_pair {
    int cfd, sfd;              /* the ends the connections use */
    int rfd_c, rfd_s;          /* relay ends (-1 without relay) */
    long flip_at;              /* relay: flip the byte at this client->server offset (-1: none) */
    size_t relayed;            /* client->server bytes relayed */
    struct rw_tls_conn *cli, *srv;
    int crc, src;              /* handshake results */
};

/* Makes the pair and both connections (host for the client's name check). */
void tls_pair_open(struct tls_pair *p, struct rw_tls_creds *cc, struct rw_tls_creds *sc,
                   const char *host, int relay);

/* Steps both handshakes (and the relay) until each is done or failed, or
 * ms passed.  A side that fails shuts its socket down for writing, as a
 * server or client that gives up would close it. */
void tls_pair_handshake(struct tls_pair *p, int ms);

/* After both handshakes: client sends "ping", server reads it, answers
 * "pong", client reads it, stepping (and relaying) as needed.  Returns 0
 * when the client read "pong", else the first error (client or server). */
int tls_pair_ping(struct tls_pair *p, int ms);

/* Moves what is waiting through the relay (no-op without one). */
void tls_pair_relay(struct tls_pair *p);

void tls_pair_close(struct tls_pair *p);

#endif
