/* SPDX-License-Identifier: MIT */
#include "tcp_fixture.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/time.h"

void t_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)(x ^ (i >> 8));
    }
}

uint8_t *t_open_with_buf(struct tpair *p, int io_timeout_ms, unsigned depth, size_t len,
                         struct rw_mr **lmr)
{
    uint8_t *buf = malloc(len);

    cr_assert_not_null(buf);
    t_open(p, "127.0.0.1", io_timeout_ms);
    t_connect(p, NULL, 0, depth);
    cr_assert_eq(rw_tcp_ops.mr_reg(p->cdom, buf, len, RW_ACCESS_LOCAL, lmr), 0);
    return buf;
}

void t_open(struct tpair *p, const char *addr, int io_timeout_ms)
{
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = addr, .io_timeout_ms = io_timeout_ms};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = addr, .io_timeout_ms = io_timeout_ms};

    memset(p, 0, sizeof(*p));
    cr_assert_eq(rw_tcp_ops.domain_open(&sc, &p->sdom), 0);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &p->cdom), 0);
    p->smem = malloc(T_SRV_LEN);
    cr_assert_not_null(p->smem);
    t_pattern(p->smem, T_SRV_LEN, 1);
    cr_assert_eq(rw_tcp_ops.mr_reg(p->sdom, p->smem, T_SRV_LEN,
                                   RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &p->smr), 0);
}

struct srv_conn_arg {
    struct rw_ep *sep;
    struct rw_qp_id remote;
    int timeout_ms;
    int rc;
};

static void *srv_conn(void *a)
{
    struct srv_conn_arg *s = a;
    s->rc = rw_tcp_ops.ep_connect(s->sep, &s->remote, s->timeout_ms);
    return NULL;
}

int t_connect_both(struct rw_ep *sep, struct rw_ep *cep, int timeout_ms, int *srv_rc)
{
    struct srv_conn_arg a = {.sep = sep, .remote = cep->local, .timeout_ms = timeout_ms};
    pthread_t th;
    int rc;

    cr_assert_eq(pthread_create(&th, NULL, srv_conn, &a), 0);
    rc = rw_tcp_ops.ep_connect(cep, &sep->local, timeout_ms);
    pthread_join(th, NULL);
    *srv_rc = a.rc;
    return rc;
}

void t_connect(struct tpair *p, struct rw_mr *const *exposed, size_t n_exposed, unsigned depth)
{
    struct rw_ep_cfg ccfg = {.depth = depth};

    t_connect_cfg(p, exposed, n_exposed, &ccfg);
}

void t_connect_cfg(struct tpair *p, struct rw_mr *const *exposed, size_t n_exposed,
                   const struct rw_ep_cfg *ccfg)
{
    struct rw_ep_cfg scfg = {.depth = ccfg->depth, .exposed = exposed ? exposed : &p->smr,
                             .n_exposed = exposed ? n_exposed : 1, .set_rails = ccfg->set_rails};
    int srv_rc, rc;

    cr_assert_eq(rw_tcp_ops.ep_create(p->sdom, &scfg, &p->sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p->cdom, ccfg, &p->cep), 0);
    rc = t_connect_both(p->sep, p->cep, 5000, &srv_rc);
    cr_assert_eq(rc, 0, "client connect: %d", rc);
    cr_assert_eq(srv_rc, 0, "server connect: %d", srv_rc);
}

void t_close(struct tpair *p)
{
    if (p->cep)
        rw_tcp_ops.ep_destroy(p->cep);
    if (p->sep)
        rw_tcp_ops.ep_destroy(p->sep);
    if (p->smr)
        rw_tcp_ops.mr_dereg(p->smr);
    if (p->cdom)
        rw_tcp_ops.domain_close(p->cdom);
    if (p->sdom)
        rw_tcp_ops.domain_close(p->sdom);
    free(p->smem);
    memset(p, 0, sizeof(*p));
}

int t_wait(struct rw_ep *ep, struct rw_wc *wcs, int n, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    int got = 0;

    while (got < n) {
        struct pollfd pfd = {.fd = rw_tcp_ops.ep_wait_fd(ep), .events = POLLIN};
        got += rw_tcp_ops.ep_poll(ep, wcs + got, n - got);
        if (got >= n)
            break;
        rw_tcp_ops.ep_arm(ep);
        got += rw_tcp_ops.ep_poll(ep, wcs + got, n - got);
        if (got >= n || rw_ms_left(deadline) == 0)
            break;
        poll(&pfd, 1, rw_ms_left(deadline));
    }
    return got;
}

int t_post_all(struct rw_ep *ep, const struct rw_wr *wrs, size_t n, struct rw_wc *wcs, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    size_t posted = 0;
    int got = 0;

    while (posted < n && rw_ms_left(deadline) > 0) {
        int k = rw_tcp_ops.ep_post(ep, wrs + posted, n - posted);
        cr_assert_geq(k, 0, "ep_post: %d", k);
        posted += (size_t)k;
        if (posted < n)
            got += t_wait(ep, wcs + got, 1, rw_ms_left(deadline));
    }
    cr_assert_eq(posted, n, "could not post every WR in time");
    return got;
}

/* ------------------------------------------------------- parked threads */

static sem_t park_in, park_out;

static void park_handler(int sig)
{
    (void)sig;
    sem_post(&park_in);
    while (sem_wait(&park_out) < 0 && errno == EINTR)
        ;
}

void t_park_thread(pthread_t thread)
{
    struct sigaction sa = {.sa_handler = park_handler};
    struct timespec ts;

    cr_assert_eq(sem_init(&park_in, 0, 0), 0);
    cr_assert_eq(sem_init(&park_out, 0, 0), 0);
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    cr_assert_eq(pthread_kill(thread, SIGUSR1), 0);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    cr_assert_eq(sem_timedwait(&park_in, &ts), 0, "the thread parked");
}

