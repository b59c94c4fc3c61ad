/* SPDX-License-Identifier: MIT */
/* A rail's link taken down mid-run (`ip link set NETDEV down`): every
 * transfer still completes with the right bytes on the surviving rail, and
 * the dead rail is reported down.
 *
 * Runs only when RAILWIRE_TEST_LINKDOWN_NETDEV names the netdev under rail
 * RAILWIRE_TEST_LINKDOWN_RAIL (default 1) of side A: it really takes that
 * link down, so it is meant for the throw-away soft-RoCE VM
 * (ci/verbs-vm.sh).  Skips otherwise. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/time.h"
#include "rsetup.h"
#include "vtest.h"

#define MiB (1024u * 1024u)

TestSuite(verbs_linkdown, .init = vt_require_devices, .timeout = 300);

static int run(const char *cmd)
{
    int rc = system(cmd);
    cr_log_info("$ %s -> %d", cmd, rc);
    return rc;
}

Test(verbs_linkdown, rail_link_down_mid_run_loses_nothing)
{
    const char *netdev = getenv("RAILWIRE_TEST_LINKDOWN_NETDEV");
    const char *rail_env = getenv("RAILWIRE_TEST_LINKDOWN_RAIL");
    unsigned dead = rail_env && *rail_env ? (unsigned)atoi(rail_env) : 1;
    if (!netdev || !*netdev)
        cr_skip_test("RAILWIRE_TEST_LINKDOWN_NETDEV is not set (this test takes a link down; "
                     "ci/verbs-vm.sh runs it inside the soft-RoCE VM)");
    cr_assert(strspn(netdev, "abcdefghijklmnopqrstuvwxyz0123456789_-.") == strlen(netdev),
              "odd netdev name '%s'", netdev);

    enum { N = 64 };
    const size_t chunk = 256 * 1024, half = N / 2 * chunk;
    struct rt_env e;
    rt_up(&e, RAILWIRE_DIALECT_RW, 2, 2 * half, 1, 8000);
    unsigned char *local = aligned_alloc(4096, 2 * half);
    cr_assert(local);
    vt_pattern(local, half, 4242);
    memset(local + half, 0, half);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(e.rs, local, 2 * half, &mr), 0);

    /* Interleaved: WRITE chunk k into the arena's first half, READ chunk k
     * of its (pre-filled) second half. */
    railwire_op ops[N];
    railwire_handle hs[N];
    int st[N];
    for (unsigned i = 0; i < N; i++) {
        size_t k = i / 2;
        ops[i] = (railwire_op){
            .opcode = i % 2 ? RAILWIRE_OP_READ : RAILWIRE_OP_WRITE,
            .mr = mr,
            .local = local + (i % 2 ? half : 0) + k * chunk,
            .length = chunk,
            .remote_offset = (i % 2 ? half : 0) + k * chunk,
            .user_data = i,
        };
    }
    cr_assert_eq(railwire_submit_batch(e.rs, ops, N, hs), N);

    /* Let a few finish on both rails, then pull the plug on one. */
    railwire_completion c[N];
    int early = 0;
    int64_t deadline = rw_now_ms() + 60000;
    char seen[N] = {0};
    while (early < 4 && rw_now_ms() < deadline) {
        int k = railwire_poll(e.rs, c + early, N - early);
        cr_assert(k >= 0);
        early += k;
    }
    cr_assert_geq(early, 4);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ip link set %s down", netdev);
    int64_t t_down = rw_now_ms();
    cr_assert_eq(run(cmd), 0, "could not take %s down", netdev);
    for (int j = 0; j < early; j++) {
        unsigned idx = (unsigned)c[j].user_data;
        seen[idx] = 1;
        st[idx] = c[j].status;
    }
    /* The rest, on whatever rail survives. */
    railwire_handle rest[N];
    int rest_st[N];
    unsigned nrest = 0, idx_of[N];
    for (unsigned i = 0; i < N; i++)
        if (!seen[i]) {
            idx_of[nrest] = i;
            rest[nrest++] = hs[i];
        }
    rt_wait_all(&e, rest, rest_st, nrest, 120000);
    int64_t t_all = rw_now_ms();
    for (unsigned j = 0; j < nrest; j++)
        st[idx_of[j]] = rest_st[j];
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(st[i], 0, "transfer %u failed after the link went down: %s", i,
                     railwire_strerror(st[i]));
    cr_assert(memcmp(e.mem, local, half) == 0, "WRITEs: the arena differs from what was sent");
    cr_assert(memcmp(e.mem + half, local + half, half) == 0, "READs: the bytes differ");

    railwire_rail_stats rs[2];
    cr_assert_eq(railwire_railset_stats(e.rs, rs, 2, sizeof(*rs)), 2);
    cr_log_info("after %s down: rail %u %s (%s), reissued %llu; rail %u %s; all done %lld ms "
                "after the link went down", netdev, dead,
                rs[dead].state == RAILWIRE_RAIL_DOWN ? "DOWN" : "UP",
                railwire_error_class(rs[dead].down_reason), (unsigned long long)rs[dead].reissued,
                1 - dead, rs[1 - dead].state == RAILWIRE_RAIL_DOWN ? "DOWN" : "UP",
                (long long)(t_all - t_down));
    cr_assert_eq(rs[1 - dead].state, RAILWIRE_RAIL_UP, "the surviving rail went down too");
    /* Rail `dead` is down if it still had work when the link went; it must
     * not have reported success for anything after that (checked above by
     * the bytes), so only its state is informative here. */
    if (rs[dead].state == RAILWIRE_RAIL_DOWN)
        cr_assert_neq(rs[dead].down_reason, 0);

    /* One more transfer after the failure: it must take the live rail. */
    memset(local + half, 0, chunk);
    cr_assert_eq(railwire_read(e.rs, mr, local + half, chunk, 0, half, 30000), 0);
    cr_assert(memcmp(e.mem + half, local + half, chunk) == 0);

    /* The link comes back: the rail heals (a new session, proved by its
     * probe READ) and carries data again. */
    snprintf(cmd, sizeof(cmd), "ip link set %s up", netdev);
    int64_t t_up = rw_now_ms();
    cr_assert_eq(run(cmd), 0, "could not bring %s back up", netdev);
    int back = 0;
    while (!back && rw_now_ms() - t_up < 120000) {
        memset(local + half, 0, chunk);
        cr_assert_eq(railwire_read(e.rs, mr, local + half, chunk, 0, half, 30000), 0);
        cr_assert(memcmp(e.mem + half, local + half, chunk) == 0);
        cr_assert_eq(railwire_railset_stats(e.rs, rs, 2, sizeof(*rs)), 2);
        back = rs[dead].state == RAILWIRE_RAIL_UP;
    }
    cr_assert(back, "rail %u did not come back within 120 s of %s going up", dead, netdev);
    cr_log_info("rail %u healed %lld ms after %s went up (%llu heal(s), %llu attempt(s), session %u)",
                dead, (long long)(rw_now_ms() - t_up), netdev, (unsigned long long)rs[dead].heals,
                (unsigned long long)rs[dead].heal_attempts, rs[dead].session);
    uint64_t before = rs[dead].bytes_read + rs[dead].bytes_written;
    for (int k = 0; k < 8; k++) {
        memset(local + half, 0, half);
        cr_assert_eq(railwire_read(e.rs, mr, local + half, half, 0, half, 60000), 0);
        cr_assert(memcmp(e.mem + half, local + half, half) == 0, "READ after the heal differs");
    }
    cr_assert_eq(railwire_railset_stats(e.rs, rs, 2, sizeof(*rs)), 2);
    cr_assert_gt(rs[dead].bytes_read + rs[dead].bytes_written, before,
                 "the healed rail carries no data");
    railwire_mr_deregister(mr);
    free(local);
    rt_down(&e);
}
