/* SPDX-License-Identifier: MIT */
/* The tcp client's shared event loops (issue 20): rails cost loop threads
 * bounded by the cores, not threads per rail; every railset of a process
 * shares them; a stalled rail does not hold up the others on its loop;
 * railsets close in any order; a fork()ed child closes an inherited
 * railset without waiting for loop threads it does not have.
 *
 * The server runs in a child process forked before any thread exists, so
 * the threads counted in /proc/self/task are the client's only. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_loop.h"
#include "tcp_fixture.h"

#define MIB (1024u * 1024u)
#define ARENA (64u * MIB)

static uint8_t pat(size_t i)
{
    return (uint8_t)(i * 131u + (i >> 12) * 7u + 1u);
}

struct child_srv {
    pid_t pid;
    int ctl;        /* closing it stops the server */
    char port[16];
};

/* Forks a process serving an RW arena of ARENA pattern-filled bytes on
 * loopback; returns when it listens. */
static void srv_fork(struct child_srv *c)
{
    int sv[2];
    unsigned port = 0;

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    c->pid = fork();
    cr_assert_geq(c->pid, 0);
    if (c->pid == 0) {
        railwire_server_opts o;
        railwire_server *s;
        uint8_t *mem = malloc(ARENA), b;
        close(sv[0]);
        if (!mem)
            _exit(2);
        for (size_t i = 0; i < ARENA; i++)
            mem[i] = pat(i);
        railwire_server_opts_init(&o);
        o.dialect = RAILWIRE_DIALECT_RW;
        o.transport = RAILWIRE_TRANSPORT_TCP;
        o.listen_host = "127.0.0.1";
        o.arena = (railwire_region){mem, ARENA};
        if (railwire_server_create(&o, &s))
            _exit(3);
        port = railwire_server_port(s);
        if (write(sv[1], &port, sizeof(port)) != sizeof(port))
            _exit(4);
        while (read(sv[1], &b, 1) > 0) /* until the parent closes */
            ;
        railwire_server_destroy(s);
        free(mem);
        _exit(0);
    }
    close(sv[1]);
    cr_assert_eq(read(sv[0], &port, sizeof(port)), (ssize_t)sizeof(port), "the server started");
    c->ctl = sv[0];
    snprintf(c->port, sizeof(c->port), "%u", port);
}

static void srv_stop(struct child_srv *c)
{
    int st;
    close(c->ctl);
    cr_assert_eq(waitpid(c->pid, &st, 0), c->pid);
}

static railwire_railset *rs_open(struct child_srv *c, unsigned rails)
{
    railwire_railset_opts o;
    railwire_railset *rs;

    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.connect_timeout_ms = 20000;
    o.io_timeout_ms = 20000;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", c->port, &o, &rs), 0, "%u rails connect",
                 rails);
    cr_assert_eq(railwire_railset_rail_count(rs), rails);
    return rs;
}

static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

/* A batch of READs in flight on one railset (checked when reaped). */
struct batch {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf;
    size_t each;
    unsigned n;
};

static void batch_submit(struct batch *b, railwire_railset *rs, unsigned n, size_t each)
{
    b->rs = rs;
    b->n = n;
    b->each = each;
    b->buf = calloc(n, each);
    cr_assert_not_null(b->buf);
    cr_assert_eq(railwire_mr_register(rs, b->buf, (size_t)n * each, &b->mr), 0);
    for (unsigned i = 0; i < n; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = b->mr, .local = b->buf + i * each,
                          .length = each, .remote_offset = (uint64_t)i * each % (ARENA - each),
                          .user_data = i};
        railwire_handle h;
        cr_assert_eq(railwire_submit(rs, &op, &h), 0);
    }
}

static void batch_reap(struct batch *b)
{
    railwire_completion c[16];
    unsigned got = 0;

    while (got < b->n) {
        int k = railwire_wait(b->rs, c, 16, 30000);
        cr_assert_gt(k, 0, "transfers complete (%u of %u so far)", got, b->n);
        for (int j = 0; j < k; j++)
            cr_assert_eq(c[j].status, 0, "transfer %llu: %s", (unsigned long long)c[j].user_data,
                         railwire_strerror(c[j].status));
        got += (unsigned)k;
    }
    for (unsigned i = 0; i < b->n; i++) {
        size_t off = (size_t)i * b->each % (ARENA - b->each);
        for (size_t k = 0; k < b->each; k += 4093)
            cr_assert_eq(b->buf[i * b->each + k], pat(off + k), "READ %u byte %zu", i, k);
    }
    cr_assert_eq(railwire_mr_deregister(b->mr), 0);
    free(b->buf);
}

Test(tcp_loops, a_64_rail_railset_runs_on_at_most_cores_plus_2_threads, .timeout = 120)
{
    struct child_srv c;
    struct batch b;
    int during;

    srv_fork(&c);
    railwire_railset *rs = rs_open(&c, 64);
    batch_submit(&b, rs, 256, 1 * MIB);
    during = task_count();
    cr_assert_leq(rw_tcp_cli_pool_threads(), (unsigned)cores(), "loops: at most one per core");
    cr_assert_leq(during, cores() + 2, "%d threads hold a 64-rail railset while it transfers "
                  "(%d cores)", during, cores());
    batch_reap(&b);
    railwire_railset_close(rs);
    cr_assert_eq(rw_tcp_cli_pool_threads(), 0, "the loops stop with the last rail");
    srv_stop(&c);
}

