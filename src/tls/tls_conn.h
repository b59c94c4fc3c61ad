/* SPDX-License-Identifier: MIT */
/* One TLS 1.3 connection over a connected TCP socket.
 *
 * Made from credentials (tls_creds.h) and a socket the caller keeps owning;
 * the socket is switched to non-blocking and stays so (every wait in here
 * goes through poll() with a deadline).  Two ways to drive it:
 *   - event loops (edge-triggered epoll included): handshake_step, read,
 *     write, readv, writev return RW_TLS_WANT_READ / RW_TLS_WANT_WRITE when
 *     the socket would block; keep calling read until it returns
 *     RW_TLS_WANT_READ, because bytes OpenSSL already holds raise no new
 *     edge (rw_tls_conn_pending says whether some are held);
 *   - blocking style: handshake, read_full, write_full, writev_full, each
 *     bounded by a deadline on the rw_now_ms() clock.
 * One sender thread and one receiver thread may use a connection at the
 * same time (an internal lock serialises the OpenSSL calls, never a wait).
 * No call raises SIGPIPE.
 *
 * Errors: RAILWIRE_E_TLS for anything TLS (handshake refused, bad
 * certificate or key, a corrupted record, a peer not speaking TLS),
 * RAILWIRE_E_TIMEOUT, RAILWIRE_E_IO (reset), RAILWIRE_E_CLOSED (end of
 * stream where bytes were due).  Nothing a peer causes is logged here:
 * rw_tls_conn_error() holds one line that starts with "TLS", names the peer
 * and says what to check, for the caller to log (a server rate-limits it,
 * with the peer's address); rw_tls_conn_reason() classifies it for tests
 * and counters. */
#ifndef RW_TLS_CONN_H
#define RW_TLS_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "tls/tls_creds.h"

/* Would-block results (never collide with RAILWIRE_E_* codes). */
#define RW_TLS_WANT_READ (-2)
#define RW_TLS_WANT_WRITE (-3)

/* Why a connection failed. */
enum rw_tls_reason {
    RW_TLS_R_NONE = 0,
    RW_TLS_R_TIMEOUT,           /* the handshake did not finish before its deadline */
    RW_TLS_R_CLOSED,            /* the peer closed (or reset) during the handshake */
    RW_TLS_R_NOT_TLS,           /* the peer's bytes are not TLS (plain peer) */
    RW_TLS_R_CERT_EXPIRED,      /* a certificate has expired */
    RW_TLS_R_CERT_NOT_YET_VALID,/* a certificate is not valid yet */
    RW_TLS_R_UNKNOWN_CA,        /* a chain does not lead to the CA */
    RW_TLS_R_NO_PEER_CERT,      /* the client sent no certificate */
    RW_TLS_R_NAME_MISMATCH,     /* the server's certificate is for another name */
    RW_TLS_R_BAD_CERT,          /* another certificate problem */
    RW_TLS_R_BAD_PSK,           /* the PSK differs between the two files */
    RW_TLS_R_UNKNOWN_PSK_IDENTITY, /* the client's identity is not in the server's file */
    RW_TLS_R_NO_PSK,            /* one side uses a PSK, the other certificates */
    RW_TLS_R_BAD_RECORD,        /* a record failed to decrypt/authenticate */
    RW_TLS_R_PROTOCOL,          /* any other TLS failure */
    RW_TLS_R_IO,                /* the socket failed */
};

/* Short name of a reason ("cert-expired", ...), static. */
const char *rw_tls_reason_name(enum rw_tls_reason r);

/* Who the peer is, once the handshake is done. */
#define RW_TLS_MAX_SANS 16
struct rw_tls_peer {
    int psk;                                  /* 1: authenticated by PSK */
    char psk_identity[RW_TLS_NAME_MAX];       /* when psk */
    char cn[RW_TLS_NAME_MAX];                 /* subject CN ("" when none) */
    unsigned n_dns;                           /* DNS SANs kept (at most RW_TLS_MAX_SANS) */
    char dns[RW_TLS_MAX_SANS][RW_TLS_NAME_MAX];
};

