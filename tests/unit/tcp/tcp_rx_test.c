/* SPDX-License-Identifier: MIT */
/* A client rail's receiver (src/tcp/tcp_cli_rx.c) against answers that
 * arrive in pieces.  A short read of a plain socket marks it empty for the
 * rest of the receive pass (rx_recv, rx_recv_tail): the next piece must
 * bring a new pass, through the loop's edge-triggered set or the waiting
 * caller's wait fd, or the transfer would hang.  A scripted server sends
 * each answer in pieces of a given size with a pause between them; every
 * transfer must complete with the server's bytes. */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_proto.h"
#include "tcp_fixture.h"

#define KIB 1024u
#define REMOTE_LEN (1024u * KIB)

/* The scripted server: answers every READ with the bytes of `mem` at the
 * request's address, `piece` bytes per send with `pause_us` between. */
struct dribbler {
    int lfd, cfd;
    uint16_t port;
    struct rw_qp_id id;
    size_t piece;
    unsigned pause_us;
    uint8_t mem[REMOTE_LEN];
    pthread_t thread;
};

static int read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, (uint8_t *)buf + got, n - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

static int send_in_pieces(struct dribbler *d, const uint8_t *buf, size_t n)
{
    for (size_t off = 0; off < n;) {
        size_t k = n - off < d->piece ? n - off : d->piece;
        struct timespec ts = {0, (long)d->pause_us * 1000L};
        if (send(d->cfd, buf + off, k, MSG_NOSIGNAL) != (ssize_t)k)
            return -1;
        off += k;
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void *dribbler_main(void *arg)
{
    struct dribbler *d = arg;
    uint8_t hello[RW_TCP_HELLO_SIZE], req[RW_TCP_REQ_SIZE], verdict = RW_TCP_VERDICT_OK;
    static uint8_t out[RW_TCP_RESP_SIZE + REMOTE_LEN];

    d->cfd = accept(d->lfd, NULL, NULL);
    if (d->cfd < 0 || read_all(d->cfd, hello, sizeof(hello)) ||
        send(d->cfd, &verdict, 1, MSG_NOSIGNAL) != 1)
        return NULL;
    while (read_all(d->cfd, req, sizeof(req)) == 0) {
        struct rw_tcp_req r;
        struct rw_tcp_resp resp;
        if (rw_tcp_req_decode(req, &r) != 0 || r.op != RW_TCP_OP_READ ||
            r.remote_addr + r.length > REMOTE_LEN)
            return NULL; /* the test asks for READs inside mem only */
        resp = (struct rw_tcp_resp){.tag = r.tag, .status = RW_TCP_ST_OK, .length = r.length};
        rw_tcp_resp_encode(out, &resp);
        memcpy(out + RW_TCP_RESP_SIZE, d->mem + r.remote_addr, r.length);
        if (send_in_pieces(d, out, RW_TCP_RESP_SIZE + r.length))
            return NULL;
    }
    return NULL;
}

static void dribbler_start(struct dribbler *d, size_t piece, unsigned pause_us)
{
    d->cfd = -1;
    d->piece = piece;
    d->pause_us = pause_us;
    t_pattern(d->mem, REMOTE_LEN, 9);
    d->lfd = t_listen_loopback(1, &d->port);
    d->id = t_loopback_id(d->port, 1, 42);
    cr_assert_eq(pthread_create(&d->thread, NULL, dribbler_main, d), 0);
}

static void dribbler_stop(struct dribbler *d)
{
    shutdown(d->lfd, SHUT_RDWR);
    if (d->cfd >= 0)
        shutdown(d->cfd, SHUT_RDWR);
    pthread_join(d->thread, NULL);
    if (d->cfd >= 0)
        close(d->cfd);
    close(d->lfd);
}

/* Reads n lengths (at spread-out addresses) in one post, waits for all of
 * them the railset's way (t_wait: poll, arm, poll, sleep on the wait fd)
 * and checks every byte. */
static void read_in_pieces_within(size_t piece, unsigned pause_us, const size_t *lens, unsigned n,
                                  int io_timeout_ms)
{
    static struct dribbler d;
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1",
                               .io_timeout_ms = io_timeout_ms};
    struct rw_ep_cfg ecfg = {.depth = 16};
    struct rw_domain *cdom;
    struct rw_ep *cep;
    struct rw_mr *lmr;
    struct rw_wr wr[8];
    struct rw_wc wc[8];
    uint8_t *buf = calloc(1, REMOTE_LEN);
    uint64_t off = 0;

    cr_assert_not_null(buf);
    cr_assert_leq(n, 8);
    dribbler_start(&d, piece, pause_us);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &cdom), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(cdom, &ecfg, &cep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(cep, &d.id, 5000), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(cdom, buf, REMOTE_LEN, RW_ACCESS_LOCAL, &lmr), 0);
    for (unsigned i = 0; i < n; i++) {
        cr_assert_leq(off + lens[i], REMOTE_LEN);
        wr[i] = (struct rw_wr){.wr_id = i, .opcode = RW_OP_READ, .local = buf + off, .mr = lmr,
                               .length = (uint32_t)lens[i], .remote_addr = off, .rkey = 1};
        off += lens[i];
    }
    cr_assert_eq(rw_tcp_ops.ep_post(cep, wr, n), (int)n);
    cr_assert_eq(t_wait(cep, wc, (int)n, 30000), (int)n, "every answer arrived in pieces completes");
    for (unsigned i = 0; i < n; i++) {
        cr_assert_eq(wc[i].status, 0);
        cr_assert_eq(wc[i].wr_id, i);
    }
    cr_assert_eq(memcmp(buf, d.mem, off), 0, "the bytes are the server's");
    rw_tcp_ops.ep_destroy(cep);
    rw_tcp_ops.mr_dereg(lmr);
    rw_tcp_ops.domain_close(cdom);
    dribbler_stop(&d);
    free(buf);
}

