/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the client handshake state machine.
 * Input: dialect bit | n_rails | chunk seed | the server's bytes.
 * The server's bytes are fed in pseudo-random pieces; the outcome must be
 * the one-shot decoder's (same records, same class, same bytes used), the
 * emitted bytes must be the encoders', and buffers stay bounded. */
#include "fuzz_common.h"

FUZZ_QUIET_INIT

static void sample_ids(struct rw_qp_id *ids, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        ids[i].qpn = 0x100 + i;
        ids[i].psn = 0xabcdef ^ i;
        memset(ids[i].gid, (int)i, sizeof(ids[i].gid));
    }
}

/* Feeds until the SM leaves RECV or the input ends; returns the feed error
 * or 0, and the bytes used in *used. */
static ssize_t feed(struct rw_hs_client *c, struct chunker *ch, const uint8_t *buf, size_t len,
                    size_t *used)
{
    size_t max = c->dialect == RAILWIRE_DIALECT_RO ? rw_frame_max_size(RW_FRAME_RO_REPLY)
                                                   : rw_frame_max_size(RW_FRAME_RW_REPLY);
    *used = 0;
    while (c->state == RW_HS_RECV && *used < len) {
        size_t n = chunker_next(ch, len - *used);
        size_t need = rw_hs_client_need(c);
        ssize_t rc = rw_hs_client_feed(c, buf + *used, n);
        if (rc < 0) {
            FUZZ_CHECK(c->state == RW_HS_FAILED && c->error == rc);
            return rc;
        }
        FUZZ_CHECK((size_t)rc <= n);
        FUZZ_CHECK(need >= 1);
        FUZZ_CHECK((size_t)rc == n || c->state != RW_HS_RECV);
        FUZZ_CHECK(c->rx_cap <= max);
        *used += (size_t)rc;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rw_qp_id ids[RW_MAX_RW_RAILS];
    enum railwire_dialect d;
    struct rw_hs_client c;
    struct rw_server_reply ref;
    struct chunker ch;
    const uint8_t *p;
    unsigned n;
    size_t used, len;
    ssize_t one, rc;
    int init;

    if (size < 3)
        return 0;
    d = data[0] & 1 ? RAILWIRE_DIALECT_RW : RAILWIRE_DIALECT_RO;
    n = data[1];
    chunker_init(&ch, data[2]);
    p = data + 3;
    len = size - 3;

    init = rw_hs_client_init(&c, d, n);
    if (n == 0 || (d == RAILWIRE_DIALECT_RO && n > RW_MAX_RO_RAILS)) {
        FUZZ_CHECK(init == RAILWIRE_E_INVALID);
        rw_hs_client_fini(&c);
        return 0;
    }
    FUZZ_CHECK(init == 0);
    {
        const uint8_t *req;
        FUZZ_CHECK(rw_hs_client_pending(&c, &req) == 1 && req[0] == n);
        rw_hs_client_sent(&c, 1);
    }
    FUZZ_CHECK(c.state == RW_HS_RECV);

    one = d == RAILWIRE_DIALECT_RO ? rw_decode_ro_reply(p, len, n, &ref)
                                   : rw_decode_rw_reply(p, len, n, &ref);
    rc = feed(&c, &ch, p, len, &used);
    if (one < 0 && one != RAILWIRE_E_NEED_MORE) {
        FUZZ_CHECK(rc == one);
        goto out;
    }
    FUZZ_CHECK(rc == 0);
    if (one == RAILWIRE_E_NEED_MORE) {
        FUZZ_CHECK(used == len && c.state == RW_HS_RECV);
        FUZZ_CHECK(rw_hs_client_eof(&c) == rw_eof_error(1, len));
        FUZZ_CHECK(c.state == RW_HS_FAILED);
        goto out;
    }
    /* The reply is complete: same bytes used, same records. */
    FUZZ_CHECK(used == (size_t)one && c.state == RW_HS_NEED_LOCAL);
    {
        uint8_t *a, *b;
        ssize_t la = fuzz_encode_reply(&ref, &a), lb = fuzz_encode_reply(rw_hs_client_reply(&c), &b);
        FUZZ_CHECK(la == one && lb == one && memcmp(a, b, (size_t)la) == 0);
        FUZZ_CHECK(memcmp(a, p, (size_t)la) == 0);
        free(a);
        free(b);
    }
    rw_server_reply_free(&ref);
    sample_ids(ids, n);
    FUZZ_CHECK(rw_hs_client_set_local(&c, ids, n) == 0);
    {
        uint8_t expect[1 + RW_MAX_RW_RAILS * RW_QP_ID_SIZE];
        const uint8_t *out;
        size_t k = rw_hs_client_pending(&c, &out);
        FUZZ_CHECK(rw_encode_client_ids(expect, sizeof(expect), ids, n) == (ssize_t)k);
        FUZZ_CHECK(memcmp(expect, out, k) == 0);
        while (k) {
            size_t s = chunker_next(&ch, k);
            rw_hs_client_sent(&c, s);
            k -= s;
        }
    }
    FUZZ_CHECK(c.state == RW_HS_RECV && rw_hs_client_need(&c) == 1);
    p += used;
    len -= used;
    rc = feed(&c, &ch, p, len, &used);
    if (len == 0) {
        FUZZ_CHECK(rw_hs_client_eof(&c) == RAILWIRE_E_TRUNCATED);
    } else if (p[0] == RW_STATUS_OK) {
        FUZZ_CHECK(rc == 0 && used == 1 && c.state == RW_HS_DONE);
        FUZZ_CHECK(rw_hs_client_eof(&c) == 0);
    } else {
        FUZZ_CHECK(rc == RAILWIRE_E_REFUSED && c.refused_status == p[0]);
    }
out:
    rw_server_reply_free(&ref);
    rw_hs_client_fini(&c);
    return 0;
}
