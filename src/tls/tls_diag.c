/* SPDX-License-Identifier: MIT */
/* Why a TLS connection failed, in words that say what to check; the
 * first-bytes detectors for the side that does not run TLS. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tls/tls_conn_int.h"
#include "tls/tls_util.h"

static const char *const reason_names[] = {
    [RW_TLS_R_NONE] = "none",
    [RW_TLS_R_TIMEOUT] = "timeout",
    [RW_TLS_R_CLOSED] = "closed",
    [RW_TLS_R_NOT_TLS] = "not-tls",
    [RW_TLS_R_CERT_EXPIRED] = "cert-expired",
    [RW_TLS_R_CERT_NOT_YET_VALID] = "cert-not-yet-valid",
    [RW_TLS_R_UNKNOWN_CA] = "unknown-ca",
    [RW_TLS_R_NO_PEER_CERT] = "no-peer-cert",
    [RW_TLS_R_NAME_MISMATCH] = "name-mismatch",
    [RW_TLS_R_BAD_CERT] = "bad-cert",
    [RW_TLS_R_BAD_PSK] = "bad-psk",
    [RW_TLS_R_UNKNOWN_PSK_IDENTITY] = "unknown-psk-identity",
    [RW_TLS_R_NO_PSK] = "no-psk",
    [RW_TLS_R_BAD_RECORD] = "bad-record",
    [RW_TLS_R_PROTOCOL] = "protocol",
    [RW_TLS_R_IO] = "io",
};

const char *rw_tls_reason_name(enum rw_tls_reason r)
{
    if ((unsigned)r < sizeof(reason_names) / sizeof(reason_names[0]) && reason_names[r])
        return reason_names[r];
    return "unknown";
}

int rw_tls_set_error(struct rw_tls_conn *c, enum rw_tls_reason r, int err, const char *fmt, ...)
{
    va_list ap;

    if (c->reason != RW_TLS_R_NONE)
        return err;
    c->reason = r;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    return err;
}

static const char *side(const struct rw_tls_conn *c)
{
    return c->role == RW_TLS_CLIENT ? "server" : "client";
}

/* This side's own certificate, to explain an alert about it. */
static enum rw_tls_reason own_cert_dates(struct rw_tls_conn *c)
{
    X509 *x = SSL_get_certificate(c->ssl);

