/* SPDX-License-Identifier: MIT */
/* Adversarial admission suite (issue 8): hostile clients on another
 * loopback source address (127.0.0.2) try to starve the server while a
 * legitimate client on 127.0.0.1 must still get in.
 *   F1  clients that complete the handshake and never open their rails
 *   F2  idle and request-byte-only connections, reopened as they drop
 *   F4  accept failing with EMFILE (a forked server with a low RLIMIT_NOFILE)
 *   F5  a storm of bad handshakes: bounded log lines, a suppressed count
 * plus the per-peer caps, the pending pool, the first-byte deadline, the
 * attach deadline next to the linger, the allowlist (IPv4 and IPv6) and the
 * stats that count all of it. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <railwire.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/server/server_internal.h"
#include "common/sock.h"
#include "child_server.h"
#include "raw_client.h"

#define ARENA (1u << 20)
#define ATTACKER "127.0.0.2"

static uint8_t *arena;
static railwire_server *srv;
static char port[16];

/* Server lines seen by the sink (client lines are dropped: the attackers'
 * own failures are expected). */
static atomic_int server_lines;
static atomic_int saw_suppressed;
static char last_server_line[1024];
static pthread_mutex_t line_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_server_line(const char *msg)
{
    return !strncmp(msg, "server:", 7) || !strncmp(msg, "handshake server", 16);
}

static void sink(enum railwire_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (!is_server_line(msg))
        return;
    atomic_fetch_add(&server_lines, 1);
    if (strstr(msg, "similar lines suppressed"))
        atomic_store(&saw_suppressed, 1);
    pthread_mutex_lock(&line_lock);
    snprintf(last_server_line, sizeof(last_server_line), "%s", msg);
    pthread_mutex_unlock(&line_lock);
}

struct cfg {
    unsigned max_clients;   /* 0: default */
    int per_peer;           /* -1: default */
    unsigned max_pending;   /* 0: default */
    int io_ms;
    int first_ms;           /* 0: default */
    const char *const *allow;
    unsigned n_allow;
    const char *host;       /* NULL: 127.0.0.1 */
};

static void init(void)
{
    railwire_log_set_sink(sink, NULL);
    srand(8);
}

static void fini(void)
{
    railwire_server_destroy(srv);
    srv = NULL;
    free(arena);
    arena = NULL;
    railwire_log_set_sink(NULL, NULL);
}

TestSuite(admission, .init = init, .fini = fini, .timeout = 120);

static railwire_server *make(const struct cfg *c)
{
    if (!arena) {
        arena = malloc(ARENA);
        cr_assert_not_null(arena);
        for (size_t i = 0; i < ARENA; i++)
            arena[i] = (uint8_t)(i * 31u + 7u);
    }
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = c->host ? c->host : "127.0.0.1";
    o.arena = (railwire_region){arena, ARENA};
    o.max_rails_per_client = 8; /* the F5 storm asks for 200: over this cap */
    if (c->max_clients)
        o.max_clients = c->max_clients;
    if (c->per_peer >= 0)
        o.max_sessions_per_peer = (unsigned)c->per_peer;
    if (c->max_pending)
        o.max_pending = c->max_pending;
    o.io_timeout_ms = c->io_ms;
    if (c->first_ms)
        o.first_byte_timeout_ms = c->first_ms;
    o.allow = c->allow;
    o.n_allow = c->n_allow;
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&o, &s), 0);
    return s;
}

static void start(const struct cfg *c)
{
    srv = make(c);
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
}

static struct railwire_server_stats stats(void)
{
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(srv, &st, sizeof(st)), 0);
    return st;
}

/* Waits (at most ms) until field `f` of the stats is at least `want`. */
#define WAIT_STAT(f, want, ms)                                                     \
    do {                                                                           \
        int64_t end_ = rw_now_ms() + (ms);                                         \
        while (stats().f < (uint64_t)(want) && rw_now_ms() < end_)                 \
            usleep(5000);                                                          \
        cr_assert_geq(stats().f, (uint64_t)(want), #f " is %llu, want at least %llu", \
                      (unsigned long long)stats().f, (unsigned long long)(want));  \
    } while (0)

