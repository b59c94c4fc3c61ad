/* SPDX-License-Identifier: MIT */
#include "verbs/gid_rank.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <railwire/error.h>

static int is_zero(const uint8_t g[16])
{
    for (int i = 0; i < 16; i++)
        if (g[i])
            return 0;
    return 1;
}

static int is_v4_mapped(const uint8_t g[16])
{
    static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(g, pfx, sizeof(pfx)) == 0;
}

static int is_link_local(const uint8_t g[16])
{
    return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

enum rw_gid_class rw_gid_classify(const struct rw_gid_entry *e, int ib_port)
{
    if (is_zero(e->gid))
        return RW_GID_SKIP_EMPTY;
    if (ib_port)
        return RW_GID_OTHER;
    if (is_link_local(e->gid))
        return RW_GID_SKIP_LINK_LOCAL;
    if (e->type == RW_GID_TYPE_ROCE_V2 && is_v4_mapped(e->gid))
        return RW_GID_V2_IPV4;
    /* Global unicast 2000::/3; ULA and other scopes count as "other". */
    if (e->type == RW_GID_TYPE_ROCE_V2 && (e->gid[0] & 0xe0) == 0x20)
        return RW_GID_V2_IPV6;
    return RW_GID_OTHER;
}

const char *rw_gid_class_name(enum rw_gid_class c)
{
    switch (c) {
    case RW_GID_V2_IPV4: return "roce-v2-ipv4";
    case RW_GID_V2_IPV6: return "roce-v2-ipv6";
    case RW_GID_OTHER: return "other";
    case RW_GID_SKIP_EMPTY: return "empty";
    case RW_GID_SKIP_LINK_LOCAL: return "link-local";
    }
    return "unknown";
}

const char *rw_gid_type_name(enum rw_gid_type t)
{
    switch (t) {
    case RW_GID_TYPE_IB: return "IB";
    case RW_GID_TYPE_ROCE_V1: return "RoCE v1";
    case RW_GID_TYPE_ROCE_V2: return "RoCE v2";
    }
    return "unknown";
}

char *rw_gid_format(const uint8_t gid[16], char *buf, size_t cap)
{
    if (!cap)
        return buf;
    if (!inet_ntop(AF_INET6, gid, buf, (socklen_t)cap))
        snprintf(buf, cap, "?");
    return buf;
}

static const char *class_why(enum rw_gid_class c)
{
    switch (c) {
    case RW_GID_V2_IPV4: return "RoCE v2 with an IPv4-mapped address (preferred: routable over IPv4)";
    case RW_GID_V2_IPV6: return "RoCE v2 with a global IPv6 address (no RoCE v2 IPv4 GID on this port)";
    case RW_GID_OTHER: return "the first usable non-RoCE-v2 entry (no RoCE v2 IPv4/global IPv6 GID on this port)";
    default: return "";
    }
}

int rw_gid_choose(const struct rw_gid_entry *tab, size_t n, int ib_port, int override,
                  const char *override_src, struct rw_gid_choice *out)
{
    char addr[64];
    int best = -1;
    enum rw_gid_class best_cls = RW_GID_SKIP_EMPTY;
    size_t skipped_ll = 0;

    out->index = -1;
    out->cls = RW_GID_SKIP_EMPTY;
    out->reason[0] = '\0';

    if (override >= 0) {
        for (size_t i = 0; i < n; i++) {
            if (tab[i].index != (unsigned)override)
                continue;
            enum rw_gid_class c = rw_gid_classify(&tab[i], ib_port);
            if (c == RW_GID_SKIP_EMPTY)
                break;
            out->index = override;
            out->cls = c;
            snprintf(out->reason, sizeof(out->reason), "index %d forced by %s (%s %s, class %s)%s",
                     override, override_src ? override_src : "an override",
                     rw_gid_type_name(tab[i].type), rw_gid_format(tab[i].gid, addr, sizeof(addr)),
                     rw_gid_class_name(c),
                     c == RW_GID_SKIP_LINK_LOCAL ? "; WARNING: link-local GIDs are not routable" : "");
            return 0;
        }
        snprintf(out->reason, sizeof(out->reason),
                 "index %d forced by %s is empty or outside the GID table; "
                 "see `railwire devices` for the valid indexes",
                 override, override_src ? override_src : "an override");
        return RAILWIRE_E_INVALID;
    }

    for (size_t i = 0; i < n; i++) {
        enum rw_gid_class c = rw_gid_classify(&tab[i], ib_port);
        if (c == RW_GID_SKIP_LINK_LOCAL)
            skipped_ll++;
        if (c >= RW_GID_SKIP_EMPTY)
            continue;
        if (best < 0 || c < best_cls || (c == best_cls && tab[i].index < tab[best].index)) {
            best = (int)i;
            best_cls = c;
        }
    }
    if (best < 0) {
        snprintf(out->reason, sizeof(out->reason),
                 "no usable GID (%zu link-local entries skipped, the rest empty): give the "
                 "netdev an IPv4 or global IPv6 address, or force an index with RAILWIRE_GID_INDEX",
                 skipped_ll);
        return RAILWIRE_E_NO_DEVICE;
    }
    out->index = (int)tab[best].index;
    out->cls = best_cls;
    snprintf(out->reason, sizeof(out->reason), "index %u: %s, %s%s", tab[best].index,
             rw_gid_format(tab[best].gid, addr, sizeof(addr)),
             ib_port ? "InfiniBand port: first non-empty GID" : class_why(best_cls),
             skipped_ll ? "; link-local entries skipped" : "");
    return 0;
}
