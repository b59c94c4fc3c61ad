/* SPDX-License-Identifier: MIT */
/* The verbs transport against real devices (soft-RoCE in CI): QP bring-up,
 * READ/WRITE striped over 1, 2 and 4 rails across the devices of each side,
 * remote-access errors, kill/drain, the MR cache, completion-channel wakeups,
 * retry-exceeded.  Every test skips where no RDMA device exists. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire/error.h>

#include "verbs/verbs.h"
#include "verbs/verbs_int.h"
#include "vtest.h"

#define MiB (1024u * 1024u)

TestSuite(verbs_transport, .init = vt_require_devices, .timeout = 120);

Test(verbs_transport, qp_bringup_between_two_devices)
{
    struct vt_rail r;
    int rc = vt_rail_up(0, 16, &r);
    cr_assert_eq(rc, 0, "rail up: %s", railwire_strerror(rc));
    cr_assert_neq(r.cep->local.qpn, 0);
    cr_assert_neq(r.sep->local.qpn, 0);
    cr_assert_lt(r.cep->local.psn, 1u << 24);
    cr_assert_lt(r.sep->local.psn, 1u << 24);
    static const uint8_t zero[16];
    cr_assert(memcmp(r.cep->local.gid, zero, 16) != 0, "client GID is empty");
    cr_assert(r.cd->gbps > 0);
    cr_assert(strchr(r.cd->name, ':'), "domain name '%s' is not dev:port", r.cd->name);
    cr_assert_eq(r.cd->ops, &rw_verbs_ops);
    vt_rail_down(&r);
}

/* One striped transfer of `len` bytes over n rails, slices round-robin. */
static void striped(enum rw_opcode op, unsigned n_rails, size_t len, size_t slice)
{
    struct vt_rail rails[4];
    struct rw_mr *cmr[4], *smr[4];
    unsigned char *client = malloc(len), *server = malloc(len), *want = malloc(len);
    size_t n_slices = (len + slice - 1) / slice;
    int rc;

    cr_assert(client && server && want);
    vt_pattern(want, len, 7 + n_rails + (unsigned)op);
    memset(op == RW_OP_WRITE ? server : client, 0, len);
    memcpy(op == RW_OP_WRITE ? client : server, want, len);

    for (unsigned i = 0; i < n_rails; i++) {
        rc = vt_rail_up(i, (unsigned)n_slices, &rails[i]);
        cr_assert_eq(rc, 0, "rail %u up: %s", i, railwire_strerror(rc));
        rc = rw_verbs_ops.mr_reg(rails[i].cd, client, len, RW_ACCESS_LOCAL, &cmr[i]);
        cr_assert_eq(rc, 0);
        rc = rw_verbs_ops.mr_reg(rails[i].sd, server, len,
                                 RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &smr[i]);
        cr_assert_eq(rc, 0);
        /* Published bases are opaque: a random iova, not the address, with
         * the offset within a 2 MiB page kept. */
        cr_assert_neq(smr[i]->remote_base, (uint64_t)(uintptr_t)server);
        cr_assert_eq(smr[i]->remote_base & 0x1fffff, (uint64_t)(uintptr_t)server & 0x1fffff);
        cr_assert_eq(cmr[i]->remote_base, (uint64_t)(uintptr_t)client, "local MRs keep the VA");
    }
    int per_rail[4] = {0};
    for (size_t s = 0; s < n_slices; s++) {
        unsigned i = (unsigned)(s % n_rails);
        size_t off = s * slice, l = len - off < slice ? len - off : slice;
        struct rw_wr wr = {
            .wr_id = s, .opcode = op, .local = client + off, .mr = cmr[i], .length = (uint32_t)l,
            .remote_addr = smr[i]->remote_base + off, .rkey = smr[i]->rkey,
            /* selective signalling: only the last slice of each rail's chain */
            .signaled = s + n_rails >= n_slices,
        };
        cr_assert_eq(rw_verbs_ops.ep_post(rails[i].cep, &wr, 1), 1);
        per_rail[i]++;
    }
    size_t seen = 0;
    for (unsigned i = 0; i < n_rails; i++) {
        struct rw_wc wcs[64];
        int got = vt_collect(rails[i].cep, wcs, per_rail[i], 30000);
        cr_assert_eq(got, per_rail[i], "rail %u: %d of %d completions", i, got, per_rail[i]);
        for (int k = 0; k < got; k++) {
            cr_assert_eq(wcs[k].status, 0, "rail %u slice %llu: %s", i,
                         (unsigned long long)wcs[k].wr_id, railwire_strerror(wcs[k].status));
            cr_assert_eq(wcs[k].wr_id % n_rails, i);
            if (k)
                cr_assert_gt(wcs[k].wr_id, wcs[k - 1].wr_id, "completions out of order");
        }
        seen += (size_t)got;
    }
    cr_assert_eq(seen, n_slices);
    cr_assert(memcmp(op == RW_OP_WRITE ? server : client, want, len) == 0,
              "%s over %u rails: bytes differ", op == RW_OP_WRITE ? "WRITE" : "READ", n_rails);
    for (unsigned i = 0; i < n_rails; i++) {
        rw_verbs_ops.mr_dereg(cmr[i]);
        rw_verbs_ops.mr_dereg(smr[i]);
        vt_rail_down(&rails[i]);
    }
    free(client);
    free(server);
    free(want);
}

