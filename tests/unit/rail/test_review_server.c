/* SPDX-License-Identifier: MIT */
/* Adversarial review of the server and the railset over the real tcp
 * transport on loopback: clients that abort at every step of the handshake,
 * bad options, a crowd of clients past max_clients, the server destroyed
 * under load, and one session's death next to a healthy one. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "rail/client/railset_testing.h"
#include "common/sock.h"
#include "tcp/tcp_internal.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define ARENA (8 * MIB)

static uint8_t *arena;
static railwire_server *srv;
static char port[16];

static void start(unsigned max_clients, int io_timeout_ms)
{
    if (!arena)
        arena = malloc(ARENA);
    cr_assert_not_null(arena);
    for (size_t i = 0; i < ARENA; i++)
        arena[i] = (uint8_t)(i * 13u + (i >> 10));
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){arena, ARENA};
    o.max_clients = max_clients;
    o.io_timeout_ms = io_timeout_ms;
    cr_assert_eq(railwire_server_create(&o, &srv), 0);
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
}

static void fini(void)
{
    railwire_server_destroy(srv);
    srv = NULL;
    free(arena);
    arena = NULL;
}

TestSuite(review_server, .fini = fini, .timeout = 120);

static int client(unsigned n_rails, railwire_railset **rs)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = n_rails;
    o.slice_size = 64 * KIB;
    o.io_timeout_ms = 3000;
    o.op_timeout_ms = 3000;
    return railwire_railset_connect("127.0.0.1", port, &o, rs);
}

/* Waits (10 s at most) until the server has held `want` sessions for 50 ms
 * in a row: a connection the test just closed may still be accepted (and
 * counted) a moment after a first read of 0. */
static void wait_sessions(unsigned want)
{
    int64_t end = rw_now_ms() + 10000;
    unsigned got = railwire_server_sessions(srv), stable = 0;
    while (rw_now_ms() < end) {
        got = railwire_server_sessions(srv);
        stable = got == want ? stable + 1 : 0;
        if (stable >= 25)
            break;
        usleep(2000);
    }
    cr_assert_eq(got, want, "sessions: %u, want %u", got, want);
}

/* A 2-rail client reads 1 MiB and checks it. */
static void good_client_works(void)
{
    railwire_railset *rs;
    cr_assert_eq(client(2, &rs), 0);
    uint8_t *buf = malloc(MIB);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, MIB, &mr), 0);
    cr_assert_eq(railwire_read(rs, mr, buf, MIB, 0, 4096, 20000), 0);
    cr_assert_eq(memcmp(buf, arena + 4096, MIB), 0);
    railwire_railset_close(rs);
    free(buf);
}

static int raw(void)
{
    int fd = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port, 2000, &fd), 0);
    return fd;
}

static void recv_n(int fd, uint8_t *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = rw_sock_recv(fd, b + got, n - got, 3000);
        cr_assert_gt(k, 0, "the server ended the conversation early (%zd)", k);
        got += (size_t)k;
    }
}

