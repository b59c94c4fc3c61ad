/* SPDX-License-Identifier: MIT */
/* Cancel, per-transfer deadlines and railwire_wait_handle over the mock
 * transport (operations finish only when polled, a black-holed ep never
 * finishes them): a transfer with nothing on the wire completes at once;
 * one on the wire completes only once its rail completed or was killed,
 * and its slices are never re-issued; no completion comes after a
 * cancel's; reserved transfers are returned only to railwire_wait_handle. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "mock_world.h"

#define KIB 1024u

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(cancel, .fini = teardown_world);

static railwire_mr *reg(void *p, size_t n)
{
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, p, n, &mr), 0);
    return mr;
}

static railwire_handle submit(railwire_mr *mr, void *local, size_t len, uint64_t off,
                              uint32_t timeout_ms, unsigned flags)
{
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .flags = flags, .mr = mr,
                      .local = local, .length = len, .remote_offset = off, .user_data = off,
                      .timeout_ms = timeout_ms};
    railwire_handle h = 0;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    return h;
}

/* Waits (up to 10 s) for exactly one completion. */
static railwire_completion wait_one(void)
{
    railwire_completion c;
    memset(&c, 0, sizeof(c));
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 10000), 1);
    return c;
}

Test(cancel, unposted_transfer_completes_at_once_and_is_never_posted)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 1, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    mock_ep_blackhole(w.ep[0], 1);
    railwire_handle a = submit(mr, buf, 128 * KIB, 0, 0, 0);          /* 8 slices: the depth */
    railwire_handle b = submit(mr, buf + 128 * KIB, 64 * KIB, 0, 0, 0); /* waits for the rail */
    const struct rw_wr *log;
    cr_assert_eq(mock_log(&log), 8);
    cr_assert_eq(railwire_railset_pending(w.rs), 2);
    cr_assert_eq(railwire_cancel(w.rs, b), 0);
    cr_assert_eq(railwire_cancel(w.rs, b), RAILWIRE_E_STATE, "finished: its completion waits");
    railwire_completion c;
    cr_assert_eq(railwire_poll(w.rs, &c, 1), 1);
    cr_assert_eq(c.handle, b);
    cr_assert_eq(c.status, RAILWIRE_E_CANCELED);
    cr_assert_eq(c.bytes_moved, 0);
    cr_assert_eq(c.length, 64 * KIB);
    cr_assert_eq(railwire_cancel(w.rs, b), RAILWIRE_E_INVALID, "returned: unknown now");
    cr_assert_eq(railwire_poll(w.rs, &c, 1), 0, "a's slices are stuck on the wire");
    cr_assert_eq(mock_log(&log), 8, "b was never posted");
    cr_assert_eq(railwire_railset_pending(w.rs), 1);
    (void)a;
    free(buf);
}

Test(cancel, on_the_wire_finishes_when_its_rail_dies_and_is_not_reissued)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 150);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 2, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    mock_ep_blackhole(w.ep[0], 1);
    railwire_handle a = submit(mr, buf, 256 * KIB, 0, 0, 0); /* 16 slices over 2 rails */
    const struct rw_wr *log;
    size_t posted = mock_log(&log);
    cr_assert_eq(posted, 16);
    railwire_completion c;
    cr_assert_eq(railwire_poll(w.rs, &c, 1), 0); /* rail 1's half completes */
    cr_assert_eq(railwire_cancel(w.rs, a), 0);
    cr_assert_eq(railwire_cancel(w.rs, a), 0, "cancelling again changes nothing");
    cr_assert_eq(railwire_poll(w.rs, &c, 1), 0, "rail 0 still holds slices of it");
    c = wait_one(); /* rail 0 is declared dead after op_timeout_ms */
    cr_assert_eq(c.handle, a);
    cr_assert_eq(c.status, RAILWIRE_E_CANCELED);
    cr_assert_eq(c.bytes_moved, mock_ep_bytes(w.ep[1]));
    cr_assert_eq(c.bytes_moved, 128 * KIB);
    cr_assert_eq(mock_ep_killed(w.ep[0]), 1, "the rail was killed before the cancel completed");
    cr_assert_eq(mock_log(&log), posted, "no slice of a cancelled transfer is re-issued");
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 300), RAILWIRE_E_TIMEOUT, "nothing after it");
    cr_assert_eq(railwire_railset_pending(w.rs), 0);
    free(buf);
}

Test(cancel, late_cancel_of_a_transfer_that_moved_every_byte_changes_nothing)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 1, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = reg(buf, 64 * KIB);
    railwire_handle a = submit(mr, buf, 64 * KIB, 0, 0, 0); /* 4 slices, all on the wire */
    cr_assert_eq(railwire_cancel(w.rs, a), 0);
    railwire_completion c = wait_one();
    cr_assert_eq(c.status, 0);
    cr_assert_eq(c.bytes_moved, 64 * KIB);
    cr_assert_eq(memcmp(buf, w.layer[0], 64 * KIB), 0);
    /* Finished but not returned yet: a clear error. */
    a = submit(mr, buf, 4 * KIB, 0, 0, 0);
    cr_assert_eq(railwire_poll(w.rs, &c, 0), 0); /* progress only */
    cr_assert_eq(railwire_cancel(w.rs, a), RAILWIRE_E_STATE);
    c = wait_one();
    cr_assert_eq(c.status, 0);
    cr_assert_eq(railwire_cancel(w.rs, 12345), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_cancel(NULL, a), RAILWIRE_E_INVALID);
    free(buf);
}

