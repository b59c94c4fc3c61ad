/* SPDX-License-Identifier: MIT */
/* Offsets, lengths, layers and user data of submit_batch: an int, a
 * sequence of ints, or a 1-D integer buffer (a numpy array, read through the
 * buffer protocol so no numpy C API is needed). */
#include <string.h>

#include "ext.h"

/* The element kind of a buffer format: 1 signed, 0 unsigned, -1 not an
 * integer type (or not native byte order). */
static int int_kind(const char *fmt)
{
    if (!fmt)
        return 0; /* no format: unsigned bytes */
    if (*fmt == '@' || *fmt == '=' || (*fmt == '<' && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) ||
        (*fmt == '>' && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
        fmt++;
    if (!fmt[0] || fmt[1])
        return -1;
    if (strchr("bhilqn", *fmt))
        return 1;
    if (strchr("BHILQN", *fmt))
        return 0;
    return -1;
}

static int get_view(PyObject *obj, const char *what, Py_buffer *v)
{
    if (PyObject_GetBuffer(obj, v, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return -1;
    if (v->ndim != 1 || int_kind(v->format) < 0 ||
        (v->itemsize != 1 && v->itemsize != 2 && v->itemsize != 4 && v->itemsize != 8)) {
        PyErr_Format(PyExc_TypeError, "%s must be a 1-D array of native integers (got %d-D, "
                     "format '%s')", what, v->ndim, v->format ? v->format : "B");
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

Py_ssize_t rwpy_array_len(PyObject *obj, const char *what)
{
    if (PyObject_CheckBuffer(obj)) {
        Py_buffer v;
        if (get_view(obj, what, &v) < 0)
            return -1;
        Py_ssize_t n = v.shape[0];
        PyBuffer_Release(&v);
        return n;
    }
    if (!PySequence_Check(obj) || PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of ints or a 1-D integer array, not %s",
                     what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    return PySequence_Size(obj);
}

static int from_view(const Py_buffer *v, const char *what, size_t n, uint64_t *out)
{
    int sign = int_kind(v->format);
    const char *p = v->buf;
    Py_ssize_t stride = v->strides ? v->strides[0] : v->itemsize;

    for (size_t i = 0; i < n; i++, p += stride) {
        int64_t s = 0;
        uint64_t u = 0;
        switch (v->itemsize) {
        case 1: { uint8_t x; memcpy(&x, p, 1); u = x; s = (int8_t)x; break; }
        case 2: { uint16_t x; memcpy(&x, p, 2); u = x; s = (int16_t)x; break; }
        case 4: { uint32_t x; memcpy(&x, p, 4); u = x; s = (int32_t)x; break; }
        default: { uint64_t x; memcpy(&x, p, 8); u = x; s = (int64_t)x; break; }
        }
        if (sign && s < 0) {
            rwpy_raise(RAILWIRE_E_INVALID, "%s[%zu] is negative (%lld)", what, i, (long long)s);
            return -1;
        }
        out[i] = sign ? (uint64_t)s : u;
    }
    return 0;
}

/* One Python int (or anything with __index__) as uint64. */
static int one_int(PyObject *item, const char *what, size_t i, int indexed, uint64_t *out)
{
    PyObject *v = PyNumber_Index(item);
    if (!v)
        return -1;
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyObject *zero = PyLong_FromLong(0);
            int neg = zero ? PyObject_RichCompareBool(v, zero, Py_LT) : -1;
            Py_XDECREF(zero);
            if (indexed)
                rwpy_raise(RAILWIRE_E_INVALID, "%s[%zu] is %s", what, i,
                           neg > 0 ? "negative" : "above 2**64 - 1");
            else
                rwpy_raise(RAILWIRE_E_INVALID, "%s is %s", what,
                           neg > 0 ? "negative" : "above 2**64 - 1");
        }
        Py_DECREF(v);
        return -1;
    }
    Py_DECREF(v);
    *out = u;
    return 0;
}

int rwpy_uint64(PyObject *obj, const char *what, uint64_t *out)
{
    return one_int(obj, what, 0, 0, out);
}

int rwpy_uint64_array(PyObject *obj, const char *what, int allow_scalar, size_t n, uint64_t *out)
{
    if (allow_scalar && (PyLong_Check(obj) || (!PySequence_Check(obj) && !PyObject_CheckBuffer(obj) &&
                                               PyIndex_Check(obj)))) {
        uint64_t v;
        if (one_int(obj, what, 0, 0, &v) < 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            out[i] = v;
        return 0;
    }
    if (PyObject_CheckBuffer(obj)) {
        Py_buffer v;
        if (get_view(obj, what, &v) < 0)
            return -1;
        int rc = 0;
        if ((size_t)v.shape[0] != n) {
            rwpy_raise(RAILWIRE_E_INVALID, "%s has %zd entries, the batch has %zu", what, v.shape[0], n);
            rc = -1;
        } else {
            rc = from_view(&v, what, n, out);
        }
        PyBuffer_Release(&v);
        return rc;
    }
    PyObject *seq = PySequence_Fast(obj, "");
    if (!seq) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be %sa sequence of ints or a 1-D integer array, not %s",
                     what, allow_scalar ? "an int, " : "", Py_TYPE(obj)->tp_name);
        return -1;
    }
    int rc = 0;
    if ((size_t)PySequence_Fast_GET_SIZE(seq) != n) {
        rwpy_raise(RAILWIRE_E_INVALID, "%s has %zd entries, the batch has %zu", what,
                   PySequence_Fast_GET_SIZE(seq), n);
        rc = -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = one_int(items[i], what, i, 1, &out[i]);
    Py_DECREF(seq);
    return rc;
}