/* Every session opened and no longer live was released for one reason. */
static void check_release_balance(void)
{
    struct railwire_server_stats st = stats();
    uint64_t rel = st.released_control_ended + st.released_linger_expired +
                   st.released_no_rail_attached + st.released_rails_closed +
                   st.released_server_stopping + st.released_displaced;
    cr_assert_eq(st.sessions_opened - st.sessions_live, rel,
                 "opened %llu, live %llu, released %llu", (unsigned long long)st.sessions_opened,
                 (unsigned long long)st.sessions_live, (unsigned long long)rel);
}

/* The legitimate client (source 127.0.0.1): connects with 1 rail, writes
 * and reads back 4 KiB.  Returns the connect's result. */
static int legit(void)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 1;
    o.io_timeout_ms = 3000;
    o.op_timeout_ms = 3000;
    o.heal = 0;
    railwire_railset *rs = NULL;
    int rc = railwire_railset_connect("127.0.0.1", port, &o, &rs);
    if (rc < 0)
        return rc;
    uint8_t out[4096], in[4096];
    for (size_t i = 0; i < sizeof(out); i++)
        out[i] = (uint8_t)rand();
    railwire_mr *mo, *mi;
    cr_assert_eq(railwire_mr_register(rs, out, sizeof(out), &mo), 0);
    cr_assert_eq(railwire_mr_register(rs, in, sizeof(in), &mi), 0);
    uint64_t off = (uint64_t)(rand() % 200) * 4096;
    cr_assert_eq(railwire_write(rs, mo, out, sizeof(out), off, 0, 10000), 0);
    cr_assert_eq(railwire_read(rs, mi, in, sizeof(in), off, 0, 10000), 0);
    cr_assert_eq(memcmp(in, out, sizeof(in)), 0);
    railwire_railset_close(rs);
    return 0;
}

/* Waits (at most ms) until the server holds no session.  For tests whose
 * attackers never complete a handshake: the legit client's session is then
 * the only one, and the server releases it shortly after the client closed
 * (its next session tick), not at once. */
static void wait_no_sessions(int ms)
{
    int64_t end = rw_now_ms() + ms;
    while (railwire_server_sessions(srv) && rw_now_ms() < end)
        usleep(5000);
}

/* Reads until end of stream or reset; returns the bytes read before it, or
 * -1 when the connection stayed open for ms. */
static long read_to_end(int fd, int ms)
{
    long total = 0;
    int64_t end = rw_now_ms() + ms;
    for (;;) {
        int left = rw_ms_left(end);
        if (left == 0)
            return -1;
        uint8_t b[512];
        ssize_t n = rw_sock_recv(fd, b, sizeof(b), left);
        if (n == RAILWIRE_E_TIMEOUT)
            return -1;
        if (n <= 0)
            return total;
        total += n;
    }
}

/* ------------------------------------------------------------ attackers */

enum attack_mode { HALF_HANDSHAKE, IDLE, REQUEST_ONLY };

struct attack {
    enum attack_mode mode;
    unsigned n;
    atomic_int stop;
    atomic_uint opened;  /* connections opened (or handshakes acked, HALF_HANDSHAKE) */
    pthread_t th;
};

/* Keeps n connections of one kind open from ATTACKER, reopening each one
 * the server closes. */
static void *attack_main(void *arg)
{
    struct attack *a = arg;
    int fds[128];
    for (unsigned i = 0; i < a->n; i++)
        fds[i] = -1;
    while (!atomic_load(&a->stop)) {
        for (unsigned i = 0; i < a->n && !atomic_load(&a->stop); i++) {
            if (fds[i] >= 0) {
                uint8_t junk[512];
                ssize_t k = recv(fds[i], junk, sizeof(junk), MSG_DONTWAIT);
                if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                    close(fds[i]);
                    fds[i] = -1;
                }
                continue;
            }
            int fd = raw_dial(ATTACKER, port);
            if (fd < 0)
                continue;
            if (a->mode == HALF_HANDSHAKE) {
                struct raw_session s;
                if (raw_handshake(fd, 1, 1000, &s) != 0) {
                    close(fd);
                    continue;
                }
            } else if (a->mode == REQUEST_ONLY) {
                uint8_t one = 1;
                if (send(fd, &one, 1, MSG_NOSIGNAL) != 1) {
                    close(fd);
                    continue;
                }
            }
            fds[i] = fd;
            atomic_fetch_add(&a->opened, 1);
        }
        usleep(20 * 1000);
    }
    for (unsigned i = 0; i < a->n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return NULL;
}