    if (x && X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
        return RW_TLS_R_CERT_EXPIRED;
    if (x && X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
        return RW_TLS_R_CERT_NOT_YET_VALID;
    return RW_TLS_R_BAD_CERT;
}

/* The peer's certificate failed this side's checks. */
static int verify_failed(struct rw_tls_conn *c, long v)
{
    const char *who = side(c), *what = X509_verify_cert_error_string(v);
    const char *ca = c->creds->ca_file ? c->creds->ca_file : "(none: PSK mode)";

    if (c->role == RW_TLS_CLIENT && c->creds->n_psk > 0)
        return rw_tls_set_error(c, RW_TLS_R_NO_PSK, RAILWIRE_E_TLS,
            "TLS: the server %s did not take the pre-shared key and sent a certificate "
            "instead; start it with --tls-psk and the identity %s in its file", c->addr,
            c->creds->psk[0].identity);
    switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return rw_tls_set_error(c, RW_TLS_R_CERT_EXPIRED, RAILWIRE_E_TLS,
            "TLS: the %s %s's certificate has expired; renew it (or check the clocks)", who,
            c->addr);
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return rw_tls_set_error(c, RW_TLS_R_CERT_NOT_YET_VALID, RAILWIRE_E_TLS,
            "TLS: the %s %s's certificate is not valid yet; check both machines' clocks "
            "and the certificate's start date", who, c->addr);
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        return rw_tls_set_error(c, RW_TLS_R_UNKNOWN_CA, RAILWIRE_E_TLS,
            "TLS: the %s %s's certificate does not chain to the CA in %s (%s); give both "
            "sides certificates signed by the same CA", who, c->addr, ca, what);
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return rw_tls_set_error(c, RW_TLS_R_NAME_MISMATCH, RAILWIRE_E_TLS,
            "TLS: the server %s's certificate is not for the name %s; connect by a name the "
            "certificate carries (CN or DNS SAN) or set --tls-server-name", c->addr, c->name);
    default:
        return rw_tls_set_error(c, RW_TLS_R_BAD_CERT, RAILWIRE_E_TLS,
            "TLS: the %s %s's certificate was refused: %s", who, c->addr, what);
    }
}

/* The peer sent a fatal alert (OpenSSL reason 1000 + the alert number). */
static int alert_received(struct rw_tls_conn *c, int alert, const char *text)
{
    const char *who = side(c);
    int psk = c->role == RW_TLS_CLIENT && c->creds->n_psk > 0;
    const char *id = psk ? c->creds->psk[0].identity : "";

    switch (alert) {
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNSUPPORTED_CERTIFICATE: {
        enum rw_tls_reason r = alert == SSL_AD_CERTIFICATE_EXPIRED ? RW_TLS_R_CERT_EXPIRED
                                                                   : own_cert_dates(c);
        return rw_tls_set_error(c, r, RAILWIRE_E_TLS,
            "TLS: the %s %s refused this side's certificate %s (%s)%s", who, c->addr,
            c->creds->cert_file ? c->creds->cert_file : "", text,
            r == RW_TLS_R_CERT_EXPIRED ? ": it has expired, renew it"
            : r == RW_TLS_R_CERT_NOT_YET_VALID ? ": it is not valid yet, check the clocks"
                                               : "; check the peer's log");
    }
    case SSL_AD_UNKNOWN_CA:
        return rw_tls_set_error(c, RW_TLS_R_UNKNOWN_CA, RAILWIRE_E_TLS,
            "TLS: the %s %s does not trust this side's certificate (unknown CA); sign %s with "
            "the CA the %s has in --tls-ca", who, c->addr,
            c->creds->cert_file ? c->creds->cert_file : "it", who);
    case TLS13_AD_CERTIFICATE_REQUIRED:
        return rw_tls_set_error(c, RW_TLS_R_NO_PEER_CERT, RAILWIRE_E_TLS,
            "TLS: the server %s requires a client certificate; give this client --tls-cert "
            "and --tls-key signed by the server's CA", c->addr);
    case SSL_AD_DECRYPT_ERROR:
    case SSL_AD_ILLEGAL_PARAMETER: /* OpenSSL's answer to a binder that does not verify */
        if (psk)
            return rw_tls_set_error(c, RW_TLS_R_BAD_PSK, RAILWIRE_E_TLS,
                "TLS: the server %s refused the pre-shared key of identity %s (%s): "
                "the key differs between the client's and the server's PSK files", c->addr, id,
                text);
        break;
    case SSL_AD_HANDSHAKE_FAILURE:
        if (psk)
            return rw_tls_set_error(c, RW_TLS_R_UNKNOWN_PSK_IDENTITY, RAILWIRE_E_TLS,
                "TLS: the server %s refused the handshake: the PSK identity %s is not in its "
                "PSK file (or it runs with certificates only)", c->addr, id);
        if (c->role == RW_TLS_CLIENT)
            return rw_tls_set_error(c, RW_TLS_R_NO_PSK, RAILWIRE_E_TLS,
                "TLS: the server %s refused the handshake (handshake failure): it may expect "
                "a pre-shared key (--tls-psk); check its log", c->addr);
        break;
    case SSL_AD_BAD_RECORD_MAC:
        return rw_tls_set_error(c, RW_TLS_R_BAD_RECORD, RAILWIRE_E_TLS,
            "TLS: the %s %s could not authenticate a record from this side (bad record MAC); "
            "something between the two altered the stream", who, c->addr);
    default:
        break;
    }
    return rw_tls_set_error(c, RW_TLS_R_PROTOCOL, RAILWIRE_E_TLS,
        "TLS: the %s %s ended the TLS session: %s; check its log", who, c->addr, text);
}

static int eof_or_reset(struct rw_tls_conn *c, int saved_errno)
{
    int reset = saved_errno == ECONNRESET || saved_errno == EPIPE;

    if (c->hs_done)
        return rw_tls_set_error(c, reset ? RW_TLS_R_IO : RW_TLS_R_CLOSED,
            reset ? RAILWIRE_E_IO : RAILWIRE_E_CLOSED,
            "TLS: the %s %s %s the connection", side(c), c->addr,
            reset ? "reset" : "closed");
    if (c->role == RW_TLS_CLIENT)
        return rw_tls_set_error(c, RW_TLS_R_CLOSED, RAILWIRE_E_TLS,
            "TLS: the server %s %s the connection during the TLS handshake: it may be a plain "
            "(non-TLS) listener, or it refused this client; check the server's log", c->addr,
            reset ? "reset" : "closed");
    return rw_tls_set_error(c, RW_TLS_R_CLOSED, RAILWIRE_E_TLS,
        "TLS: the client %s %s the connection during the TLS handshake; it may have refused "
        "this server's certificate, check the client's log", c->addr,
        reset ? "reset" : "closed");
}

/* The local reasons OpenSSL reports, classified. */
static int local_reason(struct rw_tls_conn *c, int reason, const char *text)
{
    switch (reason) {
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
    case SSL_R_RECORD_LENGTH_MISMATCH:
    case SSL_R_WRONG_SSL_VERSION:
        if (!c->hs_done)
            return rw_tls_set_error(c, RW_TLS_R_NOT_TLS, RAILWIRE_E_TLS,
                "TLS: the %s %s does not speak TLS (%s): it is probably a plain listener "
                "or client; enable TLS on both sides or on neither", side(c), c->addr, text);
        break;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        return rw_tls_set_error(c, RW_TLS_R_NO_PEER_CERT, RAILWIRE_E_TLS,
            "TLS: the client %s sent no certificate; give it --tls-cert and --tls-key signed "
            "by this server's CA, or use --tls-psk on both sides", c->addr);
    case SSL_R_BINDER_DOES_NOT_VERIFY:
        return rw_tls_set_error(c, RW_TLS_R_BAD_PSK, RAILWIRE_E_TLS,
            "TLS: the client %s's pre-shared key for identity %s differs from this server's; "
            "check both PSK files", c->addr, c->note.psk_identity);
    case SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC:
        return rw_tls_set_error(c, RW_TLS_R_BAD_RECORD, RAILWIRE_E_TLS,
            "TLS: a record from the %s %s failed authentication (%s): the stream was altered "
            "in transit; the connection is dropped", side(c), c->addr, text);
    case SSL_R_UNEXPECTED_EOF_WHILE_READING:
        return eof_or_reset(c, 0);
    default:
        break;
    }
    return -1;
}

static int ssl_failed(struct rw_tls_conn *c)
{
    unsigned long e = ERR_peek_error();
    int reason = ERR_GET_REASON(e);
    char text[256];
    long v = SSL_get_verify_result(c->ssl);
    int rc;

    rw_tls_ossl_errors(text, sizeof(text));
    if (c->role == RW_TLS_SERVER && c->note.psk_state == RW_TLS_PSK_UNKNOWN)
        return rw_tls_set_error(c, RW_TLS_R_UNKNOWN_PSK_IDENTITY, RAILWIRE_E_TLS,
            "TLS: the client %s offered the PSK identity %s, which is not in this server's "
            "PSK file %s", c->addr, c->note.psk_identity, c->creds->psk_file);
    if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && v != X509_V_OK)
        return verify_failed(c, v);
    if (reason > SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256)
        return alert_received(c, reason - SSL_AD_REASON_OFFSET, text);
    rc = local_reason(c, reason, text);
    if (rc < 0 && c->role == RW_TLS_SERVER && !c->creds->has_certs &&
        c->note.psk_state == RW_TLS_PSK_NONE)
        return rw_tls_set_error(c, RW_TLS_R_NO_PSK, RAILWIRE_E_TLS,
            "TLS: the client %s offered no pre-shared key and this listener has no "
            "certificate (%s); give the client --tls-psk", c->addr, text);
    if (rc < 0)
        rc = rw_tls_set_error(c, RW_TLS_R_PROTOCOL, RAILWIRE_E_TLS,
            "TLS: %s with the %s %s failed: %s", c->hs_done ? "the session" : "the handshake",
            side(c), c->addr, text);
    return rc;
}

