/* SPDX-License-Identifier: MIT */
/* io_uring against epoll for small request/response transfers (issue 20:
 * "epoll is the baseline; io_uring may pay for small transfers because it
 * batches submissions and receives -- measure both").
 *
 * One loopback TCP connection per round, one client thread, --depth
 * requests in flight.  Each request is 32 bytes; the server answers each
 * with a SIZE-byte payload (a 4 KiB READ), in order.  The same blocking
 * server thread serves both clients: it reads whatever requests have
 * arrived and answers them with one send().
 *
 *  epoll: the client's socket is non-blocking and registered once
 *     (EPOLLIN, level-triggered), as railwire's tcp client loops do: send()
 *     every request that a completion freed, one call for the batch;
 *     epoll_wait(); recv() until EAGAIN.
 *  epoll-lean: the same, but a short recv() ends the draining (no final
 *     recv() that returns EAGAIN): the best an epoll loop does here.
 *  uring: one io_uring, one recv SQE kept outstanding into a large
 *     buffer; the requests freed by a completion are queued as one send
 *     SQE, and each loop turn is ONE io_uring_submit_and_wait() that both
 *     submits (send + re-armed recv) and reaps.
 *
 * Rounds rotate epoll, uring, epoll-lean (same run, same load) for each
 * depth.  Every system call the client makes is counted in the program
 * (send, recv, epoll_wait; io_uring_submit_and_wait counts one).
 * Prints one JSON line per depth:
 *   {"depth":8,"size":4096,"rounds":3,"epoll_ops_per_s":[..],
 *    "uring_ops_per_s":[..],"ratio_uring_over_epoll":{"min":..,"median":..,"max":..},
 *    "epoll_syscalls_per_op":..,"uring_syscalls_per_op":..}
 * Exit 77 where io_uring is unavailable (ENOSYS, EPERM in containers).
 * usage: railwire_uring_rr [-s SIZE] [-q 1,8,64] [-D SECONDS] [-r ROUNDS] */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define UR_REQ 32u
#define UR_MAXQ 256u
#define UR_RXBUF (1u << 20)

struct ur_cfg {
    size_t size;
    double seconds;
    int rounds;
    unsigned depths[8];
    int ndepths;
};

struct ur_result {
    double ops_per_s;
    double syscalls_per_op;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what)
{
    fprintf(stderr, "uring_rr: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Server: read requests (32 bytes each, a zero first byte means stop),
 * answer each with SIZE bytes, all answers of one read in one send. */
struct ur_server {
    int fd;
    size_t size;
};

static int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void *server_main(void *arg)
{
    struct ur_server *s = arg;
    uint8_t req[UR_REQ * UR_MAXQ];
    uint8_t *ans = calloc(UR_MAXQ, s->size);
    size_t have = 0;
    if (!ans)
        return NULL;
    memset(ans, 0x5a, UR_MAXQ * s->size);
    for (;;) {
        ssize_t k = recv(s->fd, req + have, sizeof req - have, 0);
        if (k <= 0)
            break;
        have += (size_t)k;
        size_t n = have / UR_REQ, stop = 0;
        for (size_t i = 0; i < n; i++)
            stop |= req[i * UR_REQ] == 0;
        if (stop || (n && send_all(s->fd, ans, n * s->size)))
            break;
        memmove(req, req + n * UR_REQ, have - n * UR_REQ);
        have -= n * UR_REQ;
    }
    shutdown(s->fd, SHUT_WR);
    free(ans);
    return NULL;
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A connected pair over loopback: *cli for the client, the server thread
 * started on the other end. */
static void connect_pair(size_t size, int *cli, pthread_t *th, struct ur_server *srv)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (void *)&a, &al))
        fail("listen on loopback");
    *cli = socket(AF_INET, SOCK_STREAM, 0);
    if (*cli < 0 || connect(*cli, (void *)&a, sizeof a))
        fail("connect");
    srv->fd = accept(l, NULL, NULL);
    if (srv->fd < 0)
        fail("accept");
    close(l);
    srv->size = size;
    set_nodelay(*cli);
    set_nodelay(srv->fd);
    if (pthread_create(th, NULL, server_main, srv))
        fail("pthread_create");
}

/* Stops the server and reads what it still answers, to its end. */
static void finish_pair(int cli, pthread_t th, struct ur_server *srv)
{
    char sink[65536];
    shutdown(cli, SHUT_WR);
    while (recv(cli, sink, sizeof sink, 0) > 0)
        ;
    pthread_join(th, NULL);
    close(srv->fd);
    close(cli);
}

/* Counts answers completed by n more received bytes. */
static unsigned take_bytes(size_t *partial, size_t n, size_t size)
{
    *partial += n;
    unsigned done = (unsigned)(*partial / size);
    *partial %= size;
    return done;
}

/* lean 0: recv until EAGAIN after each wake-up, as railwire's loops do;
 * lean 1: stop at the first short recv (level-triggered epoll wakes again
 * if more came), one recv fewer per wake-up. */