static void hard_close(int fd, int reset)
{
    if (reset) {
        struct linger l = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    close(fd);
}

/* The client gives up after `step` steps of the conversation (0: right
 * after connect; 1: after its request; 2: after reading the params; 3: in
 * the middle of its ids; 4: after its ids, without any rail; 5: reads
 * the ack too), cleanly or with a reset.  Every session must be
 * released and the server must keep serving. */
Test(review_server, aborting_at_every_handshake_step_releases_the_session)
{
    start(8, 800);
    for (int reset = 0; reset < 2; reset++) {
        for (int step = 0; step <= 5; step++) {
            int fd = raw();
            uint8_t req = 2, params[1 + 2 * 36], ids[1 + 2 * 24];
            memset(ids, 0x41, sizeof(ids));
            ids[0] = 2;
            if (step >= 1)
                cr_assert_eq(rw_sock_send_all(fd, &req, 1, 1000), 0);
            if (step >= 2) {
                recv_n(fd, params, sizeof(params));
                cr_assert_eq(params[0], 2);
            }
            if (step == 3)
                cr_assert_eq(rw_sock_send_all(fd, ids, 13, 1000), 0);
            if (step >= 4)
                cr_assert_eq(rw_sock_send_all(fd, ids, sizeof(ids), 1000), 0);
            if (step == 5) {
                uint8_t ack = 0;
                recv_n(fd, &ack, 1);
                /* The server acks once its endpoints expect our rails; it
                 * does not wait for the rail connections themselves. */
                cr_assert_eq(ack, 0, "a complete WIRE.md handshake was not acked");
            }
            hard_close(fd, reset);
            wait_sessions(0);
        }
    }
    good_client_works();
    wait_sessions(0);
}

Test(review_server, rail_addrs_count_without_array_is_refused)
{
    arena = malloc(ARENA);
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){arena, ARENA};
    o.n_rail_addrs = 2; /* but rail_addrs is NULL */
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID);
    cr_assert_null(s);
    o.n_rail_addrs = 0;
    o.n_devices = 1; /* but devices is NULL */
    o.transport = RAILWIRE_TRANSPORT_TCP;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID);
    cr_assert_null(s);
    /* Lists of different lengths: tcp opens one domain per rail address and
     * must not index the (shorter) device list with it. */
    const char *addrs[2] = {"127.0.0.1", "127.0.0.1"};
    const char *one_dev[1] = {"ignored"};
    o.rail_addrs = addrs;
    o.n_rail_addrs = 2;
    o.devices = one_dev;
    o.n_devices = 1;
    cr_assert_eq(railwire_server_create(&o, &s), 0);
    railwire_server_destroy(s);
}

struct crowd {
    pthread_barrier_t *bar;
    int rc;
};

static void *crowd_main(void *arg)
{
    struct crowd *c = arg;
    railwire_railset *rs = NULL;
    c->rc = client(1, &rs);
    pthread_barrier_wait(c->bar); /* everybody connected or was refused */
    railwire_railset_close(rs);
    return NULL;
}

/* 16 clients at once against max_clients 4: exactly 4 are served, the
 * others are told peer-rejected (over the cap at their request) or refused
 * (the cap filled while their handshake ran: only complete handshakes
 * count), and the server then serves again. */
Test(review_server, a_crowd_past_max_clients_gets_exactly_the_cap)
{
    start(4, 3000);
    enum { N = 16 };
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, N);
    struct crowd c[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        c[i] = (struct crowd){.bar = &bar};
        cr_assert_eq(pthread_create(&th[i], NULL, crowd_main, &c[i]), 0);
    }
    int ok = 0, rejected = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        if (c[i].rc == 0)
            ok++;
        else if (c[i].rc == RAILWIRE_E_PEER_REJECTED || c[i].rc == RAILWIRE_E_REFUSED)
            rejected++;
        else
            cr_assert_fail("client %d failed with %s", i, railwire_error_class(c[i].rc));
    }
    pthread_barrier_destroy(&bar);
    cr_assert_eq(ok, 4);
    cr_assert_eq(rejected, N - 4);
    wait_sessions(0);
    good_client_works();
}

/* Waits for n completions; counts the successful ones and checks that none
 * is reported twice.  Returns the number that succeeded. */
static int drain(railwire_railset *rs, int n, const railwire_handle *hs, uint8_t *seen)
{
    int got = 0, good = 0;
    while (got < n) {
        railwire_completion c[16];
        int k = railwire_wait(rs, c, 16, 30000);
        cr_assert_gt(k, 0, "a transfer never completed (%d)", k);
        for (int j = 0; j < k; j++) {
            int i = (int)c[j].user_data;
            cr_assert_eq(c[j].handle, hs[i]);
            cr_assert_eq(seen[i], 0, "transfer %d completed twice", i);
            seen[i] = 1;
            if (c[j].status == 0)
                good++;
        }
        got += k;
    }
    return good;
}

/* The server is destroyed while a client has many transfers in flight:
 * every transfer completes exactly once, with an error unless it moved all
 * its bytes; nothing hangs. */
