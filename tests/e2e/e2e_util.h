/* SPDX-License-Identifier: MIT */
/* Shared helpers of the end-to-end suites: an in-process server over real
 * loopback sockets with pattern-filled memory, railset connection with the
 * tcp transport, a seeded RNG whose seed is printed, and transfer helpers. */
#ifndef RW_E2E_UTIL_H
#define RW_E2E_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <railwire.h>

#define E2E_MAX_LAYERS 8

/* A running server and the memory it publishes (owned here). */
struct e2e_server {
    railwire_server *srv;
    enum railwire_dialect dialect;
    uint8_t *mem;                       /* layers back to back, or the arena */
    size_t mem_len;
    railwire_region regions[E2E_MAX_LAYERS];
    unsigned n_layers;
    char port[16];
};

/* Starts a tcp server of `dialect` on 127.0.0.1 (ephemeral port) publishing
 * the layers of the given lengths (RO) or one arena of layer_len[0] bytes
 * (RW), each filled with the bench pattern (seed 0, layer i).  `tweak` (may
 * be NULL) can change the options before create.  Asserts on failure. */
void e2e_server_start(struct e2e_server *s, enum railwire_dialect dialect, const size_t *layer_len,
                      unsigned n_layers, void (*tweak)(railwire_server_opts *o));

/* Destroys the server and frees its memory.  Safe to call twice. */
void e2e_server_stop(struct e2e_server *s);

/* Connects `rails` tcp rails to 127.0.0.1:port with the given dialect and
 * timeouts (0 = library default).  Returns railwire_railset_connect's code;
 * *out is set on success. */
int e2e_connect(const char *port, enum railwire_dialect dialect, unsigned rails, int connect_ms,
                int io_ms, railwire_railset **out);

/* The run's seed: RAILWIRE_E2E_SEED if set, else from the clock.  Printed
 * on stderr with `what` so a failure can be replayed. */
uint64_t e2e_seed(const char *what);

/* splitmix64 step: advances *state and returns 64 random bits. */
uint64_t e2e_rand(uint64_t *state);

/* A random transfer size, log-uniform over 1 B .. max. */
size_t e2e_rand_size(uint64_t *state, size_t max);

/* Submits one transfer and waits for its completion (up to timeout_ms).
 * Returns the submit error, RAILWIRE_E_TIMEOUT, the completion status, or
 * RAILWIRE_E_STATE if a completion for another transfer arrived.  Safe to
 * call from any thread (it does not assert). */
int e2e_transfer(railwire_railset *rs, enum railwire_opcode opc, railwire_mr *mr, void *local,
                 size_t len, uint32_t layer, uint64_t off, int timeout_ms);

/* Waits until `n` completions arrived (or timeout_ms passed in total),
 * storing each status at statuses[user_data].  Returns how many arrived. */
int e2e_wait_all(railwire_railset *rs, int *statuses, size_t n, int timeout_ms);

/* Returns the index of the first byte where a and b differ, or -1. */
long e2e_first_diff(const uint8_t *a, const uint8_t *b, size_t len);

#endif
