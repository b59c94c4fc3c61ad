/* SPDX-License-Identifier: MIT */
/* The text format writer (metrics_text.h). */
#include <stdarg.h>
#include <stdio.h>

#include "rail/metrics/metrics_text.h"

#ifndef RAILWIRE_VERSION
#define RAILWIRE_VERSION "unknown"
#endif

void rw_mt_init(struct rw_mtext *m, char *buf, size_t size)
{
    m->buf = size ? buf : NULL;
    m->size = m->buf ? size : 0;
    m->len = 0;
    if (m->size)
        m->buf[0] = '\0';
}

static void put_char(struct rw_mtext *m, char ch)
{
    if (m->len + 1 < m->size)
        m->buf[m->len] = ch;
    m->len++;
}

void rw_mt_printf(struct rw_mtext *m, const char *fmt, ...)
{
    va_list ap;
    /* Writes at buf + len while there is room; once past the end only
     * counts (vsnprintf with size 0). */
    size_t room = m->len < m->size ? m->size - m->len : 0;
    va_start(ap, fmt);
    int n = vsnprintf(room ? m->buf + m->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        m->len += (size_t)n;
}

void rw_mt_family(struct rw_mtext *m, const char *name, const char *type, const char *help)
{
    rw_mt_printf(m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void rw_mt_label_value(struct rw_mtext *m, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') {
            put_char(m, '\\');
            put_char(m, *s);
        } else if (*s == '\n') {
            put_char(m, '\\');
            put_char(m, 'n');
        } else {
            put_char(m, *s);
        }
    }
}

void rw_mt_build_info(struct rw_mtext *m)
{
    rw_mt_family(m, "railwire_build_info", "gauge",
                 "Always 1; the labels say which railwire library produced these metrics "
                 "(verbs: whether the verbs transport was built in).");
    rw_mt_printf(m, "railwire_build_info{version=\"%s\",verbs=\"%s\"} 1\n", RAILWIRE_VERSION,
                 RAILWIRE_HAVE_VERBS ? "yes" : "no");
}

size_t rw_mt_finish(struct rw_mtext *m)
{
    if (m->size)
        m->buf[m->len < m->size ? m->len : m->size - 1] = '\0';
    return m->len;
}