Test(verbs_transport, write_striped_1_2_4_rails)
{
    striped(RW_OP_WRITE, 1, 1 * MiB + 123, 64 * 1024);
    striped(RW_OP_WRITE, 2, 1 * MiB + 4567, 64 * 1024);
    striped(RW_OP_WRITE, 4, 1 * MiB + 1, 48 * 1024);
}

Test(verbs_transport, read_striped_1_2_4_rails)
{
    striped(RW_OP_READ, 1, 1 * MiB + 77, 64 * 1024);
    striped(RW_OP_READ, 2, 1 * MiB + 999, 64 * 1024);
    striped(RW_OP_READ, 4, 1 * MiB + 3, 40 * 1024);
}

Test(verbs_transport, write_into_ro_layer_is_remote_access)
{
    struct vt_rail r;
    size_t len = 64 * 1024;
    unsigned char *client = calloc(1, len), *layer = calloc(1, len);
    struct rw_mr *cmr, *smr;
    struct rw_wc wc[2];

    cr_assert_eq(vt_rail_up(0, 8, &r), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.cd, client, len, RW_ACCESS_LOCAL, &cmr), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.sd, layer, len, RW_ACCESS_REMOTE_READ, &smr), 0);
    vt_pattern(layer, len, 3);
    /* READ of the RO layer works ... */
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = client, .mr = cmr,
                       .length = (uint32_t)len, .remote_addr = smr->remote_base,
                       .rkey = smr->rkey, .signaled = 1};
    cr_assert_eq(rw_verbs_ops.ep_post(r.cep, &wr, 1), 1);
    cr_assert_eq(vt_collect(r.cep, wc, 1, 10000), 1);
    cr_assert_eq(wc[0].status, 0);
    cr_assert(memcmp(client, layer, len) == 0);
    /* ... a WRITE into it is refused by the responder. */
    memset(client, 0xab, len);
    wr.wr_id = 2;
    wr.opcode = RW_OP_WRITE;
    cr_assert_eq(rw_verbs_ops.ep_post(r.cep, &wr, 1), 1);
    cr_assert_eq(vt_collect(r.cep, wc, 1, 10000), 1);
    cr_assert_eq(wc[0].wr_id, 2);
    cr_assert_eq(wc[0].status, RAILWIRE_E_REMOTE_ACCESS, "got %s",
                 railwire_error_class(wc[0].status));
    unsigned char *chk = malloc(len);
    vt_pattern(chk, len, 3);
    cr_assert(memcmp(layer, chk, len) == 0, "the RO layer was modified");
    /* A failed QP is a dead ep. */
    cr_assert_eq(rw_verbs_ops.ep_post(r.cep, &wr, 1), RAILWIRE_E_RAIL_DOWN);
    free(chk);
    rw_verbs_ops.mr_dereg(cmr);
    rw_verbs_ops.mr_dereg(smr);
    vt_rail_down(&r);
    free(client);
    free(layer);
}