Test(tcp_loops, eight_8_rail_railsets_run_on_at_most_cores_plus_2_threads, .timeout = 120)
{
    struct child_srv c;
    railwire_railset *rs[8];
    struct batch b[8];
    int during;

    srv_fork(&c);
    for (int i = 0; i < 8; i++)
        rs[i] = rs_open(&c, 8);
    for (int i = 0; i < 8; i++)
        batch_submit(&b[i], rs[i], 32, 1 * MIB);
    during = task_count();
    cr_assert_leq(during, cores() + 2, "%d threads hold eight 8-rail railsets while they "
                  "transfer (%d cores)", during, cores());
    for (int i = 0; i < 8; i++)
        batch_reap(&b[i]);
    for (int i = 0; i < 8; i++)
        railwire_railset_close(rs[i]);
    srv_stop(&c);
}

/* Two railsets on the same loops: either one closes first while the other
 * keeps transferring. */
static void two_railsets(int first)
{
    struct child_srv c;
    railwire_railset *rs[2];
    struct batch b, b2;

    srv_fork(&c);
    rw_tcp_cli_pool_configure(2); /* fewer loops than rails on any machine */
    rs[0] = rs_open(&c, 4);
    rs[1] = rs_open(&c, 4);
    cr_assert_leq(rw_tcp_cli_pool_threads(), 2u, "the 8 rails of two railsets share 2 loops");
    batch_submit(&b, rs[first], 16, 1 * MIB);
    batch_submit(&b2, rs[!first], 16, 1 * MIB);
    batch_reap(&b);
    batch_reap(&b2);
    railwire_railset_close(rs[first]);
    batch_submit(&b, rs[!first], 64, 256 * 1024);
    batch_reap(&b);
    railwire_railset_close(rs[!first]);
    cr_assert_eq(rw_tcp_cli_pool_threads(), 0);
    srv_stop(&c);
}

Test(tcp_loops, two_railsets_share_the_loops_and_the_first_closes_first, .timeout = 120)
{
    two_railsets(0);
}

Test(tcp_loops, two_railsets_share_the_loops_and_the_second_closes_first, .timeout = 120)
{
    two_railsets(1);
}

Test(tcp_loops, a_forked_child_closes_an_inherited_railset_without_hanging, .timeout = 120)
{
    struct child_srv c;
    struct batch b;
    pid_t pid;
    int st = 0, done = 0;

    srv_fork(&c);
    railwire_railset *rs = rs_open(&c, 4);
    batch_submit(&b, rs, 8, 1 * MIB);
    batch_reap(&b);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        railwire_railset_close(rs);
        _exit(0);
    }
    /* Bounded wait: the test fails (and kills the child) instead of hanging. */
    for (int i = 0; i < 1000 && !done; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            done = 1;
        else
            usleep(20000);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    cr_assert(done, "the child closing its inherited railset did not exit within 20 s");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child exited cleanly (status 0x%x)", st);
    /* The parent's rails were not disturbed by the child. */
    batch_submit(&b, rs, 8, 1 * MIB);
    batch_reap(&b);
    railwire_railset_close(rs);
    srv_stop(&c);
}

/* One loop serves every rail; one rail's server never reads (its requests
 * fill the socket buffers), and the other rail's transfers all complete
 * while it stays stalled. */
Test(tcp_loops, a_stalled_rail_does_not_hold_up_the_others_on_its_loop, .timeout = 120)
{
    static uint8_t big[8 * MIB];
    static uint8_t buf[64 * 1024 * 64];
    static struct rw_wr wrs[256];
    static struct rw_wc wcs[256];
    struct rw_ep_cfg scfg = {.depth = 16, .lazy_verdict = 1};
    struct rw_ep *stalled;
    struct rw_mr *bmr, *lmr;
    struct rw_wc wc;
    struct tpair p;
    int lfd, n;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t alen = sizeof(a);

    rw_tcp_cli_pool_configure(1);
    t_open(&p, "127.0.0.1", 30000);
    /* A listener that never accepts: the kernel completes the connection and
     * queues what the rail sends until the buffers are full. */
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(lfd, 0);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    struct rw_qp_id id = t_loopback_id(ntohs(a.sin_port), 0, 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &scfg, &stalled), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(stalled, &id, 5000), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, big, sizeof(big), RW_ACCESS_LOCAL, &bmr), 0);
    for (int i = 0; i < 8; i++)
        wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = RW_OP_WRITE, .local = big,
                                .mr = bmr, .length = sizeof(big), .remote_addr = 0, .rkey = 1};
    cr_assert_eq(rw_tcp_ops.ep_post(stalled, wrs, 8), 8);

    /* The healthy rail, on the same (only) loop. */
    t_connect(&p, NULL, 0, 64);
    cr_assert_eq(rw_tcp_cli_pool_threads(), 1u);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, sizeof(buf), RW_ACCESS_LOCAL, &lmr), 0);
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 256; i++)
            wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = i % 2 ? RW_OP_WRITE : RW_OP_READ,
                                    .local = buf + (size_t)(i % 64) * 65536, .mr = lmr,
                                    .length = 65536,
                                    .remote_addr = p.smr->remote_base + (uint64_t)(i % 64) * 65536,
                                    .rkey = p.smr->rkey};
        n = t_post_all(p.cep, wrs, 256, wcs, 30000);
        n += t_wait(p.cep, wcs + n, 256 - n, 30000);
        cr_assert_eq(n, 256, "round %d: the healthy rail completed %d of 256", round, n);
        for (int i = 0; i < n; i++)
            cr_assert_eq(wcs[i].status, 0);
    }
    cr_assert_eq(rw_tcp_ops.ep_poll(stalled, &wc, 1), 0, "the stalled rail is still stalled");
    rw_tcp_ops.ep_destroy(stalled); /* kill with a send blocked: must not hang */
    close(lfd);
    rw_tcp_ops.mr_dereg(bmr);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
}

