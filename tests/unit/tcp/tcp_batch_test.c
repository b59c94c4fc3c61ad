/* SPDX-License-Identifier: MIT */
/* Small requests served in batches (issue 10 part 3): the server reads
 * several small WRITEs with their payloads at once and holds answers
 * without payload back to send them with the next one.  A held answer must
 * never wait for the client: when the next request is not wholly staged,
 * everything answered so far goes out.  Small READ answers are batched
 * too (header and payload straight from the region, several answers in
 * one sendmsg): their order, bytes, refusals in the middle of a batch,
 * WRITEs before and after them, and sends that stop in the middle of a
 * batch are checked.  Order, tags, statuses and the
 * bytes written are checked with a raw client. */
#include <criterion/criterion.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_loop.h"
#include "tcp_fixture.h"
#include "tcp_raw.h"

#define WLEN 256u
#define RLEN 64u

struct raw_conn {
    struct tpair p;
    struct rw_ep *sep;
    int fd;
};

/* A server ep on p's domain exposing p's region (*sep, the caller's to
 * destroy), reached by a raw client rail of identity cli whose hello the
 * server accepted.  Returns the client's socket. */
static int raw_rail_to_new_ep(struct tpair *p, struct rw_qp_id cli, int rcvbuf, struct rw_ep **sep)
{
    struct rw_ep_cfg scfg = {.depth = 64, .exposed = &p->smr, .n_exposed = 1};
    int fd;

    cr_assert_eq(rw_tcp_ops.ep_create(p->sdom, &scfg, sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(*sep, &cli, 0), 0);
    fd = raw_rail_open(NULL, (uint16_t)((*sep)->local.qpn & 0xffff), &(*sep)->local, cli.qpn,
                       cli.psn, rcvbuf);
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_rail_verdict(fd, 10000), RW_TCP_VERDICT_OK);
    return fd;
}

/* raw_open_rcvbuf with the domains' I/O timeout given (0: the default). */
static void raw_open_io(struct raw_conn *c, int rcvbuf, int io_timeout_ms)
{
    t_open(&c->p, "127.0.0.1", io_timeout_ms);
    c->fd = raw_rail_to_new_ep(&c->p, (struct rw_qp_id){.qpn = 0x1234u, .psn = 0x5678u}, rcvbuf,
                               &c->sep);
}

static void raw_open_rcvbuf(struct raw_conn *c, int rcvbuf)
{
    raw_open_io(c, rcvbuf, 0);
}

static void raw_open(struct raw_conn *c)
{
    raw_open_rcvbuf(c, 0);
}

static void raw_close(struct raw_conn *c)
{
    close(c->fd);
    rw_tcp_ops.ep_destroy(c->sep);
    t_close(&c->p);
}

/* Appends a request (and a WRITE's payload, filled with `fill`) to buf. */
static size_t put_req(uint8_t *buf, uint32_t op, uint32_t len, uint64_t tag, uint64_t addr,
                      uint32_t rkey, uint8_t fill)
{
    struct rw_tcp_req r = {.op = op, .length = len, .tag = tag, .remote_addr = addr, .rkey = rkey};
    rw_tcp_req_encode(buf, &r);
    if (op != RW_TCP_OP_WRITE)
        return RW_TCP_REQ_SIZE;
    memset(buf + RW_TCP_REQ_SIZE, fill, len);
    return RW_TCP_REQ_SIZE + len;
}

static void expect_answer(int fd, uint64_t tag, uint32_t status, uint32_t len, uint8_t *payload)
{
    uint8_t h[RW_TCP_RESP_SIZE];
    struct rw_tcp_resp r;

    cr_assert_eq(raw_read_all(fd, h, sizeof(h), 5000), 0, "answer %llu arrives",
                 (unsigned long long)tag);
    rw_tcp_resp_decode(h, &r);
    cr_assert_eq(r.tag, tag);
    cr_assert_eq(r.status, status, "answer %llu status", (unsigned long long)tag);
    cr_assert_eq(r.length, len);
    if (len)
        cr_assert_eq(raw_read_all(fd, payload, len, 5000), 0);
}

