/* SPDX-License-Identifier: MIT */
/* Releasing an opened session (rw_session_out), kept apart from
 * session_open.c so the rail core (and its mock-transport tests) can
 * release sessions without the socket and handshake code. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rail/client/session_open.h"

void rw_session_close(const struct rw_transport_ops *ops, struct rw_session_out *out)
{
    for (unsigned i = out->n_rails; i-- > 0;) {
        if (out->ep[i])
            ops->ep_destroy(out->ep[i]);
        if (out->dom[i])
            ops->domain_close(out->dom[i]);
        free(out->remote[i]);
    }
    if (out->fd >= 0)
        close(out->fd);
    memset(out, 0, sizeof(*out));
    out->fd = -1;
}
