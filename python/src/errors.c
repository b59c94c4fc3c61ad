/* SPDX-License-Identifier: MIT */
/* Turning RAILWIRE_E_* codes into railwire.Error exceptions.  The classes
 * live in railwire/errors.py; it hands this file a factory
 * (code, message) -> exception instance at import. */
#include <stdarg.h>
#include <stdio.h>

#include "ext.h"

static PyObject *factory; /* strong reference, set by _set_error_factory */

PyObject *rwpy_set_error_factory(PyObject *self, PyObject *fn)
{
    (void)self;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(factory, fn);
    Py_RETURN_NONE;
}

void rwpy_errors_clear(void)
{
    Py_CLEAR(factory);
}

PyObject *rwpy_error_new(int code, const char *context)
{
    char msg[1024];

    if (context && context[0])
        snprintf(msg, sizeof(msg), "%s: %s: %s", context, railwire_error_class(code),
                 railwire_strerror(code));
    else
        snprintf(msg, sizeof(msg), "%s: %s", railwire_error_class(code), railwire_strerror(code));
    if (!factory) /* only before railwire/__init__.py ran: a plain RuntimeError */
        return PyObject_CallFunction(PyExc_RuntimeError, "s", msg);
    return PyObject_CallFunction(factory, "is", code, msg);
}

PyObject *rwpy_raise(int code, const char *fmt, ...)
{
    char context[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(context, sizeof(context), fmt, ap);
    va_end(ap);
    PyObject *exc = rwpy_error_new(code, context);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}
