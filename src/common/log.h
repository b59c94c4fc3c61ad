/* SPDX-License-Identifier: MIT */
/* Internal logging: rw_log(level, fmt, ...) goes to the sink set through the
 * public railwire/log.h API.  The function that first decides an error logs
 * it; callers above only pass the code on.
 *
 * Output format (railwire's own stderr output, no sink installed):
 *   RAILWIRE_LOG_FORMAT unset or "text": "railwire LEVEL: message\n"
 *   RAILWIRE_LOG_FORMAT=json: one JSON object per line, see log_json.h. */
#ifndef RW_COMMON_LOG_H
#define RW_COMMON_LOG_H

#include <pthread.h>
#include <stdint.h>

#include <railwire/log.h>

/* Longest message, with its NUL; longer ones are cut. */
#define RW_LOG_MSG_MAX 1024

/* Formats and emits one message if `level` is enabled.  Thread-safe. */
void rw_log(enum railwire_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns non-zero when messages of `level` would be emitted. */
int rw_log_enabled(enum railwire_log_level level);

/* Returns non-zero when RAILWIRE_LOG_FORMAT=json asks for JSON lines (read
 * once, on first use).  The railwire command's own sink asks this too. */
int rw_log_format_json(void);

#define rw_err(...) rw_log(RAILWIRE_LOG_ERROR, __VA_ARGS__)
#define rw_warn(...) rw_log(RAILWIRE_LOG_WARN, __VA_ARGS__)
#define rw_info(...) rw_log(RAILWIRE_LOG_INFO, __VA_ARGS__)
#define rw_debug(...) rw_log(RAILWIRE_LOG_DEBUG, __VA_ARGS__)

/* ---------------------------------------------------------------------------
 * Rate-limited lines, for anything a peer or a fault can repeat at will
 * (a storm of bad hellos, accept failing with EMFILE, a flapping rail).
 *
 * Each call site has its own limiter.  Within any window of
 * RW_LOG_RL_INTERVAL_MS milliseconds (monotonic clock) a site emits at most
 * RW_LOG_RL_BURST lines; further lines in that window are counted, not
 * formatted.  The next line the site emits (in a later window) ends with
 * " (N similar lines suppressed)".  A storm that stops leaves its last count
 * unreported until the site logs again.
 *
 * Converting a call site: replace rw_warn(...) by rw_warn_rl(...) (same for
 * rw_err_rl, rw_info_rl, rw_debug_rl).  Nothing else changes: the macro
 * declares the site's limiter as a function-scope static, so it needs no
 * allocation and no setup, and two call sites never share a limit.  A
 * message that differs per peer is still one site: the limit is per line of
 * code, not per text.  Thread-safe: the limiter takes its own tiny lock and
 * formats nothing while holding it.
 * ------------------------------------------------------------------------- */

/* Window length and lines allowed per window, per call site. */
#define RW_LOG_RL_INTERVAL_MS 5000
#define RW_LOG_RL_BURST 5

/* One call site's limiter state.  Initialise with RW_LOG_RL_INIT. */
struct rw_log_rl {
    pthread_mutex_t lock;
    uint64_t window_start_ns; /* start of the current window */
    unsigned emitted;         /* lines emitted in the current window */
    unsigned long suppressed; /* lines dropped since the last emitted one */
    int started;              /* 0 until the first line */
};
#define RW_LOG_RL_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0}

/* Decides whether one line may be emitted at monotonic time `now_ns`.
 * Returns 1 (emit) and sets *suppressed to the number of lines dropped since
 * the site's last emitted line (then resets that count), or returns 0 (drop;
 * the line is counted).  Thread-safe. */
int rw_log_rl_admit(struct rw_log_rl *rl, uint64_t now_ns, unsigned long *suppressed);

/* Emits one line through `rl` at time `now_ns` if `level` is enabled and the
 * limiter admits it; appends the suppressed count when it is not zero.
 * Disabled levels are neither emitted nor counted. */
void rw_log_rl_at(struct rw_log_rl *rl, uint64_t now_ns, enum railwire_log_level level,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* rw_log_rl_at() with the current monotonic time. */
void rw_log_rl(struct rw_log_rl *rl, enum railwire_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The suffix appended after a suppression, with N in place of %lu. */
#define RW_LOG_RL_SUFFIX " (%lu similar lines suppressed)"

#define rw_log_ratelimited(level, ...)                                    \
    do {                                                                  \
        static struct rw_log_rl rw_log_rl_site_ = RW_LOG_RL_INIT;         \
        rw_log_rl(&rw_log_rl_site_, (level), __VA_ARGS__);                \
    } while (0)

#define rw_err_rl(...) rw_log_ratelimited(RAILWIRE_LOG_ERROR, __VA_ARGS__)
#define rw_warn_rl(...) rw_log_ratelimited(RAILWIRE_LOG_WARN, __VA_ARGS__)
#define rw_info_rl(...) rw_log_ratelimited(RAILWIRE_LOG_INFO, __VA_ARGS__)
#define rw_debug_rl(...) rw_log_ratelimited(RAILWIRE_LOG_DEBUG, __VA_ARGS__)

/* Emits an already formatted message (level already checked by the caller):
 * to the sink if one is set, else to stderr in the configured format. */
void rw_log_emit(enum railwire_log_level level, const char *msg);

#endif
