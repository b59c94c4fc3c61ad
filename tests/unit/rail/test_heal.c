/* SPDX-License-Identifier: MIT */
/* Healing over loopback with the real tcp transport: a lost rail comes back
 * through a new session and carries data registered before it died; with
 * healing off it stays lost; slice tries are bounded; no live rail for the
 * all-down bound fails everything and a restarted server heals it again; a
 * session whose control connection ended moves its working rails to a new
 * session without taking them down; close never waits for an attempt,
 * and the attempt keeps the TLS credentials it dials with past the close. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "rail/client/railset_testing.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define LEN (4 * MIB)

static uint8_t pat(size_t i)
{
    return (uint8_t)(i * 151u + (i >> 11) * 5u + 3u);
}

static uint8_t *mem;

static railwire_server *server(const char *port)
{
    if (!mem) {
        mem = malloc(LEN);
        cr_assert_not_null(mem);
        for (size_t i = 0; i < LEN; i++)
            mem[i] = pat(i);
    }
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RO;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.listen_port = port;
    o.io_timeout_ms = 2000;
    railwire_region reg = {mem, LEN};
    o.layers = &reg;
    o.n_layers = 1;
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&o, &s), 0);
    return s;
}

static railwire_railset_opts opts(unsigned rails)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.slice_size = 64 * KIB;
    o.connect_timeout_ms = 2000;
    o.io_timeout_ms = 2000;
    o.op_timeout_ms = 2000;
    o.heal_backoff_min_ms = 20;
    return o;
}

static int connect_to(railwire_server *s, const railwire_railset_opts *o, railwire_railset **rs)
{
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(s));
    return railwire_railset_connect("127.0.0.1", port, o, rs);
}

/* Reads the whole layer and checks it. */
static int read_all(railwire_railset *rs, railwire_mr *mr, uint8_t *buf)
{
    memset(buf, 0, LEN);
    int rc = railwire_read(rs, mr, buf, LEN, 0, 0, 20000);
    if (rc == 0)
        for (size_t i = 0; i < LEN; i++)
            cr_assert_eq(buf[i], pat(i), "byte %zu differs", i);
    return rc;
}

/* Drives the railset (small reads) until rail r is up again or ms pass. */
static int wait_rail_up(railwire_railset *rs, railwire_mr *mr, uint8_t *buf, unsigned r, int ms)
{
    int64_t end = rw_now_ms() + ms;
    railwire_rail_stats st[RAILWIRE_MAX_RAILS];
    while (rw_now_ms() < end) {
        railwire_read(rs, mr, buf, 4096, 0, 0, 2000);
        railwire_railset_stats(rs, st, RAILWIRE_MAX_RAILS, sizeof(*st));
        if (st[r].state == RAILWIRE_RAIL_UP)
            return 1;
        usleep(5000);
    }
    return 0;
}

Test(heal, a_killed_rail_comes_back_and_carries_data)
{
    railwire_server *s = server("0");
    railwire_railset_opts o = opts(2);
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    uint8_t *buf = malloc(LEN);
    railwire_mr *mr; /* registered before the rail dies: must work on the healed rail */
    cr_assert_eq(railwire_mr_register(rs, buf, LEN, &mr), 0);
    cr_assert_eq(read_all(rs, mr, buf), 0);
    rw_test_kill_rail(rs, 1); /* as a reset would, behind the railset's back */
    cr_assert_eq(read_all(rs, mr, buf), 0);
    cr_assert(wait_rail_up(rs, mr, buf, 1, 10000), "rail 1 did not heal");
    railwire_rail_stats st[2];
    railwire_railset_stats(rs, st, 2, sizeof(*st));
    cr_assert_eq(st[1].heals, 1);
    cr_assert_geq(st[1].heal_attempts, 1);
    cr_assert_eq(st[1].session, 1, "the healed rail belongs to a new session");
    cr_assert_eq(st[1].control_up, 1);
    cr_assert_eq(st[1].down_reason, 0);
    cr_assert_neq(st[1].last_down_reason, 0);
    cr_assert_eq(st[0].session, 0);
    uint64_t before = st[1].bytes_read;
    for (int k = 0; k < 4; k++)
        cr_assert_eq(read_all(rs, mr, buf), 0);
    railwire_railset_stats(rs, st, 2, sizeof(*st));
    cr_assert_gt(st[1].bytes_read, before, "the healed rail carries no data");
    /* The server counts session 1 once its ack is sent, which the client
     * may read first: wait (bounded) for its count to catch up. */
    for (int i = 0; i < 100 && railwire_server_sessions(s) != 2; i++)
        usleep(50000);
    cr_assert_eq(railwire_server_sessions(s), 2, "sessions 0 and 1 are both in use");
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(buf);
}

