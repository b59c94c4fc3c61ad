/* SPDX-License-Identifier: MIT */
/* railwire_server_opts_init_sized and the library's private copy of the
 * caller's options: only struct_size bytes of the caller's struct are ever
 * read or written (docs/abi.md). */
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "common/struct_abi.h"
#include "rail/server/server_internal.h"
#include "rail/server/server_opts.h"

_Static_assert(RAILWIRE_SERVER_OPTS_MIN_SIZE ==
                   offsetof(railwire_server_opts, arena) + sizeof(railwire_region),
               "the minimum struct_size ends after the arena");

static void defaults(railwire_server_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = (uint32_t)sizeof(*o);
    o->dialect = RAILWIRE_DIALECT_RO;
    o->transport = RAILWIRE_TRANSPORT_AUTO;
    o->listen_host = "0.0.0.0";
    o->listen_port = "0";
    o->gid_index = -1;
    o->max_rails_per_client = RW_MAX_RW_RAILS; /* RO requests are bounded to 8 by the wire */
    o->max_clients = 64;
    o->io_timeout_ms = 10000;
    o->session_linger_ms = RW_DEFAULT_SESSION_LINGER_MS;
    o->max_sessions_per_peer = RW_DEFAULT_MAX_PER_PEER;
    o->max_pending = RW_DEFAULT_MAX_PENDING;
    o->first_byte_timeout_ms = RW_DEFAULT_FIRST_BYTE_MS;
}

int railwire_server_opts_init_sized(railwire_server_opts *o, size_t size)
{
    if (!o || size < RAILWIRE_SERVER_OPTS_MIN_SIZE || size > UINT32_MAX) {
        rw_err("server_opts_init: %s (size %zu; the least is %u): call it as "
               "railwire_server_opts_init(&opts)", o ? "bad size" : "NULL options", size,
               RAILWIRE_SERVER_OPTS_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    railwire_server_opts d;
    defaults(&d);
    d.struct_size = (uint32_t)size;
    rw_struct_out(o, size, &d, sizeof(d));
    return 0;
}

int rw_server_opts_take(const railwire_server_opts *in, railwire_server_opts *out)
{
    defaults(out);
    if (in->struct_size < RAILWIRE_SERVER_OPTS_MIN_SIZE) {
        rw_err("server: railwire_server_opts.struct_size is %u (the least is %u): initialise "
               "the options with railwire_server_opts_init() before setting fields",
               in->struct_size, RAILWIRE_SERVER_OPTS_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    size_t bad;
    if (rw_struct_in(out, sizeof(*out), in, in->struct_size, &bad) < 0) {
        rw_err("server: railwire_server_opts sets a field at byte %zu that this library "
               "(%zu-byte options) does not know: the program was built against a newer "
               "railwire header; upgrade the library", bad, sizeof(*out));
        return RAILWIRE_E_INVALID;
    }
    out->struct_size = (uint32_t)sizeof(*out);
    if (out->reserved1) {
        rw_err("server: railwire_server_opts.reserved1 is %u: leave it 0 (a later version may "
               "give it a meaning)", out->reserved1);
        return RAILWIRE_E_INVALID;
    }
    return 0;
}
