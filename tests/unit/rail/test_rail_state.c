/* SPDX-License-Identifier: MIT */
/* The rail state machine (rail_state.c): connect puts rails in service the
 * way heal does, the aggregates follow the live rails, and a failure
 * reported by a detector takes effect at once while the reactions wait for
 * dispatch.  Regression tests for two differences between the old connect
 * and heal paths: only heal bumped rails_gen, and min_inv_gbps only ever
 * went down. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "mock_world.h"

#define KIB 1024u

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(rail_state, .fini = teardown_world);

Test(rail_state, connect_bumps_rails_gen_for_every_rail_put_in_service)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 3, 1, 64 * KIB, NULL, &o), 0);
    /* A poller compares rails_gen with the one it built its poll set at:
     * rails put in service at connect count as heal's do. */
    cr_assert_eq(rw_test_rails_gen(w.rs), 3);
    cr_assert_eq(rw_test_live(w.rs), 3);
    for (unsigned i = 0; i < 3; i++)
        cr_assert_eq(rw_test_rail_state(w.rs, i), RAILWIRE_RAIL_UP);
}

Test(rail_state, min_inv_gbps_follows_the_live_rails)
{
    const double gbps[3] = {40, 10, 20};
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 3, 1, 64 * KIB, gbps, &o), 0);
    cr_assert_float_eq(rw_test_min_inv_gbps(w.rs), 1.0 / 40, 1e-12);
    /* The fastest rail goes: the scale is the fastest live rail's, not a
     * dead one's. */
    rw_test_fail_rail(w.rs, 0, RAILWIRE_E_RAIL_DOWN);
    cr_assert_float_eq(rw_test_min_inv_gbps(w.rs), 1.0 / 20, 1e-12);
    rw_test_fail_rail(w.rs, 2, RAILWIRE_E_RAIL_DOWN);
    cr_assert_float_eq(rw_test_min_inv_gbps(w.rs), 1.0 / 10, 1e-12);
    cr_assert_eq(rw_test_live(w.rs), 1);
}

Test(rail_state, a_failure_is_reported_once_and_keeps_its_first_reason)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 64 * KIB, NULL, &o), 0);
    rw_test_fail_rail(w.rs, 1, RAILWIRE_E_TIMEOUT);
    rw_test_fail_rail(w.rs, 1, RAILWIRE_E_RAIL_DOWN);
    railwire_rail_stats st = rw_test_rail_stats(w.rs, 1);
    cr_assert_eq(st.state, RAILWIRE_RAIL_DOWN);
    cr_assert_eq(st.down_reason, RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_test_live(w.rs), 1, "the second report changes nothing");
    /* The public stats derive the state from the machine. */
    railwire_rail_stats all[2];
    cr_assert_eq(railwire_railset_stats(w.rs, all, 2, sizeof all[0]), 2);
    cr_assert_eq(all[0].state, RAILWIRE_RAIL_UP);
    cr_assert_eq(all[1].state, RAILWIRE_RAIL_DOWN);
    /* The survivor carries the transfers. */
    uint8_t *buf = calloc(1, 32 * KIB);
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, buf, 32 * KIB, &mr), 0);
    cr_assert_eq(mock_world_xfer(&w, RAILWIRE_OP_READ, mr, buf, 32 * KIB, 0, 0), 0);
    cr_assert_eq(rw_test_rail_stats(w.rs, 0).bytes_read, 32 * KIB);
    railwire_mr_deregister(mr);
    free(buf);
}
