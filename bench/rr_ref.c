/* SPDX-License-Identifier: MIT */
/* Minimal references on one loopback TCP connection, for ratios measured in
 * the same run as railwire's tcp transport (bench/small.sh, bench/compare.sh):
 *
 *  --rr (default): pipelined request/response.  A client thread keeps
 *     --depth requests in flight; a server thread answers them in order.
 *     read:  32-byte request -> SIZE-byte payload answer
 *     write: 32-byte request + SIZE-byte payload -> 32-byte answer
 *     Both sides cycle through --depth buffers of SIZE bytes (the client's
 *     slots and the server's "remote memory"), as railwire bench does.
 *  --stream: one blocking stream of SIZE-byte send()s and MSG_WAITALL
 *     recv()s, 4 MiB socket buffers (the "tuned raw TCP stream"); also
 *     prints the receiving thread's CPU seconds per GB (rx_cpu_s_per_gb),
 *     the reference for a client's cost of READs.  -n STREAMS runs that
 *     many such connections at once, each with its own sending and
 *     receiving thread (the raw TCP limit at a rail count); rx_cpu_s_per_gb
 *     then sums the receiving threads.
 *
 * Both ends set TCP_NODELAY.  Prints one JSON object:
 *   {"mode":"rr","op":"read","size":4096,"depth":64,"seconds":2.0,
 *    "ops":N,"ops_per_s":X,"gbps":Y}
 * usage: railwire_rr_ref [--rr|--stream] [--read|--write] [-s SIZE] [-q DEPTH]
 *                        [-n STREAMS] [--cc auto|system|NAME] [-D SECONDS]
 *
 * --cc picks the sockets' congestion control as railwire's rails do
 * (src/tcp/tcp_cc.h): "auto" (default) moves a socket under a BBR to cubic
 * or reno when there are at most RW_TCP_CC_RAILS_PER_CPU connections a
 * CPU (that header's constant, so both pick alike), "system"
 * keeps the system's, NAME sets that algorithm.  The JSON
 * says which one ran ("cc"). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp/tcp_cc.h"

#define RR_REQ 32u
#define RR_SOCKBUF (4 << 20)

/* One request on the wire: what to do, which slot, how long. */
struct rr_req {
    uint32_t op;      /* 0 read, 1 write, 2 stop */
    uint32_t slot;
    uint64_t len;
    uint8_t pad[RR_REQ - 16];
};

struct rr_cfg {
    int stream, write;
    int bufs;           /* 1: 4 MiB socket buffers in --rr mode too */
    uint64_t size;
    unsigned depth;
    unsigned streams;   /* --stream: parallel connections (-n) */
    double seconds;
};

struct rr_server {
    int fd;
    const struct rr_cfg *cfg;
    uint8_t *mem;       /* depth x size */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps s seconds (to the end, across signals). */
static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static void fail(const char *what)
{
    perror(what);
    exit(1);
}

static void send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k <= 0)
            fail("send");
        b += k;
        n -= (size_t)k;
    }
}

/* Returns 0, or -1 at end of stream. */
static int recv_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        ssize_t k = recv(fd, b, n, MSG_WAITALL);
        if (k == 0)
            return -1;
        if (k < 0)
            fail("recv");
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* --cc: "auto" (as railwire's rails: a loopback socket under a BBR moves to
 * cubic, or reno, when the run has at most RW_TCP_CC_RAILS_PER_CPU
 * connections a CPU, src/tcp/tcp_cc.h), "system", or an algorithm's name. */
static const char *rr_cc = "auto";
static char rr_cc_used[16];
static unsigned rr_conns = 1; /* connections of this run (-n), as a railset's rails */

static void pick_cc(int fd)
{
    char cur[16] = {0};
    socklen_t n = sizeof(cur) - 1;

    if (strcmp(rr_cc, "auto") && strcmp(rr_cc, "system") &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, rr_cc, (socklen_t)strlen(rr_cc)))
        fail("setsockopt(TCP_CONGESTION)");
    if (!strcmp(rr_cc, "auto") && rr_conns <= RW_TCP_CC_RAILS_PER_CPU * (unsigned)sysconf(_SC_NPROCESSORS_ONLN) &&
        !getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cur, &n) &&
        !strncmp(cur, "bbr", 3) &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5) &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "reno", 4))
        fail("setsockopt(TCP_CONGESTION) for --cc auto");
    memset(cur, 0, sizeof(cur));
    n = sizeof(cur) - 1;
    if (!getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cur, &n))
        memcpy(rr_cc_used, cur, sizeof(rr_cc_used));
}

static void tune(int fd, int bufs)
{
    int one = 1, sz = RR_SOCKBUF;
    pick_cc(fd);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (bufs) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
}