/* A railset's rails are created in order and connect in parallel, so they
 * attach in any order: rail i still goes to loop (rail 0's place + i) mod 2 on
 * the client and (the session's base + i) mod 2 on the server, so each
 * client loop talks to one server loop (on one host, the two ends of a rail can share a CPU). */
Test(tcp_loops, consecutive_rails_go_to_consecutive_loops_at_both_ends, .timeout = 60)
{
    enum { N = 4 };
    struct tpair p;
    struct rw_ep *sep[N], *cep[N];
    struct rw_ep_cfg scfg = {.depth = 16, .set_rails = N}, ccfg = {.depth = 16, .set_rails = N};
    pthread_t th[N];
    const void *sloop[N];
    int srv_rc;

    rw_tcp_pool_configure(2);
    rw_tcp_cli_pool_configure(2);
    t_open(&p, "127.0.0.1", 10000);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    for (int i = 0; i < N; i++) {
        scfg.same_session = i ? sep[0] : NULL;
        cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &sep[i]), 0);
        cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &cep[i]), 0);
    }
    static const int order[N] = {0, 2, 1, 3}; /* not the order they were created in */
    for (int k = 0; k < N; k++) {
        int i = order[k];
        cr_assert_eq(t_connect_both(sep[i], cep[i], 5000, &srv_rc), 0, "rail %d connects", i);
        cr_assert_eq(srv_rc, 0, "the server accepts rail %d", i);
    }
    for (int i = 0; i < N; i++) {
        const struct rw_tcp_srv_ep *s = (const struct rw_tcp_srv_ep *)sep[i];
        th[i] = rw_tcp_cli_loop_thread((const struct rw_tcp_cli_ep *)cep[i]);
        sloop[i] = s->conn.loop;
        cr_assert_not_null(sloop[i], "rail %d is on a server loop", i);
    }
    cr_assert_eq(rw_tcp_cli_pool_threads(), 2u);
    for (int i = 0; i + 1 < N; i++) {
        cr_assert(!pthread_equal(th[i], th[i + 1]), "client rails %d and %d are on different loops",
                  i, i + 1);
        cr_assert_neq(sloop[i], sloop[i + 1], "server rails %d and %d are on different loops", i,
                      i + 1);
    }
    for (int i = 0; i + 2 < N; i++) {
        cr_assert(pthread_equal(th[i], th[i + 2]), "client rails %d and %d share a loop", i, i + 2);
        cr_assert_eq(sloop[i], sloop[i + 2], "server rails %d and %d share a loop", i, i + 2);
    }
    for (int i = 0; i < N; i++) {
        rw_tcp_ops.ep_destroy(cep[i]);
        rw_tcp_ops.ep_destroy(sep[i]);
    }
    t_close(&p);
}

/* A process on one CPU: its tcp railset of 2 rails packs small transfers
 * (rw_stripe_packs: the rails' loops would share the CPU), so 16 READs of
 * 4 KiB in flight at once all go to one rail. */
Test(tcp_loops, two_rails_on_one_cpu_pack_small_transfers_onto_one_rail, .timeout = 120)
{
    struct child_srv c;
    struct batch b;
    railwire_rail_stats st[2];
    cpu_set_t one;

    srv_fork(&c); /* before the pinning: the server keeps its CPUs */
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    railwire_railset *rs = rs_open(&c, 2);
    batch_submit(&b, rs, 16, 4096);
    batch_reap(&b);
    cr_assert_eq(railwire_railset_stats(rs, st, 2, sizeof(st[0])), 2);
    cr_assert((st[0].ops == 16 && st[1].ops == 0) || (st[0].ops == 0 && st[1].ops == 16),
              "16 small READs on one rail: rail 0 carried %llu, rail 1 %llu",
              (unsigned long long)st[0].ops, (unsigned long long)st[1].ops);
    railwire_railset_close(rs);
    srv_stop(&c);
}
