/* SPDX-License-Identifier: MIT */
/* The QP identity record, reply ownership, and what an end-of-stream means. */
#include "wire/wire.h"

#include <stdlib.h>
#include <string.h>

ssize_t rw_encode_qp_id(uint8_t *out, size_t cap, const struct rw_qp_id *id)
{
    uint8_t *p = out;

    if (!id)
        return RAILWIRE_E_INVALID;
    if (cap < RW_QP_ID_SIZE)
        return RAILWIRE_E_NOSPACE;
    if (!out)
        return RAILWIRE_E_INVALID;
    p = rw_put_le32(p, id->qpn);
    p = rw_put_le32(p, id->psn);
    memcpy(p, id->gid, sizeof(id->gid));
    return RW_QP_ID_SIZE;
}

ssize_t rw_decode_qp_id(const uint8_t *buf, size_t len, struct rw_qp_id *id)
{
    const uint8_t *p = buf;

    if (!id || (!buf && len))
        return RAILWIRE_E_INVALID;
    if (len < RW_QP_ID_SIZE)
        return RAILWIRE_E_NEED_MORE;
    p = rw_get_le32(&id->qpn, p);
    p = rw_get_le32(&id->psn, p);
    memcpy(id->gid, p, sizeof(id->gid));
    return RW_QP_ID_SIZE;
}

void rw_server_reply_free(struct rw_server_reply *r)
{
    if (!r)
        return;
    if (r->ro) {
        for (unsigned i = 0; i < r->n_rails; i++)
            free(r->ro[i].layers);
        free(r->ro);
    }
    free(r->rw);
    memset(r, 0, sizeof(*r));
}

int rw_eof_error(int is_server_reply, size_t got)
{
    return is_server_reply && got == 0 ? RAILWIRE_E_PEER_REJECTED : RAILWIRE_E_TRUNCATED;
}