static void attack_start(struct attack *a, enum attack_mode mode, unsigned n)
{
    memset(a, 0, sizeof(*a));
    a->mode = mode;
    a->n = n;
    cr_assert_eq(pthread_create(&a->th, NULL, attack_main, a), 0);
}

static void attack_stop(struct attack *a)
{
    atomic_store(&a->stop, 1);
    pthread_join(a->th, NULL);
}

/* ------------------------------------------------------------------- F1 */

/* 64 clients of one address complete the handshake and never open their
 * rails, reconnecting as they are dropped: the per-peer cap keeps them to
 * 16 sessions, the attach deadline keeps releasing those, and a client on
 * another address gets in every time. */
Test(admission, f1_half_handshakes_from_one_peer_do_not_lock_out_others)
{
    start(&(struct cfg){.per_peer = -1, .io_ms = 1000});
    struct attack a;
    attack_start(&a, HALF_HANDSHAKE, 64);
    WAIT_STAT(rejected_per_peer, 1, 20000); /* the attackers are at their cap */
    for (int i = 0; i < 5; i++)
        cr_assert_eq(legit(), 0, "legit client %d was not served during the attack", i);
    WAIT_STAT(released_no_rail_attached, 16, 20000);
    attack_stop(&a);
    struct railwire_server_stats st = stats();
    cr_assert_leq(st.sessions_live, 16, "one address holds %llu sessions",
                  (unsigned long long)st.sessions_live);
    cr_assert_geq(st.rejected_per_peer, 1);
    check_release_balance();
}

/* With no per-peer cap, max_clients handshakes that never open a rail fill
 * every slot, but only until the attach deadline (io_timeout after the ack):
 * then each one is released, its control connection closed, and the next
 * client gets in. */
Test(admission, f1_sessions_whose_rails_never_attach_are_released)
{
    start(&(struct cfg){.max_clients = 8, .per_peer = 0, .io_ms = 800});
    struct raw_session s[8];
    for (int i = 0; i < 8; i++) {
        int fd = raw_dial(ATTACKER, port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(raw_handshake(fd, 2, 2000, &s[i]), 0, "handshake %d", i);
    }
    cr_assert_eq(legit(), RAILWIRE_E_PEER_REJECTED, "the 8 sessions should fill max_clients");
    WAIT_STAT(released_no_rail_attached, 8, 10000);
    struct railwire_server_stats st = stats();
    cr_assert_eq(st.sessions_live, 0);
    cr_assert_eq(st.slots_held, 0);
    cr_assert_eq(st.rails_never_attached, 16);
    cr_assert_eq(st.rails_live, 0);
    for (int i = 0; i < 8; i++) {
        cr_assert_geq(read_to_end(s[i].ctl, 3000), 0, "session %d: control not closed", i);
        raw_close(&s[i]);
    }
    cr_assert_eq(legit(), 0);
    check_release_balance();
}

/* A healing client asks for 2 rails and only rail 0 attaches: at the
 * attach deadline rail 1 is released and the session keeps serving; once
 * its control connection ends it lingers on rail 0, and goes when rail 0
 * closes. */
Test(admission, a_rail_that_never_attaches_is_released_and_the_session_lingers_on_the_other)
{
    start(&(struct cfg){.per_peer = -1, .io_ms = 700});
    struct raw_session s;
    int fd = raw_dial(NULL, port);
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 2, 2000, &s), 0);
    cr_assert_eq(raw_open_rail(&s, 0, 2000), 0);
    WAIT_STAT(rails_never_attached, 1, 10000);
    struct railwire_server_stats st = stats();
    cr_assert_eq(st.sessions_live, 1);
    cr_assert_eq(st.rails_live, 1);
    cr_assert_eq(st.released_no_rail_attached, 0);
    close(s.ctl);
    s.ctl = -1;
    WAIT_STAT(sessions_lingering, 1, 5000);
    cr_assert_eq(stats().sessions_live, 1, "rail 0 is live: the session must linger");
    close(s.rail[0]);
    s.rail[0] = -1;
    WAIT_STAT(released_control_ended, 1, 5000);
    st = stats();
    cr_assert_eq(st.sessions_live, 0);
    cr_assert_eq(st.sessions_lingering, 0);
    cr_assert_eq(st.rails_live, 0);
    check_release_balance();
}

