/* SPDX-License-Identifier: MIT */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int log_level = -1; /* -1: not yet read from RAILWIRE_LOG */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static railwire_log_fn sink_fn;
static void *sink_user;

static int level_from_env(void)
{
    const char *s = getenv("RAILWIRE_LOG");
    if (!s)
        return RAILWIRE_LOG_WARN;
    if (!strcmp(s, "error"))
        return RAILWIRE_LOG_ERROR;
    if (!strcmp(s, "info"))
        return RAILWIRE_LOG_INFO;
    if (!strcmp(s, "debug"))
        return RAILWIRE_LOG_DEBUG;
    return RAILWIRE_LOG_WARN;
}

int rw_log_enabled(enum railwire_log_level level)
{
    int cur = atomic_load(&log_level);
    if (cur < 0) {
        cur = level_from_env();
        atomic_store(&log_level, cur);
    }
    return (int)level <= cur;
}

void railwire_log_set_level(enum railwire_log_level level)
{
    atomic_store(&log_level, (int)level);
}

void railwire_log_set_sink(railwire_log_fn fn, void *user)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_user = user;
    pthread_mutex_unlock(&sink_lock);
}

void rw_log(enum railwire_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char msg[1024];
    va_list ap;

    if (!rw_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&sink_lock);
    if (sink_fn)
        sink_fn(level, msg, sink_user);
    else
        fprintf(stderr, "railwire %s: %s\n", names[level], msg);
    pthread_mutex_unlock(&sink_lock);
}
