/* SPDX-License-Identifier: MIT */
/* TLS connections over loopback: certificate and PSK handshakes with the
 * peer's identity on both sides, each bad input with its own reason and a
 * message that says "TLS" and what to check, the handshake deadline,
 * plain/TLS mismatches both ways, a flipped byte in the record stream. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "tls_fixture.h"

TestSuite(tls_conn, .init = tls_fx_setup, .fini = tls_fx_teardown, .timeout = 60);

static struct rw_tls_creds *server_certs(const char *name)
{
    char cert[64], key[64];

    snprintf(cert, sizeof(cert), "%s.pem", name);
    snprintf(key, sizeof(key), "%s.key", name);
    return tls_creds(RW_TLS_SERVER, cert, key, "ca.pem", NULL);
}

static struct rw_tls_creds *client_certs(const char *name)
{
    char cert[64], key[64];

    snprintf(cert, sizeof(cert), "%s.pem", name);
    snprintf(key, sizeof(key), "%s.key", name);
    return tls_creds(RW_TLS_CLIENT, cert, key, "ca.pem", NULL);
}

/* Runs one handshake + ping; returns the pair for the checks (closed by
 * the caller). */
static void run(struct tls_pair *p, struct rw_tls_creds *cc, struct rw_tls_creds *sc,
                const char *host)
{
    tls_pair_open(p, cc, sc, host, 0);
    tls_pair_handshake(p, 5000);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
}

static int has_name(const struct rw_tls_peer *peer, const char *name)
{
    for (unsigned i = 0; i < peer->n_dns; i++)
        if (strcmp(peer->dns[i], name) == 0)
            return 1;
    return 0;
}

Test(tls_conn, certificates_both_ways)
{
    struct tls_pair p;
    const struct rw_tls_peer *sp, *cp;

    run(&p, client_certs("client"), server_certs("server"), "server.test");
    cr_assert_eq(p.crc, 0, "client: %s", rw_tls_conn_error(p.cli));
    cr_assert_eq(p.src, 0, "server: %s", rw_tls_conn_error(p.srv));
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    sp = rw_tls_conn_peer(p.srv); /* the client, as the server sees it */
    cr_assert_eq(sp->psk, 0);
    cr_assert_str_eq(sp->cn, "client-a.fleet.test");
    cr_assert(has_name(sp, "client-a.fleet.test") && has_name(sp, "alias.other.test"));
    cp = rw_tls_conn_peer(p.cli);
    cr_assert_str_eq(cp->cn, "server.test");
    cr_assert(has_name(cp, "localhost"));
    cr_assert_str_eq(rw_tls_conn_cipher(p.cli), "TLS_AES_128_GCM_SHA256");
    cr_assert_str_eq(rw_tls_conn_cipher(p.srv), "TLS_AES_128_GCM_SHA256");
    const char *m = rw_tls_conn_mode(p.cli);
    cr_assert(strcmp(m, "user") == 0 || strncmp(m, "kernel", 6) == 0, "mode %s", m);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_NONE);
    tls_pair_close(&p);
}