Test(review_server, destroying_the_server_under_load_fails_transfers_cleanly)
{
    start(8, 3000);
    railwire_railset *rs;
    cr_assert_eq(client(4, &rs), 0);
    enum { N = 64 };
    size_t len = 256 * KIB;
    uint8_t *buf = calloc(N, len);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, N * len, &mr), 0);
    railwire_handle hs[N];
    for (int i = 0; i < N; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * len,
                          .length = len, .remote_offset = (uint64_t)i * (ARENA / N) % ARENA,
                          .user_data = (uint64_t)i};
        if (op.remote_offset + len > ARENA)
            op.remote_offset = 0;
        cr_assert_eq(railwire_submit(rs, &op, &hs[i]), 0);
    }
    /* Copy what the arena held: the server frees nothing of it, but the
     * test frees the arena in fini. */
    railwire_server_destroy(srv);
    srv = NULL;
    uint8_t seen[N] = {0};
    int good = drain(rs, N, hs, seen);
    for (int i = 0; i < N; i++)
        cr_assert_eq(seen[i], 1);
    (void)good;
    railwire_rail_stats st[4];
    cr_assert_eq(railwire_railset_stats(rs, st, 4, sizeof(*st)), 4);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(st[r].state, RAILWIRE_RAIL_DOWN, "rail %d still up with the server gone", r);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    railwire_railset_close(rs);
    free(buf);
}

/* Client A is closed abruptly in the middle of its transfers; client B,
 * served by the same server at the same time, finishes every transfer
 * with the right bytes and its rails stay up. */
Test(review_server, one_session_dying_does_not_disturb_another)
{
    start(8, 3000);
    railwire_railset *a, *b;
    cr_assert_eq(client(2, &a), 0);
    cr_assert_eq(client(2, &b), 0);
    enum { N = 32 };
    size_t len = 128 * KIB;
    uint8_t *ba = calloc(N, len), *bb = calloc(N, len);
    railwire_mr *ma, *mb;
    cr_assert_eq(railwire_mr_register(a, ba, N * len, &ma), 0);
    cr_assert_eq(railwire_mr_register(b, bb, N * len, &mb), 0);
    railwire_handle ha[N], hb[N];
    for (int i = 0; i < N; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = ma, .local = ba + i * len,
                          .length = len, .remote_offset = (uint64_t)i * len,
                          .user_data = (uint64_t)i};
        cr_assert_eq(railwire_submit(a, &op, &ha[i]), 0);
        op.mr = mb;
        op.local = bb + i * len;
        cr_assert_eq(railwire_submit(b, &op, &hb[i]), 0);
    }
    railwire_railset_close(a); /* with its transfers in flight */
    uint8_t seen[N] = {0};
    cr_assert_eq(drain(b, N, hb, seen), N);
    cr_assert_eq(memcmp(bb, arena, N * len), 0);
    railwire_rail_stats st[2];
    railwire_railset_stats(b, st, 2, sizeof(*st));
    cr_assert_eq(st[0].state, RAILWIRE_RAIL_UP);
    cr_assert_eq(st[1].state, RAILWIRE_RAIL_UP);
    wait_sessions(1);
    railwire_railset_close(b);
    wait_sessions(0);
    free(ba);
    free(bb);
}

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n++;
    return n;
}

static int count_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* Waits until the descriptor and thread counts stay put for 500 ms. */
static void settle(void)
{
    int64_t end = rw_now_ms() + 10000;
    int f = count_fds(), t = count_threads();
    while (rw_now_ms() < end) {
        usleep(500 * 1000);
        int f2 = count_fds(), t2 = count_threads();
        if (f2 == f && t2 == t)
            return;
        f = f2;
        t = t2;
    }
}

/* Every failing connect (cap, closed port, wrong dialect, bad options) and
 * every successful connect + close leaves no descriptor and no thread
 * behind on either side. */
