/* SPDX-License-Identifier: MIT */
/* The tcp server under load, run by hand (never asserted; not a ctest).
 * A legit client (a real tcp client ep on 127.0.0.1, 1 rail, 1 MiB READs,
 * depth 8, cycling through 8 distinct MiB) is measured alone and under
 * load in the same run; ratios are printed per round with their median.
 *
 *   tcp_srv_bench --f3 [--rounds N] [--secs S] [--attacker-rcvbuf BYTES]
 *       63 sessions x 8 rails from 127.0.0.2, each rail one 16 MiB READ
 *       whose answer is never read (issue 8, F3)
 *   tcp_srv_bench --scale [--rounds N] [--secs S]
 *       999 idle sessions x 2 rails (raw clients) next to the legit one;
 *       prints threads, RSS and descriptors with all 2000 rails attached
 *
 * Budget flags: --budget-mib N, --share-mib N (rw_domain_cfg fields);
 * --no-evict turns eviction off (what the budget alone does). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_loop.h"
#include "tcp_raw.h"
#include "transport/transport.h"

#define LEGIT_LEN (64u << 20)
#define BIG (16u << 20)
#define MAX_ROUNDS 15

static int secs = 2, rounds = 3, attacker_rcvbuf;
static uint64_t budget, share;

static void die(const char *what, int rc)
{
    fprintf(stderr, "tcp_srv_bench: %s failed (%d)\n", what, rc);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    double c[MAX_ROUNDS];
    memcpy(c, v, sizeof(*v) * (size_t)n);
    qsort(c, (size_t)n, sizeof(*c), cmp_double);
    return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

struct srv {
    struct rw_domain *sdom, *cdom;
    uint8_t *legit_mem, *big;
    struct rw_mr *legit_mr, *big_mr;
    struct rw_ep *sep, *cep;      /* the legit rail */
    uint8_t *buf;                 /* the legit client's 8 MiB */
    struct rw_mr *lmr;
};

static void srv_open(struct srv *s)
{
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "127.0.0.1",
                               .tcp_queue_budget = budget, .tcp_session_share = share};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1"};
    struct rw_ep_cfg scfg = {.depth = 64}, ccfg = {.depth = 8};
    int rc;

    memset(s, 0, sizeof(*s));
    if ((rc = rw_tcp_ops.domain_open(&sc, &s->sdom)) || (rc = rw_tcp_ops.domain_open(&cc, &s->cdom)))
        die("domain_open", rc);
    s->legit_mem = malloc(LEGIT_LEN);
    s->big = malloc(BIG);
    s->buf = malloc(8u << 20);
    if (!s->legit_mem || !s->big || !s->buf)
        die("malloc", 0);
    memset(s->legit_mem, 0x5a, LEGIT_LEN);
    memset(s->big, 0xa5, BIG);
    memset(s->buf, 0, 8u << 20);
    if ((rc = rw_tcp_ops.mr_reg(s->sdom, s->legit_mem, LEGIT_LEN, RW_ACCESS_REMOTE_READ, &s->legit_mr)) ||
        (rc = rw_tcp_ops.mr_reg(s->sdom, s->big, BIG, RW_ACCESS_REMOTE_READ, &s->big_mr)) ||
        (rc = rw_tcp_ops.mr_reg(s->cdom, s->buf, 8u << 20, RW_ACCESS_LOCAL, &s->lmr)))
        die("mr_reg", rc);
    scfg.exposed = &s->legit_mr;
    scfg.n_exposed = 1;
    if ((rc = rw_tcp_ops.ep_create(s->sdom, &scfg, &s->sep)) ||
        (rc = rw_tcp_ops.ep_create(s->cdom, &ccfg, &s->cep)))
        die("ep_create", rc);
    if ((rc = rw_tcp_ops.ep_connect(s->sep, &s->cep->local, 0)) ||
        (rc = rw_tcp_ops.ep_connect(s->cep, &s->sep->local, 5000)))
        die("ep_connect", rc);
}

/* The legit READ bench: GB/s over `secs` seconds. */
static double legit_run(struct srv *s)
{
    int64_t t0 = rw_now_ms(), end = t0 + secs * 1000;
    uint64_t posted = 0, done = 0;
    struct rw_wc wc[8];

    while (rw_now_ms() < end || done < posted) {
        while (posted - done < 8 && rw_now_ms() < end) {
            struct rw_wr wr = {.wr_id = posted, .opcode = RW_OP_READ,
                               .local = s->buf + (posted % 8) * (1u << 20), .mr = s->lmr,
                               .length = 1u << 20,
                               .remote_addr = s->legit_mr->remote_base + (posted % 64) * (1u << 20),
                               .rkey = s->legit_mr->rkey};
            int k = rw_tcp_ops.ep_post(s->cep, &wr, 1);
            if (k < 0)
                die("ep_post", k);
            if (k == 0)
                break;
            posted++;
        }
        int n = rw_tcp_ops.ep_poll(s->cep, wc, 8);
        for (int i = 0; i < n; i++)
            if (wc[i].status)
                die("READ completion", wc[i].status);
        done += (uint64_t)n;
        if (n == 0) {
            struct pollfd p = {.fd = rw_tcp_ops.ep_wait_fd(s->cep), .events = POLLIN};
            rw_tcp_ops.ep_arm(s->cep);
            n = rw_tcp_ops.ep_poll(s->cep, wc, 8);
            for (int i = 0; i < n; i++)
                if (wc[i].status)
                    die("READ completion", wc[i].status);
            done += (uint64_t)n;
            if (n == 0)
                poll(&p, 1, 100);
        }
        if (rw_now_ms() > end + 30000)
            die("legit READs never completed", 0);
    }
    return (double)done * (1u << 20) / 1e9 / ((double)(rw_now_ms() - t0) / 1000.0);
}