static void read_in_pieces(size_t piece, unsigned pause_us, const size_t *lens, unsigned n)
{
    read_in_pieces_within(piece, pause_us, lens, n, 60000);
}

Test(tcp_rx, a_big_read_arriving_in_pieces_completes)
{
    static const size_t lens[] = {64 * KIB};
    read_in_pieces(1000, 200, lens, 1);
}

Test(tcp_rx, small_reads_whose_headers_are_split_complete)
{
    static const size_t lens[] = {100, 4 * KIB, 7, 16 * KIB};
    read_in_pieces(7, 50, lens, 4);
}

Test(tcp_rx, big_and_small_reads_interleaved_in_pieces_complete)
{
    static const size_t lens[] = {64 * KIB, 100, 48 * KIB, 4 * KIB, 17 * KIB, 1};
    read_in_pieces(3000, 100, lens, 6);
}

Test(tcp_rx, answers_back_to_back_complete)
{
    /* one big piece per answer: a payload's end and the next headers can
     * come in the same receive (rx_recv_tail) */
    static const size_t lens[] = {64 * KIB, 32, 20 * KIB, 20 * KIB, 8, 64 * KIB};
    read_in_pieces(REMOTE_LEN, 0, lens, 6);
}

/* A big payload wakes the loop only once 256 KiB of it are in the socket
 * (SO_RCVLOWAT, tcp_cli_rx.c), and the rail is declared dead after an I/O
 * timeout with nothing read.  A payload trickling in at 160 KB/s takes
 * 1.6 s to bring 256 KiB, more than the 1 s I/O timeout here: the loop
 * must still read it as it comes (the scan drops the mark after half the
 * timeout) and the READ complete. */
Test(tcp_rx, a_big_read_trickling_in_slower_than_its_wake_mark_completes, .timeout = 60)
{
    static const size_t lens[] = {512 * KIB};
    read_in_pieces_within(8 * KIB, 50000, lens, 1, 1000);
}

