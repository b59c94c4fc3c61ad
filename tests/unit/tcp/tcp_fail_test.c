/* SPDX-License-Identifier: MIT */
/* Failure semantics: ep_kill, a server that closes or stops answering, and
 * destroy with work outstanding.  Every outstanding WR completes exactly
 * once with RAILWIRE_E_RAIL_DOWN, later posts fail, and no buffer is written
 * after ep_kill returns. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_cli_loop_int.h"
#include "tcp/tcp_internal.h"
#include "tcp_fixture.h"

#define CANARY 0xa5

/* A client ep connected to a fake server that never answers. */
struct fctx {
    struct fake_srv f;
    struct rw_domain *cdom;
    struct rw_ep *cep;
    uint8_t *buf;
    struct rw_mr *lmr;
};

/* fsetup with the fake server's reset script (fake_start_reset). */
static void fsetup_reset(struct fctx *c, int io_timeout_ms, size_t buflen, unsigned reset_answers,
                         unsigned long long reset_after_bytes)
{
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1", .io_timeout_ms = io_timeout_ms};
    struct rw_ep_cfg ecfg = {.depth = 16};

    fake_start_reset(&c->f, reset_answers, reset_after_bytes);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &c->cdom), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(c->cdom, &ecfg, &c->cep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(c->cep, &c->f.id, 5000), 0);
    c->buf = malloc(buflen);
    cr_assert_not_null(c->buf);
    memset(c->buf, CANARY, buflen);
    cr_assert_eq(rw_tcp_ops.mr_reg(c->cdom, c->buf, buflen, RW_ACCESS_LOCAL, &c->lmr), 0);
}

static void fsetup(struct fctx *c, int io_timeout_ms, size_t buflen)
{
    fsetup_reset(c, io_timeout_ms, buflen, 0, 0);
}

static void fteardown(struct fctx *c)
{
    if (c->cep)
        rw_tcp_ops.ep_destroy(c->cep);
    rw_tcp_ops.mr_dereg(c->lmr);
    rw_tcp_ops.domain_close(c->cdom);
    fake_close(&c->f);
    free(c->buf);
}

static int post_n(struct rw_ep *ep, struct rw_mr *mr, uint8_t *buf, int n, uint32_t len, enum rw_opcode op)
{
    struct rw_wr wrs[16];
    int i;
    for (i = 0; i < n; i++)
        wrs[i] = (struct rw_wr){.wr_id = 1000 + (uint64_t)i, .opcode = op, .local = buf + (size_t)i * len,
                                .mr = mr, .length = len, .remote_addr = 0x1000, .rkey = 1};
    return rw_tcp_ops.ep_post(ep, wrs, (size_t)n);
}

static void expect_all_down(struct rw_ep *ep, int n)
{
    struct rw_wc wcs[16];
    int i;
    cr_assert_eq(t_wait(ep, wcs, n, 10000), n, "every outstanding WR completes");
    for (i = 0; i < n; i++) {
        cr_assert_eq(wcs[i].wr_id, 1000 + (uint64_t)i);
        cr_assert_eq(wcs[i].status, RAILWIRE_E_RAIL_DOWN, "WR %d: status %d", i, wcs[i].status);
        cr_assert_eq(wcs[i].byte_len, 0);
    }
    cr_assert_eq(rw_tcp_ops.ep_poll(ep, wcs, 16), 0, "each WR completes exactly once");
}

Test(tcp_fail, kill_completes_outstanding_rail_down)
{
    struct fctx c;
    fsetup(&c, 0, 16 * 4096);
    cr_assert(fake_wait_attached(&c.f, 5000));
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, 8, 4096, RW_OP_READ), 8);
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf + 8 * 4096, 4, 4096, RW_OP_WRITE), 4);
    rw_tcp_ops.ep_kill(c.cep);
    {
        struct rw_wc wcs[16];
        int i;
        /* Completions are queued by the time ep_kill returns. */
        cr_assert_eq(rw_tcp_ops.ep_poll(c.cep, wcs, 16), 12);
        for (i = 0; i < 12; i++)
            cr_assert_eq(wcs[i].status, RAILWIRE_E_RAIL_DOWN);
    }
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, 1, 64, RW_OP_READ), RAILWIRE_E_RAIL_DOWN);
    rw_tcp_ops.ep_kill(c.cep); /* idempotent */
    fteardown(&c);
}

Test(tcp_fail, server_closing_connection_is_rail_down)
{
    struct fctx c;
    fsetup(&c, 0, 16 * 4096);
    cr_assert(fake_wait_attached(&c.f, 5000));
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, 6, 4096, RW_OP_READ), 6);
    shutdown(c.f.cfd, SHUT_RDWR);
    expect_all_down(c.cep, 6);
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, 1, 64, RW_OP_READ), RAILWIRE_E_RAIL_DOWN);
    for (size_t i = 0; i < 16 * 4096; i++)
        cr_assert_eq(c.buf[i], CANARY, "no byte written into a failed READ's buffer");
    fteardown(&c);
}