Test(tls_conn, names_ip_and_override)
{
    struct tls_pair p;
    struct rw_tls_creds *cc;
    railwire_tls_opts o;

    run(&p, client_certs("client"), server_certs("server"), "127.0.0.1");
    cr_assert_eq(p.crc, 0, "by IP SAN: %s", rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
    run(&p, client_certs("client"), server_certs("server"), "localhost");
    cr_assert_eq(p.crc, 0, "by DNS SAN: %s", rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
    /* server_name wins over the host connected to. */
    o = tls_opts("client.pem", "client.key", "ca.pem", NULL);
    o.server_name = "server.test";
    cr_assert_eq(rw_tls_creds_new(&o, RW_TLS_CLIENT, &cc), 0);
    run(&p, cc, server_certs("server"), "10.9.9.9");
    cr_assert_eq(p.crc, 0, "server_name: %s", rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
}

Test(tls_conn, name_mismatch)
{
    struct tls_pair p;

    run(&p, client_certs("client"), server_certs("server"), "wrong.test");
    cr_assert_eq(p.crc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_NAME_MISMATCH);
    cr_assert(strstr(rw_tls_conn_error(p.cli), "TLS") &&
              strstr(rw_tls_conn_error(p.cli), "wrong.test") &&
              strstr(rw_tls_conn_error(p.cli), "--tls-server-name"),
              "%s", rw_tls_conn_error(p.cli));
    cr_assert_eq(p.src, RAILWIRE_E_TLS, "the server fails too");
    tls_pair_close(&p);
}

static void server_cert_case(const char *name, enum rw_tls_reason cr, const char *words)
{
    struct tls_pair p;

    run(&p, client_certs("client"), server_certs(name), "server.test");
    cr_assert_eq(p.crc, RAILWIRE_E_TLS, "%s: client rc %d", name, p.crc);
    cr_assert_eq(rw_tls_conn_reason(p.cli), cr, "%s: client reason %s: %s", name,
                 rw_tls_reason_name(rw_tls_conn_reason(p.cli)), rw_tls_conn_error(p.cli));
    cr_assert(strstr(rw_tls_conn_error(p.cli), "TLS") &&
              strstr(rw_tls_conn_error(p.cli), words), "%s", rw_tls_conn_error(p.cli));
    /* The server learns it from the client's alert, about its own cert. */
    cr_assert_eq(p.src, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.srv), cr, "%s: server reason %s: %s", name,
                 rw_tls_reason_name(rw_tls_conn_reason(p.srv)), rw_tls_conn_error(p.srv));
    cr_assert(strstr(rw_tls_conn_error(p.srv), "TLS"));
    tls_pair_close(&p);
}

Test(tls_conn, server_cert_expired)
{
    server_cert_case("expired", RW_TLS_R_CERT_EXPIRED, "expired");
}

Test(tls_conn, server_cert_not_yet_valid)
{
    server_cert_case("future", RW_TLS_R_CERT_NOT_YET_VALID, "not valid yet");
}

Test(tls_conn, server_cert_unknown_ca)
{
    server_cert_case("stranger", RW_TLS_R_UNKNOWN_CA, "CA");
}

static void client_cert_case(const char *name, enum rw_tls_reason r, const char *words)
{
    struct tls_pair p;
    int rc;

    run(&p, client_certs(name), server_certs("server"), "server.test");
    cr_assert_eq(p.src, RAILWIRE_E_TLS, "%s: server rc %d", name, p.src);
    cr_assert_eq(rw_tls_conn_reason(p.srv), r, "%s: server reason %s: %s", name,
                 rw_tls_reason_name(rw_tls_conn_reason(p.srv)), rw_tls_conn_error(p.srv));
    cr_assert(strstr(rw_tls_conn_error(p.srv), "TLS") &&
              strstr(rw_tls_conn_error(p.srv), words), "%s", rw_tls_conn_error(p.srv));
    /* TLS 1.3: the client finished first; it learns at its first read. */
    rc = p.crc == 0 ? tls_pair_ping(&p, 5000) : p.crc;
    cr_assert_eq(rc, RAILWIRE_E_TLS, "%s: client rc %d", name, rc);
    cr_assert_eq(rw_tls_conn_reason(p.cli), r, "%s: client reason %s: %s", name,
                 rw_tls_reason_name(rw_tls_conn_reason(p.cli)), rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
}

Test(tls_conn, client_cert_expired)
{
    client_cert_case("client-expired", RW_TLS_R_CERT_EXPIRED, "expired");
}

Test(tls_conn, client_cert_not_yet_valid)
{
    client_cert_case("client-future", RW_TLS_R_CERT_NOT_YET_VALID, "not valid yet");
}

Test(tls_conn, client_cert_unknown_ca)
{
    client_cert_case("client-stranger", RW_TLS_R_UNKNOWN_CA, "CA");
}

Test(tls_conn, client_without_certificate)
{
    struct tls_pair p;
    int rc;

    run(&p, tls_creds(RW_TLS_CLIENT, NULL, NULL, "ca.pem", NULL), server_certs("server"),
        "server.test");
    cr_assert_eq(p.src, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.srv), RW_TLS_R_NO_PEER_CERT, "%s",
                 rw_tls_conn_error(p.srv));
    cr_assert(strstr(rw_tls_conn_error(p.srv), "sent no certificate"));
    rc = p.crc == 0 ? tls_pair_ping(&p, 5000) : p.crc;
    cr_assert_eq(rc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_NO_PEER_CERT, "%s",
                 rw_tls_conn_error(p.cli));
    cr_assert(strstr(rw_tls_conn_error(p.cli), "--tls-cert"));
    tls_pair_close(&p);
}

Test(tls_conn, psk_first_line_and_named_identity)
{
    struct tls_pair p;
    struct rw_tls_creds *cc;
    railwire_tls_opts o;

    run(&p, tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt"),
        tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"), NULL);
    cr_assert_eq(p.crc, 0, "%s", rw_tls_conn_error(p.cli));
    cr_assert_eq(p.src, 0, "%s", rw_tls_conn_error(p.srv));
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    cr_assert_eq(rw_tls_conn_peer(p.srv)->psk, 1);
    cr_assert_str_eq(rw_tls_conn_peer(p.srv)->psk_identity, "alpha");
    cr_assert_str_eq(rw_tls_conn_peer(p.cli)->psk_identity, "alpha");
    tls_pair_close(&p);

    o = tls_opts(NULL, NULL, NULL, "psk.txt");
    o.psk_identity = "beta";
    cr_assert_eq(rw_tls_creds_new(&o, RW_TLS_CLIENT, &cc), 0);
    run(&p, cc, tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"), "ignored.test");
    cr_assert_eq(p.crc, 0, "%s", rw_tls_conn_error(p.cli));
    cr_assert_eq(p.src, 0, "%s", rw_tls_conn_error(p.srv));
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    cr_assert_str_eq(rw_tls_conn_peer(p.srv)->psk_identity, "beta");
    tls_pair_close(&p);
}

Test(tls_conn, psk_and_certificates_on_one_server)
{
    struct tls_pair p;

    run(&p, tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt"),
        tls_creds(RW_TLS_SERVER, "server.pem", "server.key", "ca.pem", "psk.txt"), NULL);
    cr_assert_eq(p.crc, 0, "%s / server: %s", rw_tls_conn_error(p.cli), rw_tls_conn_error(p.srv));
    cr_assert_eq(p.src, 0, "%s", rw_tls_conn_error(p.srv));
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    cr_assert_str_eq(rw_tls_conn_peer(p.srv)->psk_identity, "alpha");
    tls_pair_close(&p);
    run(&p, client_certs("client"),
        tls_creds(RW_TLS_SERVER, "server.pem", "server.key", "ca.pem", "psk.txt"),
        "server.test");
    cr_assert_eq(p.crc, 0, "%s", rw_tls_conn_error(p.cli));
    cr_assert_eq(p.src, 0, "%s", rw_tls_conn_error(p.srv));
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    cr_assert_str_eq(rw_tls_conn_peer(p.srv)->cn, "client-a.fleet.test");
    tls_pair_close(&p);
}

Test(tls_conn, psk_wrong_key)
{
    struct tls_pair p;
    int rc;

    run(&p, tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk-wrong.txt"),
        tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"), NULL);
    cr_assert_eq(p.src, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.srv), RW_TLS_R_BAD_PSK, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.srv)), rw_tls_conn_error(p.srv));
    cr_assert(strstr(rw_tls_conn_error(p.srv), "alpha"), "%s", rw_tls_conn_error(p.srv));
    rc = p.crc == 0 ? tls_pair_ping(&p, 5000) : p.crc;
    cr_assert_eq(rc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_BAD_PSK, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.cli)), rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
}

Test(tls_conn, psk_unknown_identity)
{
    struct tls_pair p;
    int rc;

    run(&p, tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk-gamma.txt"),
        tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"), NULL);
    cr_assert_eq(p.src, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.srv), RW_TLS_R_UNKNOWN_PSK_IDENTITY, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.srv)), rw_tls_conn_error(p.srv));
    cr_assert(strstr(rw_tls_conn_error(p.srv), "gamma"), "%s", rw_tls_conn_error(p.srv));
    rc = p.crc == 0 ? tls_pair_ping(&p, 5000) : p.crc;
    cr_assert_eq(rc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_UNKNOWN_PSK_IDENTITY, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.cli)), rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
}

Test(tls_conn, psk_client_at_certificate_server)
{
    struct tls_pair p;

    run(&p, tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt"), server_certs("server"),
        NULL);
    cr_assert_eq(p.crc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_NO_PSK, "%s", rw_tls_conn_error(p.cli));
    cr_assert(strstr(rw_tls_conn_error(p.cli), "--tls-psk"));
    tls_pair_close(&p);
}

Test(tls_conn, certificate_client_at_psk_server)
{
    struct tls_pair p;

    run(&p, client_certs("client"), tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"),
        "server.test");
    cr_assert_eq(p.src, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.srv), RW_TLS_R_NO_PSK, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.srv)), rw_tls_conn_error(p.srv));
    cr_assert_eq(p.crc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.cli), RW_TLS_R_NO_PSK, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.cli)), rw_tls_conn_error(p.cli));
    tls_pair_close(&p);
}
