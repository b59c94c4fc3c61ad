/* SPDX-License-Identifier: MIT */
/* railwire.MemoryRegion: a registered Python buffer.  It holds the buffer
 * (and a reference to its object) until close() or the railset's close, so
 * the memory stays valid while any transfer may use it; its Railset holds
 * it in turn, so dropping the last Python reference to either changes
 * nothing while the railset is open. */
#include <sched.h>

#include "ext.h"

PyObject *rwpy_mr_register(rwpy_railset *rs, PyObject *obj)
{
    if (atomic_load(&rs->closing))
        return rwpy_raise(RAILWIRE_E_CLOSED, "register on a closed railset");
    rwpy_mr *m = PyObject_GC_New(rwpy_mr, &rwpy_mr_type);
    if (!m)
        return NULL;
    m->owner = NULL;
    m->mr = NULL;
    m->state = RWPY_MR_CLOSED;
    atomic_init(&m->busy, 0);
    if (rwpy_buf_acquire(obj, 0, &m->buf) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    railwire_mr *mr = NULL;
    void *addr = m->buf.addr;
    size_t len = m->buf.len;
    int rc = rwpy_rs_enter(rs);
    if (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        if (m->buf.cuda) {
            /* device memory: registered as such, never read through the host */
            railwire_mem mem;
            railwire_mem_init(&mem);
            mem.kind = RAILWIRE_MEM_CUDA;
            mem.addr = addr;
            mem.len = len;
            rc = railwire_mr_register_mem(rs->rs, &mem, &mr);
        } else {
            rc = railwire_mr_register(rs->rs, addr, len, &mr);
        }
        Py_END_ALLOW_THREADS
        rwpy_rs_leave(rs);
    }
    m->mr = mr;
    if (rc < 0) {
        Py_DECREF(m);
        return rwpy_raise(rc, "register %zu bytes of a %s", len, Py_TYPE(obj)->tp_name);
    }
    m->owner = (rwpy_railset *)Py_NewRef(rs);
    m->state = RWPY_MR_OPEN;
    if (PyList_Append(rs->mrs, (PyObject *)m) < 0) {
        /* cannot track it: undo the registration (a closing railset frees it) */
        if (rwpy_rs_enter(rs) == 0) {
            Py_BEGIN_ALLOW_THREADS
            railwire_mr_deregister(mr);
            Py_END_ALLOW_THREADS
            rwpy_rs_leave(rs);
        }
        m->mr = NULL;
        rwpy_mr_forget(m);
        Py_DECREF(m);
        return NULL;
    }
    PyObject_GC_Track(m);
    return (PyObject *)m;
}

void rwpy_mr_forget(rwpy_mr *m)
{
    rwpy_buf_release(&m->buf);
    m->state = RWPY_MR_CLOSED;
}

static PyObject *mr_close(rwpy_mr *m, PyObject *noargs)
{
    (void)noargs;
    if (m->state != RWPY_MR_OPEN)
        Py_RETURN_NONE;
    rwpy_railset *rs = m->owner;
    int rc;
    m->state = RWPY_MR_CLOSING; /* GIL held: no submit enters m from here on */
    if (rwpy_rs_enter(rs) < 0) {
        /* The railset is closing: its close releases the region. */
        m->state = RWPY_MR_OPEN;
        Py_RETURN_NONE;
    }
    railwire_mr *mr = m->mr;
    Py_BEGIN_ALLOW_THREADS
    while (atomic_load(&m->busy) > 0) /* submits that entered before CLOSING */
        sched_yield();
    rc = mr ? railwire_mr_deregister(mr) : 0;
    Py_END_ALLOW_THREADS
    if (rc == 0)
        m->mr = NULL;
    rwpy_rs_leave(rs);
    if (m->state == RWPY_MR_CLOSED) /* the railset closed meanwhile and released it */
        Py_RETURN_NONE;
    if (rc < 0) {
        m->state = RWPY_MR_OPEN;
        return rwpy_raise(rc, "close a region of %zu bytes while transfers still use it (wait for "
                          "their completions first)", m->buf.len);
    }
    rwpy_mr_forget(m);
    /* Drop the railset's reference to this region. */
    Py_ssize_t n = PyList_GET_SIZE(rs->mrs);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_ITEM(rs->mrs, i) == (PyObject *)m) {
            if (PySequence_DelItem(rs->mrs, i) < 0)
                return NULL;
            break;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *mr_enter(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return Py_NewRef(self);
}

static PyObject *mr_exit(rwpy_mr *m, PyObject *args)
{
    (void)args;
    return mr_close(m, NULL);
}

static int mr_traverse(rwpy_mr *m, visitproc visit, void *arg)
{
    Py_VISIT(m->owner);
    Py_VISIT(rwpy_buf_object(&m->buf));
    return 0;
}

/* Breaking a cycle here never releases a buffer a transfer might use: an
 * open region keeps everything, and the railset's own clear closes it. */
static int mr_clear(rwpy_mr *m)
{
    if (m->state == RWPY_MR_CLOSED)
        Py_CLEAR(m->owner);
    return 0;
}

static void mr_dealloc(rwpy_mr *m)
{
    PyObject_GC_UnTrack(m);
    /* Only reachable once closed (the railset's list holds open regions), or
     * when registration failed before the region was live. */
    rwpy_buf_release(&m->buf);
    Py_CLEAR(m->owner);
    PyObject_GC_Del(m);
}

static PyObject *mr_get_nbytes(rwpy_mr *m, void *c)
{
    (void)c;
    return PyLong_FromSize_t(m->state == RWPY_MR_CLOSED ? 0 : m->buf.len);
}

static PyObject *mr_get_readonly(rwpy_mr *m, void *c)
{
    (void)c;
    return PyBool_FromLong(m->buf.readonly);
}

static PyObject *mr_get_closed(rwpy_mr *m, void *c)
{
    (void)c;
    return PyBool_FromLong(m->state == RWPY_MR_CLOSED);
}

static PyObject *mr_get_obj(rwpy_mr *m, void *c)
{
    (void)c;
    PyObject *o = rwpy_buf_object(&m->buf);
    return Py_NewRef(o ? o : Py_None);
}

static PyObject *mr_get_address(rwpy_mr *m, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(m->state == RWPY_MR_CLOSED ? NULL : m->buf.addr);
}

static Py_ssize_t mr_len(rwpy_mr *m)
{
    return m->state == RWPY_MR_CLOSED ? 0 : (Py_ssize_t)m->buf.len;
}

static PyObject *mr_repr(rwpy_mr *m)
{
    if (m->state == RWPY_MR_CLOSED)
        return PyUnicode_FromString("<railwire.MemoryRegion closed>");
    return PyUnicode_FromFormat("<railwire.MemoryRegion %zu bytes%s of %s>", m->buf.len,
                                m->buf.readonly ? " read-only" : "",
                                Py_TYPE(rwpy_buf_object(&m->buf))->tp_name);
}

static PyMethodDef mr_methods[] = {
    {"close", (PyCFunction)(void (*)(void))mr_close, METH_NOARGS,
     "Deregisters the region and releases the buffer.  Raises InvalidState while a transfer "
     "still uses it.  A no-op when already closed."},
    {"__enter__", mr_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))mr_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef mr_getset[] = {
    {"nbytes", (getter)mr_get_nbytes, NULL, "registered bytes (0 once closed)", NULL},
    {"readonly", (getter)mr_get_readonly, NULL, "True if the buffer is read-only (WRITE source only)", NULL},
    {"closed", (getter)mr_get_closed, NULL, "True once closed", NULL},
    {"obj", (getter)mr_get_obj, NULL, "the registered object (None once closed)", NULL},
    {"address", (getter)mr_get_address, NULL, "address of the first byte (0 once closed)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods mr_as_sequence = {
    .sq_length = (lenfunc)mr_len,
};

PyTypeObject rwpy_mr_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "railwire.MemoryRegion",
    .tp_basicsize = sizeof(rwpy_mr),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A buffer registered with Railset.register(); kept alive until close() or the "
              "railset's close.",
    .tp_dealloc = (destructor)mr_dealloc,
    .tp_traverse = (traverseproc)mr_traverse,
    .tp_clear = (inquiry)mr_clear,
    .tp_repr = (reprfunc)mr_repr,
    .tp_methods = mr_methods,
    .tp_getset = mr_getset,
    .tp_as_sequence = &mr_as_sequence,
};
