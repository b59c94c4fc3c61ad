/* SPDX-License-Identifier: MIT */
/* Helpers that drive the handshake state machines in tests: flush pending
 * output into a transcript, feed a scripted peer's bytes in chunks, and run
 * one vector through the state machine that reads its kind. */
#ifndef RW_TEST_DRIVE_H
#define RW_TEST_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include "golden/support/vectors.h"
#include "wire/handshake.h"

/* A growing byte buffer (owned; free with drv_bytes_free()). */
struct drv_bytes {
    uint8_t *p;
    size_t len, cap;
};
void drv_bytes_free(struct drv_bytes *b);
/* Appends n bytes; returns 0 or -1 (out of memory). */
int drv_bytes_add(struct drv_bytes *b, const void *p, size_t n);

/* Sends everything pending (in pieces of at most `chunk` bytes; 0: all at
 * once), appending it to out (may be NULL).  Returns the bytes sent. */
size_t drv_client_flush(struct rw_hs_client *c, struct drv_bytes *out, size_t chunk);
size_t drv_server_flush(struct rw_hs_server *s, struct drv_bytes *out, size_t chunk);

/* Feeds msg in pieces of `chunk` bytes (0: all at once) while the state
 * machine is receiving.  Returns 0 once it left RECV (the message is
 * complete), the error feed returned, or, if msg ran out while still
 * receiving and `eof` is set, what *_eof() returns (RAILWIRE_E_NEED_MORE if
 * not).  *used gets the bytes consumed. */
int drv_client_feed(struct rw_hs_client *c, const uint8_t *msg, size_t len, size_t chunk, int eof,
                    size_t *used);
int drv_server_feed(struct rw_hs_server *s, const uint8_t *msg, size_t len, size_t chunk, int eof,
                    size_t *used);

/* Sample params for n rails: RO with n_layers layers each (layers has room
 * for n * n_layers), RW one arena each; values derived from `seed`. */
void drv_sample_ro(struct rw_ro_params *p, struct rw_mr_desc *layers, unsigned n, uint32_t n_layers,
                   uint32_t seed);
void drv_sample_rw(struct rw_rw_params *p, unsigned n, uint32_t seed);
void drv_sample_ids(struct rw_qp_id *ids, unsigned n, uint32_t seed);

/* The outcome of reading one message through a state machine. */
struct drv_outcome {
    int rc;                      /* 0 or the class error */
    int skipped;                 /* the state machine cannot be set up for this want */
    struct rw_server_reply reply;/* server kinds, rc == 0 (owned: drv_outcome_free) */
    struct rw_qp_id ids[RW_MAX_RW_RAILS]; /* client kind, rc == 0 */
    unsigned n_ids;
    uint8_t ack;                 /* ack kind: the status byte (also when refused) */
    size_t used;                 /* bytes of the message consumed */
};
/* Reads `len` bytes of a message of `kind` from a client that asked for
 * `want` rails through the state machine that reads it (client SM for
 * server replies and acks, server SM for the client stream), fed in pieces
 * of `chunk` bytes (0: all at once), with an end-of-stream after them. */
void drv_read_message(enum tv_kind kind, unsigned want, const uint8_t *msg, size_t len, size_t chunk,
                      struct drv_outcome *o);
void drv_outcome_free(struct drv_outcome *o);

/* Reads the same message with the one-shot decoder; an incomplete message
 * becomes rw_eof_error() of its length.  o->used = bytes consumed. */
void drv_decode_message(enum tv_kind kind, unsigned want, const uint8_t *msg, size_t len,
                        struct drv_outcome *o);

#endif