Test(review_server, connect_error_paths_leak_no_fd_and_no_thread)
{
    start(1, 1500);
    good_client_works(); /* warm up lazily created process state */
    wait_sessions(0);
    /* A released session's thread is joined and its fd closed by the
     * accept thread a moment later (it polls every 100 ms): let that
     * happen before taking the reference counts. */
    settle();
    int fds0 = count_fds(), th0 = count_threads();
    for (int round = 0; round < 3; round++) {
        railwire_railset *a = NULL, *b = NULL;
        cr_assert_eq(client(2, &a), 0);
        cr_assert_eq(client(2, &b), RAILWIRE_E_PEER_REJECTED, "over max_clients");
        cr_assert_null(b);
        railwire_railset_close(a);
        wait_sessions(0);

        railwire_railset_opts o;
        railwire_railset_opts_init(&o);
        o.transport = RAILWIRE_TRANSPORT_TCP;
        o.dialect = RAILWIRE_DIALECT_RO; /* the server speaks RW */
        o.n_rails = 2;
        o.io_timeout_ms = 1500;
        cr_assert_lt(railwire_railset_connect("127.0.0.1", port, &o, &b), 0);
        cr_assert_null(b);
        o.dialect = RAILWIRE_DIALECT_RW;
        o.n_rails = RAILWIRE_MAX_RAILS + 1;
        cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &b), RAILWIRE_E_INVALID);
        o.n_rails = 0;
        cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &b), RAILWIRE_E_INVALID);
        o.n_rails = 1;
        cr_assert_eq(railwire_railset_connect("127.0.0.1", "1", &o, &b), RAILWIRE_E_CONNECT);
        cr_assert_eq(railwire_railset_connect(NULL, port, &o, &b), RAILWIRE_E_INVALID);
        cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, NULL), RAILWIRE_E_INVALID);
        wait_sessions(0);
    }
    /* Let the accept thread reap the last session threads. */
    int64_t end = rw_now_ms() + 5000;
    while ((count_fds() != fds0 || count_threads() != th0) && rw_now_ms() < end)
        usleep(10000);
    if (count_fds() != fds0)
        (void)system("ls -l /proc/$PPID/fd >&2"); /* the shell's parent: this test process */
    cr_assert_eq(count_fds(), fds0, "descriptors leaked: %d, had %d", count_fds(), fds0);
    cr_assert_eq(count_threads(), th0, "threads leaked");
}

/* A rail's connection is cut (as a reset would) at a random moment while
 * READs and WRITEs stream over 3 rails, round after round: every transfer
 * completes exactly once and successfully, with the right bytes, and the
 * per-rail byte counters add up to exactly what was asked for. */
Test(review_server, connections_cut_at_random_moments_lose_nothing)
{
    start(8, 3000);
    srand(4242);
    enum { N = 24 };
    size_t len = 192 * KIB;
    uint8_t *buf = malloc(N * len);
    for (int round = 0; round < 8; round++) {
        railwire_railset *rs;
        cr_assert_eq(client(3, &rs), 0);
        railwire_mr *mr;
        cr_assert_eq(railwire_mr_register(rs, buf, N * len, &mr), 0);
        int write = round & 1;
        if (write)
            for (size_t i = 0; i < N * len; i++)
                buf[i] = (uint8_t)(i * 7u + (unsigned)round);
        else
            memset(buf, 0, N * len);
        railwire_op ops[N];
        railwire_handle hs[N];
        for (int i = 0; i < N; i++)
            ops[i] = (railwire_op){.opcode = write ? RAILWIRE_OP_WRITE : RAILWIRE_OP_READ,
                                   .mr = mr, .local = buf + i * len, .length = len,
                                   .remote_offset = (uint64_t)i * len, .user_data = (uint64_t)i};
        cr_assert_eq(railwire_submit_batch(rs, ops, N, hs), N);
        int victim = rand() % 3;
        usleep((useconds_t)(rand() % 3000));
        struct rw_tcp_cli_ep *ep = rw_container_of(rw_test_rail_ep(rs, victim), struct rw_tcp_cli_ep, base);
        shutdown(ep->fd, SHUT_RDWR);
        uint8_t seen[N] = {0};
        cr_assert_eq(drain(rs, N, hs, seen), N, "round %d: a transfer failed", round);
        if (write)
            cr_assert_eq(memcmp(arena, buf, N * len), 0, "round %d: WRITE bytes wrong", round);
        else
            cr_assert_eq(memcmp(buf, arena, N * len), 0, "round %d: READ bytes wrong", round);
        railwire_rail_stats st[3];
        railwire_railset_stats(rs, st, 3, sizeof(*st));
        uint64_t total = 0;
        for (int r = 0; r < 3; r++)
            total += write ? st[r].bytes_written : st[r].bytes_read;
        cr_assert_eq(total, (uint64_t)N * len, "round %d: rails count %llu bytes", round,
                     (unsigned long long)total);
        railwire_railset_close(rs);
    }
    free(buf);
}

