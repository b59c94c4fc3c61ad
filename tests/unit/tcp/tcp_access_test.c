/* SPDX-License-Identifier: MIT */
/* The server checks every access: key published to this ep, range inside
 * the region (without integer overflow), WRITE only where permitted.  A
 * refused op gets RAILWIRE_E_REMOTE_ACCESS and the ep keeps serving; bytes
 * that break the framing close the connection. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp_proto.h"
#include "tcp_fixture.h"

struct actx {
    struct tpair p;
    uint8_t *ro_mem, *hidden_mem, *lbuf;
    struct rw_mr *ro_mr, *hidden_mr, *lmr;
};

static void setup(struct actx *c)
{
    struct rw_mr *exposed[2];

    t_open(&c->p, "127.0.0.1", 0);
    c->ro_mem = malloc(4096);
    c->hidden_mem = malloc(4096);
    c->lbuf = malloc(8192);
    cr_assert(c->ro_mem && c->hidden_mem && c->lbuf);
    t_pattern(c->ro_mem, 4096, 5);
    t_pattern(c->hidden_mem, 4096, 6);
    cr_assert_eq(rw_tcp_ops.mr_reg(c->p.sdom, c->ro_mem, 4096, RW_ACCESS_REMOTE_READ, &c->ro_mr), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(c->p.sdom, c->hidden_mem, 4096,
                                   RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &c->hidden_mr), 0);
    exposed[0] = c->p.smr;
    exposed[1] = c->ro_mr;
    t_connect(&c->p, exposed, 2, 8);
    cr_assert_eq(rw_tcp_ops.mr_reg(c->p.cdom, c->lbuf, 8192, RW_ACCESS_LOCAL, &c->lmr), 0);
}

static void teardown(struct actx *c)
{
    rw_tcp_ops.mr_dereg(c->lmr);
    rw_tcp_ops.ep_destroy(c->p.cep);
    rw_tcp_ops.ep_destroy(c->p.sep);
    c->p.cep = c->p.sep = NULL;
    rw_tcp_ops.mr_dereg(c->ro_mr);
    rw_tcp_ops.mr_dereg(c->hidden_mr);
    t_close(&c->p);
    free(c->ro_mem);
    free(c->hidden_mem);
    free(c->lbuf);
}

/* Posts one WR and returns its completion status. */
static int one(struct actx *c, enum rw_opcode op, uint64_t addr, uint32_t rkey, uint32_t len)
{
    struct rw_wr wr = {.wr_id = 77, .opcode = op, .local = c->lbuf, .mr = c->lmr, .length = len,
                       .remote_addr = addr, .rkey = rkey};
    struct rw_wc wc;

    cr_assert_eq(rw_tcp_ops.ep_post(c->p.cep, &wr, 1), 1);
    cr_assert_eq(t_wait(c->p.cep, &wc, 1, 10000), 1, "no completion");
    cr_assert_eq(wc.wr_id, 77);
    if (wc.status)
        cr_assert_eq(wc.byte_len, 0);
    return wc.status;
}

/* After a refusal, the same ep still moves the right bytes. */
static void still_serves(struct actx *c)
{
    memset(c->lbuf, 0, 4096);
    cr_assert_eq(one(c, RW_OP_READ, c->p.smr->remote_base + 100, c->p.smr->rkey, 4096), 0);
    cr_assert_eq(memcmp(c->lbuf, c->p.smem + 100, 4096), 0);
}

Test(tcp_access, wrong_rkey_refused_then_ep_still_serves)
{
    struct actx c;
    setup(&c);
    memset(c.lbuf, 0xa5, 8192);
    cr_assert_eq(one(&c, RW_OP_READ, c.p.smr->remote_base, c.p.smr->rkey ^ 0x1, 64), RAILWIRE_E_REMOTE_ACCESS);
    cr_assert_eq(c.lbuf[0], 0xa5, "a refused READ does not touch the local buffer");
    cr_assert_eq(one(&c, RW_OP_WRITE, c.p.smr->remote_base, c.lmr->rkey, 64), RAILWIRE_E_REMOTE_ACCESS,
                 "the client's own key means nothing to the server");
    still_serves(&c);
    teardown(&c);
}

Test(tcp_access, out_of_bounds_refused)
{
    struct actx c;
    uint64_t base, end;
    setup(&c);
    base = c.p.smr->remote_base;
    end = base + T_SRV_LEN;
    cr_assert_eq(one(&c, RW_OP_READ, end - 10, c.p.smr->rkey, 11), RAILWIRE_E_REMOTE_ACCESS, "one past the end");
    cr_assert_eq(one(&c, RW_OP_READ, end, c.p.smr->rkey, 1), RAILWIRE_E_REMOTE_ACCESS, "at the end");
    cr_assert_eq(one(&c, RW_OP_READ, base - 1, c.p.smr->rkey, 2), RAILWIRE_E_REMOTE_ACCESS, "below the start");
    cr_assert_eq(one(&c, RW_OP_READ, end - 10, c.p.smr->rkey, 10), 0, "the last 10 bytes are fine");
    cr_assert_eq(memcmp(c.lbuf, c.p.smem + T_SRV_LEN - 10, 10), 0);
    still_serves(&c);
    teardown(&c);
}

