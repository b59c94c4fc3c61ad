/* SPDX-License-Identifier: MIT */
/* The receive state machine of a client ep, run by its loop thread on a
 * non-blocking socket: the verdict (lazy_verdict), then for each request in
 * order its response header and, for a READ, its payload.  Small answers
 * are read in bulk into a staging buffer; a big payload goes straight to
 * its buffer (at most RW_TCP_RX_STAGE bytes of it are ever copied). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/time.h"
#include "tcp/tcp_cli_io.h"
#include "tcp/tcp_sock.h"

/* Largest READ payload staged with its answer (copied out of the staging
 * buffer); a bigger one is read straight into its buffer. */
#define RX_SMALL (16u * 1024)
#define RX_QUANTUM (4u << 20)
/* While at least this much of a READ payload is still to come, the loop
 * is woken only once this much is in the socket (SO_RCVLOWAT), rather than
 * at each segment; the rest of the payload is read as it comes.  Far below
 * the rail's receive buffer (RW_TCP_SOCKBUF), so the window stays open. */
#define RX_LOWAT (256u * 1024)

#define WOULD_BLOCK 1

/* How many bytes the receiver may read in bulk: the answers expected to the
 * requests outstanding, in order, up to and including the header of the
 * first READ answer whose payload is big (that payload then goes straight
 * to its buffer).  A refused access answers shorter: the surplus is just
 * staged for the answers after it.  *small is set when an answer is awaited
 * and the oldest one is small (no payload, or one of at most RX_SMALL): the
 * loop spins only for those. */
static size_t rx_want_from(struct rw_tcp_cli_ep *ep, uint64_t skip, int *small)
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
    for (i = ep->answered + skip; i < end && want < RW_TCP_RX_STAGE; i++) {
        const struct rw_wr *w = &ep->ring[i & ep->mask].wr;
        want += RW_TCP_RESP_SIZE;
        if (w->opcode == RW_OP_READ) {
            if (w->length > RX_SMALL)
                break;
            want += w->length;
        }
    }
    pthread_mutex_unlock(&ep->lock);
    return want > RW_TCP_RX_STAGE ? RW_TCP_RX_STAGE : want;
}

/* The bulk read for the answers from the oldest outstanding one on. */
static size_t rx_want(struct rw_tcp_cli_ep *ep, int *small)
{
    return rx_want_from(ep, 0, small);
}

/* Whether this pass found the socket empty (then errno is EAGAIN, as a
 * recv would have set it). */
static int rx_known_dry(const struct rw_tcp_rx *rx)
{
    if (!rx->dry)
        return 0;
    errno = EAGAIN;
    return 1;
}

/* Whether rx is a plain socket that has not hung up: a byte it does not
 * hold yet brings a new edge to the loop's edge-triggered set (or keeps an
 * attending caller's level-triggered wait fd readable), and the next pass
 * (rw_tcp_cli_rx_run) asks the socket again.  TLS may hold decrypted bytes
 * back, and a hang-up or an error reported in the edge that brought the
 * data is still to be read behind it and raises no edge again: neither
 * may be taken for empty. */
static int rx_edge_brings_more(const struct rw_tcp_rx *rx)
{
    return !rx->tls && !atomic_load_explicit(&rx->hup, memory_order_acquire);
}

/* Whether a read of `got` bytes where `asked` were asked leaves the socket
 * known empty for the rest of the pass: a short read of a socket whose
 * next byte brings an edge. */
static int rx_short_is_dry(const struct rw_tcp_rx *rx, size_t got, size_t asked)
{
    return got < asked && rx_edge_brings_more(rx);
}

/* rw_tcp_rx_recv, except on a socket known to be empty in this pass
 * (rx->dry, rx_short_is_dry): that call could only fail with EAGAIN, so it
 * fails so without a system call.  The server's connections do the same
 * (tcp_serve.c, recv_fresh). */
