/* SPDX-License-Identifier: MIT */
/* TLS 1.3 options for a railset (client) or a server (listener).
 *
 * Two ways to authenticate, chosen by which fields are set:
 *   - mutual certificates: cert_file, key_file and ca_file (PEM).  The client
 *     checks the server's chain against ca_file and its name against
 *     server_name (NULL: the host it connects to); the server requires a
 *     client certificate that chains to its ca_file.
 *   - TLS 1.3 external pre-shared keys: psk_file, one IDENTITY:HEXKEY per
 *     line (keys of 32 to 48 bytes; the file must not be accessible by group
 *     or others).  The server accepts every identity in its file; the client
 *     uses the first line, or the one named by psk_identity.
 * A server may set both (certificate clients and PSK clients are then both
 * admitted); a client uses the PSK when psk_file is set.
 *
 * Every string is borrowed: the library copies what it keeps (the file
 * names, so that a reload reads them again). */
#ifndef RAILWIRE_TLS_H
#define RAILWIRE_TLS_H

#include <stddef.h>
#include <stdint.h>

#include <railwire/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct railwire_tls_opts {
    uint32_t struct_size;     /* sizeof(railwire_tls_opts) as the caller saw it */
    const char *cert_file;    /* PEM certificate (chain) of this side */
    const char *key_file;     /* PEM private key of cert_file */
    const char *ca_file;      /* PEM CA certificate(s) the peer must chain to */
    const char *psk_file;     /* IDENTITY:HEXKEY lines (TLS 1.3 external PSK) */
    const char *psk_identity; /* client: the identity to use; NULL = first line */
    const char *server_name;  /* client: the name the server's certificate must
                               * carry; NULL = the host connected to */
} railwire_tls_opts;

/* Sets every field of the first `size` bytes of *o to its default (all
 * NULL) and o->struct_size to `size`.  Call it through the macro below so
 * that `size` is the caller's sizeof; a caller built against an older,
 * shorter struct gets only the fields it knows.  Does nothing when o is
 * NULL or size is smaller than struct_size itself. */
RAILWIRE_API void railwire_tls_opts_init_sized(railwire_tls_opts *o, size_t size);

#define railwire_tls_opts_init(o) railwire_tls_opts_init_sized((o), sizeof(*(o)))

#ifdef __cplusplus
}
#endif
#endif