/* A session whose rails all closed while its control connection stays open
 * can never carry a byte again (the wire cannot rebuild a rail): released. */
Test(admission, a_session_whose_rails_all_closed_is_released)
{
    start(&(struct cfg){.per_peer = -1, .io_ms = 3000});
    struct raw_session s;
    int fd = raw_dial(NULL, port);
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 1, 2000, &s), 0);
    cr_assert_eq(raw_open_rail(&s, 0, 2000), 0);
    close(s.rail[0]);
    s.rail[0] = -1;
    WAIT_STAT(released_rails_closed, 1, 5000);
    cr_assert_geq(read_to_end(s.ctl, 3000), 0, "the control connection was not closed");
    raw_close(&s);
    check_release_balance();
}

/* ------------------------------------------------------------------- F2 */

/* 64 idle connections and 64 that send only the request byte, all from one
 * address and reopened as they drop, while a client on another address
 * connects again and again. */
Test(admission, f2_idle_and_request_only_connections_do_not_lock_out_others)
{
    start(&(struct cfg){.per_peer = -1, .io_ms = 1500});
    struct attack idle, req;
    attack_start(&idle, IDLE, 64);
    attack_start(&req, REQUEST_ONLY, 64);
    WAIT_STAT(rejected_per_peer, 1, 20000);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(legit(), 0, "legit client %d was not served during the attack", i);
        wait_no_sessions(5000); /* the slots counted below are the attackers' */
    }
    struct railwire_server_stats st = stats();
    attack_stop(&idle);
    attack_stop(&req);
    cr_assert_leq(st.pending, 16 + 1, "one address holds %llu pending connections",
                  (unsigned long long)st.pending);
    cr_assert_leq(st.slots_held, 16 + 1, "one address holds %llu slots",
                  (unsigned long long)st.slots_held);
}

/* Only a complete handshake counts against max_clients: with max_clients 2
 * and no per-peer cap, 8 connections that sent their request byte and then
 * stall (the server has answered them with params and made their rails)
 * do not stop a client of another address, and the client's session and
 * one more fill the cap for real. */
Test(admission, stalled_handshakes_take_no_place_under_max_clients)
{
    start(&(struct cfg){.max_clients = 2, .per_peer = 0, .io_ms = 60000, .first_ms = 60000});
    int fds[8];
    for (int i = 0; i < 8; i++) {
        fds[i] = raw_dial(ATTACKER, port);
        cr_assert_geq(fds[i], 0);
        uint8_t one = 1;
        cr_assert_eq(send(fds[i], &one, 1, MSG_NOSIGNAL), 1);
    }
    WAIT_STAT(slots_held, 8, 5000); /* all 8 are past their params */
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(legit(), 0, "client %d refused while only stalled handshakes exist", i);
        wait_no_sessions(5000); /* the previous client's session is released, not lingering */
    }
    /* the legit sessions are released once their rails have closed */
    int64_t end = rw_now_ms() + 5000;
    while (stats().sessions_live && rw_now_ms() < end)
        usleep(5000);
    cr_assert_eq(stats().sessions_live, 0);
    /* two complete sessions fill the cap: a third is refused */
    struct raw_session s[3];
    for (int i = 0; i < 2; i++) {
        int fd = raw_dial(NULL, port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(raw_handshake(fd, 1, 2000, &s[i]), 0);
    }
    int fd = raw_dial(NULL, port);
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 1, 2000, &s[2]), RAILWIRE_E_PEER_REJECTED,
                 "a third complete session with max_clients 2");
    cr_assert_geq(stats().rejected_max_clients, 1);
    for (int i = 0; i < 3; i++)
        raw_close(&s[i]);
    for (int i = 0; i < 8; i++)
        close(fds[i]);
}

/* The pool of connections in their handshake is bounded: when full, the
 * oldest is evicted.  Connections that have not sent their request hold
 * no slot under max_clients, so 64 idle ones do not stop a client even
 * with max_clients 4 and no per-peer cap or first-byte deadline to help. */
