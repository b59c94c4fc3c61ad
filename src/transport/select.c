/* SPDX-License-Identifier: MIT */
/* Transport choice: explicit, RAILWIRE_TRANSPORT, or verbs-if-available. */
#include "transport/select.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

static int pick_verbs(const struct rw_transport_ops **out, const char *why)
{
#if RAILWIRE_HAVE_VERBS
    if (!rw_verbs_available()) {
        rw_err("transport: verbs was asked for (%s) but no active RDMA port exists; check "
               "`railwire devices`, RAILWIRE_DEVICES, or use the tcp transport", why);
        return RAILWIRE_E_NO_DEVICE;
    }
    *out = &rw_verbs_ops;
    return 0;
#else
    (void)out;
    rw_err("transport: verbs was asked for (%s) but this build has no verbs support (libibverbs "
           "was not found at build time); use the tcp transport or rebuild with libibverbs-dev",
           why);
    return RAILWIRE_E_UNSUPPORTED;
#endif
}

int rw_transport_select(enum railwire_transport want, const struct rw_transport_ops **out)
{
    if (!out)
        return RAILWIRE_E_INVALID;
    switch (want) {
    case RAILWIRE_TRANSPORT_TCP:
        *out = &rw_tcp_ops;
        return 0;
    case RAILWIRE_TRANSPORT_VERBS:
        return pick_verbs(out, "by the caller");
    case RAILWIRE_TRANSPORT_AUTO:
        break;
    default:
        rw_err("transport: unknown transport value %d", (int)want);
        return RAILWIRE_E_INVALID;
    }
    const char *env = getenv("RAILWIRE_TRANSPORT");
    if (env && *env && strcasecmp(env, "auto") != 0) {
        if (!strcasecmp(env, "tcp")) {
            *out = &rw_tcp_ops;
            return 0;
        }
        if (!strcasecmp(env, "verbs"))
            return pick_verbs(out, "by RAILWIRE_TRANSPORT=verbs");
        rw_err("transport: RAILWIRE_TRANSPORT=%s is not one of tcp, verbs, auto", env);
        return RAILWIRE_E_INVALID;
    }
#if RAILWIRE_HAVE_VERBS
    if (rw_verbs_available()) {
        rw_info("transport: verbs (an active RDMA port exists)");
        *out = &rw_verbs_ops;
        return 0;
    }
#endif
    rw_info("transport: tcp (no active RDMA port)");
    *out = &rw_tcp_ops;
    return 0;
}
