/* SPDX-License-Identifier: MIT */
/* railwire: striped multi-rail one-sided READ/WRITE over RDMA verbs or TCP.
 * The one header to include. */
#ifndef RAILWIRE_H
#define RAILWIRE_H

#include <railwire/error.h>
#include <railwire/export.h>
#include <railwire/log.h>
#include <railwire/mem.h>
#include <railwire/railset.h>
#include <railwire/server.h>
#include <railwire/tls.h>
#include <railwire/types.h>

#endif
