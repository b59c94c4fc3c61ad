/* SPDX-License-Identifier: MIT */
/* The server's authorisation list (serve --tls-allow NAME, repeatable).
 *
 * An entry is a name matched exactly, or "*.suffix", which matches any
 * name ending in ".suffix" with at least one character before it
 * ("*.fleet.example" matches "a.fleet.example" and "a.b.fleet.example",
 * not "fleet.example").  A client is allowed when one entry matches its
 * PSK identity (exact bytes), or its certificate's subject CN or one of its
 * DNS SANs (ASCII case-insensitive, as DNS names are).  An empty list
 * allows every authenticated client. */
#ifndef RW_TLS_ALLOW_H
#define RW_TLS_ALLOW_H

#include <stddef.h>

#include "tls/tls_conn.h"

struct rw_tls_allow {
    char **names;
    unsigned n, cap;
};

/* An empty list (allows everyone). */
void rw_tls_allow_init(struct rw_tls_allow *a);

/* Adds NAME or "*.suffix" (copied).  Returns 0, RAILWIRE_E_INVALID (empty,
 * longer than 255 bytes, a '*' anywhere but a leading "*.", or "*." with
 * nothing after; logged), RAILWIRE_E_NOMEM. */
int rw_tls_allow_add(struct rw_tls_allow *a, const char *name);

/* Returns 1 when `name` (one CN, SAN or identity) matches `entry`. */
int rw_tls_allow_name_matches(const char *entry, const char *name, int case_fold);

/* Returns 1 when the peer is allowed (always with an empty list), else 0.
 * When allowed by an entry, *why (if not NULL) points at it; else at "". */
int rw_tls_allow_check(const struct rw_tls_allow *a, const struct rw_tls_peer *p,
                       const char **why);

/* Writes the peer's identity for a log line ("psk:ID" or "cn:NAME
 * dns:A,B"), cut to cap.  Returns buf. */
char *rw_tls_peer_describe(const struct rw_tls_peer *p, char *buf, size_t cap);

/* Frees the names; the list is empty again. */
void rw_tls_allow_clear(struct rw_tls_allow *a);

#endif
