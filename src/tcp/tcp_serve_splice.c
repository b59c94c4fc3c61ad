/* SPDX-License-Identifier: MIT */
/* Zero-copy READ answers of a tcp server: see tcp_serve_splice.h. */
#define _GNU_SOURCE 1 /* splice, vmsplice, pipe2, F_SETPIPE_SZ */
#include "tcp/tcp_serve_splice.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_served.h"

#define PIPE_WANT (1u << 20)        /* pipe capacity asked for: 1 MiB of an answer per splice */
#define PIPE_LEAST (256u * 1024)    /* the least worth splicing through (else: copy) */
#define SPLICE_NEED (16u * 1024)    /* the least payload worth a vmsplice mid-answer */

/* The process's pipes.  A connection holds one only while an answer goes
 * through it, then hands it back here, so a few pipes serve every
 * connection: each costs two descriptors and counts its capacity against
 * the user's pipe-buffer pages (fs.pipe-user-pages-soft, 16384 by
 * default), which every process of that user shares.  At most
 * RW_TCP_SPLICE_PIPES_MAX are open (32 x 1 MiB: half the default soft
 * limit); an answer that finds none free is copied. */
struct spare {
    int fd[2];
    size_t cap;
};
static pthread_mutex_t pipes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spare spares[RW_TCP_SPLICE_PIPES_MAX];
static unsigned n_spares, n_open, pipes_max = RW_TCP_SPLICE_PIPES_MAX;
static _Atomic unsigned retry_after_ms = RW_TCP_SPLICE_RETRY_MS;

/* Gives c a non-blocking pipe of at least PIPE_LEAST bytes.  Returns 0, or
 * -1 (logged) when none can be had: no descriptor left, or the user is over
 * its pipe-buffer limit (fs.pipe-user-pages-soft). */
static int open_pipe(struct rw_tcp_conn *c)
{
    int cap;

    if (pipe2(c->pipe_fd, O_NONBLOCK | O_CLOEXEC) < 0) {
        rw_info_rl("tcp: qpn 0x%08x: no pipe for zero-copy READ answers (%s); this rail "
                   "copies them for a second, then tries again",
                   (unsigned)c->ep->base.local.qpn, strerror(errno));
        return -1;
    }
    cap = fcntl(c->pipe_fd[1], F_SETPIPE_SZ, (int)PIPE_WANT);
    if (cap < 0)
        cap = fcntl(c->pipe_fd[1], F_SETPIPE_SZ, (int)PIPE_LEAST);
    if (cap < (int)PIPE_LEAST) {
        rw_info_rl("tcp: qpn 0x%08x: a pipe for zero-copy READ answers could not be given "
                   "%u bytes (%s; see fs.pipe-user-pages-soft); this rail copies them for a "
                   "second, then tries again",
                   (unsigned)c->ep->base.local.qpn, PIPE_LEAST, strerror(errno));
        close(c->pipe_fd[0]);
        close(c->pipe_fd[1]);
        return -1;
    }
    c->pipe_cap = (size_t)cap;
    return 0;
}

/* Gives c a pipe: a spare one, or a new one while fewer than pipes_max
 * are open.  Returns 1, 0 when every pipe is in use (this answer is
 * copied), or -1 when a new one could not be made (logged). */
static int take_pipe(struct rw_tcp_conn *c)
{
    pthread_mutex_lock(&pipes_lock);
    if (n_spares) {
        struct spare *s = &spares[--n_spares];
        c->pipe_fd[0] = s->fd[0];
        c->pipe_fd[1] = s->fd[1];
        c->pipe_cap = s->cap;
        pthread_mutex_unlock(&pipes_lock);
        return 1;
    }
    if (n_open >= pipes_max) {
        pthread_mutex_unlock(&pipes_lock);
        return 0;
    }
    n_open++;
    pthread_mutex_unlock(&pipes_lock);
    if (open_pipe(c) == 0)
        return 1;
    pthread_mutex_lock(&pipes_lock);
    n_open--;
    pthread_mutex_unlock(&pipes_lock);
    return -1;
}

/* Hands c's pipe back: to the spares if it is empty, else (bytes of an
 * answer the connection will never send) closed. */
static void give_pipe(struct rw_tcp_conn *c)
{
    int keep;

    pthread_mutex_lock(&pipes_lock);
    keep = c->pipe_len == 0 && n_spares < pipes_max;
    if (keep)
        spares[n_spares++] = (struct spare){.fd = {c->pipe_fd[0], c->pipe_fd[1]},
                                            .cap = c->pipe_cap};
    else
        n_open--;
    pthread_mutex_unlock(&pipes_lock);
    if (!keep) {
        close(c->pipe_fd[0]);
        close(c->pipe_fd[1]);
    }
    c->pipe_state = 0;
    c->pipe_len = 0;
}

int rw_tcp_splice_wanted(struct rw_tcp_conn *c, int64_t now)
{
    if (c->pipe_state == 1)
        return 1; /* an answer is on its way through c's pipe */
    /* the answer's whole length, not what is left of it: an answer that
     * waited for room part way through goes on through the pipe */
    if (!c->by_ref || c->tls || c->staged || !c->left || c->req.length < RW_TCP_SPLICE_MIN ||
        (c->pipe_state < 0 &&
         now - c->pipe_failed_ms <
             (int64_t)atomic_load_explicit(&retry_after_ms, memory_order_relaxed)))
        return 0;
    int took = take_pipe(c);
    c->pipe_state = took;
    if (took < 0)
        c->pipe_failed_ms = now;
    return took == 1;
}

