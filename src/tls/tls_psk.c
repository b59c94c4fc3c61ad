/* SPDX-License-Identifier: MIT */
/* PSK files (IDENTITY:HEXKEY lines) and the TLS 1.3 PSK callbacks. */
#include "tls/tls_psk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/log.h"
#include "tls/tls_util.h"

/* Biggest PSK file read (a few thousand identities). */
#define PSK_FILE_MAX (1u << 20)

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Parses one trimmed, non-empty line into *p.  Returns NULL or what is
 * wrong with it. */
static const char *parse_line(char *line, struct rw_tls_psk *p)
{
    char *colon = strrchr(line, ':');
    size_t idlen, hexlen;

    if (!colon)
        return "no ':' between the identity and the key";
    idlen = (size_t)(colon - line);
    if (idlen == 0)
        return "empty identity";
    if (idlen >= sizeof(p->identity))
        return "identity longer than 255 bytes";
    for (size_t i = 0; i < idlen; i++)
        if ((unsigned char)line[i] <= 0x20 || (unsigned char)line[i] >= 0x7f)
            return "identity with a space or a non-printable byte";
    hexlen = strlen(colon + 1);
    if (hexlen % 2)
        return "the key has an odd number of hex digits";
    if (hexlen / 2 < RW_TLS_PSK_MIN)
        return "key shorter than 32 bytes (64 hex digits); make one with "
               "`openssl rand -hex 32`";
    if (hexlen / 2 > RW_TLS_PSK_MAX)
        return "key longer than 48 bytes (96 hex digits)";
    for (size_t i = 0; i < hexlen / 2; i++) {
        int hi = hexval(colon[1 + 2 * i]), lo = hexval(colon[2 + 2 * i]);
        if (hi < 0 || lo < 0)
            return "the key is not hexadecimal";
        p->key[i] = (uint8_t)(hi << 4 | lo);
    }
    memcpy(p->identity, line, idlen);
    p->identity[idlen] = '\0';
    p->key_len = hexlen / 2;
    return NULL;
}

/* Opens and reads the whole file after checking its mode.  Returns 0 and a
 * NUL-terminated malloc'd text in *text. */
