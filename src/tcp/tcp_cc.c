/* SPDX-License-Identifier: MIT */
#include "tcp/tcp_cc.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* Moves a same-host BBR socket of a railset or session of set_rails rails
 * to `first` (or to `second` where `first` is refused) when the rails are
 * at most per_cpu for each usable CPU. */
static void pick(int fd, unsigned set_rails, unsigned per_cpu, const char *first,
                 const char *second)
{
    struct sockaddr_storage local, peer;
    socklen_t ll = sizeof(local), pl = sizeof(peer), n;
    char cur[CC_NAME_MAX] = {0};

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
    if ((set_rails ? set_rails : 1) > per_cpu * rw_cpus_usable())
        return;
    n = sizeof(cur) - 1;
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cur, &n) < 0 || strncmp(cur, "bbr", 3))
        return;
    if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || !rw_tcp_same_host(&local, &peer))
        return;
    if (set_cc(fd, first) == 0 || set_cc(fd, second) == 0)
        return;
    rw_debug("tcp: a same-host rail keeps %s: neither cubic nor reno is permitted (%s)", cur,
             strerror(errno));
}

void rw_tcp_pick_congestion(int fd, unsigned set_rails)
{
    pick(fd, set_rails, RW_TCP_CC_RAILS_PER_CPU, "reno", "cubic");
}

void rw_tcp_pick_server_congestion(int fd, unsigned set_rails)
{
    pick(fd, set_rails, RW_TCP_CC_SERVER_RAILS_PER_CPU, "reno", "cubic");
}