struct rw_tls_conn;

/* Wraps the connected socket fd (not owned, made non-blocking) in a TLS
 * connection of creds->role; takes a reference on creds.  `host` (client
 * only) is the name or address connected to: the server's certificate must
 * carry creds->server_name, or else `host` (a DNS name or an IP address; it
 * is also sent as SNI when it is a name).  Returns 0 and *out (free with
 * rw_tls_conn_free), RAILWIRE_E_NOMEM, RAILWIRE_E_INVALID (client with no
 * name to check in certificate mode), RAILWIRE_E_SYSTEM. */
int rw_tls_conn_new(struct rw_tls_creds *creds, int fd, const char *host,
                    struct rw_tls_conn **out);

/* Frees the connection (no close_notify is sent; the socket stays open and
 * the caller's) and drops its creds reference.  NULL is ignored. */
void rw_tls_conn_free(struct rw_tls_conn *c);

/* Sends close_notify if the socket takes it now (never waits). */
void rw_tls_conn_shutdown(struct rw_tls_conn *c);

/* One step of the handshake (server: first checks, without consuming
 * them, that the first bytes are a TLS record; a plain peer gets a TLS
 * alert record and RW_TLS_R_NOT_TLS).  Returns 0 when the handshake is
 * done, RW_TLS_WANT_READ / RW_TLS_WANT_WRITE, or RAILWIRE_E_TLS /
 * RAILWIRE_E_IO (reason and message set). */
int rw_tls_conn_handshake_step(struct rw_tls_conn *c);

/* The whole handshake, waiting with poll() until deadline_ms.  Returns 0,
 * RAILWIRE_E_TIMEOUT (reason RW_TLS_R_TIMEOUT), RAILWIRE_E_TLS or
 * RAILWIRE_E_IO. */
int rw_tls_conn_handshake(struct rw_tls_conn *c, int64_t deadline_ms);

/* Non-blocking I/O after the handshake.  read/readv return the bytes read
 * (> 0), 0 at the peer's end of stream, RW_TLS_WANT_READ/WRITE, or an error
 * (RAILWIRE_E_TLS: a bad record or an alert; RAILWIRE_E_IO).  write/writev
 * return the bytes taken (> 0, maybe fewer than offered),
 * RW_TLS_WANT_WRITE/READ, or an error.  After a WANT on write, the next
 * call must offer the same bytes again (more may follow them). */
ssize_t rw_tls_read(struct rw_tls_conn *c, void *buf, size_t len);
ssize_t rw_tls_write(struct rw_tls_conn *c, const void *buf, size_t len);
ssize_t rw_tls_readv(struct rw_tls_conn *c, const struct iovec *iov, int iovcnt);
ssize_t rw_tls_writev(struct rw_tls_conn *c, const struct iovec *iov, int iovcnt);

/* Non-zero when OpenSSL holds received bytes not yet returned by read. */
int rw_tls_conn_pending(struct rw_tls_conn *c);

/* Turns on read-ahead once the handshake is done and the receive side is in
 * user space (no effect otherwise): a recv then brings in as many records
 * as fit the connection's read buffer instead of two recvs per record.
 * Call it when the connection goes to a loop that reads until
 * RW_TLS_WANT_READ (edge-triggered: bytes read ahead raise no edge), after
 * any exact-length blocking reads, so that nothing is read ahead of them. */
void rw_tls_conn_read_ahead(struct rw_tls_conn *c);

/* For railwire's own threads only (event loops, never an application's
 * thread): blocks SIGPIPE in the calling thread for good, so that reads and
 * writes on TLS connections from this thread skip the per-call signal-mask
 * guard (four system calls a call otherwise).  A SIGPIPE such a thread
 * raises is consumed after the failed call.  Cheap to call again. */