/* The server's last answers and its reset reach the socket while the
 * loop's thread is held, so the loop learns of both in one edge: it reads
 * the answers (a short read) and must read on to the error, since a reset
 * socket raises no edge again.  Before the fix the loop took the short
 * read for an empty socket and the rest waited for the I/O timeout (60 s
 * here, far beyond the wait); so did tcp_fail.server_ep_destroyed_is_rail_down
 * in about 1 run of 10. */
Test(tcp_fail, answers_then_reset_in_one_edge_is_rail_down)
{
    enum { N = 8, LEN = 64 * 1024 };
    struct fctx c;
    struct rw_wc wcs[N];
    int got, ok = 0, down = 0;
    int64_t deadline;

    /* Large WRITEs, 6 left after the answers: the loop receives (no
     * waiting caller reads a rail with more than 2 of them outstanding,
     * and would take the socket's input over, which re-arms it). */
    fsetup_reset(&c, 60000, (size_t)N * LEN, 2, (unsigned long long)N * (RW_TCP_REQ_SIZE + LEN));
    cr_assert(fake_wait_attached(&c.f, 5000));
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, N, LEN, RW_OP_WRITE), N);
    deadline = rw_now_ms() + 10000;
    while (atomic_load(&c.f.drained) < (unsigned long long)N * (RW_TCP_REQ_SIZE + LEN) &&
           rw_ms_left(deadline) > 0)
        usleep(1000);
    t_park_thread(rw_container_of(c.cep, struct rw_tcp_cli_ep, base)->link.loop->thread);
    atomic_store(&c.f.reset_go, 1);
    while (!atomic_load(&c.f.reset) && rw_ms_left(deadline) > 0)
        usleep(1000);
    usleep(50 * 1000); /* the reset's delivery on loopback */
    t_release_thread();
    got = t_wait(c.cep, wcs, N, 10000);
    cr_assert_eq(got, N, "every WR completes once the server resets (got %d of %d)", got, N);
    for (int i = 0; i < N; i++) {
        ok += wcs[i].status == 0;
        down += wcs[i].status == RAILWIRE_E_RAIL_DOWN;
    }
    cr_assert_eq(ok, 2, "the two answered WRITEs succeed");
    cr_assert_eq(down, N - 2, "the unanswered ones fail with rail-down");
    fteardown(&c);
}

Test(tcp_fail, silent_server_times_out_rail_down)
{
    struct fctx c;
    fsetup(&c, 300, 16 * 4096); /* io_timeout 300 ms */
    cr_assert(fake_wait_attached(&c.f, 5000));
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, 3, 4096, RW_OP_READ), 3);
    expect_all_down(c.cep, 3);
    fteardown(&c);
}

Test(tcp_fail, refused_verdict_fails_connect)
{
    struct fake_srv f;
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1"};
    struct rw_domain *d;
    struct rw_ep *ep;
    struct rw_ep_cfg ecfg = {.depth = 4};

    fake_start(&f, RW_TCP_VERDICT_REFUSE);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &d), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(d, &ecfg, &ep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(ep, &f.id, 5000), RAILWIRE_E_REFUSED);
    rw_tcp_ops.ep_destroy(ep);
    rw_tcp_ops.domain_close(d);
    fake_close(&f);
}

Test(tcp_fail, destroy_with_outstanding_wrs)
{
    struct fctx c;
    fsetup(&c, 0, 16 * 65536);
    cr_assert(fake_wait_attached(&c.f, 5000));
    cr_assert_eq(post_n(c.cep, c.lmr, c.buf, 16, 65536, RW_OP_WRITE), 16);
    rw_tcp_ops.ep_destroy(c.cep); /* bounded: the suite's timeout catches a hang */
    c.cep = NULL;
    fteardown(&c);
}

/* Against the real server, mid-transfer: every WR completes exactly once,
 * successes carry the right bytes, the rest are rail-down, and nothing
 * writes into the buffers once ep_kill has returned. */
