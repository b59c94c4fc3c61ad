/* SPDX-License-Identifier: MIT */
#include "tls/tls_util.h"
#include "tls/tls_conn.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/log.h"
#include "railwire/error.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_ok;

static void init_openssl(void)
{
    init_ok = OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_LOAD_SSL_STRINGS |
                                   OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
                               NULL) == 1;
}

int rw_tls_init(void)
{
    pthread_once(&init_once, init_openssl);
    if (init_ok)
        return 0;
    char why[256];
    rw_err("TLS: OpenSSL failed to initialize: %s; check the OpenSSL installation "
           "(libssl3) and its configuration (OPENSSL_CONF)",
           rw_tls_ossl_errors(why, sizeof(why)));
    return RAILWIRE_E_SYSTEM;
}

char *rw_tls_ossl_errors(char *buf, size_t cap)
{
    size_t off = 0;
    unsigned long e;

    if (cap == 0)
        return buf;
    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        const char *r = ERR_reason_error_string(e);
        char tmp[64];
        if (!r) {
            snprintf(tmp, sizeof(tmp), "error %lu", e);
            r = tmp;
        }
        int k = snprintf(buf + off, cap - off, "%s%s", off ? "; " : "", r);
        if (k < 0 || (size_t)k >= cap - off) {
            ERR_clear_error();
            break;
        }
        off += (size_t)k;
    }
    if (buf[0] == '\0')
        snprintf(buf, cap, "no detail from OpenSSL");
    return buf;
}

void rw_tls_printable(char *dst, size_t cap, const void *src, size_t len)
{
    const unsigned char *s = src;
    size_t i;

    if (cap == 0)
        return;
    for (i = 0; i < len && i + 1 < cap; i++)
        dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
    dst[i] = '\0';
}

char *rw_tls_strdup(const char *s, int *fail)
{
    char *d;

    if (!s)
        return NULL;
    d = strdup(s);
    if (!d)
        *fail = 1;
    return d;
}

/* Set in a railwire thread that blocks SIGPIPE for good
 * (rw_tls_thread_hold_sigpipe): the per-call guard is then not needed. */
static _Thread_local int tl_pipe_held;

void rw_tls_thread_hold_sigpipe(void)
{
    sigset_t pipe;

    if (tl_pipe_held)
        return;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe, NULL) == 0)
        tl_pipe_held = 1;
}

/* Consumes a SIGPIPE pending on a thread that holds it blocked for good
 * (raised by a write to a closed socket: nobody waits for it). */
static void drain_held_sigpipe(void)
{
    sigset_t pipe, pending;
    struct timespec zero = {0, 0};

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR) {
        }
}

void rw_tls_sigpipe_enter(struct rw_tls_sigpipe *g)
{
    sigset_t pipe, pending;

    g->held = tl_pipe_held;
    if (g->held)
        return; /* no system call on the data path of railwire's threads */
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

void rw_tls_sigpipe_leave(struct rw_tls_sigpipe *g)
{
    sigset_t pipe, pending;

    if (g->held)
        return;
    if (!g->was_pending) {
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

void rw_tls_sigpipe_failed(const struct rw_tls_sigpipe *g)
{
    if (g->held)
        drain_held_sigpipe();
}