Test(heal, off_keeps_a_lost_rail_lost)
{
    railwire_server *s = server("0");
    railwire_railset_opts o = opts(2);
    o.heal = 0;
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    uint8_t *buf = malloc(LEN);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, LEN, &mr), 0);
    rw_test_kill_rail(rs, 1);
    for (int k = 0; k < 10; k++) {
        cr_assert_eq(read_all(rs, mr, buf), 0);
        usleep(20000);
    }
    railwire_rail_stats st[2];
    railwire_railset_stats(rs, st, 2, sizeof(*st));
    cr_assert_eq(st[1].state, RAILWIRE_RAIL_DOWN);
    cr_assert_eq(st[1].heals + st[1].heal_attempts, 0);
    cr_assert_eq(railwire_server_sessions(s), 1);
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(buf);
}

Test(heal, a_slice_is_carried_at_most_max_slice_tries_times)
{
    railwire_server *s = server("0");
    railwire_railset_opts o = opts(2);
    o.max_slice_tries = 1;
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    uint8_t *buf = malloc(LEN);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, LEN, &mr), 0);
    enum { N = 32 };
    railwire_op ops[N];
    railwire_handle hs[N];
    for (int i = 0; i < N; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * 128 * KIB,
                               .length = 128 * KIB, .remote_offset = (uint64_t)i * 128 * KIB};
    cr_assert_eq(railwire_submit_batch(rs, ops, N, hs), N);
    /* Whatever rail 0 has in flight now has been carried once already. */
    size_t in_flight = rw_test_rail_outstanding(rs, 0);
    rw_test_fail_rail(rs, 0, RAILWIRE_E_RAIL_DOWN);
    int failed = 0, ok = 0;
    while (failed + ok < N) {
        railwire_completion c[8];
        int n = railwire_wait(rs, c, 8, 20000);
        cr_assert_gt(n, 0);
        for (int k = 0; k < n; k++) {
            if (c[k].status == 0) {
                ok++;
            } else {
                cr_assert_eq(c[k].status, RAILWIRE_E_RAIL_DOWN, "failed with %s, not the last "
                             "error of its slice", railwire_error_class(c[k].status));
                failed++;
            }
        }
    }
    cr_assert_gt(in_flight, 0);
    cr_assert_gt(failed, 0, "slices carried once were re-issued despite max_slice_tries 1");
    cr_assert_gt(ok, 0);
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(buf);
}

Test(heal, all_down_bound_then_a_restarted_server_heals)
{
    railwire_server *s = server("0");
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(s));
    railwire_railset_opts o = opts(1);
    o.all_down_timeout_ms = 500;
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    uint8_t *buf = malloc(LEN);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, LEN, &mr), 0);
    cr_assert_eq(read_all(rs, mr, buf), 0);
    railwire_server_destroy(s);
    /* The only rail dies; the transfer waits for a heal, then fails. */
    int rc = railwire_read(rs, mr, buf, 64 * KIB, 0, 0, 20000);
    cr_assert_eq(rc, RAILWIRE_E_ALL_RAILS_DOWN, "got %s", railwire_error_class(rc));
    /* Past the bound a new transfer fails at once. */
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 4096};
    railwire_handle h;
    cr_assert_eq(railwire_submit(rs, &op, &h), RAILWIRE_E_ALL_RAILS_DOWN);
    /* The server comes back on the same port: the railset heals. */
    s = server(port);
    int healed = 0;
    for (int64_t end = rw_now_ms() + 15000; rw_now_ms() < end && !healed;) {
        railwire_completion c;
        railwire_poll(rs, &c, 1);
        healed = rw_test_live(rs) == 1;
        usleep(10000);
    }
    cr_assert(healed, "the railset did not heal after the server came back");
    cr_assert_eq(read_all(rs, mr, buf), 0);
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(buf);
}