Test(tcp_fail, kill_mid_transfer_no_late_writes)
{
    enum { N = 16, LEN = 1 << 20 };
    struct tpair p;
    uint8_t *buf = malloc((size_t)N * LEN);
    struct rw_mr *lmr;
    struct rw_wr wrs[N];
    struct rw_wc wcs[N];
    int i, got, ok = 0, down = 0;

    cr_assert_not_null(buf);
    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, N);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, (size_t)N * LEN, RW_ACCESS_LOCAL, &lmr), 0);
    memset(buf, 0, (size_t)N * LEN);
    for (i = 0; i < N; i++)
        wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = RW_OP_READ, .local = buf + (size_t)i * LEN,
                                .mr = lmr, .length = LEN, .remote_addr = p.smr->remote_base + (size_t)(i % 7) * LEN,
                                .rkey = p.smr->rkey};
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, wrs, N), N);
    got = t_wait(p.cep, wcs, 1, 10000); /* the transfer is under way */
    cr_assert_eq(got, 1);
    rw_tcp_ops.ep_kill(p.cep);
    got += rw_tcp_ops.ep_poll(p.cep, wcs + got, N - got);
    cr_assert_eq(got, N, "every WR has completed when ep_kill returns");
    for (i = 0; i < N; i++) {
        cr_assert_eq(wcs[i].wr_id, (uint64_t)i);
        if (wcs[i].status == 0) {
            ok++;
            cr_assert_eq(memcmp(wrs[i].local, p.smem + (size_t)(i % 7) * LEN, LEN), 0);
        } else {
            cr_assert_eq(wcs[i].status, RAILWIRE_E_RAIL_DOWN);
            down++;
        }
    }
    cr_assert_geq(ok, 1);
    memset(buf, CANARY, (size_t)N * LEN);
    usleep(200 * 1000);
    for (size_t k = 0; k < (size_t)N * LEN; k++)
        cr_assert_eq(buf[k], CANARY, "byte %zu written after ep_kill returned", k);
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, wrs, 1), RAILWIRE_E_RAIL_DOWN);
    cr_log_info("kill mid-transfer: %d completed, %d rail-down", ok, down);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
    free(buf);
}

/* The real server's ep goes away while READs are outstanding. */
Test(tcp_fail, server_ep_destroyed_is_rail_down)
{
    enum { N = 8, LEN = 1 << 20 };
    struct tpair p;
    uint8_t *buf = malloc((size_t)N * LEN);
    struct rw_mr *lmr;
    struct rw_wr wrs[N];
    struct rw_wc wcs[N];
    int i, got;

    cr_assert_not_null(buf);
    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, N);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, (size_t)N * LEN, RW_ACCESS_LOCAL, &lmr), 0);
    for (i = 0; i < N; i++)
        wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = RW_OP_WRITE, .local = buf + (size_t)i * LEN,
                                .mr = lmr, .length = LEN, .remote_addr = p.smr->remote_base,
                                .rkey = p.smr->rkey};
    memset(buf, 1, (size_t)N * LEN);
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, wrs, N), N);
    rw_tcp_ops.ep_destroy(p.sep);
    p.sep = NULL;
    got = t_wait(p.cep, wcs, N, 10000);
    cr_assert_eq(got, N, "every WR completes once");
    for (i = 0; i < N; i++)
        cr_assert(wcs[i].status == 0 || wcs[i].status == RAILWIRE_E_RAIL_DOWN);
    /* The server is gone: a new WR is refused, or accepted and failed. */
    i = rw_tcp_ops.ep_post(p.cep, wrs, 1);
    if (i == 1) {
        cr_assert_eq(t_wait(p.cep, wcs, 1, 10000), 1);
        cr_assert_eq(wcs[0].status, RAILWIRE_E_RAIL_DOWN);
        i = rw_tcp_ops.ep_post(p.cep, wrs, 1);
    }
    cr_assert_eq(i, RAILWIRE_E_RAIL_DOWN);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
    free(buf);
}

/* Whether the client ep has learned that its rail is dead. */
static int cli_dead(struct rw_ep *ep)
{
    struct rw_tcp_cli_ep *c = rw_container_of(ep, struct rw_tcp_cli_ep, base);
    pthread_mutex_lock(&c->lock);
    int dead = c->state == RW_TCP_CLI_DEAD;
    pthread_mutex_unlock(&c->lock);
    return dead;
}

/* A rail with every request answered skips the receive that could only
 * find the socket empty (rx_header); the server's end of stream must
 * still end it at once, with nothing posted, though the I/O timeout is a
 * minute away. */
Test(tcp_fail, idle_rail_whose_server_goes_away_goes_down)
{
    enum { LEN = 64 * 1024 };
    struct tpair p;
    struct rw_mr *lmr;
    uint8_t *buf = t_open_with_buf(&p, 60000, 4, LEN, &lmr);
    struct rw_wc wc;

    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = buf, .mr = lmr, .length = LEN,
                       .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey};
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
    cr_assert_eq(t_wait(p.cep, &wc, 1, 10000), 1);
    cr_assert_eq(wc.status, 0);
    cr_assert(!cli_dead(p.cep));
    rw_tcp_ops.ep_destroy(p.sep);
    p.sep = NULL;
    int64_t deadline = rw_now_ms() + 10000;
    while (!cli_dead(p.cep) && rw_ms_left(deadline) > 0)
        usleep(1000);
    cr_assert(cli_dead(p.cep), "an idle rail whose server went away is still up");
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), RAILWIRE_E_RAIL_DOWN);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
    free(buf);
}

