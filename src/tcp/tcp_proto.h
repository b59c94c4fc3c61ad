/* SPDX-License-Identifier: MIT */
/* The tcp transport's rail frame format (railwire-internal, not part of the
 * frozen handshake).  Every integer is little-endian, encoded with the
 * rw_put_le* helpers; never a packed struct.
 *
 *   hello    client -> server, once, right after connect (24 bytes):
 *            u32 magic | u32 version | u32 server qpn | u32 server psn
 *                      | u32 client qpn | u32 client psn
 *   verdict  server -> client, one byte: 0 = attached, anything else = refused
 *   request  client -> server (32 bytes), WRITE followed by `length` bytes:
 *            u32 op | u32 length | u64 tag | u64 remote_addr | u32 rkey | u32 0
 *   response server -> client (16 bytes), a successful READ followed by
 *            `length` bytes: u64 tag | u32 status | u32 length
 *
 * The server answers the requests of one connection in order. */
#ifndef RW_TCP_PROTO_H
#define RW_TCP_PROTO_H

#include <stdint.h>

#define RW_TCP_MAGIC 0x31545752u /* "RWT1" as little-endian bytes */
#define RW_TCP_VERSION 1u
#define RW_TCP_HELLO_SIZE 24u
#define RW_TCP_REQ_SIZE 32u
#define RW_TCP_RESP_SIZE 16u

#define RW_TCP_VERDICT_OK 0
#define RW_TCP_VERDICT_REFUSE 1

/* Request ops on the wire (equal to enum rw_opcode). */
#define RW_TCP_OP_READ 0u
#define RW_TCP_OP_WRITE 1u

/* Response status on the wire. */
#define RW_TCP_ST_OK 0u
#define RW_TCP_ST_ACCESS 1u /* bad key, out of bounds, or no permission */

struct rw_tcp_hello {
    uint32_t srv_qpn;
    uint32_t srv_psn;
    uint32_t cli_qpn;
    uint32_t cli_psn;
};

struct rw_tcp_req {
    uint32_t op;
    uint32_t length;
    uint64_t tag;
    uint64_t remote_addr;
    uint32_t rkey;
};

struct rw_tcp_resp {
    uint64_t tag;
    uint32_t status;
    uint32_t length;
};

/* Writes the 24 hello bytes (magic and version included) into out. */
void rw_tcp_hello_encode(uint8_t *out, const struct rw_tcp_hello *h);
/* Reads 24 hello bytes.  Returns 0, or RAILWIRE_E_PROTOCOL when the magic or
 * the version is wrong (the peer does not speak this protocol). */
int rw_tcp_hello_decode(const uint8_t *in, struct rw_tcp_hello *h);

/* Writes the 32 request bytes into out. */
void rw_tcp_req_encode(uint8_t *out, const struct rw_tcp_req *r);
/* Reads 32 request bytes.  Returns 0, or RAILWIRE_E_PROTOCOL when the
 * reserved word is not zero.  The op and length are checked by the caller. */
int rw_tcp_req_decode(const uint8_t *in, struct rw_tcp_req *r);

/* Writes the 16 response bytes into out. */
void rw_tcp_resp_encode(uint8_t *out, const struct rw_tcp_resp *r);
/* Reads 16 response bytes (no validation: the caller checks tag/status). */
void rw_tcp_resp_decode(const uint8_t *in, struct rw_tcp_resp *r);

#endif
