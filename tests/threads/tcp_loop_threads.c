/* SPDX-License-Identifier: MIT */
/* The tcp server's event loops, accept threads and liveness checks from
 * many threads at once (a plain program: it must also run under
 * ThreadSanitizer, where Criterion does not start).  Runs in every build as
 * ctest `tcp_loop_threads`; scripts/test.sh's tsan stage runs it under TSan.
 *   build/tests/threads/tcp_loop_threads [rounds]
 *
 * Each round: 8 rails (2 event loops) move 1 MiB READs and WRITEs at depth
 * 8 while a thread polls ep_liveness and raw clients leave 16 MiB answers
 * unread (from memory no rail writes: overlapping remote READs and WRITEs
 * are the user's race, as on RDMA); the round ends by client kill, server ep kill, server ep destroy
 * or normal completion, in turn. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_loop.h"
#include "tcp_raw.h"
#include "transport/transport.h"

#define RAILS 8
#define MIB (1u << 20)

static struct rw_ep *sep[RAILS], *cep[RAILS];
static _Atomic int stop_poll;
static pthread_mutex_t sep_lock = PTHREAD_MUTEX_INITIALIZER; /* the poller vs destroy */

static void *poller(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_poll)) {
        pthread_mutex_lock(&sep_lock);
        for (int i = 0; i < RAILS; i++)
            if (sep[i])
                (void)rw_tcp_ops.ep_liveness(sep[i]);
        pthread_mutex_unlock(&sep_lock);
        usleep(200);
    }
    return NULL;
}

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "tcp_tsan: %s failed (%d)\n", what, rc);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "127.0.0.1", .io_timeout_ms = 2000};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1", .io_timeout_ms = 2000};
    struct rw_domain *sdom, *cdom;
    uint8_t *smem = malloc(32 * MIB), *cmem = malloc(RAILS * 8 * MIB);
    struct rw_mr *smr, *cmr;

    rw_tcp_pool_configure(2);
    check(rw_tcp_ops.domain_open(&sc, &sdom), "server domain");
    check(rw_tcp_ops.domain_open(&cc, &cdom), "client domain");
    memset(smem, 1, 32 * MIB);
    memset(cmem, 2, RAILS * 8 * MIB);
    check(rw_tcp_ops.mr_reg(sdom, smem, 32 * MIB, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &smr), "mr");
    check(rw_tcp_ops.mr_reg(cdom, cmem, RAILS * 8 * MIB, RW_ACCESS_LOCAL, &cmr), "cmr");
    for (int r = 0; r < rounds; r++) {
        struct rw_ep_cfg scfg = {.depth = 16, .exposed = &smr, .n_exposed = 1};
        struct rw_ep_cfg ccfg = {.depth = 8, .lazy_verdict = r % 2};
        struct rw_ep *asep[4];
        int afd[4];
        pthread_t th;

        for (int i = 0; i < RAILS; i++) {
            scfg.same_session = i ? sep[0] : NULL;
            check(rw_tcp_ops.ep_create(sdom, &scfg, &sep[i]), "sep");
            check(rw_tcp_ops.ep_create(cdom, &ccfg, &cep[i]), "cep");
            check(rw_tcp_ops.ep_connect(sep[i], &cep[i]->local, 0), "expect");
            check(rw_tcp_ops.ep_connect(cep[i], &sep[i]->local, 5000), "connect");
        }
        for (int i = 0; i < 4; i++) {
            struct rw_qp_id cli = {.qpn = 0x900u + (unsigned)i, .psn = 0x66u};
            struct rw_ep_cfg acfg = {.depth = 4, .exposed = &smr, .n_exposed = 1};
            check(rw_tcp_ops.ep_create(sdom, &acfg, &asep[i]), "attacker ep");
            check(rw_tcp_ops.ep_connect(asep[i], &cli, 0), "attacker expect");
            afd[i] = raw_rail_open(NULL, (uint16_t)(asep[i]->local.qpn & 0xffff), &asep[i]->local,
                                   cli.qpn, cli.psn, 0);
            if (afd[i] < 0 || raw_rail_verdict(afd[i], 5000) != 0 ||
                raw_rail_request(afd[i], 0, 16 * MIB, 0, smr->remote_base + 16 * MIB, smr->rkey))
                check(1, "attacker");
        }
        atomic_store(&stop_poll, 0);
        pthread_create(&th, NULL, poller, NULL);
        for (int i = 0; i < RAILS; i++) {
            struct rw_wr wr[8];
            for (int k = 0; k < 8; k++)
                wr[k] = (struct rw_wr){.wr_id = (uint64_t)k, .opcode = k % 2 ? RW_OP_WRITE : RW_OP_READ,
                                       .local = cmem + ((size_t)i * 8 + (size_t)k) * MIB, .mr = cmr,
                                       .length = MIB,
                                       .remote_addr = smr->remote_base + (uint64_t)(i * 2 + k % 2) * MIB,
                                       .rkey = smr->rkey};
            if (rw_tcp_ops.ep_post(cep[i], wr, 8) < 0)
                check(1, "post");
        }
        usleep(1000 * (unsigned)(r % 5));
        for (int i = 0; i < RAILS; i++) {
            switch ((r + i) % 4) {
            case 0: rw_tcp_ops.ep_kill(cep[i]); break;
            case 1: rw_tcp_ops.ep_kill(sep[i]); break;
            case 2: break;
            default:
                pthread_mutex_lock(&sep_lock);
                rw_tcp_ops.ep_destroy(sep[i]);
                sep[i] = NULL;
                pthread_mutex_unlock(&sep_lock);
                break;
            }
        }
        for (int i = 0; i < RAILS; i++) {
            struct rw_wc wc[8];
            int got = 0;
            int64_t dl = rw_now_ms() + 10000;
            while (got < 8 && rw_now_ms() < dl) {
                got += rw_tcp_ops.ep_poll(cep[i], wc, 8);
                usleep(500);
            }
            if (got < 8)
                check(1, "completions");
        }
        atomic_store(&stop_poll, 1);
        pthread_join(th, NULL);
        for (int i = 0; i < RAILS; i++) {
            rw_tcp_ops.ep_destroy(cep[i]);
            if (sep[i])
                rw_tcp_ops.ep_destroy(sep[i]);
            sep[i] = cep[i] = NULL;
        }
        for (int i = 0; i < 4; i++) {
            close(afd[i]);
            rw_tcp_ops.ep_destroy(asep[i]);
        }
    }
    rw_tcp_ops.mr_dereg(cmr);
    rw_tcp_ops.mr_dereg(smr);
    rw_tcp_ops.domain_close(cdom);
    rw_tcp_ops.domain_close(sdom);
    {
        struct rw_tcp_budget_stats st;
        rw_tcp_budget_get_stats(&st);
        printf("tcp_loop_threads: %d rounds done; budget queued %llu, conns %u (both must be 0)\n", rounds,
               (unsigned long long)st.queued, st.conns);
        if (st.queued || st.conns)
            return 1;
    }
    free(smem);
    free(cmem);
    return 0;
}
