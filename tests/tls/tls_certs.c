/* SPDX-License-Identifier: MIT */
#include "tls_certs.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls/tls_util.h"

#define DAY (24L * 3600L)

char *tls_path(char *buf, size_t cap, const char *dir, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

int tls_write_file(const char *dir, const char *name, const char *text, unsigned mode)
{
    char p[512];
    int fd = open(tls_path(p, sizeof(p), dir, name), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    size_t n = strlen(text);

    if (fd < 0)
        return -1;
    if (write(fd, text, n) != (ssize_t)n || fchmod(fd, mode) != 0) {
        close(fd);
        return -1;
    }
    return close(fd);
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!e)
        return -1;
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return 0;
}

/* One certificate for `key`, signed by ca/ca_key (self-signed when ca is
 * NULL), valid from now+from_s to now+to_s. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, const char *san, X509 *ca,
                       EVP_PKEY *ca_key, long from_s, long to_s, long serial)
{
    X509 *x = X509_new();
    X509_NAME *n;

    if (!x)
        return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(x), to_s);
    X509_set_pubkey(x, key);
    n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"railwire test", -1,
                               -1, 0);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
    if (!ca) {
        add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
        add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
        add_ext(x, x, NID_subject_key_identifier, "hash");
    } else {
        add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE");
        add_ext(x, ca, NID_key_usage, "critical,digitalSignature");
        add_ext(x, ca, NID_ext_key_usage, "serverAuth,clientAuth");
        if (san)
            add_ext(x, ca, NID_subject_alt_name, san);
    }
    if (!X509_sign(x, ca_key ? ca_key : key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int save(const char *dir, const char *name, X509 *x, EVP_PKEY *k)
{
    char p[512], base[128];
    FILE *f;
    int ok = 1;

    snprintf(base, sizeof(base), "%s.pem", name);
    f = fopen(tls_path(p, sizeof(p), dir, base), "w");
    if (!f)
        return -1;
    ok &= PEM_write_X509(f, x) == 1;
    fclose(f);
    if (!k)
        return ok ? 0 : -1;
    snprintf(base, sizeof(base), "%s.key", name);
    f = fopen(tls_path(p, sizeof(p), dir, base), "w");
    if (!f)
        return -1;
    ok &= PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

struct spec {
    const char *name, *cn, *san;
    int other_ca;
    long from, to;
};

static const struct spec specs[] = {
    {"server", "server.test", "DNS:server.test,DNS:localhost,IP:127.0.0.1", 0, -DAY, 30 * DAY},
    {"client", "client-a.fleet.test", "DNS:client-a.fleet.test,DNS:alias.other.test", 0, -DAY,
     30 * DAY},
    {"expired", "server.test", "DNS:server.test,DNS:localhost,IP:127.0.0.1", 0, -30 * DAY, -DAY},
    {"future", "server.test", "DNS:server.test,DNS:localhost,IP:127.0.0.1", 0, DAY, 30 * DAY},
    {"stranger", "server.test", "DNS:server.test,DNS:localhost,IP:127.0.0.1", 1, -DAY, 30 * DAY},
    {"client-expired", "client-a.fleet.test", "DNS:client-a.fleet.test", 0, -30 * DAY, -DAY},
    {"client-future", "client-a.fleet.test", "DNS:client-a.fleet.test", 0, DAY, 30 * DAY},
    {"client-stranger", "client-a.fleet.test", "DNS:client-a.fleet.test", 1, -DAY, 30 * DAY},
};

static int make_all(const char *dir, EVP_PKEY *ca_key, X509 *ca, EVP_PKEY *oca_key, X509 *oca)
{
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        const struct spec *s = &specs[i];
        EVP_PKEY *k = EVP_EC_gen("P-256");
        X509 *x = k ? make_cert(k, s->cn, s->san, s->other_ca ? oca : ca,
                                s->other_ca ? oca_key : ca_key, s->from, s->to, 10 + (long)i)
                    : NULL;
        int rc = x ? save(dir, s->name, x, k) : -1;
        X509_free(x);
        EVP_PKEY_free(k);
        if (rc)
            return -1;
    }
    return 0;
}

static int make_psk(const char *dir)
{
    return tls_write_file(dir, "psk.txt",
               "# test keys\n"
               "alpha:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
               "\n"
               "beta:505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f"
               "707172737475767778797a7b7c7d7e7f\n",
               0600) |
           tls_write_file(dir, "psk-wrong.txt",
               "alpha:ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", 0600) |
           tls_write_file(dir, "psk-gamma.txt",
               "gamma:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", 0600);
}

int tls_certs_make(char *dir, size_t cap)
{
    EVP_PKEY *ca_key = NULL, *oca_key = NULL;
    X509 *ca = NULL, *oca = NULL;
    int rc = -1;

    if (rw_tls_init()) /* OpenSSL as railwire sets it up, before its first use here */
        return -1;
    snprintf(dir, cap, "/tmp/rw-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    ca_key = EVP_EC_gen("P-256");
    oca_key = EVP_EC_gen("P-256");
    if (!ca_key || !oca_key)
        goto out;
    ca = make_cert(ca_key, "railwire test CA", NULL, NULL, NULL, -DAY, 365 * DAY, 1);
    oca = make_cert(oca_key, "some other CA", NULL, NULL, NULL, -DAY, 365 * DAY, 2);
    if (!ca || !oca || save(dir, "ca", ca, ca_key) || save(dir, "other-ca", oca, oca_key))
        goto out;
    if (make_all(dir, ca_key, ca, oca_key, oca) || make_psk(dir))
        goto out;
    rc = 0;
out:
    X509_free(ca);
    X509_free(oca);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(oca_key);
    return rc;
}

void tls_certs_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];

    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            unlink(tls_path(p, sizeof(p), dir, e->d_name));
    if (d)
        closedir(d);
    rmdir(dir);
}
