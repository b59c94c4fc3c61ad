/* SPDX-License-Identifier: MIT */
/* The send side of a client ep (inline small sends by ep_post, the loop's
 * send queue), its timeouts, and its end (see tcp_cli_io.h). */
#include "tcp/tcp_cli_io.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_sock.h"

#define TX_BATCH 64 /* requests per sendmsg */
/* Answers due on a rail from which a small post waits for the loop's next
 * wake-up instead of waking it (rw_tcp_cli_send_locked). */
#define RW_TCP_DEFER_DUE 8u
/* ... or fewer answers carrying at least this many bytes: the server has
 * that much to send (or, for WRITEs, to take in) before the rail idles. */
#define RW_TCP_DEFER_BYTES (128u * 1024)
/* Bytes (headers + WRITE payloads) per sender batch beyond its first
 * request: a batch's completions are published when its send returns, so
 * big batches would delay them. */
#define TX_BATCH_BYTES (1u << 20)
/* Bytes a rail may send, and receive, per turn of its loop before the
 * other rails of the loop get theirs. */
#define TX_QUANTUM (4u << 20)
#define RX_QUANTUM (4u << 20)

void rw_tcp_cli_notify(struct rw_tcp_cli_ep *ep)
{
    uint64_t one = 1;

    /* Before the write: ep_arm reads the eventfd while this is non-zero
     * and subtracts what it read (tcp_cli_attend.c). */
    atomic_fetch_add_explicit(&ep->evfd_pending, 1, memory_order_acq_rel);
    /* EAGAIN means the counter is already huge: still readable. */
    if (write(ep->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rw_warn_rl("tcp: cannot signal the completion eventfd: %s", strerror(errno));
}

/* With ep->lock held, for an ep that was up: marks it dead with err and
 * shuts its socket down (waking whoever waits on it).  With requests
 * unanswered, ep_kill aborts the connection later (abort_due). */
static void die_locked(struct rw_tcp_cli_ep *ep, int err)
{
    ep->state = RW_TCP_CLI_DEAD;
    ep->err = err;
    ep->abort_due = ep->posted != ep->answered;
    shutdown(ep->fd, SHUT_RDWR);
}

void rw_tcp_cli_fail(struct rw_tcp_cli_ep *ep, int err, const char *what)
{
    pthread_mutex_lock(&ep->lock);
    if (ep->state == RW_TCP_CLI_UP) {
        if (what)
            rw_warn_rl("tcp: rail qpn 0x%08x (%s) is down: %s; %llu outstanding request(s) fail "
                    "with rail-down", (unsigned)ep->base.local.qpn, ep->dom->base.name, what,
                    (unsigned long long)(ep->posted - ep->done));
        die_locked(ep, err);
    }
    pthread_mutex_unlock(&ep->lock);
}

/* Whether an entry of [from, to) completed with an error. */
static int any_failed_locked(const struct rw_tcp_cli_ep *ep, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++)
        if (ep->ring[i & ep->mask].status)
            return 1;
    return 0;
}

int rw_tcp_cli_publish_locked(struct rw_tcp_cli_ep *ep)
{
    uint64_t lim = ep->answered < ep->sent ? ep->answered : ep->sent;
    uint64_t from = ep->done;

    if (lim <= from)
        return 0;
    ep->done = lim;
    /* An attending caller (tcp_cli_attend.c) polls again once it lets go
     * of the receiver: no eventfd write for it. */
    if (ep->rx_owner == RW_TCP_RX_CALLER) {
        ep->wake_owed = 0;
        return 0;
    }
    /* A caller that had taken every completion may be asleep: it is owed
     * a wake-up, at its mark (rw_tcp_cli_arm).  One that had not takes
     * these with the ones it has yet to take. */
    if (from == ep->polled)
        ep->wake_owed = 1;
    if (!ep->wake_owed || (lim < ep->wake_at && !any_failed_locked(ep, from, lim)))
        return 0;
    ep->wake_owed = 0;
    return 1;
}

static size_t entry_bytes(const struct rw_tcp_slot *s)
{
    return RW_TCP_REQ_SIZE + (s->wr.opcode == RW_OP_WRITE ? s->wr.length : 0);
}

/* Fills iov with entries [first, first + cnt), minus the first `skip`
 * bytes (what an earlier non-blocking send already wrote).  Returns the
 * number of iovec entries. */
static int build_iov(struct rw_tcp_cli_ep *ep, uint64_t first, uint64_t cnt, size_t skip,
                     struct iovec *iov, uint8_t (*hdrs)[RW_TCP_REQ_SIZE])
{
    int n = 0, j = 0;
    uint64_t i;

    for (i = 0; i < cnt; i++) {
        struct rw_tcp_slot *s = &ep->ring[(first + i) & ep->mask];
        /* The headers are sent from a private copy: the ring slot of a
         * request may be reused (its completion polled) while the same
         * sendmsg is still writing later requests of the batch. */
        memcpy(hdrs[i], s->hdr, RW_TCP_REQ_SIZE);
        iov[n++] = (struct iovec){.iov_base = hdrs[i], .iov_len = RW_TCP_REQ_SIZE};
        if (s->wr.opcode == RW_OP_WRITE)
            iov[n++] = (struct iovec){.iov_base = s->wr.local, .iov_len = s->wr.length};
    }
    while (skip && j < n) {
        if (skip >= iov[j].iov_len) {
            skip -= iov[j].iov_len;
            j++;
        } else {
            iov[j].iov_base = (uint8_t *)iov[j].iov_base + skip;
            iov[j].iov_len -= skip;
            skip = 0;
        }
    }
    if (j)
        memmove(iov, iov + j, (size_t)(n - j) * sizeof(*iov));
    return n - j;
}


/* With ep->lock held: accounts k more bytes written from entry `sent` on
 * (whole entries advance `sent`, a partial one is kept in sent_off). */
static void advance_locked(struct rw_tcp_cli_ep *ep, size_t k)
{
    size_t off = ep->sent_off + k;

    while (ep->sent < ep->posted) {
        size_t b = entry_bytes(&ep->ring[ep->sent & ep->mask]);
        if (off < b)
            break;
        off -= b;
        ep->sent++;
    }
    ep->sent_off = off;
    if (k)
        ep->tx_mark_ms = rw_now_ms();
}

/* With ep->lock held: 1 if the answers due on ep keep its server busy
 * long enough for a deferred send (RW_TCP_DEFER_DUE answers, or fewer of
 * RW_TCP_DEFER_BYTES in all). */
static int due_keeps_server_busy_locked(const struct rw_tcp_cli_ep *ep)
{
    uint64_t i, bytes = 0;

    if (ep->sent - ep->answered >= RW_TCP_DEFER_DUE)
        return 1;
    for (i = ep->answered; i < ep->sent && bytes < RW_TCP_DEFER_BYTES; i++)
        bytes += ep->ring[i & ep->mask].wr.length;
    return bytes >= RW_TCP_DEFER_BYTES;
}

/* Loop thread: writes queued requests until the socket is full, the queue
 * is empty or the quantum is used.  Returns 1 when the quantum was used. */
static int tx_run(struct rw_tcp_cli_ep *ep, int writable)
{
    struct iovec iov[2 * TX_BATCH];
    uint8_t hdrs[TX_BATCH][RW_TCP_REQ_SIZE];
    size_t budget = TX_QUANTUM;
    int again = 0;

    pthread_mutex_lock(&ep->lock);
    if (writable)
        ep->out_wait = 0;
    while (ep->state == RW_TCP_CLI_UP && ep->sent != ep->posted && !ep->tx_busy && !ep->out_wait) {
        uint64_t first = ep->sent, cnt = ep->posted - ep->sent, k;
        size_t skip = ep->sent_off, bytes;
        struct msghdr mh = {.msg_iov = iov};
        ssize_t w;
        int err, wake;

        if (!budget) {
            again = 1;
            break;
        }
        if (cnt > TX_BATCH)
            cnt = TX_BATCH;
        bytes = entry_bytes(&ep->ring[first & ep->mask]);
        for (k = 1; k < cnt; k++) {
            bytes += entry_bytes(&ep->ring[(first + k) & ep->mask]);
            if (bytes > TX_BATCH_BYTES)
                break;
        }
        cnt = k;
        ep->tx_busy = 1;
        pthread_mutex_unlock(&ep->lock);
        mh.msg_iovlen = (size_t)build_iov(ep, first, cnt, skip, iov, hdrs);
        do
            w = rw_tcp_cli_sendmsg(ep, &mh);
        while (w < 0 && errno == EINTR);
        err = w < 0 ? errno : 0;
        pthread_mutex_lock(&ep->lock);
        ep->tx_busy = 0;
        if (ep->state != RW_TCP_CLI_UP)
            break;
        if (w < 0) {
            if (err == EAGAIN || err == EWOULDBLOCK) {
                ep->out_wait = 1; /* the next EPOLLOUT edge runs us again */
                break;
            }
            pthread_mutex_unlock(&ep->lock);
            rw_tcp_cli_fail(ep, RAILWIRE_E_RAIL_DOWN, "sending failed (connection reset or closed)");
            return 0;
        }
        advance_locked(ep, (size_t)w);
        budget = (size_t)w >= budget ? 0 : budget - (size_t)w;
        wake = rw_tcp_cli_publish_locked(ep);
        if (wake) {
            pthread_mutex_unlock(&ep->lock);
            rw_tcp_cli_notify(ep);
            pthread_mutex_lock(&ep->lock);
        }
    }
    pthread_mutex_unlock(&ep->lock);
    return again;
}

void rw_tcp_cli_send_locked(struct rw_tcp_cli_ep *ep, uint64_t first, uint64_t cnt)
{
    struct iovec iov[2 * TX_BATCH];
    uint8_t hdrs[TX_BATCH][RW_TCP_REQ_SIZE];
    size_t total = 0;
    ssize_t k;
    uint64_t i;
    int n, err = 0;

    if (!cnt)
        return;
    if (ep->tx_busy || ep->out_wait || ep->sent != first || cnt > TX_BATCH)
        goto to_loop;
    /* A loop that is running takes the kick without a wakeup and sends
     * these with whatever else was queued meanwhile, several requests per
     * call.  A send per request from here, racing the loop for the socket's
     * lock, cost twice the CPU per 4 KiB transfer at 4 rails
     * (docs/benchmarks.md, issue 20). */
    if (rw_tcp_cli_loop_awake(ep))
        goto to_loop;
    for (i = 0; i < cnt; i++)
        total += entry_bytes(&ep->ring[(first + i) & ep->mask]);
    if (total > RW_TCP_INLINE_MAX)
        goto to_loop;
    /* The loop sleeps, but answers are due on this rail and the loop
     * receives them: their input wakes it, and it then sends these with
     * whatever else was queued by then.  The server has the due requests
     * to work on meanwhile.  4 KiB depth 64 on 4 rails: 11.4 -> 7.0 us of
     * CPU per transfer (docs/benchmarks.md, issue 20). */
    if (!ep->attend && ep->rx_owner != RW_TCP_RX_CALLER && due_keeps_server_busy_locked(ep)) {
        rw_tcp_cli_loop_defer(ep);
        return;
    }
    ep->tx_busy = 1;
    pthread_mutex_unlock(&ep->lock);
    n = build_iov(ep, first, cnt, 0, iov, hdrs);
    {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        do
            k = rw_tcp_cli_sendmsg(ep, &mh);
        while (k < 0 && errno == EINTR);
    }
    if (k < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            err = errno;
        k = 0;
    }
    pthread_mutex_lock(&ep->lock);
    ep->tx_busy = 0;
    if (ep->state != RW_TCP_CLI_UP) {
        /* Died meanwhile: the entries were completed rail-down already. */
        pthread_cond_broadcast(&ep->cond); /* an ep_kill may wait for us */
        return;
    }
    advance_locked(ep, (size_t)k);
    if (rw_tcp_cli_publish_locked(ep))
        rw_tcp_cli_notify(ep);
    if (err) {
        pthread_mutex_unlock(&ep->lock);
        rw_tcp_cli_fail(ep, RAILWIRE_E_RAIL_DOWN, "sending failed (connection reset or closed)");
        pthread_mutex_lock(&ep->lock);
        return;
    }
to_loop:
    /* The loop sends the rest: now, or when the socket has room again
     * (out_wait), or after its own send call returns (tx_busy: it looks
     * at the queue again then). */
    if (ep->sent != ep->posted && !ep->tx_busy && !ep->out_wait)
        rw_tcp_cli_loop_kick(ep);
}

int rw_tcp_cli_run(struct rw_tcp_cli_ep *ep, int writable, uint64_t *spin_ns)
{
    int again = tx_run(ep, writable);
    int dead, own;

    pthread_mutex_lock(&ep->lock);
    own = !ep->rx_owner;
    if (own)
        ep->rx_owner = RW_TCP_RX_LOOP;
    else
        ep->rx_missed = 1; /* the attending caller reads it (tcp_cli_attend.c) */
    pthread_mutex_unlock(&ep->lock);
    if (own)
        again |= rw_tcp_cli_rx_run(ep, spin_ns);
    pthread_mutex_lock(&ep->lock);
    if (own)
        ep->rx_owner = 0;
    dead = ep->state != RW_TCP_CLI_UP;
    pthread_mutex_unlock(&ep->lock);
    return dead ? -1 : again;
}

int rw_tcp_cli_scan(struct rw_tcp_cli_ep *ep, int64_t now)
{
    const char *what = NULL;
    int64_t mark;

    pthread_mutex_lock(&ep->lock);
    if (ep->state != RW_TCP_CLI_UP) {
        pthread_mutex_unlock(&ep->lock);
        return 1;
    }
    rw_tcp_cli_attend_scan_locked(ep, now);
    mark = ep->rx_mark_ms > ep->tx_mark_ms ? ep->rx_mark_ms : ep->tx_mark_ms;
    /* A payload's SO_RCVLOWAT keeps the loop from reading a trickle that
     * has not reached it: with half the I/O timeout gone, let the loop read
     * what is there (this thread runs the receive, unless a caller does). */
    int lowat_off = ep->rx_owner != RW_TCP_RX_CALLER && ep->rxs.lowat &&
                    now - mark >= ep->io_timeout_ms / 2;
    if (ep->sent != ep->posted && now - ep->tx_mark_ms >= ep->io_timeout_ms)
        what = "the server stopped reading requests";
    else if (ep->answered < ep->posted && ep->sent == ep->posted && now - mark >= ep->io_timeout_ms)
        what = !ep->rx_owner && ep->rxs.left ? "the connection failed in the middle of READ data"
                            : "no response from the server within the I/O timeout";
    pthread_mutex_unlock(&ep->lock);
    if (lowat_off && !what)
        rw_tcp_cli_rx_lowat_off(ep);
    if (!what)
        return 0;
    rw_tcp_cli_fail(ep, RAILWIRE_E_TIMEOUT, what);
    return 1;
}

void rw_tcp_cli_finish(struct rw_tcp_cli_ep *ep)
{
    int wake;

    pthread_mutex_lock(&ep->lock);
    if (ep->rx_owner == RW_TCP_RX_CALLER) {
        /* A caller is reading into the outstanding buffers: it completes
         * them when it lets go (tcp_cli_attend.c). */
        ep->finish_deferred = 1;
        pthread_mutex_unlock(&ep->lock);
        return;
    }
    wake = ep->done < ep->posted && (ep->done == ep->polled || ep->wake_owed);
    /* Answered entries keep their result (nothing runs the rail any more);
     * the rest never got theirs. */
    for (ep->done = ep->answered; ep->done < ep->posted; ep->done++) {
        struct rw_tcp_slot *s = &ep->ring[ep->done & ep->mask];
        s->status = RAILWIRE_E_RAIL_DOWN;
        s->byte_len = 0;
    }
    ep->answered = ep->posted;
    ep->sent = ep->posted;
    ep->sent_off = 0;
    pthread_mutex_unlock(&ep->lock);
    if (wake)
        rw_tcp_cli_notify(ep);
}

int rw_tcp_cli_io_start(struct rw_tcp_cli_ep *ep, int fd)
{
    int rc;

    ep->rxs.rx = malloc(sizeof(*ep->rxs.rx));
    if (!ep->rxs.rx) {
        rw_err("tcp: out of memory for a rail's receive buffer");
        close(fd);
        pthread_mutex_lock(&ep->lock);
        ep->state = RW_TCP_CLI_DEAD;
        pthread_mutex_unlock(&ep->lock);
        return RAILWIRE_E_NOMEM;
    }
    ep->rxs.rx->fd = fd;
    ep->rxs.rx->tls = ep->tls;
    ep->rxs.rx->off = ep->rxs.rx->len = 0;
    ep->rxs.rx->dry = 0;
    ep->rxs.lowat = 0;
    atomic_init(&ep->rxs.rx->hup, 0);
    pthread_mutex_lock(&ep->lock);
    ep->fd = fd;
    ep->state = RW_TCP_CLI_UP;
    ep->tx_mark_ms = ep->rx_mark_ms = rw_now_ms();
    pthread_mutex_unlock(&ep->lock);
    rc = rw_tcp_cli_loop_attach(ep);
    if (rc) {
        pthread_mutex_lock(&ep->lock);
        ep->state = RW_TCP_CLI_DEAD;
        pthread_mutex_unlock(&ep->lock);
    }
    return rc;
}

void rw_tcp_cli_ep_kill(struct rw_tcp_cli_ep *ep)
{
    pthread_mutex_lock(&ep->lock);
    if (ep->state == RW_TCP_CLI_UP) {
        rw_debug("tcp: rail qpn 0x%08x killed with %llu outstanding request(s)",
                 (unsigned)ep->base.local.qpn, (unsigned long long)(ep->posted - ep->done));
        die_locked(ep, RAILWIRE_E_CLOSED);
    } else if (ep->state == RW_TCP_CLI_NEW) {
        ep->state = RW_TCP_CLI_DEAD;
    }
    pthread_mutex_unlock(&ep->lock);
    if (ep->link.loop)
        rw_tcp_cli_loop_kill(ep);
    /* An ep_post of another thread may still be writing a small request
     * without blocking, or a waiting caller reading an answer: let them
     * finish before the buffers are released. */
    pthread_mutex_lock(&ep->lock);
    while ((ep->tx_busy || ep->rx_owner >= RW_TCP_RX_CALLER) &&
           rw_tcp_cond_wait_until(&ep->cond, &ep->lock, rw_now_ms() + ep->io_timeout_ms) == 0)
        ;
    /* Requests unanswered (killed, or dead before): their WRITEs' bytes may
     * still sit in the socket's queue, which a shutdown keeps sending, and
     * the railset carries them again on other rails once this returns.  So
     * the connection is aborted, now that no other thread is inside the
     * socket (the loop dropped the ep, no sender or receiver is left). */
    if (ep->abort_due && ep->fd >= 0 && !ep->tx_busy && ep->rx_owner < RW_TCP_RX_CALLER) {
        ep->abort_due = 0;
        rw_tcp_abort(ep->fd);
    }
    pthread_mutex_unlock(&ep->lock);
}
