/* SPDX-License-Identifier: MIT */
/* Inside of a rw_tls_conn, shared by tls_conn.c, tls_io.c and tls_diag.c. */
#ifndef RW_TLS_CONN_INT_H
#define RW_TLS_CONN_INT_H

#include <pthread.h>
#include <signal.h>

#include "tls/tls_conn.h"
#include "tls/tls_util.h"

/* The largest write coalesced from several iovecs into one record. */
#define RW_TLS_STAGE 16384

/* The read buffer of a connection once the handshake is done (user-space
 * receive reads ahead into it): four full records and their overhead. */
#define RW_TLS_READ_BUF (4u * (16384u + 256u))

struct rw_tls_conn {
    pthread_mutex_t lock;   /* serialises every OpenSSL call on ssl */
    SSL *ssl;
    struct rw_tls_creds *creds;
    int fd;
    enum rw_tls_role role;
    int hs_done;
    int sniffed;            /* server: the first bytes looked like TLS */
    int ktls_send, ktls_recv;
    size_t wpend;           /* bytes offered to the write that wanted a retry */
    uint8_t *stage;         /* RW_TLS_STAGE bytes, made on first use */
    struct rw_tls_hs_note note;
    enum rw_tls_reason reason;
    char name[RW_TLS_NAME_MAX]; /* client: the name the server must carry */
    char addr[80];              /* the peer's address, for messages */
    char err[640];
    struct rw_tls_peer peer;
};

/* Records the failure of an OpenSSL call that returned SSL_get_error() ==
 * ssl_err (called with the lock held, right after the call, so that the
 * thread's error queue is the call's).  Sets reason and message, clears the
 * queue.  Returns RAILWIRE_E_TLS, or RAILWIRE_E_IO for a socket error. */
int rw_tls_diag_fail(struct rw_tls_conn *c, int ssl_err);

/* Sets reason and a formatted message (first failure wins).  Returns err. */
int rw_tls_set_error(struct rw_tls_conn *c, enum rw_tls_reason r, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
