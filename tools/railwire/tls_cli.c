/* SPDX-License-Identifier: MIT */
/* TLS options of the command line (tls_cli.h). */
#include <stdio.h>
#include <string.h>

#include <railwire/error.h>

#include "tls_cli.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_creds.h"
#endif

void tls_cli_init(struct tls_cli *t)
{
    memset(t, 0, sizeof(*t));
    railwire_tls_opts_init(&t->o);
}

int tls_cli_take(struct tls_cli *t, int opt, const char *arg)
{
    switch (opt) {
    case TLS_O_CERT: t->o.cert_file = arg; break;
    case TLS_O_KEY: t->o.key_file = arg; break;
    case TLS_O_CA: t->o.ca_file = arg; break;
    case TLS_O_PSK: t->o.psk_file = arg; break;
    case TLS_O_PSK_IDENTITY: t->o.psk_identity = arg; break;
    case TLS_O_SERVER_NAME: t->o.server_name = arg; break;
    default: return 0;
    }
    t->any = 1;
    return 1;
}

int tls_cli_check(struct tls_cli *t, int server)
{
    if (!t->any)
        return 0;
#if RAILWIRE_HAVE_TLS
    const railwire_tls_opts *o = &t->o;
    int certs = o->cert_file || o->key_file;
    if (certs && (!o->cert_file || !o->key_file || !o->ca_file)) {
        fprintf(stderr, "error: certificates need --tls-cert, --tls-key and --tls-ca together\n");
        return 2;
    }
    if (!certs && !o->psk_file && !(o->ca_file && !server)) {
        fprintf(stderr, "error: TLS needs --tls-cert/--tls-key/--tls-ca or --tls-psk\n");
        return 2;
    }
    if (server && (o->psk_identity || o->server_name)) {
        fprintf(stderr, "error: --tls-psk-identity and --tls-server-name are client options "
                        "(bench); the server accepts every identity in its --tls-psk file\n");
        return 2;
    }
    struct rw_tls_creds *cr = NULL;
    int rc = rw_tls_creds_new(o, server ? RW_TLS_SERVER : RW_TLS_CLIENT, &cr);
    rw_tls_creds_unref(cr);
    if (rc < 0) {
        /* The library logged the file and what to check. */
        fprintf(stderr, "error: the TLS options cannot be used (see the line above: %s)\n",
                railwire_strerror(rc));
        return 2;
    }
    return 0;
#else
    (void)server;
    fprintf(stderr, "error: this railwire was built without TLS (OpenSSL 3 not found: install "
                    "libssl-dev and rebuild)\n");
    return 2;
#endif
}

const railwire_tls_opts *tls_cli_opts(const struct tls_cli *t)
{
    return t->any ? &t->o : NULL;
}
