/* SPDX-License-Identifier: MIT */
#include "tcp/tcp_proto.h"

#include <railwire/error.h>

#include "wire/wire.h"

void rw_tcp_hello_encode(uint8_t *out, const struct rw_tcp_hello *h)
{
    uint8_t *p = rw_put_le32(out, RW_TCP_MAGIC);
    p = rw_put_le32(p, RW_TCP_VERSION);
    p = rw_put_le32(p, h->srv_qpn);
    p = rw_put_le32(p, h->srv_psn);
    p = rw_put_le32(p, h->cli_qpn);
    rw_put_le32(p, h->cli_psn);
}

int rw_tcp_hello_decode(const uint8_t *in, struct rw_tcp_hello *h)
{
    uint32_t magic, version;
    const uint8_t *p = rw_get_le32(&magic, in);
    p = rw_get_le32(&version, p);
    if (magic != RW_TCP_MAGIC || version != RW_TCP_VERSION)
        return RAILWIRE_E_PROTOCOL;
    p = rw_get_le32(&h->srv_qpn, p);
    p = rw_get_le32(&h->srv_psn, p);
    p = rw_get_le32(&h->cli_qpn, p);
    rw_get_le32(&h->cli_psn, p);
    return 0;
}

void rw_tcp_req_encode(uint8_t *out, const struct rw_tcp_req *r)
{
    uint8_t *p = rw_put_le32(out, r->op);
    p = rw_put_le32(p, r->length);
    p = rw_put_le64(p, r->tag);
    p = rw_put_le64(p, r->remote_addr);
    p = rw_put_le32(p, r->rkey);
    rw_put_le32(p, 0);
}

int rw_tcp_req_decode(const uint8_t *in, struct rw_tcp_req *r)
{
    uint32_t reserved;
    const uint8_t *p = rw_get_le32(&r->op, in);
    p = rw_get_le32(&r->length, p);
    p = rw_get_le64(&r->tag, p);
    p = rw_get_le64(&r->remote_addr, p);
    p = rw_get_le32(&r->rkey, p);
    rw_get_le32(&reserved, p);
    return reserved ? RAILWIRE_E_PROTOCOL : 0;
}

void rw_tcp_resp_encode(uint8_t *out, const struct rw_tcp_resp *r)
{
    uint8_t *p = rw_put_le64(out, r->tag);
    p = rw_put_le32(p, r->status);
    rw_put_le32(p, r->length);
}

void rw_tcp_resp_decode(const uint8_t *in, struct rw_tcp_resp *r)
{
    const uint8_t *p = rw_get_le64(&r->tag, in);
    p = rw_get_le32(&r->status, p);
    rw_get_le32(&r->length, p);
}
