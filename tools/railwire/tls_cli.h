/* SPDX-License-Identifier: MIT */
/* The TLS options shared by `serve` and `bench` (--tls-cert, --tls-key,
 * --tls-ca, --tls-psk, --tls-psk-identity, --tls-server-name), their
 * getopt table entries and the check made before anything starts: files
 * that cannot be used (a key that does not match its certificate, a PSK
 * file readable by group or others) are a usage error (exit 2). */
#ifndef RW_TOOL_TLS_CLI_H
#define RW_TOOL_TLS_CLI_H

#include <railwire/tls.h>

enum { TLS_O_CERT = 1000, TLS_O_KEY, TLS_O_CA, TLS_O_PSK, TLS_O_PSK_IDENTITY,
       TLS_O_SERVER_NAME };

struct tls_cli {
    railwire_tls_opts o;
    int any; /* some --tls-* option was given */
};

/* Resets *t (no TLS). */
void tls_cli_init(struct tls_cli *t);

/* Takes one getopt result: returns 1 when `opt` was a TLS option (taken),
 * 0 when it is not one. */
int tls_cli_take(struct tls_cli *t, int opt, const char *arg);

/* Checks the options for `server` (1) or a client (0) and reads every file
 * once.  Returns 0 (usable, or no TLS at all) or 2 after printing a usage
 * error that names the file and what to fix. */
int tls_cli_check(struct tls_cli *t, int server);

/* The options to give the library: NULL when no TLS option was given. */
const railwire_tls_opts *tls_cli_opts(const struct tls_cli *t);

#endif
