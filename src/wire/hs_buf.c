/* SPDX-License-Identifier: MIT */
#include "wire/hs_buf.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static int reserve(const struct rw_frame *f, uint8_t **rx, size_t *rx_cap)
{
    size_t max = rw_frame_max_size(f->kind);
    size_t cap = *rx_cap ? *rx_cap : 64;
    uint8_t *p;

    if (f->need <= *rx_cap)
        return 0;
    while (cap < f->need)
        cap *= 2;
    if (cap > max)
        cap = max; /* framing never needs more than the largest legal message */
    p = realloc(*rx, cap);
    if (!p) {
        rw_err("handshake: out of memory for a %zu-byte reassembly buffer", cap);
        return RAILWIRE_E_NOMEM;
    }
    *rx = p;
    *rx_cap = cap;
    return 0;
}

ssize_t rw_hs_reassemble(struct rw_frame *f, uint8_t **rx, size_t *rx_len, size_t *rx_cap,
                         const uint8_t *buf, size_t len, int *complete)
{
    size_t used = 0;

    *complete = 0;
    for (;;) {
        ssize_t rc = rw_frame_scan(f, *rx, *rx_len);
        size_t take;

        if (rc > 0) {
            *complete = 1;
            return (ssize_t)used;
        }
        if (rc != RAILWIRE_E_NEED_MORE)
            return rc;
        if (used == len)
            return (ssize_t)used;
        rc = reserve(f, rx, rx_cap);
        if (rc < 0)
            return rc;
        take = f->need - *rx_len;
        if (take > len - used)
            take = len - used;
        memcpy(*rx + *rx_len, buf + used, take);
        *rx_len += take;
        used += take;
    }
}

uint8_t *rw_hs_tx_alloc(uint8_t **tx, size_t *tx_len, size_t *tx_off, size_t size)
{
    free(*tx);
    *tx_len = *tx_off = 0;
    *tx = malloc(size);
    if (!*tx) {
        rw_err("handshake: out of memory for a %zu-byte message", size);
        return NULL;
    }
    *tx_len = size;
    return *tx;
}

int rw_hs_tx_sent(uint8_t **tx, size_t *tx_len, size_t *tx_off, size_t n)
{
    size_t left = *tx_len - *tx_off;

    *tx_off += n < left ? n : left;
    if (*tx_off < *tx_len)
        return 0;
    free(*tx);
    *tx = NULL;
    *tx_len = *tx_off = 0;
    return 1;
}
