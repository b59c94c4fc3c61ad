/* SPDX-License-Identifier: MIT */
/* The congestion control of rail sockets (src/tcp/tcp_cc.c): which
 * connections count as same-host; the "auto" rule (where the system runs a
 * BBR, a rail socket goes to reno before it connects or listens, and back
 * to the system's algorithm once connected to another host; a connected
 * socket still under a BBR, of a railset of at most 2 rails a CPU, moves
 * to reno, or to cubic where reno is refused; any other keeps its
 * algorithm); RAILWIRE_TCP_CONGESTION=system and =NAME; and both ends of
 * a real rail getting the choice.  Criterion runs each test in its own
 * process, so each test's environment is read afresh. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cpus.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_cc.h"
#include "tcp_fixture.h"

static struct sockaddr_storage addr(const char *s)
{
    struct sockaddr_storage ss;
    cr_assert_eq(rw_tcp_addr_parse(s, &ss), 0, "parse %s", s);
    return ss;
}

Test(tcp_cc, same_host_is_loopback_or_the_local_ip)
{
    struct sockaddr_storage a = addr("10.1.2.3"), b = addr("10.1.2.4"), lo = addr("127.0.0.1"),
                            lo5 = addr("127.0.0.5"), lo6 = addr("::1"), v6 = addr("2001:db8::1"),
                            v6b = addr("2001:db8::2");
    cr_assert(rw_tcp_same_host(&lo, &lo));
    cr_assert(rw_tcp_same_host(&lo, &lo5), "127.0.0.0/8 is loopback");
    cr_assert(rw_tcp_same_host(&a, &lo), "a loopback peer");
    cr_assert(rw_tcp_same_host(&lo6, &lo6));
    cr_assert(rw_tcp_same_host(&a, &a), "a peer at the local end's own IP");
    cr_assert(rw_tcp_same_host(&v6, &v6));
    cr_assert_not(rw_tcp_same_host(&a, &b), "another host");
    cr_assert_not(rw_tcp_same_host(&v6, &v6b), "another host (IPv6)");
    /* An IPv4 peer seen through a dual-stack socket is IPv4-mapped. */
    struct sockaddr_in6 m = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &m.sin6_addr);
    struct sockaddr_storage mapped;
    memset(&mapped, 0, sizeof(mapped));
    memcpy(&mapped, &m, sizeof(m));
    cr_assert(rw_tcp_same_host(&v6, &mapped), "IPv4-mapped loopback");
    inet_pton(AF_INET6, "::ffff:10.1.2.3", &((struct sockaddr_in6 *)&mapped)->sin6_addr);
    cr_assert(rw_tcp_same_host(&a, &mapped), "10.1.2.3 and ::ffff:10.1.2.3 are one IP");
    cr_assert_not(rw_tcp_same_host(&b, &mapped));
}

/* A connected IPv4 pair: a listener on `ip` and a client socket (bound to
 * `from` unless NULL), both first given to rw_tcp_cc_prepare when
 * `prepare` is set, as the library does with its rail sockets before they
 * listen or connect.  *c is the client end, *s the accepted end. */
static void tcp_pair(const char *ip, const char *from, int prepare, int *c, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t l = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert(lfd >= 0);
    cr_assert_eq(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    if (prepare)
        rw_tcp_cc_prepare(lfd);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(lfd, 1), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &l), 0);
    *c = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(*c >= 0);
    if (prepare)
        rw_tcp_cc_prepare(*c);
    if (from) {
        struct sockaddr_in f = {.sin_family = AF_INET};
        cr_assert_eq(inet_pton(AF_INET, from, &f.sin_addr), 1);
        cr_assert_eq(bind(*c, (struct sockaddr *)&f, sizeof(f)), 0);
    }
    cr_assert_eq(connect(*c, (struct sockaddr *)&a, sizeof(a)), 0);
    *s = accept(lfd, NULL, NULL);
    cr_assert(*s >= 0);
    close(lfd);
}

/* A connected loopback pair, as the kernel makes it: *c the client end, *s
 * the accepted end. */
static void loopback_pair(int *c, int *s)
{
    tcp_pair("127.0.0.1", NULL, 0, c, s);
}

static void cc_of(int fd, char *out, size_t n)
{
    socklen_t len = (socklen_t)n - 1;
    memset(out, 0, n);
    cr_assert_eq(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, out, &len), 0);
}

static int try_cc(int fd, const char *name)
{
    return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name));
}

/* A loopback pair whose client end runs BBR; skips where BBR is not
 * available to this process. */
