/* SPDX-License-Identifier: MIT */
/* Logging.  By default railwire writes warnings and errors to stderr; the
 * level can be set with RAILWIRE_LOG=error|warn|info|debug or with
 * railwire_log_set_level(), and the sink replaced with railwire_log_set_sink().
 * RAILWIRE_LOG_FORMAT=json makes the default stderr output one JSON object
 * per line (docs/logging.md); a sink always receives the plain message. */
#ifndef RAILWIRE_LOG_H
#define RAILWIRE_LOG_H

#include <railwire/export.h>

#ifdef __cplusplus
extern "C" {
#endif

enum railwire_log_level {
    RAILWIRE_LOG_ERROR = 0,
    RAILWIRE_LOG_WARN = 1,
    RAILWIRE_LOG_INFO = 2,
    RAILWIRE_LOG_DEBUG = 3,
};

/* Receives one formatted message (no trailing newline).  `msg` is only valid
 * during the call.  May be called from any railwire thread. */
typedef void (*railwire_log_fn)(enum railwire_log_level level, const char *msg, void *user);

/* Sets the most verbose level that is emitted.  Thread-safe. */
RAILWIRE_API void railwire_log_set_level(enum railwire_log_level level);

/* Replaces the sink (NULL restores stderr).  `user` is passed back unchanged;
 * railwire does not own it. */
RAILWIRE_API void railwire_log_set_sink(railwire_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
