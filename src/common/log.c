/* SPDX-License-Identifier: MIT */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log_json.h"

static atomic_int log_level = -1;  /* -1: not yet read from RAILWIRE_LOG */
static atomic_int log_format = -1; /* -1: not yet read; 0 text, 1 json */
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

int rw_log_format_json(void)
{
    int cur = atomic_load(&log_format);
    if (cur < 0) {
        const char *s = getenv("RAILWIRE_LOG_FORMAT");
        cur = s && !strcmp(s, "json");
        int expected = -1;
        /* Only the first reader complains about a bad value. */
        if (atomic_compare_exchange_strong(&log_format, &expected, cur) && s && *s && !cur &&
            strcmp(s, "text") != 0)
            fprintf(stderr, "railwire warn: RAILWIRE_LOG_FORMAT='%s' is not text or json; "
                            "using text\n", s);
    }
    return cur;
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

/* The default sink: stderr, text or JSON. */
static void emit_stderr(enum railwire_log_level level, const char *msg)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};

    if (rw_log_format_json()) {
        char line[RW_LOG_JSON_MAX];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        size_t n = rw_log_json_line(line, sizeof(line), &now, level, msg);
        fwrite(line, 1, n, stderr);
    } else {
        fprintf(stderr, "railwire %s: %s\n", names[level], msg);
    }
}

void rw_log_emit(enum railwire_log_level level, const char *msg)
{
    pthread_mutex_lock(&sink_lock);
    if (sink_fn)
        sink_fn(level, msg, sink_user);
    else
        emit_stderr(level, msg);
    pthread_mutex_unlock(&sink_lock);
}

void rw_log(enum railwire_log_level level, const char *fmt, ...)
{
    char msg[RW_LOG_MSG_MAX];
    va_list ap;

    if (!rw_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rw_log_emit(level, msg);
}
