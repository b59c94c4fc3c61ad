/* SPDX-License-Identifier: MIT */
/* GID ranking on synthetic GID tables. */
#include <criterion/criterion.h>
#include <string.h>

#include <railwire/error.h>

#include "verbs/gid_rank.h"

static struct rw_gid_entry v4(unsigned idx, enum rw_gid_type t, uint8_t a, uint8_t b, uint8_t c,
                              uint8_t d)
{
    struct rw_gid_entry e = {.index = idx, .type = t};
    e.gid[10] = 0xff;
    e.gid[11] = 0xff;
    e.gid[12] = a;
    e.gid[13] = b;
    e.gid[14] = c;
    e.gid[15] = d;
    return e;
}

static struct rw_gid_entry v6(unsigned idx, enum rw_gid_type t, uint8_t first, uint8_t second)
{
    struct rw_gid_entry e = {.index = idx, .type = t};
    e.gid[0] = first;
    e.gid[1] = second;
    e.gid[15] = 0x42;
    return e;
}

static struct rw_gid_entry empty(unsigned idx)
{
    struct rw_gid_entry e = {.index = idx, .type = RW_GID_TYPE_ROCE_V2};
    return e;
}

Test(gid_rank, classify_each_kind)
{
    struct rw_gid_entry e;
    e = v4(0, RW_GID_TYPE_ROCE_V2, 10, 0, 0, 1);
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_V2_IPV4);
    e = v6(0, RW_GID_TYPE_ROCE_V2, 0x20, 0x01);
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_V2_IPV6);
    e = v6(0, RW_GID_TYPE_ROCE_V2, 0xfe, 0x80);
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_SKIP_LINK_LOCAL);
    e = v6(0, RW_GID_TYPE_ROCE_V2, 0xfe, 0xbf); /* still fe80::/10 */
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_SKIP_LINK_LOCAL);
    e = v6(0, RW_GID_TYPE_ROCE_V2, 0xfd, 0x00); /* ULA: usable, not global */
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_OTHER);
    e = v4(0, RW_GID_TYPE_ROCE_V1, 10, 0, 0, 1);
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_OTHER);
    e = empty(0);
    cr_assert_eq(rw_gid_classify(&e, 0), RW_GID_SKIP_EMPTY);
    /* On InfiniBand fe80:: is the default subnet prefix and usable. */
    e = v6(0, RW_GID_TYPE_IB, 0xfe, 0x80);
    cr_assert_eq(rw_gid_classify(&e, 1), RW_GID_OTHER);
}

/* A typical mlx5 RoCE table: v1/v2 pairs of link-local, IPv4 and IPv6. */
Test(gid_rank, prefers_v2_ipv4_over_everything)
{
    struct rw_gid_entry tab[] = {
        v6(0, RW_GID_TYPE_ROCE_V1, 0xfe, 0x80), v6(1, RW_GID_TYPE_ROCE_V2, 0xfe, 0x80),
        v6(2, RW_GID_TYPE_ROCE_V1, 0x20, 0x01), v6(3, RW_GID_TYPE_ROCE_V2, 0x20, 0x01),
        v4(4, RW_GID_TYPE_ROCE_V1, 192, 168, 1, 5), v4(5, RW_GID_TYPE_ROCE_V2, 192, 168, 1, 5),
    };
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 6, 0, -1, NULL, &ch), 0);
    cr_assert_eq(ch.index, 5);
    cr_assert_eq(ch.cls, RW_GID_V2_IPV4);
    cr_assert(strstr(ch.reason, "::ffff:192.168.1.5"), "reason: %s", ch.reason);
    cr_assert(strstr(ch.reason, "IPv4"), "reason: %s", ch.reason);
    cr_assert(strstr(ch.reason, "link-local entries skipped"), "reason: %s", ch.reason);
}

Test(gid_rank, v2_global_ipv6_when_no_ipv4)
{
    struct rw_gid_entry tab[] = {
        v6(0, RW_GID_TYPE_ROCE_V2, 0xfe, 0x80),
        v4(1, RW_GID_TYPE_ROCE_V1, 10, 1, 2, 3),
        v6(2, RW_GID_TYPE_ROCE_V2, 0xfd, 0x12),
        v6(3, RW_GID_TYPE_ROCE_V2, 0x2a, 0x02),
    };
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 4, 0, -1, NULL, &ch), 0);
    cr_assert_eq(ch.index, 3);
    cr_assert_eq(ch.cls, RW_GID_V2_IPV6);
}

Test(gid_rank, other_usable_lowest_index_when_no_v2)
{
    struct rw_gid_entry tab[] = {
        v6(0, RW_GID_TYPE_ROCE_V1, 0xfe, 0x80),
        v4(3, RW_GID_TYPE_ROCE_V1, 10, 1, 2, 3),
        v6(2, RW_GID_TYPE_ROCE_V1, 0x20, 0x01),
    };
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 3, 0, -1, NULL, &ch), 0);
    cr_assert_eq(ch.index, 2, "lowest index of the 'other' class, got %d", ch.index);
    cr_assert_eq(ch.cls, RW_GID_OTHER);
}