static struct ur_result run_epoll(const struct ur_cfg *c, unsigned depth, int lean)
{
    int fd;
    pthread_t th;
    struct ur_server srv;
    connect_pair(c->size, &fd, &th, &srv);
    uint8_t reqs[UR_REQ * UR_MAXQ], *rx = malloc(UR_RXBUF);
    memset(reqs, 1, sizeof reqs);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (!rx || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
        fail("epoll setup");
    int fl = 1;
    if (ioctl(fd, FIONBIO, &fl))
        fail("FIONBIO");
    uint64_t ops = 0, calls = 0, turns = 0;
    size_t partial = 0;
    unsigned to_send = depth;
    double t0 = now_s(), end = t0 + c->seconds;
    while (1) {
        if (to_send) {
            calls++;
            if (send_all(fd, reqs, to_send * UR_REQ))
                fail("send");
            to_send = 0;
        }
        if ((++turns & 63) == 0 && now_s() >= end)
            break;
        calls++;
        int nev = epoll_wait(ep, &ev, 1, 5000);
        if (nev < 0 && errno == EINTR)
            continue;
        if (nev != 1)
            fail("epoll_wait (nothing in 5 s)");
        for (;;) {
            calls++;
            ssize_t k = recv(fd, rx, UR_RXBUF, 0);
            if (k < 0 && errno == EAGAIN)
                break;
            if (k <= 0)
                fail("recv");
            unsigned d = take_bytes(&partial, (size_t)k, c->size);
            ops += d;
            to_send += d;
            if (lean && (size_t)k < UR_RXBUF)
                break;
        }
    }
    double dt = now_s() - t0;
    fl = 0;
    ioctl(fd, FIONBIO, &fl);
    close(ep);
    finish_pair(fd, th, &srv);
    free(rx);
    return (struct ur_result){(double)ops / dt, (double)calls / (double)(ops ? ops : 1)};
}

/* Queues one send of n requests and (when not armed) one recv into rx. */
static void uring_queue(struct io_uring *r, int fd, const uint8_t *reqs, unsigned n,
                        uint8_t *rx, int *rx_armed)
{
    struct io_uring_sqe *sqe;
    if (n) {
        sqe = io_uring_get_sqe(r);
        io_uring_prep_send(sqe, fd, reqs, n * UR_REQ, MSG_NOSIGNAL);
        io_uring_sqe_set_data64(sqe, 1);
    }
    if (!*rx_armed) {
        sqe = io_uring_get_sqe(r);
        io_uring_prep_recv(sqe, fd, rx, UR_RXBUF, 0);
        io_uring_sqe_set_data64(sqe, 2);
        *rx_armed = 1;
    }
}

static struct ur_result run_uring(const struct ur_cfg *c, unsigned depth)
{
    int fd;
    pthread_t th;
    struct ur_server srv;
    struct io_uring r;
    connect_pair(c->size, &fd, &th, &srv);
    uint8_t reqs[UR_REQ * UR_MAXQ], *rx = malloc(UR_RXBUF);
    memset(reqs, 1, sizeof reqs);
    /* The task's completions run when it waits (DEFER_TASKRUN: no
     * interrupting task work), one submitter: io_uring's best case for one
     * thread; without them where the kernel predates 6.1. */
    int rc = io_uring_queue_init(64, &r, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    if (rc == -EINVAL)
        rc = io_uring_queue_init(64, &r, 0);
    if (!rx || rc < 0) {
        errno = -rc;
        fail("io_uring_queue_init");
    }
    uint64_t ops = 0, calls = 0, turns = 0;
    size_t partial = 0;
    unsigned to_send = depth;
    int rx_armed = 0;
    double t0 = now_s(), end = t0 + c->seconds;
    while (1) {
        /* Wait for the send's completion and the recv's in the same call
         * (a send completes at once; with DEFER_TASKRUN, waiting for one
         * CQE would return with it alone and cost a second call). */
        unsigned wait_nr = to_send ? 2 : 1;
        uring_queue(&r, fd, reqs, to_send, rx, &rx_armed);
        to_send = 0;
        if ((++turns & 63) == 0 && now_s() >= end)
            break;
        calls++;
        rc = io_uring_submit_and_wait(&r, wait_nr);
        if (rc == -EINTR)
            continue;
        if (rc < 0) {
            errno = -rc;
            fail("io_uring_submit_and_wait");
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&r, head, cqe) {
            seen++;
            if (cqe->res <= 0) {
                errno = cqe->res < 0 ? -cqe->res : EPIPE;
                fail(io_uring_cqe_get_data64(cqe) == 1 ? "uring send" : "uring recv");
            }
            if (io_uring_cqe_get_data64(cqe) == 1 && cqe->res % UR_REQ) {
                errno = EMSGSIZE; /* a short send of requests: not expected */
                fail("uring send (short)");
            }
            if (io_uring_cqe_get_data64(cqe) == 2) {
                rx_armed = 0;
                unsigned d = take_bytes(&partial, (size_t)cqe->res, c->size);
                ops += d;
                to_send += d;
            }
        }
        io_uring_cq_advance(&r, seen);
    }
    double dt = now_s() - t0;
    /* The recv still armed completes when the server ends the stream. */
    io_uring_submit(&r);
    io_uring_queue_exit(&r);
    finish_pair(fd, th, &srv);
    free(rx);
    return (struct ur_result){(double)ops / dt, (double)calls / (double)(ops ? ops : 1)};
}

static int uring_available(void)
{
    struct io_uring r;
    int rc = io_uring_queue_init(4, &r, 0);
    if (rc < 0) {
        fprintf(stderr, "uring_rr: io_uring unavailable here (%s): skipped\n", strerror(-rc));
        return 0;
    }
    io_uring_queue_exit(&r);
    return 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void parse(int argc, char **argv, struct ur_cfg *c)
{
    *c = (struct ur_cfg){.size = 4096, .seconds = 1.0, .rounds = 3,
                         .depths = {1, 8, 64}, .ndepths = 3};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-s")) {
            c->size = strtoull(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "-D")) {
            c->seconds = atof(argv[i + 1]);
        } else if (!strcmp(argv[i], "-r")) {
            c->rounds = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-q")) {
            c->ndepths = 0;
            for (char *t = strtok(argv[i + 1], ","); t && c->ndepths < 8; t = strtok(NULL, ","))
                c->depths[c->ndepths++] = (unsigned)atoi(t);
        } else {
            break;
        }
    }
    if (c->size == 0 || c->size > (1u << 20) || c->rounds < 1 || c->rounds > 64 ||
        c->seconds <= 0 || c->ndepths == 0) {
        fprintf(stderr, "usage: railwire_uring_rr [-s SIZE<=1M] [-q 1,8,64] [-D SECONDS] "
                        "[-r ROUNDS<=64]\n");
        exit(2);
    }
    for (int i = 0; i < c->ndepths; i++)
        if (c->depths[i] < 1 || c->depths[i] > UR_MAXQ) {
            fprintf(stderr, "uring_rr: depth must be 1..%u\n", UR_MAXQ);
            exit(2);
        }
}

static void report(const struct ur_cfg *c, unsigned depth, const struct ur_result *e,
                   const struct ur_result *u, const struct ur_result *l)
{
    double ratio[64], lratio[64], esc = 0, usc = 0, lsc = 0;
    printf("{\"depth\":%u,\"size\":%zu,\"rounds\":%d,\"epoll_ops_per_s\":[", depth, c->size,
           c->rounds);
    for (int i = 0; i < c->rounds; i++)
        printf("%s%.0f", i ? "," : "", e[i].ops_per_s);
    printf("],\"uring_ops_per_s\":[");
    for (int i = 0; i < c->rounds; i++) {
        printf("%s%.0f", i ? "," : "", u[i].ops_per_s);
        ratio[i] = u[i].ops_per_s / e[i].ops_per_s;
        lratio[i] = u[i].ops_per_s / l[i].ops_per_s;
        lsc += l[i].syscalls_per_op / c->rounds;
        esc += e[i].syscalls_per_op / c->rounds;
        usc += u[i].syscalls_per_op / c->rounds;
    }
    printf("],\"epoll_lean_ops_per_s\":[");
    for (int i = 0; i < c->rounds; i++)
        printf("%s%.0f", i ? "," : "", l[i].ops_per_s);
    qsort(ratio, (size_t)c->rounds, sizeof ratio[0], cmp_d);
    qsort(lratio, (size_t)c->rounds, sizeof lratio[0], cmp_d);
    printf("],\"ratio_uring_over_epoll\":{\"min\":%.3f,\"median\":%.3f,\"max\":%.3f},"
           "\"ratio_uring_over_epoll_lean\":{\"min\":%.3f,\"median\":%.3f,\"max\":%.3f},"
           "\"epoll_syscalls_per_op\":%.3f,\"epoll_lean_syscalls_per_op\":%.3f,"
           "\"uring_syscalls_per_op\":%.3f}\n",
           ratio[0], ratio[c->rounds / 2], ratio[c->rounds - 1], lratio[0],
           lratio[c->rounds / 2], lratio[c->rounds - 1], esc, lsc, usc);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct ur_cfg c;
    parse(argc, argv, &c);
    if (!uring_available())
        return 77;
    for (int d = 0; d < c.ndepths; d++) {
        struct ur_result e[64], u[64], l[64];
        for (int i = 0; i < c.rounds; i++) {
            /* Rotate which goes first, so none always runs last. */
            for (int k = 0; k < 3; k++) {
                int w = (i + k) % 3;
                if (w == 0)
                    e[i] = run_epoll(&c, c.depths[d], 0);
                else if (w == 1)
                    u[i] = run_uring(&c, c.depths[d]);
                else
                    l[i] = run_epoll(&c, c.depths[d], 1);
            }
        }
        report(&c, c.depths[d], e, u, l);
    }
    return 0;
}