/* A client that reads the server's (large: 8 rails x 4096 layers) params
 * a trickle at a time must not keep its session beyond the handshake
 * step's I/O timeout (on loopback the kernel may buffer all the params at
 * once; then the wait for the ids is what times out). */
Test(review_server, a_client_reading_params_slowly_is_cut_off, .timeout = 120)
{
    enum { LAYERS = 4096 };
    static railwire_region regs[LAYERS];
    arena = malloc(ARENA);
    for (unsigned l = 0; l < LAYERS; l++)
        regs[l] = (railwire_region){arena + l * 1024, 1024};
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RO;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.layers = regs;
    o.n_layers = LAYERS;
    o.io_timeout_ms = 1000;
    cr_assert_eq(railwire_server_create(&o, &srv), 0);
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    uint8_t req = 8;
    cr_assert_eq(send(fd, &req, 1, 0), 1);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    /* Trickle (about 20 KB/s: 20 s for the whole params) for 4 s, four
     * times the step bound. */
    int64_t end = rw_now_ms() + 4000;
    while (rw_now_ms() < end) {
        uint8_t b[2048];
        if (recv(fd, b, sizeof(b), 0) <= 0)
            break;
        usleep(100 * 1000);
    }
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(srv, &st, sizeof(st)), 0);
    cr_assert_eq(st.pending + st.sessions_live, 0,
                 "the handshake of a trickling reader outlived its 1 s step bound");
    cr_assert_eq(st.handshake_timeouts, 1);
    close(fd);
}

/* A client that vanishes after its handshake (power loss, cable pulled: no
 * FIN, no RST ever arrives) must not hold its session, and its slot under
 * max_clients, forever.  Runs in a network namespace of its own (unnamed:
 * it dies with the test process) where nftables drops every TCP packet
 * once the client is up. */
Test(review_server, a_vanished_client_is_released, .timeout = 120)
{
    if (unshare(CLONE_NEWNET) != 0 || system("ip link set lo up") != 0)
        cr_skip_test("cannot create a network namespace here");
    start(1, 1000);
    railwire_railset *rs;
    cr_assert_eq(client(1, &rs), 0);
    wait_sessions(1);
    if (system("nft add table inet rwt && nft add chain inet rwt in "
               "'{ type filter hook input priority 0; }' && "
               "nft add rule inet rwt in meta l4proto tcp drop") != 0)
        cr_skip_test("nftables is not usable here");
    railwire_railset_close(rs); /* its FINs are dropped: the server never hears */
    int64_t end = rw_now_ms() + 30000;
    while (railwire_server_sessions(srv) > 0 && rw_now_ms() < end)
        usleep(50 * 1000);
    cr_assert_eq(railwire_server_sessions(srv), 0,
                 "the session of a vanished client was kept (and its max_clients slot)");
}

/* A burst of clients over max_clients, more than the server keeps lingering
 * for a graceful rejection: every one of them must still read a clean end
 * of stream (peer-rejected), never a reset (which a client reports as an
 * I/O error, as if the network had failed). */
Test(review_server, a_burst_of_rejected_clients_all_see_peer_rejected)
{
    start(1, 3000);
    railwire_railset *rs;
    cr_assert_eq(client(1, &rs), 0);
    wait_sessions(1);
    enum { N = 100 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        fds[i] = raw();
        uint8_t req = 1;
        cr_assert_eq(rw_sock_send_all(fds[i], &req, 1, 1000), 0);
    }
    int eof = 0, reset = 0;
    for (int i = 0; i < N; i++) {
        uint8_t b;
        ssize_t k = rw_sock_recv(fds[i], &b, 1, 5000);
        if (k == 0)
            eof++;
        else if (k == RAILWIRE_E_IO)
            reset++;
        else
            cr_assert_fail("client %d: got %zd", i, k);
        close(fds[i]);
    }
    cr_assert_eq(eof, N, "%d of %d rejected clients saw a reset instead of end of stream", reset, N);
    railwire_railset_close(rs);
    wait_sessions(0);
}