static ssize_t rx_recv(struct rw_tcp_rx *rx, void *buf, size_t n)
{
    ssize_t k;

    if (rx_known_dry(rx))
        return -1;
    k = rw_tcp_rx_recv(rx, buf, n);
    if (k > 0 && rx_short_is_dry(rx, (size_t)k, n))
        rx->dry = 1;
    return k;
}

/* The last `ask` bytes of a big READ payload (into r->dst) and, in the
 * same call, the answers behind it (into the empty staging buffer, as much
 * as rx_want_from allows): a plain socket then needs no second call to
 * find the next header or to learn that none is there yet.  Returns as
 * recv; bytes past `ask` are left staged. */
static ssize_t rx_recv_tail(struct rw_tcp_cli_ep *ep, size_t ask)
{
    struct rw_tcp_rx *rx = ep->rxs.rx;
    int small;
    size_t next = rx_want_from(ep, 1, &small);
    struct iovec iov[2] = {{ep->rxs.dst, ask}, {rx->buf, next}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = next ? 2 : 1};
    ssize_t k;

    if (rx_known_dry(rx))
        return -1;
    k = recvmsg(rx->fd, &mh, MSG_DONTWAIT);
    if (k <= 0)
        return k;
    rx->off = 0;
    rx->len = (size_t)k > ask ? (size_t)k - ask : 0;
    rx->dry = rx_short_is_dry(rx, (size_t)k, ask + next);
    return k;
}

/* Makes n bytes available at rx->buf + rx->off without blocking, asking
 * each recv for up to `want` bytes (clamped to [n, RW_TCP_RX_STAGE]).
 * Adds what it read to *got.  Returns 0, WOULD_BLOCK, RAILWIRE_E_CLOSED
 * (clean EOF with nothing staged) or RAILWIRE_E_IO (error, or EOF inside a
 * frame). */
