/* SPDX-License-Identifier: MIT */
/* TLS credentials: options checked, OpenSSL context built, reference
 * counting and the reload slot. */
#include "tls/tls_creds.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/log.h"
#include "tls/tls_psk.h"
#include "tls/tls_util.h"

#define CIPHERS "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384"

/* Reads a field the caller's struct_size covers, else NULL. */
#define OPT(o, f)                                                                        \
    (((o)->struct_size >= offsetof(railwire_tls_opts, f) + sizeof((o)->f)) ? (o)->f : NULL)

static void creds_free(struct rw_tls_creds *c)
{
    if (!c)
        return;
    SSL_CTX_free(c->ctx);
    if (c->psk) {
        OPENSSL_cleanse(c->psk, c->n_psk * sizeof(*c->psk));
        free(c->psk);
    }
    free(c->cert_file);
    free(c->key_file);
    free(c->ca_file);
    free(c->psk_file);
    free(c->psk_identity);
    free(c->server_name);
    free(c);
}

static const char *empty_null(const char *s)
{
    return (s && *s) ? s : NULL;
}

/* Copies the option strings and checks which combination is set. */
static int copy_opts(struct rw_tls_creds *c, const railwire_tls_opts *o)
{
    int fail = 0, n_cert;

    if (!o || o->struct_size < sizeof(uint32_t)) {
        rw_err("TLS: the options are not initialised; call railwire_tls_opts_init() first");
        return RAILWIRE_E_INVALID;
    }
    c->cert_file = rw_tls_strdup(empty_null(OPT(o, cert_file)), &fail);
    c->key_file = rw_tls_strdup(empty_null(OPT(o, key_file)), &fail);
    c->ca_file = rw_tls_strdup(empty_null(OPT(o, ca_file)), &fail);
    c->psk_file = rw_tls_strdup(empty_null(OPT(o, psk_file)), &fail);
    c->psk_identity = rw_tls_strdup(empty_null(OPT(o, psk_identity)), &fail);
    c->server_name = rw_tls_strdup(empty_null(OPT(o, server_name)), &fail);
    if (fail)
        return RAILWIRE_E_NOMEM;
    n_cert = !!c->cert_file + !!c->key_file + !!c->ca_file;
    if (c->role == RW_TLS_CLIENT && c->psk_file)
        return 0; /* PSK wins on a client */
    if (n_cert == 0 && !c->psk_file) {
        rw_err("TLS: no credentials: give a certificate, its key and a CA "
               "(--tls-cert, --tls-key, --tls-ca) or a PSK file (--tls-psk)");
        return RAILWIRE_E_INVALID;
    }
    if (c->role == RW_TLS_CLIENT && n_cert == 1 && c->ca_file)
        return 0; /* checks the server only; a railwire server will ask for a certificate */
    if (n_cert != 0 && n_cert != 3) {
        rw_err("TLS: certificates need all three of the certificate (--tls-cert), "
               "its key (--tls-key) and the CA (--tls-ca); missing:%s%s%s",
               c->cert_file ? "" : " certificate", c->key_file ? "" : " key",
               c->ca_file ? "" : " CA");
        return RAILWIRE_E_INVALID;
    }
    return 0;
}

