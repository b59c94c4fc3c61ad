/* SPDX-License-Identifier: MIT */
/* Constant-time comparison of secrets and the lockout table of peers that
 * send wrong hellos (tcp_guard.h). */
#include "tcp/tcp_guard.h"

#include <pthread.h>
#include <string.h>

#include "tcp/tcp_addr.h"
#include "tcp/tcp_internal.h"

int rw_tcp_ct_equal(const uint32_t *a, const uint32_t *b, size_t n)
{
    volatile uint32_t diff = 0;

    for (size_t i = 0; i < n; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

struct peer {
    uint8_t ip[16];      /* GID form: IPv4-mapped or IPv6 */
    unsigned fails;
    int64_t last_fail_ms;
    int64_t locked_until_ms;
    int used;
};

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct peer peers[RW_TCP_GUARD_PEERS];

/* Whether entry p is a better one to reuse than v: unlocked before locked,
 * then the stalest. */
static int staler(const struct peer *p, const struct peer *v, int64_t now)
{
    int pl = p->locked_until_ms > now, vl = v->locked_until_ms > now;
    return pl != vl ? !pl : p->last_fail_ms < v->last_fail_ms;
}

/* With guard_lock held: the entry of ip, or NULL; with `create`, a new
 * entry (a free one, or the stalest reused) when there is none. */
static struct peer *find(const uint8_t ip[16], int create, int64_t now)
{
    struct peer *victim = NULL;
    unsigned i;

    for (i = 0; i < RW_TCP_GUARD_PEERS; i++)
        if (peers[i].used && memcmp(peers[i].ip, ip, 16) == 0)
            return &peers[i];
    if (!create)
        return NULL;
    for (i = 0; i < RW_TCP_GUARD_PEERS; i++) {
        struct peer *p = &peers[i];
        if (!p->used) {
            victim = p;
            break;
        }
        if (!victim || staler(p, victim, now))
            victim = p;
    }
    memset(victim, 0, sizeof(*victim));
    memcpy(victim->ip, ip, 16);
    victim->used = 1;
    victim->last_fail_ms = now;
    return victim;
}

int rw_tcp_guard_locked(const struct sockaddr_storage *ss, int64_t now_ms)
{
    uint8_t ip[16];
    struct peer *p;
    int locked;

    rw_tcp_addr_to_gid(ss, ip);
    pthread_mutex_lock(&guard_lock);
    p = find(ip, 0, now_ms);
    locked = p && p->locked_until_ms > now_ms;
    pthread_mutex_unlock(&guard_lock);
    return locked;
}

int rw_tcp_guard_fail(const struct sockaddr_storage *ss, int64_t now_ms)
{
    uint8_t ip[16];
    struct peer *p;
    int now_locked = 0;

    rw_tcp_addr_to_gid(ss, ip);
    pthread_mutex_lock(&guard_lock);
    p = find(ip, 1, now_ms);
    if (p && p->locked_until_ms <= now_ms) {
        if (now_ms - p->last_fail_ms > RW_TCP_LOCKOUT_MS)
            p->fails = 0;
        p->fails++;
        p->last_fail_ms = now_ms;
        if (p->fails >= RW_TCP_LOCKOUT_FAILS) {
            p->locked_until_ms = now_ms + RW_TCP_LOCKOUT_MS;
            p->fails = 0;
            now_locked = 1;
        }
    }
    pthread_mutex_unlock(&guard_lock);
    return now_locked;
}

int rw_tcp_guard_fail_fd(int fd, int64_t now_ms)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        return 0;
    return rw_tcp_guard_fail(&ss, now_ms);
}
