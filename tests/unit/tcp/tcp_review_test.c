/* SPDX-License-Identifier: MIT */
/* Regression tests from the adversarial review of the tcp transport. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "tcp/tcp_internal.h"
#include "tcp_fixture.h"

/* A completion means the transport is done with the WR's buffer: the
 * caller may free it at once.  The sender thread used to publish nothing
 * itself: the receiver completed a WRITE as soon as the server answered,
 * possibly while the sender was still inside the sendmsg() call that
 * carried the payload (returned to the kernel, not yet to the thread), so
 * an instrumented sendmsg (AddressSanitizer checks the iovec after the
 * call) read freed memory.  Now a completion is visible only once the
 * sendmsg carrying its request has returned.  This test frees each buffer
 * right after its completion, round after round; it is meaningful under
 * -DRAILWIRE_SANITIZE=ON, where a violation aborts with heap-use-after-free. */
Test(tcp_review, write_buffer_freed_right_after_its_completion, .timeout = 120)
{
    struct tpair p;
    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, 8);
    size_t len = 4u << 20;
    for (int round = 0; round < 150; round++) {
        uint8_t *buf = malloc(len);
        cr_assert_not_null(buf);
        memset(buf, round, len);
        struct rw_mr *lmr;
        cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, len, RW_ACCESS_LOCAL, &lmr), 0);
        struct rw_wr wr = {.wr_id = (uint64_t)round, .opcode = RW_OP_WRITE, .local = buf,
                           .mr = lmr, .length = (uint32_t)len, .remote_addr = p.smr->remote_base,
                           .rkey = p.smr->rkey, .signaled = 1};
        struct rw_wc wc;
        cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
        cr_assert_eq(t_wait(p.cep, &wc, 1, 10000), 1);
        cr_assert_eq(wc.status, 0);
        rw_tcp_ops.mr_dereg(lmr);
        free(buf);
        cr_assert_eq(p.smem[len - 1], (uint8_t)round);
    }
    t_close(&p);
}

static int raw_connect(uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

/* More silent connections on a rail port than the accept thread tracks
 * (RW_TCP_MAX_PENDING) must not lock a real client out until they time
 * out: its rail (both sides bounded by 3 s) comes up although the server
 * waits 20 s for the silent ones' hellos. */
Test(tcp_review, a_flood_of_silent_connections_does_not_lock_out_a_client, .timeout = 120)
{
    enum { N = RW_TCP_MAX_PENDING + 44 };
    struct tpair p;
    static int silent[N];
    int srv_rc;

    t_open(&p, "127.0.0.1", 20000);
    struct rw_ep_cfg scfg = {.depth = 4, .exposed = &p.smr, .n_exposed = 1};
    struct rw_ep_cfg ccfg = {.depth = 4};
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &p.sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &p.cep), 0);
    uint16_t port = (uint16_t)(p.sep->local.qpn & 0xffff);
    for (int i = 0; i < N; i++)
        silent[i] = raw_connect(port);
    usleep(200 * 1000);
    cr_assert_eq(t_connect_both(p.sep, p.cep, 3000, &srv_rc), 0);
    cr_assert_eq(srv_rc, 0);
    for (int i = 0; i < N; i++)
        close(silent[i]);
    t_close(&p);
}
