/* SPDX-License-Identifier: MIT */
/* Scale (issue 8): 1000 sessions x 2 rails on one server, served by the
 * bounded pool of event loops: every rail attaches and answers, and the
 * server side costs a fixed number of threads, not one per rail. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tcp/tcp_loop.h"
#include "tcp_fixture.h"
#include "tcp_raw.h"

#define SESSIONS 1000
#define RAILS 2
#define N (SESSIONS * RAILS)
#define BATCH 100 /* rails dialled before their verdicts are read (< RW_TCP_MAX_PENDING) */

Test(tcp_scale, thousand_sessions_two_rails_each, .timeout = 60)
{
    static struct rw_ep *sep[N];
    static int fd[N];
    struct rw_ep_cfg scfg = {.depth = 8};
    struct rlimit rl;
    struct tpair p;
    int threads, named, i, j;
    uint16_t port;
    uint8_t ans[RW_TCP_RESP_SIZE + 4096];

    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * N + 200)
        cr_skip_test("needs %d descriptors, the hard limit is %lu", 2 * N + 200,
                     (unsigned long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    t_open(&p, "127.0.0.1", 0);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    for (i = 0; i < N; i++) {
        struct rw_qp_id cli = {.qpn = 0x10000u + (unsigned)i, .psn = 0x5150u ^ (unsigned)i};
        scfg.same_session = i % RAILS ? sep[i - 1] : NULL;
        cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &sep[i]), 0, "ep %d", i);
        cr_assert_eq(rw_tcp_ops.ep_connect(sep[i], &cli, 0), 0);
    }
    port = (uint16_t)(sep[0]->local.qpn & 0xffff);
    for (i = 0; i < N; i += BATCH) {
        for (j = i; j < i + BATCH; j++) {
            fd[j] = raw_rail_open(NULL, port, &sep[j]->local, 0x10000u + (unsigned)j,
                                  0x5150u ^ (unsigned)j, 0);
            cr_assert_geq(fd[j], 0, "rail %d dials", j);
        }
        for (j = i; j < i + BATCH; j++)
            cr_assert_eq(raw_rail_verdict(fd[j], 10000), RW_TCP_VERDICT_OK, "rail %d attached", j);
    }
    /* Every rail answers a READ, all of them in flight at once. */
    for (i = 0; i < N; i++)
        cr_assert_eq(raw_rail_request(fd[i], RW_TCP_OP_READ, 4096, (uint64_t)i,
                                      p.smr->remote_base + (uint64_t)(i % 1000) * 4096,
                                      p.smr->rkey), 0);
    for (i = 0; i < N; i++) {
        struct rw_tcp_resp r;
        cr_assert_eq(raw_read_all(fd[i], ans, sizeof(ans), 10000), 0, "rail %d answers", i);
        rw_tcp_resp_decode(ans, &r);
        cr_assert_eq(r.tag, (uint64_t)i);
        cr_assert_eq(r.status, RW_TCP_ST_OK);
        cr_assert_eq(memcmp(ans + RW_TCP_RESP_SIZE, p.smem + (size_t)(i % 1000) * 4096, 4096), 0);
        cr_assert_eq(rw_tcp_ops.ep_liveness(sep[i]), RW_EP_LIVE);
    }
    threads = proc_threads("rw-tcp", &named);
    fprintf(stderr, "tcp_scale: %d sessions x %d rails: %d threads in the process (%d of them "
            "rw-tcp-*: %u event loop(s) + 1 accept), RSS %ld KiB, %d fds (%d of them the test's "
            "raw clients)\n", SESSIONS, RAILS, threads, named, rw_tcp_pool_threads(),
            proc_rss_kib(), proc_fds(), N);
    cr_assert_leq(named, RW_TCP_LOOPS_MAX + 1, "server threads: loops + accept");
    cr_assert_leq(threads, named + 4, "%d threads for %d rails: no thread per rail", threads, N);
    for (i = 0; i < N; i++) {
        close(fd[i]);
        rw_tcp_ops.ep_destroy(sep[i]);
    }
    t_close(&p);
}
