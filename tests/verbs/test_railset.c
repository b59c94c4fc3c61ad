/* SPDX-License-Identifier: MIT */
/* Striped READ and WRITE through the public railset/server API on verbs
 * rails: 1, 2 and 4 rails across two devices per side, random sizes and
 * offsets, checked byte for byte; WRITE into an RO layer is refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/time.h"
#include "rail/client/railset_testing.h"
#include "rsetup.h"
#include "verbs/verbs_int.h"
#include "vtest.h"

#define MiB (1024u * 1024u)

TestSuite(verbs_railset, .init = vt_require_devices, .timeout = 300);

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* n transfers of random size (1 B .. max_len) at random offsets. */
static void random_transfers(unsigned n_rails, enum railwire_opcode op, unsigned n, size_t max_len)
{
    struct rt_env e;
    enum railwire_dialect d = op == RAILWIRE_OP_READ ? RAILWIRE_DIALECT_RO : RAILWIRE_DIALECT_RW;
    size_t mem = 4 * MiB;
    unsigned layers = d == RAILWIRE_DIALECT_RO ? 4 : 1;
    size_t layer_len = mem / layers;
    unsigned seed = 99 + n_rails * 7 + (unsigned)op;

    rt_up(&e, d, n_rails, mem, layers, 0);
    unsigned char *local = aligned_alloc(4096, n * max_len);
    cr_assert(local);
    vt_pattern(local, n * max_len, seed);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(e.rs, local, n * max_len, &mr), 0);

    railwire_op *ops = calloc(n, sizeof(*ops));
    railwire_handle *hs = calloc(n, sizeof(*hs));
    int *st = calloc(n, sizeof(*st));
    cr_assert(ops && hs && st);
    /* Writes go to disjoint remote ranges so the final image is defined. */
    size_t wslot = mem / n;
    for (unsigned i = 0; i < n; i++) {
        size_t len = 1 + rnd(&seed) % max_len;
        ops[i].opcode = op;
        ops[i].mr = mr;
        ops[i].local = local + (size_t)i * max_len;
        if (op == RAILWIRE_OP_READ) {
            ops[i].layer = rnd(&seed) % layers;
            ops[i].remote_offset = rnd(&seed) % (layer_len - len + 1);
        } else {
            if (len > wslot)
                len = wslot;
            ops[i].remote_offset = (size_t)i * wslot + rnd(&seed) % (wslot - len + 1);
        }
        ops[i].length = len;
        ops[i].user_data = i;
    }
    cr_assert_eq(railwire_submit_batch(e.rs, ops, n, hs), (int)n);
    rt_wait_all(&e, hs, st, n, 120000);
    for (unsigned i = 0; i < n; i++) {
        cr_assert_eq(st[i], 0, "transfer %u (%zu bytes) over %u rails: %s", i, ops[i].length,
                     n_rails, railwire_strerror(st[i]));
        const unsigned char *remote =
            e.mem + ops[i].layer * layer_len + ops[i].remote_offset;
        cr_assert(memcmp(ops[i].local, remote, ops[i].length) == 0,
                  "%s %u (%zu bytes at %llu) over %u rails: bytes differ",
                  op == RAILWIRE_OP_READ ? "READ" : "WRITE", i, ops[i].length,
                  (unsigned long long)ops[i].remote_offset, n_rails);
    }
    railwire_rail_stats stats[8];
    int nr = railwire_railset_stats(e.rs, stats, 8, sizeof(*stats));
    cr_assert_eq(nr, (int)n_rails);
    uint64_t moved = 0;
    for (int r = 0; r < nr; r++) {
        cr_assert_eq(stats[r].state, RAILWIRE_RAIL_UP);
        moved += op == RAILWIRE_OP_READ ? stats[r].bytes_read : stats[r].bytes_written;
        if (n_rails > 1)
            cr_log_info("%u rails: rail %d (%s) moved %llu bytes", n_rails, r, stats[r].name,
                        (unsigned long long)(stats[r].bytes_read + stats[r].bytes_written));
    }
    size_t want = 0;
    for (unsigned i = 0; i < n; i++)
        want += ops[i].length;
    cr_assert_eq(moved, want);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    free(ops);
    free(hs);
    free(st);
    free(local);
    rt_down(&e);
}

Test(verbs_railset, read_striped_1_rail) { random_transfers(1, RAILWIRE_OP_READ, 24, 256 * 1024); }
Test(verbs_railset, read_striped_2_rails) { random_transfers(2, RAILWIRE_OP_READ, 24, 512 * 1024); }
Test(verbs_railset, read_striped_4_rails) { random_transfers(4, RAILWIRE_OP_READ, 24, 512 * 1024); }
Test(verbs_railset, write_striped_1_rail) { random_transfers(1, RAILWIRE_OP_WRITE, 24, 128 * 1024); }
Test(verbs_railset, write_striped_2_rails) { random_transfers(2, RAILWIRE_OP_WRITE, 16, 256 * 1024); }
Test(verbs_railset, write_striped_4_rails) { random_transfers(4, RAILWIRE_OP_WRITE, 16, 256 * 1024); }

