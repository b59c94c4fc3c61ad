/* SPDX-License-Identifier: MIT */
/* The wire vectors file (tests/golden/vectors/wire-vectors.tsv, a copy of
 * spec/vectors/) read for the test suites and the fuzz seed generator. */
#ifndef RW_TEST_VECTORS_H
#define RW_TEST_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "golden/support/json.h"
#include "wire/wire.h"

enum tv_kind { TV_RO_SERVER, TV_RW_SERVER, TV_CLIENT, TV_ACK };

/* Per-rail records, as the vectors file (or `railwire decode`) states them.
 * Exactly one of ro / rw / ids is used, by kind; all owned. */
struct tv_records {
    unsigned n;
    struct rw_ro_params *ro;
    struct rw_rw_params *rw;
    struct rw_qp_id *ids;
};

struct tv_vector {
    int line;              /* 1-based line in the file */
    enum tv_kind kind;
    const char *kind_name; /* "ro-server", ... (static) */
    unsigned want;
    uint8_t *bytes;        /* owned; NULL when len == 0 */
    size_t len;
    int ok;
    int err;               /* err lines: the RAILWIRE_E_* code of the class */
    char err_class[32];
    struct tv_records expect; /* ok lines (empty for ack) */
};

/* The path of the vectors file in the source tree. */
const char *tv_path(void);
/* Loads every line of `path`.  Returns 0 and an owned array (free with
 * tv_free_all()), or -1 with a reason in why. */
int tv_load(const char *path, struct tv_vector **out, size_t *n, char *why, size_t whylen);
void tv_free_all(struct tv_vector *v, size_t n);

/* Kind from its name in the file; -1 if unknown. */
int tv_kind_from_name(const char *name);
/* The RAILWIRE_E_* code of a WIRE.md class name, or 0 if unknown. */
int tv_class_code(const char *cls);
/* Lower/upper-case hex (no whitespace) to owned bytes; -1 if malformed. */
int tv_hex_decode(const char *hex, size_t nhex, uint8_t **out, size_t *len);

/* Reads a JSON array of records of `kind` (exactly the keys of the vectors
 * file).  Returns 0 or -1 with a reason. */
int tv_records_from_json(const struct tj_value *arr, enum tv_kind kind, struct tv_records *r,
                         char *why, size_t whylen);
void tv_records_free(struct tv_records *r);
/* 1 if equal, else 0 with the first difference in why. */
int tv_records_equal(const struct tv_records *a, const struct tv_records *b, char *why, size_t whylen);
/* 1 if a decoded reply equals the records, else 0 with a reason. */
int tv_reply_equal(const struct tv_records *exp, const struct rw_server_reply *r, char *why,
                   size_t whylen);
/* 1 if decoded ids equal the records, else 0 with a reason. */
int tv_ids_equal(const struct tv_records *exp, const struct rw_qp_id *ids, unsigned n, char *why,
                 size_t whylen);
/* Encodes the records as the message of their kind (client: request byte +
 * ids) into an owned buffer.  Returns the length or a negative code. */
ssize_t tv_encode(const struct tv_records *r, enum tv_kind kind, unsigned want, uint8_t **out);

#endif