static void bbr_pair(int *c, int *s)
{
    loopback_pair(c, s);
    if (try_cc(*c, "bbr") < 0) {
        close(*c);
        close(*s);
        cr_skip("BBR is not available here (tcp_bbr not loaded or not permitted)");
    }
}

Test(tcp_cc, auto_moves_a_same_host_bbr_socket_off_bbr)
{
    int c, s;
    char cc[16];

    unsetenv("RAILWIRE_TCP_CONGESTION");
    bbr_pair(&c, &s);
    rw_tcp_pick_congestion(c, 1);
    cc_of(c, cc, sizeof(cc));
    /* reno, not cubic: a client rail's WRITE payloads are bursts of one or
     * two slices, whose slow start cubic's HyStart ends early
     * (src/tcp/tcp_cc.h); reno is built into every kernel and always
     * permitted. */
    cr_assert_str_eq(cc, "reno", "a loopback BBR socket now runs %s", cc);
    close(c);
    close(s);
}

Test(tcp_cc, auto_keeps_bbr_when_the_railset_has_more_than_two_rails_a_cpu)
{
    int c, s;
    char cc[16];
    unsigned most = RW_TCP_CC_RAILS_PER_CPU * rw_cpus_usable();

    cr_assert_eq(RW_TCP_CC_RAILS_PER_CPU, 2);
    unsetenv("RAILWIRE_TCP_CONGESTION");
    bbr_pair(&c, &s);
    rw_tcp_pick_congestion(c, most + 1);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "bbr", "a railset of more than 2 rails a CPU keeps BBR");
    rw_tcp_pick_congestion(c, most);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "2 rails a CPU: %s", cc);
    close(c);
    close(s);
}

Test(tcp_cc, a_server_session_moves_off_bbr_to_reno_up_to_four_rails_a_cpu)
{
    int c, s;
    char cc[16];
    unsigned most = RW_TCP_CC_SERVER_RAILS_PER_CPU * rw_cpus_usable();

    cr_assert_eq(RW_TCP_CC_SERVER_RAILS_PER_CPU, 4);
    unsetenv("RAILWIRE_TCP_CONGESTION");
    bbr_pair(&c, &s);
    rw_tcp_pick_server_congestion(s, most + 1);
    cc_of(s, cc, sizeof(cc));
    cr_assert_str_eq(cc, "bbr", "a session of more than 4 rails a CPU keeps BBR");
    rw_tcp_pick_server_congestion(s, most);
    cc_of(s, cc, sizeof(cc));
    /* reno, not cubic: cubic's HyStart stops the slow start of a
     * connection that sends one or two slices at a time (src/tcp/tcp_cc.h);
     * reno is built into every kernel and always permitted. */
    cr_assert_str_eq(cc, "reno", "4 rails a CPU: %s", cc);
    rw_tcp_pick_congestion(c, most);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "bbr", "a railset of 4 rails a CPU keeps BBR");
    close(c);
    close(s);
}

Test(tcp_cc, auto_leaves_other_algorithms_alone)
{
    int c, s;
    char cc[16];

    setenv("RAILWIRE_TCP_CONGESTION", "auto", 1);
    loopback_pair(&c, &s);
    cr_assert_eq(try_cc(c, "reno"), 0);
    rw_tcp_pick_congestion(c, 1);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno");
    close(c);
    close(s);
}

Test(tcp_cc, system_keeps_bbr)
{
    int c, s;
    char cc[16];

    setenv("RAILWIRE_TCP_CONGESTION", "system", 1);
    bbr_pair(&c, &s);
    rw_tcp_pick_congestion(c, 1);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "bbr");
    close(c);
    close(s);
}

Test(tcp_cc, a_refused_name_keeps_the_socket_as_it_was)
{
    int c, s;
    char before[16], after[16];

    setenv("RAILWIRE_TCP_CONGESTION", "no-such-cc", 1);
    loopback_pair(&c, &s);
    cc_of(c, before, sizeof(before));
    rw_tcp_pick_congestion(c, 1);
    cc_of(c, after, sizeof(after));
    cr_assert_str_eq(after, before);
    close(c);
    close(s);
}

/* Every connected TCP socket of this process runs `want`: here, both ends
 * of the rail t_connect made (the test opens no other connection). */
static int rail_sockets_run(const char *want)
{
    int seen = 0;
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_storage peer;
        socklen_t pl = sizeof(peer);
        int type = 0;
        socklen_t tl = sizeof(type);
        char cc[16];
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
            getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
            (peer.ss_family != AF_INET && peer.ss_family != AF_INET6))
            continue;
        cc_of(fd, cc, sizeof(cc));
        cr_assert_str_eq(cc, want, "rail socket fd %d runs %s", fd, cc);
        seen++;
    }
    return seen;
}

