/* SPDX-License-Identifier: MIT */
/* railwire's tcp transport against plain TCP on loopback, measured in the
 * same run and printed as ratios (never asserted):
 *
 *  1. READ and WRITE throughput, 1 and 2 rails, 1 MiB transfers, depth 8,
 *     against one blocking send/recv stream of the same total bytes over a
 *     loopback socket pair.  Target: >= 0.8 for 1 rail.
 *  2. The time to bring up 8 rails (railwire_railset_connect, RW and RO)
 *     against a fresh TCP connection plus two bare round trips of the same
 *     byte counts as the handshake (request -> params, ids -> ack).
 *
 * usage: railwire_tcp_bench [--total-mib N] [--repeat N] [--connects N]
 * Each figure is the median of --repeat runs; runs of the different
 * configurations are interleaved so drift hits them alike. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <railwire.h>

#define MiB (1024u * 1024u)
#define XFER MiB
#define DEPTH 8
#define MAX_REPEAT 31

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "tcp_bench: %s failed: %s\n", what, rc ? railwire_strerror(rc) : "see errno");
    exit(1);
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

/* ---- plain TCP ---------------------------------------------------------- */

static int listen_lo(unsigned *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
        getsockname(fd, (struct sockaddr *)&a, &l))
        die("listen", 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_lo(unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
        die("connect", 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            die("send", 0);
        p += k;
        n -= (size_t)k;
    }
}

static void recv_all(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0)
            die("recv", 0);
        p += k;
        n -= (size_t)k;
    }
}

struct stream_arg {
    int fd;
    uint64_t total;
    uint8_t *buf;
    unsigned nbufs;
};

static void *stream_sender(void *p)
{
    struct stream_arg *a = p;
    unsigned i = 0;

    for (uint64_t left = a->total; left; left -= XFER, i = (i + 1) % a->nbufs)
        send_all(a->fd, a->buf + (size_t)i * XFER, XFER);
    return NULL;
}

/* One blocking stream of `total` bytes, sent in XFER chunks from `nbufs`
 * XFER buffers in turn and received into `nbufs` XFER buffers in turn (1: a
 * single cache-hot buffer each side; DEPTH: the same memory footprint as
 * railwire's DEPTH transfers in flight).  Returns GB/s (1e9 bytes/s). */
static double plain_stream(uint64_t total, unsigned nbufs)
{
    static uint8_t *sbuf, *rbuf;
    unsigned port, i = 0;
    int lfd = listen_lo(&port), cfd = connect_lo(port), sfd = accept(lfd, NULL, NULL);
    struct stream_arg a;
    pthread_t th;
    double t0, t1;

    if (!sbuf) {
        sbuf = malloc((size_t)DEPTH * XFER);
        rbuf = malloc((size_t)DEPTH * XFER);
        if (!sbuf || !rbuf)
            die("malloc", 0);
        memset(sbuf, 0x5a, (size_t)DEPTH * XFER);
        memset(rbuf, 0, (size_t)DEPTH * XFER);
    }
    a = (struct stream_arg){.fd = cfd, .total = total, .buf = sbuf, .nbufs = nbufs};
    t0 = now_s();
    pthread_create(&th, NULL, stream_sender, &a);
    for (uint64_t left = total; left; left -= XFER, i = (i + 1) % nbufs)
        recv_all(sfd, rbuf + (size_t)i * XFER, XFER);
    t1 = now_s();
    pthread_join(th, NULL);
    close(cfd);
    close(sfd);
    close(lfd);
    return (double)total / (t1 - t0) / 1e9;
}

/* Reference handshake peer: answers `reply` bytes to each 1-byte request
 * and 1 byte to each `second`-byte message; a fresh connection per exchange
 * (with_connect) or all on one. */
struct rt_peer {
    int lfd;
    size_t reply, second;
    int n, with_connect;
};

