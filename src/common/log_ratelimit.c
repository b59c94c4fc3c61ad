/* SPDX-License-Identifier: MIT */
/* Per-call-site rate limiting of repeatable log lines (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"

int rw_log_rl_admit(struct rw_log_rl *rl, uint64_t now_ns, unsigned long *suppressed)
{
    const uint64_t interval_ns = (uint64_t)RW_LOG_RL_INTERVAL_MS * 1000000ull;
    int ok;

    pthread_mutex_lock(&rl->lock);
    /* A clock that went backwards (another thread's earlier reading) stays
     * in the current window. */
    if (!rl->started || (now_ns > rl->window_start_ns &&
                         now_ns - rl->window_start_ns >= interval_ns)) {
        rl->started = 1;
        rl->window_start_ns = now_ns;
        rl->emitted = 0;
    }
    ok = rl->emitted < RW_LOG_RL_BURST;
    if (ok) {
        rl->emitted++;
        *suppressed = rl->suppressed;
        rl->suppressed = 0;
    } else {
        rl->suppressed++;
    }
    pthread_mutex_unlock(&rl->lock);
    return ok;
}

static void __attribute__((format(printf, 4, 0)))
log_rl_v(struct rw_log_rl *rl, uint64_t now_ns, enum railwire_log_level level, const char *fmt,
         va_list ap)
{
    char msg[RW_LOG_MSG_MAX];
    unsigned long suppressed;

    if (!rw_log_enabled(level) || !rw_log_rl_admit(rl, now_ns, &suppressed))
        return;
    char suffix[64] = "";
    if (suppressed)
        snprintf(suffix, sizeof(suffix), RW_LOG_RL_SUFFIX, suppressed);
    /* The suffix survives a message long enough to be cut. */
    size_t room = sizeof(msg) - strlen(suffix);
    vsnprintf(msg, room, fmt, ap);
    strcat(msg, suffix);
    rw_log_emit(level, msg);
}

void rw_log_rl_at(struct rw_log_rl *rl, uint64_t now_ns, enum railwire_log_level level,
                  const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_rl_v(rl, now_ns, level, fmt, ap);
    va_end(ap);
}

void rw_log_rl(struct rw_log_rl *rl, enum railwire_log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_rl_v(rl, rw_now_ns(), level, fmt, ap);
    va_end(ap);
}