/* The client socket's SO_RCVLOWAT (1 is the default). */
static int rcvlowat_of(struct rw_ep *cep)
{
    int v = 0;
    socklen_t n = sizeof(v);
    cr_assert_eq(getsockopt(rw_container_of(cep, struct rw_tcp_cli_ep, base)->fd, SOL_SOCKET,
                            SO_RCVLOWAT, &v, &n), 0);
    return v;
}

/* Sends n bytes on the fake server's connection.  Asserts. */
static void fake_send(struct t_silent *q, const void *buf, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t k = send(q->f.cfd, (const uint8_t *)buf + off, n - off, MSG_NOSIGNAL);
        cr_assert_gt(k, 0);
        off += (size_t)k;
    }
}

/* A payload whose whole rest reaches the loop in one wake-up ends with its
 * wake mark up (no pass saw less than 256 KiB to come): the payload's end
 * must take it down, or the next answer, 116 bytes, would wake nobody
 * until the scan drops the mark half an I/O timeout (30 s) later.  The
 * loop is held while the rest arrives, so it reads it in one pass. */
Test(tcp_rx, a_big_payloads_end_takes_its_wake_mark_down, .timeout = 60)
{
    enum { BIG = 512 * KIB, FIRST = 8 * KIB };
    struct rw_ep_cfg cfg = {.depth = 4};
    struct t_silent q;
    static uint8_t out[RW_TCP_RESP_SIZE + BIG];
    struct rw_wc wc;

    t_silent_open(&q, &cfg, BIG + 4 * KIB);
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = q.buf, .mr = q.lmr,
                       .length = BIG, .remote_addr = 0, .rkey = 1};
    cr_assert_eq(rw_tcp_ops.ep_post(q.cep, &wr, 1), 1);
    wr = (struct rw_wr){.wr_id = 2, .opcode = RW_OP_READ, .local = q.buf + BIG, .mr = q.lmr,
                        .length = 100, .remote_addr = 0, .rkey = 1};
    cr_assert_eq(rw_tcp_ops.ep_post(q.cep, &wr, 1), 1);
    struct rw_tcp_resp resp = {.tag = 0, .status = RW_TCP_ST_OK, .length = BIG};
    rw_tcp_resp_encode(out, &resp);
    t_pattern(out + RW_TCP_RESP_SIZE, BIG, 5);
    /* The answer's head: the loop reads it and sets the mark. */
    fake_send(&q, out, RW_TCP_RESP_SIZE + FIRST);
    int64_t end = rw_now_ms() + 10000;
    while (rcvlowat_of(q.cep) != (int)(256 * KIB) && rw_now_ms() < end)
        usleep(1000);
    cr_assert_eq(rcvlowat_of(q.cep), (int)(256 * KIB), "a big payload to come sets the mark");
    t_park_thread(rw_tcp_cli_loop_thread(rw_container_of(q.cep, struct rw_tcp_cli_ep, base)));
    fake_send(&q, out + RW_TCP_RESP_SIZE + FIRST, BIG - FIRST);
    t_release_thread();
    cr_assert_eq(t_wait(q.cep, &wc, 1, 10000), 1);
    cr_assert_eq(wc.wr_id, 1);
    cr_assert_eq(wc.status, 0);
    cr_assert_eq(memcmp(q.buf, out + RW_TCP_RESP_SIZE, BIG), 0);
    cr_assert_eq(rcvlowat_of(q.cep), 1, "the payload is in: the mark is down");
    uint8_t small[RW_TCP_RESP_SIZE + 100];
    resp = (struct rw_tcp_resp){.tag = 1, .status = RW_TCP_ST_OK, .length = 100};
    rw_tcp_resp_encode(small, &resp);
    memset(small + RW_TCP_RESP_SIZE, 0x3c, 100);
    fake_send(&q, small, sizeof(small));
    cr_assert_eq(t_wait(q.cep, &wc, 1, 10000), 1, "the answer behind the payload was held back");
    cr_assert_eq(wc.wr_id, 2);
    cr_assert_eq(wc.status, 0);
    t_silent_close(&q);
}