Test(verbs_transport, kill_reports_every_outstanding_wr)
{
    struct vt_rail r;
    size_t len = 1 * MiB;
    unsigned char *client = calloc(1, len), *server = calloc(1, len);
    struct rw_mr *cmr, *smr;
    enum { N = 16 };
    struct rw_wr wrs[N];
    struct rw_wc wc[N + 1];

    cr_assert_eq(vt_rail_up(0, N, &r), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.cd, client, len, RW_ACCESS_LOCAL, &cmr), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.sd, server, len, RW_ACCESS_REMOTE_READ, &smr), 0);
    for (int i = 0; i < N; i++)
        wrs[i] = (struct rw_wr){.wr_id = 100 + (uint64_t)i, .opcode = RW_OP_READ,
                                .local = client + (size_t)i * (len / N), .mr = cmr,
                                .length = (uint32_t)(len / N),
                                .remote_addr = smr->remote_base + (uint64_t)i * (len / N),
                                .rkey = smr->rkey, .signaled = i == N - 1};
    cr_assert_eq(rw_verbs_ops.ep_post(r.cep, wrs, N), N);
    rw_verbs_ops.ep_kill(r.cep);
    /* Every WR is reported exactly once, in order, as done or rail-down. */
    int got = vt_collect(r.cep, wc, N, 1000);
    cr_assert_eq(got, N);
    int down = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(wc[i].wr_id, 100 + (uint64_t)i);
        cr_assert(wc[i].status == 0 || wc[i].status == RAILWIRE_E_RAIL_DOWN, "status %d",
                  wc[i].status);
        down += wc[i].status != 0;
    }
    cr_assert_eq(rw_verbs_ops.ep_poll(r.cep, wc, N + 1), 0, "extra completions after the drain");
    cr_assert_eq(rw_verbs_ops.ep_post(r.cep, wrs, 1), RAILWIRE_E_RAIL_DOWN);
    cr_log_info("kill: %d of %d WRs flushed", down, N);
    rw_verbs_ops.mr_dereg(cmr);
    rw_verbs_ops.mr_dereg(smr);
    vt_rail_down(&r);
    free(client);
    free(server);
}

Test(verbs_transport, mr_registered_once_per_device)
{
    struct rw_domain *d1, *d2;
    struct rw_mr *m1, *m2, *m3;
    size_t len = 256 * 1024;
    void *buf = calloc(1, len);

    cr_assert_eq(vt_open('B', 0, RW_ROLE_SERVER, &d1), 0);
    cr_assert_eq(vt_open('B', 0, RW_ROLE_SERVER, &d2), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(d1, buf, len, RW_ACCESS_REMOTE_READ, &m1), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(d2, buf, len, RW_ACCESS_REMOTE_READ, &m2), 0);
    cr_assert_eq(m1->rkey, m2->rkey, "same region, same device: one registration");
    cr_assert_eq(m1->lkey, m2->lkey);
    cr_assert_eq(m2->dom, d2);
    cr_assert_eq(rw_verbs_ops.mr_reg(d1, buf, len, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE,
                                     &m3), 0);
    cr_assert_neq(m3->rkey, m1->rkey, "different access needs its own registration");
    rw_verbs_ops.mr_dereg(m1);
    /* The shared registration outlives one user. */
    struct rw_mr *m4;
    cr_assert_eq(rw_verbs_ops.mr_reg(d1, buf, len, RW_ACCESS_REMOTE_READ, &m4), 0);
    cr_assert_eq(m4->rkey, m2->rkey);
    rw_verbs_ops.mr_dereg(m2);
    rw_verbs_ops.mr_dereg(m3);
    rw_verbs_ops.mr_dereg(m4);
    rw_verbs_ops.domain_close(d1);
    rw_verbs_ops.domain_close(d2);
    free(buf);
}

