/* SPDX-License-Identifier: MIT */
/* The tcp client's shared event loops under load, from many threads (a
 * plain program: it must also run under ThreadSanitizer, where Criterion
 * does not start).  Runs in every build as ctest `tcp_cli_loop_threads`;
 * scripts/test.sh's tsan stage runs it under TSan.
 *   build/tests/threads/tcp_cli_loop_threads [rounds]
 *
 * Each round: 16 rails on 2 client loops, 4 threads each driving 4 rails
 * with small requests (written inline by the posting thread) and large
 * ones (written by the loop) mixed, so both race for the same sockets;
 * one rail's server never reads (it stays stalled on its loop); each
 * thread kills one of its rails with requests in flight and destroys the
 * rest at the end, so the pool stops and starts again every round. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_loop.h"
#include "transport/transport.h"

#define THREADS 4
#define PER 4
#define RAILS (THREADS * PER)
#define KIB 1024u
#define MIB (1024u * 1024u)
#define ITERS 40

static struct rw_domain *sdom, *cdom;
static struct rw_mr *smr;
static uint8_t *smem;

static void check(int bad, const char *what)
{
    if (bad) {
        fprintf(stderr, "tcp_cli_loop_threads: %s failed\n", what);
        exit(1);
    }
}

struct worker {
    int id, round;
    struct rw_ep *sep[PER], *cep[PER];
    uint8_t *buf;
    struct rw_mr *mr;
};

/* Posts a mix on each live rail and reaps it; rail `victim` is killed with
 * requests in flight half way. */
static void *work(void *arg)
{
    struct worker *w = arg;
    int victim = (w->id + w->round) % PER;

    for (int it = 0; it < ITERS; it++) {
        int posted[PER];
        for (int i = 0; i < PER; i++) {
            struct rw_wr wr[4];
            for (int k = 0; k < 4; k++) {
                uint32_t len = k % 2 ? 4 * KIB : 256 * KIB;
                wr[k] = (struct rw_wr){.wr_id = (uint64_t)k, .opcode = (k + it) % 3 ? RW_OP_READ
                                                                                    : RW_OP_WRITE,
                                       .local = w->buf + ((size_t)i * 4 + (size_t)k) * 256 * KIB,
                                       .mr = w->mr, .length = len,
                                       .remote_addr = smr->remote_base +
                                                      (uint64_t)(w->id * 16 + i * 4 + k) * 256 * KIB,
                                       .rkey = smr->rkey};
            }
            int n = rw_tcp_ops.ep_post(w->cep[i], wr, 4);
            check(n < 0 && !(i == victim && n == RAILWIRE_E_RAIL_DOWN), "post");
            posted[i] = n < 0 ? 0 : n;
        }
        if (it == ITERS / 2)
            rw_tcp_ops.ep_kill(w->cep[victim]);
        for (int i = 0; i < PER; i++) {
            struct rw_wc wc[8];
            int64_t dl = rw_now_ms() + 20000;
            int got = 0, want = posted[i];
            while (got < want && rw_now_ms() < dl) {
                int n = rw_tcp_ops.ep_poll(w->cep[i], wc, 8);
                check(n < 0, "poll");
                for (int k = 0; k < n; k++)
                    check(!(i == victim && it == ITERS / 2) && wc[k].status != 0,
                          "a transfer on a live rail");
                got += n;
                if (got < want)
                    usleep(100);
            }
            /* a killed rail completes what it had (rail-down); posts after
             * the kill fail and leave nothing to reap */
            check(got < want, "completions");
        }
    }
    return NULL;
}

