/* SPDX-License-Identifier: MIT */
/* Runs one loopback TLS handshake through src/tls with the files given,
 * prints what each side saw, and optionally streams SIZE-byte writes from
 * the server to the client for SECONDS through rw_tls_write_full /
 * rw_tls_read_full (to set against bench/tls_ref in the same run).
 *
 *   tls_check --server-cert F --server-key F --ca F --client-cert F --client-key F
 *             [--name NAME] [--stream SECONDS] [-s SIZE]
 *   tls_check --server-psk F --client-psk F [--identity ID] [--stream SECONDS]
 *
 * Prints one JSON object; exits 0 when both handshakes succeeded (and the
 * stream ran), 1 otherwise (the reasons are in the JSON). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "tls/tls_allow.h"
#include "tls/tls_conn.h"

struct side {
    struct rw_tls_conn *c;
    int rc;
    size_t size;
    atomic_int stop;
};

static void *hs(void *arg)
{
    struct side *s = arg;

    s->rc = rw_tls_conn_handshake(s->c, rw_now_ms() + 10000);
    return NULL;
}

static void *pour(void *arg)
{
    struct side *s = arg;
    uint8_t *buf = calloc(1, s->size);

    while (buf && !atomic_load(&s->stop))
        if (rw_tls_write_full(s->c, buf, s->size, rw_now_ms() + 10000))
            break;
    free(buf);
    return NULL;
}

static void pair(int *c, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, buf = 4 << 20;

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        exit(1);
    *c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*c, (struct sockaddr *)&a, sizeof(a)))
        exit(1);
    *s = accept(l, NULL, NULL);
    close(l);
    for (int i = 0; i < 2; i++) {
        int fd = i ? *s : *c;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    }
}

static double stream(struct side *srv, struct side *cli, int cfd, double seconds)
{
    pthread_t t;
    uint8_t *buf = malloc(srv->size);
    uint64_t bytes = 0;
    double t0 = (double)rw_now_ns() / 1e9, dt = 0;

    pthread_create(&t, NULL, pour, srv);
    do {
        if (rw_tls_read_full(cli->c, buf, srv->size, rw_now_ms() + 10000))
            break;
        bytes += srv->size;
        dt = (double)rw_now_ns() / 1e9 - t0;
    } while (dt < seconds);
    atomic_store(&srv->stop, 1);
    shutdown(cfd, SHUT_RDWR); /* the server's pending write fails: it stops */
    pthread_join(t, NULL);
    free(buf);
    return dt > 0 ? (double)bytes / dt / 1e9 : 0;
}

int main(int argc, char **argv)
{
    railwire_tls_opts co, so;
    struct rw_tls_creds *cc = NULL, *sc = NULL;
    struct side cli = {0}, srv = {0};
    const char *name = "127.0.0.1";
    double seconds = 0, gbps = 0;
    char who[600];
    pthread_t t;
    int cfd, sfd;

    railwire_tls_opts_init(&co);
    railwire_tls_opts_init(&so);
    srv.size = 1u << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--server-cert")) so.cert_file = v;
        else if (!strcmp(k, "--server-key")) so.key_file = v;
        else if (!strcmp(k, "--ca")) so.ca_file = co.ca_file = v;
        else if (!strcmp(k, "--client-cert")) co.cert_file = v;
        else if (!strcmp(k, "--client-key")) co.key_file = v;
        else if (!strcmp(k, "--server-psk")) so.psk_file = v;
        else if (!strcmp(k, "--client-psk")) co.psk_file = v;
        else if (!strcmp(k, "--identity")) co.psk_identity = v;
        else if (!strcmp(k, "--name")) name = v;
        else if (!strcmp(k, "--stream")) seconds = atof(v);
        else if (!strcmp(k, "-s")) srv.size = (size_t)atol(v);
        else {
            fprintf(stderr, "tls_check: unknown option %s\n", k);
            return 2;
        }
    }
    if (rw_tls_creds_new(&so, RW_TLS_SERVER, &sc) || rw_tls_creds_new(&co, RW_TLS_CLIENT, &cc))
        return 2;
    pair(&cfd, &sfd);
    if (rw_tls_conn_new(cc, cfd, name, &cli.c) || rw_tls_conn_new(sc, sfd, NULL, &srv.c))
        return 2;
    uint64_t t0 = rw_now_ns();
    pthread_create(&t, NULL, hs, &srv);
    hs(&cli);
    pthread_join(t, NULL);
    double hs_ms = (double)(rw_now_ns() - t0) / 1e6;
    if (cli.rc == 0 && srv.rc == 0 && seconds > 0)
        gbps = stream(&srv, &cli, cfd, seconds);
    rw_tls_peer_describe(rw_tls_conn_peer(srv.c), who, sizeof(who));
    printf("{\"client\": \"%s\", \"server\": \"%s\", \"client_error\": \"%s\", "
           "\"server_error\": \"%s\", \"server_sees\": \"%s\", \"cipher\": \"%s\", "
           "\"mode_server\": \"%s\", \"mode_client\": \"%s\", \"handshake_ms\": %.3f, "
           "\"size\": %zu, \"gbps\": %.6f}\n",
           rw_tls_reason_name(rw_tls_conn_reason(cli.c)),
           rw_tls_reason_name(rw_tls_conn_reason(srv.c)), rw_tls_conn_error(cli.c),
           rw_tls_conn_error(srv.c), who, rw_tls_conn_cipher(cli.c), rw_tls_conn_mode(srv.c),
           rw_tls_conn_mode(cli.c), hs_ms, srv.size, gbps);
    rw_tls_conn_free(cli.c);
    rw_tls_conn_free(srv.c);
    rw_tls_creds_unref(cc);
    rw_tls_creds_unref(sc);
    close(cfd);
    close(sfd);
    return cli.rc == 0 && srv.rc == 0 ? 0 : 1;
}
