/* SPDX-License-Identifier: MIT */
/* Taking the memory of a Python object without copying it: the buffer
 * protocol (bytearray, bytes, memoryview, mmap, numpy arrays), then
 * __array_interface__, then a CPU torch tensor's data_ptr(). */
#include <stdlib.h>
#include <string.h>

#include "ext.h"

static int from_buffer_protocol(PyObject *obj, int want_write, struct rwpy_buf *b)
{
    const int flags = PyBUF_ANY_CONTIGUOUS;

    if (PyObject_GetBuffer(obj, &b->view, flags | PyBUF_WRITABLE) == 0) {
        b->readonly = 0;
    } else {
        if (!PyErr_ExceptionMatches(PyExc_BufferError))
            return -1;
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (PyObject_GetBuffer(obj, &b->view, flags) < 0) {
            /* not contiguous (or another reason): the first error says why */
            PyErr_Clear();
            PyErr_Restore(et, ev, tb);
            return -1;
        }
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        if (want_write) {
            PyBuffer_Release(&b->view);
            rwpy_raise(RAILWIRE_E_INVALID, "%s is read-only; a READ target and an RW arena must be "
                       "writable (bytearray, numpy array, mmap opened for writing)",
                       Py_TYPE(obj)->tp_name);
            return -1;
        }
        b->readonly = 1;
    }
    b->has_view = 1;
    b->addr = b->view.buf;
    b->len = (size_t)b->view.len;
    return 0;
}

/* Returns 1 if a C-contiguous array of `shape` with element size `item`
 * has these strides (None counts as contiguous). */
static int c_contiguous(PyObject *shape, PyObject *strides, Py_ssize_t item)
{
    if (strides == NULL || strides == Py_None)
        return 1;
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != PyTuple_GET_SIZE(shape))
        return 0;
    Py_ssize_t want = item;
    for (Py_ssize_t i = PyTuple_GET_SIZE(shape); i-- > 0;) {
        Py_ssize_t dim = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        Py_ssize_t st = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
        if (PyErr_Occurred())
            return -1;
        if (dim > 1 && st != want)
            return 0;
        want *= dim;
    }
    return 1;
}

static int from_array_interface(PyObject *obj, PyObject *ai, int want_write, struct rwpy_buf *b)
{
    PyObject *data, *shape, *typestr, *strides;

    if (!PyDict_Check(ai)) {
        PyErr_Format(PyExc_TypeError, "%s.__array_interface__ is not a dict", Py_TYPE(obj)->tp_name);
        return -1;
    }
    data = PyDict_GetItemString(ai, "data");
    shape = PyDict_GetItemString(ai, "shape");
    typestr = PyDict_GetItemString(ai, "typestr");
    strides = PyDict_GetItemString(ai, "strides");
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !shape ||
        !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr)) {
        PyErr_Format(PyExc_TypeError, "%s.__array_interface__ needs 'data' as (address, readonly), "
                     "'shape' and 'typestr'", Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *ts = PyUnicode_AsUTF8(typestr);
    if (!ts)
        return -1;
    Py_ssize_t item = strlen(ts) > 2 ? (Py_ssize_t)strtol(ts + 2, NULL, 10) : 0;
    if (item <= 0) {
        PyErr_Format(PyExc_TypeError, "%s.__array_interface__ typestr '%s' has no item size",
                     Py_TYPE(obj)->tp_name, ts);
        return -1;
    }
    int contig = c_contiguous(shape, strides, item);
    if (contig < 0)
        return -1;
    if (!contig) {
        rwpy_raise(RAILWIRE_E_INVALID, "%s is not contiguous; register a contiguous array (numpy: "
                   "np.ascontiguousarray)", Py_TYPE(obj)->tp_name);
        return -1;
    }
    size_t len = (size_t)item;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t dim = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (dim < 0)
            return -1;
        len *= (size_t)dim;
    }
    void *addr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (PyErr_Occurred() || ro < 0)
        return -1;
    if (ro && want_write) {
        rwpy_raise(RAILWIRE_E_INVALID, "%s is read-only; a READ target must be writable",
                   Py_TYPE(obj)->tp_name);
        return -1;
    }
    b->addr = addr;
    b->len = len;
    b->readonly = ro;
    b->keep = Py_NewRef(obj);
    return 0;
}

/* A torch.Tensor (or anything shaped like one): device.type == "cpu",
 * is_contiguous(), data_ptr(), numel() * element_size() bytes. */