/* A rail whose server accepts nothing: what it sends stays queued. */
static struct rw_ep *stalled_rail(int *lfd, struct rw_mr *mr, uint8_t *buf)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t alen = sizeof(a);
    struct rw_ep_cfg cfg = {.depth = 8, .lazy_verdict = 1};
    struct rw_qp_id id = {.qpn = 0, .psn = 0};
    struct rw_ep *ep;
    struct rw_wr wr[4];

    *lfd = socket(AF_INET, SOCK_STREAM, 0);
    check(*lfd < 0 || bind(*lfd, (struct sockaddr *)&a, sizeof(a)) || listen(*lfd, 4) ||
              getsockname(*lfd, (struct sockaddr *)&a, &alen), "listener");
    id.qpn = ntohs(a.sin_port);
    id.gid[10] = id.gid[11] = 0xff; /* ::ffff:127.0.0.1 */
    id.gid[12] = 127;
    id.gid[15] = 1;
    check(rw_tcp_ops.ep_create(cdom, &cfg, &ep) != 0, "stalled ep");
    check(rw_tcp_ops.ep_connect(ep, &id, 5000) != 0, "stalled connect");
    for (int k = 0; k < 4; k++)
        wr[k] = (struct rw_wr){.wr_id = (uint64_t)k, .opcode = RW_OP_WRITE, .local = buf,
                               .mr = mr, .length = 4 * MIB, .remote_addr = 0, .rkey = 1};
    check(rw_tcp_ops.ep_post(ep, wr, 4) != 4, "stalled post");
    return ep;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "127.0.0.1", .io_timeout_ms = 20000};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1", .io_timeout_ms = 20000};
    static struct worker w[THREADS];
    uint8_t *big = calloc(1, 4 * MIB);
    struct rw_mr *bmr;

    smem = calloc(1, 16 * MIB);
    check(!smem || !big, "memory");
    rw_tcp_pool_configure(2);
    rw_tcp_cli_pool_configure(2);
    check(rw_tcp_ops.domain_open(&sc, &sdom) != 0, "server domain");
    check(rw_tcp_ops.domain_open(&cc, &cdom) != 0, "client domain");
    check(rw_tcp_ops.mr_reg(sdom, smem, 16 * MIB, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE,
                            &smr) != 0, "server mr");
    check(rw_tcp_ops.mr_reg(cdom, big, 4 * MIB, RW_ACCESS_LOCAL, &bmr) != 0, "big mr");
    for (int t = 0; t < THREADS; t++) {
        w[t].id = t;
        w[t].buf = calloc(PER * 4, 256 * KIB);
        check(!w[t].buf, "memory");
        check(rw_tcp_ops.mr_reg(cdom, w[t].buf, PER * 4 * 256 * KIB, RW_ACCESS_LOCAL, &w[t].mr) != 0,
              "client mr");
    }
    for (int r = 0; r < rounds; r++) {
        struct rw_ep_cfg scfg = {.depth = 16, .exposed = &smr, .n_exposed = 1};
        struct rw_ep_cfg ccfg = {.depth = 16, .lazy_verdict = r % 2};
        pthread_t th[THREADS];
        int lfd;
        struct rw_ep *stalled = stalled_rail(&lfd, bmr, big);

        for (int t = 0; t < THREADS; t++) {
            w[t].round = r;
            for (int i = 0; i < PER; i++) {
                scfg.same_session = i ? w[t].sep[0] : NULL;
                check(rw_tcp_ops.ep_create(sdom, &scfg, &w[t].sep[i]) != 0, "sep");
                check(rw_tcp_ops.ep_create(cdom, &ccfg, &w[t].cep[i]) != 0, "cep");
                check(rw_tcp_ops.ep_connect(w[t].sep[i], &w[t].cep[i]->local, 0) != 0, "expect");
                check(rw_tcp_ops.ep_connect(w[t].cep[i], &w[t].sep[i]->local, 5000) != 0, "connect");
            }
        }
        check(rw_tcp_cli_pool_threads() != 2, "two client loops");
        for (int t = 0; t < THREADS; t++)
            pthread_create(&th[t], NULL, work, &w[t]);
        for (int t = 0; t < THREADS; t++)
            pthread_join(th[t], NULL);
        for (int t = 0; t < THREADS; t++)
            for (int i = 0; i < PER; i++) {
                rw_tcp_ops.ep_destroy(w[t].cep[i]);
                rw_tcp_ops.ep_destroy(w[t].sep[i]);
            }
        rw_tcp_ops.ep_destroy(stalled);
        close(lfd);
        check(rw_tcp_cli_pool_threads() != 0, "the loops stop with the last rail");
    }
    for (int t = 0; t < THREADS; t++) {
        rw_tcp_ops.mr_dereg(w[t].mr);
        free(w[t].buf);
    }
    rw_tcp_ops.mr_dereg(bmr);
    rw_tcp_ops.mr_dereg(smr);
    rw_tcp_ops.domain_close(cdom);
    rw_tcp_ops.domain_close(sdom);
    free(smem);
    free(big);
    printf("tcp_cli_loop_threads: %d rounds done\n", rounds);
    return 0;
}
