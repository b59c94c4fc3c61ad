/* SPDX-License-Identifier: MIT */
/* QP identity mapping (GID <-> socket address, server QPN/PSN) and the
 * rail frame codec. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcp/tcp_addr.h"
#include "tcp/tcp_proto.h"
#include "transport/transport.h"

Test(tcp_addr, ipv4_maps_to_v4mapped_gid_and_back)
{
    static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 10};
    struct sockaddr_storage ss, back;
    uint8_t gid[16];
    char s[64];

    cr_assert_eq(rw_tcp_addr_parse("192.0.2.10", &ss), 0);
    cr_assert_eq(ss.ss_family, AF_INET);
    rw_tcp_addr_to_gid(&ss, gid);
    cr_assert_eq(memcmp(gid, want, 16), 0);
    cr_assert_eq(rw_tcp_gid_to_addr(gid, 4791, &back), 0);
    cr_assert_eq(back.ss_family, AF_INET);
    cr_assert_eq(rw_tcp_addr_port(&back), 4791);
    rw_tcp_addr_format(&back, 1, s, sizeof(s));
    cr_assert_str_eq(s, "192.0.2.10:4791");
}

Test(tcp_addr, ipv6_maps_to_itself)
{
    struct sockaddr_storage ss, back;
    uint8_t gid[16], want[16];
    char s[64];

    cr_assert_eq(rw_tcp_addr_parse("[::1]", &ss), 0);
    cr_assert_eq(ss.ss_family, AF_INET6);
    rw_tcp_addr_to_gid(&ss, gid);
    inet_pton(AF_INET6, "::1", want);
    cr_assert_eq(memcmp(gid, want, 16), 0);
    cr_assert_eq(rw_tcp_gid_to_addr(gid, 80, &back), 0);
    cr_assert_eq(back.ss_family, AF_INET6);
    rw_tcp_addr_format(&back, 1, s, sizeof(s));
    cr_assert_str_eq(s, "[::1]:80");
    cr_assert_eq(rw_tcp_addr_parse("fd00::10", &ss), 0);
    rw_tcp_addr_format(&ss, 0, s, sizeof(s));
    cr_assert_str_eq(s, "fd00::10");
}

Test(tcp_addr, v4mapped_text_and_wildcards)
{
    struct sockaddr_storage ss;

    cr_assert_eq(rw_tcp_addr_parse("::ffff:127.0.0.1", &ss), 0);
    cr_assert_eq(ss.ss_family, AF_INET, "a v4-mapped address is used as IPv4");
    cr_assert_eq(rw_tcp_addr_parse(NULL, &ss), 0);
    cr_assert(rw_tcp_addr_is_any(&ss));
    cr_assert_eq(ss.ss_family, AF_INET);
    cr_assert_eq(rw_tcp_addr_parse("::", &ss), 0);
    cr_assert(rw_tcp_addr_is_any(&ss));
    cr_assert_eq(rw_tcp_addr_parse("127.0.0.1", &ss), 0);
    cr_assert_not(rw_tcp_addr_is_any(&ss));
}

Test(tcp_addr, rejects_names_and_empty_identities)
{
    struct sockaddr_storage ss;
    uint8_t zero[16] = {0}, gid[16] = {0};

    cr_assert_eq(rw_tcp_addr_parse("localhost", &ss), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tcp_addr_parse("1.2.3.4.5", &ss), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tcp_gid_to_addr(zero, 80, &ss), RAILWIRE_E_INVALID);
    gid[15] = 1;
    cr_assert_eq(rw_tcp_gid_to_addr(gid, 0, &ss), RAILWIRE_E_INVALID);
}

/* A server ep's identity: GID = the listener's address, QPN = slot << 16 |
 * listen port, PSN random; each new ep gets its own slot. */
static void server_identity(const char *addr, int v4)
{
    struct rw_domain_cfg cfg = {.role = RW_ROLE_SERVER, .device = addr};
    struct rw_domain *d;
    struct rw_ep *a, *b;
    struct rw_ep_cfg ecfg = {0};
    struct sockaddr_storage want;
    uint8_t gid[16];
    char name[64];
    const char *colon;
    unsigned port;

    cr_assert_eq(rw_tcp_ops.domain_open(&cfg, &d), 0);
    cr_assert_gt(d->gbps, 0.0);
    cr_assert_gt(d->max_qp_wr, 0);
    cr_assert_gt(d->max_msg, 0);
    colon = strrchr(d->name, ':');
    cr_assert_not_null(colon);
    port = (unsigned)atoi(colon + 1);
    cr_assert_gt(port, 0);
    cr_assert_eq(rw_tcp_ops.ep_create(d, &ecfg, &a), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(d, &ecfg, &b), 0);
    cr_assert_eq(a->local.qpn & 0xffff, port);
    cr_assert_eq(b->local.qpn & 0xffff, port);
    cr_assert_neq(a->local.qpn >> 16, b->local.qpn >> 16, "each ep has its own slot");
    cr_assert_neq(a->local.psn, b->local.psn, "psns are per-ep secrets");
    rw_tcp_addr_parse(addr, &want);
    rw_tcp_addr_to_gid(&want, gid);
    cr_assert_eq(memcmp(a->local.gid, gid, 16), 0);
    cr_assert_eq(a->local.gid[10] == 0xff && a->local.gid[11] == 0xff, v4);
    snprintf(name, sizeof(name), "tcp:%s", v4 ? addr : "[::1]");
    cr_assert_eq(strncmp(d->name, name, strlen(name)), 0, "name %s", d->name);
    rw_tcp_ops.ep_destroy(a);
    rw_tcp_ops.ep_destroy(b);
    rw_tcp_ops.domain_close(d);
}