static int rx_fill(struct rw_tcp_rx *rx, size_t n, size_t want, size_t *got)
{
    size_t a = rw_tcp_rx_avail(rx);

    if (a >= n)
        return 0;
    if (want < n)
        want = n;
    if (want > sizeof(rx->buf))
        want = sizeof(rx->buf);
    memmove(rx->buf, rx->buf + rx->off, a);
    rx->off = 0;
    rx->len = a;
    while (rw_tcp_rx_avail(rx) < n) {
        ssize_t k = rx_recv(rx, rx->buf + rx->len, want - rx->len);
        if (k > 0) {
            rx->len += (size_t)k;
            *got += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return WOULD_BLOCK;
        if (k == 0)
            return rw_tcp_rx_avail(rx) ? RAILWIRE_E_IO : RAILWIRE_E_CLOSED;
        return RAILWIRE_E_IO;
    }
    return 0;
}

/* Records the answer to the oldest outstanding request and publishes what
 * can be. */
static void answer(struct rw_tcp_cli_ep *ep, struct rw_tcp_slot *s, int st)
{
    int wake;

    pthread_mutex_lock(&ep->lock);
    s->status = st;
    s->byte_len = st ? 0 : s->wr.length;
    ep->answered++;
    wake = rw_tcp_cli_publish_locked(ep);
    pthread_mutex_unlock(&ep->lock);
    if (wake)
        rw_tcp_cli_notify(ep);
}

/* Sets the socket's SO_RCVLOWAT before the loop waits for a payload with
 * `left` bytes to come, this pass having read `got` bytes (left 0: the
 * payload is in, back to the default).  The mark goes up when RX_LOWAT or
 * more is to come and this pass read less than that (the loop is ahead of
 * the data: it would wake for each segment); a pass that read as much
 * leaves it as it is, since its wake-ups already come with that much; it
 * comes down once less than RX_LOWAT is to come, so that the mark never
 * waits for bytes beyond the payload.  1 rail of 1 MiB READs at depth 8,
 * server in its own process: 45k-52k epoll_wait a second before, 22k-30k
 * after, and 117-121 ms of client CPU per GB against 133-144
 * (docs/benchmarks.md, twentieth session).  Plain sockets only: TLS
 * records carry more bytes than they decrypt to, and kTLS has its own
 * readiness.  A hang-up or error still wakes the loop at once, and the
 * loop's scan takes the mark down when half the I/O timeout passes with
 * nothing read (a trickle).  A failed setsockopt only leaves the wake-ups
 * as they were. */
static void rx_lowat(struct rw_tcp_cli_ep *ep, uint64_t left, size_t got)
{
    struct rw_tcp_cli_rxs *r = &ep->rxs;
    unsigned want = r->rx->tls || left < RX_LOWAT ? 0 : got < RX_LOWAT ? RX_LOWAT : r->lowat;

    if (want == r->lowat)
        return;
    int v = want ? (int)want : 1;
    if (setsockopt(r->rx->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) == 0)
        r->lowat = want;
}

void rw_tcp_cli_rx_lowat_off(struct rw_tcp_cli_ep *ep)
{
    rx_lowat(ep, 0, 0);
}

/* Receives what is left of the READ payload in progress. */
static int rx_payload(struct rw_tcp_cli_ep *ep, size_t *got, const char **what)
{
    struct rw_tcp_cli_rxs *r = &ep->rxs;

    while (r->left) {
        size_t ask = r->left > RX_QUANTUM ? RX_QUANTUM : (size_t)r->left;
        /* The payload's end, on a plain socket with nothing staged (always
         * so here: rx_header consumed the staged part): with what follows. */
        int tail = ask == r->left && !r->rx->tls && rw_tcp_rx_avail(r->rx) == 0;
        ssize_t k = tail ? rx_recv_tail(ep, ask) : rx_recv(r->rx, r->dst, ask);
        if (k > 0) {
            size_t pay = (size_t)k < ask ? (size_t)k : ask;
            r->dst += pay;
            r->left -= (uint64_t)pay;
            *got += (size_t)k;
            if (*got >= RX_QUANTUM && r->left)
                return 0; /* the caller sees the quantum used */
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            rx_lowat(ep, r->left, *got);
            return WOULD_BLOCK;
        }
        *what = "the connection failed in the middle of READ data";
        return RAILWIRE_E_IO;
    }
    if (r->lowat)
        rx_lowat(ep, 0, 0);
    pthread_mutex_lock(&ep->lock);
    struct rw_tcp_slot *s = &ep->ring[ep->answered & ep->mask];
    pthread_mutex_unlock(&ep->lock);
    answer(ep, s, 0);
    return 0;
}

/* Reads the verdict of a lazy_verdict rail. */
static int rx_verdict(struct rw_tcp_cli_ep *ep, size_t *got, const char **what)
{
    struct rw_tcp_rx *rx = ep->rxs.rx;
    int rc = rx_fill(rx, 1, 1, got);
    uint8_t v;

    if (rc) {
        if (rc != WOULD_BLOCK)
            *what = rc == RAILWIRE_E_CLOSED ? "the server closed the rail without a verdict"
                                            : "receiving failed (connection reset or timed out)";
        return rc;
    }
    v = rx->buf[rx->off];
    rw_tcp_rx_consume(rx, 1);
    ep->need_verdict = 0;
    if (v != RW_TCP_VERDICT_OK) {
        *what = "the server refused the rail (unknown endpoint or wrong psn; see the server's log)";
        return RAILWIRE_E_REFUSED;
    }
    return 0;
}

/* Reads one response header and starts its payload.  Returns 0 (progress),
 * WOULD_BLOCK (*small set as rx_want), or a code with *what set. */
static int rx_header(struct rw_tcp_cli_ep *ep, size_t *got, int *small, const char **what)
{
    struct rw_tcp_rx *rx = ep->rxs.rx;
    struct rw_tcp_resp resp;
    struct rw_tcp_slot *s;
    uint64_t idx;
    int rc;

    if (rw_tcp_rx_avail(rx) < RW_TCP_RESP_SIZE) {
        size_t want = rx_want(ep, small);
        /* Nothing due (every request answered), nothing staged, no hang-up
         * noted: the socket holds no answer, since an answer only follows
         * its request, counted in ep->posted before it is sent.  The pass
         * ends without the recv that could only fail with EAGAIN (about
         * half of the client's EAGAIN receives at 64 rails of 64 KiB
         * READs, docs/tcp-transport.md).  A later answer brings a new edge;
         * a hang-up is noted by the loop (rx->hup) and read.  Bytes the
         * server sends unasked wait for the next answer's header check (a
         * protocol error then). */
        if (!want && !rw_tcp_rx_avail(rx) && rx_edge_brings_more(rx))
            return WOULD_BLOCK; /* *small is 0: nothing to spin for */
        rc = rx_fill(rx, RW_TCP_RESP_SIZE, want, got);
        if (rc) {
            if (rc != WOULD_BLOCK)
                *what = rc == RAILWIRE_E_CLOSED ? "the server closed the connection"
                                                : "receiving failed (connection reset or timed out)";
            return rc;
        }
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
    if (resp.status == RW_TCP_ST_ACCESS && resp.length == 0) {
        answer(ep, s, RAILWIRE_E_REMOTE_ACCESS);
        return 0;
    }
    if (resp.status != RW_TCP_ST_OK) {
        *what = "the server sent an unknown status (protocol error)";
        return RAILWIRE_E_PROTOCOL;
    }
    if (resp.length != (s->wr.opcode == RW_OP_READ ? s->wr.length : 0)) {
        *what = "the server's response has the wrong length (protocol error)";
        return RAILWIRE_E_PROTOCOL;
    }
    if (!resp.length) {
        answer(ep, s, 0);
        return 0;
    }
    /* The staged part of the payload first, then the rest straight in. */
    {
        size_t c = rw_tcp_rx_avail(rx);
        if (c > resp.length)
            c = resp.length;
        memcpy(s->wr.local, rx->buf + rx->off, c);
        rw_tcp_rx_consume(rx, c);
        ep->rxs.dst = (uint8_t *)s->wr.local + c;
        ep->rxs.left = resp.length - c;
    }
    return rx_payload(ep, got, what);
}

void rw_tcp_cli_rx_hup(struct rw_tcp_cli_ep *ep)
{
    atomic_store_explicit(&ep->rxs.rx->hup, 1, memory_order_release);
}

int rw_tcp_cli_rx_run(struct rw_tcp_cli_ep *ep, uint64_t *spin_ns)
{
    const char *what = "receiving failed";
    size_t got = 0;
    int rc = 0, small = 0;

    ep->rxs.rx->dry = 0; /* a new pass asks the socket first */
    while (got < RX_QUANTUM) {
        if (ep->rx_owner == RW_TCP_RX_CALLER && rw_tcp_cli_rx_idle(ep))
            break; /* an attending caller stops at its last answer */
        if (ep->need_verdict)
            rc = rx_verdict(ep, &got, &what);
        else if (ep->rxs.left)
            rc = rx_payload(ep, &got, &what);
        else
            rc = rx_header(ep, &got, &small, &what);
        if (rc)
            break;
    }
    if (got) {
        pthread_mutex_lock(&ep->lock);
        ep->rx_mark_ms = rw_now_ms();
        pthread_mutex_unlock(&ep->lock);
    }
    if (rc == WOULD_BLOCK) {
        if (small || (ep->rxs.left && ep->rxs.left <= RX_SMALL))
            if (ep->busy_poll_ns > *spin_ns)
                *spin_ns = ep->busy_poll_ns;
        return 0;
    }
    if (rc) {
        rw_tcp_cli_fail(ep, rc == RAILWIRE_E_REFUSED ? rc : RAILWIRE_E_RAIL_DOWN, what);
        return 0;
    }
    return 1; /* quantum used */
}
