/* SPDX-License-Identifier: MIT */
/* TLS at the edges: the handshake deadline against a silent or truncated
 * peer, a plain client at a TLS listener and a TLS client at a plain one
 * (each side's message), a byte flipped in the record stream, a write to
 * a closed peer (no SIGPIPE), the first-bytes detectors. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "tls_fixture.h"

TestSuite(tls_edge, .init = tls_fx_setup, .fini = tls_fx_teardown, .timeout = 60);

static struct rw_tls_creds *srv_creds(void)
{
    return tls_creds(RW_TLS_SERVER, "server.pem", "server.key", "ca.pem", NULL);
}

static struct rw_tls_creds *cli_creds(void)
{
    return tls_creds(RW_TLS_CLIENT, "client.pem", "client.key", "ca.pem", NULL);
}

Test(tls_edge, server_deadline_with_silent_client)
{
    struct rw_tls_creds *sc = srv_creds();
    struct rw_tls_conn *s;
    int cfd, sfd;

    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(rw_tls_conn_new(sc, sfd, NULL, &s), 0);
    cr_assert_eq(rw_tls_conn_handshake(s, rw_now_ms() + 200), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_tls_conn_reason(s), RW_TLS_R_TIMEOUT);
    cr_assert(strstr(rw_tls_conn_error(s), "TLS") && strstr(rw_tls_conn_error(s), "in time"));
    rw_tls_conn_free(s);
    rw_tls_creds_unref(sc);
    close(cfd);
    close(sfd);
}

Test(tls_edge, server_deadline_with_truncated_client_hello)
{
    struct rw_tls_creds *sc = srv_creds();
    struct rw_tls_conn *s;
    static const unsigned char part[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
    int cfd, sfd;

    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(send(cfd, part, sizeof(part), 0), (ssize_t)sizeof(part));
    cr_assert_eq(rw_tls_conn_new(sc, sfd, NULL, &s), 0);
    cr_assert_eq(rw_tls_conn_handshake(s, rw_now_ms() + 200), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_tls_conn_reason(s), RW_TLS_R_TIMEOUT);
    rw_tls_conn_free(s);
    /* The same, then the client goes away: closed, not a hang. */
    close(cfd);
    close(sfd);
    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(send(cfd, part, sizeof(part), 0), (ssize_t)sizeof(part));
    close(cfd);
    cr_assert_eq(rw_tls_conn_new(sc, sfd, NULL, &s), 0);
    cr_assert_eq(rw_tls_conn_handshake(s, rw_now_ms() + 5000), RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(s), RW_TLS_R_CLOSED, "%s", rw_tls_conn_error(s));
    rw_tls_conn_free(s);
    rw_tls_creds_unref(sc);
    close(sfd);
}

Test(tls_edge, client_deadline_with_silent_server)
{
    struct rw_tls_creds *cc = cli_creds();
    struct rw_tls_conn *c;
    int cfd, sfd;

    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(rw_tls_conn_new(cc, cfd, "server.test", &c), 0);
    cr_assert_eq(rw_tls_conn_handshake(c, rw_now_ms() + 200), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_tls_conn_reason(c), RW_TLS_R_TIMEOUT);
    cr_assert(strstr(rw_tls_conn_error(c), "TLS listener"), "%s", rw_tls_conn_error(c));
    rw_tls_conn_free(c);
    rw_tls_creds_unref(cc);
    close(cfd);
    close(sfd);
}

Test(tls_edge, plain_client_at_tls_listener)
{
    struct rw_tls_creds *sc = srv_creds();
    struct rw_tls_conn *s;
    unsigned char hello[8] = {0x01, 0x00, 0x00, 0x00, 0x02, 0, 0, 0}, back[16];
    int cfd, sfd;
    ssize_t k;

    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(send(cfd, hello, sizeof(hello), 0), (ssize_t)sizeof(hello));
    cr_assert_eq(rw_tls_conn_new(sc, sfd, NULL, &s), 0);
    cr_assert_eq(rw_tls_conn_handshake(s, rw_now_ms() + 5000), RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(s), RW_TLS_R_NOT_TLS);
    cr_assert(strstr(rw_tls_conn_error(s), "not speaking TLS") &&
              strstr(rw_tls_conn_error(s), "01 00"), "%s", rw_tls_conn_error(s));
    /* The plain client gets a TLS alert record it can recognise. */
    k = recv(cfd, back, sizeof(back), 0);
    cr_assert_geq(k, 2);
    cr_assert_eq(rw_tls_sniff_record(back, (size_t)k), RW_TLS_SNIFF_TLS);
    rw_tls_conn_free(s);
    rw_tls_creds_unref(sc);
    close(cfd);
    close(sfd);
}

