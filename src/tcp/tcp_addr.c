/* SPDX-License-Identifier: MIT */
#include "tcp/tcp_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <railwire/error.h>

#include "common/log.h"

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void set_v4(struct sockaddr_storage *ss, const void *addr4)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    memset(ss, 0, sizeof(*ss));
    sin->sin_family = AF_INET;
    memcpy(&sin->sin_addr, addr4, 4);
}

int rw_tcp_addr_parse(const char *s, struct sockaddr_storage *ss)
{
    char buf[INET6_ADDRSTRLEN + 2];
    struct in_addr a4;
    struct in6_addr a6;
    size_t n;

    memset(ss, 0, sizeof(*ss));
    if (!s || !*s) {
        ss->ss_family = AF_INET; /* INADDR_ANY is all zeroes */
        return 0;
    }
    if (inet_pton(AF_INET, s, &a4) == 1) {
        set_v4(ss, &a4);
        return 0;
    }
    n = strlen(s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']' && n - 2 < sizeof(buf)) {
        memcpy(buf, s + 1, n - 2);
        buf[n - 2] = '\0';
    } else if (n < sizeof(buf)) {
        memcpy(buf, s, n + 1);
    } else {
        buf[0] = '\0';
    }
    if (inet_pton(AF_INET6, buf, &a6) == 1) {
        if (!memcmp(a6.s6_addr, v4mapped_prefix, 12)) {
            set_v4(ss, a6.s6_addr + 12);
        } else {
            struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
            sin6->sin6_family = AF_INET6;
            sin6->sin6_addr = a6;
        }
        return 0;
    }
    rw_err("tcp: '%s' is not a numeric IPv4 or IPv6 address; give the local "
           "address of the NIC to use (e.g. 192.0.2.10 or fd00::10)", s);
    return RAILWIRE_E_INVALID;
}

socklen_t rw_tcp_addr_len(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return sizeof(struct sockaddr_in);
    if (ss->ss_family == AF_INET6)
        return sizeof(struct sockaddr_in6);
    return 0;
}

int rw_tcp_addr_is_any(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return 0;
}

uint16_t rw_tcp_addr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return 0;
}

void rw_tcp_addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

int rw_tcp_addr_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    uint8_t ga[16], gb[16];
    if ((a->ss_family != AF_INET && a->ss_family != AF_INET6) ||
        (b->ss_family != AF_INET && b->ss_family != AF_INET6))
        return 0;
    /* Compared as GIDs, so 10.0.0.1 and ::ffff:10.0.0.1 are the same IP. */
    rw_tcp_addr_to_gid(a, ga);
    rw_tcp_addr_to_gid(b, gb);
    return !memcmp(ga, gb, sizeof(ga));
}

void rw_tcp_addr_to_gid(const struct sockaddr_storage *ss, uint8_t gid[16])
{
    memset(gid, 0, 16);
    if (ss->ss_family == AF_INET) {
        memcpy(gid, v4mapped_prefix, 12);
        memcpy(gid + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        memcpy(gid, ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr, 16);
    }
}

int rw_tcp_gid_to_addr(const uint8_t gid[16], uint16_t port, struct sockaddr_storage *ss)
{
    static const uint8_t zero[16];

    memset(ss, 0, sizeof(*ss));
    if (!memcmp(gid, zero, 16) || port == 0) {
        rw_err("tcp: remote identity has %s; it must come from the server's "
               "handshake params (a tcp server QPN carries the port, the GID its address)",
               port == 0 ? "port 0 in its QPN" : "an all-zero GID");
        return RAILWIRE_E_INVALID;
    }
    if (!memcmp(gid, v4mapped_prefix, 12)) {
        set_v4(ss, gid + 12);
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        sin6->sin6_family = AF_INET6;
        memcpy(sin6->sin6_addr.s6_addr, gid, 16);
    }
    rw_tcp_addr_set_port(ss, port);
    return 0;
}

void rw_tcp_addr_format(const struct sockaddr_storage *ss, int with_port, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN];
    const void *src = NULL;

    if (ss->ss_family == AF_INET)
        src = &((const struct sockaddr_in *)ss)->sin_addr;
    else if (ss->ss_family == AF_INET6)
        src = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (!src || !inet_ntop(ss->ss_family, src, ip, sizeof(ip))) {
        snprintf(buf, cap, "?");
        return;
    }
    if (!with_port)
        snprintf(buf, cap, "%s", ip);
    else if (ss->ss_family == AF_INET6)
        snprintf(buf, cap, "[%s]:%u", ip, (unsigned)rw_tcp_addr_port(ss));
    else
        snprintf(buf, cap, "%s:%u", ip, (unsigned)rw_tcp_addr_port(ss));
}
