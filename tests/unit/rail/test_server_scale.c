/* SPDX-License-Identifier: MIT */
/* Scale (issue 8): one tcp server holds 1000 sessions of 2 attached rails
 * each.  The server runs in a forked child so its threads, RSS and
 * descriptors are its own; the parent holds the 1000 sessions with raw
 * clients (3 descriptors each, no threads) and runs one real railset beside
 * them.  Prints the figures; asserts that every session came up, that the
 * server counted them, and that everything is given back once they close. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "child_server.h"
#include "raw_client.h"

#define SESSIONS 1000
#define ARENA (16u << 20)
#define BENCH_READS 8

struct report {
    long threads, rss_kb, fds;
    unsigned long long sessions, rails, pending;
};

static long status_field(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ':')
            v = strtol(line + kl + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* The child: serves until told to stop; answers 'r' with a report. */
static void child(int to_parent, int from_parent)
{
    uint8_t *arena = malloc(ARENA);
    if (!arena)
        _exit(10);
    for (size_t i = 0; i < ARENA; i++)
        arena[i] = (uint8_t)(i * 7u + (i >> 12));
    railwire_log_set_level(RAILWIRE_LOG_ERROR); /* 1000 "rails up" lines are not the point */
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){arena, ARENA};
    o.max_clients = SESSIONS + 16;
    o.max_sessions_per_peer = 0; /* every raw client is 127.0.0.1 */
    o.io_timeout_ms = 30000;
    railwire_server *srv = NULL;
    if (railwire_server_create(&o, &srv) != 0)
        _exit(11);
    unsigned p = railwire_server_port(srv);
    if (write(to_parent, &p, sizeof(p)) != sizeof(p))
        _exit(12);
    char cmd;
    while (read(from_parent, &cmd, 1) == 1 && cmd == 'r') {
        struct railwire_server_stats st;
        railwire_server_stats(srv, &st, sizeof(st));
        struct report r = {status_field("Threads"), status_field("VmRSS"), count_fds(),
                           st.sessions_live, st.rails_live, st.pending};
        if (write(to_parent, &r, sizeof(r)) != sizeof(r))
            _exit(13);
    }
    railwire_server_destroy(srv);
    free(arena);
    _exit(0);
}

static int up_fd, down_fd;

static struct report ask(void)
{
    struct report r;
    cr_assert_eq(write(down_fd, "r", 1), 1);
    cr_assert_eq(read(up_fd, &r, sizeof(r)), (ssize_t)sizeof(r), "the server child died");
    return r;
}

/* One 2-rail railset reads the arena BENCH_READS times; returns MB/s. */
static double bench(const char *port)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    railwire_railset *rs = NULL;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), 0,
                 "the legit client was not served");
    uint8_t *buf = malloc(ARENA);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, ARENA, &mr), 0);
    uint64_t t0 = rw_now_ns();
    for (int i = 0; i < BENCH_READS; i++)
        cr_assert_eq(railwire_read(rs, mr, buf, ARENA, 0, 0, 60000), 0);
    double s = (double)(rw_now_ns() - t0) / 1e9;
    for (size_t i = 0; i < ARENA; i += 4093)
        cr_assert_eq(buf[i], (uint8_t)(i * 7u + (i >> 12)), "byte %zu", i);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    railwire_railset_close(rs);
    free(buf);
    return (double)ARENA * BENCH_READS / 1e6 / s;
}

Test(server_scale, a_thousand_sessions_of_two_rails, .timeout = 240)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 4 * SESSIONS)
        cr_skip_test("RLIMIT_NOFILE hard limit %llu < %d", (unsigned long long)rl.rlim_max,
                     4 * SESSIONS);
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 16384 ? 16384 : rl.rlim_max;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);

    pid_t pid = child_server_fork(child, &up_fd, &down_fd);
    unsigned p = 0;
    cr_assert_eq(read(up_fd, &p, sizeof(p)), (ssize_t)sizeof(p), "the server did not start");
    char port[16];
    snprintf(port, sizeof(port), "%u", p);
    railwire_log_set_level(RAILWIRE_LOG_ERROR);

    double alone = bench(port);
    struct report r0 = ask();

    static struct raw_session s[SESSIONS];
    int64_t t0 = rw_now_ms();
    for (int i = 0; i < SESSIONS; i++) {
        int fd = raw_dial(NULL, port);
        cr_assert_geq(fd, 0, "session %d: connect", i);
        cr_assert_eq(raw_handshake(fd, 2, 20000, &s[i]), 0, "session %d: handshake", i);
        cr_assert_eq(raw_open_rail(&s[i], 0, 20000), 0, "session %d: rail 0", i);
        cr_assert_eq(raw_open_rail(&s[i], 1, 20000), 0, "session %d: rail 1", i);
    }
    int64_t open_ms = rw_now_ms() - t0;
    /* A session counts once the server has read the client's final ack,
     * which it may do after the client's last rail is up (a loaded machine
     * showed 999 of 1000 at the first ask): wait for it, bounded. */
    struct report r1 = ask();
    for (int64_t end = rw_now_ms() + 20000;
         (r1.sessions != SESSIONS || r1.rails != 2 * SESSIONS) && rw_now_ms() < end;
         r1 = ask())
        usleep(10 * 1000);
    cr_assert_eq(r1.sessions, SESSIONS, "sessions live: %llu", r1.sessions);
    cr_assert_eq(r1.rails, 2 * SESSIONS, "rails live: %llu", r1.rails);
    double among = bench(port);

    t0 = rw_now_ms();
    for (int i = 0; i < SESSIONS; i++)
        raw_close(&s[i]);
    struct report r2 = ask();
    int64_t end = rw_now_ms() + 60000;
    while ((r2.sessions || r2.fds > r0.fds || r2.threads > r0.threads) && rw_now_ms() < end) {
        usleep(100 * 1000);
        r2 = ask();
    }
    int64_t close_ms = rw_now_ms() - t0;
    fprintf(stderr,
            "server_scale: %d sessions x 2 tcp rails opened in %lld ms, released in %lld ms\n"
            "server_scale: server process idle: %ld threads, %ld KiB RSS (%u KiB arena), %ld fds\n"
            "server_scale: with %d sessions:    %ld threads, %ld KiB RSS, %ld fds\n"
            "server_scale: after they closed:   %ld threads, %ld KiB RSS, %ld fds\n"
            "server_scale: one 2-rail READ bench: %.0f MB/s alone, %.0f MB/s among %d idle "
            "sessions (ratio %.2f)\n",
            SESSIONS, (long long)open_ms, (long long)close_ms, r0.threads, r0.rss_kb,
            ARENA >> 10, r0.fds, SESSIONS, r1.threads, r1.rss_kb, r1.fds, r2.threads,
            r2.rss_kb, r2.fds, alone, among, SESSIONS, among / alone);
    cr_assert_eq(r2.sessions, 0, "%llu sessions still live after every client closed",
                 r2.sessions);
    cr_assert_leq(r2.fds, r0.fds, "descriptors not given back");
    cr_assert_leq(r2.threads, r0.threads, "threads not given back");
    cr_assert_eq(write(down_fd, "q", 1), 1);
    child_server_reap(pid, "server child");
}