static int ctx_base(struct rw_tls_creds *c)
{
    char why[256];

    c->ctx = SSL_CTX_new(c->role == RW_TLS_CLIENT ? TLS_client_method() : TLS_server_method());
    if (!c->ctx) {
        rw_err("TLS: cannot create an OpenSSL context: %s", rw_tls_ossl_errors(why, sizeof(why)));
        return RAILWIRE_E_NOMEM;
    }
    SSL_CTX_set_app_data(c->ctx, c);
    if (!SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_max_proto_version(c->ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_ciphersuites(c->ctx, CIPHERS)) {
        rw_err("TLS: this OpenSSL cannot do TLS 1.3 with AES-GCM: %s",
               rw_tls_ossl_errors(why, sizeof(why)));
        return RAILWIRE_E_UNSUPPORTED;
    }
    /* RAILWIRE_TLS_KTLS=0 keeps the record layer in user space (to compare
     * kernel TLS with OpenSSL's, docs/security.md "Kernel TLS"). */
    const char *ktls = getenv("RAILWIRE_TLS_KTLS");
    if (!ktls || strcmp(ktls, "0") != 0)
        SSL_CTX_set_options(c->ctx, SSL_OP_ENABLE_KTLS);
    SSL_CTX_set_mode(c->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_clear_mode(c->ctx, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_OFF);
    if (c->role == RW_TLS_SERVER) {
        static const unsigned char sid_ctx[] = "railwire";
        SSL_CTX_set_num_tickets(c->ctx, 0);
        /* A PSK handshake is a resumption: with client certificates
         * required, OpenSSL wants a session id context. */
        SSL_CTX_set_session_id_context(c->ctx, sid_ctx, sizeof(sid_ctx) - 1);
    }
    /* A client verifies the server in every mode: a PSK client has an
     * empty trust store, so a server that answers with a certificate
     * instead of the key fails verification. */
    if (c->role == RW_TLS_CLIENT)
        SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    return 0;
}

static void warn_validity(const struct rw_tls_creds *c)
{
    X509 *x = SSL_CTX_get0_certificate(c->ctx);

    if (!x)
        return;
    if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
        rw_warn("TLS: the certificate %s has expired; peers will refuse it, renew it",
                c->cert_file);
    else if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
        rw_warn("TLS: the certificate %s is not valid yet; peers will refuse it until then, "
                "check the clocks", c->cert_file);
}

/* The key, checked against the certificate already loaded. */
static int load_key(struct rw_tls_creds *c)
{
    char why[256];
    BIO *b = BIO_new_file(c->key_file, "r");
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    int rc = 0;

    BIO_free(b);
    if (!k) {
        rw_err("TLS: cannot load the private key %s: %s; check the path, that it is PEM and "
               "not encrypted", c->key_file, rw_tls_ossl_errors(why, sizeof(why)));
        return RAILWIRE_E_INVALID;
    }
    if (X509_check_private_key(SSL_CTX_get0_certificate(c->ctx), k) != 1) {
        ERR_clear_error();
        rw_err("TLS: the private key %s does not match the certificate %s; give the key "
               "the certificate was made for", c->key_file, c->cert_file);
        rc = RAILWIRE_E_INVALID;
    } else if (SSL_CTX_use_PrivateKey(c->ctx, k) != 1 || SSL_CTX_check_private_key(c->ctx) != 1) {
        rw_err("TLS: cannot use the private key %s with the certificate %s: %s", c->key_file,
               c->cert_file, rw_tls_ossl_errors(why, sizeof(why)));
        rc = RAILWIRE_E_INVALID;
    }
    EVP_PKEY_free(k);
    return rc;
}

static int load_certs(struct rw_tls_creds *c)
{
    char why[256];
    int rc;

    if (!c->cert_file)
        goto ca; /* client checking the server only */
    if (SSL_CTX_use_certificate_chain_file(c->ctx, c->cert_file) != 1) {
        rw_err("TLS: cannot load the certificate %s: %s; check the path and that it is PEM",
               c->cert_file, rw_tls_ossl_errors(why, sizeof(why)));
        return RAILWIRE_E_INVALID;
    }
    rc = load_key(c);
    if (rc)
        return rc;
ca:
    if (SSL_CTX_load_verify_locations(c->ctx, c->ca_file, NULL) != 1) {
        rw_err("TLS: cannot load the CA file %s: %s; check the path and that it is PEM",
               c->ca_file, rw_tls_ossl_errors(why, sizeof(why)));
        return RAILWIRE_E_INVALID;
    }
    if (c->role == RW_TLS_SERVER) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(c->ca_file);
        if (names)
            SSL_CTX_set_client_CA_list(c->ctx, names);
        ERR_clear_error();
        SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    warn_validity(c);
    c->has_certs = 1;
    return 0;
}

/* Client: keeps only the line it uses. */
static int pick_identity(struct rw_tls_creds *c)
{
    unsigned i = 0;

    if (c->psk_identity) {
        for (i = 0; i < c->n_psk; i++)
            if (strcmp(c->psk[i].identity, c->psk_identity) == 0)
                break;
        if (i == c->n_psk) {
            rw_err("TLS: the PSK identity %s is not in %s; check --tls-psk-identity",
                   c->psk_identity, c->psk_file);
            return RAILWIRE_E_INVALID;
        }
    }
    if (i != 0)
        c->psk[0] = c->psk[i];
    for (unsigned k = 1; k < c->n_psk; k++)
        OPENSSL_cleanse(&c->psk[k], sizeof(c->psk[k]));
    c->n_psk = 1;
    return 0;
}

static int build(struct rw_tls_creds *c, const railwire_tls_opts *o)
{
    int rc = copy_opts(c, o);

    if (rc == 0)
        rc = ctx_base(c);
    if (rc == 0 && c->ca_file && !(c->role == RW_TLS_CLIENT && c->psk_file))
        rc = load_certs(c);
    if (rc == 0 && c->psk_file) {
        rc = rw_tls_psk_file_load(c->psk_file, &c->psk, &c->n_psk);
        if (rc == 0 && c->role == RW_TLS_CLIENT)
            rc = pick_identity(c);
        if (rc == 0)
            rw_tls_psk_install(c);
    }
    return rc;
}

int rw_tls_creds_new(const railwire_tls_opts *o, enum rw_tls_role role,
                     struct rw_tls_creds **out)
{
    struct rw_tls_creds *c;
    int rc;

    *out = NULL;
    rc = rw_tls_init();
    if (rc)
        return rc;
    c = calloc(1, sizeof(*c));
    if (!c)
        return RAILWIRE_E_NOMEM;
    atomic_init(&c->refs, 1);
    c->role = role;
    rc = build(c, o);
    if (rc) {
        creds_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int rw_tls_creds_rebuild(const struct rw_tls_creds *old, struct rw_tls_creds **out)
{
    railwire_tls_opts o;

    railwire_tls_opts_init(&o);
    o.cert_file = old->cert_file;
    o.key_file = old->key_file;
    o.ca_file = old->ca_file;
    o.psk_file = old->psk_file;
    o.psk_identity = old->psk_identity;
    o.server_name = old->server_name;
    return rw_tls_creds_new(&o, old->role, out);
}

struct rw_tls_creds *rw_tls_creds_ref(struct rw_tls_creds *c)
{
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void rw_tls_creds_unref(struct rw_tls_creds *c)
{
    if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        creds_free(c);
}

int rw_tls_slot_init(struct rw_tls_slot *s, const railwire_tls_opts *o, enum rw_tls_role role)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    return rw_tls_creds_new(o, role, &s->cur);
}

struct rw_tls_creds *rw_tls_slot_get(struct rw_tls_slot *s)
{
    struct rw_tls_creds *c;

    pthread_mutex_lock(&s->lock);
    c = s->cur ? rw_tls_creds_ref(s->cur) : NULL;
    pthread_mutex_unlock(&s->lock);
    return c;
}

int rw_tls_slot_reload(struct rw_tls_slot *s)
{
    struct rw_tls_creds *cur = rw_tls_slot_get(s), *fresh = NULL, *old;
    int rc;

    if (!cur)
        return RAILWIRE_E_STATE;
    rc = rw_tls_creds_rebuild(cur, &fresh);
    rw_tls_creds_unref(cur);
    pthread_mutex_lock(&s->lock);
    if (rc) {
        s->reload_failures++;
        pthread_mutex_unlock(&s->lock);
        rw_err("TLS: reload failed (%s); keeping the previous TLS credentials",
               railwire_strerror(rc));
        return rc;
    }
    old = s->cur;
    s->cur = fresh;
    s->reloads++;
    pthread_mutex_unlock(&s->lock);
    rw_tls_creds_unref(old);
    rw_info("TLS: credentials reloaded; new connections use them, established ones keep theirs");
    return 0;
}

void rw_tls_slot_destroy(struct rw_tls_slot *s)
{
    rw_tls_creds_unref(s->cur);
    s->cur = NULL;
    pthread_mutex_destroy(&s->lock);
}