Test(verbs_transport, parallel_registration_on_several_devices)
{
    struct rw_domain *doms[2];
    struct rw_mr *mrs[2];
    char devs[VT_MAX_DEVS][64];
    size_t nd = vt_devs('B', devs, VT_MAX_DEVS);
    size_t len = RW_VERBS_PARALLEL_REG_MIN; /* big enough to take the threaded path */
    void *buf = calloc(1, len);

    cr_assert(buf);
    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(vt_open('B', i, RW_ROLE_SERVER, &doms[i]), 0);
    cr_assert_eq(rw_verbs_mr_reg_multi(doms, 2, buf, len, RW_ACCESS_REMOTE_READ, mrs), 0);
    for (unsigned i = 0; i < 2; i++) {
        cr_assert_eq(mrs[i]->dom, doms[i]);
        cr_assert_eq(mrs[i]->len, len);
    }
    if (nd == 1)
        cr_assert_eq(mrs[0]->rkey, mrs[1]->rkey, "same device: registered once");
    for (unsigned i = 0; i < 2; i++) {
        rw_verbs_ops.mr_dereg(mrs[i]);
        rw_verbs_ops.domain_close(doms[i]);
    }
    free(buf);
}

Test(verbs_transport, completion_channel_wakes_poll)
{
    struct vt_rail r;
    size_t len = 4096;
    unsigned char *client = calloc(1, len), *server = calloc(1, len);
    struct rw_mr *cmr, *smr;
    struct rw_wc wc;

    cr_assert_eq(vt_rail_up(0, 8, &r), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.cd, client, len, RW_ACCESS_LOCAL, &cmr), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.sd, server, len, RW_ACCESS_REMOTE_WRITE, &smr), 0);
    int fd = rw_verbs_ops.ep_wait_fd(r.cep);
    cr_assert_geq(fd, 0);
    cr_assert_eq(rw_verbs_ops.ep_arm(r.cep), 0);
    cr_assert_eq(rw_verbs_ops.ep_poll(r.cep, &wc, 1), 0);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, 0), 0, "fd readable before anything was posted");
    vt_pattern(client, len, 11);
    struct rw_wr wr = {.wr_id = 9, .opcode = RW_OP_WRITE, .local = client, .mr = cmr,
                       .length = (uint32_t)len, .remote_addr = smr->remote_base,
                       .rkey = smr->rkey, .signaled = 1};
    cr_assert_eq(rw_verbs_ops.ep_post(r.cep, &wr, 1), 1);
    cr_assert_eq(poll(&pfd, 1, 10000), 1, "no wakeup within 10 s");
    cr_assert_eq(rw_verbs_ops.ep_arm(r.cep), 0); /* acks the event, clears the fd */
    cr_assert_eq(vt_collect(r.cep, &wc, 1, 5000), 1);
    cr_assert_eq(wc.status, 0);
    cr_assert_eq(wc.byte_len, len);
    cr_assert(memcmp(client, server, len) == 0);
    rw_verbs_ops.mr_dereg(cmr);
    rw_verbs_ops.mr_dereg(smr);
    vt_rail_down(&r);
    free(client);
    free(server);
}

Test(verbs_transport, missing_peer_qp_is_retry_exceeded)
{
    struct rw_domain *cd;
    struct rw_ep *ep;
    struct rw_domain_cfg cfg = {.role = RW_ROLE_CLIENT, .gid_index = vt_gid_index(),
                                .timeout = 8, .retry_cnt = 2};
    char devs[VT_MAX_DEVS][64];
    struct rw_mr *mr;
    struct rw_wc wc;
    unsigned char buf[4096];

    vt_devs('A', devs, VT_MAX_DEVS);
    cfg.device = devs[0];
    cr_assert_eq(rw_verbs_ops.domain_open(&cfg, &cd), 0);
    cr_assert_eq(rw_verbs_ops.ep_create(cd, &(struct rw_ep_cfg){.depth = 4}, &ep), 0);
    /* A server identity whose QP does not exist: the GID of our own peer
     * side's device, a QPN nobody owns. */
    struct vt_rail peer;
    cr_assert_eq(vt_rail_up(0, 4, &peer), 0);
    struct rw_qp_id remote = peer.sep->local;
    remote.qpn = (remote.qpn + 1000) & 0xffffff;
    cr_assert_eq(rw_verbs_ops.ep_connect(ep, &remote, 5000), 0);
    cr_assert_eq(rw_verbs_ops.mr_reg(cd, buf, sizeof(buf), RW_ACCESS_LOCAL, &mr), 0);
    struct rw_wr wr = {.wr_id = 5, .opcode = RW_OP_READ, .local = buf, .mr = mr,
                       .length = sizeof(buf), .remote_addr = 4096, .rkey = 1, .signaled = 1};
    cr_assert_eq(rw_verbs_ops.ep_post(ep, &wr, 1), 1);
    cr_assert_eq(vt_collect(ep, &wc, 1, 60000), 1, "no completion: the retry limit did not fire");
    cr_assert_eq(wc.status, RAILWIRE_E_RETRY_EXCEEDED, "got %s", railwire_error_class(wc.status));
    rw_verbs_ops.mr_dereg(mr);
    rw_verbs_ops.ep_destroy(ep);
    rw_verbs_ops.domain_close(cd);
    vt_rail_down(&peer);
}

