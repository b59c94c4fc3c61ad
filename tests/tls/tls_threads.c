/* SPDX-License-Identifier: MIT */
/* One TLS connection used by a sender thread and a receiver thread at the
 * same time, against a server echoing on a third thread, for
 * ThreadSanitizer (a plain program: Criterion does not start under TSan).
 * Certificates, then PSK; 4 MiB each; checks every byte.
 * usage: tls_threads [MiB]; exits 0 when every echo came back intact. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include "common/time.h"
#include "tls/tls_conn.h"
#include "tls_certs.h"

static size_t total = 4u << 20;

struct side {
    struct rw_tls_conn *c;
    uint8_t *buf;
    int rc;
};

static void *hs(void *arg)
{
    struct side *s = arg;

    s->rc = rw_tls_conn_handshake(s->c, rw_now_ms() + 20000);
    return NULL;
}

static void *echo(void *arg)
{
    struct side *s = arg;

    for (size_t done = 0; done < total && s->rc == 0; done += 65536) {
        size_t n = total - done < 65536 ? total - done : 65536;
        s->rc = rw_tls_read_full(s->c, s->buf, n, rw_now_ms() + 30000);
        if (s->rc == 0)
            s->rc = rw_tls_write_full(s->c, s->buf, n, rw_now_ms() + 30000);
    }
    return NULL;
}

static void *send_all(void *arg)
{
    struct side *s = arg;

    for (size_t off = 0; off < total && s->rc == 0; off += 100000) {
        size_t n = total - off < 100000 ? total - off : 100000;
        struct iovec iov[2] = {{s->buf + off, n / 3}, {s->buf + off + n / 3, n - n / 3}};
        s->rc = rw_tls_writev_full(s->c, iov, 2, rw_now_ms() + 30000);
    }
    return NULL;
}

static int pair(int *c, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        return -1;
    *c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*c, (struct sockaddr *)&a, sizeof(a)))
        return -1;
    *s = accept(l, NULL, NULL);
    close(l);
    return *s < 0 ? -1 : 0;
}

static int run(const char *dir, int psk)
{
    char p[4][512];
    railwire_tls_opts co, so;
    struct rw_tls_creds *cc = NULL, *sc = NULL;
    struct side cli = {0}, srv = {0}, snd = {0};
    pthread_t t1, t2;
    uint8_t *out = malloc(total), *in = malloc(total);
    int cfd, sfd, rc;

    railwire_tls_opts_init(&co);
    railwire_tls_opts_init(&so);
    if (psk) {
        co.psk_file = so.psk_file = tls_path(p[0], sizeof(p[0]), dir, "psk.txt");
    } else {
        co.ca_file = so.ca_file = tls_path(p[0], sizeof(p[0]), dir, "ca.pem");
        co.cert_file = tls_path(p[1], sizeof(p[1]), dir, "client.pem");
        co.key_file = tls_path(p[2], sizeof(p[2]), dir, "client.key");
        so.cert_file = tls_path(p[3], sizeof(p[3]), dir, "server.pem");
        so.key_file = tls_path(p[3] + 256, 256, dir, "server.key");
    }
    if (!out || !in || rw_tls_creds_new(&co, RW_TLS_CLIENT, &cc) ||
        rw_tls_creds_new(&so, RW_TLS_SERVER, &sc) || pair(&cfd, &sfd) ||
        rw_tls_conn_new(cc, cfd, "127.0.0.1", &cli.c) || rw_tls_conn_new(sc, sfd, NULL, &srv.c))
        return -1;
    pthread_create(&t1, NULL, hs, &srv);
    hs(&cli);
    pthread_join(t1, NULL);
    if (cli.rc || srv.rc) {
        fprintf(stderr, "handshake: %s / %s\n", rw_tls_conn_error(cli.c), rw_tls_conn_error(srv.c));
        return -1;
    }
    for (size_t i = 0; i < total; i++)
        out[i] = (uint8_t)(i * 31 + (i >> 11));
    srv.buf = malloc(65536);
    snd.c = cli.c;
    snd.buf = out;
    pthread_create(&t1, NULL, echo, &srv);
    pthread_create(&t2, NULL, send_all, &snd);
    rc = rw_tls_read_full(cli.c, in, total, rw_now_ms() + 60000);
    pthread_join(t2, NULL);
    pthread_join(t1, NULL);
    if (rc || snd.rc || srv.rc || memcmp(in, out, total) != 0) {
        fprintf(stderr, "echo failed: recv %d send %d echo %d: %s / %s\n", rc, snd.rc, srv.rc,
                rw_tls_conn_error(cli.c), rw_tls_conn_error(srv.c));
        rc = -1;
    }
    rw_tls_conn_free(cli.c);
    rw_tls_conn_free(srv.c);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    close(cfd);
    close(sfd);
    free(srv.buf);
    free(out);
    free(in);
    return rc;
}

int main(int argc, char **argv)
{
    char dir[256];
    int rc;

    if (argc > 1)
        total = (size_t)atoi(argv[1]) << 20;
    if (tls_certs_make(dir, sizeof(dir))) {
        fprintf(stderr, "tls_threads: cannot make test certificates\n");
        return 1;
    }
    rc = run(dir, 0) || run(dir, 1);
    tls_certs_remove(dir);
    printf("tls_threads: %s\n", rc ? "FAILED" : "ok");
    return rc ? 1 : 0;
}
