/* SPDX-License-Identifier: MIT */
/* Client addresses for admission: IP and CIDR parsing, the allowlist, and
 * the per-peer table (pending handshakes and sessions of one address). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "rail/server/server_internal.h"

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int rw_ip_from_sockaddr(const struct sockaddr_storage *ss, struct rw_ip *ip)
{
    memset(ip, 0, sizeof(*ip));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)ss;
        memcpy(ip->b, v4_prefix, 12);
        memcpy(ip->b + 12, &in->sin_addr, 4);
        return 0;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)ss;
        memcpy(ip->b, &in6->sin6_addr, 16); /* v4-mapped stays ::ffff:a.b.c.d: IPv4 */
        return 0;
    }
    return -1;
}

static void mask(struct rw_ip *ip, unsigned bits)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = bits >= 8 * (i + 1) ? 8 : bits > 8 * i ? bits - 8 * i : 0;
        ip->b[i] &= (uint8_t)(0xff00u >> keep);
    }
}

int rw_cidr_parse(const char *s, struct rw_cidr *out)
{
    char buf[INET6_ADDRSTRLEN + 8];
    if (!s || strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash) {
        char *end;
        *slash = '\0';
        errno = 0;
        bits = strtol(slash + 1, &end, 10);
        if (slash[1] == '\0' || *end != '\0' || errno || bits < 0)
            return -1;
    }
    memset(out, 0, sizeof(*out));
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, buf, &a4) == 1) {
        if (bits > 32)
            return -1;
        memcpy(out->net.b, v4_prefix, 12);
        memcpy(out->net.b + 12, &a4, 4);
        out->bits = 96 + (unsigned)(bits < 0 ? 32 : bits);
    } else if (inet_pton(AF_INET6, buf, &a6) == 1) {
        if (bits > 128)
            return -1;
        memcpy(out->net.b, &a6, 16);
        out->bits = (unsigned)(bits < 0 ? 128 : bits);
    } else {
        return -1;
    }
    mask(&out->net, out->bits);
    return 0;
}

int rw_cidr_match(const struct rw_cidr *c, const struct rw_ip *ip)
{
    struct rw_ip m = *ip;
    mask(&m, c->bits);
    return memcmp(m.b, c->net.b, 16) == 0;
}

int rw_srv_allow_parse(struct railwire_server *srv, const char *const *allow, unsigned n)
{
    if (n == 0)
        return 0;
    if (!allow) {
        rw_err("server: n_allow is %u but allow is NULL", n);
        return RAILWIRE_E_INVALID;
    }
    srv->allow = calloc(n, sizeof(*srv->allow));
    if (!srv->allow) {
        rw_err("server: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    for (unsigned i = 0; i < n; i++) {
        if (rw_cidr_parse(allow[i], &srv->allow[i]) < 0) {
            rw_err("server: allow entry %u (\"%s\") is not an address or CIDR block; give e.g. "
                   "10.0.0.0/8, 192.0.2.7 or fd00::/8", i, allow[i] ? allow[i] : "(null)");
            return RAILWIRE_E_INVALID;
        }
    }
    srv->n_allow = n;
    return 0;
}

int rw_srv_allowed(const struct railwire_server *srv, const struct rw_ip *ip)
{
    if (srv->n_allow == 0)
        return 1;
    for (unsigned i = 0; i < srv->n_allow; i++)
        if (rw_cidr_match(&srv->allow[i], ip))
            return 1;
    return 0;
}

static unsigned peer_bucket(const struct rw_ip *ip)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (unsigned i = 0; i < 16; i++)
        h = (h ^ ip->b[i]) * 16777619u;
    return h % RW_PEER_BUCKETS;
}

struct rw_srv_peer *rw_srv_peer_get(struct railwire_server *srv, const struct rw_ip *ip,
                                    int create)
{
    unsigned b = peer_bucket(ip);
    for (struct rw_srv_peer *p = srv->peers[b]; p; p = p->next)
        if (!memcmp(p->ip.b, ip->b, 16))
            return p;
    if (!create)
        return NULL;
    struct rw_srv_peer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->ip = *ip;
    p->next = srv->peers[b];
    srv->peers[b] = p;
    return p;
}

void rw_srv_peer_put(struct railwire_server *srv, struct rw_srv_peer *p)
{
    if (!p || p->pending || p->sessions)
        return;
    for (struct rw_srv_peer **pp = &srv->peers[peer_bucket(&p->ip)]; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            free(p);
            return;
        }
    }
}

void rw_srv_peers_free(struct railwire_server *srv)
{
    for (unsigned b = 0; b < RW_PEER_BUCKETS; b++) {
        while (srv->peers[b]) {
            struct rw_srv_peer *p = srv->peers[b];
            srv->peers[b] = p->next;
            free(p);
        }
    }
}
