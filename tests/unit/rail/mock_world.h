/* SPDX-License-Identifier: MIT */
/* Builds a railset over the mock transport: a "server" with RO layers or an
 * RW arena (filled with a known pattern), registered on one mock domain per
 * rail (so every rail sees its own base address and rkey), and N client
 * rails.  For the striping, progress, failover and mr tests. */
#ifndef RW_TEST_MOCK_WORLD_H
#define RW_TEST_MOCK_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "mock_transport.h"
#include "rail/client/railset_testing.h"

/* max_msg of the client domains the next mock_world_init opens (0 = none). */
extern uint32_t mock_world_max_msg;
/* max_msg of the last rail's client domain only (0 = mock_world_max_msg):
 * a railset of mixed transports.  Not reset by mock_world_init. */
extern uint32_t mock_world_last_max_msg;

struct mock_world {
    railwire_railset *rs;
    unsigned n_rails;
    unsigned n_layers;
    size_t layer_len;
    uint8_t *layer[16];                /* remote memory, owned */
    struct rw_domain *srv_dom[RAILWIRE_MAX_RAILS];
    struct rw_mr *srv_mr[RAILWIRE_MAX_RAILS][16];
    struct rw_ep *ep[RAILWIRE_MAX_RAILS]; /* the client rails' eps (owned by rs) */
};

/* Pattern byte of layer l at offset i. */
static inline uint8_t mock_pattern(unsigned l, size_t i)
{
    return (uint8_t)(i * 131u + l * 17u + (i >> 12) * 7u + 1u);
}

/* Creates the world.  gbps may be NULL (all 10) or give each rail's speed.
 * o may be NULL (defaults).  Returns 0 or an error. */
int mock_world_init(struct mock_world *w, enum railwire_dialect d, unsigned n_rails,
                    unsigned n_layers, size_t layer_len, const double *gbps,
                    const railwire_railset_opts *o);
/* Railset options for the failover tests: default options with slices of
 * `slice` bytes, 8 slices in flight per rail and the given op timeout. */
railwire_railset_opts mock_world_opts(size_t slice, int op_timeout_ms);
/* Closes the railset and frees the remote side. */
void mock_world_fini(struct mock_world *w);

/* Submits and waits for one transfer with a generous timeout; returns its
 * completion status. */
int mock_world_xfer(struct mock_world *w, enum railwire_opcode opc, railwire_mr *mr, void *local,
                    size_t len, uint32_t layer, uint64_t off);
/* Waits for n completions into out (room for n), each wait up to 20 s;
 * stops at a wait that delivers nothing.  Returns how many arrived. */
int mock_world_wait_n(struct mock_world *w, railwire_completion *out, int n);

#endif