struct crowd {
    int n;
    struct rw_ep **sep;
    int *fd;
};

/* n raw rails from `src`, grouped `rails` per session; with `attack`, each
 * sends one 16 MiB READ and never reads. */
static void crowd_start(struct srv *s, struct crowd *c, int n, int rails, const char *src, int attack)
{
    struct rw_ep_cfg scfg = {.depth = 64};
    int rc, i, j;

    c->n = n;
    c->sep = calloc((size_t)n, sizeof(*c->sep));
    c->fd = calloc((size_t)n, sizeof(*c->fd));
    if (!c->sep || !c->fd)
        die("calloc", 0);
    scfg.exposed = &s->big_mr;
    scfg.n_exposed = 1;
    for (i = 0; i < n; i++) {
        struct rw_qp_id cli = {.qpn = 0x1000u + (unsigned)i, .psn = 0x77u ^ (unsigned)i};
        scfg.same_session = i % rails ? c->sep[i - (i % rails)] : NULL;
        if ((rc = rw_tcp_ops.ep_create(s->sdom, &scfg, &c->sep[i])) ||
            (rc = rw_tcp_ops.ep_connect(c->sep[i], &cli, 0)))
            die("crowd ep", rc);
    }
    for (i = 0; i < n; i += 100) {
        int end = i + 100 < n ? i + 100 : n;
        for (j = i; j < end; j++) {
            c->fd[j] = raw_rail_open(src, (uint16_t)(c->sep[j]->local.qpn & 0xffff),
                                     &c->sep[j]->local, 0x1000u + (unsigned)j, 0x77u ^ (unsigned)j,
                                     attacker_rcvbuf);
            if (c->fd[j] < 0)
                die("crowd dial", j);
        }
        for (j = i; j < end; j++) {
            if (raw_rail_verdict(c->fd[j], 10000) != RW_TCP_VERDICT_OK)
                die("crowd verdict", j);
            if (attack && raw_rail_request(c->fd[j], RW_TCP_OP_READ, BIG, 0, s->big_mr->remote_base,
                                           s->big_mr->rkey))
                die("crowd request", j);
        }
    }
}

static void crowd_stop(struct crowd *c)
{
    for (int i = 0; i < c->n; i++) {
        close(c->fd[i]);
        rw_tcp_ops.ep_destroy(c->sep[i]);
    }
    free(c->sep);
    free(c->fd);
}

int main(int argc, char **argv)
{
    double alone[MAX_ROUNDS], loaded[MAX_ROUNDS], ratio[MAX_ROUNDS];
    int f3 = 1, i;
    struct rlimit rl;
    struct srv s;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--f3"))
            f3 = 1;
        else if (!strcmp(argv[i], "--scale"))
            f3 = 0;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--secs") && i + 1 < argc)
            secs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--attacker-rcvbuf") && i + 1 < argc)
            attacker_rcvbuf = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-evict"))
            rw_tcp_budget_set_eviction(0);
        else if (!strcmp(argv[i], "--budget-mib") && i + 1 < argc)
            budget = (uint64_t)atoi(argv[++i]) << 20;
        else if (!strcmp(argv[i], "--share-mib") && i + 1 < argc)
            share = (uint64_t)atoi(argv[++i]) << 20;
        else {
            fprintf(stderr, "usage: %s [--f3|--scale] [--rounds N] [--secs S] "
                    "[--attacker-rcvbuf B] [--budget-mib N] [--share-mib N] [--no-evict]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || secs < 1)
        die("arguments", 0);
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    srv_open(&s);
    printf("%s: legit 1 rail, 1 MiB READs, depth 8, %d s per run; %u event loop(s)\n",
           f3 ? "F3 (63 sessions x 8 rails, unread 16 MiB READs, from 127.0.0.2)"
              : "scale (999 idle sessions x 2 rails)", secs, rw_tcp_pool_threads());
    for (int r = 0; r < rounds; r++) {
        struct crowd c;
        struct rw_tcp_budget_stats st;
        int threads, named;

        alone[r] = legit_run(&s);
        rw_tcp_budget_reset_peak();
        if (f3)
            crowd_start(&s, &c, 63 * 8, 8, "127.0.0.2", 1);
        else
            crowd_start(&s, &c, 999 * 2, 2, NULL, 0);
        usleep(f3 ? 1500 * 1000 : 200 * 1000);
        loaded[r] = legit_run(&s);
        rw_tcp_budget_get_stats(&st);
        threads = proc_threads("rw-tcp", &named);
        long tcp_limit; /* printed pages only; the threshold is the budget's business */
        ratio[r] = loaded[r] / alone[r];
        printf("round %d: alone %.2f GB/s, %s %.2f GB/s, ratio %.2f | queued %.1f MiB peak %.1f "
               "MiB of %.0f MiB, %u conns, evicted %llu, TCP mem %ld pages | threads %d (%d rw-tcp), "
               "RSS %ld MiB, fds %d\n",
               r, alone[r], f3 ? "attacked" : "among idle", loaded[r], ratio[r],
               (double)st.queued / (1 << 20), (double)st.peak / (1 << 20),
               (double)st.budget / (1 << 20), st.conns, (unsigned long long)st.evicted,
               rw_tcp_host_tcp_pages(&tcp_limit), threads, named, proc_rss_kib() / 1024, proc_fds());
        fflush(stdout);
        crowd_stop(&c);
        usleep(300 * 1000);
    }
    printf("median: alone %.2f GB/s, %s %.2f GB/s, ratio %.2f\n", median(alone, rounds),
           f3 ? "attacked" : "among idle", median(loaded, rounds), median(ratio, rounds));
    return 0;
}