int rw_tls_diag_fail(struct rw_tls_conn *c, int ssl_err)
{
    int saved = errno;

    if (ssl_err == SSL_ERROR_SSL)
        return ssl_failed(c);
    ERR_clear_error();
    if (ssl_err == SSL_ERROR_ZERO_RETURN || ssl_err == SSL_ERROR_SYSCALL)
        return eof_or_reset(c, ssl_err == SSL_ERROR_SYSCALL ? saved : 0);
    return rw_tls_set_error(c, RW_TLS_R_PROTOCOL, RAILWIRE_E_TLS,
        "TLS: unexpected OpenSSL state %d with the %s %s", ssl_err, side(c), c->addr);
}

enum rw_tls_sniff rw_tls_sniff_client_hello(const void *p, size_t n)
{
    const unsigned char *b = p;

    if (n == 0)
        return RW_TLS_SNIFF_MORE;
    if (b[0] != 0x16)
        return RW_TLS_SNIFF_NOT_TLS;
    if (n < 2)
        return RW_TLS_SNIFF_MORE;
    return b[1] == 0x03 ? RW_TLS_SNIFF_TLS : RW_TLS_SNIFF_NOT_TLS;
}

enum rw_tls_sniff rw_tls_sniff_record(const void *p, size_t n)
{
    const unsigned char *b = p;

    if (n == 0)
        return RW_TLS_SNIFF_MORE;
    if (b[0] < 20 || b[0] > 23)
        return RW_TLS_SNIFF_NOT_TLS;
    if (n < 2)
        return RW_TLS_SNIFF_MORE;
    return b[1] == 0x03 ? RW_TLS_SNIFF_TLS : RW_TLS_SNIFF_NOT_TLS;
}
