/* SPDX-License-Identifier: MIT */
/* railwire.Completion: a struct sequence (a named tuple made in C, cheap to
 * create for thousands of pages). */
#include "ext.h"

PyTypeObject *rwpy_completion_type;

static PyStructSequence_Field completion_fields[] = {
    {"handle", "the handle submit_* returned"},
    {"user_data", "the user_data given at submit"},
    {"status", "0 if every byte moved, else the RAILWIRE_E_* code"},
    {"length", "bytes of the transfer"},
    {"error", "None, or the railwire.Error the status stands for"},
    {"bytes_moved", "bytes known to have moved (== length on success; for a failed, cancelled "
                    "or timed-out transfer, those of its slices that completed)"},
    {NULL, NULL},
};

static PyStructSequence_Desc completion_desc = {
    "railwire.Completion",
    "A finished transfer: handle, user_data, status (0 or a RAILWIRE_E_* code), length, "
    "error (None or the railwire.Error it would raise); attribute bytes_moved.",
    completion_fields,
    5,
};

int rwpy_completion_init(PyObject *module)
{
    rwpy_completion_type = PyStructSequence_NewType(&completion_desc);
    if (!rwpy_completion_type)
        return -1;
    Py_INCREF(rwpy_completion_type);
    if (PyModule_AddObject(module, "Completion", (PyObject *)rwpy_completion_type) < 0) {
        Py_DECREF(rwpy_completion_type);
        return -1;
    }
    return 0;
}

static PyObject *completion_new(const railwire_completion *c)
{
    PyObject *o = PyStructSequence_New(rwpy_completion_type);
    if (!o)
        return NULL;
    PyObject *h = PyLong_FromUnsignedLongLong(c->handle);
    PyObject *u = PyLong_FromUnsignedLongLong(c->user_data);
    PyObject *s = PyLong_FromLong(c->status);
    PyObject *l = PyLong_FromSize_t(c->length);
    PyObject *b = PyLong_FromUnsignedLongLong(c->bytes_moved);
    PyObject *e;
    if (c->status) {
        char ctx[96];
        snprintf(ctx, sizeof(ctx), "transfer %llu (%zu bytes)", (unsigned long long)c->handle,
                 c->length);
        e = rwpy_error_new(c->status, ctx);
    } else {
        e = Py_NewRef(Py_None);
    }
    if (!h || !u || !s || !l || !e || !b) {
        Py_XDECREF(b);
        Py_XDECREF(h);
        Py_XDECREF(u);
        Py_XDECREF(s);
        Py_XDECREF(l);
        Py_XDECREF(e);
        Py_DECREF(o);
        return NULL;
    }
    PyStructSequence_SET_ITEM(o, 0, h);
    PyStructSequence_SET_ITEM(o, 1, u);
    PyStructSequence_SET_ITEM(o, 2, s);
    PyStructSequence_SET_ITEM(o, 3, l);
    PyStructSequence_SET_ITEM(o, 4, e);
    PyStructSequence_SET_ITEM(o, 5, b);
    return o;
}

PyObject *rwpy_completions_to_list(const railwire_completion *c, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *o = completion_new(&c[i]);
        if (!o) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}
