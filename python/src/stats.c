/* SPDX-License-Identifier: MIT */
/* Railset.stats(): one dict per rail.  Every field of railwire_rail_stats
 * is converted here and nowhere else; a field added to the struct is added
 * to this function alone. */
#include "ext.h"

static int put(PyObject *d, const char *key, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

PyObject *rwpy_rail_stats_to_dict(const railwire_rail_stats *s)
{
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    const char *state = s->state == RAILWIRE_RAIL_UP ? "up" : "down";
    if (put(d, "index", PyLong_FromUnsignedLong(s->index)) < 0 ||
        put(d, "state", PyUnicode_FromString(state)) < 0 ||
        put(d, "name", PyUnicode_FromString(s->name)) < 0 ||
        put(d, "gbps", PyFloat_FromDouble(s->gbps)) < 0 ||
        put(d, "bytes_read", PyLong_FromUnsignedLongLong(s->bytes_read)) < 0 ||
        put(d, "bytes_written", PyLong_FromUnsignedLongLong(s->bytes_written)) < 0 ||
        put(d, "ops", PyLong_FromUnsignedLongLong(s->ops)) < 0 ||
        put(d, "errors", PyLong_FromUnsignedLongLong(s->errors)) < 0 ||
        put(d, "reissued", PyLong_FromUnsignedLongLong(s->reissued)) < 0 ||
        put(d, "down_reason", PyLong_FromLong(s->down_reason)) < 0 ||
        put(d, "down_error", s->down_reason ? PyUnicode_FromString(railwire_error_class(s->down_reason))
                                            : Py_NewRef(Py_None)) < 0 ||
        put(d, "last_down_reason", PyLong_FromLong(s->last_down_reason)) < 0 ||
        put(d, "heals", PyLong_FromUnsignedLongLong(s->heals)) < 0 ||
        put(d, "heal_attempts", PyLong_FromUnsignedLongLong(s->heal_attempts)) < 0 ||
        put(d, "session", PyLong_FromUnsignedLong(s->session)) < 0 ||
        put(d, "control_up", PyBool_FromLong(s->control_up)) < 0 ||
        put(d, "tls", PyUnicode_FromString(s->tls == RAILWIRE_RAIL_TLS_KERNEL ? "kernel"
                                           : s->tls == RAILWIRE_RAIL_TLS_USER ? "user"
                                                                               : "off")) < 0 ||
        put(d, "tls_ktls", PyUnicode_FromString(
                               (const char *const[]){"none", "send", "recv", "both"}[s->tls_ktls & 3u])) < 0 ||
        put(d, "regs_host", PyLong_FromUnsignedLongLong(s->regs_host)) < 0 ||
        put(d, "regs_dmabuf", PyLong_FromUnsignedLongLong(s->regs_dmabuf)) < 0 ||
        put(d, "regs_peermem", PyLong_FromUnsignedLongLong(s->regs_peermem)) < 0 ||
        put(d, "regs_staged", PyLong_FromUnsignedLongLong(s->regs_staged)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}
