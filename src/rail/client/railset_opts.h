/* SPDX-License-Identifier: MIT */
/* The railset's options as the library holds them: the caller's
 * railwire_railset_opts read through its struct_size (docs/abi.md). */
#ifndef RW_RAIL_RAILSET_OPTS_H
#define RW_RAIL_RAILSET_OPTS_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <railwire/railset.h>

/* Fills *out with the library's full options: the defaults, overlaid with
 * the first in->struct_size bytes of *in (defaults only when in is NULL),
 * then checks the array counts.  out->local_addrs/devices still point into
 * the caller's arrays (borrowed for the call).  Returns 0 or
 * RAILWIRE_E_INVALID (logged: a struct_size below
 * RAILWIRE_RAILSET_OPTS_MIN_SIZE, i.e. options never initialised, an
 * unknown field set by a newer header, a count that does not match its
 * array). */
int rw_railset_opts_take(const railwire_railset_opts *in, railwire_railset_opts *out);

#endif
