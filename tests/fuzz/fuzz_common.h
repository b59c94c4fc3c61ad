/* SPDX-License-Identifier: MIT */
/* Shared helpers of the libFuzzer harnesses: invariant checks that abort
 * (libFuzzer reports them as crashes) and a deterministic chunker. */
#ifndef RW_FUZZ_COMMON_H
#define RW_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railwire/log.h"
#include "wire/handshake.h"

#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "invariant failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Splits input into pieces of 1..max bytes chosen by a seed. */
struct chunker {
    uint32_t state;
    size_t max;
};

static inline void chunker_init(struct chunker *ch, uint8_t seed)
{
    static const size_t maxes[] = {1, 2, 3, 7, 16, 29, 64, 4096};
    ch->state = 0x9e3779b9u ^ seed;
    ch->max = maxes[seed & 7];
}

static inline size_t chunker_next(struct chunker *ch, size_t left)
{
    size_t n;
    ch->state ^= ch->state << 13;
    ch->state ^= ch->state >> 17;
    ch->state ^= ch->state << 5;
    n = 1 + ch->state % ch->max;
    return n < left ? n : left;
}

/* Re-encodes a decoded reply into a fresh buffer; returns its length. */
static inline ssize_t fuzz_encode_reply(const struct rw_server_reply *r, uint8_t **out)
{
    size_t cap = r->dialect == RAILWIRE_DIALECT_RO ? rw_ro_reply_size(r->ro, r->n_rails)
                                                    : 1 + (size_t)r->n_rails * RW_RW_PARAMS_SIZE;
    ssize_t n;
    *out = malloc(cap ? cap : 1);
    FUZZ_CHECK(*out != NULL);
    n = r->dialect == RAILWIRE_DIALECT_RO ? rw_encode_ro_reply(*out, cap, r->ro, r->n_rails)
                                          : rw_encode_rw_reply(*out, cap, r->rw, r->n_rails);
    return n;
}

static inline int fuzz_is_class(ssize_t rc)
{
    return rc == RAILWIRE_E_PEER_REJECTED || rc == RAILWIRE_E_TRUNCATED ||
           rc == RAILWIRE_E_BAD_RAIL_COUNT || rc == RAILWIRE_E_RAIL_COUNT_MISMATCH ||
           rc == RAILWIRE_E_BAD_LAYER_COUNT || rc == RAILWIRE_E_REFUSED;
}

#define FUZZ_QUIET_INIT                                          \
    int LLVMFuzzerInitialize(int *argc, char ***argv)            \
    {                                                            \
        (void)argc;                                              \
        (void)argv;                                              \
        railwire_log_set_level(RAILWIRE_LOG_ERROR);              \
        return 0;                                                \
    }

#endif