Test(cancel, deadline_drops_a_waiting_transfer_while_the_rail_lives)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 400);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 1, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    mock_ep_blackhole(w.ep[0], 1);
    railwire_handle a = submit(mr, buf, 128 * KIB, 0, 30, 0);          /* on the wire */
    railwire_handle b = submit(mr, buf + 128 * KIB, 16 * KIB, 0, 30, 0); /* waits */
    railwire_completion c = wait_one();
    cr_assert_eq(c.handle, b);
    cr_assert_eq(c.status, RAILWIRE_E_TIMEOUT);
    cr_assert_eq(c.bytes_moved, 0);
    railwire_rail_stats st;
    railwire_railset_stats(w.rs, &st, 1, sizeof st);
    cr_assert_eq(st.state, RAILWIRE_RAIL_UP, "b's deadline fired before the rail's op timeout");
    c = wait_one();
    cr_assert_eq(c.handle, a);
    cr_assert_eq(c.status, RAILWIRE_E_TIMEOUT);
    free(buf);
}

Test(cancel, no_deadline_fires_on_a_healthy_run)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 2, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 1024 * KIB);
    railwire_mr *mr = reg(buf, 1024 * KIB);
    for (int round = 0; round < 50; round++) {
        for (unsigned i = 0; i < 16; i++)
            submit(mr, buf + i * 64 * KIB, 64 * KIB, i * 64 * KIB, 1000, 0);
        for (unsigned i = 0; i < 16; i++) {
            railwire_completion c = wait_one();
            cr_assert_eq(c.status, 0);
            cr_assert_eq(c.bytes_moved, 64 * KIB);
        }
    }
    cr_assert_eq(memcmp(buf, w.layer[0], 1024 * KIB), 0);
    free(buf);
}

Test(cancel, reserved_transfers_go_only_to_wait_handle)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 1, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = reg(buf, 64 * KIB);
    railwire_handle r = submit(mr, buf, 4 * KIB, 0, 0, RAILWIRE_OP_F_RESERVED);
    railwire_handle p = submit(mr, buf + 4 * KIB, 4 * KIB, 4096, 0, 0);
    cr_assert_eq(railwire_railset_pending(w.rs), 2);
    railwire_completion c[4];
    cr_assert_eq(railwire_wait(w.rs, c, 4, 10000), 1);
    cr_assert_eq(c[0].handle, p, "poll/wait return only the unreserved one");
    cr_assert_eq(railwire_wait(w.rs, c, 4, 50), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(railwire_wait_handle(w.rs, r, 10000, &c[0]), 0);
    cr_assert_eq(c[0].handle, r);
    cr_assert_eq(c[0].status, 0);
    cr_assert_eq(c[0].user_data, 0);
    cr_assert_eq(railwire_wait_handle(w.rs, r, 0, &c[0]), RAILWIRE_E_INVALID, "returned once");
    /* Lifting the reservation hands it to poll/wait. */
    r = submit(mr, buf, 4 * KIB, 8192, 0, RAILWIRE_OP_F_RESERVED);
    cr_assert_eq(railwire_wait_handle(w.rs, r, 0, NULL), 0);
    cr_assert_eq(railwire_wait(w.rs, c, 4, 10000), 1);
    cr_assert_eq(c[0].handle, r);
    /* An unreserved transfer can be waited for by handle too. */
    p = submit(mr, buf, 4 * KIB, 0, 0, 0);
    cr_assert_eq(railwire_wait_handle(w.rs, p, 10000, &c[0]), 0);
    cr_assert_eq(c[0].handle, p);
    cr_assert_eq(railwire_railset_pending(w.rs), 0);
    free(buf);
}

Test(cancel, the_fd_fires_for_a_deadline_alone)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 1, 1, 1024 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    mock_ep_use_wait_fd(w.ep[0], 1);
    mock_ep_blackhole(w.ep[0], 1);
    int fd = railwire_railset_fd(w.rs);
    cr_assert_geq(fd, 0);
    submit(mr, buf, 128 * KIB, 0, 0, 0);                                 /* stuck on the wire */
    railwire_handle b = submit(mr, buf + 128 * KIB, 16 * KIB, 0, 40, 0); /* waits, 40 ms deadline */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    railwire_completion c;
    int got = 0;
    /* Nothing but the deadline's timer can wake it: no completion comes. */
    for (int i = 0; i < 10 && !got; i++) {
        cr_assert_eq(poll(&p, 1, 5000), 1, "the fd never fired for the deadline");
        got = railwire_poll(w.rs, &c, 1);
    }
    cr_assert_eq(got, 1);
    cr_assert_eq(c.handle, b);
    cr_assert_eq(c.status, RAILWIRE_E_TIMEOUT);
    free(buf);
}
