/* SPDX-License-Identifier: MIT */
/* Which rails the slices of many transfers in flight land on (the mock
 * transport finishes nothing until polled, so each test looks at the rails
 * right after its submits): small transfers packed onto few rails of a big
 * railset, the slices of a big transfer spread over every rail, and a
 * transport's deeper default queue holding more small slices but not more
 * bytes. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mock_world.h"
#include "rail/client/railset_internal.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct mock_world w;
static uint8_t *buf;
static railwire_mr *mr;

static void teardown_world(void)
{
    mock_set_default_depth(0);
    mock_world_last_max_msg = 0;
    mock_world_fini(&w);
    free(buf);
    buf = NULL;
}

TestSuite(stripe_pack, .fini = teardown_world);

/* A world of n rails with slices of `slice` bytes and queue_depth `depth`
 * (0 = the default), and a local buffer of len bytes registered. */
static void world(unsigned n, size_t slice, unsigned depth, size_t len)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.slice_size = slice;
    o.queue_depth = depth;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, n, 1, len, NULL, &o), 0);
    buf = calloc(1, len);
    cr_assert(buf);
    cr_assert_eq(railwire_mr_register(w.rs, buf, len, &mr), 0);
}

/* Submits k READs of len bytes each (at distinct offsets), leaves them in
 * flight. */
static void submit_reads(unsigned k, size_t len)
{
    for (unsigned i = 0; i < k; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ,
                          .mr = mr,
                          .local = buf + (size_t)i * len,
                          .length = len,
                          .remote_offset = (uint64_t)i * len};
        railwire_handle h;
        cr_assert_eq(railwire_submit(w.rs, &op, &h), 0, "submit %u", i);
    }
}

/* Rails holding at least one slice; *most gets the largest count held. */
static unsigned rails_in_use(size_t *most, size_t *total)
{
    unsigned used = 0;
    *most = 0;
    *total = 0;
    for (unsigned i = 0; i < w.n_rails; i++) {
        size_t k = rw_test_rail_outstanding(w.rs, i);
        used += k > 0;
        *total += k;
        if (k > *most)
            *most = k;
    }
    return used;
}

/* Drains everything in flight and checks the bytes arrived. */
static void drain_and_check(unsigned k, size_t len)
{
    railwire_completion c[64];
    unsigned done = 0;
    while (done < k) {
        int n = railwire_wait(w.rs, c, 64, 20000);
        cr_assert_gt(n, 0, "wait: %d with %u of %u done", n, done, k);
        for (int i = 0; i < n; i++)
            cr_assert_eq(c[i].status, 0);
        done += (unsigned)n;
    }
    for (size_t i = 0; i < (size_t)k * len; i++)
        if (buf[i] != mock_pattern(0, i))
            cr_assert_fail("byte %zu differs", i);
}

Test(stripe_pack, small_transfers_fill_few_rails_of_a_big_railset)
{
    world(16, 512 * KIB, 64, 1 * MIB);
    submit_reads(64, 4 * KIB);
    size_t most, total;
    unsigned used = rails_in_use(&most, &total);
    cr_assert_eq(total, 64, "every transfer is on a rail (%zu)", total);
    cr_assert_leq(used, 2, "64 transfers of 4 KiB spread over %u rails", used);
    drain_and_check(64, 4 * KIB);
}

/* Transfers of 64 KiB are small too: a rail takes them until it holds
 * 512 KiB, so 16 in flight sit on 2 rails of 8, not 2 on each of 8 rails
 * (one request per send and per wake-up, on every rail). */
Test(stripe_pack, transfers_of_64_kib_are_packed)
{
    world(8, 512 * KIB, 64, 1 * MIB);
    submit_reads(16, 64 * KIB);
    size_t most, total;
    unsigned used = rails_in_use(&most, &total);
    cr_assert_eq(total, 16);
    cr_assert_eq(used, 2, "16 transfers of 64 KiB on %u rails (most %zu a rail)", used, most);
    cr_assert_eq(most, 8);
    drain_and_check(16, 64 * KIB);
}

/* Packing is for small transfers, not for the small slices of a big one:
 * a 16 MiB transfer cut into 64 KiB slices uses every rail. */
Test(stripe_pack, slices_of_a_big_transfer_spread_over_every_rail)
{
    world(64, 64 * KIB, 0, 16 * MIB);
    submit_reads(1, 16 * MIB);
    for (unsigned i = 0; i < 64; i++)
        cr_assert_gt(rw_test_rail_outstanding(w.rs, i), 0, "rail %u carries no slice", i);
    drain_and_check(1, 16 * MIB);
}