/* A connected loopback pair: *c the client end, *s the server end. */
static void socket_pair(int *c, int *s, int bufs)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&a, &l))
        fail("listen");
    *c = socket(AF_INET, SOCK_STREAM, 0);
    if (*c < 0)
        fail("socket");
    tune(*c, bufs);
    if (connect(*c, (struct sockaddr *)&a, sizeof(a)))
        fail("connect");
    *s = accept(lfd, NULL, NULL);
    if (*s < 0)
        fail("accept");
    tune(*s, bufs);
    close(lfd);
}

static void *rr_server_main(void *p)
{
    struct rr_server *sv = p;
    struct rr_req q;
    uint8_t ack[RR_REQ] = {0};
    while (recv_all(sv->fd, &q, sizeof(q)) == 0 && q.op != 2) {
        uint8_t *m = sv->mem + (size_t)q.slot * sv->cfg->size;
        if (q.op == 0) {
            send_all(sv->fd, m, (size_t)q.len);
        } else {
            if (recv_all(sv->fd, m, (size_t)q.len) < 0)
                break;
            send_all(sv->fd, ack, sizeof(ack));
        }
    }
    return NULL;
}

/* Sends request `slot` (with its payload for a write). */
static void rr_issue(int fd, const struct rr_cfg *cfg, uint8_t *slots, unsigned slot)
{
    struct rr_req q = {.op = (uint32_t)cfg->write, .slot = slot, .len = cfg->size};
    send_all(fd, &q, sizeof(q));
    if (cfg->write)
        send_all(fd, slots + (size_t)slot * cfg->size, (size_t)cfg->size);
}

/* Waits for the oldest answer (slot `slot`). */
static void rr_reap(int fd, const struct rr_cfg *cfg, uint8_t *slots, unsigned slot)
{
    uint8_t ack[RR_REQ];
    int rc = cfg->write ? recv_all(fd, ack, sizeof(ack))
                        : recv_all(fd, slots + (size_t)slot * cfg->size, (size_t)cfg->size);
    if (rc < 0) {
        fprintf(stderr, "rr_ref: the server closed early\n");
        exit(1);
    }
}

/* Runs the request/response loop for `seconds`; returns completed requests. */
static uint64_t rr_loop(int fd, const struct rr_cfg *cfg, uint8_t *slots, double seconds)
{
    uint64_t issued = 0, done = 0;
    double t_end = now_s() + seconds;
    for (;;) {
        while (issued - done < cfg->depth)
            rr_issue(fd, cfg, slots, (unsigned)(issued++ % cfg->depth));
        rr_reap(fd, cfg, slots, (unsigned)(done++ % cfg->depth));
        if ((done & 63) == 0 && now_s() >= t_end)
            break;
    }
    while (done < issued)
        rr_reap(fd, cfg, slots, (unsigned)(done++ % cfg->depth));
    return done;
}

static void run_rr(const struct rr_cfg *cfg)
{
    int c, s;
    socket_pair(&c, &s, cfg->bufs);
    size_t bytes = (size_t)cfg->size * cfg->depth;
    uint8_t *slots = malloc(bytes);
    struct rr_server sv = {.fd = s, .cfg = cfg, .mem = malloc(bytes)};
    if (!slots || !sv.mem)
        fail("malloc");
    memset(slots, 0x5a, bytes);
    memset(sv.mem, 0xa5, bytes);
    pthread_t th;
    if (pthread_create(&th, NULL, rr_server_main, &sv))
        fail("pthread_create");
    rr_loop(c, cfg, slots, cfg->seconds / 10); /* warm-up */
    double t0 = now_s();
    uint64_t n = rr_loop(c, cfg, slots, cfg->seconds);
    double dt = now_s() - t0;
    struct rr_req stop = {.op = 2};
    send_all(c, &stop, sizeof(stop));
    pthread_join(th, NULL);
    close(c);
    close(s);
    printf("{\"mode\": \"rr\", \"op\": \"%s\", \"size\": %llu, \"depth\": %u, \"seconds\": %.3f, "
           "\"ops\": %llu, \"ops_per_s\": %.1f, \"gbps\": %.6f, \"cc\": \"%s\"}\n",
           cfg->write ? "write" : "read", (unsigned long long)cfg->size, cfg->depth, dt,
           (unsigned long long)n, (double)n / dt, (double)n * (double)cfg->size / dt / 1e9, rr_cc_used);
    free(slots);
    free(sv.mem);
}

/* One stream of --stream: a sending thread and a receiving thread on one
 * loopback connection. */
struct stream_one {
    int c, s;               /* client (receiving) and server (sending) ends */
    uint64_t size;
    volatile int stop;      /* set by main: the sender stops */
    _Atomic unsigned long long received; /* SIZE-byte recv()s completed */
    pthread_t tx, rx;
};

