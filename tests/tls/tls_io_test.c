/* SPDX-License-Identifier: MIT */
/* Bytes through established TLS connections: blocking-style handshakes on
 * two threads, an echo of 8 MiB with the client's sender and receiver on
 * two threads sharing one connection (vectored writes, small and large
 * pieces), and the non-blocking calls an event loop makes: would-block
 * reported distinctly, a write retried with the same bytes after it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "tls_fixture.h"

TestSuite(tls_io, .init = tls_fx_setup, .fini = tls_fx_teardown, .timeout = 120);

#define TOTAL (8u << 20)

struct side {
    struct rw_tls_conn *c;
    int rc;
    uint8_t *buf;
};

static void *hs_thread(void *arg)
{
    struct side *s = arg;

    s->rc = rw_tls_conn_handshake(s->c, rw_now_ms() + 10000);
    return NULL;
}

static void open_blocking(struct tls_pair *p, int psk)
{
    struct rw_tls_creds *cc, *sc;
    struct side a, b;
    pthread_t t;

    if (psk) {
        cc = tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt");
        sc = tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt");
    } else {
        cc = tls_creds(RW_TLS_CLIENT, "client.pem", "client.key", "ca.pem", NULL);
        sc = tls_creds(RW_TLS_SERVER, "server.pem", "server.key", "ca.pem", NULL);
    }
    tls_pair_open(p, cc, sc, "127.0.0.1", 0);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    a.c = p->cli;
    b.c = p->srv;
    pthread_create(&t, NULL, hs_thread, &b);
    hs_thread(&a);
    pthread_join(t, NULL);
    cr_assert_eq(a.rc, 0, "%s", rw_tls_conn_error(p->cli));
    cr_assert_eq(b.rc, 0, "%s", rw_tls_conn_error(p->srv));
}

static void *echo(void *arg)
{
    struct side *s = arg;
    size_t done = 0;

    while (done < TOTAL && s->rc == 0) {
        size_t n = TOTAL - done < 300000 ? TOTAL - done : 300000;
        s->rc = rw_tls_read_full(s->c, s->buf, n, rw_now_ms() + 20000);
        if (s->rc == 0)
            s->rc = rw_tls_write_full(s->c, s->buf, n, rw_now_ms() + 20000);
        done += n;
    }
    return NULL;
}

static void *sender(void *arg)
{
    struct side *s = arg;
    size_t off = 0;
    unsigned k = 0;

    while (off < TOTAL && s->rc == 0) {
        /* A 16-byte "header" from the payload, then a piece of varying size. */
        size_t piece = (k++ % 3 == 0) ? 100 : (k % 3 == 1) ? 70000 : 1u << 20;
        if (piece + 16 > TOTAL - off)
            piece = TOTAL - off - 16 > 0 ? TOTAL - off - 16 : 0;
        struct iovec iov[2] = {{s->buf + off, 16}, {s->buf + off + 16, piece}};
        int cnt = piece ? 2 : 1;
        if (TOTAL - off < 16) {
            iov[0].iov_len = TOTAL - off;
            cnt = 1;
        }
        s->rc = rw_tls_writev_full(s->c, iov, cnt, rw_now_ms() + 20000);
        off += (TOTAL - off < 16) ? TOTAL - off : 16 + piece;
    }
    return NULL;
}

static void echo_run(int psk)
{
    struct tls_pair p;
    struct side srv = {0}, snd = {0};
    pthread_t ts, tc;
    uint8_t *out = malloc(TOTAL), *in = malloc(TOTAL);
    int rc;

    cr_assert(out && in);
    for (size_t i = 0; i < TOTAL; i++)
        out[i] = (uint8_t)(i * 2654435761u >> 13);
    open_blocking(&p, psk);
    srv.c = p.srv;
    srv.buf = malloc(300000);
    snd.c = p.cli;
    snd.buf = out;
    pthread_create(&ts, NULL, echo, &srv);
    pthread_create(&tc, NULL, sender, &snd);
    rc = rw_tls_read_full(p.cli, in, TOTAL, rw_now_ms() + 60000);
    pthread_join(tc, NULL);
    pthread_join(ts, NULL);
    cr_assert_eq(snd.rc, 0, "sender %d: %s", snd.rc, rw_tls_conn_error(p.cli));
    cr_assert_eq(srv.rc, 0, "echo %d: %s", srv.rc, rw_tls_conn_error(p.srv));
    cr_assert_eq(rc, 0, "receiver %d: %s", rc, rw_tls_conn_error(p.cli));
    cr_assert_eq(memcmp(in, out, TOTAL), 0, "the echo returns every byte in order");
    /* Clean end: close_notify reads as end of stream. */
    rw_tls_conn_shutdown(p.srv);
    char b;
    cr_assert_eq(rw_tls_read_full(p.cli, &b, 1, rw_now_ms() + 5000), RAILWIRE_E_CLOSED);
    tls_pair_close(&p);
    free(srv.buf);
    free(out);
    free(in);
}