Test(admission, f2_a_full_pool_evicts_its_oldest_and_idle_connections_hold_no_slot)
{
    start(&(struct cfg){.max_clients = 4, .per_peer = 0, .max_pending = 32, .io_ms = 60000,
                        .first_ms = 60000});
    int fds[64];
    for (int i = 0; i < 64; i++) {
        fds[i] = raw_dial(ATTACKER, port);
        cr_assert_geq(fds[i], 0);
    }
    WAIT_STAT(accepted, 64, 10000);
    WAIT_STAT(evicted, 32, 10000);
    struct railwire_server_stats st = stats();
    cr_assert_eq(st.pending, 32);
    cr_assert_eq(st.evicted, 32);
    /* The oldest were closed, the newest kept. */
    cr_assert_geq(read_to_end(fds[0], 3000), 0, "the oldest connection was not evicted");
    cr_assert_eq(read_to_end(fds[63], 200), -1, "the newest connection was evicted");
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(legit(), 0, "legit client %d", i);
        wait_no_sessions(5000); /* max_clients 4 counts sessions, not the idle pool */
    }
    for (int i = 0; i < 64; i++)
        close(fds[i]);
}

/* The first byte has its own, short deadline. */
Test(admission, a_connection_silent_past_the_first_byte_deadline_is_closed)
{
    start(&(struct cfg){.per_peer = -1, .io_ms = 20000, .first_ms = 300});
    int fd = raw_dial(ATTACKER, port);
    cr_assert_geq(fd, 0);
    int64_t t0 = rw_now_ms();
    cr_assert_eq(read_to_end(fd, 5000), 0, "a silent connection outlived the first-byte deadline");
    cr_assert_lt(rw_now_ms() - t0, 5000);
    close(fd);
    cr_assert_eq(stats().handshake_timeouts, 1);
    cr_assert_eq(stats().pending, 0);
}

/* ------------------------------------------------------------ per peer */

Test(admission, per_peer_caps_stop_one_address_and_not_another)
{
    start(&(struct cfg){.per_peer = 2, .io_ms = 5000, .first_ms = 5000});
    struct raw_session s[3];
    for (int i = 0; i < 2; i++) {
        int fd = raw_dial(ATTACKER, port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(raw_handshake(fd, 1, 2000, &s[i]), 0);
    }
    int fd = raw_dial(ATTACKER, port);
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 1, 2000, &s[2]), RAILWIRE_E_PEER_REJECTED,
                 "a third session from one address with max_sessions_per_peer 2");
    raw_close(&s[2]);
    cr_assert_eq(stats().rejected_per_peer, 1);
    cr_assert_eq(legit(), 0, "another address is not held by that cap");
    /* Pending connections: two idle ones from 127.0.0.3 stay, the third is
     * closed at once. */
    int idle[3];
    for (int i = 0; i < 3; i++) {
        idle[i] = raw_dial("127.0.0.3", port);
        cr_assert_geq(idle[i], 0);
    }
    cr_assert_geq(read_to_end(idle[2], 3000), 0, "the third pending connection was kept");
    cr_assert_eq(read_to_end(idle[0], 200), -1);
    cr_assert_eq(read_to_end(idle[1], 200), -1);
    cr_assert_eq(stats().rejected_per_peer, 2);
    for (int i = 0; i < 3; i++)
        close(idle[i]);
    raw_close(&s[0]);
    raw_close(&s[1]);
}

/* At the per-peer cap, a new session from that address releases the
 * address's oldest lingering session (its control connection ended) instead
 * of being refused; sessions whose control connection is open are never
 * displaced. */