Test(verbs_transport, forced_empty_gid_index_is_refused)
{
    struct rw_domain *d;
    char devs[VT_MAX_DEVS][64];
    vt_devs('A', devs, VT_MAX_DEVS);
    struct rw_domain_cfg cfg = {.role = RW_ROLE_CLIENT, .device = devs[0], .gid_index = 4000};
    cr_assert_eq(rw_verbs_ops.domain_open(&cfg, &d), RAILWIRE_E_INVALID);
    cfg.device = "no_such_rdma_device";
    cfg.gid_index = -1;
    cr_assert_eq(rw_verbs_ops.domain_open(&cfg, &d), RAILWIRE_E_NO_DEVICE);
}

/* RTR towards a GID this port cannot reach fails at INIT->RTR with
 * RAILWIRE_E_QP_RTR (the "check the MTU and the GID" error).  Needs an
 * IPv4 address with no route at all, named by RAILWIRE_TEST_UNROUTED_IPV4
 * (the VM script sets one; on a host with a default route nothing is
 * unroutable, so the test skips). */
Test(verbs_transport, unreachable_gid_fails_at_rtr)
{
    const char *ip = getenv("RAILWIRE_TEST_UNROUTED_IPV4");
    if (!ip || !*ip)
        cr_skip_test("RAILWIRE_TEST_UNROUTED_IPV4 is not set");
    struct rw_domain *cd;
    struct rw_ep *ep;
    char devs[VT_MAX_DEVS][64];
    vt_devs('A', devs, VT_MAX_DEVS);
    struct rw_domain_cfg cfg = {.role = RW_ROLE_CLIENT, .device = devs[0],
                                .gid_index = vt_gid_index()};
    cr_assert_eq(rw_verbs_ops.domain_open(&cfg, &cd), 0);
    cr_assert_eq(rw_verbs_ops.ep_create(cd, &(struct rw_ep_cfg){.depth = 4}, &ep), 0);
    struct rw_qp_id remote = {.qpn = 0x123, .psn = 0x456};
    unsigned a, b, c, d;
    cr_assert_eq(sscanf(ip, "%u.%u.%u.%u", &a, &b, &c, &d), 4);
    remote.gid[10] = 0xff;
    remote.gid[11] = 0xff;
    remote.gid[12] = (uint8_t)a;
    remote.gid[13] = (uint8_t)b;
    remote.gid[14] = (uint8_t)c;
    remote.gid[15] = (uint8_t)d;
    int rc = rw_verbs_ops.ep_connect(ep, &remote, 5000);
    cr_assert_eq(rc, RAILWIRE_E_QP_RTR, "got %s (%d)", railwire_error_class(rc), rc);
    cr_assert_str_eq(railwire_error_class(rc), "qp-rtr");
    cr_assert(strstr(railwire_strerror(rc), "MTU") && strstr(railwire_strerror(rc), "GID"));
    struct rw_wr wr = {.length = 1};
    cr_assert_eq(rw_verbs_ops.ep_post(ep, &wr, 1), RAILWIRE_E_RAIL_DOWN, "a failed QP is dead");
    rw_verbs_ops.ep_destroy(ep);
    rw_verbs_ops.domain_close(cd);
}

/* Posts `per_rail` WRITEs of `slice` bytes on each listed rail (rail r's
 * slices land at offset r * per_rail * slice), collects every completion and
 * checks the bytes. */