static void *stream_sender(void *p)
{
    struct stream_one *t = p;
    uint8_t *b = malloc((size_t)t->size);
    if (!b)
        fail("malloc");
    memset(b, 0x77, (size_t)t->size);
    while (!t->stop)
        send_all(t->s, b, (size_t)t->size);
    shutdown(t->s, SHUT_WR);
    free(b);
    return NULL;
}

static void *stream_receiver(void *p)
{
    struct stream_one *t = p;
    uint8_t *b = malloc((size_t)t->size);
    if (!b)
        fail("malloc");
    while (recv_all(t->c, b, (size_t)t->size) == 0)
        t->received++;
    free(b);
    return NULL;
}

/* CPU seconds thread `th` has used. */
static double thread_cpu_s(pthread_t th)
{
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(th, &id) || clock_gettime(id, &ts))
        fail("pthread_getcpuclockid");
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sums the received counts and the receiving threads' CPU seconds. */
static void stream_sample(struct stream_one *st, unsigned n, unsigned long long *recvs, double *cpu)
{
    *recvs = 0;
    *cpu = 0;
    for (unsigned i = 0; i < n; i++) {
        *recvs += st[i].received;
        *cpu += thread_cpu_s(st[i].rx);
    }
}

static void run_stream(const struct rr_cfg *cfg)
{
    unsigned n = cfg->streams;
    struct stream_one *st = calloc(n, sizeof(*st));
    if (!st)
        fail("calloc");
    for (unsigned i = 0; i < n; i++) {
        socket_pair(&st[i].c, &st[i].s, 1);
        st[i].size = cfg->size;
        if (pthread_create(&st[i].tx, NULL, stream_sender, &st[i]) ||
            pthread_create(&st[i].rx, NULL, stream_receiver, &st[i]))
            fail("pthread_create");
    }
    sleep_s(cfg->seconds / 10); /* warm-up */
    unsigned long long r0, r1;
    double cpu0, cpu1;
    double t0 = now_s();
    stream_sample(st, n, &r0, &cpu0);
    sleep_s(cfg->seconds);
    stream_sample(st, n, &r1, &cpu1);
    double dt = now_s() - t0;
    for (unsigned i = 0; i < n; i++)
        st[i].stop = 1;
    for (unsigned i = 0; i < n; i++) {
        pthread_join(st[i].tx, NULL);
        pthread_join(st[i].rx, NULL);
        close(st[i].c);
        close(st[i].s);
    }
    double ops = (double)(r1 - r0), gb = ops * (double)cfg->size / 1e9;
    printf("{\"mode\": \"stream\", \"op\": \"stream\", \"size\": %llu, \"depth\": 1, "
           "\"streams\": %u, \"seconds\": %.3f, \"ops\": %llu, \"ops_per_s\": %.1f, "
           "\"gbps\": %.6f, \"rx_cpu_s_per_gb\": %.4f, \"cc\": \"%s\"}\n",
           (unsigned long long)cfg->size, n, dt, r1 - r0, ops / dt, gb / dt,
           gb > 0 ? (cpu1 - cpu0) / gb : 0.0, rr_cc_used);
    free(st);
}

static uint64_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    else if (*end)
        v = 0;
    return v;
}

int main(int argc, char **argv)
{
    struct rr_cfg cfg = {.size = 4096, .depth = 64, .streams = 1, .seconds = 2.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--rr"))
            cfg.stream = 0;
        else if (!strcmp(a, "--stream"))
            cfg.stream = 1;
        else if (!strcmp(a, "--bufs"))
            cfg.bufs = 1;
        else if (!strcmp(a, "--read"))
            cfg.write = 0;
        else if (!strcmp(a, "--write"))
            cfg.write = 1;
        else if (!strcmp(a, "-s") && v)
            cfg.size = parse_size(argv[++i]);
        else if (!strcmp(a, "-q") && v)
            cfg.depth = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(a, "--cc") && v)
            rr_cc = argv[++i];
        else if (!strcmp(a, "-n") && v)
            cfg.streams = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(a, "-D") && v)
            cfg.seconds = strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: %s [--rr|--stream] [--read|--write] [-s SIZE] [-q DEPTH] "
                            "[-n STREAMS] [--cc auto|system|NAME] [-D SECONDS]\n", argv[0]);
            return 2;
        }
    }
    if (!cfg.size || cfg.size > (1ull << 30) || !cfg.depth || cfg.depth > 4096 ||
        !cfg.streams || cfg.streams > 256 ||
        (uint64_t)cfg.depth * cfg.size > (1ull << 31) || !(cfg.seconds > 0)) {
        fprintf(stderr, "rr_ref: bad size, depth (depth x size <= 2 GiB), streams (1-256) or duration\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    rr_conns = cfg.stream ? cfg.streams : 1;
    if (cfg.stream)
        run_stream(&cfg);
    else
        run_rr(&cfg);
    return 0;
}
