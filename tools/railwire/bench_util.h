/* SPDX-License-Identifier: MIT */
/* Helpers shared by `railwire serve` and `railwire bench`: parsing sizes and
 * HOST:PORT addresses, a timestamped log sink, and a monotonic clock. */
#ifndef RAILWIRE_TOOL_BENCH_UTIL_H
#define RAILWIRE_TOOL_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <railwire.h>

/* Maps len bytes of zeroed anonymous memory for a benchmark's transfer
 * buffers, advised MADV_HUGEPAGE and every page resident (faulted in here,
 * not inside the timed run: at depth d a bench maps d x size bytes, and
 * both first-touch faults and the page walks of 4 KiB pages over such a
 * working set cost more than the transfer in a VM).  Returns the mapping
 * (release with munmap(p, len)) or NULL. */
void *tool_buf_alloc(size_t len);

/* Parses a byte count such as "4096", "4K", "64M", "1G", "2GiB" (binary
 * multipliers K/M/G/T, optional "B"/"iB").  Returns 0 and sets *out, or -1
 * (with a message naming `what` on stderr) for garbage, overflow or 0 when
 * allow_zero is 0. */
int tool_parse_size(const char *s, const char *what, int allow_zero, uint64_t *out);

/* Parses an unsigned decimal in [lo, hi].  Returns 0 or -1 with a message. */
int tool_parse_uint(const char *s, const char *what, unsigned long lo, unsigned long hi,
                    unsigned long *out);

/* Parses a --busy-poll-us value: microseconds 0..1000000, where 0 means
 * sleep at once.  Sets *out to the library's option value (0 becomes -1,
 * since the library reads 0 as its default).  Returns 0 or -1 with a
 * message naming `what`. */
int tool_parse_busy_poll(const char *s, const char *what, int *out);

/* Splits "HOST:PORT" or "[V6]:PORT" into host and port (copied into the
 * caller's buffers).  The port must be numeric 0..65535, and the host must
 * resolve (getaddrinfo).  Returns 0 or -1 with a message on stderr. */
int tool_parse_hostport(const char *s, const char *what, char *host, size_t hostcap,
                        char *port, size_t portcap);

/* Formats host and port as "HOST:PORT" or "[V6]:PORT" into buf. */
void tool_format_hostport(char *buf, size_t cap, const char *host, unsigned port);

/* Parses "ro"/"rw" and "tcp"/"verbs"/"auto".  Return 0 or -1 with a message. */
int tool_parse_dialect(const char *s, enum railwire_dialect *out);
int tool_parse_transport(const char *s, enum railwire_transport *out);

/* Formats a byte count as "4 KiB", "64 MiB", or "1234 B" into buf. */
void tool_format_size(char *buf, size_t cap, uint64_t bytes);

/* A railwire_log_fn that writes "2026-01-01T12:00:00.123Z LEVEL msg" lines to
 * the FILE* passed as `user` (stderr when NULL); with RAILWIRE_LOG_FORMAT=json,
 * one JSON object per line instead (src/common/log_json.h). */
void tool_log_sink(enum railwire_log_level level, const char *msg, void *user);

/* Sets the library log level from RAILWIRE_LOG if it is set, else `dflt`. */
void tool_log_level_default(enum railwire_log_level dflt);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tool_now_ns(void);

#endif
