/* SPDX-License-Identifier: MIT */
#include "tcp/tcp_cli_io.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_sock.h"

#define TX_BATCH 64 /* requests per sendmsg */
/* Bytes (headers + WRITE payloads) per sender batch beyond its first
 * request: a batch's completions are published when its send returns, so
 * big batches would delay them. */
#define TX_BATCH_BYTES (1u << 20)

static void notify(struct rw_tcp_cli_ep *ep)
{
    uint64_t one = 1;
    /* EAGAIN means the counter is already huge: still readable. */
    if (write(ep->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rw_warn_rl("tcp: cannot signal the completion eventfd: %s", strerror(errno));
}

void rw_tcp_cli_fail(struct rw_tcp_cli_ep *ep, int err, const char *what)
{
    pthread_mutex_lock(&ep->lock);
    if (ep->state == RW_TCP_CLI_UP) {
        ep->state = RW_TCP_CLI_DEAD;
        ep->err = err;
        if (what)
            rw_warn_rl("tcp: rail qpn 0x%08x (%s) is down: %s; %llu outstanding request(s) fail "
                    "with rail-down", (unsigned)ep->base.local.qpn, ep->dom->base.name, what,
                    (unsigned long long)(ep->posted - ep->done));
        shutdown(ep->fd, SHUT_RDWR);
        pthread_cond_broadcast(&ep->cond);
    }
    pthread_mutex_unlock(&ep->lock);
}

/* With ep->lock held: publishes the completions that are both answered and
 * fully sent (see the counters in tcp_internal.h).  Returns 1 when the
 * completion queue went from empty to non-empty (the waiter must be
 * notified). */
static int publish_locked(struct rw_tcp_cli_ep *ep)
{
    uint64_t lim = ep->answered < ep->sent ? ep->answered : ep->sent;
    int wake;

    if (lim <= ep->done)
        return 0;
    wake = ep->done == ep->polled;
    ep->done = lim;
    return wake;
}

/* Called by each I/O thread as it ends; the last one completes what is
 * still outstanding (neither thread touches a buffer any more). */
static void thread_exit(struct rw_tcp_cli_ep *ep)
{
    int wake = 0;

    pthread_mutex_lock(&ep->lock);
    if (--ep->threads_live == 0) {
        wake = ep->done < ep->posted && ep->done == ep->polled;
        /* Answered entries keep their result (no thread runs any more);
         * the rest never got theirs. */
        for (ep->done = ep->answered; ep->done < ep->posted; ep->done++) {
            struct rw_tcp_slot *s = &ep->ring[ep->done & ep->mask];
            s->status = RAILWIRE_E_RAIL_DOWN;
            s->byte_len = 0;
        }
        ep->answered = ep->posted;
        ep->sent = ep->posted;
        ep->sent_off = 0;
    }
    pthread_mutex_unlock(&ep->lock);
    if (wake)
        notify(ep);
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

static void *tx_main(void *arg)
{
    struct rw_tcp_cli_ep *ep = arg;
    struct iovec iov[2 * TX_BATCH];
    uint8_t hdrs[TX_BATCH][RW_TCP_REQ_SIZE];

    for (;;) {
        uint64_t first, cnt;
        size_t skip;
        int n, rc, wake;

        pthread_mutex_lock(&ep->lock);
        while (ep->state == RW_TCP_CLI_UP && (ep->sent == ep->posted || ep->tx_busy))
            rw_tcp_cond_wait_until(&ep->cond, &ep->lock, rw_now_ms() + ep->io_timeout_ms);
        if (ep->state != RW_TCP_CLI_UP) {
            pthread_mutex_unlock(&ep->lock);
            break;
        }
        ep->tx_busy = 1;
        first = ep->sent;
        skip = ep->sent_off;
        cnt = ep->posted - ep->sent;
        if (cnt > TX_BATCH)
            cnt = TX_BATCH;
        {
            size_t bytes = entry_bytes(&ep->ring[first & ep->mask]);
            uint64_t k;
            for (k = 1; k < cnt; k++) {
                bytes += entry_bytes(&ep->ring[(first + k) & ep->mask]);
                if (bytes > TX_BATCH_BYTES)
                    break;
            }
            cnt = k;
        }
        pthread_mutex_unlock(&ep->lock);

        n = build_iov(ep, first, cnt, skip, iov, hdrs);
        rc = rw_tcp_sendv(ep->fd, iov, n, 0);
        pthread_mutex_lock(&ep->lock);
        ep->tx_busy = 0;
        wake = 0;
        if (!rc) {
            ep->sent += cnt;
            ep->sent_off = 0;
            wake = publish_locked(ep);
        }
        pthread_mutex_unlock(&ep->lock);
        if (wake)
            notify(ep);
        if (rc) {
            rw_tcp_cli_fail(ep, rc == RAILWIRE_E_TIMEOUT ? RAILWIRE_E_TIMEOUT : RAILWIRE_E_RAIL_DOWN,
                            rc == RAILWIRE_E_TIMEOUT ? "the server stopped reading requests"
                                                     : "sending failed (connection reset or closed)");
            break;
        }
    }
    thread_exit(ep);
    return NULL;
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
    if (ep->tx_busy || ep->sent != first || cnt > TX_BATCH)
        goto to_thread;
    for (i = 0; i < cnt; i++)
        total += entry_bytes(&ep->ring[(first + i) & ep->mask]);
    if (total > RW_TCP_INLINE_MAX)
        goto to_thread;
    ep->tx_busy = 1;
    pthread_mutex_unlock(&ep->lock);
    n = build_iov(ep, first, cnt, 0, iov, hdrs);
    {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        do
            k = sendmsg(ep->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
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
    /* Account whole entries; a partial one is finished by the thread. */
    for (i = 0; i < cnt; i++) {
        size_t b = entry_bytes(&ep->ring[(first + i) & ep->mask]);
        if ((size_t)k < b)
            break;
        k -= (ssize_t)b;
        ep->sent++;
    }
    ep->sent_off = (size_t)k;
    if (publish_locked(ep))
        notify(ep);
    if (err) {
        pthread_mutex_unlock(&ep->lock);
        rw_tcp_cli_fail(ep, RAILWIRE_E_RAIL_DOWN, "sending failed (connection reset or closed)");
        pthread_mutex_lock(&ep->lock);
        return;
    }
to_thread:
    if (ep->sent != ep->posted)
        pthread_cond_signal(&ep->cond);
}

/* Largest READ payload the receiver stages with its answer (copied out of
 * the staging buffer); a bigger one is read straight into its buffer. */
#define RX_SMALL (16u * 1024)

/* How many bytes the receiver may read in bulk: the answers expected to the
 * requests outstanding, in order, up to and including the header of the
 * first READ answer whose payload is big (that payload then goes straight
 * to its buffer).  A refused access answers shorter: the surplus is just
 * staged for the answers after it.  *small is set when an answer is awaited
 * and the oldest one is small (no payload, or one of at most RX_SMALL): the
 * receiver spins only for those (spinning on recv while a big payload
 * streams in halved READ 64 KiB on loopback). */
static size_t rx_want(struct rw_tcp_cli_ep *ep, int *small)
{
    size_t want = 0;
    uint64_t i, end;

    pthread_mutex_lock(&ep->lock);
    end = ep->posted;
    *small = 0;
    if (ep->answered < end) {
        const struct rw_wr *w = &ep->ring[ep->answered & ep->mask].wr;
        *small = w->opcode != RW_OP_READ || w->length <= RX_SMALL;
    }
    for (i = ep->answered; i < end && want < RW_TCP_RX_STAGE; i++) {
        const struct rw_wr *w = &ep->ring[i & ep->mask].wr;
        want += RW_TCP_RESP_SIZE;
        if (w->opcode == RW_OP_READ) {
            if (w->length > RX_SMALL)
                break;
            want += w->length;
        }
    }
    pthread_mutex_unlock(&ep->lock);
    return want;
}

/* Reads one response (and its payload) for the oldest outstanding WR.
 * Returns 0, or a code with *what set. */
static int rx_one(struct rw_tcp_cli_ep *ep, struct rw_tcp_rx *rx, const char **what)
{
    struct rw_tcp_resp resp;
    struct rw_tcp_slot *s;
    uint64_t idx;
    int rc, st, wake;

    /* Spin only for small answers to requests in flight (see rx_want), and
     * not again after an I/O timeout (the server is silent: sleep until it
     * speaks). */
    uint64_t spin = ep->busy_poll_ns;

    for (;;) {
        if (ep->need_verdict) {
            rc = rw_tcp_rx_need(rx, 1, 1, 0);
        } else if (rw_tcp_rx_avail(rx) >= RW_TCP_RESP_SIZE) {
            rc = 0;
        } else {
            int small;
            size_t want = rx_want(ep, &small);
            rc = rw_tcp_rx_need(rx, RW_TCP_RESP_SIZE, want, small ? spin : 0);
        }
        if (rc != RAILWIRE_E_TIMEOUT || rw_tcp_rx_avail(rx))
            break;
        spin = 0;
        /* No byte for io_timeout.  Fine when nothing is awaited, or while the
         * sender is still pushing requests (its own timeout watches that). */
        pthread_mutex_lock(&ep->lock);
        st = ep->state == RW_TCP_CLI_UP && ep->answered < ep->posted && ep->sent == ep->posted;
        wake = ep->state != RW_TCP_CLI_UP;
        pthread_mutex_unlock(&ep->lock);
        if (wake)
            return RAILWIRE_E_CLOSED;
        if (st) {
            *what = "no response from the server within the I/O timeout";
            return RAILWIRE_E_TIMEOUT;
        }
    }
    if (rc) {
        *what = rc == RAILWIRE_E_CLOSED ? (ep->need_verdict
                                               ? "the server closed the rail without a verdict"
                                               : "the server closed the connection")
                                        : "receiving failed (connection reset or timed out)";
        return rc;
    }
    if (ep->need_verdict) {
        uint8_t v = rx->buf[rx->off];
        rw_tcp_rx_consume(rx, 1);
        ep->need_verdict = 0;
        if (v != RW_TCP_VERDICT_OK) {
            *what = "the server refused the rail (unknown endpoint or wrong psn; see the "
                    "server's log)";
            return RAILWIRE_E_REFUSED;
        }
        return 0;
    }
    rw_tcp_resp_decode(rx->buf + rx->off, &resp);
    rw_tcp_rx_consume(rx, RW_TCP_RESP_SIZE);

    pthread_mutex_lock(&ep->lock);
    idx = ep->answered;
    rc = idx < ep->posted ? 0 : RAILWIRE_E_PROTOCOL;
    pthread_mutex_unlock(&ep->lock);
    if (rc || resp.tag != idx) {
        *what = "the server answered a request that was not sent (protocol error)";
        return RAILWIRE_E_PROTOCOL;
    }
    s = &ep->ring[idx & ep->mask];
    if (resp.status == RW_TCP_ST_OK) {
        st = 0;
        if (resp.length != (s->wr.opcode == RW_OP_READ ? s->wr.length : 0)) {
            *what = "the server's response has the wrong length (protocol error)";
            return RAILWIRE_E_PROTOCOL;
        }
        if (resp.length) {
            rc = rw_tcp_rx_read(rx, s->wr.local, resp.length);
            if (rc) {
                *what = "the connection failed in the middle of READ data";
                return rc;
            }
        }
    } else if (resp.status == RW_TCP_ST_ACCESS && resp.length == 0) {
        st = RAILWIRE_E_REMOTE_ACCESS;
    } else {
        *what = "the server sent an unknown status (protocol error)";
        return RAILWIRE_E_PROTOCOL;
    }
    pthread_mutex_lock(&ep->lock);
    s->status = st;
    s->byte_len = st ? 0 : s->wr.length;
    ep->answered++;
    wake = publish_locked(ep);
    pthread_mutex_unlock(&ep->lock);
    if (wake)
        notify(ep);
    return 0;
}

static void *rx_main(void *arg)
{
    struct rw_tcp_cli_ep *ep = arg;
    struct rw_tcp_rx *rx = malloc(sizeof(*rx));
    const char *what = "out of memory in the receive thread";
    int rc = RAILWIRE_E_NOMEM;

    if (rx) {
        rx->fd = ep->fd;
        rx->off = rx->len = 0;
        while (!(rc = rx_one(ep, rx, &what)))
            ;
    }
    rw_tcp_cli_fail(ep, rc == RAILWIRE_E_TIMEOUT || rc == RAILWIRE_E_REFUSED ? rc : RAILWIRE_E_RAIL_DOWN,
                    what);
    free(rx);
    thread_exit(ep);
    return NULL;
}

int rw_tcp_cli_io_start(struct rw_tcp_cli_ep *ep, int fd)
{
    pthread_mutex_lock(&ep->lock);
    ep->fd = fd;
    ep->state = RW_TCP_CLI_UP;
    ep->threads_live = 1;
    if (pthread_create(&ep->tx, NULL, tx_main, ep)) {
        ep->threads_live = 0;
        ep->state = RW_TCP_CLI_DEAD;
        ep->threads_joined = 1;
        pthread_mutex_unlock(&ep->lock);
        rw_err("tcp: cannot start the rail's send thread");
        return RAILWIRE_E_SYSTEM;
    }
    ep->threads_live = 2;
    if (pthread_create(&ep->rx, NULL, rx_main, ep)) {
        ep->threads_live = 1;
        pthread_mutex_unlock(&ep->lock);
        rw_err("tcp: cannot start the rail's receive thread");
        rw_tcp_cli_fail(ep, RAILWIRE_E_SYSTEM, NULL);
        pthread_join(ep->tx, NULL);
        pthread_mutex_lock(&ep->lock);
        ep->threads_joined = 1;
        pthread_mutex_unlock(&ep->lock);
        return RAILWIRE_E_SYSTEM;
    }
    pthread_mutex_unlock(&ep->lock);
    return 0;
}

void rw_tcp_cli_ep_kill(struct rw_tcp_cli_ep *ep)
{
    int join;

    pthread_mutex_lock(&ep->lock);
    if (ep->state == RW_TCP_CLI_UP) {
        ep->state = RW_TCP_CLI_DEAD;
        ep->err = RAILWIRE_E_CLOSED;
        rw_debug("tcp: rail qpn 0x%08x killed with %llu outstanding request(s)",
                 (unsigned)ep->base.local.qpn, (unsigned long long)(ep->posted - ep->done));
        shutdown(ep->fd, SHUT_RDWR);
        pthread_cond_broadcast(&ep->cond);
    } else if (ep->state == RW_TCP_CLI_NEW) {
        ep->state = RW_TCP_CLI_DEAD;
    }
    join = ep->fd >= 0 && !ep->threads_joined;
    ep->threads_joined = 1;
    pthread_mutex_unlock(&ep->lock);
    if (join) {
        pthread_join(ep->tx, NULL);
        pthread_join(ep->rx, NULL);
    }
    /* An ep_post of another thread may still be writing a small request
     * without blocking: let it finish before the buffers are released. */
    pthread_mutex_lock(&ep->lock);
    while (ep->tx_busy &&
           rw_tcp_cond_wait_until(&ep->cond, &ep->lock, rw_now_ms() + ep->io_timeout_ms) == 0)
        ;
    pthread_mutex_unlock(&ep->lock);
}