void rw_tls_thread_hold_sigpipe(void);

/* Waits until the socket is ready for `want` (RW_TLS_WANT_READ or
 * RW_TLS_WANT_WRITE) or deadline_ms.  Returns 0, RAILWIRE_E_TIMEOUT or
 * RAILWIRE_E_IO. */
int rw_tls_conn_wait(struct rw_tls_conn *c, int want, int64_t deadline_ms);

/* Blocking style: exactly n bytes before deadline_ms.  Return 0,
 * RAILWIRE_E_TIMEOUT, RAILWIRE_E_CLOSED (read: end of stream), or an
 * error as above. */
int rw_tls_read_full(struct rw_tls_conn *c, void *buf, size_t n, int64_t deadline_ms);
int rw_tls_write_full(struct rw_tls_conn *c, const void *buf, size_t n, int64_t deadline_ms);
/* Blocking style, like rw_sock_recv: up to cap bytes, waiting until at
 * least one arrives or deadline_ms.  Returns the count (> 0), 0 at the
 * peer's end of stream, RAILWIRE_E_TIMEOUT, or an error as above. */
ssize_t rw_tls_recv_some(struct rw_tls_conn *c, void *buf, size_t cap, int64_t deadline_ms);
/* Whole iovec (the array is modified to track progress). */
int rw_tls_writev_full(struct rw_tls_conn *c, struct iovec *iov, int iovcnt,
                       int64_t deadline_ms);

/* The peer, valid after a successful handshake. */
const struct rw_tls_peer *rw_tls_conn_peer(const struct rw_tls_conn *c);

/* Where the record layer runs after the handshake: "kernel" (both
 * directions in kernel TLS), "kernel-send" / "kernel-recv" (one direction),
 * "user" (OpenSSL in user space).  Static string. */
const char *rw_tls_conn_mode(const struct rw_tls_conn *c);
/* The same per direction (1: kernel TLS). */
void rw_tls_conn_ktls(const struct rw_tls_conn *c, int *send, int *recv);

/* The negotiated cipher suite name ("" before the handshake). */
const char *rw_tls_conn_cipher(const struct rw_tls_conn *c);

/* Why the connection failed (RW_TLS_R_NONE while it has not), and the one
 * line that says so ("" while it has not). */
enum rw_tls_reason rw_tls_conn_reason(const struct rw_tls_conn *c);
const char *rw_tls_conn_error(const struct rw_tls_conn *c);

/* ---------------------------------------------------------------------------
 * First-bytes detection, for the endpoint that does not run TLS.
 * ------------------------------------------------------------------------- */
enum rw_tls_sniff { RW_TLS_SNIFF_MORE = 0, RW_TLS_SNIFF_TLS, RW_TLS_SNIFF_NOT_TLS };

/* A plain listener's first received bytes: RW_TLS_SNIFF_TLS when they start
 * a TLS handshake record (0x16 0x03: a ClientHello), RW_TLS_SNIFF_MORE when
 * fewer than 2 bytes could still be one. */
enum rw_tls_sniff rw_tls_sniff_client_hello(const void *p, size_t n);

/* A plain client's first received bytes: RW_TLS_SNIFF_TLS when they start
 * any TLS record (content type 20..23, then 0x03), e.g. the alert a TLS
 * listener sends to a plain client. */
enum rw_tls_sniff rw_tls_sniff_record(const void *p, size_t n);

/* The messages for those two cases, to log as they are. */
#define RW_TLS_MSG_TLS_AT_PLAIN                                                            \
    "TLS: the client speaks TLS but this listener is plain; start the server with TLS "   \
    "(--tls-cert/--tls-key/--tls-ca or --tls-psk) or connect without TLS"
#define RW_TLS_MSG_PLAIN_AT_TLS                                                            \
    "TLS: the server answered with TLS but this client is plain; give the client TLS "    \
    "options (--tls-cert/--tls-key/--tls-ca or --tls-psk)"

#endif
