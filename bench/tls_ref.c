/* SPDX-License-Identifier: MIT */
/* The TLS reference of issue 18: one OpenSSL TLS 1.3 connection over
 * loopback streaming SIZE-byte records (default 1 MiB) from the server to
 * the client (the direction of a READ), with the cipher railwire uses
 * (TLS_AES_128_GCM_SHA256 unless --cipher).  Railwire's encrypted 1-rail
 * 1 MiB READ is compared with it, in the same run.
 *
 * Plain OpenSSL, none of railwire's code: an ephemeral self-signed P-256
 * certificate made in memory, blocking sockets with 4 MiB buffers and
 * TCP_NODELAY, SSL_OP_ENABLE_KTLS unless --no-ktls (kernel TLS engages
 * where the kernel has it).  One thread writes, the other reads.
 * --read-ahead makes the reader read ahead into a 64 KiB buffer, as
 * railwire's rails do (without it: two recvs per record, OpenSSL's default).
 * Prints one JSON object:
 *   {"mode":"tls-stream","cipher":"TLS_AES_128_GCM_SHA256","size":1048576,
 *    "seconds":2.0,"bytes":N,"gbps":X,"ktls_send":false,"ktls_recv":false}
 * ("gbps" is GB/s, 1e9 bytes a second, as in rr_ref.)
 * usage: railwire_tls_ref [-s SIZE] [-D SECONDS] [--cipher NAME] [--no-ktls]
 *                         [--read-ahead] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

struct ref_cfg {
    size_t size;
    double seconds;
    const char *cipher;
    int ktls;
    int read_ahead;
};

struct ref_server {
    SSL *ssl;
    const struct ref_cfg *cfg;
    atomic_int stop;
    int rc;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "tls_ref: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static void tune(int fd)
{
    int one = 1, buf = 4 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

static void tcp_pair(int *c, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        die("listen on loopback");
    *c = socket(AF_INET, SOCK_STREAM, 0);
    tune(*c);
    if (connect(*c, (struct sockaddr *)&a, sizeof(a)))
        die("connect");
    *s = accept(l, NULL, NULL);
    if (*s < 0)
        die("accept");
    tune(*s);
    close(l);
}

/* A self-signed P-256 certificate, in memory. */
static void self_signed(SSL_CTX *ctx)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();

    if (!k || !x)
        die("key");
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"tls-ref", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    if (!X509_sign(x, k, EVP_sha256()) || SSL_CTX_use_certificate(ctx, x) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, k) != 1)
        die("certificate");
    X509_free(x);
    EVP_PKEY_free(k);
}

static SSL_CTX *ctx_new(int server, const struct ref_cfg *cfg)
{
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());

    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_ciphersuites(ctx, cfg->cipher))
        die("TLS 1.3 context (is the cipher name right?)");
    if (cfg->ktls)
        SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
    if (server) {
        self_signed(ctx);
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    return ctx;
}

static void *serve(void *arg)
{
    struct ref_server *s = arg;
    uint8_t *buf = malloc(s->cfg->size);

    if (!buf || SSL_accept(s->ssl) != 1) {
        s->rc = -1;
        free(buf);
        return NULL;
    }
    memset(buf, 0x5a, s->cfg->size);
    while (!atomic_load(&s->stop)) {
        size_t put = 0;
        if (SSL_write_ex(s->ssl, buf, s->cfg->size, &put) != 1 || put != s->cfg->size) {
            s->rc = atomic_load(&s->stop) ? 0 : -1;
            break;
        }
    }
    free(buf);
    return NULL;
}

static int parse(int argc, char **argv, struct ref_cfg *cfg)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            char *end;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end == 'K' || *end == 'k')
                v <<= 10;
            else if (*end == 'M' || *end == 'm')
                v <<= 20;
            cfg->size = (size_t)v;
        } else if (!strcmp(argv[i], "-D") && i + 1 < argc) {
            cfg->seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--cipher") && i + 1 < argc) {
            cfg->cipher = argv[++i];
        } else if (!strcmp(argv[i], "--no-ktls")) {
            cfg->ktls = 0;
        } else if (!strcmp(argv[i], "--read-ahead")) {
            cfg->read_ahead = 1;
        } else {
            fprintf(stderr, "usage: railwire_tls_ref [-s SIZE] [-D SECONDS] [--cipher NAME] "
                            "[--no-ktls] [--read-ahead]\n");
            return -1;
        }
    }
    return cfg->size == 0 || cfg->seconds <= 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    struct ref_cfg cfg = {1u << 20, 2.0, "TLS_AES_128_GCM_SHA256", 1, 0};
    struct ref_server srv = {0};
    SSL_CTX *sctx, *cctx;
    SSL *cli;
    pthread_t th;
    int cfd, sfd;
    uint8_t *buf;
    uint64_t bytes = 0;
    double t0, dt;

    if (parse(argc, argv, &cfg))
        return 2;
    signal(SIGPIPE, SIG_IGN);
    sctx = ctx_new(1, &cfg);
    cctx = ctx_new(0, &cfg);
    tcp_pair(&cfd, &sfd);
    srv.ssl = SSL_new(sctx);
    srv.cfg = &cfg;
    cli = SSL_new(cctx);
    if (!srv.ssl || !cli || !SSL_set_fd(srv.ssl, sfd) || !SSL_set_fd(cli, cfd))
        die("SSL objects");
    if (cfg.read_ahead) {
        /* As railwire's rails read: several records per recv. */
        SSL_set_default_read_buffer_len(cli, 4 * (16384 + 256));
        SSL_set_read_ahead(cli, 1);
    }
    pthread_create(&th, NULL, serve, &srv);
    if (SSL_connect(cli) != 1)
        die("handshake");
    buf = malloc(cfg.size);
    if (!buf)
        die("memory");
    t0 = now_s();
    do {
        size_t got = 0;
        if (SSL_read_ex(cli, buf, cfg.size, &got) != 1)
            die("read");
        bytes += got;
    } while ((dt = now_s() - t0) < cfg.seconds);
    atomic_store(&srv.stop, 1);
    /* The server thread may sit in a send the full socket buffers block:
     * shutting down its own socket (not only ours, whose receive side may
     * stay open on Linux) makes that send fail at once. */
    shutdown(sfd, SHUT_RDWR);
    shutdown(cfd, SHUT_RDWR);
    pthread_join(th, NULL);
    printf("{\"mode\": \"tls-stream\", \"cipher\": \"%s\", \"size\": %zu, \"seconds\": %.3f, "
           "\"bytes\": %llu, \"gbps\": %.6f, \"ktls_send\": %s, \"ktls_recv\": %s}\n",
           SSL_CIPHER_get_name(SSL_get_current_cipher(cli)), cfg.size, dt,
           (unsigned long long)bytes, (double)bytes / dt / 1e9,
           BIO_get_ktls_send(SSL_get_wbio(srv.ssl)) ? "true" : "false",
           BIO_get_ktls_recv(SSL_get_rbio(cli)) ? "true" : "false");
    SSL_free(cli);
    SSL_free(srv.ssl);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
    close(cfd);
    close(sfd);
    free(buf);
    return srv.rc ? 1 : 0;
}