/* Which railsets pack: more than 4 rails always; 2 to 4 rails once the
 * rails outnumber half the cores their work shares (tcp's loops; a verbs
 * railset passes UINT_MAX, and the mock transport here shares none). */
Test(stripe_pack, packing_follows_the_rails_and_the_cores)
{
    cr_assert_not(rw_stripe_packs(1, 1), "one rail has nothing to pack onto");
    cr_assert_not(rw_stripe_packs(1, 64));
    cr_assert_not(rw_stripe_packs(2, 4), "2 rails, 4 cores: a CPU for each end");
    cr_assert_not(rw_stripe_packs(4, 8));
    cr_assert_not(rw_stripe_packs(4, 64));
    cr_assert(rw_stripe_packs(2, 3));
    cr_assert(rw_stripe_packs(2, 2));
    cr_assert(rw_stripe_packs(4, 7));
    cr_assert(rw_stripe_packs(5, 64), "more than 4 rails pack on any machine");
    cr_assert(rw_stripe_packs(64, 2));
    cr_assert_not(rw_stripe_packs(4, UINT_MAX), "rails that share no cores");
}

/* On at most 4 rails nothing is packed: small transfers spread. */
Test(stripe_pack, few_rails_are_not_packed)
{
    world(4, 512 * KIB, 64, 1 * MIB);
    submit_reads(8, 4 * KIB);
    size_t most, total;
    unsigned used = rails_in_use(&most, &total);
    cr_assert_eq(used, 4, "8 small transfers on %u of 4 rails", used);
    drain_and_check(8, 4 * KIB);
}

/* A domain whose default queue is deeper than 16 (tcp's 64) gives a rail
 * of the default options 64 small slices in flight. */
Test(stripe_pack, deeper_domain_default_holds_more_small_slices)
{
    mock_set_default_depth(64);
    world(1, 512 * KIB, 0, 1 * MIB);
    mock_set_default_depth(0);
    submit_reads(64, 4 * KIB);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, 0), 64);
    cr_assert_eq(rw_test_pending(w.rs), 0);
    drain_and_check(64, 4 * KIB);
}

/* ... but not more bytes: full slices stop at the 16 the default always
 * allowed (8 MiB of 512 KiB slices), the rest waits in the FIFO. */
Test(stripe_pack, deeper_domain_default_holds_no_more_bytes)
{
    mock_set_default_depth(64);
    world(1, 512 * KIB, 0, 64 * MIB);
    mock_set_default_depth(0);
    submit_reads(1, 64 * MIB);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, 0), 16);
    cr_assert_eq(rw_test_rail_inflight_bytes(w.rs, 0), 8 * MIB);
    cr_assert_eq(rw_test_pending(w.rs), 128 - 16);
    drain_and_check(1, 64 * MIB);
}

/* A queue_depth the user gives is taken as it is: 64 full slices. */
Test(stripe_pack, given_queue_depth_is_not_capped_by_bytes)
{
    mock_set_default_depth(64);
    world(1, 512 * KIB, 64, 64 * MIB);
    mock_set_default_depth(0);
    submit_reads(1, 64 * MIB);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, 0), 64);
    drain_and_check(1, 64 * MIB);
}

/* Without a domain default the rail keeps 16 slices, as before. */
Test(stripe_pack, default_depth_without_a_domain_default_is_16)
{
    world(1, 512 * KIB, 0, 1 * MIB);
    submit_reads(32, 4 * KIB);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, 0), 16);
    cr_assert_eq(rw_test_pending(w.rs), 16);
    drain_and_check(32, 4 * KIB);
}

/* A rail that comes into service with a smaller max_msg shrinks every
 * slice; the rails already up then hold 16 slices of the new size, not
 * 16 x the old size's bytes in small slices. */
Test(stripe_pack, byte_caps_follow_a_slice_size_that_shrinks)
{
    mock_set_default_depth(64);
    mock_world_last_max_msg = 64 * KIB; /* rail 1 of 2 */
    world(2, 512 * KIB, 0, 16 * MIB);
    mock_set_default_depth(0);
    submit_reads(1, 16 * MIB); /* 256 slices of 64 KiB */
    for (unsigned i = 0; i < 2; i++) {
        cr_assert_eq(rw_test_rail_outstanding(w.rs, i), 16, "rail %u holds %zu slices", i,
                     rw_test_rail_outstanding(w.rs, i));
        cr_assert_eq(rw_test_rail_inflight_bytes(w.rs, i), 1 * MIB);
    }
    drain_and_check(1, 16 * MIB);
}