Test(admission, a_lingering_session_makes_room_at_the_per_peer_cap)
{
    start(&(struct cfg){.per_peer = 2, .io_ms = 5000, .first_ms = 5000});
    struct raw_session s[5];
    for (int i = 0; i < 2; i++) {
        int fd = raw_dial(ATTACKER, port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(raw_handshake(fd, 1, 2000, &s[i]), 0);
        cr_assert_eq(raw_open_rail(&s[i], 0, 2000), 0);
        /* the control connection ends, the rail stays: the session lingers */
        close(s[i].ctl);
        s[i].ctl = -1;
        WAIT_STAT(sessions_lingering, (unsigned)i + 1, 5000);
    }
    for (int i = 2; i < 4; i++) {
        int fd = raw_dial(ATTACKER, port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(raw_handshake(fd, 1, 2000, &s[i]), 0,
                     "session %d: refused although the address has a lingering session", i);
        cr_assert_eq(stats().released_displaced, (uint64_t)i - 1);
        /* the oldest lingering one went, rail and all */
        cr_assert_geq(read_to_end(s[i - 2].rail[0], 3000), 0,
                      "the displaced session's rail is still open");
    }
    struct railwire_server_stats st = stats();
    cr_assert_eq(st.sessions_lingering, 0);
    cr_assert_eq(st.rejected_per_peer, 0);
    /* two sessions with open control connections: the next is refused */
    int fd = raw_dial(ATTACKER, port);
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 1, 2000, &s[4]), RAILWIRE_E_PEER_REJECTED,
                 "a live session was displaced");
    cr_assert_eq(stats().rejected_per_peer, 1);
    cr_assert_eq(stats().released_displaced, 2);
    for (int i = 0; i < 5; i++)
        raw_close(&s[i]);
    check_release_balance();
}

/* ----------------------------------------------------------- allowlist */

Test(admission, the_allowlist_closes_other_peers_at_accept)
{
    const char *allow[] = {"127.0.0.1/32", "fd00::/8"};
    start(&(struct cfg){.per_peer = -1, .io_ms = 3000, .allow = allow, .n_allow = 2});
    int fd = raw_dial(ATTACKER, port);
    cr_assert_geq(fd, 0);
    uint8_t one = 1;
    send(fd, &one, 1, MSG_NOSIGNAL);
    cr_assert_eq(read_to_end(fd, 3000), 0, "a peer outside the allowlist got bytes");
    close(fd);
    cr_assert_eq(stats().rejected_allowlist, 1);
    cr_assert_eq(legit(), 0);
    cr_assert_eq(stats().rejected_allowlist, 1);
    cr_assert_eq(stats().sessions_opened, 1);
}

static int dial6(const char *addr, unsigned p)
{
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)p)};
    inet_pton(AF_INET6, addr, &a.sin6_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* On a dual-stack listener an IPv4 peer (::ffff:127.0.0.1) matches IPv4
 * blocks and an IPv6 peer matches only IPv6 ones. */
Test(admission, the_allowlist_matches_ipv4_and_ipv6_peers)
{
    int probe = dial6("::1", 9);
    if (probe < 0 && errno == EADDRNOTAVAIL)
        cr_skip_test("no IPv6 loopback here");
    if (probe >= 0)
        close(probe);
    const char *allow[] = {"127.0.0.0/8"};
    start(&(struct cfg){.per_peer = -1, .io_ms = 3000, .allow = allow, .n_allow = 1,
                        .host = "::"});
    int fd = dial6("::1", railwire_server_port(srv));
    cr_assert_geq(fd, 0);
    cr_assert_eq(read_to_end(fd, 3000), 0, "::1 is not in 127.0.0.0/8");
    close(fd);
    cr_assert_eq(stats().rejected_allowlist, 1);
    struct raw_session s;
    fd = raw_dial(NULL, port); /* 127.0.0.1 through the dual-stack listener */
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 1, 2000, &s), 0);
    raw_close(&s);

    railwire_server_destroy(srv);
    const char *allow6[] = {"::1/128"};
    start(&(struct cfg){.per_peer = -1, .io_ms = 3000, .allow = allow6, .n_allow = 1,
                        .host = "::1"});
    fd = dial6("::1", railwire_server_port(srv));
    cr_assert_geq(fd, 0);
    cr_assert_eq(raw_handshake(fd, 1, 2000, &s), 0, "::1 is in ::1/128");
    raw_close(&s);
    cr_assert_eq(stats().rejected_allowlist, 0);
}

static int match(const char *block, const char *addr)
{
    struct rw_cidr c;
    cr_assert_eq(rw_cidr_parse(block, &c), 0, "%s", block);
    struct sockaddr_storage ss = {0};
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        cr_assert_eq(inet_pton(AF_INET6, addr, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, addr, &a->sin_addr), 1);
    }
    struct rw_ip ip;
    cr_assert_eq(rw_ip_from_sockaddr(&ss, &ip), 0);
    return rw_cidr_match(&c, &ip);
}