static int from_data_ptr(PyObject *obj, struct rwpy_buf *b)
{
    PyObject *dev = NULL, *type = NULL, *contig = NULL, *ptr = NULL, *numel = NULL, *esize = NULL;
    int rc = -1;

    dev = PyObject_GetAttrString(obj, "device");
    if (dev) {
        type = PyObject_GetAttrString(dev, "type");
        if (!type)
            goto out;
        if (!PyUnicode_Check(type) || PyUnicode_CompareWithASCIIString(type, "cpu") != 0) {
            const char *t = PyUnicode_Check(type) ? PyUnicode_AsUTF8(type) : NULL;
            rwpy_raise(RAILWIRE_E_INVALID, "the tensor is on device '%s'; only CPU memory can be "
                       "registered (move it with .cpu() or pin a host copy)", t ? t : "?");
            goto out;
        }
    } else {
        PyErr_Clear();
    }
    contig = PyObject_CallMethod(obj, "is_contiguous", NULL);
    if (!contig) {
        PyErr_Clear();
    } else if (!PyObject_IsTrue(contig)) {
        rwpy_raise(RAILWIRE_E_INVALID, "the tensor is not contiguous; register t.contiguous()");
        goto out;
    }
    ptr = PyObject_CallMethod(obj, "data_ptr", NULL);
    numel = PyObject_CallMethod(obj, "numel", NULL);
    esize = PyObject_CallMethod(obj, "element_size", NULL);
    if (!ptr || !numel || !esize)
        goto out;
    void *addr = PyLong_AsVoidPtr(ptr);
    size_t n = PyLong_AsSize_t(numel), es = PyLong_AsSize_t(esize);
    if (PyErr_Occurred())
        goto out;
    b->addr = addr;
    b->len = n * es;
    b->readonly = 0;
    b->keep = Py_NewRef(obj);
    rc = 0;
out:
    Py_XDECREF(dev);
    Py_XDECREF(type);
    Py_XDECREF(contig);
    Py_XDECREF(ptr);
    Py_XDECREF(numel);
    Py_XDECREF(esize);
    return rc;
}

int rwpy_buf_acquire(PyObject *obj, int want_write, struct rwpy_buf *b)
{
    int rc;

    memset(b, 0, sizeof(*b));
    PyObject *cai = NULL;
    if (PyObject_CheckBuffer(obj)) {
        rc = from_buffer_protocol(obj, want_write, b);
    } else if ((cai = PyObject_GetAttrString(obj, "__cuda_array_interface__")) != NULL) {
        /* CuPy, Numba, torch CUDA tensors: the same fields as
         * __array_interface__, naming device memory */
        rc = from_array_interface(obj, cai, want_write, b);
        Py_DECREF(cai);
        b->cuda = 1;
    } else {
        PyErr_Clear(); /* e.g. a CPU torch tensor refuses __cuda_array_interface__ */
        PyObject *ai = PyObject_GetAttrString(obj, "__array_interface__");
        if (ai) {
            rc = from_array_interface(obj, ai, want_write, b);
            Py_DECREF(ai);
        } else if (PyErr_Clear(), PyObject_HasAttrString(obj, "data_ptr")) {
            rc = from_data_ptr(obj, b);
        } else {
            PyErr_Format(PyExc_TypeError, "cannot register a %s: give a contiguous buffer "
                         "(bytearray, memoryview, mmap, numpy array), a CPU torch tensor, or "
                         "an object with __cuda_array_interface__ (CuPy, Numba, CUDA torch tensor)",
                         Py_TYPE(obj)->tp_name);
            rc = -1;
        }
    }
    if (rc < 0) {
        memset(b, 0, sizeof(*b));
        return -1;
    }
    if (b->len == 0 || !b->addr) {
        rwpy_buf_release(b);
        rwpy_raise(RAILWIRE_E_INVALID, "the %s is empty; a registered buffer needs at least one byte",
                   Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

void rwpy_buf_release(struct rwpy_buf *b)
{
    if (b->has_view)
        PyBuffer_Release(&b->view);
    b->has_view = 0;
    Py_CLEAR(b->keep);
    b->addr = NULL;
    b->len = 0;
}

PyObject *rwpy_buf_object(const struct rwpy_buf *b)
{
    if (b->has_view)
        return b->view.obj;
    return b->keep;
}