Test(heal, rails_of_a_session_whose_control_ended_move_without_going_down)
{
    railwire_server *s = server("0");
    railwire_railset_opts o = opts(2);
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    uint8_t *buf = malloc(LEN);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, LEN, &mr), 0);
    /* End our side of session 0's control connection as a lost path would. */
    shutdown(rw_test_session0_fd(rs), SHUT_RDWR);
    int moved = 0;
    railwire_rail_stats st[2];
    for (int64_t end = rw_now_ms() + 10000; rw_now_ms() < end && !moved;) {
        cr_assert_eq(read_all(rs, mr, buf), 0);
        railwire_railset_stats(rs, st, 2, sizeof(*st));
        cr_assert_eq(st[0].state, RAILWIRE_RAIL_UP);
        cr_assert_eq(st[1].state, RAILWIRE_RAIL_UP);
        moved = st[0].session != 0 && st[1].session != 0;
    }
    cr_assert(moved, "the rails stayed in the session whose control connection ended");
    cr_assert_eq(st[0].last_down_reason, 0, "rail 0 went down to move");
    cr_assert_eq(st[1].last_down_reason, 0, "rail 1 went down to move");
    cr_assert_eq(st[0].heals + st[1].heals, 0);
    cr_assert_eq(st[0].control_up, 1);
    cr_assert_eq(read_all(rs, mr, buf), 0);
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(buf);
}

/* A loopback listener with `backlog` that never accepts on its own (a
 * "server" that never answers); its address in *a.  Returns its fd. */
static int silent_listener(int backlog, struct sockaddr_in *a)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(lfd, (struct sockaddr *)a, sizeof(*a)), 0);
    cr_assert_eq(listen(lfd, backlog), 0);
    socklen_t sl = sizeof(*a);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)a, &sl), 0);
    return lfd;
}

/* Points rs's later sessions at `port` (its server is gone), loses its
 * rail with a 1-byte READ and waits until a heal attempt is in progress. */
static void await_heal_attempt_through(railwire_railset *rs, uint16_t port)
{
    static uint8_t buf[64];
    char p[16];
    snprintf(p, sizeof(p), "%u", port);
    rw_heal_test_set_port(rs, p);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, sizeof(buf), &mr), 0);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 1};
    railwire_handle h;
    cr_assert_eq(railwire_submit(rs, &op, &h), 0);
    railwire_completion c;
    for (int64_t end = rw_now_ms() + 3000; rw_now_ms() < end && !rw_heal_test_busy(rs);)
        railwire_wait(rs, &c, 1, 50);
    cr_assert(rw_heal_test_busy(rs), "no heal attempt started");
}

Test(heal, close_does_not_wait_for_an_attempt_in_progress)
{
    /* A "server" that accepts TCP connections (the kernel's backlog) but
     * never answers: a heal attempt through it blocks for the io timeout. */
    struct sockaddr_in a;
    int lfd = silent_listener(16, &a);

    railwire_server *s = server("0");
    railwire_railset_opts o = opts(1);
    o.io_timeout_ms = 4000;
    o.all_down_timeout_ms = 60000;
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    /* Point later sessions at the silent listener, then lose the rail. */
    railwire_server_destroy(s);
    await_heal_attempt_through(rs, ntohs(a.sin_port));
    int64_t t0 = rw_now_ms();
    railwire_railset_close(rs);
    int64_t took = rw_now_ms() - t0;
    cr_assert_lt(took, 2000, "close waited %lld ms for a heal attempt", (long long)took);
    close(lfd);
}

