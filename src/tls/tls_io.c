/* SPDX-License-Identifier: MIT */
/* Reads and writes on an established TLS connection: non-blocking calls
 * for event loops, deadline-bounded ones for blocking callers. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "common/time.h"
#include "tls/tls_conn_int.h"

/* After a failed SSL_read_ex/SSL_write_ex (lock held). */
static ssize_t io_failed(struct rw_tls_conn *c, int r, int reading)
{
    int e = SSL_get_error(c->ssl, r);

    switch (e) {
    case SSL_ERROR_WANT_READ:
        return RW_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return RW_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: /* close_notify */
        ERR_clear_error();
        return reading ? 0 : rw_tls_diag_fail(c, e);
    case SSL_ERROR_SYSCALL:
        if (reading && errno == 0 && ERR_peek_error() == 0)
            return 0; /* end of stream without close_notify: the framing above judges */
        return rw_tls_diag_fail(c, e);
    case SSL_ERROR_SSL:
        if (reading &&
            ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            ERR_clear_error();
            return 0;
        }
        return rw_tls_diag_fail(c, e);
    default:
        return rw_tls_diag_fail(c, e);
    }
}

static ssize_t read_locked(struct rw_tls_conn *c, void *buf, size_t len)
{
    size_t got = 0;

    ERR_clear_error();
    errno = 0;
    if (SSL_read_ex(c->ssl, buf, len, &got) == 1)
        return (ssize_t)got;
    return io_failed(c, 0, 1);
}

static ssize_t write_locked(struct rw_tls_conn *c, const void *buf, size_t len)
{
    size_t put = 0;
    ssize_t rc;

    ERR_clear_error();
    errno = 0;
    if (SSL_write_ex(c->ssl, buf, len, &put) == 1) {
        c->wpend = 0;
        return (ssize_t)put;
    }
    rc = io_failed(c, 0, 0);
    if (rc == RW_TLS_WANT_READ || rc == RW_TLS_WANT_WRITE)
        c->wpend = len;
    return rc;
}

ssize_t rw_tls_read(struct rw_tls_conn *c, void *buf, size_t len)
{
    struct iovec iov = {buf, len};

    return rw_tls_readv(c, &iov, 1);
}

ssize_t rw_tls_readv(struct rw_tls_conn *c, const struct iovec *iov, int iovcnt)
{
    struct rw_tls_sigpipe g;
    ssize_t total = 0, r = 0;

    if (!c->hs_done)
        return RAILWIRE_E_STATE;
    rw_tls_sigpipe_enter(&g);
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < iovcnt; i++) {
        size_t off = 0;
        while (off < iov[i].iov_len) {
            r = read_locked(c, (char *)iov[i].iov_base + off, iov[i].iov_len - off);
            if (r <= 0)
                goto out;
            off += (size_t)r;
            total += r;
        }
    }
out:
    pthread_mutex_unlock(&c->lock);
    rw_tls_sigpipe_leave(&g);
    if (r < 0 && r != RW_TLS_WANT_READ && r != RW_TLS_WANT_WRITE)
        rw_tls_sigpipe_failed(&g); /* an alert sent to a closed socket */
    /* What was read is returned first; an error or end repeats next call. */
    return total > 0 ? total : r;
}

ssize_t rw_tls_write(struct rw_tls_conn *c, const void *buf, size_t len)
{
    struct iovec iov = {(void *)buf, len};

    return rw_tls_writev(c, &iov, 1);
}

/* Small leading pieces are coalesced into one record.  Once a write
 * wanted a retry, the retry offers at least as many bytes (OpenSSL has
 * already sealed them): the caller re-offers the same bytes, maybe with
 * more after them, so the same choice is made with at least that length. */
static ssize_t writev_locked(struct rw_tls_conn *c, const struct iovec *iov, int iovcnt)
{
    ssize_t total = 0, r = 0;

    if (iovcnt > 1 && iov[0].iov_len < RW_TLS_STAGE) {
        size_t n = 0;
        if (!c->stage && !(c->stage = malloc(RW_TLS_STAGE)))
            return RAILWIRE_E_NOMEM;
        for (int i = 0; i < iovcnt && n < RW_TLS_STAGE; i++) {
            size_t k = iov[i].iov_len < RW_TLS_STAGE - n ? iov[i].iov_len : RW_TLS_STAGE - n;
            memcpy(c->stage + n, iov[i].iov_base, k);
            n += k;
        }
        if (n < c->wpend)
            return RAILWIRE_E_INVALID;
        return write_locked(c, c->stage, n);
    }
    for (int i = 0; i < iovcnt; i++) {
        size_t off = 0;
        while (off < iov[i].iov_len) {
            if (total == 0 && iov[i].iov_len - off < c->wpend)
                return RAILWIRE_E_INVALID;
            r = write_locked(c, (const char *)iov[i].iov_base + off, iov[i].iov_len - off);
            if (r <= 0)
                return total > 0 ? total : r;
            off += (size_t)r;
            total += r;
        }
    }
    return total;
}

