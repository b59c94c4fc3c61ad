/* SPDX-License-Identifier: MIT */
/* The state machine of one attached rail connection, run by its event loop
 * (tcp_loop.c) on a non-blocking socket: read a request header, check it
 * against the regions exposed to this ep, receive a WRITE payload straight
 * into the region or send a READ answer straight from it, in bounded
 * pieces as the socket drains.  A refused access gets a status and the
 * connection keeps going; bytes that break the framing close it.  Nothing
 * here blocks: a connection that cannot move waits for its socket (epoll),
 * its queue cap or the budget (the loop's tick list). */
#include <errno.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_loop.h"
#include "tcp/tcp_serve_splice.h"
#include "tcp/tcp_serve_stage.h"

#define LOUD_REFUSALS 3 /* refusals per connection logged as warnings */
/* Largest READ payload whose answer may be sent with MSG_MORE (the same
 * "small" as the client's inline sends). */
#define RW_TCP_MORE_MAX (16u * 1024)
#define PIECE (256u * 1024)          /* most bytes per sendmsg */
#define MIN_PIECE (16u * 1024)       /* least room worth a sendmsg mid-answer */
#define QUANTUM (2u << 20)           /* bytes moved per run before yielding */
#define EVICT_MS 1000                /* stall that makes queued bytes evictable */

enum step { S_CONT = RW_TCP_S_CONT, S_WAIT = RW_TCP_S_WAIT, S_YIELD = RW_TCP_S_YIELD,
             S_CLOSE = RW_TCP_S_CLOSE };

static const struct rw_tcp_key *find_key(const struct rw_tcp_srv_ep *ep, uint32_t rkey)
{
    size_t lo = 0, hi = ep->n_keys;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ep->keys[mid].rkey < rkey)
            lo = mid + 1;
        else if (ep->keys[mid].rkey > rkey)
            hi = mid;
        else
            return &ep->keys[mid];
    }
    return NULL;
}

/* Returns NULL with *why set when the request may not touch memory, else
 * where its bytes live.  remote_addr is in the region's published (opaque)
 * base, translated here. */
static uint8_t *check_access(const struct rw_tcp_srv_ep *ep, const struct rw_tcp_req *r,
                             const char **why, const struct rw_tcp_key **kp)
{
    const struct rw_tcp_key *k = find_key(ep, r->rkey);
    *kp = k;
    int need = r->op == RW_TCP_OP_WRITE ? RW_ACCESS_REMOTE_WRITE : RW_ACCESS_REMOTE_READ;
    uint64_t off;

    if (!k) {
        *why = "rkey not published to this session";
        return NULL;
    }
    if (!(k->access & need)) {
        *why = r->op == RW_TCP_OP_WRITE ? "WRITE to a read-only region" : "READ of a write-only region";
        return NULL;
    }
    if (r->remote_addr < k->base) {
        *why = "address below the region";
        return NULL;
    }
    off = r->remote_addr - k->base;
    if (off > k->len || r->length > k->len - off) {
        *why = "range beyond the end of the region";
        return NULL;
    }
    return k->addr + off;
}

void rw_tcp_conn_init(struct rw_tcp_conn *c, struct rw_tcp_srv_ep *ep, int fd)
{
    memset(c, 0, sizeof(*c));
    c->ep = ep;
    c->fd = fd;
    c->state = RW_TCP_C_HDR;
    c->st = c->stage;
    rw_evloop_member_init(&c->member);
    c->last_progress_ms = rw_now_ms();
    rw_tcp_budget_conn_add();
}

static size_t staged(const struct rw_tcp_conn *c)
{
    return c->st_len - c->st_off;
}

/* Re-reads the bytes still in the kernel's send queue (and in the answers'
 * pipe, tcp_serve_splice.c) and returns what drained to the budget.
 * Returns 1 if anything drained. */
