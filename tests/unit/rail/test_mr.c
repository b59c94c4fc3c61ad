/* SPDX-License-Identifier: MIT */
/* Local registrations over the mock transport. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "mock_world.h"

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(mr, .fini = teardown_world);

Test(mr, registers_once_on_every_rails_domain)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 3, 1, 4096, NULL, NULL), 0);
    uint8_t buf[4096];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(w.rs, buf, sizeof(buf), &mr), 0);
    for (unsigned i = 0; i < 3; i++) {
        cr_assert_not_null(rw_test_mr_rail(mr, i));
        cr_assert_eq(rw_test_mr_rail(mr, i)->dom, rw_test_rail_dom(w.rs, i));
        cr_assert_eq(rw_test_mr_rail(mr, i)->addr, buf);
        cr_assert_eq(rw_test_mr_rail(mr, i)->len, sizeof(buf));
    }
    cr_assert_eq(railwire_mr_deregister(mr), 0);
}

Test(mr, invalid_arguments_are_refused)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 4096, NULL, NULL), 0);
    uint8_t buf[16];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(w.rs, buf, 0, &mr), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_register(w.rs, NULL, 16, &mr), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_register(NULL, buf, 16, &mr), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_deregister(NULL), 0);
}

Test(mr, deregister_fails_while_a_transfer_uses_it)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 4096, NULL, &o), 0);
    uint8_t buf[4096];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(w.rs, buf, sizeof(buf), &mr), 0);
    mock_ep_blackhole(w.ep[0], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 100};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    cr_assert_eq(railwire_mr_deregister(mr), RAILWIRE_E_STATE);
    mock_ep_blackhole(w.ep[0], 0);
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
}

Test(mr, close_releases_registrations_and_unfinished_transfers)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 4096, NULL, NULL), 0);
    uint8_t buf[4096];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(w.rs, buf, sizeof(buf), &mr), 0);
    cr_assert_eq(railwire_mr_register(w.rs, buf, 100, &mr), 0);
    mock_ep_blackhole(w.ep[0], 1);
    mock_ep_blackhole(w.ep[1], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 100};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    cr_assert_eq(mock_ep_outstanding(w.ep[0]) + mock_ep_outstanding(w.ep[1]), 1);
    unsigned kills = mock_kills_total();
    railwire_railset_close(w.rs);
    w.rs = NULL;
    cr_assert_eq(mock_kills_total(), kills + 2, "close must kill the eps before freeing");
    mock_world_fini(&w);
    cr_assert_eq(mock_live_objects(), 0, "close leaked transport objects");
}
