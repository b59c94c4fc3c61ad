/* SPDX-License-Identifier: MIT */
/* railwire_railset_opts_init_sized and the library's private copy of the
 * caller's options: only struct_size bytes of the caller's struct are ever
 * read or written (docs/abi.md). */
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "common/struct_abi.h"
#include "gpu/topology.h"
#include "rail/client/heal.h"
#include "rail/client/railset_internal.h"
#include "rail/client/railset_opts.h"

_Static_assert(RAILWIRE_RAILSET_OPTS_MIN_SIZE ==
                   offsetof(railwire_railset_opts, n_rails) + sizeof(unsigned),
               "the minimum struct_size ends after n_rails");
_Static_assert(offsetof(railwire_railset_opts, near) ==
                   offsetof(railwire_railset_opts, staging_bytes) + sizeof(size_t),
               "near follows staging_bytes with no padding (docs/abi.md)");

static void defaults(railwire_railset_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = (uint32_t)sizeof(*o);
    o->dialect = RAILWIRE_DIALECT_RO;
    o->transport = RAILWIRE_TRANSPORT_AUTO;
    o->n_rails = 1;
    o->gid_index = -1;
    o->connect_timeout_ms = RW_DEFAULT_CONNECT_TIMEOUT_MS;
    o->io_timeout_ms = RW_DEFAULT_IO_TIMEOUT_MS;
    o->op_timeout_ms = RW_DEFAULT_OP_TIMEOUT_MS;
    o->heal = 1;
    o->heal_backoff_min_ms = RW_DEFAULT_HEAL_BACKOFF_MIN_MS;
    o->heal_backoff_max_ms = RW_DEFAULT_HEAL_BACKOFF_MAX_MS;
    o->heal_stable_ms = RW_DEFAULT_HEAL_STABLE_MS;
}

int railwire_railset_opts_init_sized(railwire_railset_opts *o, size_t size)
{
    if (!o || size < RAILWIRE_RAILSET_OPTS_MIN_SIZE || size > UINT32_MAX) {
        rw_err("railset_opts_init: %s (size %zu; the least is %u): call it as "
               "railwire_railset_opts_init(&opts)", o ? "bad size" : "NULL options", size,
               RAILWIRE_RAILSET_OPTS_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    railwire_railset_opts d;
    defaults(&d);
    d.struct_size = (uint32_t)size;
    rw_struct_out(o, size, &d, sizeof(d));
    return 0;
}

/* A count is 0 exactly when its array is NULL, and at most n_rails. */
static int check_count(const char *name, const void *array, unsigned n, unsigned n_rails)
{
    if (!array != !n || n > n_rails) {
        rw_err("connect: %s has %u entr%s with the array %s; give 1..n_rails (%u) entries "
               "with the array, or 0 and NULL", name, n, n == 1 ? "y" : "ies",
               array ? "set" : "NULL", n_rails);
        return RAILWIRE_E_INVALID;
    }
    return 0;
}

int rw_railset_opts_take(const railwire_railset_opts *in, railwire_railset_opts *out)
{
    defaults(out);
    if (!in)
        return 0;
    if (in->struct_size < RAILWIRE_RAILSET_OPTS_MIN_SIZE) {
        rw_err("connect: railwire_railset_opts.struct_size is %u (the least is %u): initialise "
               "the options with railwire_railset_opts_init() before setting fields",
               in->struct_size, RAILWIRE_RAILSET_OPTS_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    size_t bad;
    if (rw_struct_in(out, sizeof(*out), in, in->struct_size, &bad) < 0) {
        rw_err("connect: railwire_railset_opts sets a field at byte %zu that this library "
               "(%zu-byte options) does not know: the program was built against a newer "
               "railwire header; upgrade the library", bad, sizeof(*out));
        return RAILWIRE_E_INVALID;
    }
    out->struct_size = (uint32_t)sizeof(*out);
    if (out->reserved0) {
        rw_err("connect: railwire_railset_opts.reserved0 is %u: leave it 0 (a later version "
               "may give it a meaning)", out->reserved0);
        return RAILWIRE_E_INVALID;
    }
    if (check_count("n_local_addrs", out->local_addrs, out->n_local_addrs, out->n_rails) < 0 ||
        check_count("n_devices", out->devices, out->n_devices, out->n_rails) < 0)
        return RAILWIRE_E_INVALID;
    struct rw_near near;
    if (rw_near_parse(out->near, &near) < 0) {
        rw_err("connect: railwire_railset_opts.near '%s' is not one of \"cuda:N\" (a GPU), "
               "\"numa:N\" (a NUMA node), \"auto\", or NULL/\"\" (no preference)", out->near);
        return RAILWIRE_E_INVALID;
    }
    return 0;
}