Test(tcp_access, overflowing_range_refused)
{
    struct actx c;
    setup(&c);
    /* addr + len wraps around 2^64 back into the region. */
    cr_assert_eq(one(&c, RW_OP_READ, UINT64_MAX - 15, c.p.smr->rkey, 4096), RAILWIRE_E_REMOTE_ACCESS);
    cr_assert_eq(one(&c, RW_OP_WRITE, UINT64_MAX, c.p.smr->rkey, 8192), RAILWIRE_E_REMOTE_ACCESS);
    still_serves(&c);
    teardown(&c);
}

Test(tcp_access, write_to_read_only_refused_and_memory_unchanged)
{
    struct actx c;
    uint8_t before[4096];
    setup(&c);
    memcpy(before, c.ro_mem, 4096);
    memset(c.lbuf, 0x5a, 8192);
    cr_assert_eq(one(&c, RW_OP_WRITE, c.ro_mr->remote_base, c.ro_mr->rkey, 4096), RAILWIRE_E_REMOTE_ACCESS);
    cr_assert_eq(memcmp(before, c.ro_mem, 4096), 0, "the read-only region is unchanged");
    /* The refused WRITE's payload was drained: the stream is still in sync. */
    cr_assert_eq(one(&c, RW_OP_READ, c.ro_mr->remote_base, c.ro_mr->rkey, 4096), 0, "READ of RO is fine");
    cr_assert_eq(memcmp(c.lbuf, c.ro_mem, 4096), 0);
    still_serves(&c);
    teardown(&c);
}

Test(tcp_access, region_not_exposed_to_this_ep_refused)
{
    struct actx c;
    uint8_t before[4096];
    setup(&c);
    memcpy(before, c.hidden_mem, 4096);
    cr_assert_eq(one(&c, RW_OP_READ, c.hidden_mr->remote_base, c.hidden_mr->rkey, 16), RAILWIRE_E_REMOTE_ACCESS);
    cr_assert_eq(one(&c, RW_OP_WRITE, c.hidden_mr->remote_base, c.hidden_mr->rkey, 16), RAILWIRE_E_REMOTE_ACCESS);
    cr_assert_eq(memcmp(before, c.hidden_mem, 4096), 0);
    still_serves(&c);
    teardown(&c);
}

/* A hand-made client: authenticates with the real identities, then sends
 * `req`; the server must close the connection. */
static void garbage_closes(const struct rw_tcp_req *req, const uint8_t *raw)
{
    struct tpair p;
    struct rw_ep_cfg scfg = {.exposed = NULL, .n_exposed = 0};
    struct rw_qp_id cid = {.qpn = 0x1234, .psn = 0x5678};
    struct rw_tcp_hello h;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    uint8_t hello[RW_TCP_HELLO_SIZE], frame[RW_TCP_REQ_SIZE], v = 9, sink[64];
    struct pollfd pfd;
    int fd, rc;

    t_open(&p, "127.0.0.1", 0);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &p.sep), 0);
    h = (struct rw_tcp_hello){.srv_qpn = p.sep->local.qpn, .srv_psn = p.sep->local.psn,
                              .cli_qpn = cid.qpn, .cli_psn = cid.psn};
    rw_tcp_hello_encode(hello, &h);
    sin.sin_port = htons((uint16_t)(p.sep->local.qpn & 0xffff));
    fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(send(fd, hello, sizeof(hello), 0), (ssize_t)sizeof(hello));
    cr_assert_eq(rw_tcp_ops.ep_connect(p.sep, &cid, 5000), 0);
    cr_assert_eq(recv(fd, &v, 1, 0), 1);
    cr_assert_eq(v, RW_TCP_VERDICT_OK);
    if (req)
        rw_tcp_req_encode(frame, req);
    else
        memcpy(frame, raw, sizeof(frame));
    cr_assert_eq(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    pfd = (struct pollfd){.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, 10000), 1, "the server reacts");
    rc = (int)recv(fd, sink, sizeof(sink), 0);
    cr_assert_leq(rc, 0, "the server closed the connection instead of answering (got %d)", rc);
    close(fd);
    t_close(&p);
}

Test(tcp_access, bad_op_closes_connection)
{
    struct rw_tcp_req r = {.op = 7, .length = 16, .tag = 0, .remote_addr = 0, .rkey = 1};
    garbage_closes(&r, NULL);
}

Test(tcp_access, absurd_length_closes_connection)
{
    struct rw_tcp_req r = {.op = RW_TCP_OP_WRITE, .length = 0xffffffffu, .tag = 0, .rkey = 1};
    garbage_closes(&r, NULL);
}

Test(tcp_access, zero_length_closes_connection)
{
    struct rw_tcp_req r = {.op = RW_TCP_OP_READ, .length = 0, .tag = 0, .rkey = 1};
    garbage_closes(&r, NULL);
}

Test(tcp_access, nonzero_reserved_closes_connection)
{
    uint8_t raw[RW_TCP_REQ_SIZE];
    memset(raw, 0, sizeof(raw));
    raw[4] = 1;  /* length 1, READ */
    raw[31] = 0xee;
    garbage_closes(NULL, raw);
}
