/* SPDX-License-Identifier: MIT */
/* Choosing the transport for a railset or a server. */
#ifndef RW_TRANSPORT_SELECT_H
#define RW_TRANSPORT_SELECT_H

#include <railwire/types.h>

#include "transport/transport.h"

/* Resolves `want` to an ops table.  AUTO: RAILWIRE_TRANSPORT=tcp|verbs
 * decides if set, else verbs when this build has it and an active RDMA port
 * exists, else tcp.  Returns 0 and *out (static, not owned), or
 * RAILWIRE_E_UNSUPPORTED (verbs asked for in a build without it),
 * RAILWIRE_E_NO_DEVICE (verbs asked for on a host without an active port) or
 * RAILWIRE_E_INVALID (unknown value), each logged. */
int rw_transport_select(enum railwire_transport want, const struct rw_transport_ops **out);

#endif