Test(admission, cidr_blocks_parse_and_match)
{
    cr_assert(match("10.0.0.0/8", "10.200.3.4"));
    cr_assert_not(match("10.0.0.0/8", "11.0.0.1"));
    cr_assert(match("192.0.2.7", "192.0.2.7"));
    cr_assert_not(match("192.0.2.7", "192.0.2.8"));
    cr_assert(match("192.0.2.7/31", "192.0.2.6"));
    cr_assert(match("10.1.2.3/8", "10.9.9.9"), "host bits of the block are ignored");
    cr_assert(match("0.0.0.0/0", "203.0.113.9"));
    cr_assert_not(match("0.0.0.0/0", "2001:db8::1"), "an IPv4 block never matches IPv6");
    cr_assert(match("127.0.0.0/8", "::ffff:127.0.0.1"), "v4-mapped is IPv4");
    cr_assert(match("fd00::/8", "fd12:3456::1"));
    cr_assert_not(match("fd00::/8", "fe80::1"));
    cr_assert(match("2001:db8::/33", "2001:db8:7fff::1"));
    cr_assert_not(match("2001:db8::/33", "2001:db8:8000::1"));
    cr_assert(match("::1", "::1"));
    struct rw_cidr c;
    const char *bad[] = {"", "abc", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1",
                         "10.0.0.0/8x", "::/129", "1.2.3", "10.0.0.0/8/8", NULL};
    for (int i = 0; bad[i]; i++)
        cr_assert_eq(rw_cidr_parse(bad[i], &c), -1, "\"%s\" parsed", bad[i]);
}

Test(admission, bad_admission_options_are_refused_at_create)
{
    uint8_t mem[4096];
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    cr_assert_eq(o.max_sessions_per_peer, 16);
    cr_assert_eq(o.max_pending, 256);
    cr_assert_eq(o.first_byte_timeout_ms, 2000);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){mem, sizeof(mem)};
    const char *allow[] = {"10.0.0.0/8", "not-a-block"};
    o.allow = allow;
    o.n_allow = 2;
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID);
    cr_assert_null(s);
    o.allow = NULL;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID, "n_allow without the array");
    o.n_allow = 0;
    o.max_pending = 0;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID);
    o.max_pending = 1;
    o.first_byte_timeout_ms = -1;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_server_stats(NULL, NULL, sizeof(struct railwire_server_stats)), RAILWIRE_E_INVALID);
}

/* ------------------------------------------------------------------- F5 */

/* 300 bad handshakes of four kinds in a burst: the server logs a bounded
 * number of lines, counts every one, and its next line after the window
 * says how many were suppressed. */
Test(admission, f5_a_storm_of_bad_handshakes_logs_a_bounded_number_of_lines)
{
    start(&(struct cfg){.per_peer = 0, .io_ms = 3000});
    atomic_store(&server_lines, 0);
    enum { N = 300 };
    for (int i = 0; i < N; i++) {
        int fd = raw_dial(ATTACKER, port);
        cr_assert_geq(fd, 0);
        uint8_t bad[1 + 5 * 24];
        memset(bad, 0xee, sizeof(bad));
        bad[0] = i % 4 == 0 ? 0 : i % 4 == 1 ? 200 : 1; /* 0 rails, over the cap, 1 rail */
        cr_assert_eq(send(fd, bad, 1, MSG_NOSIGNAL), 1);
        if (i % 4 >= 2) {
            uint8_t params[64];
            size_t got = 0;
            while (got < 37) {
                ssize_t k = rw_sock_recv(fd, params + got, sizeof(params) - got, 3000);
                cr_assert_gt(k, 0);
                got += (size_t)k;
            }
            bad[0] = 5; /* ids for 5 rails when 1 was asked: rail-count-mismatch */
            if (i % 4 == 2)
                cr_assert_eq(send(fd, bad, sizeof(bad), MSG_NOSIGNAL), (ssize_t)sizeof(bad));
            /* i % 4 == 3: gone after the params (truncated) */
        }
        if (i % 4 != 3)
            read_to_end(fd, 3000);
        close(fd);
    }
    int64_t end = rw_now_ms() + 10000;
    while (stats().rejected_rails + stats().handshake_failures < N && rw_now_ms() < end)
        usleep(5000);
    struct railwire_server_stats st = stats();
    cr_assert_eq(st.rejected_rails, N / 2);
    cr_assert_eq(st.handshake_failures, N / 2);
    int lines = atomic_load(&server_lines);
    /* A handful of call sites, RW_LOG_RL_BURST lines each per window: the
     * burst may straddle a window or two. */
    cr_assert_leq(lines, 60, "%d server lines for %d bad handshakes", lines, N);
    /* After the window, the next line carries the suppressed count. */
    usleep((RW_LOG_RL_INTERVAL_MS + 200) * 1000);
    int fd = raw_dial(ATTACKER, port);
    uint8_t zero = 0;
    cr_assert_eq(send(fd, &zero, 1, MSG_NOSIGNAL), 1);
    read_to_end(fd, 3000);
    close(fd);
    end = rw_now_ms() + 5000;
    while (stats().rejected_rails < N / 2 + 1 && rw_now_ms() < end)
        usleep(5000);
    pthread_mutex_lock(&line_lock);
    char last[1024];
    snprintf(last, sizeof(last), "%s", last_server_line);
    pthread_mutex_unlock(&line_lock);
    cr_assert(strstr(last, "0 rails"), "the line after the storm: %s", last);
    cr_assert(atomic_load(&saw_suppressed), "no line reported the suppressed count");
}