Test(tcp_addr, server_identity_ipv4)
{
    server_identity("127.0.0.1", 1);
}

Test(tcp_addr, server_identity_ipv6)
{
    server_identity("::1", 0);
}

/* On a wildcard listener the GID is the advertised address. */
Test(tcp_addr, wildcard_listener_advertises)
{
    struct rw_domain_cfg cfg = {.role = RW_ROLE_SERVER, .device = "0.0.0.0"};
    struct sockaddr_storage adv;
    struct rw_ep_cfg ecfg = {.advertise = &adv};
    struct rw_domain *d;
    struct rw_ep *ep;
    uint8_t gid[16];

    cr_assert_eq(rw_tcp_addr_parse("127.0.0.1", &adv), 0);
    rw_tcp_addr_set_port(&adv, 9999);
    rw_tcp_addr_to_gid(&adv, gid);
    cr_assert_eq(rw_tcp_ops.domain_open(&cfg, &d), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(d, &ecfg, &ep), 0);
    cr_assert_eq(memcmp(ep->local.gid, gid, 16), 0);
    cr_assert_neq(ep->local.qpn & 0xffff, 9999, "the port is the listener's, not the advertised one");
    rw_tcp_ops.ep_destroy(ep);
    rw_tcp_ops.domain_close(d);
}

/* MR keys: random, non-zero, distinct; remote_base is opaque (not the
 * address: it would give the server's address layout away), keeps the page
 * offset, and leaves room for the whole region. */
Test(tcp_addr, mr_keys)
{
    struct rw_domain_cfg cfg = {.role = RW_ROLE_CLIENT};
    struct rw_domain *d;
    struct rw_mr *m[32];
    static uint8_t mem[32][8];
    int i, j;

    cr_assert_eq(rw_tcp_ops.domain_open(&cfg, &d), 0);
    for (i = 0; i < 32; i++) {
        cr_assert_eq(rw_tcp_ops.mr_reg(d, mem[i], 8, RW_ACCESS_REMOTE_READ, &m[i]), 0);
        cr_assert_neq(m[i]->rkey, 0);
        cr_assert_neq(m[i]->lkey, 0);
        cr_assert_neq(m[i]->remote_base, (uint64_t)(uintptr_t)mem[i]);
        cr_assert_eq(m[i]->remote_base & 0xfff, (uint64_t)(uintptr_t)mem[i] & 0xfff);
        cr_assert_geq(m[i]->remote_base, 1ull << 48, "far from any user-space address");
        cr_assert_lt(m[i]->remote_base, 1ull << 62, "base + len cannot wrap");
        for (j = 0; j < i; j++) {
            cr_assert_neq(m[i]->rkey, m[j]->rkey);
            cr_assert_neq(m[i]->rkey, m[j]->lkey);
        }
    }
    {
        struct rw_mr *bad = (struct rw_mr *)&mem;
        cr_assert_eq(rw_tcp_ops.mr_reg(d, mem[0], 0, RW_ACCESS_REMOTE_READ, &bad), RAILWIRE_E_INVALID);
        cr_assert_null(bad);
    }
    for (i = 0; i < 32; i++)
        rw_tcp_ops.mr_dereg(m[i]);
    rw_tcp_ops.domain_close(d);
}

Test(tcp_proto, frames_round_trip_little_endian)
{
    struct rw_tcp_hello h = {.srv_qpn = 0x00011234, .srv_psn = 0xdeadbeef, .cli_qpn = 7, .cli_psn = 8}, h2;
    struct rw_tcp_req r = {.op = 1, .length = 0x10203, .tag = 0x1122334455667788ull,
                           .remote_addr = 0x8877665544332211ull, .rkey = 0xcafef00d}, r2;
    struct rw_tcp_resp s = {.tag = 5, .status = 1, .length = 0}, s2;
    uint8_t buf[32];

    rw_tcp_hello_encode(buf, &h);
    cr_assert_eq(memcmp(buf, "RWT1\x01\x00\x00\x00\x34\x12\x01\x00", 12), 0);
    cr_assert_eq(rw_tcp_hello_decode(buf, &h2), 0);
    cr_assert_eq(memcmp(&h, &h2, sizeof(h)), 0);
    buf[4] = 2;
    cr_assert_eq(rw_tcp_hello_decode(buf, &h2), RAILWIRE_E_PROTOCOL, "wrong version");

    rw_tcp_req_encode(buf, &r);
    cr_assert_eq(buf[0], 1);
    cr_assert_eq(buf[4], 0x03);
    cr_assert_eq(rw_tcp_req_decode(buf, &r2), 0);
    cr_assert_eq(r2.tag, r.tag);
    cr_assert_eq(r2.remote_addr, r.remote_addr);
    cr_assert_eq(r2.rkey, r.rkey);
    cr_assert_eq(r2.length, r.length);
    buf[31] = 1;
    cr_assert_eq(rw_tcp_req_decode(buf, &r2), RAILWIRE_E_PROTOCOL, "reserved word set");

    rw_tcp_resp_encode(buf, &s);
    rw_tcp_resp_decode(buf, &s2);
    cr_assert_eq(s2.tag, 5);
    cr_assert_eq(s2.status, 1);
    cr_assert_eq(buf[8], 1);
}
