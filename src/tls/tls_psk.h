/* SPDX-License-Identifier: MIT */
/* TLS 1.3 external PSK: the OpenSSL callbacks that offer (client) and look
 * up (server) the keys of a rw_tls_creds.  The context's app data is the
 * creds; the connection's app data is its rw_tls_hs_note (may be NULL). */
#ifndef RW_TLS_PSK_H
#define RW_TLS_PSK_H

#include "tls/tls_creds.h"

/* Installs the client or server callback on creds->ctx. */
void rw_tls_psk_install(struct rw_tls_creds *c);

#endif