/* Moves what the pipe holds into the socket.  Returns RW_TCP_S_CONT once
 * the pipe is empty, RW_TCP_S_WAIT (the socket is full) or RW_TCP_S_CLOSE. */
static enum rw_tcp_step drain(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum,
                              const char **why)
{
    while (c->pipe_len) {
        ssize_t k = splice(c->pipe_fd[0], NULL, c->fd, NULL, c->pipe_len, SPLICE_F_NONBLOCK);

        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->wait = RW_TCP_W_OUT;
            return RW_TCP_S_WAIT;
        }
        if (k <= 0) {
            *why = "connection error or reset";
            return RW_TCP_S_CLOSE;
        }
        c->pipe_len -= (size_t)k;
        c->last_progress_ms = now;
        *quantum = *quantum > (uint64_t)k ? *quantum - (uint64_t)k : 0;
    }
    return RW_TCP_S_CONT;
}

/* Puts the answer's header (what is left of it) and up to `got` - header
 * bytes of its payload into the empty pipe.  Returns the bytes put, or -1
 * with *why. */
static ssize_t fill(struct rw_tcp_conn *c, uint64_t got, const char **why)
{
    size_t hdr = c->resp_len - c->resp_off, put = 0;
    ssize_t k;

    if (hdr) {
        /* at most RW_TCP_RESP_BATCH headers, under PIPE_BUF: an empty pipe
         * takes them whole */
        do {
            k = write(c->pipe_fd[1], c->resp + c->resp_off, hdr);
        } while (k < 0 && errno == EINTR);
        if (k < 0) {
            *why = "writing an answer's header into its pipe failed";
            return -1;
        }
        c->resp_off += (unsigned)k;
        put += (size_t)k;
    }
    if (c->resp_off == c->resp_len && got > put && c->left) {
        struct iovec v = {.iov_base = c->mem, .iov_len = (size_t)(got - put)};
        do {
            k = vmsplice(c->pipe_fd[1], &v, 1, SPLICE_F_NONBLOCK);
        } while (k < 0 && errno == EINTR);
        if (k < 0 && errno != EAGAIN) {
            *why = "mapping a READ answer's memory into its pipe failed (vmsplice)";
            return -1;
        }
        if (k > 0) {
            atomic_fetch_add_explicit(&c->ep->dom->served.bytes_by_ref, (uint64_t)k,
                                      memory_order_relaxed);
            c->mem += k;
            c->left -= (uint64_t)k;
            put += (size_t)k;
        }
    }
    return (ssize_t)put;
}

enum rw_tcp_step rw_tcp_splice_send(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum,
                                    const char **why)
{
    for (;;) {
        enum rw_tcp_step s = drain(c, now, quantum, why);
        if (s != RW_TCP_S_CONT)
            return s;
        uint64_t hdr = c->resp_len - c->resp_off;
        if (!hdr && !c->left) {
            give_pipe(c);
            c->state = RW_TCP_C_HDR;
            return RW_TCP_S_CONT;
        }
        if (*quantum == 0)
            return RW_TCP_S_YIELD;
        uint64_t pay = c->left < c->pipe_cap ? c->left : c->pipe_cap, got;
        s = rw_tcp_conn_reserve(c, now, hdr + pay, hdr + (pay < SPLICE_NEED ? pay : SPLICE_NEED),
                                &got);
        if (s != RW_TCP_S_CONT)
            return s;
        ssize_t put = fill(c, got, why);
        rw_tcp_budget_give(got - (put > 0 ? (uint64_t)put : 0));
        if (put <= 0) {
            if (put == 0)
                *why = "an empty pipe took none of a READ answer";
            return RW_TCP_S_CLOSE;
        }
        c->charge += (uint64_t)put;
        c->pipe_len += (size_t)put;
    }
}

void rw_tcp_splice_close(struct rw_tcp_conn *c)
{
    if (c->pipe_state == 1)
        give_pipe(c);
    c->pipe_state = 0;
}

void rw_tcp_splice_drain(void)
{
    pthread_mutex_lock(&pipes_lock);
    while (n_spares) {
        struct spare *s = &spares[--n_spares];
        close(s->fd[0]);
        close(s->fd[1]);
        n_open--;
    }
    pthread_mutex_unlock(&pipes_lock);
}

unsigned rw_tcp_splice_pipes_open(void)
{
    pthread_mutex_lock(&pipes_lock);
    unsigned n = n_open;
    pthread_mutex_unlock(&pipes_lock);
    return n;
}

void rw_tcp_splice_configure(unsigned max, unsigned retry_ms)
{
    pthread_mutex_lock(&pipes_lock);
    pipes_max = max == 0 || max > RW_TCP_SPLICE_PIPES_MAX ? RW_TCP_SPLICE_PIPES_MAX : max;
    pthread_mutex_unlock(&pipes_lock);
    atomic_store_explicit(&retry_after_ms, retry_ms ? retry_ms : RW_TCP_SPLICE_RETRY_MS,
                          memory_order_relaxed);
}