static void *rt_peer_main(void *p)
{
    struct rt_peer *r = p;
    uint8_t buf[4096] = {0};
    int fd = -1, one = 1;

    for (int i = 0; i < r->n; i++) {
        if (fd < 0) {
            fd = accept(r->lfd, NULL, NULL);
            if (fd < 0)
                die("accept", 0);
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        recv_all(fd, buf, 1);
        send_all(fd, buf, r->reply);
        recv_all(fd, buf, r->second);
        send_all(fd, buf, 1);
        if (r->with_connect) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Median time (s) of [connect +] (1 B -> reply B) + (second B -> 1 B). */
static double plain_round_trips(size_t reply, size_t second, int n, int with_connect)
{
    struct rt_peer r = {.reply = reply, .second = second, .n = n, .with_connect = with_connect};
    unsigned port;
    pthread_t th;
    double v[256];
    uint8_t buf[4096] = {0};
    int fd = -1;

    r.lfd = listen_lo(&port);
    pthread_create(&th, NULL, rt_peer_main, &r);
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        if (fd < 0)
            fd = connect_lo(port);
        send_all(fd, buf, 1);
        recv_all(fd, buf, reply);
        send_all(fd, buf, second);
        recv_all(fd, buf, 1);
        v[i] = now_s() - t0;
        if (with_connect) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    pthread_join(th, NULL);
    close(r.lfd);
    return median(v, n);
}

/* ---- railwire ----------------------------------------------------------- */

struct rw_env {
    railwire_server *srv;
    char port[16];
    uint8_t *arena;
    size_t arena_len;
};

static void server_start(struct rw_env *e, enum railwire_dialect d)
{
    static const char *const rail_addr[] = {"127.0.0.1"};
    railwire_server_opts o;
    railwire_region layer;
    int rc;

    e->arena_len = DEPTH * XFER;
    e->arena = mmap(NULL, e->arena_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (e->arena == MAP_FAILED)
        die("mmap", 0);
    memset(e->arena, 0x33, e->arena_len);
    railwire_server_opts_init(&o);
    o.dialect = d;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.listen_port = "0";
    o.rail_addrs = rail_addr;
    o.n_rail_addrs = 1;
    layer.addr = e->arena;
    layer.len = e->arena_len;
    if (d == RAILWIRE_DIALECT_RO) {
        o.layers = &layer;
        o.n_layers = 1;
    } else {
        o.arena = layer;
    }
    rc = railwire_server_create(&o, &e->srv);
    if (rc)
        die("railwire_server_create", rc);
    snprintf(e->port, sizeof(e->port), "%u", railwire_server_port(e->srv));
}

static void server_stop(struct rw_env *e)
{
    railwire_server_destroy(e->srv);
    munmap(e->arena, e->arena_len);
}

static railwire_railset *rail_connect(const struct rw_env *e, enum railwire_dialect d, unsigned n)
{
    railwire_railset_opts o;
    railwire_railset *rs;
    int rc;

    railwire_railset_opts_init(&o);
    o.dialect = d;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = n;
    rc = railwire_railset_connect("127.0.0.1", e->port, &o, &rs);
    if (rc)
        die("railwire_railset_connect", rc);
    return rs;
}

/* `total` bytes as XFER transfers, DEPTH in flight.  Returns GB/s. */
static double railwire_run(const struct rw_env *e, unsigned rails, enum railwire_opcode opc,
                           uint64_t total)
{
    railwire_railset *rs = rail_connect(e, RAILWIRE_DIALECT_RW, rails);
    static uint8_t *buf;
    railwire_mr *mr;
    railwire_completion c[DEPTH];
    uint64_t n = total / XFER, submitted = 0, done = 0;
    unsigned freeslot[DEPTH], nfree = DEPTH;
    double t0, t1;
    int rc;

    if (!buf) {
        buf = malloc(DEPTH * XFER);
        if (!buf)
            die("malloc", 0);
        memset(buf, 0x77, DEPTH * XFER);
    }
    rc = railwire_mr_register(rs, buf, DEPTH * XFER, &mr);
    if (rc)
        die("railwire_mr_register", rc);
    for (unsigned i = 0; i < DEPTH; i++)
        freeslot[i] = i;
    t0 = now_s();
    while (done < n) {
        while (nfree && submitted < n) {
            unsigned j = freeslot[--nfree];
            railwire_op op = {.opcode = opc, .mr = mr, .local = buf + (size_t)j * XFER,
                              .length = XFER, .remote_offset = (uint64_t)j * XFER, .user_data = j};
            railwire_handle h;
            rc = railwire_submit(rs, &op, &h);
            if (rc)
                die("railwire_submit", rc);
            submitted++;
        }
        rc = railwire_wait(rs, c, DEPTH, 30000);
        if (rc < 0)
            die("railwire_wait", rc);
        for (int i = 0; i < rc; i++) {
            if (c[i].status)
                die("a transfer", c[i].status);
            freeslot[nfree++] = (unsigned)c[i].user_data;
            done++;
        }
    }
    t1 = now_s();
    railwire_railset_close(rs);
    return (double)(n * XFER) / (t1 - t0) / 1e9;
}

/* Median time (s) of railwire_railset_connect with n rails. */
static double railwire_bringup(const struct rw_env *e, enum railwire_dialect d, unsigned n, int k)
{
    double v[256];

    for (int i = 0; i < k; i++) {
        double t0 = now_s();
        railwire_railset *rs = rail_connect(e, d, n);
        v[i] = now_s() - t0;
        railwire_railset_close(rs);
        /* let the server release the session before the next one */
        for (int w = 0; w < 200 && railwire_server_sessions(e->srv); w++)
            usleep(1000);
    }
    return median(v, k);
}

int main(int argc, char **argv)
{
    uint64_t total = 1024ull * MiB;
    int repeat = 3, connects = 30;
    struct rw_env rw, ro;
    double ref[MAX_REPEAT], ref_fp[MAX_REPEAT], r[4][MAX_REPEAT];
    static const struct { unsigned rails; enum railwire_opcode op; const char *name; } cfg[4] = {
        {1, RAILWIRE_OP_READ, "READ  1 rail "}, {1, RAILWIRE_OP_WRITE, "WRITE 1 rail "},
        {2, RAILWIRE_OP_READ, "READ  2 rails"}, {2, RAILWIRE_OP_WRITE, "WRITE 2 rails"}};

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--total-mib") && i + 1 < argc)
            total = strtoull(argv[++i], NULL, 10) * MiB;
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--connects") && i + 1 < argc)
            connects = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--total-mib N] [--repeat N] [--connects N]\n", argv[0]);
            return 2;
        }
    }
    if (repeat < 1 || repeat > MAX_REPEAT || connects < 1 || connects > 256 || total < DEPTH * XFER) {
        fprintf(stderr, "tcp_bench: --repeat 1..%d, --connects 1..256, --total-mib >= %u\n",
                MAX_REPEAT, DEPTH);
        return 2;
    }
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
    server_start(&rw, RAILWIRE_DIALECT_RW);
    server_start(&ro, RAILWIRE_DIALECT_RO);

    printf("railwire tcp transport vs plain TCP on loopback, measured in this run\n");
    printf("throughput: 1 MiB transfers, depth %d, %llu MiB per run, median of %d interleaved runs\n\n",
           DEPTH, (unsigned long long)(total / MiB), repeat);
    for (int k = 0; k < repeat; k++) {
        ref[k] = plain_stream(total, 1);
        ref_fp[k] = plain_stream(total, DEPTH);
        for (int c = 0; c < 4; c++)
            r[c][k] = railwire_run(&rw, cfg[c].rails, cfg[c].op, total);
    }
    double ref_m = median(ref, repeat), ref_fp_m = median(ref_fp, repeat);
    printf("  %-28s %7.3f GB/s   (A: one 1 MiB buffer each side, cache-hot)\n",
           "plain TCP stream", ref_m);
    printf("  %-28s %7.3f GB/s   (B: %d x 1 MiB buffers each side, railwire's footprint)\n",
           "plain TCP stream", ref_fp_m, DEPTH);
    for (int c = 0; c < 4; c++) {
        double m = median(r[c], repeat);
        printf("  railwire %-19s %7.3f GB/s   ratio %.2f vs A, %.2f vs B%s\n", cfg[c].name, m,
               m / ref_m, m / ref_fp_m, cfg[c].rails == 1 ? "   (target >= 0.80)" : "");
    }

    /* Bring-up: the handshake's byte counts for 8 rails (WIRE.md):
     * request 1 B; RW params 1 + 8 x 36 B, RO params (1 layer) 1 + 8 x 40 B;
     * ids 1 + 8 x 24 B; ack 1 B. */
    printf("\nbring-up of 8 rails (railwire_railset_connect), median of %d:\n", connects);
    {
        const struct { enum railwire_dialect d; size_t reply; const char *name; } hs[2] = {
            {RAILWIRE_DIALECT_RW, 1 + 8 * 36, "RW"}, {RAILWIRE_DIALECT_RO, 1 + 8 * 40, "RO (1 layer)"}};
        /* warm-up: threads, sockets and caches, not measured */
        plain_round_trips(hs[0].reply, 1 + 8 * 24, 10, 0);
        plain_round_trips(hs[0].reply, 1 + 8 * 24, 10, 1);
        railwire_bringup(&rw, RAILWIRE_DIALECT_RW, 8, 3);
        for (int i = 0; i < 2; i++) {
            double bare = plain_round_trips(hs[i].reply, 1 + 8 * 24, connects, 0);
            double conn = plain_round_trips(hs[i].reply, 1 + 8 * 24, connects, 1);
            double t = railwire_bringup(hs[i].d == RAILWIRE_DIALECT_RW ? &rw : &ro, hs[i].d, 8,
                                        connects);
            printf("  %s handshake bytes: 1 -> %zu, %u -> 1\n", hs[i].name, hs[i].reply, 1 + 8 * 24);
            printf("    %-44s %8.1f us\n", "2 bare round trips (open TCP connection)", bare * 1e6);
            printf("    %-44s %8.1f us\n", "TCP connect + 2 round trips", conn * 1e6);
            printf("    %-44s %8.1f us   ratio %.1f vs bare, %.1f vs connect+2RT\n",
                   "railwire_railset_connect, 8 rails", t * 1e6, t / bare, t / conn);
        }
    }
    server_stop(&ro);
    server_stop(&rw);
    return 0;
}
