/* SPDX-License-Identifier: MIT */
/* A TLS connection: creation over a socket, the handshake (stepped or
 * bounded by a deadline), what it ended up with (peer, kernel TLS). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/time.h"
#include "tls/tls_conn_int.h"
#include "tls/tls_util.h"

static void peer_addr(struct rw_tls_conn *c)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
            port = ntohs(a->sin6_port);
        } else {
            snprintf(host, sizeof(host), "local");
        }
    }
    if (ss.ss_family == AF_INET6)
        snprintf(c->addr, sizeof(c->addr), "[%s]:%u", host, port);
    else if (port)
        snprintf(c->addr, sizeof(c->addr), "%s:%u", host, port);
    else
        snprintf(c->addr, sizeof(c->addr), "%s", host);
}

/* Client: the name the server's certificate must carry. */
static int set_name(struct rw_tls_conn *c, const char *host)
{
    const char *name = c->creds->server_name ? c->creds->server_name : host;
    X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
    unsigned char bin[16];
    char bare[RW_TLS_NAME_MAX];
    size_t n;

    if (!name || !*name)
        return c->creds->n_psk ? 0 : RAILWIRE_E_INVALID;
    n = strlen(name);
    if (name[0] == '[' && n > 2 && name[n - 1] == ']') { /* "[v6]" */
        snprintf(bare, sizeof(bare), "%.*s", (int)(n - 2), name + 1);
    } else {
        snprintf(bare, sizeof(bare), "%s", name);
    }
    snprintf(c->name, sizeof(c->name), "%s", bare);
    if (c->creds->n_psk)
        return 0; /* no certificate to check */
    X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (inet_pton(AF_INET, bare, bin) == 1 || inet_pton(AF_INET6, bare, bin) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(vp, bare) == 1 ? 0 : RAILWIRE_E_INVALID;
    if (SSL_set1_host(c->ssl, bare) != 1 || SSL_set_tlsext_host_name(c->ssl, bare) != 1)
        return RAILWIRE_E_INVALID;
    return 0;
}

int rw_tls_conn_new(struct rw_tls_creds *creds, int fd, const char *host,
                    struct rw_tls_conn **out)
{
    struct rw_tls_conn *c;
    int fl, rc;

    *out = NULL;
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return RAILWIRE_E_SYSTEM;
    c = calloc(1, sizeof(*c));
    if (!c)
        return RAILWIRE_E_NOMEM;
    pthread_mutex_init(&c->lock, NULL);
    c->fd = fd;
    c->role = creds->role;
    c->creds = rw_tls_creds_ref(creds);
    peer_addr(c);
    c->ssl = SSL_new(creds->ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
        ERR_clear_error();
        rw_tls_conn_free(c);
        return RAILWIRE_E_NOMEM;
    }
    SSL_set_app_data(c->ssl, &c->note);
    /* The size of the read buffer allocated when the record layer is made:
     * with read-ahead (rw_tls_conn_read_ahead, for bulk rails) one
     * recv then brings in several records instead of two recvs per record
     * (header, then body). */
    SSL_set_default_read_buffer_len(c->ssl, RW_TLS_READ_BUF);
    if (c->role == RW_TLS_CLIENT) {
        SSL_set_connect_state(c->ssl);
        rc = set_name(c, host);
        if (rc) {
            ERR_clear_error();
            rw_err("TLS: no usable name to check the server's certificate against (host '%s'); "
                   "connect by the server's name or give --tls-server-name",
                   host ? host : "");
            rw_tls_conn_free(c);
            return rc;
        }
    } else {
        SSL_set_accept_state(c->ssl);
    }
    *out = c;
    return 0;
}

void rw_tls_conn_free(struct rw_tls_conn *c)
{
    if (!c)
        return;
    SSL_free(c->ssl);
    rw_tls_creds_unref(c->creds);
    free(c->stage);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void rw_tls_conn_shutdown(struct rw_tls_conn *c)
{
    struct rw_tls_sigpipe g;

    rw_tls_sigpipe_enter(&g);
    pthread_mutex_lock(&c->lock);
    if (c->hs_done && c->reason == RW_TLS_R_NONE)
        SSL_shutdown(c->ssl);
    ERR_clear_error();
    pthread_mutex_unlock(&c->lock);
    rw_tls_sigpipe_leave(&g);
    rw_tls_sigpipe_failed(&g); /* close_notify to a peer that is gone */
}

static void copy_asn1(char *dst, size_t cap, const ASN1_STRING *s)
{
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, s);

    if (n >= 0)
        rw_tls_printable(dst, cap, utf8, (size_t)n);
    OPENSSL_free(utf8);
}

static void peer_names(struct rw_tls_conn *c, X509 *x)
{
    X509_NAME *subj = X509_get_subject_name(x);
    int i = subj ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;
    GENERAL_NAMES *sans;

    if (i >= 0)
        copy_asn1(c->peer.cn, sizeof(c->peer.cn),
                  X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i)));
    sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int k = 0; sans && k < sk_GENERAL_NAME_num(sans); k++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, k);
        if (g->type != GEN_DNS || c->peer.n_dns >= RW_TLS_MAX_SANS)
            continue;
        copy_asn1(c->peer.dns[c->peer.n_dns], RW_TLS_NAME_MAX, g->d.dNSName);
        c->peer.n_dns++;
    }
    GENERAL_NAMES_free(sans);
    ERR_clear_error();
}