Test(tls_io, echo_8mib_two_threads_certificates)
{
    echo_run(0);
}

Test(tls_io, echo_8mib_two_threads_psk)
{
    echo_run(1);
}

Test(tls_io, nonblocking_would_block_and_retry)
{
    struct tls_pair p;
    static uint8_t big[1 << 20], sink[1 << 16];
    struct iovec iov[3];
    size_t sent = 0, got = 0;
    ssize_t r;
    int blocked = 0;

    open_blocking(&p, 0);
    /* Nothing to read: would-block, distinct from end and errors. */
    cr_assert_eq(rw_tls_read(p.srv, sink, sizeof(sink)), RW_TLS_WANT_READ);
    cr_assert_eq(rw_tls_conn_pending(p.srv), 0);
    /* Small pieces coalesce into one write that takes them all. */
    iov[0] = (struct iovec){"ab", 2};
    iov[1] = (struct iovec){"cde", 3};
    iov[2] = (struct iovec){"f", 1};
    cr_assert_eq(rw_tls_writev(p.cli, iov, 3), 6);
    cr_assert_eq(rw_tls_read_full(p.srv, sink, 6, rw_now_ms() + 5000), 0);
    cr_assert_eq(memcmp(sink, "abcdef", 6), 0);
    /* Fill the socket until the write would block. */
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)i;
    for (int i = 0; i < 10000 && !blocked; i++) {
        r = rw_tls_write(p.cli, big + (sent % sizeof(big)), sizeof(big) - (sent % sizeof(big)));
        if (r == RW_TLS_WANT_WRITE)
            blocked = 1;
        else {
            cr_assert_gt(r, 0);
            sent += (size_t)r;
        }
    }
    cr_assert(blocked, "the write never blocked");
    /* Drain on the server; the retry of the same bytes then goes through. */
    int retried = 0;
    for (int i = 0; i < 100000 && (!retried || got < sent); i++) {
        r = rw_tls_read(p.srv, sink, sizeof(sink));
        if (r > 0) {
            for (ssize_t k = 0; k < r; k++)
                cr_assert_eq(sink[k], (uint8_t)((got + (size_t)k) % sizeof(big)));
            got += (size_t)r;
        } else {
            cr_assert_eq(r, RW_TLS_WANT_READ);
            if (retried)
                usleep(100);
        }
        if (!retried) {
            r = rw_tls_write(p.cli, big + (sent % sizeof(big)),
                             sizeof(big) - (sent % sizeof(big)));
            if (r > 0) {
                sent += (size_t)r;
                retried = 1;
            } else {
                cr_assert_eq(r, RW_TLS_WANT_WRITE);
            }
        }
    }
    cr_assert(retried, "the retried write never went through");
    cr_assert_eq(got, sent, "every byte written arrived, in order");
    tls_pair_close(&p);
}

/* Edge-triggered epoll, as the tcp transport's event loops use it: the
 * handshakes are stepped on edges only, and a reader with a small buffer
 * that reads until RW_TLS_WANT_READ on each edge gets every byte, although
 * most of them wait inside OpenSSL (no new edge announces them). */
static int et_wait(int ep, int ms)
{
    struct epoll_event ev[4];

    return epoll_wait(ep, ev, 4, ms);
}

static int hs_busy(int rc)
{
    return rc == RW_TLS_WANT_READ || rc == RW_TLS_WANT_WRITE;
}