Test(tcp_batch, held_answers_never_wait_for_the_client, .timeout = 60)
{
    static uint8_t buf[64 * 1024];
    struct raw_conn c;
    uint8_t rd[RLEN];
    size_t n = 0;
    uint64_t base, tag = 0, i;

    raw_open(&c);
    base = c.p.smr->remote_base;
    /* 8 WRITEs, a refused WRITE (its payload is skipped), a READ of the
     * first WRITE's bytes, 3 WRITEs, and one more WRITE's header with 100
     * bytes of its payload. */
    for (i = 0; i < 8; i++)
        n += put_req(buf + n, RW_TCP_OP_WRITE, WLEN, tag++, base + i * WLEN, c.p.smr->rkey,
                     (uint8_t)(0x10 + i));
    n += put_req(buf + n, RW_TCP_OP_WRITE, WLEN, tag++, base, c.p.smr->rkey ^ 0x5a5au, 0xee);
    n += put_req(buf + n, RW_TCP_OP_READ, RLEN, tag++, base, c.p.smr->rkey, 0);
    for (i = 8; i < 11; i++)
        n += put_req(buf + n, RW_TCP_OP_WRITE, WLEN, tag++, base + i * WLEN, c.p.smr->rkey,
                     (uint8_t)(0x10 + i));
    put_req(buf + n, RW_TCP_OP_WRITE, WLEN, tag, base + 11 * WLEN, c.p.smr->rkey, 0x1b);
    cr_assert_eq(send(c.fd, buf, n + RW_TCP_REQ_SIZE + 100, MSG_NOSIGNAL),
                 (ssize_t)(n + RW_TCP_REQ_SIZE + 100));

    /* Everything whole is answered, in order, though the last request is
     * incomplete (nothing more will come until these answers arrive). */
    for (i = 0; i < 8; i++)
        expect_answer(c.fd, i, RW_TCP_ST_OK, 0, NULL);
    expect_answer(c.fd, 8, RW_TCP_ST_ACCESS, 0, NULL);
    expect_answer(c.fd, 9, RW_TCP_ST_OK, RLEN, rd);
    for (i = 0; i < RLEN; i++)
        cr_assert_eq(rd[i], 0x10, "READ sees the WRITE before it");
    for (i = 10; i < 13; i++)
        expect_answer(c.fd, i, RW_TCP_ST_OK, 0, NULL);

    /* The rest of the last request completes it. */
    cr_assert_eq(send(c.fd, buf + n + RW_TCP_REQ_SIZE + 100, WLEN - 100, MSG_NOSIGNAL),
                 (ssize_t)(WLEN - 100));
    expect_answer(c.fd, tag, RW_TCP_ST_OK, 0, NULL);
    for (i = 0; i < 12; i++) {
        uint8_t want = (uint8_t)(0x10 + i);
        for (size_t b = 0; b < WLEN; b++)
            cr_assert_eq(c.p.smem[i * WLEN + b], want, "byte %zu of WRITE %llu", b,
                         (unsigned long long)i);
    }
    cr_assert_eq(rw_tcp_ops.ep_liveness(c.sep), RW_EP_LIVE);
    raw_close(&c);
}