static int refresh(struct rw_tcp_conn *c, int64_t now)
{
    int outq = 0;
    uint64_t queued;

    if (c->charge == 0)
        return 0;
    if (ioctl(c->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
        return 0;
    queued = (uint64_t)outq + c->pipe_len;
    if (queued >= c->charge)
        return 0;
    rw_tcp_budget_give(c->charge - queued);
    c->charge = queued;
    c->last_progress_ms = now;
    return 1;
}

/* A server connection's receive buffer is sized for at least this cap:
 * the kernel offers loopback peers an initial window of ten 64 KiB
 * segments, and the buffer must hold it (docs/tcp-transport.md). */
#define RW_TCP_RCVBUF_FLOOR (2ull << 20)

/* Sizes the send buffer just under the connection's cap (the kernel
 * doubles the value it is given and counts overhead in it), so a full
 * socket, not the cap, is what stops a connection: EPOLLOUT then wakes it.
 * The receive buffer is sized once, before the verdict
 * (rw_tcp_conn_size_rcvbuf): shrinking it under a window already offered
 * makes the kernel drop data in flight, and the client's TCP then waits a
 * 200 ms retransmission timeout. */
static void size_buffers(struct rw_tcp_conn *c, uint64_t cap)
{
    int v;

    if (c->cap_set && cap * 5 >= c->cap_set * 4 && cap * 4 <= c->cap_set * 5)
        return;
    v = (int)(cap * 7 / 16);
    if (setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) < 0)
        rw_warn_rl("tcp: setsockopt(SO_SNDBUF=%d) failed: %s", v, strerror(errno));
    c->cap_set = cap;
}

void rw_tcp_conn_size_rcvbuf(int fd, const struct rw_tcp_sess *sess)
{
    uint64_t cap = rw_tcp_budget_cap(sess);
    int v = (int)((cap > RW_TCP_RCVBUF_FLOOR ? cap : RW_TCP_RCVBUF_FLOOR) * 7 / 16);

    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) < 0)
        rw_warn_rl("tcp: setsockopt(SO_RCVBUF=%d) failed: %s", v, strerror(errno));
}

static void log_refusal(struct rw_tcp_conn *c, const struct rw_tcp_req *r, const char *why)
{
    if (++c->refusals <= LOUD_REFUSALS)
        rw_warn_rl("tcp: qpn 0x%08x: refused %s of %u bytes at 0x%llx rkey 0x%08x: %s",
                   (unsigned)c->ep->base.local.qpn, r->op == RW_TCP_OP_WRITE ? "WRITE" : "READ",
                   (unsigned)r->length, (unsigned long long)r->remote_addr, (unsigned)r->rkey, why);
    else
        rw_debug_rl("tcp: qpn 0x%08x: refused an access: %s", (unsigned)c->ep->base.local.qpn, why);
}

/* Decodes the staged header at c->st + c->st_off into r.  Returns 0 when
 * it is well formed (else the connection must close). */
static int decode_staged(const struct rw_tcp_conn *c, struct rw_tcp_req *r)
{
    return rw_tcp_req_decode(c->st + c->st_off, r) ||
           (r->op != RW_TCP_OP_READ && r->op != RW_TCP_OP_WRITE) || r->length == 0 ||
           r->length > c->ep->max_msg;
}

/* 1 when the next staged request is well formed and can be answered
 * without reading from the socket: its header is staged, and a WRITE's
 * payload too. */
static int next_staged_whole(const struct rw_tcp_conn *c)
{
    struct rw_tcp_req r;

    if (staged(c) < RW_TCP_REQ_SIZE || decode_staged(c, &r))
        return 0;
    return r.op == RW_TCP_OP_READ || staged(c) - RW_TCP_REQ_SIZE >= r.length;
}

