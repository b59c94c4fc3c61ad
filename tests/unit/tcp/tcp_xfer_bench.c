/* SPDX-License-Identifier: MIT */
/* The tcp transport alone (rw_tcp_ops, no railset) against a plain TCP
 * stream of the same bytes on loopback, measured in the same run and printed
 * as ratios (never asserted; not a ctest).
 *
 *   tcp_xfer_bench [--rounds N] [--total-mib N] [--size-kib N] [--depth N] [--spread]
 *
 * Each round runs: stream, transport READ, stream, transport WRITE; the
 * medians of the per-round ratios are printed, with CPU time per GB.
 * --spread makes both sides cycle through `depth` distinct buffers (the
 * footprint a depth-N transfer has); without it everything reuses one hot
 * buffer. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "transport/transport.h"

#define MAX_ROUNDS 31
#define MAX_DEPTH 64

static size_t msg = 1u << 20, total;
static int depth = 8, spread;

static void die(const char *what, int rc)
{
    fprintf(stderr, "tcp_xfer_bench: %s failed (%d)\n", what, rc);
    exit(1);
}

static double cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Buffer i of a pool of `depth` buffers (all the same one without --spread). */
static char *pick(char *pool, size_t i)
{
    return pool + (spread ? (i % (size_t)depth) * msg : 0);
}

struct stream_rx {
    int fd;
    char *pool;
};

static void *stream_receiver(void *arg)
{
    struct stream_rx *a = arg;
    size_t got = 0, i = 0;
    while (got < total) {
        ssize_t k = recv(a->fd, pick(a->pool, i++), msg, MSG_WAITALL);
        if (k <= 0)
            die("stream recv", -1);
        got += (size_t)k;
    }
    return NULL;
}

/* One blocking stream of `total` bytes in `msg` chunks.  Returns GB/s. */
static double stream(char *spool, char *rpool)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    struct stream_rx rx;
    pthread_t th;
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    uint64_t t0;
    size_t sent = 0, i = 0;

    if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&sin, &len) || connect(c, (struct sockaddr *)&sin, sizeof(sin)))
        die("stream setup", -1);
    rx.fd = accept(l, NULL, NULL);
    rx.pool = rpool;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    t0 = rw_now_ns();
    if (pthread_create(&th, NULL, stream_receiver, &rx))
        die("pthread_create", -1);
    while (sent < total) {
        ssize_t k = send(c, pick(spool, i++), msg, 0);
        if (k <= 0)
            die("stream send", -1);
        sent += (size_t)k;
    }
    pthread_join(th, NULL);
    t0 = rw_now_ns() - t0;
    close(c);
    close(rx.fd);
    close(l);
    return (double)total / (double)t0;
}

struct pair {
    struct rw_ep *sep, *cep;
    struct rw_mr *smr, *cmr;
    char *cpool;
};

static void *srv_connect(void *arg)
{
    struct pair *p = arg;
    int rc = rw_tcp_ops.ep_connect(p->sep, &p->cep->local, 5000);
    if (rc)
        die("server ep_connect", rc);
    return NULL;
}

/* `total` bytes of `op` in `msg` WRs, `depth` in flight.  Returns GB/s. */
static double xfer(struct pair *p, enum rw_opcode op)
{
    struct rw_wr wr[MAX_DEPTH];
    struct rw_wc wc[MAX_DEPTH];
    size_t n = total / msg, posted = 0, done = 0;
    uint64_t t0 = rw_now_ns();
    int i, k;

    for (i = 0; i < depth; i++)
        wr[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = op, .local = pick(p->cpool, (size_t)i),
                               .mr = p->cmr, .length = (uint32_t)msg, .rkey = p->smr->rkey,
                               .remote_addr = p->smr->remote_base + (spread ? (size_t)i * msg : 0)};
    for (i = 0; i < depth && posted < n; i++, posted++)
        if (rw_tcp_ops.ep_post(p->cep, &wr[i], 1) != 1)
            die("ep_post", -1);
    while (done < n) {
        k = rw_tcp_ops.ep_poll(p->cep, wc, MAX_DEPTH);
        if (k == 0) {
            struct pollfd pfd = {.fd = rw_tcp_ops.ep_wait_fd(p->cep), .events = POLLIN};
            rw_tcp_ops.ep_arm(p->cep);
            k = rw_tcp_ops.ep_poll(p->cep, wc, MAX_DEPTH);
            if (k == 0) {
                poll(&pfd, 1, 1000);
                continue;
            }
        }
        for (i = 0; i < k; i++) {
            if (wc[i].status)
                die("a transfer", wc[i].status);
            done++;
            if (posted < n) {
                if (rw_tcp_ops.ep_post(p->cep, &wr[wc[i].wr_id], 1) != 1)
                    die("ep_post", -1);
                posted++;
            }
        }
    }
    return (double)total / (double)(rw_now_ns() - t0);
}