/* Objects can be torn down without connecting, and a server domain with a
 * parked connection closes cleanly. */
Test(tcp_fail, teardown_unconnected_and_parked)
{
    struct tpair p;
    struct rw_ep_cfg ecfg = {.depth = 4};
    struct rw_qp_id id;

    t_open(&p, "127.0.0.1", 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &ecfg, &p.sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ecfg, &p.cep), 0);
    id = p.sep->local;
    /* The hello parks (no server ep_connect): the client times out waiting
     * for the verdict; destroy then releases the parked socket. */
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &id, 200), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, NULL, 0), RAILWIRE_E_STATE);
    t_close(&p);
}

/* Reads fd until it ends or fails (bounded by timeout_ms without a byte).
 * Returns the bytes read; *reset says whether it ended with a reset. */
static size_t drain_peer(int fd, int timeout_ms, int *reset)
{
    static uint8_t sink[1 << 16];
    size_t total = 0;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};

    cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    *reset = 0;
    for (;;) {
        ssize_t k = recv(fd, sink, sizeof(sink), 0);
        if (k > 0) {
            total += (size_t)k;
            continue;
        }
        cr_assert(k == 0 || errno == ECONNRESET, "the rail's peer saw neither an end nor a reset "
                  "within %d ms (%s)", timeout_ms, strerror(errno));
        *reset = k < 0;
        return total;
    }
}

/* A rail killed with WRITEs still queued in its socket (its peer stopped
 * reading: a link that went away) must never deliver them later: the
 * railset carries them again on another rail, and a copy that arrived once
 * the link came back would land over whatever was written there since
 * (tests/e2e/netns_cancel_test.py shows it end to end).  The peer gets what
 * had reached it before the kill, then a reset; before the fix it read the
 * whole queue and an orderly end. */
Test(tcp_fail, a_killed_rails_queued_writes_never_reach_the_peer, .timeout = 60)
{
    enum { LEN = 8 << 20 };
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1"};
    struct rw_ep_cfg ecfg = {.depth = 4, .lazy_verdict = 1};
    struct rw_domain *cdom;
    struct rw_ep *ep;
    struct rw_mr *lmr;
    struct rw_wr wrs[2];
    struct rw_wc wcs[2];
    uint16_t port;
    uint8_t *buf = malloc(LEN);
    int lfd, sfd, reset;
    size_t got;

    cr_assert_not_null(buf);
    memset(buf, CANARY, LEN);
    /* A listener that does not accept yet: the kernel completes the
     * connection and holds what arrives in the receive queue, so the rest
     * stays queued in the rail's socket. */
    lfd = t_listen_loopback(4, &port);
    struct rw_qp_id id = t_loopback_id(port, 0, 0);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &cdom), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(cdom, &ecfg, &ep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(ep, &id, 5000), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(cdom, buf, LEN, RW_ACCESS_LOCAL, &lmr), 0);
    for (int i = 0; i < 2; i++)
        wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = RW_OP_WRITE, .local = buf,
                                .mr = lmr, .length = LEN, .remote_addr = 0, .rkey = 1};
    cr_assert_eq(rw_tcp_ops.ep_post(ep, wrs, 2), 2);
    usleep(300 * 1000); /* the rail fills both sockets' buffers */
    rw_tcp_ops.ep_kill(ep);
    cr_assert_eq(rw_tcp_ops.ep_poll(ep, wcs, 2), 2, "both WRITEs complete at the kill");
    for (int i = 0; i < 2; i++)
        cr_assert_eq(wcs[i].status, RAILWIRE_E_RAIL_DOWN);

    sfd = accept(lfd, NULL, NULL);
    cr_assert_geq(sfd, 0);
    got = drain_peer(sfd, 10000, &reset);
    cr_log_info("the killed rail's peer read %zu bytes, then %s", got, reset ? "a reset" : "an end");
    cr_assert(reset, "the killed rail ended in order after %zu bytes: its queue was sent", got);
    cr_assert_lt(got, (size_t)LEN, "%zu bytes reached the peer after the kill (a WRITE is %d)", got,
                 LEN);
    close(sfd);
    close(lfd);
    rw_tcp_ops.ep_destroy(ep);
    rw_tcp_ops.mr_dereg(lmr);
    rw_tcp_ops.domain_close(cdom);
    free(buf);
}