static void set_response(struct rw_tcp_conn *c, uint32_t status, uint32_t length)
{
    struct rw_tcp_resp resp = {.tag = c->req.tag, .status = status, .length = length};
    /* counted before the answer leaves, so a client that has seen its
     * completion also sees it counted */
    rw_tcp_served_count(&c->ep->dom->served, c->req.op, c->req.length, status == RW_TCP_ST_OK);
    if (c->resp_off == c->resp_len)
        c->resp_off = c->resp_len = 0;
    rw_tcp_resp_encode(c->resp + c->resp_len, &resp);
    c->resp_len += RW_TCP_RESP_SIZE;
    c->left = length;
    /* An answer without payload (a WRITE's, a refusal) waits for the next
     * one when that can be answered from what is staged, without reading
     * the socket: the next answer that is not held back (in the same run)
     * sends them all in one sendmsg, in order.  So a held answer never
     * waits for the client. */
    if (length == 0 && c->resp_len + RW_TCP_RESP_SIZE <= sizeof(c->resp) && next_staged_whole(c)) {
        c->state = RW_TCP_C_HDR;
        return;
    }
    /* More requests already staged: let the kernel coalesce small answers.
     * Never for a big READ answer: MSG_MORE holds the payload's last
     * partial segment back until the next answer is sent, so client and
     * server would run in lockstep (see docs/tcp-transport.md). */
    c->more = staged(c) >= RW_TCP_REQ_SIZE && length <= RW_TCP_MORE_MAX;
    c->state = RW_TCP_C_TX;
}

/* A whole header is staged: decode and check it, and set up its payload or
 * its answer. */
static enum step start_request(struct rw_tcp_conn *c, const char **why)
{
    struct rw_tcp_req *r = &c->req;
    const char *refused = NULL;
    const struct rw_tcp_key *k = NULL;

    c->staged = 0;
    if (decode_staged(c, r)) {
        rw_warn_rl("tcp: qpn 0x%08x: malformed request (op %u, length %u); closing the rail "
                   "connection", (unsigned)c->ep->base.local.qpn, (unsigned)r->op,
                   (unsigned)r->length);
        *why = NULL;
        return S_CLOSE;
    }
    c->st_off += RW_TCP_REQ_SIZE;
    c->small_writes = r->op == RW_TCP_OP_WRITE && r->length <= RW_TCP_BULK_MAX;
    c->mem = check_access(c->ep, r, &refused, &k);
    c->by_ref = c->mem && (k->access & RW_ACCESS_READ_BY_REFERENCE);
    if (!c->mem)
        log_refusal(c, r, refused);
    else if (k->stage_pool && rw_tcp_sst_begin(c, k) < 0) {
        *why = "the CUDA memory of the request could not be staged (see the log)";
        return S_CLOSE;
    }
    if (r->op == RW_TCP_OP_WRITE) {
        c->left = r->length;
        c->state = RW_TCP_C_WPAY;
    } else if (c->mem) {
        set_response(c, RW_TCP_ST_OK, r->length);
    } else {
        set_response(c, RW_TCP_ST_ACCESS, 0);
    }
    return S_CONT;
}

static enum step recv_err(struct rw_tcp_conn *c, ssize_t k, int inside, const char **why)
{
    return (enum step)rw_tcp_conn_recv_err(c, k, inside, why);
}

/* rw_tcp_conn_recv of up to n bytes, retried on EINTR, except on a socket
 * known to be empty (c->rx_dry): that call could only fail with EAGAIN, so
 * it fails so without a system call.  A short read of a plain socket marks
 * it empty until the loop sees its next input edge (TLS may hold decrypted
 * bytes back, so only a plain socket is known dry), unless the socket hung
 * up (c->rx_hup): the end of stream or error behind the bytes came in the
 * same edge and raises none again. */
static ssize_t recv_fresh(struct rw_tcp_conn *c, void *buf, size_t n)
{
    ssize_t k;

    if (c->rx_dry) {
        errno = EAGAIN;
        return -1;
    }
    do {
        k = rw_tcp_conn_recv(c, buf, n);
    } while (k < 0 && errno == EINTR);
    if (k > 0)
        c->rx_dry = !c->tls && !c->rx_hup && (size_t)k < n;
    return k;
}

static enum step step_header(struct rw_tcp_conn *c, int64_t now, const char **why)
{
    size_t cap = sizeof(c->stage);
    uint8_t *buf = c->stage;
    ssize_t k;

