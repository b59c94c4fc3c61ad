/* SPDX-License-Identifier: MIT */
/* The 1.0 option and transfer fields over the real tcp transport on
 * loopback (docs/abi.md): the array counts of the railset options and
 * their "rail i uses entry i mod n" rule, reserved0, struct_size, an op's
 * flags and timeout_ms (refused until deadlines exist), and a completion's
 * bytes_moved when only part of a transfer moved. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#define KIB 1024u
#define ARENA (1024u * KIB)

static uint8_t *arena;
static railwire_server *srv;
static char port[16];

static void setup(void)
{
    arena = calloc(1, ARENA);
    cr_assert(arena);
    railwire_server_opts o;
    cr_assert_eq(railwire_server_opts_init(&o), 0);
    cr_assert_eq(o.struct_size, sizeof(o));
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){arena, ARENA};
    cr_assert_eq(railwire_server_create(&o, &srv), 0);
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
}

static void teardown(void)
{
    railwire_server_destroy(srv);
    free(arena);
}

TestSuite(opts_abi, .init = setup, .fini = teardown, .timeout = 120);

static railwire_railset_opts rw_opts(unsigned rails)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.heal = 0;
    return o;
}

static int try_connect(const railwire_railset_opts *o)
{
    railwire_railset *rs = NULL;
    int rc = railwire_railset_connect("127.0.0.1", port, o, &rs);
    cr_assert(rc == 0 || rs == NULL, "a failed connect returned a railset");
    railwire_railset_close(rs);
    return rc;
}

Test(opts_abi, array_counts_must_match_their_arrays)
{
    const char *addrs[3] = {"127.0.0.1", "127.0.0.1", "127.0.0.1"};
    railwire_railset_opts o = rw_opts(2);
    o.local_addrs = addrs; /* n_local_addrs left 0 */
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "an array without its count");
    o = rw_opts(2);
    o.n_local_addrs = 2; /* no array */
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "a count without its array");
    o = rw_opts(2);
    o.local_addrs = addrs;
    o.n_local_addrs = 3;
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "more addresses than rails");
    o = rw_opts(2);
    o.devices = addrs;
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "devices without n_devices");
    o = rw_opts(2);
    o.n_devices = 1;
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "n_devices without devices");
    o = rw_opts(2);
    o.local_addrs = addrs;
    o.n_local_addrs = 2;
    cr_assert_eq(try_connect(&o), 0, "one address per rail");
}

/* Rail i leaves by local_addrs[i mod n_local_addrs]: the rail's name is its
 * local domain, "tcp:ADDRESS". */
Test(opts_abi, rail_i_binds_local_addrs_i_mod_n)
{
    const char *two[2] = {"127.0.0.2", "127.0.0.3"};
    railwire_railset_opts o = rw_opts(4);
    o.local_addrs = two;
    o.n_local_addrs = 2;
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), 0);
    railwire_rail_stats st[4];
    cr_assert_eq(railwire_railset_stats(rs, st, 4, sizeof(st[0])), 4);
    for (unsigned i = 0; i < 4; i++)
        cr_assert(strstr(st[i].name, two[i % 2]), "rail %u is %s, want %s", i, st[i].name,
                  two[i % 2]);
    railwire_railset_close(rs);
}

Test(opts_abi, struct_size_zero_and_reserved0_are_refused)
{
    railwire_railset_opts o = rw_opts(1);
    o.reserved0 = 1;
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "reserved0 must be 0");
    o = rw_opts(1);
    o.struct_size = 0;
    cr_assert_eq(try_connect(&o), RAILWIRE_E_INVALID, "options never initialised");
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.struct_size = 4;
    so.arena = (railwire_region){arena, ARENA};
    so.dialect = RAILWIRE_DIALECT_RW;
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&so, &s), RAILWIRE_E_INVALID);
    cr_assert_null(s);
}

Test(opts_abi, an_op_with_a_deadline_or_unknown_flags_is_refused_not_ignored)
{
    railwire_railset_opts o = rw_opts(1);
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), 0);
    static uint8_t buf[4 * KIB];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, sizeof(buf), &mr), 0);
    railwire_op ops[3];
    for (unsigned i = 0; i < 3; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * KIB,
                               .length = KIB, .remote_offset = i * KIB, .user_data = i};
    railwire_handle h[3];
    ops[0].timeout_ms = 100;
    cr_assert_eq(railwire_submit(rs, &ops[0], &h[0]), RAILWIRE_E_INVALID);
    ops[0].timeout_ms = 0;
    ops[0].flags = 0x80000000u;
    cr_assert_eq(railwire_submit(rs, &ops[0], &h[0]), RAILWIRE_E_INVALID);
    ops[0].flags = 0;
    /* In a batch: the ops before the refused one are submitted, it and the
     * rest are not. */
    ops[1].timeout_ms = 1;
    cr_assert_eq(railwire_submit_batch(rs, ops, 3, h), 1);
    railwire_completion c;
    cr_assert_eq(railwire_wait(rs, &c, 1, 10000), 1);
    cr_assert_eq(c.handle, h[0]);
    cr_assert_eq(c.status, 0);
    cr_assert_eq(c.bytes_moved, KIB);
    cr_assert_eq(railwire_poll(rs, &c, 1), 0, "the refused ops were not submitted");
    railwire_railset_close(rs);
}

/* A transfer whose last slices fall past the arena: the server refuses
 * those, the first ones move, and bytes_moved says how many bytes did. */
Test(opts_abi, bytes_moved_counts_the_slices_that_completed)
{
    railwire_railset_opts o = rw_opts(2);
    o.slice_size = 64 * KIB;
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), 0);
    size_t len = 256 * KIB;
    uint8_t *buf = calloc(1, len);
    cr_assert(buf);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, len, &mr), 0);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = len,
                      .remote_offset = ARENA - 128 * KIB, .user_data = 9};
    railwire_handle h;
    cr_assert_eq(railwire_submit(rs, &op, &h), 0);
    railwire_completion c;
    cr_assert_eq(railwire_wait(rs, &c, 1, 10000), 1);
    cr_assert_eq(c.handle, h);
    cr_assert_eq(c.status, RAILWIRE_E_REMOTE_ACCESS, "status %d", c.status);
    cr_assert_eq(c.length, len);
    cr_assert_eq(c.bytes_moved, 128 * KIB, "bytes_moved %llu", (unsigned long long)c.bytes_moved);
    cr_assert_eq(c.flags, 0);
    cr_assert(c.reserved[0] == 0 && c.reserved[1] == 0 && c.reserved[2] == 0);
    /* A whole success reports its length. */
    op.remote_offset = 0;
    cr_assert_eq(railwire_submit(rs, &op, &h), 0);
    cr_assert_eq(railwire_wait(rs, &c, 1, 10000), 1);
    cr_assert_eq(c.status, 0);
    cr_assert_eq(c.bytes_moved, len);
    railwire_railset_close(rs);
    free(buf);
}
