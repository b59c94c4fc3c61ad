/* SPDX-License-Identifier: MIT */
#include "tcp/tcp_cc.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/log.h"
#include "tcp/tcp_addr.h"

/* The kernel's limit on an algorithm's name, with its NUL (TCP_CA_NAME_MAX). */
#define CC_NAME_MAX 16

enum cc_mode { CC_AUTO, CC_SYSTEM, CC_NAMED };

static pthread_once_t cc_once = PTHREAD_ONCE_INIT;
static enum cc_mode cc_mode;
static char cc_name[CC_NAME_MAX];

static void read_env(void)
{
    const char *s = getenv("RAILWIRE_TCP_CONGESTION");

    if (!s || !*s || !strcmp(s, "auto")) {
        cc_mode = CC_AUTO;
    } else if (!strcmp(s, "system")) {
        cc_mode = CC_SYSTEM;
    } else if (strlen(s) >= CC_NAME_MAX) {
        rw_err("tcp: RAILWIRE_TCP_CONGESTION='%s' is not an algorithm name (at most %d "
               "characters); using 'auto'. Give auto, system, or a name listed in "
               "/proc/sys/net/ipv4/tcp_available_congestion_control", s, CC_NAME_MAX - 1);
        cc_mode = CC_AUTO;
    } else {
        cc_mode = CC_NAMED;
        memcpy(cc_name, s, strlen(s) + 1);
    }
}

static int is_loopback(const struct sockaddr_storage *ss)
{
    uint8_t gid[16];
    static const uint8_t v6_loopback[16] = {[15] = 1};
    static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};

    if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
        return 0;
    rw_tcp_addr_to_gid(ss, gid); /* AF_INET becomes IPv4-mapped */
    return !memcmp(gid, v6_loopback, 16) || (!memcmp(gid, v4mapped, 12) && gid[12] == 127);
}

int rw_tcp_same_host(const struct sockaddr_storage *local, const struct sockaddr_storage *peer)
{
    return is_loopback(peer) || rw_tcp_addr_same_ip(local, peer);
}

static int set_cc(int fd, const char *name)
{
    return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name));
}

/* Reads fd's algorithm into out (CC_NAME_MAX bytes).  Returns 0 or -1. */
static int get_cc(int fd, char *out)
{
    socklen_t n = CC_NAME_MAX - 1;

    memset(out, 0, CC_NAME_MAX);
    return getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, out, &n);
}

static int is_bbr(const char *name)
{
    return !strncmp(name, "bbr", 3);
}

/* The system's algorithm, as a new socket gets it (empty if unknown). */
static pthread_once_t sys_once = PTHREAD_ONCE_INIT;
static char sys_name[CC_NAME_MAX];

static void read_system(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || get_cc(fd, sys_name) < 0)
        sys_name[0] = 0;
    if (fd >= 0)
        close(fd);
}

static const char *system_cc(void)
{
    pthread_once(&sys_once, read_system);
    return sys_name;
}

void rw_tcp_cc_assume_system(const char *name)
{
    system_cc();
    if (name)
        snprintf(sys_name, sizeof(sys_name), "%s", name);
    else
        read_system();
}

/* What a same-host rail leaves a BBR for, in order of preference: reno,
 * or cubic where reno is refused (tcp_cc.h says why). */
static const char *const off_bbr_names[] = {"reno", "cubic"};

/* Puts fd on the first of off_bbr_names the kernel accepts.  Returns 0 or
 * -1. */
static int off_bbr(int fd)
{
    for (size_t i = 0; i < sizeof(off_bbr_names) / sizeof(off_bbr_names[0]); i++)
        if (set_cc(fd, off_bbr_names[i]) == 0)
            return 0;
    return -1;
}

/* Whether name is one that off_bbr puts a socket on. */
static int is_off_bbr_name(const char *name)
{
    for (size_t i = 0; i < sizeof(off_bbr_names) / sizeof(off_bbr_names[0]); i++)
        if (!strcmp(name, off_bbr_names[i]))
            return 1;
    return 0;
}

void rw_tcp_cc_prepare(int fd)
{
    pthread_once(&cc_once, read_env);
    if (cc_mode == CC_NAMED)
        (void)set_cc(fd, cc_name); /* a refusal is logged once connected */
    else if (cc_mode == CC_AUTO && is_bbr(system_cc()) && off_bbr(fd) < 0)
        rw_debug("tcp: a rail keeps the system's %s: neither reno nor cubic is permitted (%s)",
                 system_cc(), strerror(errno));
}

/* Whether connected fd's peer is on this host (0 if unknown). */
static int peer_on_this_host(int fd)
{
    struct sockaddr_storage local, peer;
    socklen_t ll = sizeof(local), pl = sizeof(peer);

    return getsockname(fd, (struct sockaddr *)&local, &ll) == 0 &&
           getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && rw_tcp_same_host(&local, &peer);
}

/* The "auto" rule for connected fd (see tcp_cc.h): a prepared socket
 * (taken off the system's BBR before it connected) goes back to it if its
 * peer is on another host; one still on a BBR moves to reno when it is a
 * same-host rail of a set of at most per_cpu rails for each usable CPU. */
static void pick_auto(int fd, unsigned set_rails, unsigned per_cpu)
{
    const char *sys = system_cc();
    char cur[CC_NAME_MAX];

    if (get_cc(fd, cur) < 0)
        return;
    if (!is_bbr(cur)) {
        if (is_bbr(sys) && is_off_bbr_name(cur) && !peer_on_this_host(fd) && set_cc(fd, sys) < 0)
            rw_debug("tcp: a rail to another host keeps %s: the system's %s was refused (%s)",
                     cur, sys, strerror(errno));
        return;
    }
    if ((set_rails ? set_rails : 1) > per_cpu * rw_cpus_usable() || !peer_on_this_host(fd))
        return;
    if (off_bbr(fd) < 0)
        rw_debug("tcp: a same-host rail keeps %s: neither reno nor cubic is permitted (%s)", cur,
                 strerror(errno));
}

static void pick(int fd, unsigned set_rails, unsigned per_cpu)
{
    pthread_once(&cc_once, read_env);
    if (cc_mode == CC_SYSTEM)
        return;
    if (cc_mode == CC_NAMED) {
        if (set_cc(fd, cc_name) < 0)
            rw_warn_rl("tcp: RAILWIRE_TCP_CONGESTION=%s: the kernel refused it (%s); the rail "
                       "keeps the system's algorithm. Check "
                       "/proc/sys/net/ipv4/tcp_available_congestion_control (modules loaded) "
                       "and tcp_allowed_congestion_control (what unprivileged processes may "
                       "pick)", cc_name, strerror(errno));
        return;
    }
    pick_auto(fd, set_rails, per_cpu);
}

void rw_tcp_pick_congestion(int fd, unsigned set_rails)
{
    pick(fd, set_rails, RW_TCP_CC_RAILS_PER_CPU);
}

void rw_tcp_pick_server_congestion(int fd, unsigned set_rails)
{
    pick(fd, set_rails, RW_TCP_CC_SERVER_RAILS_PER_CPU);
}