    if (staged(c) >= RW_TCP_REQ_SIZE)
        return start_request(c, why);
    /* Small WRITEs: read several with their payloads at once (a failed
     * allocation just keeps the small buffer). */
    if (c->small_writes && !c->bulk)
        c->bulk = malloc(RW_TCP_STAGE_BULK);
    if (c->small_writes && c->bulk) {
        buf = c->bulk;
        cap = RW_TCP_STAGE_BULK;
    }
    /* Less than a header is staged: move it to the front of the buffer
     * this recv fills. */
    memmove(buf, c->st + c->st_off, staged(c));
    c->st_len = staged(c);
    c->st_off = 0;
    c->st = buf;
    k = recv_fresh(c, c->st + c->st_len, cap - c->st_len);
    if (k <= 0)
        return recv_err(c, k, staged(c) > 0, why);
    c->st_len += (size_t)k;
    c->last_progress_ms = now;
    return S_CONT;
}

static enum step step_payload(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum,
                              const char **why)
{
    size_t n = staged(c) < c->left ? staged(c) : (size_t)c->left;

    if (c->staged) {
        enum rw_tcp_step s = rw_tcp_sst_payload(c, now, quantum, why);
        if (s != RW_TCP_S_DONE)
            return (enum step)s;
        set_response(c, RW_TCP_ST_OK, 0);
        return S_CONT;
    }
    if (n) {
        if (c->mem) {
            memcpy(c->mem, c->st + c->st_off, n);
            c->mem += n;
        }
        c->st_off += n;
        c->left -= n;
    }
    while (c->left) {
        size_t want = c->left < *quantum ? (size_t)c->left : (size_t)*quantum;
        ssize_t k;

        if (!c->mem && want > sizeof(c->loop->scratch))
            want = sizeof(c->loop->scratch);
        k = recv_fresh(c, c->mem ? (void *)c->mem : (void *)c->loop->scratch, want);
        if (k <= 0)
            return recv_err(c, k, 1, why);
        if (c->mem)
            c->mem += k;
        c->left -= (uint64_t)k;
        c->last_progress_ms = now;
        *quantum = *quantum > (uint64_t)k ? *quantum - (uint64_t)k : 0;
        if (*quantum == 0 && c->left)
            return S_YIELD;
    }
    set_response(c, c->mem ? RW_TCP_ST_OK : RW_TCP_ST_ACCESS, 0);
    return S_CONT;
}

enum rw_tcp_step rw_tcp_conn_reserve(struct rw_tcp_conn *c, int64_t now, uint64_t want,
                                     uint64_t need, uint64_t *got)
{
    uint64_t cap = rw_tcp_budget_cap(c->ep->sess);

    size_buffers(c, cap);
    /* The charge may be stale (it is re-read only here and on ticks):
     * re-read it once before waiting at the cap or cutting this piece
     * short, or an answer that fits goes out in two sends. */
    if (c->charge + want > cap)
        refresh(c, now);
    if (c->charge + need > cap) {
        c->wait = RW_TCP_W_CAP;
        return RW_TCP_S_WAIT;
    }
    if (want > cap - c->charge)
        want = cap - c->charge;
    *got = rw_tcp_budget_take(want);
    if (*got < need) {
        rw_tcp_budget_give(*got);
        refresh(c, now);
        c->wait = RW_TCP_W_BUDGET;
        return RW_TCP_S_WAIT;
    }
    return RW_TCP_S_CONT;
}

