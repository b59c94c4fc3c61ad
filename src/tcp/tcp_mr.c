/* SPDX-License-Identifier: MIT */
/* Memory registration.  Nothing is pinned: a tcp "MR" is a descriptor the
 * server checks accesses against.  remote_base is opaque: a random base per
 * region (not its virtual address, which would give the server's address
 * layout away), translated back by the server (tcp_serve.c); lkey and rkey
 * are random, non-zero and unique in the process so a stale or guessed key
 * never names another region. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_sock.h"
#include "wire/wire.h"

/* Process-wide set of keys in use, kept sorted for binary search. */
static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *keys;
static size_t n_keys, cap_keys;

static size_t key_pos(uint32_t k)
{
    size_t lo = 0, hi = n_keys;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int rw_tcp_key_alloc(uint32_t *key)
{
    int rc = 0;

    pthread_mutex_lock(&keys_lock);
    if (n_keys == cap_keys) {
        size_t nc = cap_keys ? cap_keys * 2 : 64;
        uint32_t *nk = realloc(keys, nc * sizeof(*nk));
        if (!nk) {
            rc = RAILWIRE_E_NOMEM;
            goto out;
        }
        keys = nk;
        cap_keys = nc;
    }
    for (;;) {
        uint32_t k = rw_tcp_random32(1);
        size_t pos = key_pos(k);
        /* A key's first byte on the wire (little-endian) is never the
         * handshake's STATUS_OK: an RW client that dials an RO port reads
         * the first byte of layer 0's rkey as the server's ack (a 1-layer
         * RO reply is 4 bytes longer than an RW one), and with this it
         * always sees a refusal instead of accepting garbage once in 256
         * times. */
        if ((uint8_t)k == RW_STATUS_OK || (pos < n_keys && keys[pos] == k))
            continue;
        memmove(keys + pos + 1, keys + pos, (n_keys - pos) * sizeof(*keys));
        keys[pos] = k;
        n_keys++;
        *key = k;
        break;
    }
out:
    pthread_mutex_unlock(&keys_lock);
    return rc;
}

void rw_tcp_key_free(uint32_t key)
{
    size_t pos;

    pthread_mutex_lock(&keys_lock);
    pos = key_pos(key);
    if (pos < n_keys && keys[pos] == key) {
        memmove(keys + pos, keys + pos + 1, (n_keys - pos - 1) * sizeof(*keys));
        n_keys--;
    }
    if (n_keys == 0) {
        free(keys);
        keys = NULL;
        cap_keys = 0;
    }
    pthread_mutex_unlock(&keys_lock);
}

/* A random published base in [2^48, 2^62) with the region's offset in its
 * page (so alignments the peer sees are the real ones; the page offset is
 * not randomised by ASLR): far above any user-space address, and base +
 * len cannot wrap for any region that fits in memory. */
static uint64_t opaque_base(const void *addr)
{
    uint64_t r = (uint64_t)rw_tcp_random32(0) << 32 | rw_tcp_random32(0);
    uint64_t lo = 1ull << 48, span = (1ull << 62) - lo;
    return ((lo + r % span) & ~0xfffull) | ((uint64_t)(uintptr_t)addr & 0xfffull);
}

int rw_tcp_mr_reg(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out)
{
    struct rw_tcp_domain *d = rw_tcp_dom(dom);
    struct rw_mr *mr;
    int rc;

    *out = NULL;
    if (!addr || len == 0 || (uintptr_t)addr + len < (uintptr_t)addr || (uint64_t)len >= 1ull << 48 ||
        (access & ~(RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE | RW_ACCESS_READ_BY_REFERENCE))) {
        rw_err("tcp: cannot register memory %p+%zu with access 0x%x: need a non-empty "
               "region and RW_ACCESS_* flags", addr, len, (unsigned)access);
        return RAILWIRE_E_INVALID;
    }
    mr = calloc(1, sizeof(*mr));
    if (!mr)
        return RAILWIRE_E_NOMEM;
    rc = rw_tcp_key_alloc(&mr->lkey);
    if (rc)
        goto fail_mr;
    rc = rw_tcp_key_alloc(&mr->rkey);
    if (rc)
        goto fail_lkey;
    mr->dom = dom;
    mr->addr = addr;
    mr->len = len;
    mr->access = access;
    mr->remote_base = opaque_base(addr);
    pthread_mutex_lock(&d->lock);
    d->n_mrs++;
    pthread_mutex_unlock(&d->lock);
    *out = mr;
    return 0;

fail_lkey:
    rw_tcp_key_free(mr->lkey);
fail_mr:
    free(mr);
    rw_err("tcp: out of memory registering %zu bytes", len);
    return rc;
}

void rw_tcp_mr_dereg(struct rw_mr *mr)
{
    struct rw_tcp_domain *d;

    if (!mr)
        return;
    d = rw_tcp_dom(mr->dom);
    pthread_mutex_lock(&d->lock);
    d->n_mrs--;
    pthread_mutex_unlock(&d->lock);
    rw_tcp_key_free(mr->rkey);
    rw_tcp_key_free(mr->lkey);
    free(mr);
}