Test(tls_edge, tls_client_at_plain_listener)
{
    struct rw_tls_creds *cc = cli_creds();
    struct rw_tls_conn *c;
    unsigned char first[16];
    int cfd, sfd, rc;
    ssize_t k;

    /* The plain side sees a ClientHello... */
    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(rw_tls_conn_new(cc, cfd, "server.test", &c), 0);
    cr_assert_eq(rw_tls_conn_handshake_step(c), RW_TLS_WANT_READ);
    k = recv(sfd, first, sizeof(first), 0);
    cr_assert_geq(k, 2);
    cr_assert_eq(rw_tls_sniff_client_hello(first, 1), RW_TLS_SNIFF_MORE);
    cr_assert_eq(rw_tls_sniff_client_hello(first, (size_t)k), RW_TLS_SNIFF_TLS);
    cr_assert(strstr(RW_TLS_MSG_TLS_AT_PLAIN, "listener is plain"));
    /* ... and answers plain bytes: the client says the peer is not TLS. */
    cr_assert_eq(send(sfd, "RAILWIRE-PLAIN-REPLY", 20, 0), 20);
    rc = rw_tls_conn_handshake(c, rw_now_ms() + 5000);
    cr_assert_eq(rc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(c), RW_TLS_R_NOT_TLS, "%s", rw_tls_conn_error(c));
    cr_assert(strstr(rw_tls_conn_error(c), "plain listener"), "%s", rw_tls_conn_error(c));
    rw_tls_conn_free(c);
    close(cfd);
    close(sfd);
    /* A plain listener that just closes: the client says so, and why. */
    tls_tcp_pair(&cfd, &sfd);
    cr_assert_eq(rw_tls_conn_new(cc, cfd, "server.test", &c), 0);
    close(sfd);
    rc = rw_tls_conn_handshake(c, rw_now_ms() + 5000);
    cr_assert(rc == RAILWIRE_E_TLS || rc == RAILWIRE_E_IO, "rc %d", rc);
    cr_assert(strstr(rw_tls_conn_error(c), "plain (non-TLS) listener") ||
              rw_tls_conn_reason(c) == RW_TLS_R_IO, "%s", rw_tls_conn_error(c));
    rw_tls_conn_free(c);
    rw_tls_creds_unref(cc);
    close(cfd);
}

Test(tls_edge, sniffers)
{
    static const unsigned char hello[] = {0x16, 0x03, 0x01}, alert[] = {0x15, 0x03, 0x03},
                               plain[] = {0x52, 0x57}, hs_bad[] = {0x16, 0x02};

    cr_assert_eq(rw_tls_sniff_client_hello(hello, 0), RW_TLS_SNIFF_MORE);
    cr_assert_eq(rw_tls_sniff_client_hello(hello, 1), RW_TLS_SNIFF_MORE);
    cr_assert_eq(rw_tls_sniff_client_hello(hello, 3), RW_TLS_SNIFF_TLS);
    cr_assert_eq(rw_tls_sniff_client_hello(alert, 3), RW_TLS_SNIFF_NOT_TLS);
    cr_assert_eq(rw_tls_sniff_client_hello(plain, 1), RW_TLS_SNIFF_NOT_TLS);
    cr_assert_eq(rw_tls_sniff_client_hello(hs_bad, 2), RW_TLS_SNIFF_NOT_TLS);
    cr_assert_eq(rw_tls_sniff_record(alert, 3), RW_TLS_SNIFF_TLS);
    cr_assert_eq(rw_tls_sniff_record(hello, 2), RW_TLS_SNIFF_TLS);
    cr_assert_eq(rw_tls_sniff_record(plain, 2), RW_TLS_SNIFF_NOT_TLS);
    cr_assert_eq(rw_tls_sniff_record(alert, 1), RW_TLS_SNIFF_MORE);
}

