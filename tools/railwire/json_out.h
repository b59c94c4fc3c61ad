/* SPDX-License-Identifier: MIT */
/* JSON output of decoded handshake messages for `railwire decode`.  Every
 * function writes one complete JSON object (no trailing newline) to `f` and
 * returns 0, or -1 if writing failed. */
#ifndef RAILWIRE_TOOL_JSON_OUT_H
#define RAILWIRE_TOOL_JSON_OUT_H

#include <stdio.h>

#include "wire/wire.h"

/* {"kind": "ro-server"|"rw-server", "rails": [...]} from a decoded reply. */
int tool_json_reply(FILE *f, const struct rw_server_reply *r);
/* {"kind": "client", "rails": [{"qpn", "psn", "gid"}, ...]} */
int tool_json_client(FILE *f, const struct rw_qp_id *ids, unsigned n);
/* {"kind": "ack", "status": N} */
int tool_json_ack(FILE *f, unsigned status);

#endif
