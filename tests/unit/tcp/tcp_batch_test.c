/* SPDX-License-Identifier: MIT */
/* Small requests served in batches (issue 10 part 3): the server reads
 * several small WRITEs with their payloads at once and holds answers
 * without payload back to send them with the next one.  A held answer must
 * never wait for the client: when the next request is not wholly staged,
 * everything answered so far goes out.  Order, tags, statuses and the
 * bytes written are checked with a raw client. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "tcp_fixture.h"
#include "tcp_raw.h"

#define WLEN 256u
#define RLEN 64u

struct raw_conn {
    struct tpair p;
    struct rw_ep *sep;
    int fd;
};

static void raw_open(struct raw_conn *c)
{
    struct rw_ep_cfg scfg = {.depth = 64};
    struct rw_qp_id cli = {.qpn = 0x1234u, .psn = 0x5678u};

    t_open(&c->p, "127.0.0.1", 0);
    scfg.exposed = &c->p.smr;
    scfg.n_exposed = 1;
    cr_assert_eq(rw_tcp_ops.ep_create(c->p.sdom, &scfg, &c->sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(c->sep, &cli, 0), 0);
    c->fd = raw_rail_open(NULL, (uint16_t)(c->sep->local.qpn & 0xffff), &c->sep->local, cli.qpn,
                          cli.psn, 0);
    cr_assert_geq(c->fd, 0);
    cr_assert_eq(raw_rail_verdict(c->fd, 10000), RW_TCP_VERDICT_OK);
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
