/* SPDX-License-Identifier: MIT */
/* `railwire bench --loopback`: a server started inside the bench process on
 * 127.0.0.1 (ephemeral control port, rail listeners on 127.0.0.1), with its
 * memory filled with the bench pattern (seed 0) so reads can be verified. */
#ifndef RAILWIRE_TOOL_BENCH_LOOPBACK_H
#define RAILWIRE_TOOL_BENCH_LOOPBACK_H

#include <stddef.h>

#include <railwire.h>

struct bench_loopback {
    railwire_server *srv;
    void *mem;                  /* all layers back to back, or the arena */
    size_t mem_len;
    railwire_region *regions;
    unsigned n_layers;
    unsigned port;              /* the bound control port */
    double create_ms;           /* railwire_server_create (registration included) */
};

/* Starts a server of `dialect` publishing n_layers layers of layer_len bytes
 * each (RO) or one arena of layer_len bytes (RW; n_layers is ignored).
 * busy_poll_us is railwire_server_opts.busy_poll_us (0 = the default),
 * zero_copy_reads railwire_server_opts.zero_copy_reads (the memory is
 * unmapped only after the server is destroyed, and holds only the pattern
 * and clients' WRITEs);
 * tls is railwire_server_opts.tls (NULL: plain).
 * Returns 0, or a negative RAILWIRE_E_* code (a message is printed). */
int bench_loopback_start(struct bench_loopback *lb, enum railwire_dialect dialect,
                         enum railwire_transport transport, unsigned n_layers, size_t layer_len,
                         int busy_poll_us, int zero_copy_reads,
                         const railwire_tls_opts *tls);

/* Destroys the server and frees its memory.  Safe on a zeroed struct. */
void bench_loopback_stop(struct bench_loopback *lb);

#endif
