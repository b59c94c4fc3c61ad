/* SPDX-License-Identifier: MIT */
/* TLS 1.3 credentials: one OpenSSL context (client or server) built from a
 * railwire_tls_opts, with its pre-shared keys, reference counted so that a
 * reload (SIGHUP, railwire_server_reload_tls) can build a fresh object and
 * swap it in while connections made with the old one keep it alive.
 *
 * Both roles offer TLS 1.3 only, with TLS_AES_128_GCM_SHA256 (preferred)
 * and TLS_AES_256_GCM_SHA384, SSL_OP_ENABLE_KTLS, no session tickets and no
 * session cache (every connection authenticates in full). */
#ifndef RW_TLS_CREDS_H
#define RW_TLS_CREDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include <railwire/error.h>
#include <railwire/tls.h>

enum rw_tls_role { RW_TLS_CLIENT = 0, RW_TLS_SERVER = 1 };

/* Longest PSK identity or certificate name kept, with its NUL. */
#define RW_TLS_NAME_MAX 256
/* PSK key lengths accepted (OpenSSL keeps at most 48 bytes of key). */
#define RW_TLS_PSK_MIN 32
#define RW_TLS_PSK_MAX 48

/* One line of a PSK file. */
struct rw_tls_psk {
    char identity[RW_TLS_NAME_MAX];
    size_t key_len;
    uint8_t key[RW_TLS_PSK_MAX];
};

/* What the PSK callbacks saw during one handshake (rw_tls_conn points
 * SSL_set_app_data at one; the creds callbacks fill it). */
enum rw_tls_psk_state {
    RW_TLS_PSK_NONE = 0,    /* no PSK offered (client) / looked up (server) */
    RW_TLS_PSK_OFFERED,     /* client: offered psk.identity */
    RW_TLS_PSK_FOUND,       /* server: the client's identity is in the file */
    RW_TLS_PSK_UNKNOWN,     /* server: the client's identity is not (printable copy kept) */
};
struct rw_tls_hs_note {
    enum rw_tls_psk_state psk_state;
    char psk_identity[RW_TLS_NAME_MAX];
};

struct rw_tls_creds {
    atomic_uint refs;
    enum rw_tls_role role;
    SSL_CTX *ctx;
    int has_certs;            /* CA loaded (and, but for a CA-only client, cert and key) */
    struct rw_tls_psk *psk;   /* server: every line; client: the one it uses */
    unsigned n_psk;
    /* Copies of the options, read again by a reload (NULL when unset). */
    char *cert_file, *key_file, *ca_file, *psk_file, *psk_identity, *server_name;
};

/* Builds credentials for `role` from `o` (reads and checks every file now).
 * Returns 0 and *out (one reference, the caller's), RAILWIRE_E_INVALID for
 * options or files that cannot be used (missing field, unreadable file,
 * key that does not match its certificate, PSK file accessible by group or
 * others, bad PSK line), RAILWIRE_E_NOMEM.  Every failure is logged with the
 * file and what to check. */
int rw_tls_creds_new(const railwire_tls_opts *o, enum rw_tls_role role,
                     struct rw_tls_creds **out);

/* Builds fresh credentials from the same options and files as `old` (which
 * is not changed).  Same returns as rw_tls_creds_new. */
int rw_tls_creds_rebuild(const struct rw_tls_creds *old, struct rw_tls_creds **out);

/* Takes one more reference; returns c. */
struct rw_tls_creds *rw_tls_creds_ref(struct rw_tls_creds *c);

/* Drops one reference; the last one frees the object (keys wiped).  NULL is
 * ignored. */
void rw_tls_creds_unref(struct rw_tls_creds *c);

/* Reads a PSK file: checks its mode (refused when accessible by group or
 * others), parses IDENTITY:HEXKEY lines (blank lines and lines starting with
 * '#' are skipped; the key is the part after the last ':').  Returns 0 and
 * a malloc'd array in *out (caller frees, after wiping) with *n >= 1
 * entries, or RAILWIRE_E_INVALID (logged with the file, line and what to
 * fix) / RAILWIRE_E_NOMEM. */
int rw_tls_psk_file_load(const char *path, struct rw_tls_psk **out, unsigned *n);

/* ---------------------------------------------------------------------------
 * A slot holding the current credentials: readers take a reference, a
 * reload swaps in a fresh object only when it built completely.
 * ------------------------------------------------------------------------- */
struct rw_tls_slot {
    pthread_mutex_t lock;
    struct rw_tls_creds *cur;
    uint64_t reloads;         /* successful reloads */
    uint64_t reload_failures; /* reloads that kept the old credentials */
};

/* Builds the first credentials into the slot.  Returns what
 * rw_tls_creds_new returns (the slot is unusable on error). */
int rw_tls_slot_init(struct rw_tls_slot *s, const railwire_tls_opts *o, enum rw_tls_role role);

/* Returns a reference to the current credentials (release it with
 * rw_tls_creds_unref).  Thread-safe. */
struct rw_tls_creds *rw_tls_slot_get(struct rw_tls_slot *s);

/* Reads every file again and swaps the result in.  On failure the old
 * credentials stay, the failure is logged ("keeping the previous TLS
 * credentials") and returned.  Connections keep whatever object they were
 * made with.  Thread-safe. */
int rw_tls_slot_reload(struct rw_tls_slot *s);

/* Releases the slot's reference. */
void rw_tls_slot_destroy(struct rw_tls_slot *s);

#endif