void t_release_thread(void)
{
    sem_post(&park_out);
}

/* ------------------------------------------------------------ fake server */

/* The reset script (fake_start_reset).  SO_LINGER 0 makes close() send a
 * reset right behind the answers.  Returns 1 once it reset, 0 if the test
 * never said go. */
static int fake_answer_and_reset(struct fake_srv *f)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    uint8_t out[RW_TCP_RESP_SIZE * 8];
    unsigned n = f->reset_answers < 8 ? f->reset_answers : 8;
    int64_t deadline = rw_now_ms() + 10000;

    while (!atomic_load(&f->reset_go)) {
        if (rw_ms_left(deadline) == 0)
            return 0; /* the test gave up: go on reading until fake_close */
        usleep(1000);
    }
    for (unsigned i = 0; i < n; i++) {
        struct rw_tcp_resp r = {.tag = i, .status = RW_TCP_ST_OK, .length = 0};
        rw_tcp_resp_encode(out + i * RW_TCP_RESP_SIZE, &r);
    }
    atomic_store(&f->reset, 1);
    (void)!send(f->cfd, out, n * RW_TCP_RESP_SIZE, MSG_NOSIGNAL);
    setsockopt(f->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(f->cfd);
    f->cfd = -1;
    return 1;
}

static void *fake_main(void *arg)
{
    struct fake_srv *f = arg;
    uint8_t hello[RW_TCP_HELLO_SIZE], buf[65536];
    size_t got = 0;
    struct pollfd pfd = {.fd = f->lfd, .events = POLLIN};

    if (poll(&pfd, 1, 10000) != 1)
        return NULL;
    f->cfd = accept(f->lfd, NULL, NULL);
    if (f->cfd < 0)
        return NULL;
    while (got < sizeof(hello)) {
        ssize_t k = recv(f->cfd, hello + got, sizeof(hello) - got, 0);
        if (k <= 0)
            return NULL;
        got += (size_t)k;
    }
    if (send(f->cfd, &f->verdict, 1, MSG_NOSIGNAL) != 1)
        return NULL;
    atomic_store(&f->started, 1);
    for (;;) {
        ssize_t k = recv(f->cfd, buf, sizeof(buf), 0);
        if (k <= 0)
            break;
        f->drained += (unsigned long long)k;
        if (f->reset_answers && f->drained >= f->reset_after_bytes) {
            if (fake_answer_and_reset(f))
                break;
            f->reset_answers = 0;
        }
    }
    return NULL;
}

int t_listen_loopback(int backlog, uint16_t *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(listen(fd, backlog), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    *port = ntohs(sin.sin_port);
    return fd;
}

static void fake_launch(struct fake_srv *f, uint8_t verdict, unsigned answers,
                        unsigned long long after_bytes)
{
    pthread_t *th = malloc(sizeof(*th));

    memset(f, 0, sizeof(*f));
    f->cfd = -1;
    f->verdict = verdict;
    f->reset_answers = answers;
    f->reset_after_bytes = after_bytes;
    f->lfd = t_listen_loopback(4, &f->port);
    f->id = t_loopback_id(f->port, 1, 42);
    cr_assert_not_null(th);
    cr_assert_eq(pthread_create(th, NULL, fake_main, f), 0);
    f->thread = th;
}

void fake_start(struct fake_srv *f, uint8_t verdict)
{
    fake_launch(f, verdict, 0, 0);
}

void fake_start_reset(struct fake_srv *f, unsigned answers, unsigned long long after_bytes)
{
    fake_launch(f, RW_TCP_VERDICT_OK, answers, after_bytes);
}

int fake_wait_attached(struct fake_srv *f, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    while (!atomic_load(&f->started) && rw_ms_left(deadline) > 0)
        usleep(1000);
    return atomic_load(&f->started);
}

void fake_close(struct fake_srv *f)
{
    /* After a reset the thread closed cfd itself (and ends on its own). */
    if (atomic_load(&f->started) && !atomic_load(&f->reset))
        shutdown(f->cfd, SHUT_RDWR);
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(*(pthread_t *)f->thread, NULL);
    free(f->thread);
    if (f->cfd >= 0)
        close(f->cfd);
    close(f->lfd);
}

void t_silent_open(struct t_silent *s, const struct rw_ep_cfg *cfg, size_t buf_len)
{
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1", .io_timeout_ms = 60000};

    s->buf = calloc(1, buf_len);
    cr_assert_not_null(s->buf);
    fake_start(&s->f, RW_TCP_VERDICT_OK);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &s->cdom), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(s->cdom, cfg, &s->cep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(s->cep, &s->f.id, 5000), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(s->cdom, s->buf, buf_len, RW_ACCESS_LOCAL, &s->lmr), 0);
    cr_assert(fake_wait_attached(&s->f, 5000), "the fake server answered the hello");
}

void t_silent_close(struct t_silent *s)
{
    rw_tcp_ops.ep_destroy(s->cep);
    rw_tcp_ops.mr_dereg(s->lmr);
    rw_tcp_ops.domain_close(s->cdom);
    fake_close(&s->f);
    free(s->buf);
}

struct rw_qp_id t_loopback_id(uint16_t port, uint32_t slot, uint32_t psn)
{
    struct rw_qp_id id = {.qpn = slot << 16 | port, .psn = psn};
    id.gid[10] = 0xff;
    id.gid[11] = 0xff;
    id.gid[12] = 127;
    id.gid[15] = 1;
    return id;
}
