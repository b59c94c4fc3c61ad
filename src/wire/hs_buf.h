/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by the two handshake state machines. */
#ifndef RW_WIRE_HS_BUF_H
#define RW_WIRE_HS_BUF_H

#include "wire/wire.h"

/* Moves bytes of buf into the reassembly buffer (*rx, grown as the frame's
 * `need` grows, never beyond the largest legal message) until the framed
 * message is complete or buf is used up.  Returns the bytes used (>= 0) and
 * sets *complete, or a class error / RAILWIRE_E_NOMEM.  *rx stays owned by
 * the caller. */
ssize_t rw_hs_reassemble(struct rw_frame *f, uint8_t **rx, size_t *rx_len, size_t *rx_cap,
                         const uint8_t *buf, size_t len, int *complete);

/* Replaces the pending output with a fresh buffer of `size` bytes and
 * returns it (NULL: out of memory, logged). */
uint8_t *rw_hs_tx_alloc(uint8_t **tx, size_t *tx_len, size_t *tx_off, size_t size);

/* Marks n bytes sent; returns 1 when all pending bytes are sent (the buffer
 * is then freed). */
int rw_hs_tx_sent(uint8_t **tx, size_t *tx_len, size_t *tx_off, size_t n);

#endif