static void handshake_done(struct rw_tls_conn *c)
{
    X509 *x;

    c->hs_done = 1;
    if (SSL_session_reused(c->ssl) && c->note.psk_identity[0]) {
        c->peer.psk = 1;
        snprintf(c->peer.psk_identity, sizeof(c->peer.psk_identity), "%s",
                 c->note.psk_identity);
    } else if ((x = SSL_get0_peer_certificate(c->ssl)) != NULL) {
        peer_names(c, x);
    }
    c->ktls_send = BIO_get_ktls_send(SSL_get_wbio(c->ssl)) ? 1 : 0;
    c->ktls_recv = BIO_get_ktls_recv(SSL_get_rbio(c->ssl)) ? 1 : 0;
}

void rw_tls_conn_read_ahead(struct rw_tls_conn *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->hs_done && !c->ktls_recv)
        SSL_set_read_ahead(c->ssl, 1);
    pthread_mutex_unlock(&c->lock);
}

/* Server: the first bytes must start a TLS handshake record. */
static int sniff(struct rw_tls_conn *c)
{
    static const unsigned char alert[7] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46};
    unsigned char b[2];
    ssize_t k;

    do {
        k = recv(c->fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
    } while (k < 0 && errno == EINTR);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return RW_TLS_WANT_READ;
    if (k < 0)
        return rw_tls_set_error(c, RW_TLS_R_IO, RAILWIRE_E_IO,
            "TLS: the client %s failed before its ClientHello: %s", c->addr, strerror(errno));
    if (k == 0)
        return rw_tls_set_error(c, RW_TLS_R_CLOSED, RAILWIRE_E_TLS,
            "TLS: the client %s closed the connection before sending a TLS ClientHello",
            c->addr);
    if (rw_tls_sniff_client_hello(b, (size_t)k) == RW_TLS_SNIFF_NOT_TLS) {
        char first[16];
        if (k > 1)
            snprintf(first, sizeof(first), "%02x %02x", b[0], b[1]);
        else
            snprintf(first, sizeof(first), "%02x", b[0]);
        (void)!send(c->fd, alert, sizeof(alert), MSG_NOSIGNAL | MSG_DONTWAIT);
        return rw_tls_set_error(c, RW_TLS_R_NOT_TLS, RAILWIRE_E_TLS,
            "TLS: the client %s is not speaking TLS (first bytes %s) at this TLS listener; "
            "give the client TLS options (--tls-cert/--tls-key/--tls-ca or --tls-psk)",
            c->addr, first);
    }
    c->sniffed = 1; /* one byte of 0x16 is enough: OpenSSL judges the rest */
    return 0;
}

int rw_tls_conn_handshake_step(struct rw_tls_conn *c)
{
    struct rw_tls_sigpipe g;
    int r, e, rc;

    if (c->reason != RW_TLS_R_NONE)
        return RAILWIRE_E_TLS;
    if (c->hs_done)
        return 0;
    if (c->role == RW_TLS_SERVER && !c->sniffed) {
        rc = sniff(c);
        if (rc)
            return rc;
    }
    rw_tls_sigpipe_enter(&g);
    pthread_mutex_lock(&c->lock);
    ERR_clear_error();
    errno = 0;
    r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        handshake_done(c);
        rc = 0;
    } else {
        e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ)
            rc = RW_TLS_WANT_READ;
        else if (e == SSL_ERROR_WANT_WRITE)
            rc = RW_TLS_WANT_WRITE;
        else
            rc = rw_tls_diag_fail(c, e);
    }
    pthread_mutex_unlock(&c->lock);
    rw_tls_sigpipe_leave(&g);
    if (rc < 0 && rc != RW_TLS_WANT_READ && rc != RW_TLS_WANT_WRITE)
        rw_tls_sigpipe_failed(&g);
    return rc;
}

int rw_tls_conn_handshake(struct rw_tls_conn *c, int64_t deadline_ms)
{
    for (;;) {
        int rc = rw_tls_conn_handshake_step(c), w;
        if (rc != RW_TLS_WANT_READ && rc != RW_TLS_WANT_WRITE)
            return rc;
        /* Never past the deadline, even with a peer that keeps sending. */
        w = rw_now_ms() >= deadline_ms ? RAILWIRE_E_TIMEOUT
                                       : rw_tls_conn_wait(c, rc, deadline_ms);
        if (w == RAILWIRE_E_TIMEOUT)
            return rw_tls_set_error(c, RW_TLS_R_TIMEOUT, RAILWIRE_E_TIMEOUT,
                c->role == RW_TLS_SERVER
                    ? "TLS: the client %s did not complete the TLS handshake in time (silent, "
                      "too slow, or not speaking TLS)"
                    : "TLS: the server %s did not complete the TLS handshake in time; check "
                      "that it is a TLS listener and not overloaded",
                c->addr);
        if (w)
            return w;
    }
}

const struct rw_tls_peer *rw_tls_conn_peer(const struct rw_tls_conn *c)
{
    return &c->peer;
}

const char *rw_tls_conn_mode(const struct rw_tls_conn *c)
{
    if (c->ktls_send && c->ktls_recv)
        return "kernel";
    if (c->ktls_send)
        return "kernel-send";
    if (c->ktls_recv)
        return "kernel-recv";
    return "user";
}

void rw_tls_conn_ktls(const struct rw_tls_conn *c, int *send_, int *recv_)
{
    *send_ = c->ktls_send;
    *recv_ = c->ktls_recv;
}

const char *rw_tls_conn_cipher(const struct rw_tls_conn *c)
{
    const SSL_CIPHER *ci = c->hs_done ? SSL_get_current_cipher(c->ssl) : NULL;

    return ci ? SSL_CIPHER_get_name(ci) : "";
}

enum rw_tls_reason rw_tls_conn_reason(const struct rw_tls_conn *c)
{
    return c->reason;
}

const char *rw_tls_conn_error(const struct rw_tls_conn *c)
{
    return c->err;
}