Test(tcp_batch, small_write_payload_split_across_reads, .timeout = 60)
{
    static uint8_t buf[3 * (RW_TCP_REQ_SIZE + 4096)];
    struct raw_conn c;
    size_t n = 0, cut;
    uint64_t base;

    raw_open(&c);
    base = c.p.smr->remote_base;
    /* A first small WRITE puts the connection in bulk mode. */
    n = put_req(buf, RW_TCP_OP_WRITE, 4096, 0, base, c.p.smr->rkey, 0x21);
    cr_assert_eq(send(c.fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    expect_answer(c.fd, 0, RW_TCP_ST_OK, 0, NULL);
    n = 0;
    n += put_req(buf + n, RW_TCP_OP_WRITE, 4096, 1, base, c.p.smr->rkey, 0x21);
    n += put_req(buf + n, RW_TCP_OP_WRITE, 4096, 2, base + 4096, c.p.smr->rkey, 0x22);
    n += put_req(buf + n, RW_TCP_OP_WRITE, 4096, 3, base + 8192, c.p.smr->rkey, 0x23);
    /* The second payload is cut in two: the first answer must come before
     * the rest is sent, the others after. */
    cut = RW_TCP_REQ_SIZE + 4096 + RW_TCP_REQ_SIZE + 1000;
    cr_assert_eq(send(c.fd, buf, cut, MSG_NOSIGNAL), (ssize_t)cut);
    expect_answer(c.fd, 1, RW_TCP_ST_OK, 0, NULL);
    usleep(20 * 1000);
    cr_assert_eq(send(c.fd, buf + cut, n - cut, MSG_NOSIGNAL), (ssize_t)(n - cut));
    expect_answer(c.fd, 2, RW_TCP_ST_OK, 0, NULL);
    expect_answer(c.fd, 3, RW_TCP_ST_OK, 0, NULL);
    for (size_t b = 0; b < 3 * 4096; b++)
        cr_assert_eq(c.p.smem[b], (uint8_t)(0x21 + b / 4096), "byte %zu", b);
    raw_close(&c);
}

/* Reads one answer and checks it against the bytes `want` (len of them). */
static void expect_read(int fd, uint64_t tag, uint32_t len, const uint8_t *want)
{
    static uint8_t got[16 * 1024];

    cr_assert_leq(len, sizeof(got));
    expect_answer(fd, tag, RW_TCP_ST_OK, len, got);
    for (uint32_t b = 0; b < len; b++)
        cr_assert_eq(got[b], want[b], "byte %u of READ %llu", (unsigned)b, (unsigned long long)tag);
}

/* Small READs, refusals among them and WRITEs before and after them, all
 * staged at once: every answer in order with the bytes the region held
 * when its request came, though the last request is incomplete. */
Test(tcp_batch, small_read_answers_in_order_never_wait, .timeout = 60)
{
    static uint8_t buf[64 * 1024], old[4][4096];
    struct raw_conn c;
    size_t n = 0, whole;
    uint64_t base, tag = 0, i;
    uint32_t rkey;
    uint8_t w[512];

    raw_open(&c);
    base = c.p.smr->remote_base;
    rkey = c.p.smr->rkey;
    for (i = 0; i < 4; i++)
        memcpy(old[i], c.p.smem + 65536 + i * 4096, 4096);
    /* tags 0-3: READs of 4 KiB (before anything is written) */
    for (i = 0; i < 4; i++)
        n += put_req(buf + n, RW_TCP_OP_READ, 4096, tag++, base + 65536 + i * 4096, rkey, 0);
    /* 4: refused (unknown rkey); 5: refused (beyond the region) */
    n += put_req(buf + n, RW_TCP_OP_READ, 4096, tag++, base, rkey ^ 0x5a5au, 0);
    n += put_req(buf + n, RW_TCP_OP_READ, 4096, tag++, base + T_SRV_LEN - 100, rkey, 0);
    /* 6: READ of 1000 odd bytes; 7: WRITE over READ 0's bytes, 8: READ of them */
    n += put_req(buf + n, RW_TCP_OP_READ, 1000, tag++, base + 65536 + 3, rkey, 0);
    n += put_req(buf + n, RW_TCP_OP_WRITE, 512, tag++, base + 65536, rkey, 0xc3);
    n += put_req(buf + n, RW_TCP_OP_READ, 512, tag++, base + 65536, rkey, 0);
    /* 9: READ of READ 1's bytes, then 10: a WRITE over them (READ 9 must not
     * see it), 11: a refused READ, 12: a READ of the WRITE */
    n += put_req(buf + n, RW_TCP_OP_READ, 4096, tag++, base + 65536 + 4096, rkey, 0);
    n += put_req(buf + n, RW_TCP_OP_WRITE, 512, tag++, base + 65536 + 4096, rkey, 0x3c);
    n += put_req(buf + n, RW_TCP_OP_READ, 16, tag++, base, rkey ^ 1u, 0);
    n += put_req(buf + n, RW_TCP_OP_READ, 512, tag++, base + 65536 + 4096, rkey, 0);
    /* 13: one READ of 16 KiB, 14: one of 16 KiB + 1 (not held) */
    n += put_req(buf + n, RW_TCP_OP_READ, 16384, tag++, base + 131072, rkey, 0);
    n += put_req(buf + n, RW_TCP_OP_READ, 16385, tag++, base + 131072, rkey, 0);
    /* 15: READ, then 16: a WRITE whose payload is cut */
    n += put_req(buf + n, RW_TCP_OP_READ, 4096, tag++, base + 65536 + 8192, rkey, 0);
    whole = n;
    n += put_req(buf + n, RW_TCP_OP_WRITE, 512, tag, base + 65536 + 8192, rkey, 0x5e);
    cr_assert_eq(send(c.fd, buf, whole + RW_TCP_REQ_SIZE + 100, MSG_NOSIGNAL),
                 (ssize_t)(whole + RW_TCP_REQ_SIZE + 100));

    for (i = 0; i < 4; i++)
        expect_read(c.fd, i, 4096, old[i]);
    expect_answer(c.fd, 4, RW_TCP_ST_ACCESS, 0, NULL);
    expect_answer(c.fd, 5, RW_TCP_ST_ACCESS, 0, NULL);
    expect_read(c.fd, 6, 1000, old[0] + 3);
    expect_answer(c.fd, 7, RW_TCP_ST_OK, 0, NULL);
    memset(w, 0xc3, sizeof(w));
    expect_read(c.fd, 8, 512, w);
    expect_read(c.fd, 9, 4096, old[1]);
    expect_answer(c.fd, 10, RW_TCP_ST_OK, 0, NULL);
    expect_answer(c.fd, 11, RW_TCP_ST_ACCESS, 0, NULL);
    memset(w, 0x3c, sizeof(w));
    expect_read(c.fd, 12, 512, w);
    expect_read(c.fd, 13, 16384, c.p.smem + 131072);
    {
        static uint8_t big[16385];
        expect_answer(c.fd, 14, RW_TCP_ST_OK, 16385, big);
        cr_assert_eq(memcmp(big, c.p.smem + 131072, sizeof(big)), 0);
    }
    /* READ 15 comes though the WRITE after it is incomplete, with the
     * bytes from before that WRITE */
    expect_read(c.fd, 15, 4096, old[2]);

    cr_assert_eq(send(c.fd, buf + whole + RW_TCP_REQ_SIZE + 100, 412, MSG_NOSIGNAL), 412);
    expect_answer(c.fd, tag, RW_TCP_ST_OK, 0, NULL);
    for (i = 0; i < 512; i++)
        cr_assert_eq(c.p.smem[65536 + 8192 + i], 0x5e);

    /* READs whose last header is cut: all whole ones are answered. */
    n = 0;
    for (i = 0; i < 5; i++)
        n += put_req(buf + n, RW_TCP_OP_READ, 2048, 100 + i, base + i * 2048, rkey, 0);
    cr_assert_eq(send(c.fd, buf, n - 12, MSG_NOSIGNAL), (ssize_t)(n - 12));
    for (i = 0; i < 4; i++)
        expect_read(c.fd, 100 + i, 2048, c.p.smem + i * 2048);
    cr_assert_eq(send(c.fd, buf + n - 12, 12, MSG_NOSIGNAL), 12);
    expect_read(c.fd, 104, 2048, c.p.smem + 4 * 2048);
    cr_assert_eq(rw_tcp_ops.ep_liveness(c.sep), RW_EP_LIVE);
    raw_close(&c);
}

/* Batches of small READs of many sizes (refusals among them) to a client
 * with a small receive buffer that reads in odd pieces, slowly: the
 * server's sends stop in the middle of batches, of answers and of
 * headers, and must resume there.  Checked byte for byte. */
Test(tcp_batch, batched_read_answers_resume_partial_sends, .timeout = 120)
{
    static uint8_t req[128 * RW_TCP_REQ_SIZE], rx[4 << 20];
    enum { ROUNDS = 4, PER = 128 };
    struct raw_conn c;
    uint64_t base;
    uint32_t rkey, seed = 12345;

    raw_open_rcvbuf(&c, 4096);
    base = c.p.smr->remote_base;
    rkey = c.p.smr->rkey;
    for (int r = 0; r < ROUNDS; r++) {
        uint32_t len[PER], st[PER];
        uint64_t addr[PER];
        size_t n = 0, want = 0, got = 0, at = 0;

        for (int i = 0; i < PER; i++) {
            int refuse;
            seed = seed * 1103515245u + 12345u;
            len[i] = 1 + (seed >> 8) % (16 * 1024);
            addr[i] = (uint64_t)((seed >> 4) % (T_SRV_LEN - 16 * 1024));
            refuse = (seed >> 28) == 0; /* about 1 in 16 */
            st[i] = refuse ? RW_TCP_ST_ACCESS : RW_TCP_ST_OK;
            n += put_req(req + n, RW_TCP_OP_READ, len[i], (uint64_t)(r * PER + i), base + addr[i],
                         refuse ? rkey ^ 0x77u : rkey, 0);
            want += RW_TCP_RESP_SIZE + (refuse ? 0 : len[i]);
        }
        cr_assert_leq(want, sizeof(rx));
        cr_assert_eq(send(c.fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
        /* read slowly, in odd pieces */
        while (got < want) {
            size_t piece = 1 + (got * 7919) % 3001;
            if (piece > want - got)
                piece = want - got;
            cr_assert_eq(raw_read_all(c.fd, rx + got, piece, 5000), 0, "round %d at %zu of %zu",
                         r, got, want);
            got += piece;
            if ((got / piece) % 16 == 0)
                usleep(200);
        }
        for (int i = 0; i < PER; i++) {
            struct rw_tcp_resp a;
            rw_tcp_resp_decode(rx + at, &a);
            at += RW_TCP_RESP_SIZE;
            cr_assert_eq(a.tag, (uint64_t)(r * PER + i), "round %d answer %d tag", r, i);
            cr_assert_eq(a.status, st[i], "round %d answer %d status", r, i);
            cr_assert_eq(a.length, st[i] == RW_TCP_ST_OK ? len[i] : 0u);
            if (st[i] != RW_TCP_ST_OK)
                continue;
            cr_assert_eq(memcmp(rx + at, c.p.smem + addr[i], len[i]), 0,
                         "round %d answer %d payload", r, i);
            at += len[i];
        }
        cr_assert_eq(at, want);
    }
    cr_assert_eq(rw_tcp_ops.ep_liveness(c.sep), RW_EP_LIVE);
    raw_close(&c);
}

/* Waits (bounded) until the server ep's liveness is `want`; returns it. */
static int wait_liveness(struct rw_ep *sep, int want, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    int st = rw_tcp_ops.ep_liveness(sep);

    while (st != want && rw_ms_left(deadline) > 0) {
        usleep(1000);
        st = rw_tcp_ops.ep_liveness(sep);
    }
    return st;
}

/* Half a request and the client's end of stream reach the server's socket
 * while the loop's thread is held, so the loop learns of both in one
 * edge: it reads the half (a short read) and must read on to the end of
 * stream, which raises no edge again (and, with no whole request, no
 * answer's acknowledgement brings another); the rail then ends.  Before
 * the fix the loop took the short read for an empty socket, and the rail
 * ended only at the I/O timeout (60 s here, far beyond the wait). */
Test(tcp_batch, half_a_request_and_the_end_of_stream_in_one_edge_end_the_rail, .timeout = 60)
{
    struct raw_conn c;
    struct rw_tcp_srv_ep *sep;
    uint8_t req[RW_TCP_REQ_SIZE];
    int one = 1;

    raw_open_io(&c, 0, 60000);
    cr_assert_eq(wait_liveness(c.sep, RW_EP_LIVE, 10000), RW_EP_LIVE, "the rail is attached");
    sep = rw_container_of(c.sep, struct rw_tcp_srv_ep, base);
    t_park_thread(sep->conn.loop->thread);
    /* Corked: the half request and the FIN leave in one segment. */
    setsockopt(c.fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
    put_req(req, RW_TCP_OP_READ, RLEN, 0, c.p.smr->remote_base, c.p.smr->rkey, 0);
    cr_assert_eq(send(c.fd, req, sizeof(req) / 2, MSG_NOSIGNAL), (ssize_t)sizeof(req) / 2);
    cr_assert_eq(shutdown(c.fd, SHUT_WR), 0);
    usleep(50 * 1000); /* their delivery on loopback */
    t_release_thread();
    cr_assert_eq(wait_liveness(c.sep, RW_EP_DEAD, 10000), RW_EP_DEAD,
                 "the server ended the rail at the client's end of stream");
    raw_close(&c);
}

/* With the server's loop held (t_park_thread): sends a WRITE of bytes
 * unlike `before` into p's region on rail socket fd, resets the connection,
 * releases the loop, and checks that the server ended server ep sep and
 * left the region as `before` (`what` names the case). */
static void write_then_reset_while_held(int fd, struct tpair *p, struct rw_ep *sep,
                                        const uint8_t *before, const char *what)
{
    static uint8_t buf[RW_TCP_REQ_SIZE + WLEN];
    struct sockaddr unspec = {.sa_family = AF_UNSPEC};
    size_t n = put_req(buf, RW_TCP_OP_WRITE, WLEN, 1, p->smr->remote_base, p->smr->rkey,
                       (uint8_t)~before[0]);

    cr_assert_eq(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    usleep(20 * 1000); /* the WRITE is in the server's socket */
    cr_assert_eq(connect(fd, &unspec, sizeof(unspec)), 0, "the client resets the rail");
    usleep(50 * 1000); /* the reset is delivered on loopback */
    t_release_thread();
    cr_assert_eq(wait_liveness(sep, RW_EP_DEAD, 10000), RW_EP_DEAD,
                 "the server ended the rail at the reset");
    cr_assert_eq(memcmp(p->smem, before, WLEN), 0, "the WRITE queued behind the reset was "
                 "applied %s", what);
}

/* A WRITE and the client's reset reach the server's socket while its loop
 * is held: the client gave the rail up with the WRITE unanswered (a client
 * rail dying with requests outstanding aborts its connection) and carries
 * the WRITE on another rail, so the server must not apply it late.  Linux
 * still hands out the queued bytes after a reset; before the fix the loop
 * read them and wrote the arena. */
Test(tcp_batch, a_write_queued_behind_the_clients_reset_is_not_applied, .timeout = 60)
{
    static uint8_t buf[RW_TCP_REQ_SIZE];
    struct raw_conn c;
    struct rw_tcp_srv_ep *sep;
    uint8_t before[WLEN], rd[RLEN];
    size_t n;

    raw_open_io(&c, 0, 60000);
    cr_assert_eq(wait_liveness(c.sep, RW_EP_LIVE, 10000), RW_EP_LIVE, "the rail is attached");
    /* One READ answered: the connection runs on its loop (its first run,
     * at the registration, is not what this test is about). */
    n = put_req(buf, RW_TCP_OP_READ, RLEN, 0, c.p.smr->remote_base, c.p.smr->rkey, 0);
    cr_assert_eq(send(c.fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    expect_answer(c.fd, 0, RW_TCP_ST_OK, RLEN, rd);
    memcpy(before, c.p.smem, WLEN);
    sep = rw_container_of(c.sep, struct rw_tcp_srv_ep, base);
    t_park_thread(sep->conn.loop->thread);
    write_then_reset_while_held(c.fd, &c.p, c.sep, before, "to the arena");
    raw_close(&c);
}

/* The same fault at a rail's first run: the WRITE and the client's reset
 * reach the socket after the server sent its verdict and before the loop
 * registered the connection, so no event reports the reset.  The first run
 * must see the error pending on the socket and read nothing. */
Test(tcp_batch, a_write_queued_behind_a_reset_before_the_rails_first_run_is_not_applied,
     .timeout = 60)
{
    struct raw_conn c;
    struct rw_ep *sep2;
    uint8_t before[WLEN];
    int fd2;

    rw_tcp_pool_configure(1); /* one server loop: the one the first rail runs on */
    raw_open_io(&c, 0, 60000);
    cr_assert_eq(wait_liveness(c.sep, RW_EP_LIVE, 10000), RW_EP_LIVE, "the first rail is attached");
    struct rw_tcp_srv_ep *first = rw_container_of(c.sep, struct rw_tcp_srv_ep, base);
    memcpy(before, c.p.smem, WLEN);
    t_park_thread(first->conn.loop->thread);
    /* The accept thread checks the second rail's hello and answers it; the
     * loop, held, has not registered the connection yet. */
    fd2 = raw_rail_to_new_ep(&c.p, (struct rw_qp_id){.qpn = 0x4321u, .psn = 0x8765u}, 0, &sep2);
    write_then_reset_while_held(fd2, &c.p, sep2, before, "at the rail's first run");
    close(fd2);
    rw_tcp_ops.ep_destroy(sep2);
    raw_close(&c);
    rw_tcp_pool_configure(0);
}