static void write_on_rails(struct vt_rail *rails, const unsigned *which, unsigned n,
                           unsigned per_rail, size_t slice, unsigned seed)
{
    size_t span = (size_t)6 * per_rail * slice;
    unsigned char *client = malloc(span), *server = calloc(1, span);
    struct rw_mr *cmr[6], *smr[6];

    cr_assert(client && server);
    vt_pattern(client, span, seed);
    for (unsigned k = 0; k < n; k++) {
        struct vt_rail *r = &rails[which[k]];
        cr_assert_eq(rw_verbs_ops.mr_reg(r->cd, client, span, RW_ACCESS_LOCAL, &cmr[k]), 0);
        cr_assert_eq(rw_verbs_ops.mr_reg(r->sd, server, span,
                                         RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &smr[k]),
                     0);
    }
    /* Interleaved across the rails, so several eps have WRs queued at once. */
    for (unsigned s = 0; s < per_rail; s++)
        for (unsigned k = 0; k < n; k++) {
            size_t off = ((size_t)which[k] * per_rail + s) * slice;
            struct rw_wr wr = {
                .wr_id = s, .opcode = RW_OP_WRITE, .local = client + off, .mr = cmr[k],
                .length = (uint32_t)slice, .remote_addr = smr[k]->remote_base + off,
                .rkey = smr[k]->rkey, .signaled = 1,
            };
            cr_assert_eq(rw_verbs_ops.ep_post(rails[which[k]].cep, &wr, 1), 1);
        }
    for (unsigned k = 0; k < n; k++) {
        struct rw_wc wcs[64];
        int got = vt_collect(rails[which[k]].cep, wcs, (int)per_rail, 30000);
        cr_assert_eq(got, (int)per_rail, "rail %u: %d of %u completions", which[k], got, per_rail);
        for (int i = 0; i < got; i++) {
            cr_assert_eq(wcs[i].status, 0, "rail %u: %s", which[k], railwire_strerror(wcs[i].status));
            cr_assert_eq(wcs[i].wr_id, (uint64_t)i, "rail %u: completions out of order", which[k]);
        }
        size_t off = (size_t)which[k] * per_rail * slice;
        cr_assert(memcmp(server + off, client + off, (size_t)per_rail * slice) == 0,
                  "rail %u: bytes differ", which[k]);
    }
    for (unsigned k = 0; k < n; k++) {
        rw_verbs_ops.mr_dereg(cmr[k]);
        rw_verbs_ops.mr_dereg(smr[k]);
    }
    free(client);
    free(server);
}

/* Poster mode (software providers) shares a pool of threads among the
 * process's client eps: six rails on a cap of two threads post through two
 * threads, every WR of every rail arrives in order, rails leave in any order
 * while the others keep posting, and the last one out stops the threads. */
Test(verbs_transport, poster_threads_are_shared_and_bounded)
{
    struct vt_rail rails[6];
    int rc;

    setenv("RAILWIRE_VERBS_POST_THREADS", "2", 1);
    for (unsigned i = 0; i < 6; i++) {
        rc = vt_rail_up(i, 32, &rails[i]);
        cr_assert_eq(rc, 0, "rail %u up: %s", i, railwire_strerror(rc));
    }
    unsetenv("RAILWIRE_VERBS_POST_THREADS");
    int pooled = rw_container_of(rails[0].cd, struct rw_vdom, base)->post_thread;
    if (pooled)
        cr_assert_eq(rw_vposter_threads(), 2, "6 eps on a cap of 2: %u poster threads",
                     rw_vposter_threads());
    else
        cr_assert_eq(rw_vposter_threads(), 0, "posting inline, yet %u poster threads",
                     rw_vposter_threads());

    static const unsigned all[6] = {0, 1, 2, 3, 4, 5};
    write_on_rails(rails, all, 6, 24, 32 * 1024, 11);

    vt_rail_down(&rails[1]);
    vt_rail_down(&rails[4]);
    vt_rail_down(&rails[0]);
    cr_assert_leq(rw_vposter_threads(), 2);
    if (pooled)
        cr_assert_geq(rw_vposter_threads(), 1, "rails 2, 3, 5 are left without a poster");
    static const unsigned rest[3] = {2, 3, 5};
    write_on_rails(rails, rest, 3, 24, 32 * 1024, 12);

    vt_rail_down(&rails[5]);
    vt_rail_down(&rails[2]);
    vt_rail_down(&rails[3]);
    cr_assert_eq(rw_vposter_threads(), 0, "%u poster threads outlive their eps",
                 rw_vposter_threads());
}
