/* SPDX-License-Identifier: MIT */
/* The body shared by the RO and RW reply decoder harnesses. */
#ifndef RW_FUZZ_REPLY_H
#define RW_FUZZ_REPLY_H

#include "fuzz_common.h"

typedef ssize_t (*reply_decoder)(const uint8_t *, size_t, unsigned, struct rw_server_reply *);

/* Input: want | message bytes.  A decode either fails with a class (or
 * NEED_MORE) leaving the reply zeroed, or consumes a prefix that re-encodes
 * to exactly those bytes and whose own strict prefix needs more. */
static inline void fuzz_reply(const uint8_t *data, size_t size, reply_decoder dec, int ro)
{
    struct rw_server_reply r, r2;
    unsigned want;
    ssize_t n, m;
    uint8_t *out;

    if (size < 1)
        return;
    want = data[0];
    data++;
    size--;
    n = dec(data, size, want, &r);
    if (n < 0) {
        FUZZ_CHECK(n == RAILWIRE_E_NEED_MORE || fuzz_is_class(n));
        FUZZ_CHECK(n != RAILWIRE_E_PEER_REJECTED && n != RAILWIRE_E_TRUNCATED &&
                   n != RAILWIRE_E_REFUSED);
        FUZZ_CHECK(r.ro == NULL && r.rw == NULL && r.n_rails == 0);
        if (ro && n == RAILWIRE_E_NEED_MORE)
            FUZZ_CHECK(size == 0 || (data[0] >= 1 && data[0] <= RW_MAX_RO_RAILS && data[0] == want));
        return;
    }
    FUZZ_CHECK((size_t)n <= size);
    FUZZ_CHECK(r.n_rails == want && r.n_rails == data[0]);
    FUZZ_CHECK(ro ? (r.dialect == RAILWIRE_DIALECT_RO && r.rw == NULL)
                  : (r.dialect == RAILWIRE_DIALECT_RW && r.ro == NULL));
    if (ro)
        FUZZ_CHECK(r.n_rails >= 1 && r.n_rails <= RW_MAX_RO_RAILS);
    m = fuzz_encode_reply(&r, &out);
    FUZZ_CHECK(m == n);
    FUZZ_CHECK(memcmp(out, data, (size_t)n) == 0);
    free(out);
    /* One byte short is a valid prefix: the decoder wants more. */
    FUZZ_CHECK(dec(data, (size_t)n - 1, want, &r2) == RAILWIRE_E_NEED_MORE);
    rw_server_reply_free(&r);
    FUZZ_CHECK(r.ro == NULL && r.rw == NULL);
}

#endif