static enum step step_send(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum, const char **why)
{
    if (rw_tcp_splice_wanted(c, now))
        return (enum step)rw_tcp_splice_send(c, now, quantum, why);
    for (;;) {
        size_t hdr = c->resp_len - c->resp_off;
        uint64_t total = hdr + c->left, want, need, got;
        struct iovec iov[2];
        struct msghdr mh = {.msg_iov = iov};
        const uint8_t *src = c->mem;
        ssize_t k;

        if (total == 0) {
            c->state = RW_TCP_C_HDR;
            return S_CONT;
        }
        if (c->staged && c->left) {
            /* CUDA memory: only what a completed copy put in a chunk */
            uint64_t avail;
            enum rw_tcp_step s = rw_tcp_sst_window(c, hdr, &src, &avail, why);
            if (s != RW_TCP_S_CONT)
                return (enum step)s;
            total = hdr + avail;
        }
        /* PIECE bytes of payload, with what is left of the header riding
         * along: a cap on header + payload would leave the header's length
         * of a 1 MiB answer for a fifth send of its own. */
        want = total < PIECE + hdr ? total : PIECE + hdr;
        need = want < MIN_PIECE ? want : MIN_PIECE;
        if (c->tls_retry > need) {
            /* TLS: a write that wanted a retry sealed these bytes already;
             * the next offer starts with them and is at least as long. */
            need = c->tls_retry;
            if (want < need)
                want = need;
        }
        enum step s = (enum step)rw_tcp_conn_reserve(c, now, want, need, &got);
        if (s != S_CONT)
            return s;
        if (hdr > got)
            hdr = (size_t)got;
        iov[0] = (struct iovec){.iov_base = c->resp + c->resp_off, .iov_len = hdr};
        iov[1] = (struct iovec){.iov_base = (void *)src, .iov_len = (size_t)(got - hdr)};
        mh.msg_iovlen = iov[1].iov_len ? 2 : 1;
        if (!hdr) {
            mh.msg_iov = &iov[1];
            mh.msg_iovlen = 1;
        }
        do {
            k = rw_tcp_conn_sendmsg(c, &mh, MSG_NOSIGNAL | MSG_DONTWAIT | (c->more ? MSG_MORE : 0));
        } while (k < 0 && errno == EINTR);
        if (k < 0) {
            if (c->tls && (errno == EAGAIN || errno == EWOULDBLOCK))
                c->tls_retry = got;
            rw_tcp_budget_give(got);
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->wait = RW_TCP_W_OUT;
                return S_WAIT;
            }
            *why = "connection error or reset";
            return S_CLOSE;
        }
        rw_tcp_budget_give(got - (uint64_t)k);
        /* TLS may have sealed the rest of what was offered (conservative) */
        c->tls_retry = c->tls ? got - (uint64_t)k : 0;
        c->charge += (uint64_t)k;
        c->last_progress_ms = now;
        if ((size_t)k <= hdr) {
            c->resp_off += (unsigned)k;
        } else {
            c->resp_off = c->resp_len;
            if (c->staged)
                rw_tcp_sst_sent(c, (uint64_t)k - hdr);
            c->mem += (size_t)k - hdr;
            c->left -= (uint64_t)k - hdr;
        }
        *quantum = *quantum > (uint64_t)k ? *quantum - (uint64_t)k : 0;
        if (*quantum == 0 && c->left)
            return S_YIELD;
    }
}

void rw_tcp_conn_run(struct rw_tcp_conn *c)
{
    uint64_t quantum = QUANTUM;
    int64_t now = rw_now_ms();
    const char *why = NULL;
    enum step s;

    c->wait = RW_TCP_W_NONE;
    do {
        /* A step that used the rest of the quantum may have finished its
         * request (a READ answer's last piece may overshoot it): the next
         * request waits for the next run.  A payload step must never run
         * with nothing left, or it would ask recv for 0 bytes and take
         * the 0 it returns for the client's end of stream. */
        if (quantum == 0) {
            s = S_YIELD;
            break;
        }
        switch (c->state) {
        case RW_TCP_C_HDR:
            s = step_header(c, now, &why);
            break;
        case RW_TCP_C_WPAY:
            s = step_payload(c, now, &quantum, &why);
            break;
        case RW_TCP_C_TX:
            s = step_send(c, now, &quantum, &why);
            break;
        default:
            return;
        }
    } while (s == S_CONT);
    if (s == S_CLOSE) {
        rw_tcp_conn_close(c, why);
        return;
    }
    if (s == S_YIELD) {
        rw_tcp_loop_ready(c);
        return;
    }
    if (c->wait == RW_TCP_W_COPY) {
        rw_tcp_sst_resched(c);
    } else if (c->wait == RW_TCP_W_CAP || c->wait == RW_TCP_W_BUDGET) {
        if (!c->on_tick || c->tick_backoff_ms > 2) {
            c->tick_backoff_ms = 1;
            rw_tcp_loop_tick_add(c, 1);
        }
    } else if (c->charge && c->wait == RW_TCP_W_IN) {
        /* idle with bytes still queued: refresh now and then to return them */
        if (!c->on_tick) {
            c->tick_backoff_ms = 4;
            rw_tcp_loop_tick_add(c, 4);
        }
    } else {
        rw_tcp_loop_tick_del(c);
    }
}