int main(int argc, char **argv)
{
    struct rw_domain_cfg scfg = {.role = RW_ROLE_SERVER, .device = "127.0.0.1"};
    struct rw_domain_cfg ccfg = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1"};
    struct rw_domain *sd, *cd;
    struct pair p;
    struct rw_ep_cfg ec;
    pthread_t th;
    double rr[MAX_ROUNDS], wr[MAX_ROUNDS], cs[MAX_ROUNDS], cr[MAX_ROUNDS], cw[MAX_ROUNDS];
    char *smem, *spool, *rpool;
    int rounds = 5, i, rc;
    size_t pool;

    total = 1024u << 20;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--total-mib") && i + 1 < argc)
            total = (size_t)atol(argv[++i]) << 20;
        else if (!strcmp(argv[i], "--size-kib") && i + 1 < argc)
            msg = (size_t)atol(argv[++i]) << 10;
        else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
            depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--spread"))
            spread = 1;
        else {
            fprintf(stderr, "usage: %s [--rounds N] [--total-mib N] [--size-kib N] [--depth N] "
                            "[--spread]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || depth < 1 || depth > MAX_DEPTH || msg == 0 ||
        msg > (1u << 30) || total < msg)
        die("argument check", -1);
    pool = (size_t)depth * msg;
    smem = malloc(pool);
    spool = malloc(pool);
    rpool = malloc(pool);
    p.cpool = malloc(pool);
    if (!smem || !spool || !rpool || !p.cpool)
        die("malloc", -1);
    memset(smem, 2, pool);
    memset(spool, 3, pool);
    memset(rpool, 4, pool);
    memset(p.cpool, 5, pool);

    if ((rc = rw_tcp_ops.domain_open(&scfg, &sd)) || (rc = rw_tcp_ops.domain_open(&ccfg, &cd)) ||
        (rc = rw_tcp_ops.mr_reg(sd, smem, pool, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &p.smr)) ||
        (rc = rw_tcp_ops.mr_reg(cd, p.cpool, pool, RW_ACCESS_LOCAL, &p.cmr)))
        die("setup", rc);
    ec = (struct rw_ep_cfg){.depth = (unsigned)depth, .exposed = &p.smr, .n_exposed = 1};
    if ((rc = rw_tcp_ops.ep_create(sd, &ec, &p.sep)) || (rc = rw_tcp_ops.ep_create(cd, &ec, &p.cep)))
        die("ep_create", rc);
    if (pthread_create(&th, NULL, srv_connect, &p))
        die("pthread_create", -1);
    if ((rc = rw_tcp_ops.ep_connect(p.cep, &p.sep->local, 5000)))
        die("client ep_connect", rc);
    pthread_join(th, NULL);

    printf("tcp transport vs plain TCP stream, loopback, %zu KiB ops, depth %d, %zu MiB per run, %s buffers\n",
           msg >> 10, depth, total >> 20, spread ? "distinct" : "one hot");
    for (i = 0; i < rounds; i++) {
        double gb = (double)total / 1e9, c0, s1, s2, r, w;
        c0 = cpu_s();
        s1 = stream(spool, rpool);
        cs[i] = (cpu_s() - c0) / gb;
        c0 = cpu_s();
        r = xfer(&p, RW_OP_READ);
        cr[i] = (cpu_s() - c0) / gb;
        s2 = stream(spool, rpool);
        c0 = cpu_s();
        w = xfer(&p, RW_OP_WRITE);
        cw[i] = (cpu_s() - c0) / gb;
        rr[i] = r / s1;
        wr[i] = w / s2;
        printf("  round %d: stream %.2f GB/s, READ %.2f GB/s (%.2fx), stream %.2f GB/s, WRITE %.2f GB/s (%.2fx)\n",
               i + 1, s1, r, rr[i], s2, w, wr[i]);
        fflush(stdout);
    }
    printf("median ratio: READ %.2f, WRITE %.2f (target >= 0.80)\n", median(rr, rounds), median(wr, rounds));
    printf("median CPU s/GB: stream %.3f, READ %.3f, WRITE %.3f\n", median(cs, rounds),
           median(cr, rounds), median(cw, rounds));

    rw_tcp_ops.ep_destroy(p.cep);
    rw_tcp_ops.ep_destroy(p.sep);
    rw_tcp_ops.mr_dereg(p.smr);
    rw_tcp_ops.mr_dereg(p.cmr);
    rw_tcp_ops.domain_close(cd);
    rw_tcp_ops.domain_close(sd);
    free(smem);
    free(spool);
    free(rpool);
    free(p.cpool);
    return 0;
}