Test(verbs_railset, large_transfer_uses_every_rail)
{
    struct rt_env e;
    size_t len = 3 * MiB;
    rt_up(&e, RAILWIRE_DIALECT_RO, 2, 4 * MiB, 1, 0);
    unsigned char *local = aligned_alloc(4096, len);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(e.rs, local, len, &mr), 0);
    cr_assert_eq(railwire_read(e.rs, mr, local, len, 0, 4096, 60000), 0);
    cr_assert(memcmp(local, e.mem + 4096, len) == 0);
    railwire_rail_stats st[2];
    cr_assert_eq(railwire_railset_stats(e.rs, st, 2, sizeof(*st)), 2);
    cr_assert_gt(st[0].bytes_read, 0, "rail 0 carried nothing");
    cr_assert_gt(st[1].bytes_read, 0, "rail 1 carried nothing");
    railwire_mr_deregister(mr);
    free(local);
    rt_down(&e);
}

Test(verbs_railset, write_into_ro_layer_is_remote_access)
{
    struct rt_env e;
    size_t len = 8192;
    rt_up(&e, RAILWIRE_DIALECT_RO, 1, 1 * MiB, 2, 0);
    unsigned char *local = aligned_alloc(4096, len);
    unsigned char *before = malloc(1 * MiB);
    memcpy(before, e.mem, 1 * MiB);
    memset(local, 0x5a, len);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(e.rs, local, len, &mr), 0);
    int rc = railwire_write(e.rs, mr, local, len, 1, 0, 30000);
    cr_assert_eq(rc, RAILWIRE_E_REMOTE_ACCESS, "got %s (%d)", railwire_error_class(rc), rc);
    cr_assert(memcmp(before, e.mem, 1 * MiB) == 0, "the RO layers were modified");
    railwire_mr_deregister(mr);
    free(local);
    free(before);
    rt_down(&e);
}

/* A 1-rail railset whose QP the device (here: the test) moves to the
 * error state mid-run: the rail dies, heals through a new session, and
 * every transfer completes with the right bytes. */
Test(verbs_railset, one_rail_qp_in_error_mid_run_loses_nothing)
{
    enum { N = 48 };
    const size_t chunk = 256 * 1024;
    struct rt_env e;
    rt_up(&e, RAILWIRE_DIALECT_RW, 1, N * chunk, 1, 8000);
    unsigned char *local = aligned_alloc(4096, N * chunk);
    cr_assert(local);
    memset(local, 0, N * chunk);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(e.rs, local, N * chunk, &mr), 0);
    railwire_op ops[N];
    railwire_handle hs[N];
    for (unsigned i = 0; i < N; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = local + i * chunk,
                               .length = chunk, .remote_offset = i * chunk, .user_data = i};
    cr_assert_eq(railwire_submit_batch(e.rs, ops, N, hs), N);
    railwire_completion c[N];
    int done = 0;
    int64_t deadline = rw_now_ms() + 60000;
    while (done < 2 && rw_now_ms() < deadline) {
        int k = railwire_poll(e.rs, c + done, N - done);
        cr_assert(k >= 0);
        done += k;
    }
    struct rw_vep *ve = rw_container_of(rw_test_rail_ep(e.rs, 0), struct rw_vep, base);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
    cr_assert_eq(ibv_modify_qp(ve->qp, &a, IBV_QP_STATE), 0);
    while (done < N && rw_now_ms() < deadline + 60000) {
        int k = railwire_wait(e.rs, c + done, N - done, 5000);
        if (k == RAILWIRE_E_TIMEOUT)
            continue;
        cr_assert(k > 0, "wait: %s", railwire_strerror(k));
        done += k;
    }
    cr_assert_eq(done, N, "only %d of %d transfers completed", done, N);
    for (int j = 0; j < N; j++)
        cr_assert_eq(c[j].status, 0, "transfer %llu failed: %s", (unsigned long long)c[j].user_data,
                     railwire_strerror(c[j].status));
    cr_assert(memcmp(local, e.mem, N * chunk) == 0, "the bytes differ after the heal");
    railwire_rail_stats st;
    cr_assert_eq(railwire_railset_stats(e.rs, &st, 1, sizeof(st)), 1);
    cr_assert_eq(st.state, RAILWIRE_RAIL_UP);
    cr_assert_geq(st.heals, 1, "the rail never went down and healed");
    cr_log_info("QP in ERR: %llu heal(s), session %u, %llu slice(s) re-issued",
                (unsigned long long)st.heals, st.session, (unsigned long long)st.reissued);
    railwire_mr_deregister(mr);
    free(local);
    rt_down(&e);
}
