/* SPDX-License-Identifier: MIT */
/* Writing the Prometheus text exposition format (version 0.0.4) into a
 * caller's buffer, snprintf-style: the writer keeps counting past the end
 * of the buffer, so the caller learns the length it needs.  Used by
 * metrics_server.c and metrics_client.c. */
#ifndef RW_RAIL_METRICS_TEXT_H
#define RW_RAIL_METRICS_TEXT_H
#if defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/metrics/ serves src/rail/ only: transports, wire and common never include it"
#endif

#include <stddef.h>
#include <stdint.h>

struct rw_mtext {
    char *buf;   /* may be NULL when size is 0 */
    size_t size; /* bytes of buf, the NUL included */
    size_t len;  /* bytes of the whole text so far (may exceed size) */
};

/* Starts an empty text in buf[0..size). */
void rw_mt_init(struct rw_mtext *m, char *buf, size_t size);
/* Appends formatted text; what does not fit is counted, not written. */
void rw_mt_printf(struct rw_mtext *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the HELP and TYPE lines of one family.  help must not hold a
 * backslash or a newline (the renderers' texts are constants). */
void rw_mt_family(struct rw_mtext *m, const char *name, const char *type, const char *help);
/* Appends `s` as a label value: backslash, double quote and newline
 * escaped as the format requires. */
void rw_mt_label_value(struct rw_mtext *m, const char *s);
/* Appends railwire_build_info (HELP, TYPE and its one sample). */
void rw_mt_build_info(struct rw_mtext *m);
/* NUL-terminates what fits (when size > 0) and returns the whole length. */
size_t rw_mt_finish(struct rw_mtext *m);

#endif