Test(tls_edge, flipped_byte_is_a_bad_record)
{
    struct tls_pair p;
    char buf[4096];
    int rc;

    struct rw_tls_creds *cc = cli_creds(), *sc = srv_creds();

    tls_pair_open(&p, cc, sc, "server.test", 1);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    tls_pair_handshake(&p, 5000);
    cr_assert_eq(p.crc, 0, "%s", rw_tls_conn_error(p.cli));
    cr_assert_eq(p.src, 0, "%s", rw_tls_conn_error(p.srv));
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    /* Flip a byte inside the next record's ciphertext. */
    p.flip_at = (long)p.relayed + 20;
    memset(buf, 'x', sizeof(buf));
    cr_assert_eq(rw_tls_write(p.cli, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    rc = 0;
    for (int i = 0; i < 2000 && rc >= 0; i++) {
        tls_pair_relay(&p);
        ssize_t r = rw_tls_read(p.srv, buf, sizeof(buf));
        cr_assert(r <= 0, "a corrupted record must not deliver bytes");
        if (r != RW_TLS_WANT_READ)
            rc = (int)r;
        usleep(1000);
    }
    cr_assert_eq(rc, RAILWIRE_E_TLS);
    cr_assert_eq(rw_tls_conn_reason(p.srv), RW_TLS_R_BAD_RECORD, "%s: %s",
                 rw_tls_reason_name(rw_tls_conn_reason(p.srv)), rw_tls_conn_error(p.srv));
    cr_assert(strstr(rw_tls_conn_error(p.srv), "altered"));
    tls_pair_close(&p);
}

Test(tls_edge, write_to_closed_peer_raises_no_sigpipe)
{
    struct tls_pair p;
    static char big[1 << 20];
    int rc = 0;

    struct rw_tls_creds *cc = cli_creds(), *sc = srv_creds();

    signal(SIGPIPE, SIG_DFL);
    tls_pair_open(&p, cc, sc, "server.test", 0);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    tls_pair_handshake(&p, 5000);
    cr_assert_eq(p.crc, 0);
    cr_assert_eq(p.src, 0);
    rw_tls_conn_free(p.srv);
    p.srv = NULL;
    close(p.sfd);
    p.sfd = -1;
    for (int i = 0; i < 64 && rc == 0; i++)
        rc = rw_tls_write_full(p.cli, big, sizeof(big), rw_now_ms() + 5000);
    cr_assert(rc == RAILWIRE_E_IO || rc == RAILWIRE_E_TLS, "rc %d", rc);
    tls_pair_close(&p);
}

/* A railwire thread that holds SIGPIPE blocked (rw_tls_thread_hold_sigpipe,
 * the event loops) skips the per-call guard: writing to a closed peer is
 * still an error, never a signal, and no SIGPIPE is left pending. */
Test(tls_edge, held_thread_write_to_closed_peer_leaves_no_sigpipe)
{
    struct tls_pair p;
    static char big[1 << 20];
    sigset_t pending;
    int rc = 0;

    struct rw_tls_creds *cc = cli_creds(), *sc = srv_creds();

    signal(SIGPIPE, SIG_DFL);
    rw_tls_thread_hold_sigpipe();
    tls_pair_open(&p, cc, sc, "server.test", 0);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    tls_pair_handshake(&p, 5000);
    cr_assert_eq(p.crc, 0);
    cr_assert_eq(p.src, 0);
    rw_tls_conn_free(p.srv);
    p.srv = NULL;
    close(p.sfd);
    p.sfd = -1;
    for (int i = 0; i < 64 && rc == 0; i++)
        rc = rw_tls_write_full(p.cli, big, sizeof(big), rw_now_ms() + 5000);
    cr_assert(rc == RAILWIRE_E_IO || rc == RAILWIRE_E_TLS, "rc %d", rc);
    cr_assert_eq(sigpending(&pending), 0);
    cr_assert(!sigismember(&pending, SIGPIPE), "a SIGPIPE was left pending");
    tls_pair_close(&p);
}
