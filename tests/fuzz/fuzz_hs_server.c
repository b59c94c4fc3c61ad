/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the server handshake state machine.
 * Input: flags (dialect, reject, refuse, layer count) | chunk seed | the
 * client's bytes.  The outcome must be the one-shot decoder's and the
 * emitted bytes the encoders'. */
#include "fuzz_common.h"

FUZZ_QUIET_INIT

static ssize_t feed(struct rw_hs_server *s, struct chunker *ch, const uint8_t *buf, size_t len,
                    size_t *used)
{
    *used = 0;
    while (s->state == RW_HS_RECV && *used < len) {
        size_t n = chunker_next(ch, len - *used);
        ssize_t rc = rw_hs_server_feed(s, buf + *used, n);
        if (rc < 0) {
            FUZZ_CHECK(s->state == RW_HS_FAILED && s->error == rc);
            return rc;
        }
        FUZZ_CHECK((size_t)rc == n || s->state != RW_HS_RECV);
        FUZZ_CHECK(s->rx_cap <= rw_frame_max_size(RW_FRAME_CLIENT_IDS));
        *used += (size_t)rc;
    }
    return 0;
}

static void drain(struct rw_hs_server *s, struct chunker *ch, const uint8_t *expect, size_t len)
{
    const uint8_t *out;
    size_t k = rw_hs_server_pending(s, &out);
    FUZZ_CHECK(k == len && memcmp(out, expect, len) == 0);
    while (k) {
        size_t n = chunker_next(ch, k);
        rw_hs_server_sent(s, n);
        k -= n;
        FUZZ_CHECK(rw_hs_server_pending(s, &out) == k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rw_qp_id ref[RW_MAX_RW_RAILS];
    static struct rw_mr_desc layers[RW_MAX_RO_RAILS * 3];
    static uint8_t expect[1 + RW_MAX_RW_RAILS * RW_RW_PARAMS_SIZE + 8 * RW_RO_PARAMS_SIZE(3)];
    struct rw_ro_params ro[RW_MAX_RO_RAILS];
    static struct rw_rw_params rw[RW_MAX_RW_RAILS];
    enum railwire_dialect d;
    struct rw_hs_server s;
    struct chunker ch;
    const uint8_t *p;
    size_t len, used;
    ssize_t rc, one, elen;
    unsigned n;
    int flags;

    if (size < 2)
        return 0;
    flags = data[0];
    d = flags & 1 ? RAILWIRE_DIALECT_RW : RAILWIRE_DIALECT_RO;
    chunker_init(&ch, data[1]);
    p = data + 2;
    len = size - 2;

    FUZZ_CHECK(rw_hs_server_init(&s, d) == 0);
    FUZZ_CHECK(rw_hs_server_need(&s) == 1);
    rc = feed(&s, &ch, p, len, &used);
    FUZZ_CHECK(rc == 0);
    if (len == 0) {
        FUZZ_CHECK(rw_hs_server_eof(&s) == RAILWIRE_E_TRUNCATED);
        goto out;
    }
    FUZZ_CHECK(used == 1 && s.state == RW_HS_NEED_PARAMS && s.n_rails == p[0]);
    n = p[0];
    FUZZ_CHECK(rw_hs_server_decide(&s, 1) == RAILWIRE_E_STATE);
    if (flags & 2) {
        FUZZ_CHECK(rw_hs_server_reject(&s) == 0 && s.state == RW_HS_REJECTED);
        FUZZ_CHECK(rw_hs_server_pending(&s, &(const uint8_t *){NULL}) == 0);
        FUZZ_CHECK(rw_hs_server_eof(&s) == 0);
        goto out;
    }
    if (d == RAILWIRE_DIALECT_RO) {
        uint32_t nl = 1 + (uint32_t)((flags >> 3) % 3);
        for (unsigned i = 0; i < RW_MAX_RO_RAILS; i++) {
            memset(&ro[i].qp, (int)i, sizeof(ro[i].qp));
            ro[i].n_layers = nl;
            ro[i].layers = layers + i * 3;
            for (uint32_t l = 0; l < nl; l++)
                ro[i].layers[l] = (struct rw_mr_desc){0x1000u * (i + 1) + l, i ^ l};
        }
        rc = rw_hs_server_set_ro_params(&s, ro, n);
        if (n == 0 || n > RW_MAX_RO_RAILS) {
            FUZZ_CHECK(rc == RAILWIRE_E_INVALID && s.state == RW_HS_NEED_PARAMS);
            FUZZ_CHECK(rw_hs_server_reject(&s) == 0);
            goto out;
        }
        elen = rw_encode_ro_reply(expect, sizeof(expect), ro, n);
    } else {
        for (unsigned i = 0; i < n; i++) {
            memset(&rw[i].qp, (int)i, sizeof(rw[i].qp));
            rw[i].arena = (struct rw_mr_desc){0x10000u * i, i};
        }
        rc = rw_hs_server_set_rw_params(&s, rw, n);
        elen = rw_encode_rw_reply(expect, sizeof(expect), rw, n);
    }
    FUZZ_CHECK(rc == 0 && elen > 0 && s.state == RW_HS_SEND);
    drain(&s, &ch, expect, (size_t)elen);
    FUZZ_CHECK(s.state == RW_HS_RECV);

    p++;
    len--;
    one = rw_decode_client_ids(p, len, n, ref);
    rc = feed(&s, &ch, p, len, &used);
    if (one < 0 && one != RAILWIRE_E_NEED_MORE) {
        FUZZ_CHECK(rc == one && one == RAILWIRE_E_RAIL_COUNT_MISMATCH);
        goto out;
    }
    FUZZ_CHECK(rc == 0);
    if (one == RAILWIRE_E_NEED_MORE) {
        FUZZ_CHECK(used == len && s.state == RW_HS_RECV);
        FUZZ_CHECK(rw_hs_server_eof(&s) == RAILWIRE_E_TRUNCATED);
        goto out;
    }
    FUZZ_CHECK(used == (size_t)one && s.state == RW_HS_NEED_DECISION);
    FUZZ_CHECK(memcmp(ref, s.ids, n * sizeof(ref[0])) == 0);
    FUZZ_CHECK(rw_hs_server_decide(&s, !(flags & 4)) == 0);
    expect[0] = flags & 4 ? RW_STATUS_ERR : RW_STATUS_OK;
    drain(&s, &ch, expect, 1);
    FUZZ_CHECK(s.state == RW_HS_DONE && rw_hs_server_eof(&s) == 0);
out:
    rw_hs_server_fini(&s);
    return 0;
}