ssize_t rw_tls_writev(struct rw_tls_conn *c, const struct iovec *iov, int iovcnt)
{
    struct rw_tls_sigpipe g;
    ssize_t r;

    if (!c->hs_done)
        return RAILWIRE_E_STATE;
    rw_tls_sigpipe_enter(&g);
    pthread_mutex_lock(&c->lock);
    r = writev_locked(c, iov, iovcnt);
    pthread_mutex_unlock(&c->lock);
    rw_tls_sigpipe_leave(&g);
    if (r < 0 && r != RW_TLS_WANT_READ && r != RW_TLS_WANT_WRITE)
        rw_tls_sigpipe_failed(&g);
    return r;
}

int rw_tls_conn_pending(struct rw_tls_conn *c)
{
    int p;

    pthread_mutex_lock(&c->lock);
    p = SSL_has_pending(c->ssl);
    pthread_mutex_unlock(&c->lock);
    return p;
}

int rw_tls_conn_wait(struct rw_tls_conn *c, int want, int64_t deadline_ms)
{
    struct pollfd p = {.fd = c->fd, .events = want == RW_TLS_WANT_WRITE ? POLLOUT : POLLIN};

    if (want == RW_TLS_WANT_READ && c->hs_done && rw_tls_conn_pending(c))
        return 0;
    for (;;) {
        int left = rw_ms_left(deadline_ms);
        int k = poll(&p, 1, left);
        if (k > 0)
            return 0; /* ready, or an error the next call reports */
        if (k == 0)
            return RAILWIRE_E_TIMEOUT;
        if (errno != EINTR)
            return RAILWIRE_E_IO;
    }
}

ssize_t rw_tls_recv_some(struct rw_tls_conn *c, void *buf, size_t cap, int64_t deadline_ms)
{
    for (;;) {
        ssize_t r = rw_tls_read(c, buf, cap);
        if (r != RW_TLS_WANT_READ && r != RW_TLS_WANT_WRITE)
            return r;
        if (rw_now_ms() >= deadline_ms)
            return RAILWIRE_E_TIMEOUT;
        r = rw_tls_conn_wait(c, (int)r, deadline_ms);
        if (r)
            return r;
    }
}

int rw_tls_read_full(struct rw_tls_conn *c, void *buf, size_t n, int64_t deadline_ms)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = rw_tls_read(c, (char *)buf + got, n - got);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0)
            return RAILWIRE_E_CLOSED;
        if (r != RW_TLS_WANT_READ && r != RW_TLS_WANT_WRITE)
            return (int)r;
        r = rw_tls_conn_wait(c, (int)r, deadline_ms);
        if (r)
            return (int)r;
    }
    return 0;
}

int rw_tls_write_full(struct rw_tls_conn *c, const void *buf, size_t n, int64_t deadline_ms)
{
    struct iovec iov = {(void *)buf, n};

    return rw_tls_writev_full(c, &iov, 1, deadline_ms);
}

int rw_tls_writev_full(struct rw_tls_conn *c, struct iovec *iov, int iovcnt,
                       int64_t deadline_ms)
{
    while (iovcnt > 0) {
        ssize_t r;
        if (iov[0].iov_len == 0) {
            iov++;
            iovcnt--;
            continue;
        }
        r = rw_tls_writev(c, iov, iovcnt);
        if (r == RW_TLS_WANT_READ || r == RW_TLS_WANT_WRITE) {
            int w = rw_tls_conn_wait(c, (int)r, deadline_ms);
            if (w)
                return w;
            continue;
        }
        if (r < 0)
            return (int)r;
        while (r > 0 && iovcnt > 0) {
            size_t k = (size_t)r < iov[0].iov_len ? (size_t)r : iov[0].iov_len;
            iov[0].iov_base = (char *)iov[0].iov_base + k;
            iov[0].iov_len -= k;
            r -= (ssize_t)k;
            if (iov[0].iov_len == 0) {
                iov++;
                iovcnt--;
            }
        }
    }
    return 0;
}
