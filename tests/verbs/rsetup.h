/* SPDX-License-Identifier: MIT */
/* A verbs server and railset in one process through the public API, on the
 * devices named by RAILWIRE_TEST_DEVS_A (client) / _B (server). */
#ifndef RW_TESTS_VERBS_RSETUP_H
#define RW_TESTS_VERBS_RSETUP_H

#include <railwire.h>

struct rt_env {
    railwire_server *srv;
    railwire_railset *rs;
    unsigned char *mem;       /* the server's RW arena or RO layers (contiguous) */
    size_t mem_len;
    unsigned n_layers;        /* RO: layers of mem_len / n_layers bytes each */
    char devs_a[8][64];
    const char *dev_ptrs[8];
};

/* Starts a server of `dialect` over mem (n_layers equal layers for RO, one
 * arena for RW) on every B device, and connects a railset of n_rails on the
 * A devices (rail i on A's device i mod count).  op_timeout_ms 0 = default.
 * Asserts on failure. */
void rt_up(struct rt_env *e, enum railwire_dialect dialect, unsigned n_rails, size_t mem_len,
           unsigned n_layers, int op_timeout_ms);
void rt_down(struct rt_env *e);

/* Waits until every handle in hs[0..n) completed; stores statuses in st
 * (indexed like hs).  Asserts that all arrived within timeout_ms. */
void rt_wait_all(struct rt_env *e, const railwire_handle *hs, int *st, size_t n, int timeout_ms);

#endif
