/* SPDX-License-Identifier: MIT */
/* railwire error codes.
 *
 * Every railwire function returns 0 (or a non-negative count/length) on
 * success and one of the negative RAILWIRE_E_* codes below on failure.  The
 * codes never overlap errno values, so a caller can tell them apart. */
#ifndef RAILWIRE_ERROR_H
#define RAILWIRE_ERROR_H

#include <railwire/export.h>

#ifdef __cplusplus
extern "C" {
#endif

enum railwire_error {
    RAILWIRE_OK = 0,
    /* The wire classes of spec/WIRE.md, one code each. */
    RAILWIRE_E_PEER_REJECTED = -1001,      /* clean EOF before the server's reply: see the peer's log */
    RAILWIRE_E_TRUNCATED = -1002,          /* the input ends inside a record */
    RAILWIRE_E_BAD_RAIL_COUNT = -1003,     /* RO rail count 0 or > 8 */
    RAILWIRE_E_RAIL_COUNT_MISMATCH = -1004,/* framed/echoed count != the count asked for */
    RAILWIRE_E_BAD_LAYER_COUNT = -1005,    /* RO n_layers 0 or > 4096 */
    RAILWIRE_E_REFUSED = -1006,            /* ack byte is not STATUS_OK */
    /* Codec plumbing. */
    RAILWIRE_E_NEED_MORE = -1010,          /* decoder: more bytes needed (not an error on a stream) */
    RAILWIRE_E_NOSPACE = -1011,            /* encoder: output buffer too small, nothing written */
    RAILWIRE_E_INVALID = -1012,            /* invalid argument or unencodable value */
    RAILWIRE_E_STATE = -1013,              /* call not allowed in the object's current state */
    /* Runtime. */
    RAILWIRE_E_NOMEM = -1020,              /* out of memory */
    RAILWIRE_E_TIMEOUT = -1021,            /* a wait ran out of time */
    RAILWIRE_E_CONNECT = -1022,            /* could not connect (refused, unreachable, bad address) */
    RAILWIRE_E_IO = -1023,                 /* a connection failed or was reset mid-operation */
    RAILWIRE_E_RAIL_DOWN = -1024,          /* the rail carrying an operation failed (it is retried elsewhere) */
    RAILWIRE_E_ALL_RAILS_DOWN = -1025,     /* every rail of the railset failed */
    RAILWIRE_E_REMOTE_ACCESS = -1026,      /* bad key, out of bounds, or WRITE to a read-only region */
    RAILWIRE_E_LIMIT = -1027,              /* a configured cap or queue bound was exceeded */
    RAILWIRE_E_NO_DEVICE = -1028,          /* no usable RDMA device/port */
    RAILWIRE_E_VERBS = -1029,              /* a libibverbs call failed (the log names which) */
    RAILWIRE_E_QP_RTR = -1030,             /* QP failed to reach RTR: check MTU and GID on both sides */
    RAILWIRE_E_RETRY_EXCEEDED = -1031,     /* transport retries exceeded: check MTU, GID, cabling */
    RAILWIRE_E_UNSUPPORTED = -1032,        /* not supported by this transport/build */
    RAILWIRE_E_CLOSED = -1033,             /* the object was closed while the operation was pending */
    RAILWIRE_E_PROTOCOL = -1034,           /* the peer sent bytes this side cannot accept */
    RAILWIRE_E_SYSTEM = -1035,             /* an OS call failed (the log names which and errno) */
    RAILWIRE_E_TLS = -1036,                /* TLS failed: handshake, credentials or a bad record (the log says what to check) */
    RAILWIRE_E_CANCELED = -1037,           /* the transfer was cancelled (railwire_cancel) */
};

/* Returns a static, human-readable message for `err` that says what went
 * wrong and what to check.  Unknown codes get a generic message.  Never
 * returns NULL; the caller must not free the string. */
RAILWIRE_API const char *railwire_strerror(int err);

/* Returns the short machine-readable class name of `err` ("peer-rejected",
 * "truncated", "bad-rail-count", "rail-count-mismatch", "bad-layer-count",
 * "refused" for the wire classes of spec/WIRE.md; "timeout", "io", ... for
 * the others).  Static string, never NULL. */
RAILWIRE_API const char *railwire_error_class(int err);

#ifdef __cplusplus
}
#endif
#endif
