/* SPDX-License-Identifier: MIT */
/* A waiting caller receiving on its own rail (src/tcp/tcp_cli_attend.c)
 * racing the rail's loop (a plain program, so that it also runs under
 * ThreadSanitizer).  Runs as ctest `tcp_cli_attend_threads`.
 *   build/tests/threads/tcp_cli_attend_threads [rounds]
 *
 * Each round: one client rail (so the caller may attend it), one thread
 * posting small READs and WRITEs at depth 1, 2 and 8 and waiting the way the
 * railset does (ep_arm, ep_poll, poll on the wait fd, ep_poll), a second
 * thread posting large READs on the same rail now and then (the caller
 * hands the input back to the loop, then takes it again), and, in odd
 * rounds, a third thread that kills the rail while answers are awaited.
 * Checks: every answer on a live rail is OK, every small request posted
 * completes (within 20 s: no lost wake-up), and the rail dies and is
 * destroyed cleanly under the race (ASan/TSan builds). */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_loop.h"
#include "transport/transport.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define ITERS 400

static struct rw_domain *sdom, *cdom;
static struct rw_mr *smr, *cmr;
static uint8_t *smem, *cmem;
static struct rw_ep *sep, *cep;
static pthread_mutex_t post_lock = PTHREAD_MUTEX_INITIALIZER;

static void check(int bad, const char *what)
{
    if (bad) {
        fprintf(stderr, "tcp_cli_attend_threads: %s failed\n", what);
        exit(1);
    }
}

#define BIG_ID 99

/* Reaps the railset's way until `want` small completions came back (big
 * READs' completions are reaped too, not counted); returns the small ones
 * and adds the ones not OK to *bad. */
static int reap(int want, int *bad)
{
    struct rw_wc wc[4];
    int got = 0, fd = rw_tcp_ops.ep_wait_fd(cep);
    int64_t dl = rw_now_ms() + 20000;

    while (got < want && rw_now_ms() < dl) {
        int n = rw_tcp_ops.ep_poll(cep, wc, 4);
        if (n == 0) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            check(rw_tcp_ops.ep_arm(cep) < 0, "arm");
            n = rw_tcp_ops.ep_poll(cep, wc, 4); /* the ops contract: once more */
            if (n == 0) {
                poll(&p, 1, 10);
                continue;
            }
        }
        for (int k = 0; k < n; k++) {
            *bad += wc[k].status != 0;
            got += wc[k].wr_id != BIG_ID; /* a big READ's completion is not ours */
        }
    }
    return got;
}

static void *small_work(void *arg)
{
    int round = *(int *)arg, killed = 0;

    for (int it = 0; it < ITERS && !killed; it++) {
        static const int depths[] = {1, 2, 8};
        int depth = depths[it % 3], bad = 0, n;
        struct rw_wr wr[8];
        for (int k = 0; k < depth; k++) {
            size_t off = (size_t)k * 4 * KIB;
            wr[k] = (struct rw_wr){.wr_id = (uint64_t)k,
                                   .opcode = (it + k) % 3 ? RW_OP_READ : RW_OP_WRITE,
                                   .local = cmem + off, .mr = cmr, .length = 4 * KIB,
                                   .remote_addr = smr->remote_base + off, .rkey = smr->rkey};
            if (wr[k].opcode == RW_OP_WRITE)
                memset(cmem + off, (int)(it + k), 4 * KIB);
        }
        pthread_mutex_lock(&post_lock);
        n = rw_tcp_ops.ep_post(cep, wr, (size_t)depth);
        pthread_mutex_unlock(&post_lock);
        if (n < 0) {
            check(!(round % 2), "post on a live rail");
            break;
        }
        check(reap(n, &bad) != n, "completions");
        check(!(round % 2) && bad, "a transfer on a live rail");
        killed = bad != 0;
    }
    return NULL;
}

static void *big_work(void *arg)
{
    (void)arg;
    for (int it = 0; it < 8; it++) {
        struct rw_wr wr = {.wr_id = BIG_ID, .opcode = RW_OP_READ, .local = cmem + 64 * KIB,
                           .mr = cmr, .length = 1 * MIB, .remote_addr = smr->remote_base + MIB,
                           .rkey = smr->rkey};
        /* Only posts: the small worker reaps everything (one reaper per ep,
         * as under a railset). */
        pthread_mutex_lock(&post_lock);
        int n = rw_tcp_ops.ep_post(cep, &wr, 1);
        pthread_mutex_unlock(&post_lock);
        if (n < 0)
            break;
        usleep(2000);
    }
    return NULL;
}

static void *killer(void *arg)
{
    (void)arg;
    usleep(20000);
    rw_tcp_ops.ep_kill(cep);
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "127.0.0.1", .io_timeout_ms = 20000};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1", .io_timeout_ms = 20000};

    smem = calloc(1, 4 * MIB);
    cmem = calloc(1, 2 * MIB);
    check(!smem || !cmem, "memory");
    check(rw_tcp_ops.domain_open(&sc, &sdom) != 0, "server domain");
    check(rw_tcp_ops.domain_open(&cc, &cdom) != 0, "client domain");
    check(rw_tcp_ops.mr_reg(sdom, smem, 4 * MIB, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE,
                            &smr) != 0, "server mr");
    check(rw_tcp_ops.mr_reg(cdom, cmem, 2 * MIB, RW_ACCESS_LOCAL, &cmr) != 0, "client mr");
    for (int r = 0; r < rounds; r++) {
        struct rw_ep_cfg scfg = {.depth = 16, .exposed = &smr, .n_exposed = 1};
        struct rw_ep_cfg ccfg = {.depth = 16, .lazy_verdict = r % 2};
        pthread_t ts, tb, tk;

        check(rw_tcp_ops.ep_create(sdom, &scfg, &sep) != 0, "sep");
        check(rw_tcp_ops.ep_create(cdom, &ccfg, &cep) != 0, "cep");
        check(rw_tcp_ops.ep_connect(sep, &cep->local, 0) != 0, "expect");
        check(rw_tcp_ops.ep_connect(cep, &sep->local, 5000) != 0, "connect");
        pthread_create(&ts, NULL, small_work, &r);
        pthread_create(&tb, NULL, big_work, NULL);
        if (r % 2)
            pthread_create(&tk, NULL, killer, NULL);
        pthread_join(ts, NULL);
        pthread_join(tb, NULL);
        if (r % 2)
            pthread_join(tk, NULL);
        /* big READs still outstanding complete rail-down in the destroy */
        rw_tcp_ops.ep_destroy(cep);
        rw_tcp_ops.ep_destroy(sep);
        check(rw_tcp_cli_pool_threads() != 0, "the loops stop with the last rail");
    }
    rw_tcp_ops.mr_dereg(cmr);
    rw_tcp_ops.mr_dereg(smr);
    rw_tcp_ops.domain_close(cdom);
    rw_tcp_ops.domain_close(sdom);
    free(smem);
    free(cmem);
    printf("tcp_cli_attend_threads: %d rounds done\n", rounds);
    return 0;
}