Test(tcp_cc, both_ends_of_a_rail_take_the_named_algorithm)
{
    struct tpair p = {0};

    setenv("RAILWIRE_TCP_CONGESTION", "reno", 1);
    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, 8);
    cr_assert_geq(rail_sockets_run("reno"), 2, "the rail's client and server sockets");
    t_close(&p);
}

/* A connection that starts under BBR keeps BBR's pacing when it is moved
 * off BBR later, and that pacing fell into a low mode on many loopback
 * rails (src/tcp/tcp_cc.h).  So the switch is made before the connection
 * starts, on both ends, and holds whatever the rail count. */
Test(tcp_cc, auto_takes_rail_sockets_off_the_systems_bbr_before_they_connect)
{
    int c, s;
    char cc[16];

    unsetenv("RAILWIRE_TCP_CONGESTION");
    rw_tcp_cc_assume_system("bbr");
    tcp_pair("127.0.0.1", NULL, 1, &c, &s);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "the client socket connected under %s", cc);
    cc_of(s, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "the accepted socket (its listener's choice) runs %s", cc);
    rw_tcp_pick_congestion(c, 255);
    rw_tcp_pick_server_congestion(s, 255);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "a same-host rail of 255 stays on reno, not %s", cc);
    cc_of(s, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "a same-host session of 255 rails stays on reno, not %s", cc);
    close(c);
    close(s);
}

Test(tcp_cc, auto_prepares_nothing_where_the_system_runs_no_bbr)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char before[16], after[16];

    cr_assert(fd >= 0);
    unsetenv("RAILWIRE_TCP_CONGESTION");
    rw_tcp_cc_assume_system("cubic");
    cc_of(fd, before, sizeof(before));
    rw_tcp_cc_prepare(fd);
    cc_of(fd, after, sizeof(after));
    cr_assert_str_eq(after, before);
    close(fd);
}

/* This host's first IPv4 address that is up and not loopback, into out;
 * 0 if it has none. */
static int other_ipv4(char *out, size_t n)
{
    struct ifaddrs *ifs, *i;
    int found = 0;

    if (getifaddrs(&ifs) < 0)
        return 0;
    for (i = ifs; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK))
            found = inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
                              (socklen_t)n) != NULL;
    freeifaddrs(ifs);
    return found;
}

/* Another host, as the rule sees one: the client end bound to 127.0.0.1
 * and the peer at this host's own non-loopback address (the two IPs
 * differ, and the peer's is not a loopback address).  The rail goes back
 * to the system's BBR; the accepted end, whose peer is a loopback address,
 * stays on reno. */
Test(tcp_cc, a_prepared_rail_to_another_host_goes_back_to_the_systems_bbr)
{
    char ip[INET_ADDRSTRLEN], cc[16];
    int c, s, probe = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert(probe >= 0);
    if (try_cc(probe, "bbr") < 0) {
        close(probe);
        cr_skip("BBR is not available here (tcp_bbr not loaded or not permitted)");
    }
    close(probe);
    if (!other_ipv4(ip, sizeof(ip)))
        cr_skip("this host has no IPv4 address besides loopback");
    unsetenv("RAILWIRE_TCP_CONGESTION");
    rw_tcp_cc_assume_system("bbr");
    tcp_pair(ip, "127.0.0.1", 1, &c, &s);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "prepared before it connected");
    rw_tcp_pick_congestion(c, 2);
    rw_tcp_pick_server_congestion(s, 2);
    cc_of(c, cc, sizeof(cc));
    cr_assert_str_eq(cc, "bbr", "a rail to %s from 127.0.0.1 runs %s", ip, cc);
    cc_of(s, cc, sizeof(cc));
    cr_assert_str_eq(cc, "reno", "the end whose peer is 127.0.0.1 runs %s", cc);
    close(c);
    close(s);
}

/* Both ends of a real rail of a 255-rail set, where the system runs BBR:
 * reno from the start (the older rule kept BBR above 2 rails a CPU). */
Test(tcp_cc, both_ends_of_a_rail_of_a_255_rail_set_run_reno_where_the_system_runs_bbr)
{
    struct tpair p = {0};
    struct rw_ep_cfg ccfg = {.depth = 8, .set_rails = 255};

    unsetenv("RAILWIRE_TCP_CONGESTION");
    rw_tcp_cc_assume_system("bbr");
    t_open(&p, "127.0.0.1", 0);
    t_connect_cfg(&p, NULL, 0, &ccfg);
    cr_assert_geq(rail_sockets_run("reno"), 2, "the rail's client and server sockets");
    t_close(&p);
}
