/* SPDX-License-Identifier: MIT */
/* One log message as one JSON object on one line, for log shippers
 * (RAILWIRE_LOG_FORMAT=json):
 *
 *   {"time":"2025-01-31T12:00:00.123Z","level":"warn","component":"server",
 *    "peer":"10.0.0.9:41234","rail":1,"suppressed":4,"message":"..."}
 *
 * time (UTC, milliseconds), level and message are always present; message is
 * the text exactly as the text format would show it.  The others are taken
 * from the message when it names them, as railwire's messages do:
 *   component   the leading "word:" (server, connect, verbs, ...)
 *   peer        the address after "client " (the server's sessions)
 *   rail        the number after "rail "
 *   suppressed  N of a trailing " (N similar lines suppressed)"
 * Strings are escaped per RFC 8259; bytes that are not valid UTF-8 become
 * U+FFFD, so every line is valid UTF-8 JSON. */
#ifndef RW_COMMON_LOG_JSON_H
#define RW_COMMON_LOG_JSON_H

#include <stddef.h>
#include <time.h>

#include "common/log.h"

/* A buffer of this size always holds a whole line for a message of up to
 * RW_LOG_MSG_MAX - 1 bytes (the length rw_log formats to). */
#define RW_LOG_JSON_MAX (RW_LOG_MSG_MAX * 8 + 512)

/* Writes the JSON line for `msg` (logged at `level`, wall-clock time `when`)
 * into `out`, newline-terminated and NUL-terminated.  Returns its length
 * without the NUL.  When `cap` is too small the message is cut at a
 * character boundary and "truncated":true is added, so the output is still
 * one valid JSON object; `cap` must be at least 256. */
size_t rw_log_json_line(char *out, size_t cap, const struct timespec *when,
                        enum railwire_log_level level, const char *msg);

#endif
