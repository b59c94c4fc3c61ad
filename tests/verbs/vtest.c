/* SPDX-License-Identifier: MIT */
#include "vtest.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/time.h"
#include "verbs/verbs.h"

void vt_require_devices(void)
{
    if (!rw_verbs_available())
        cr_skip_test("no active RDMA port on this machine (the soft-RoCE VM runs these: ci/verbs-vm.sh)");
}

size_t vt_devs(char side, char out[][64], size_t max)
{
    const char *env = getenv(side == 'A' ? "RAILWIRE_TEST_DEVS_A" : "RAILWIRE_TEST_DEVS_B");
    struct rw_devspec s[VT_MAX_DEVS];
    int n;

    if (env && *env)
        n = rw_devspec_parse(env, s, VT_MAX_DEVS);
    else
        n = rw_verbs_port_list(s, 1);
    if (n <= 0)
        return 0;
    size_t k = (size_t)n < max ? (size_t)n : max;
    for (size_t i = 0; i < k; i++) {
        if (s[i].port)
            snprintf(out[i], 64, "%.50s:%u", s[i].dev, s[i].port);
        else
            snprintf(out[i], 64, "%.60s", s[i].dev);
    }
    return k;
}

int vt_gid_index(void)
{
    const char *g = getenv("RAILWIRE_TEST_GID_INDEX");
    return g && *g ? atoi(g) : -1;
}

int vt_open(char side, unsigned i, enum rw_role role, struct rw_domain **out)
{
    char devs[VT_MAX_DEVS][64];
    size_t n = vt_devs(side, devs, VT_MAX_DEVS);
    cr_assert(n > 0, "no devices for side %c", side);
    struct rw_domain_cfg cfg = {
        .role = role,
        .device = devs[i % n],
        .gid_index = vt_gid_index(),
    };
    return rw_verbs_ops.domain_open(&cfg, out);
}

int vt_rail_up(unsigned i, unsigned depth, struct vt_rail *r)
{
    struct rw_ep_cfg ecfg = {.depth = depth};
    int rc;

    memset(r, 0, sizeof(*r));
    if ((rc = vt_open('A', i, RW_ROLE_CLIENT, &r->cd)))
        return rc;
    if ((rc = vt_open('B', i, RW_ROLE_SERVER, &r->sd)))
        return rc;
    if ((rc = rw_verbs_ops.ep_create(r->cd, &ecfg, &r->cep)))
        return rc;
    if ((rc = rw_verbs_ops.ep_create(r->sd, &ecfg, &r->sep)))
        return rc;
    if ((rc = rw_verbs_ops.ep_connect(r->sep, &r->cep->local, 5000)))
        return rc;
    return rw_verbs_ops.ep_connect(r->cep, &r->sep->local, 5000);
}

void vt_rail_down(struct vt_rail *r)
{
    if (r->cep)
        rw_verbs_ops.ep_destroy(r->cep);
    if (r->sep)
        rw_verbs_ops.ep_destroy(r->sep);
    if (r->cd)
        rw_verbs_ops.domain_close(r->cd);
    if (r->sd)
        rw_verbs_ops.domain_close(r->sd);
    memset(r, 0, sizeof(*r));
}

int vt_collect(struct rw_ep *ep, struct rw_wc *wcs, int want, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    int got = 0;

    while (got < want && rw_now_ms() < deadline) {
        int n = rw_verbs_ops.ep_poll(ep, wcs + got, want - got);
        cr_assert(n >= 0, "ep_poll failed: %d", n);
        got += n;
        if (n == 0) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
    return got;
}

void vt_pattern(unsigned char *buf, size_t len, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)x;
    }
}
