/* SPDX-License-Identifier: MIT */
/* Internal logging: rw_log(level, fmt, ...) goes to the sink set through the
 * public railwire/log.h API.  The function that first decides an error logs
 * it; callers above only pass the code on. */
#ifndef RW_COMMON_LOG_H
#define RW_COMMON_LOG_H

#include <railwire/log.h>

/* Formats and emits one message if `level` is enabled.  Thread-safe. */
void rw_log(enum railwire_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns non-zero when messages of `level` would be emitted. */
int rw_log_enabled(enum railwire_log_level level);

#define rw_err(...) rw_log(RAILWIRE_LOG_ERROR, __VA_ARGS__)
#define rw_warn(...) rw_log(RAILWIRE_LOG_WARN, __VA_ARGS__)
#define rw_info(...) rw_log(RAILWIRE_LOG_INFO, __VA_ARGS__)
#define rw_debug(...) rw_log(RAILWIRE_LOG_DEBUG, __VA_ARGS__)

#endif
