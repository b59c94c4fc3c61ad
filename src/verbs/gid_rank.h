/* SPDX-License-Identifier: MIT */
/* GID ranking: which entry of a port's GID table railwire uses and why.
 * Pure functions over a caller-supplied table (no libibverbs calls), so the
 * rules are unit-tested with synthetic tables.
 *
 * Rules, best first (lowest index wins inside a class):
 *   0  RoCE v2 with an IPv4-mapped address (::ffff:a.b.c.d): routable over
 *      the IPv4 fabric most RoCE deployments use;
 *   1  RoCE v2 with a global IPv6 address;
 *   2  anything else usable (RoCE v1, IB, site-local/ULA IPv6, ...);
 *   skipped: empty entries (all zero) and, on RoCE, link-local fe80::/10
 *      (not routable: the most common wrong-GID failure).  On an InfiniBand
 *      port fe80:: is the default subnet prefix and is usable (class 2). */
#ifndef RW_VERBS_GID_RANK_H
#define RW_VERBS_GID_RANK_H

#include <stddef.h>
#include <stdint.h>

enum rw_gid_type {
    RW_GID_TYPE_IB = 0,      /* InfiniBand GID (or type unknown) */
    RW_GID_TYPE_ROCE_V1 = 1, /* RoCE v1 (Ethernet, not routable over IP) */
    RW_GID_TYPE_ROCE_V2 = 2, /* RoCE v2 (UDP/IP) */
};

/* Ranking classes; RW_GID_SKIP entries are never chosen automatically. */
enum rw_gid_class {
    RW_GID_V2_IPV4 = 0,
    RW_GID_V2_IPV6 = 1,
    RW_GID_OTHER = 2,
    RW_GID_SKIP_EMPTY = 3,
    RW_GID_SKIP_LINK_LOCAL = 4,
};

/* One GID table entry as the ranking sees it. */
struct rw_gid_entry {
    unsigned index;
    uint8_t gid[16];
    enum rw_gid_type type;
    int ifindex;       /* netdev the entry belongs to, 0 if none/unknown */
};

/* The outcome of a choice.  `index` is -1 when nothing usable exists. */
struct rw_gid_choice {
    int index;
    enum rw_gid_class cls;
    char reason[192]; /* one line, for logs and `railwire devices` */
};

/* Classifies one entry.  `ib_port` is non-zero for an InfiniBand link layer
 * (fe80:: is then usable). */
enum rw_gid_class rw_gid_classify(const struct rw_gid_entry *e, int ib_port);

/* Short stable name of a class ("roce-v2-ipv4", "roce-v2-ipv6", "other",
 * "empty", "link-local").  Static string. */
const char *rw_gid_class_name(enum rw_gid_class c);

/* Short name of a GID type ("IB", "RoCE v1", "RoCE v2").  Static string. */
const char *rw_gid_type_name(enum rw_gid_type t);

/* Formats a GID as an IPv6 address (IPv4-mapped ones as ::ffff:a.b.c.d)
 * into buf (>= 46 bytes).  Returns buf. */
char *rw_gid_format(const uint8_t gid[16], char *buf, size_t cap);

/* Chooses among `n` entries (any order, empty ones may be included).
 * `override` >= 0 forces that table index; `override_src` names where it came
 * from ("RAILWIRE_GID_INDEX", "the gid_index option") for the reason text.
 * Returns 0 and fills *out, or RAILWIRE_E_NO_DEVICE (nothing usable) /
 * RAILWIRE_E_INVALID (the forced index is absent or empty); *out->reason then
 * says why.  Does not log. */
int rw_gid_choose(const struct rw_gid_entry *tab, size_t n, int ib_port, int override,
                  const char *override_src, struct rw_gid_choice *out);

#endif
