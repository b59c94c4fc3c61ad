/* SPDX-License-Identifier: MIT */
/* Busy polling is bounded (common/busy_poll.h): a client's receive thread
 * (now its client event loop, the thread that receives for the rail) spins
 * only while answers are awaited and for one window at most when the
 * server is silent; an event loop spins only right after it served, so an
 * idle or stalled peer never keeps a thread on the CPU.  Each test gives a
 * window far longer than the default (tens of milliseconds) and checks the
 * CPU time the thread took afterwards: a thread that kept spinning takes
 * most of the wall time, one that sleeps takes almost none. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_loop.h"
#include "tcp_fixture.h"

#define WINDOW_US 30000 /* 30 ms */
#define IDLE_MS 600
#define SLEEPING_MAX_NS (60ull * 1000000ull) /* 10% of IDLE_MS */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* CPU time of one of our threads, in ns. */
static uint64_t thread_cpu_ns(pthread_t t)
{
    clockid_t id;
    struct timespec ts;
    cr_assert_eq(pthread_getcpuclockid(t, &id), 0);
    cr_assert_eq(clock_gettime(id, &ts), 0);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of every event-loop thread of the process (by name), in ns,
 * from /proc/self/task/TID/schedstat. */
static uint64_t loops_cpu_ns(unsigned *n_loops)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    uint64_t sum = 0;
    *n_loops = 0;
    cr_assert_not_null(d);
    while ((e = readdir(d))) {
        char path[320], comm[32] = "";
        unsigned long long ns = 0;
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = 0;
        fclose(f);
        if (strncmp(comm, "rw-tcp-loop", 11) != 0)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fscanf(f, "%llu", &ns) == 1) {
            sum += ns;
            (*n_loops)++;
        }
        fclose(f);
    }
    closedir(d);
    return sum;
}

static struct rw_tcp_cli_ep *cli_of(struct rw_ep *ep)
{
    return rw_container_of(ep, struct rw_tcp_cli_ep, base);
}

/* A client ep of window `us` connected to a fake server that never answers. */
static void silent_open(struct t_silent *s, int us)
{
    struct rw_ep_cfg ecfg = {.depth = 16, .busy_poll_us = us};

    t_silent_open(s, &ecfg, 4096);
}

Test(busy_poll, an_idle_rail_never_spins)
{
    static struct t_silent s;
    silent_open(&s, 1000000); /* a one-second window: it must not open at all */
    pthread_t rx = rw_tcp_cli_loop_thread(cli_of(s.cep));
    sleep_ms(50);
    uint64_t t0 = thread_cpu_ns(rx);
    sleep_ms(IDLE_MS);
    uint64_t used = thread_cpu_ns(rx) - t0;
    cr_assert_lt(used, SLEEPING_MAX_NS,
                 "the receive thread of a rail with nothing outstanding took %llu ms of CPU in "
                 "%d ms", (unsigned long long)(used / 1000000), IDLE_MS);
    t_silent_close(&s);
}

Test(busy_poll, a_silent_server_gets_one_window_then_the_receiver_sleeps)
{
    static struct t_silent s;
    silent_open(&s, WINDOW_US);
    pthread_t rx = rw_tcp_cli_loop_thread(cli_of(s.cep));
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = s.buf, .mr = s.lmr,
                       .length = 4096, .remote_addr = 0x1000, .rkey = 1};
    cr_assert_eq(rw_tcp_ops.ep_post(s.cep, &wr, 1), 1);
    sleep_ms(3 * WINDOW_US / 1000); /* the window has passed */
    uint64_t t0 = thread_cpu_ns(rx);
    sleep_ms(IDLE_MS);
    uint64_t used = thread_cpu_ns(rx) - t0;
    cr_assert_lt(used, SLEEPING_MAX_NS,
                 "the receive thread awaiting an answer that never comes took %llu ms of CPU in "
                 "%d ms after its %d ms window", (unsigned long long)(used / 1000000), IDLE_MS,
                 WINDOW_US / 1000);
    struct rw_wc wc;
    cr_assert_eq(rw_tcp_ops.ep_poll(s.cep, &wc, 1), 0, "the READ is still outstanding");
    t_silent_close(&s);
}

/* Transfers complete with the spin off and with a long one (the default's
 * path is every other suite). */
static void pipelined_reads(int us)
{
    static struct tpair p;
    struct rw_ep_cfg ccfg = {.depth = 32, .busy_poll_us = us};
    uint8_t *buf = malloc(32 * 4096);
    struct rw_mr *lmr;
    struct rw_wr wrs[32];
    struct rw_wc wcs[32];

    t_open(&p, "127.0.0.1", 0);
    t_connect_cfg(&p, NULL, 0, &ccfg);
    cr_assert_not_null(buf);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, 32 * 4096, RW_ACCESS_LOCAL, &lmr), 0);
    for (int round = 0; round < 50; round++) {
        memset(buf, 0, 32 * 4096);
        for (int i = 0; i < 32; i++)
            wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = RW_OP_READ,
                                    .local = buf + (size_t)i * 4096, .mr = lmr, .length = 4096,
                                    .remote_addr = p.smr->remote_base + (uint64_t)(round * 32 + i) * 4096,
                                    .rkey = p.smr->rkey};
        int got = t_post_all(p.cep, wrs, 32, wcs, 10000);
        cr_assert_eq(t_wait(p.cep, wcs + got, 32 - got, 10000), 32 - got);
        for (int i = 0; i < 32; i++) {
            cr_assert_eq(wcs[i].status, 0);
            cr_assert_eq(memcmp(buf + (size_t)wcs[i].wr_id * 4096,
                                p.smem + (size_t)(round * 32 + (int)wcs[i].wr_id) * 4096, 4096), 0);
        }
    }
    rw_tcp_ops.mr_dereg(lmr);
    free(buf);
    t_close(&p);
}

Test(busy_poll, transfers_complete_with_the_spin_off)
{
    pipelined_reads(-1);
}

Test(busy_poll, transfers_complete_with_a_long_spin)
{
    pipelined_reads(WINDOW_US);
}

Test(busy_poll, an_event_loop_sleeps_once_its_client_stops)
{
    static struct tpair p;
    uint8_t buf[4096];
    struct rw_mr *lmr;
    struct rw_wc wc;
    unsigned n_loops;

    t_open(&p, "127.0.0.1", 0);
    rw_tcp_pool_busy_poll(WINDOW_US);
    t_connect(&p, NULL, 0, 16);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, sizeof(buf), RW_ACCESS_LOCAL, &lmr), 0);
    for (int i = 0; i < 100; i++) {
        struct rw_wr wr = {.wr_id = (uint64_t)i, .opcode = RW_OP_READ, .local = buf, .mr = lmr,
                           .length = sizeof(buf), .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey};
        cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
        cr_assert_eq(t_wait(p.cep, &wc, 1, 10000), 1);
        cr_assert_eq(wc.status, 0);
    }
    sleep_ms(3 * WINDOW_US / 1000); /* the loop's window after the last READ has passed */
    uint64_t t0 = loops_cpu_ns(&n_loops);
    cr_assert_gt(n_loops, 0, "no event-loop thread found");
    sleep_ms(IDLE_MS);
    uint64_t used = loops_cpu_ns(&n_loops) - t0;
    cr_assert_lt(used, SLEEPING_MAX_NS,
                 "%u event loop(s) with an idle client took %llu ms of CPU in %d ms", n_loops,
                 (unsigned long long)(used / 1000000), IDLE_MS);
    rw_tcp_pool_busy_poll(0);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
}
