/* SPDX-License-Identifier: MIT */
/* Zero-copy READ answers of a tcp server: see tcp_serve_splice.h. */
#define _GNU_SOURCE 1 /* splice, vmsplice, pipe2, F_SETPIPE_SZ */
#include "tcp/tcp_serve_splice.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_served.h"

#define PIPE_WANT (1u << 20)        /* pipe capacity asked for: 1 MiB of an answer per splice */
#define PIPE_LEAST (256u * 1024)    /* the least worth splicing through (else: copy) */
#define SPLICE_NEED (16u * 1024)    /* the least payload worth a vmsplice mid-answer */

/* Gives c a non-blocking pipe of at least PIPE_LEAST bytes.  Returns 0, or
 * -1 (logged) when none can be had: no descriptor left, or the user is over
 * its pipe-buffer limit (fs.pipe-user-pages-soft). */
static int open_pipe(struct rw_tcp_conn *c)
{
    int cap;

    if (pipe2(c->pipe_fd, O_NONBLOCK | O_CLOEXEC) < 0) {
        rw_info_rl("tcp: qpn 0x%08x: no pipe for zero-copy READ answers (%s); this rail "
                   "copies them", (unsigned)c->ep->base.local.qpn, strerror(errno));
        return -1;
    }
    cap = fcntl(c->pipe_fd[1], F_SETPIPE_SZ, (int)PIPE_WANT);
    if (cap < 0)
        cap = fcntl(c->pipe_fd[1], F_SETPIPE_SZ, (int)PIPE_LEAST);
    if (cap < (int)PIPE_LEAST) {
        rw_info_rl("tcp: qpn 0x%08x: a pipe for zero-copy READ answers could not be given "
                   "%u bytes (%s; see fs.pipe-user-pages-soft); this rail copies them",
                   (unsigned)c->ep->base.local.qpn, PIPE_LEAST, strerror(errno));
        close(c->pipe_fd[0]);
        close(c->pipe_fd[1]);
        return -1;
    }
    c->pipe_cap = (size_t)cap;
    return 0;
}

int rw_tcp_splice_wanted(struct rw_tcp_conn *c)
{
    if (c->pipe_len)
        return 1;
    /* the answer's whole length, not what is left of it: an answer that
     * waited for room part way through goes on through the pipe */
    if (!c->by_ref || c->tls || c->staged || !c->left || c->req.length < RW_TCP_SPLICE_MIN ||
        c->pipe_state < 0)
        return 0;
    if (c->pipe_state == 0)
        c->pipe_state = open_pipe(c) == 0 ? 1 : -1;
    return c->pipe_state == 1;
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
    if (c->pipe_state == 1) {
        close(c->pipe_fd[0]);
        close(c->pipe_fd[1]);
    }
    c->pipe_state = 0;
    c->pipe_len = 0;
}