void rw_tcp_conn_tick(struct rw_tcp_conn *c, int64_t now)
{
    int drained = refresh(c, now);
    int max = 256;

    if (c->wait == RW_TCP_W_COPY) {
        /* the run polls the copies and reschedules itself */
        rw_tcp_loop_tick_del(c);
        rw_tcp_conn_run(c);
        return;
    }
    if (c->wait == RW_TCP_W_CAP || c->wait == RW_TCP_W_BUDGET) {
        rw_tcp_conn_run(c);
        if (c->state == RW_TCP_C_CLOSED)
            return;
        max = c->wait == RW_TCP_W_BUDGET ? 2 : 32;
    } else if (c->charge == 0 || c->wait != RW_TCP_W_IN) {
        rw_tcp_loop_tick_del(c);
        return;
    }
    if (!c->on_tick)
        return;
    if (drained)
        c->tick_backoff_ms = 1;
    else if (c->tick_backoff_ms < max)
        c->tick_backoff_ms *= 2;
    if (c->tick_backoff_ms > max)
        c->tick_backoff_ms = max;
    c->tick_due_ms = now + c->tick_backoff_ms;
}

void rw_tcp_conn_scan(struct rw_tcp_conn *c, int64_t now)
{
    int io = c->ep->io_timeout_ms, evict = io / 2 < EVICT_MS ? io / 2 : EVICT_MS;
    int busy = (c->state == RW_TCP_C_HDR && staged(c) > 0) || c->state == RW_TCP_C_WPAY ||
               (c->state == RW_TCP_C_TX && (c->wait == RW_TCP_W_OUT || c->wait == RW_TCP_W_CAP ||
                                            c->wait == RW_TCP_W_COPY));
    int64_t idle = now - c->last_progress_ms;

    if (busy && idle >= io) {
        rw_tcp_conn_close(c, "the client stalled mid-request or stopped reading");
        return;
    }
    if (c->charge && idle >= evict && c->wait != RW_TCP_W_BUDGET && rw_tcp_budget_starving(now)) {
        rw_warn_rl("tcp: qpn 0x%08x: evicting a rail connection whose %llu queued bytes have not "
                   "moved for %lld ms while the queue budget is used up (a client that does not "
                   "read its answers?)", (unsigned)c->ep->base.local.qpn,
                   (unsigned long long)c->charge, (long long)idle);
        rw_tcp_budget_count_eviction();
        rw_tcp_conn_close(c, NULL);
    }
}

void rw_tcp_conn_close(struct rw_tcp_conn *c, const char *why)
{
    struct rw_tcp_domain *d = c->ep->dom;

    if (c->state == RW_TCP_C_CLOSED)
        return;
    refresh(c, rw_now_ms());
    if (c->charge) {
        /* Bytes the client never took: drop them with a reset rather than
         * let the kernel keep them after close. */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    if (c->loop)
        rw_tcp_loop_forget(c);
    rw_tcp_tls_close(c->fd, c->tls);
    rw_tcp_splice_close(c);
    rw_tcp_sst_close(c);
    c->tls = NULL;
    c->fd = -1;
    c->tls_retry = 0;
    free(c->bulk);
    c->bulk = NULL;
    c->st = c->stage;
    c->st_off = c->st_len = 0;
    rw_tcp_budget_give(c->charge);
    c->charge = 0;
    rw_tcp_budget_conn_del();
    c->state = RW_TCP_C_CLOSED;
    pthread_mutex_lock(&d->lock);
    c->ep->conn_ended = 1;
    pthread_mutex_unlock(&d->lock);
    if (why && *why)
        rw_info_rl("tcp: qpn 0x%08x: rail connection ended: %s", (unsigned)c->ep->base.local.qpn, why);
    else if (why)
        rw_debug_rl("tcp: qpn 0x%08x: the client closed the rail connection",
                    (unsigned)c->ep->base.local.qpn);
}

const struct rw_tcp_conn_ops rw_tcp_serve_ops = {
    .run = rw_tcp_conn_run,
    .tick = rw_tcp_conn_tick,
    .scan = rw_tcp_conn_scan,
    .close = rw_tcp_conn_close,
};