#if RAILWIRE_HAVE_TLS
/* A connection to lfd accepted within ms (-1: none). */
static int accept_within(int lfd, int ms)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return -1;
    return accept(lfd, NULL, NULL);
}

/* Non-zero when a socket of this machine is in SYN_SENT towards
 * 127.0.0.1:port (/proc/net/tcp: remote address, then state 02). */
static int syn_sent_to(unsigned port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    unsigned rport, state;
    while (!found && fgets(line, sizeof(line), f))
        found = sscanf(line, " %*u: %*x:%*x 0100007F:%x %x", &rport, &state) == 2 &&
                rport == port && state == 0x02;
    fclose(f);
    return found;
}

Test(heal, an_attempt_in_progress_at_close_keeps_its_tls_credentials)
{
    /* The worker of a heal attempt outlives the railset's close; the TLS
     * credentials it dials with must outlive it too.  The attempt is held in
     * its TCP connect (the listener's accept queue is full, so its SYN is
     * dropped) while the railset closes; then the queue is emptied, the
     * retried SYN gets through, and the worker starts its TLS handshake with
     * the credentials the railset no longer holds (a use after free under
     * AddressSanitizer when only the railset held them). */
    char psk[] = "/tmp/rw_heal_psk_XXXXXX";
    int pfd = mkstemp(psk);
    cr_assert_geq(pfd, 0);
    const char line[] = "heal:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    cr_assert_eq(write(pfd, line, sizeof(line) - 1), (ssize_t)sizeof(line) - 1);
    close(pfd);
    railwire_tls_opts t;
    railwire_tls_opts_init(&t);
    t.psk_file = psk;

    struct sockaddr_in a;
    int lfd = silent_listener(0, &a); /* room for one queued connection */
    int filler = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0);

    uint8_t *arena = calloc(1, 1 << 20);
    cr_assert_not_null(arena);
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){arena, 1 << 20};
    so.tls = &t;
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&so, &s), 0);
    railwire_railset_opts o = opts(1);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.tls = &t;
    o.connect_timeout_ms = 8000;
    o.io_timeout_ms = 4000;
    o.all_down_timeout_ms = 60000;
    railwire_railset *rs;
    cr_assert_eq(connect_to(s, &o, &rs), 0);
    railwire_server_destroy(s);
    uint64_t freed = rw_heal_test_healers_freed();
    await_heal_attempt_through(rs, ntohs(a.sin_port));
    /* The worker is in its connect once its SYN is out (and dropped). */
    for (int64_t end = rw_now_ms() + 5000;
         rw_now_ms() < end && !syn_sent_to(ntohs(a.sin_port));)
        usleep(2000);
    cr_assert(syn_sent_to(ntohs(a.sin_port)), "the heal worker never dialed the listener");
    railwire_railset_close(rs);

    /* Empty the queue: the worker's retried SYN (about 1 s after the first)
     * now gets in, and its ClientHello follows. */
    int first = accept_within(lfd, 1000);
    cr_assert_geq(first, 0, "the filler connection was not queued");
    close(first);
    close(filler);
    int worker = accept_within(lfd, 10000);
    cr_assert_geq(worker, 0, "the heal worker never connected after close");
    struct pollfd p = {.fd = worker, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 10000), 1, "no ClientHello from the heal worker");
    uint8_t rec[5];
    cr_assert_eq(recv(worker, rec, sizeof(rec), MSG_WAITALL), (ssize_t)sizeof(rec));
    cr_assert_eq(rec[0], 0x16, "not a TLS handshake record: 0x%02x", rec[0]);
    close(worker); /* the handshake fails; the worker frees its healer */
    for (int64_t end = rw_now_ms() + 10000;
         rw_now_ms() < end && rw_heal_test_healers_freed() == freed;)
        usleep(5000);
    cr_assert_gt(rw_heal_test_healers_freed(), freed, "the heal worker never finished");
    close(lfd);
    unlink(psk);
    free(arena);
}
#endif
