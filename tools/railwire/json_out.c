/* SPDX-License-Identifier: MIT */
#include "json_out.h"

#include <inttypes.h>

/* Writes "qpn": .., "psn": .., "gid": "<32 hex>" (no braces). */
static void qp_fields(FILE *f, const struct rw_qp_id *id)
{
    fprintf(f, "\"qpn\": %" PRIu32 ", \"psn\": %" PRIu32 ", \"gid\": \"", id->qpn, id->psn);
    for (size_t i = 0; i < sizeof(id->gid); i++)
        fprintf(f, "%02x", id->gid[i]);
    fputc('"', f);
}

int tool_json_reply(FILE *f, const struct rw_server_reply *r)
{
    int ro = r->dialect == RAILWIRE_DIALECT_RO;

    fprintf(f, "{\"kind\": \"%s\", \"rails\": [", ro ? "ro-server" : "rw-server");
    for (unsigned i = 0; i < r->n_rails; i++) {
        fputs(i ? ", {" : "{", f);
        if (ro) {
            const struct rw_ro_params *p = &r->ro[i];
            qp_fields(f, &p->qp);
            fputs(", \"layers\": [", f);
            for (uint32_t l = 0; l < p->n_layers; l++)
                fprintf(f, "%s[%" PRIu64 ", %" PRIu32 "]", l ? ", " : "", p->layers[l].base_addr,
                        p->layers[l].rkey);
            fputc(']', f);
        } else {
            const struct rw_rw_params *p = &r->rw[i];
            qp_fields(f, &p->qp);
            fprintf(f, ", \"base_addr\": %" PRIu64 ", \"rkey\": %" PRIu32, p->arena.base_addr,
                    p->arena.rkey);
        }
        fputc('}', f);
    }
    fputs("]}", f);
    return ferror(f) ? -1 : 0;
}

int tool_json_client(FILE *f, const struct rw_qp_id *ids, unsigned n)
{
    fputs("{\"kind\": \"client\", \"rails\": [", f);
    for (unsigned i = 0; i < n; i++) {
        fputs(i ? ", {" : "{", f);
        qp_fields(f, &ids[i]);
        fputc('}', f);
    }
    fputs("]}", f);
    return ferror(f) ? -1 : 0;
}

int tool_json_ack(FILE *f, unsigned status)
{
    fprintf(f, "{\"kind\": \"ack\", \"status\": %u}", status);
    return ferror(f) ? -1 : 0;
}
