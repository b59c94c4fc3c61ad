/* SPDX-License-Identifier: MIT */
/* Test certificates, made at test time with the OpenSSL API into a fresh
 * temporary directory (P-256 keys, SHA-256 signatures):
 *   ca.pem ca.key            the test CA
 *   other-ca.pem             another CA (for "unknown CA")
 *   server.pem server.key    CN=server.test, SAN DNS:server.test, DNS:localhost,
 *                            IP:127.0.0.1
 *   client.pem client.key    CN=client-a.fleet.test, SAN DNS:client-a.fleet.test,
 *                            DNS:alias.other.test
 *   expired.pem/.key         CN=server.test (and SANs) valid until yesterday
 *   future.pem/.key          CN=server.test (and SANs) valid from tomorrow
 *   stranger.pem/.key        CN=server.test, signed by other-ca
 *   client-expired.pem/.key, client-future.pem/.key, client-stranger.pem/.key
 *                            the same for the client
 *   psk.txt                  mode 0600: "alpha:<32 bytes>", "beta:<48 bytes>"
 *   psk-wrong.txt            mode 0600: "alpha:<other 32 bytes>"
 *   psk-gamma.txt            mode 0600: "gamma:<32 bytes>" (unknown to psk.txt) */
#ifndef RW_TEST_TLS_CERTS_H
#define RW_TEST_TLS_CERTS_H

#include <stddef.h>

/* Makes the directory and every file above.  Returns 0 and the directory
 * in dir (cap >= 64), or -1. */
int tls_certs_make(char *dir, size_t cap);

/* Removes the directory made by tls_certs_make. */
void tls_certs_remove(const char *dir);

/* Writes dir/name into buf.  Returns buf. */
char *tls_path(char *buf, size_t cap, const char *dir, const char *name);

/* Writes `text` to dir/name with `mode`.  Returns 0 or -1. */
int tls_write_file(const char *dir, const char *name, const char *text, unsigned mode);

#endif