/* ------------------------------------------------------------------- F4 */

static long cpu_ms_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

/* The child: a server whose process has run out of descriptors.  Writes
 * its port, waits for the parent's "go", measures its CPU time and server
 * log lines for 1.5 s while connections wait in the backlog, reports them,
 * frees the descriptors, waits for "done" and stops. */
static void emfile_child(int to_parent, int from_parent)
{
    railwire_log_set_sink(sink, NULL);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 128;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        _exit(10);
    srv = make(&(struct cfg){.per_peer = -1, .io_ms = 3000});
    unsigned p = railwire_server_port(srv);
    int fill[256], n = 0;
    while (n < 256 && (fill[n] = dup(0)) >= 0)
        n++;
    if (write(to_parent, &p, sizeof(p)) != sizeof(p))
        _exit(11);
    char go;
    if (read(from_parent, &go, 1) != 1)
        _exit(12);
    atomic_store(&server_lines, 0);
    long cpu0 = cpu_ms_self();
    usleep(1500 * 1000);
    long report[3] = {cpu_ms_self() - cpu0, atomic_load(&server_lines), 0};
    struct railwire_server_stats st;
    railwire_server_stats(srv, &st, sizeof(st));
    report[2] = (long)st.accept_pauses;
    while (n > 0)
        close(fill[--n]);
    if (write(to_parent, report, sizeof(report)) != sizeof(report))
        _exit(13);
    if (read(from_parent, &go, 1) != 1)
        _exit(14);
    railwire_server_destroy(srv);
    _exit(0);
}

/* F4: accept() failing with EMFILE neither spins the loop nor floods the
 * log, and the server serves again once descriptors are back. */
Test(admission, f4_out_of_descriptors_pauses_accepting_without_spinning)
{
    int up, down;
    pid_t pid = child_server_fork(emfile_child, &up, &down);
    unsigned p = 0;
    cr_assert_eq(read(up, &p, sizeof(p)), (ssize_t)sizeof(p), "the child server did not start");
    snprintf(port, sizeof(port), "%u", p);
    int waiting[3];
    for (int i = 0; i < 3; i++) {
        waiting[i] = raw_dial(NULL, port); /* completes in the kernel's backlog */
        cr_assert_geq(waiting[i], 0);
    }
    cr_assert_eq(write(down, "g", 1), 1);
    long report[3];
    cr_assert_eq(read(up, report, sizeof(report)), (ssize_t)sizeof(report));
    /* A spinning loop burns about 1500 ms of CPU in 1.5 s and logs every
     * failure; paused, the loop wakes about 6 times. */
    cr_assert_lt(report[0], 300, "the server used %ld ms of CPU in 1.5 s out of descriptors",
                 report[0]);
    cr_assert_leq(report[1], 2, "%ld server log lines while out of descriptors", report[1]);
    cr_assert_geq(report[2], 1, "accepting was never paused");
    cr_assert_eq(legit(), 0, "the server did not serve again once descriptors were back");
    for (int i = 0; i < 3; i++)
        close(waiting[i]);
    cr_assert_eq(write(down, "d", 1), 1);
    child_server_reap(pid, "child");
    close(up);
    close(down);
}
