/* SPDX-License-Identifier: MIT */
/* The Prometheus text of a railset or a server as a Python str: the C
 * renderers follow snprintf, so the buffer grows until the text fits. */
#include <stdlib.h>

#include "ext.h"

ssize_t rwpy_metrics_render(rwpy_metrics_fn render, const void *obj, char **out)
{
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = RAILWIRE_E_STATE;

    for (int tries = 0; tries < 4; tries++) {
        n = render(obj, buf, cap);
        if (n < 0 || (size_t)n < cap)
            break;
        cap = (size_t)n + 1024; /* counters may gain digits between calls */
        char *nb = realloc(buf, cap);
        if (!nb) {
            n = RAILWIRE_E_NOMEM;
            break;
        }
        buf = nb;
        n = RAILWIRE_E_STATE; /* until a call fits */
    }
    if (n < 0) {
        free(buf);
        buf = NULL;
    }
    *out = buf;
    return n;
}

PyObject *rwpy_metrics_str(ssize_t n, char *text, const char *what)
{
    PyObject *s = NULL;
    if (n == RAILWIRE_E_STATE)
        rwpy_raise((int)n, "metrics of %s kept growing", what);
    else if (n < 0)
        rwpy_raise((int)n, "metrics of %s", what);
    else
        s = PyUnicode_DecodeUTF8(text, n, "replace");
    free(text);
    return s;
}
