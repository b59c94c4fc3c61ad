/* SPDX-License-Identifier: MIT */
/* railwire_tls_opts defaults.  Built in every configuration (with or without
 * OpenSSL) so that the public API is the same everywhere. */
#include <railwire/tls.h>

#include <string.h>

void railwire_tls_opts_init_sized(railwire_tls_opts *o, size_t size)
{
    if (!o || size < sizeof(o->struct_size))
        return;
    if (size > sizeof(*o))
        size = sizeof(*o);
    memset(o, 0, size);
    o->struct_size = (uint32_t)size;
}