static void et_loop(int read_ahead)
{
    struct rw_tls_creds *cc = tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt");
    struct rw_tls_creds *sc = tls_creds(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt");
    struct tls_pair p;
    int ep = epoll_create1(0), crc = RW_TLS_WANT_WRITE, src = RW_TLS_WANT_READ;
    static uint8_t out[3 * 16384 + 777], in[sizeof(out)];
    size_t got = 0;
    int64_t end = rw_now_ms() + 10000;

    tls_pair_open(&p, cc, sc, NULL, 0);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    struct epoll_event e1 = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.fd = p.cfd};
    struct epoll_event e2 = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.fd = p.sfd};
    cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, p.cfd, &e1), 0);
    cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, p.sfd, &e2), 0);
    /* Step both on every wakeup (an edge for either may concern both). */
    while ((hs_busy(crc) || hs_busy(src)) && rw_now_ms() < end) {
        if (hs_busy(crc))
            crc = rw_tls_conn_handshake_step(p.cli);
        if (hs_busy(src))
            src = rw_tls_conn_handshake_step(p.srv);
        if (hs_busy(crc) || hs_busy(src))
            et_wait(ep, 100);
    }
    cr_assert_eq(crc, 0, "%s", rw_tls_conn_error(p.cli));
    cr_assert_eq(src, 0, "%s", rw_tls_conn_error(p.srv));
    for (size_t i = 0; i < sizeof(out); i++)
        out[i] = (uint8_t)(i * 7 + 3);
    if (read_ahead)
        rw_tls_conn_read_ahead(p.cli);
    cr_assert_eq(rw_tls_write_full(p.srv, out, sizeof(out), rw_now_ms() + 5000), 0);
    if (read_ahead) {
        /* Every record is in the client's socket (loopback): reading the
         * first record whole leaves the next ones read ahead inside
         * OpenSSL, where no edge will announce them. */
        while (got < 16384 && rw_now_ms() < end) {
            ssize_t r = rw_tls_read(p.cli, in + got, 16384 - got);
            if (r == RW_TLS_WANT_READ) {
                et_wait(ep, 100);
                continue;
            }
            cr_assert_gt(r, 0, "read %zd", r);
            got += (size_t)r;
        }
        cr_assert_eq(got, 16384);
        cr_assert(rw_tls_conn_pending(p.cli), "read-ahead left nothing inside OpenSSL");
    }
    /* Drain the edges of the writes above, then read 1000 bytes at a time
     * until would-block after each new edge. */
    while (got < sizeof(out) && rw_now_ms() < end) {
        for (;;) {
            size_t want = sizeof(out) - got < 1000 ? sizeof(out) - got : 1000;
            ssize_t r = rw_tls_read(p.cli, in + got, want);
            if (r == RW_TLS_WANT_READ)
                break;
            cr_assert_gt(r, 0, "read %zd", r);
            got += (size_t)r;
            if (got == sizeof(out))
                break;
        }
        if (got < sizeof(out))
            et_wait(ep, 100);
    }
    cr_assert_eq(got, sizeof(out));
    cr_assert_eq(memcmp(in, out, sizeof(out)), 0);
    close(ep);
    tls_pair_close(&p);
}

Test(tls_io, edge_triggered_event_loop)
{
    et_loop(0);
}

/* The same with read-ahead on (rw_tls_conn_read_ahead, as the tcp rails
 * use it): records read ahead wait inside OpenSSL and reading until
 * would-block still gets every byte. */
Test(tls_io, edge_triggered_event_loop_read_ahead)
{
    et_loop(1);
}

Test(tls_io, recv_some_waits_for_a_byte_or_the_deadline)
{
    struct tls_pair p;
    char buf[64];

    open_blocking(&p, 1);
    cr_assert_eq(rw_tls_recv_some(p.cli, buf, sizeof(buf), rw_now_ms() + 50), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_tls_write_full(p.srv, "hello", 5, rw_now_ms() + 5000), 0);
    cr_assert_eq(rw_tls_recv_some(p.cli, buf, sizeof(buf), rw_now_ms() + 5000), 5);
    cr_assert_eq(memcmp(buf, "hello", 5), 0);
    rw_tls_conn_shutdown(p.srv);
    cr_assert_eq(rw_tls_recv_some(p.cli, buf, sizeof(buf), rw_now_ms() + 5000), 0);
    tls_pair_close(&p);
}
