/* SPDX-License-Identifier: MIT */
/* A program that exits while one of its threads is inside OpenSSL (a heal
 * attempt outliving its railset's close, or the loops of a server the
 * program never destroyed) must exit cleanly: railwire sets OpenSSL up
 * without its exit handler (rw_tls_init), which would free OpenSSL's
 * global state under that thread (a crash or a use after free in most
 * such exits before).  Each child makes railwire credentials, runs TLS
 * handshakes over memory BIOs with their contexts on a second thread, and
 * returns from main a few milliseconds later, mid-handshake.
 * usage: tls_exit [children]; exits 0 when every child exited with 0. */
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/time.h"
#include "tls/tls_creds.h"
#include "tls_certs.h"

struct ctxs {
    SSL_CTX *cli, *srv;
};

/* The child's credentials: kept (reachable) while the process exits. */
static struct rw_tls_creds *cc, *sc;

/* Set in the children.  Their exit checks for crashes and use after free
 * (AddressSanitizer), not for leaks: LeakSanitizer could catch the
 * handshake thread between two frees of an SSL_free and report what it
 * had not freed yet. */
static int in_child;

/* LeakSanitizer's hook (only called under AddressSanitizer): skips its
 * exit check in the children. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return in_child;
}

/* Handshakes over a BIO pair, forever (until the process exits). */
static void *handshakes(void *arg)
{
    const struct ctxs *x = arg;

    for (;;) {
        SSL *c = SSL_new(x->cli), *s = SSL_new(x->srv);
        BIO *bc = NULL, *bs = NULL;
        if (!c || !s || BIO_new_bio_pair(&bc, 0, &bs, 0) != 1)
            abort();
        SSL_set_bio(c, bc, bc);
        SSL_set_bio(s, bs, bs);
        SSL_set_connect_state(c);
        SSL_set_accept_state(s);
        SSL_set1_host(c, "server.test");
        for (int i = 0; i < 8; i++) {
            SSL_do_handshake(c);
            SSL_do_handshake(s);
        }
        SSL_free(c);
        SSL_free(s);
    }
    return NULL;
}

static int child(const char *dir, unsigned k)
{
    char p[5][512];
    railwire_tls_opts co, so;

    railwire_tls_opts_init(&co);
    railwire_tls_opts_init(&so);
    co.ca_file = so.ca_file = tls_path(p[0], sizeof(p[0]), dir, "ca.pem");
    co.cert_file = tls_path(p[1], sizeof(p[1]), dir, "client.pem");
    co.key_file = tls_path(p[2], sizeof(p[2]), dir, "client.key");
    so.cert_file = tls_path(p[3], sizeof(p[3]), dir, "server.pem");
    so.key_file = tls_path(p[4], sizeof(p[4]), dir, "server.key");
    if (rw_tls_creds_new(&co, RW_TLS_CLIENT, &cc) || rw_tls_creds_new(&so, RW_TLS_SERVER, &sc))
        return 3;
    static struct ctxs x;
    x.cli = cc->ctx;
    x.srv = sc->ctx;
    pthread_t t;
    if (pthread_create(&t, NULL, handshakes, &x))
        return 4;
    struct timespec ts = {0, (long)(1 + k % 16) * 1000000L};
    nanosleep(&ts, NULL);
    return 0; /* exit() with the thread mid-handshake; the credentials stay */
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 24;
    unsigned bad = 0;
    char dir[256];

    if (tls_certs_make(dir, sizeof(dir))) {
        fprintf(stderr, "tls_exit: cannot make test certificates\n");
        return 1;
    }
    for (unsigned k = 0; k < n; k++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("tls_exit: fork");
            bad++;
            break;
        }
        if (pid == 0) {
            in_child = 1;
            exit(child(dir, k));
        }
        int st = 0;
        int64_t end = rw_now_ms() + 20000;
        pid_t w;
        while ((w = waitpid(pid, &st, WNOHANG)) == 0 && rw_now_ms() < end)
            usleep(2000);
        if (w == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fprintf(stderr, "tls_exit: child %u hung at exit (killed after 20 s)\n", k);
            bad++;
        } else if (WIFSIGNALED(st)) {
            fprintf(stderr, "tls_exit: child %u died at exit by signal %d\n", k, WTERMSIG(st));
            bad++;
        } else if (WEXITSTATUS(st) != 0) {
            fprintf(stderr, "tls_exit: child %u exited with %d\n", k, WEXITSTATUS(st));
            bad++;
        }
    }
    tls_certs_remove(dir);
    printf("tls_exit: %u of %u exits failed\n", bad, n);
    return bad ? 1 : 0;
}