Test(gid_rank, lowest_index_wins_within_class_in_any_order)
{
    struct rw_gid_entry tab[] = {
        v4(7, RW_GID_TYPE_ROCE_V2, 10, 0, 0, 7),
        v4(3, RW_GID_TYPE_ROCE_V2, 10, 0, 0, 3),
        v4(5, RW_GID_TYPE_ROCE_V2, 10, 0, 0, 5),
    };
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 3, 0, -1, NULL, &ch), 0);
    cr_assert_eq(ch.index, 3);
}

/* The soft-RoCE VM's table: fe80 at 0 (IPv6 disabled), IPv4 at 1. */
Test(gid_rank, rxe_vm_table_picks_index_1)
{
    struct rw_gid_entry tab[] = {
        v6(0, RW_GID_TYPE_ROCE_V2, 0xfe, 0x80),
        v4(1, RW_GID_TYPE_ROCE_V2, 198, 18, 0, 1),
    };
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 2, 0, -1, NULL, &ch), 0);
    cr_assert_eq(ch.index, 1);
}

Test(gid_rank, only_link_local_and_empty_is_no_device)
{
    struct rw_gid_entry tab[] = {empty(0), v6(1, RW_GID_TYPE_ROCE_V2, 0xfe, 0x80), empty(2)};
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 3, 0, -1, NULL, &ch), RAILWIRE_E_NO_DEVICE);
    cr_assert_eq(ch.index, -1);
    cr_assert(strstr(ch.reason, "RAILWIRE_GID_INDEX"), "reason: %s", ch.reason);
    cr_assert_eq(rw_gid_choose(NULL, 0, 0, -1, NULL, &ch), RAILWIRE_E_NO_DEVICE);
}

Test(gid_rank, override_forces_index_even_if_worse)
{
    struct rw_gid_entry tab[] = {
        v6(0, RW_GID_TYPE_ROCE_V2, 0xfe, 0x80),
        v4(1, RW_GID_TYPE_ROCE_V2, 198, 18, 0, 1),
        v4(2, RW_GID_TYPE_ROCE_V1, 198, 18, 0, 1),
    };
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 3, 0, 2, "RAILWIRE_GID_INDEX", &ch), 0);
    cr_assert_eq(ch.index, 2);
    cr_assert(strstr(ch.reason, "RAILWIRE_GID_INDEX"), "reason: %s", ch.reason);
    /* A forced link-local index is honoured but warned about. */
    cr_assert_eq(rw_gid_choose(tab, 3, 0, 0, "the gid_index option", &ch), 0);
    cr_assert_eq(ch.index, 0);
    cr_assert_eq(ch.cls, RW_GID_SKIP_LINK_LOCAL);
    cr_assert(strstr(ch.reason, "WARNING"), "reason: %s", ch.reason);
}

Test(gid_rank, override_of_empty_or_missing_index_is_invalid)
{
    struct rw_gid_entry tab[] = {empty(0), v4(1, RW_GID_TYPE_ROCE_V2, 198, 18, 0, 1)};
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 2, 0, 0, "RAILWIRE_GID_INDEX", &ch), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_gid_choose(tab, 2, 0, 9, "RAILWIRE_GID_INDEX", &ch), RAILWIRE_E_INVALID);
    cr_assert(strstr(ch.reason, "railwire devices"), "reason: %s", ch.reason);
}

Test(gid_rank, infiniband_port_uses_first_nonempty)
{
    struct rw_gid_entry tab[] = {empty(0), v6(1, RW_GID_TYPE_IB, 0xfe, 0x80),
                                 v6(2, RW_GID_TYPE_IB, 0xfe, 0x80)};
    struct rw_gid_choice ch;
    cr_assert_eq(rw_gid_choose(tab, 3, 1, -1, NULL, &ch), 0);
    cr_assert_eq(ch.index, 1);
}

Test(gid_rank, format_and_names)
{
    char buf[64];
    struct rw_gid_entry e = v4(1, RW_GID_TYPE_ROCE_V2, 198, 18, 0, 1);
    cr_assert_str_eq(rw_gid_format(e.gid, buf, sizeof(buf)), "::ffff:198.18.0.1");
    cr_assert_str_eq(rw_gid_type_name(RW_GID_TYPE_ROCE_V2), "RoCE v2");
    cr_assert_str_eq(rw_gid_class_name(RW_GID_SKIP_LINK_LOCAL), "link-local");
    cr_assert_str_eq(rw_gid_class_name(RW_GID_V2_IPV4), "roce-v2-ipv4");
}
