/* SPDX-License-Identifier: MIT */
/* The server's options as the library holds them: the caller's
 * railwire_server_opts read through its struct_size (docs/abi.md). */
#ifndef RW_RAIL_SERVER_OPTS_H
#define RW_RAIL_SERVER_OPTS_H
#if defined(RW_LAYER_RAIL_CLIENT) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/server/ is private to the server (docs/architecture.md)"
#endif

#include <railwire/server.h>

/* Fills *out with the library's full options: the defaults, overlaid with
 * the first in->struct_size bytes of *in.  Pointers still point into the
 * caller's memory.  Returns 0 or RAILWIRE_E_INVALID (logged: a struct_size
 * below RAILWIRE_SERVER_OPTS_MIN_SIZE, i.e. options never initialised, or
 * an unknown field set by a newer header). */
int rw_server_opts_take(const railwire_server_opts *in, railwire_server_opts *out);

#endif