static int read_checked(const char *path, char **text, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf;
    size_t got = 0;

    if (fd < 0) {
        rw_err("TLS: cannot open the PSK file %s: %s; check the path and its permissions",
               path, strerror(errno));
        return RAILWIRE_E_INVALID;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rw_err("TLS: the PSK file %s is not a regular file", path);
        close(fd);
        return RAILWIRE_E_INVALID;
    }
    if (st.st_mode & 077) {
        rw_err("TLS: refusing the PSK file %s: it is readable by group or others (mode %04o); "
               "run `chmod 600 %s`",
               path, (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return RAILWIRE_E_INVALID;
    }
    if (st.st_size > PSK_FILE_MAX) {
        rw_err("TLS: the PSK file %s is larger than %u bytes", path, PSK_FILE_MAX);
        close(fd);
        return RAILWIRE_E_INVALID;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return RAILWIRE_E_NOMEM;
    }
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

static char *trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static int parse_all(const char *path, char *text, struct rw_tls_psk *arr, unsigned cap,
                     unsigned *n)
{
    unsigned lineno = 0;
    char *save = NULL;

    *n = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *t = trim(l);
        const char *why;
        lineno++;
        if (*t == '\0' || *t == '#')
            continue;
        if (*n >= cap)
            return RAILWIRE_E_INVALID;
        why = parse_line(t, &arr[*n]);
        if (why) {
            rw_err("TLS: the PSK file %s, line %u: %s (expected IDENTITY:HEXKEY)", path,
                   lineno, why);
            return RAILWIRE_E_INVALID;
        }
        for (unsigned i = 0; i < *n; i++)
            if (strcmp(arr[i].identity, arr[*n].identity) == 0) {
                rw_err("TLS: the PSK file %s, line %u: identity %s appears twice", path,
                       lineno, arr[*n].identity);
                return RAILWIRE_E_INVALID;
            }
        (*n)++;
    }
    return 0;
}

int rw_tls_psk_file_load(const char *path, struct rw_tls_psk **out, unsigned *n)
{
    char *text = NULL;
    size_t len = 0;
    unsigned cap = 1;
    struct rw_tls_psk *arr;
    int rc = read_checked(path, &text, &len);

    if (rc)
        return rc;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '\n';
    arr = calloc(cap, sizeof(*arr));
    if (!arr) {
        OPENSSL_cleanse(text, len);
        free(text);
        return RAILWIRE_E_NOMEM;
    }
    rc = parse_all(path, text, arr, cap, n);
    OPENSSL_cleanse(text, len);
    free(text);
    if (rc == 0 && *n == 0) {
        rw_err("TLS: the PSK file %s has no IDENTITY:HEXKEY line", path);
        rc = RAILWIRE_E_INVALID;
    }
    if (rc) {
        OPENSSL_cleanse(arr, cap * sizeof(*arr));
        free(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* TLS_AES_128_GCM_SHA256: the PSK sessions' cipher (its hash, SHA-256, is
 * the one the binder uses). */
static const unsigned char psk_cipher_id[2] = {0x13, 0x01};

static SSL_SESSION *psk_session(SSL *ssl, const struct rw_tls_psk *p)
{
    const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, psk_cipher_id);
    SSL_SESSION *s;

    if (!cipher)
        return NULL;
    s = SSL_SESSION_new();
    if (!s)
        return NULL;
    if (!SSL_SESSION_set1_master_key(s, p->key, p->key_len) ||
        !SSL_SESSION_set_cipher(s, cipher) ||
        !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
        SSL_SESSION_free(s);
        return NULL;
    }
    return s;
}

static struct rw_tls_creds *creds_of(SSL *ssl)
{
    return SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
}

static int use_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
                  SSL_SESSION **sess)
{
    struct rw_tls_creds *c = creds_of(ssl);
    struct rw_tls_hs_note *note = SSL_get_app_data(ssl);
    const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, psk_cipher_id);

    *sess = NULL;
    *id = NULL;
    *idlen = 0;
    if (!c || c->n_psk == 0 || !cipher)
        return 1;
    if (md && md != SSL_CIPHER_get_handshake_digest(cipher))
        return 1; /* after a HelloRetryRequest with another hash: no PSK */
    *sess = psk_session(ssl, &c->psk[0]);
    if (!*sess)
        return 0;
    *id = (const unsigned char *)c->psk[0].identity;
    *idlen = strlen(c->psk[0].identity);
    if (note) {
        note->psk_state = RW_TLS_PSK_OFFERED;
        snprintf(note->psk_identity, sizeof(note->psk_identity), "%s", c->psk[0].identity);
    }
    return 1;
}

static int find_cb(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
    struct rw_tls_creds *c = creds_of(ssl);
    struct rw_tls_hs_note *note = SSL_get_app_data(ssl);

    *sess = NULL;
    for (unsigned i = 0; c && i < c->n_psk; i++) {
        const struct rw_tls_psk *p = &c->psk[i];
        if (strlen(p->identity) != idlen || memcmp(p->identity, id, idlen) != 0)
            continue;
        *sess = psk_session(ssl, p);
        if (!*sess)
            return 0;
        if (note) {
            note->psk_state = RW_TLS_PSK_FOUND;
            snprintf(note->psk_identity, sizeof(note->psk_identity), "%s", p->identity);
        }
        return 1;
    }
    if (note) {
        note->psk_state = RW_TLS_PSK_UNKNOWN;
        rw_tls_printable(note->psk_identity, 65, id, idlen);
    }
    return 1; /* unknown identity: no PSK; the handshake then fails */
}

void rw_tls_psk_install(struct rw_tls_creds *c)
{
    if (c->role == RW_TLS_CLIENT)
        SSL_CTX_set_psk_use_session_callback(c->ctx, use_cb);
    else
        SSL_CTX_set_psk_find_session_callback(c->ctx, find_cb);
}
