/* SPDX-License-Identifier: MIT */
/* The submitting side of Railset: submit_read/submit_write, submit_batch
 * (one C call for the whole batch) and the synchronous read/write (submit,
 * then wait for that handle alone). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ext.h"

static const char *op_name(int opcode)
{
    return opcode == RAILWIRE_OP_READ ? "read" : "write";
}

/* A non-negative Python int as uint64 (InvalidArgument if negative). */
static int to_u64(PyObject *o, const char *what, uint64_t *out)
{
    return rwpy_uint64(o, what, out);
}

/* Checks what the C railset would refuse, with a message naming the op.
 * 0 or -1 with an exception set. */
static int check_op(const rwpy_railset *self, const rwpy_mr *m, int opcode, uint64_t local_off,
                    uint64_t length, uint64_t layer, const char *prefix)
{
    if (length == 0)
        return rwpy_raise(RAILWIRE_E_INVALID, "%s%s of 0 bytes: length must be at least 1", prefix,
                          op_name(opcode)), -1;
    if (local_off > m->buf.len || length > m->buf.len - local_off)
        return rwpy_raise(RAILWIRE_E_INVALID, "%s%s of %llu bytes at local offset %llu: outside the "
                          "registered region of %zu bytes", prefix, op_name(opcode),
                          (unsigned long long)length, (unsigned long long)local_off, m->buf.len), -1;
    if (opcode == RAILWIRE_OP_READ && m->buf.readonly)
        return rwpy_raise(RAILWIRE_E_INVALID, "%sread into a read-only region (register a writable "
                          "buffer as a READ target)", prefix), -1;
    if (layer > UINT32_MAX || (self->dialect == RAILWIRE_DIALECT_RO && layer >= self->n_layers))
        return rwpy_raise(RAILWIRE_E_REMOTE_ACCESS, "%s%s from layer %llu: the server published %u "
                          "layer(s)", prefix, op_name(opcode), (unsigned long long)layer,
                          self->n_layers), -1;
    return 0;
}

static int check_region(const rwpy_railset *self, const rwpy_mr *m)
{
    if (m->owner != self)
        return rwpy_raise(RAILWIRE_E_INVALID, "the region was registered on another railset"), -1;
    if (m->state != RWPY_MR_OPEN)
        return rwpy_raise(RAILWIRE_E_CLOSED, "the region is closed"), -1;
    return 0;
}

/* GIL held: enters the railset and the region for one C submit (they stay
 * open until rwpy_leave_op).  0 or the code to raise. */
static int enter_op(rwpy_railset *self, rwpy_mr *m)
{
    if (m->state != RWPY_MR_OPEN || !m->mr)
        return RAILWIRE_E_CLOSED;
    int rc = rwpy_rs_enter(self);
    if (rc == 0)
        atomic_fetch_add(&m->busy, 1);
    return rc;
}

static void leave_op(rwpy_railset *self, rwpy_mr *m)
{
    atomic_fetch_sub(&m->busy, 1);
    rwpy_rs_leave(self);
}

/* A per-transfer timeout in seconds (None: none) as railwire_op.timeout_ms.
 * 0 or -1. */
static int parse_deadline(PyObject *o, uint32_t *out)
{
    *out = 0;
    if (!o || o == Py_None)
        return 0;
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    if (!(v > 0))
        return rwpy_raise(RAILWIRE_E_INVALID, "timeout must be None or > 0 seconds (the "
                          "transfer's own deadline)"), -1;
    double ms = ceil(v * 1000.0);
    *out = ms >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
    return 0;
}

/* Parses (mr, local_offset, length, remote_offset, *, layer, <kw1>, <kw2>)
 * into *op; the extra keywords' objects go to *o1 and *o2 (kw2 may be
 * NULL).  0 or -1. */
static int parse_one(rwpy_railset *self, PyObject *args, PyObject *kw, const char *fname,
                     const char *kw1, const char *kw2, int opcode, railwire_op *op, rwpy_mr **mrp,
                     PyObject **o1, PyObject **o2)
{
    char *kwlist[] = {"mr", "local_offset", "length", "remote_offset", "layer", (char *)kw1,
                      (char *)kw2, NULL};
    char fmt[64];
    PyObject *lo, *len, *ro, *layer = NULL;
    rwpy_mr *m;
    uint64_t vlo, vlen, vro, vlayer = 0;

    snprintf(fmt, sizeof(fmt), "O!OOO|$OO%s:%s", kw2 ? "O" : "", fname);
    *o1 = NULL;
    if (o2)
        *o2 = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &rwpy_mr_type, &m, &lo, &len, &ro, &layer,
                                     o1, o2))
        return -1;
    if (to_u64(lo, "local_offset", &vlo) < 0 || to_u64(len, "length", &vlen) < 0 ||
        to_u64(ro, "remote_offset", &vro) < 0 || (layer && to_u64(layer, "layer", &vlayer) < 0))
        return -1;
    if (check_region(self, m) < 0 || check_op(self, m, opcode, vlo, vlen, vlayer, "") < 0)
        return -1;
    memset(op, 0, sizeof(*op));
    op->opcode = (enum railwire_opcode)opcode;
    op->local = (char *)m->buf.addr + vlo;
    op->length = (size_t)vlen;
    op->layer = (uint32_t)vlayer;
    op->remote_offset = vro;
    *mrp = m;
    return 0;
}

/* Submits *op on m with the GIL released.  Returns 0 or a code. */
static int submit_c(rwpy_railset *self, rwpy_mr *m, railwire_op *op, railwire_handle *h)
{
    int rc = enter_op(self, m);
    if (rc < 0)
        return rc;
    op->mr = m->mr;
    Py_BEGIN_ALLOW_THREADS
    rc = railwire_submit(self->rs, op, h);
    Py_END_ALLOW_THREADS
    leave_op(self, m);
    return rc;
}

static PyObject *submit_one(rwpy_railset *self, PyObject *args, PyObject *kw, int opcode)
{
    railwire_op op;
    railwire_handle h;
    rwpy_mr *m;
    PyObject *ud = NULL, *to = NULL;
    uint64_t vud = 0;

    if (parse_one(self, args, kw, opcode == RAILWIRE_OP_READ ? "submit_read" : "submit_write",
                  "user_data", "timeout", opcode, &op, &m, &ud, &to) < 0)
        return NULL;
    if (ud && to_u64(ud, "user_data", &vud) < 0)
        return NULL;
    if (parse_deadline(to, &op.timeout_ms) < 0)
        return NULL;
    op.user_data = vud;
    int rc = submit_c(self, m, &op, &h);
    if (rc < 0)
        return rwpy_raise(rc, "submit %s of %zu bytes (layer %u, remote offset %llu)",
                          op_name(opcode), op.length, op.layer, (unsigned long long)op.remote_offset);
    return PyLong_FromUnsignedLongLong(h);
}

PyObject *rwpy_railset_submit_read(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    return submit_one(self, args, kw, RAILWIRE_OP_READ);
}

PyObject *rwpy_railset_submit_write(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    return submit_one(self, args, kw, RAILWIRE_OP_WRITE);
}

/* Sets attribute `name` of the exception being raised to v. */
static void exc_set(const char *name, PyObject *v)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    if (v && ev)
        PyObject_SetAttrString(ev, name, v);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* A synchronous read/write in a thread other than the main one (no signal
 * to watch for): railwire_read/railwire_write, whose transfer is the
 * caller's alone, with the GIL released.  railset close waits for it (it
 * ends when its transfer does, or after its timeout). */
static PyObject *sync_other_thread(rwpy_railset *self, rwpy_mr *m, railwire_op *op, int opcode,
                                   double timeout)
{
    int ms = timeout >= RWPY_MAX_WAIT_S ? -1 : (int)ceil(timeout * 1000.0);
    int rc = enter_op(self, m);
    if (rc == 0) {
        railwire_mr *mr = m->mr;
        Py_BEGIN_ALLOW_THREADS
        rc = opcode == RAILWIRE_OP_READ
                 ? railwire_read(self->rs, mr, op->local, op->length, op->layer, op->remote_offset, ms)
                 : railwire_write(self->rs, mr, op->local, op->length, op->layer, op->remote_offset,
                                  ms);
        Py_END_ALLOW_THREADS
        leave_op(self, m);
    }
    if (rc < 0) {
        rwpy_raise(rc, "%s of %zu bytes (layer %u, remote offset %llu)%s", op_name(opcode),
                   op->length, op->layer, (unsigned long long)op->remote_offset,
                   rc == RAILWIRE_E_TIMEOUT ? "; it stays pending and a later poll()/wait() "
                   "returns its completion" : "");
        if (rc == RAILWIRE_E_TIMEOUT)
            exc_set("handle", Py_None);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *sync_op(rwpy_railset *self, PyObject *args, PyObject *kw, int opcode)
{
    railwire_op op;
    railwire_handle h = 0;
    railwire_completion c;
    rwpy_mr *m;
    PyObject *to = NULL;
    double timeout;

    if (parse_one(self, args, kw, op_name(opcode), "timeout", NULL, opcode, &op, &m, &to, NULL) < 0)
        return NULL;
    if (rwpy_parse_seconds(to, "timeout", RWPY_MAX_WAIT_S, &timeout) < 0)
        return NULL;
    if (PyThread_get_thread_ident() != rwpy_main_thread)
        return sync_other_thread(self, m, &op, opcode, timeout);
    /* The main thread, where Ctrl-C must interrupt the wait: reserved, so
     * only this call's railwire_wait_handle returns it, while it sleeps on
     * the railset fd (a signal interrupts poll(2)). */
    op.flags |= RAILWIRE_OP_F_RESERVED;
    int rc = enter_op(self, m);
    if (rc == 0) {
        op.mr = m->mr;
        atomic_fetch_add(&self->sync_inflight, 1);
        Py_BEGIN_ALLOW_THREADS
        rc = railwire_submit(self->rs, &op, &h);
        Py_END_ALLOW_THREADS
        atomic_fetch_sub(&m->busy, 1);
        if (rc == 0)
            rc = rwpy_wait_own(self, h, timeout, &c);
        else
            atomic_fetch_sub(&self->sync_inflight, 1);
        rwpy_rs_leave(self);
    }
    if (rc == -1)
        return NULL; /* KeyboardInterrupt (or another signal handler's exception) */
    if (rc < 0) {
        PyObject *r = rwpy_raise(rc, "%s of %zu bytes (layer %u, remote offset %llu)%s",
                                 op_name(opcode), op.length, op.layer,
                                 (unsigned long long)op.remote_offset,
                                 rc == RAILWIRE_E_TIMEOUT ? "; it stays pending and a later "
                                 "poll()/wait() returns its completion" : "");
        if (rc == RAILWIRE_E_TIMEOUT && h) {
            PyObject *hv = PyLong_FromUnsignedLongLong(h);
            exc_set("handle", hv);
            Py_XDECREF(hv);
        }
        return r;
    }
    Py_RETURN_NONE;
}

PyObject *rwpy_railset_read(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    return sync_op(self, args, kw, RAILWIRE_OP_READ);
}

PyObject *rwpy_railset_write(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    return sync_op(self, args, kw, RAILWIRE_OP_WRITE);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The fields of the batch in ops[0..n), from the Python arguments.  0 or -1. */
static int fill_batch(rwpy_railset *self, rwpy_mr *m, int opcode, PyObject *lo, PyObject *ro,
                      PyObject *lens, PyObject *layers, PyObject *ud, size_t n, railwire_op *ops,
                      uint64_t *tmp)
{
    for (size_t i = 0; i < n; i++) {
        ops[i].opcode = (enum railwire_opcode)opcode;
        ops[i].user_data = i;
    }
    if (rwpy_uint64_array(ro, "remote_offsets", 0, n, tmp) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        ops[i].remote_offset = tmp[i];
    if (layers != Py_None) {
        if (rwpy_uint64_array(layers, "layers", 1, n, tmp) < 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            if (tmp[i] > UINT32_MAX)
                tmp[i] = UINT32_MAX; /* check_op below names it */
            ops[i].layer = (uint32_t)tmp[i];
        }
    }
    if (ud != Py_None) {
        if (rwpy_uint64_array(ud, "user_data", 1, n, tmp) < 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            ops[i].user_data = tmp[i];
    }
    if (rwpy_uint64_array(lens, "lengths", 1, n, tmp) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        ops[i].length = (size_t)tmp[i];
    if (rwpy_uint64_array(lo, "local_offsets", 0, n, tmp) < 0)
        return -1;
    char prefix[48];
    for (size_t i = 0; i < n; i++) {
        snprintf(prefix, sizeof(prefix), "op %zu: ", i);
        if (check_op(self, m, opcode, tmp[i], ops[i].length, ops[i].layer, prefix) < 0)
            return -1;
        ops[i].local = (char *)m->buf.addr + tmp[i];
    }
    return 0;
}

PyObject *rwpy_railset_submit_batch(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"opcode", "mr", "local_offsets", "remote_offsets", "lengths", "layers",
                             "user_data", "timeout", NULL};
    int opcode;
    rwpy_mr *m;
    PyObject *lo, *ro, *lens, *layers = Py_None, *ud = Py_None, *to = Py_None, *result = NULL;
    uint32_t timeout_ms;
    railwire_op *ops = NULL;
    railwire_handle *handles = NULL;
    uint64_t *tmp = NULL;
    int rc = 0, got = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "iO!OOO|$OOO:submit_batch", kwlist, &opcode,
                                     &rwpy_mr_type, &m, &lo, &ro, &lens, &layers, &ud, &to))
        return NULL;
    if (parse_deadline(to, &timeout_ms) < 0)
        return NULL;
    if (opcode != RAILWIRE_OP_READ && opcode != RAILWIRE_OP_WRITE)
        return rwpy_raise(RAILWIRE_E_INVALID, "opcode %d: use railwire.READ or railwire.WRITE", opcode);
    if (check_region(self, m) < 0)
        return NULL;
    Py_ssize_t n = rwpy_array_len(lo, "local_offsets");
    if (n < 0)
        return NULL;
    if (n == 0)
        return PyList_New(0);
    if ((size_t)n > INT32_MAX)
        return rwpy_raise(RAILWIRE_E_INVALID, "a batch holds at most %d transfers", INT32_MAX);
    ops = PyMem_Calloc((size_t)n, sizeof(*ops));
    handles = PyMem_Calloc((size_t)n, sizeof(*handles));
    tmp = PyMem_Calloc((size_t)n, sizeof(*tmp));
    if (!ops || !handles || !tmp) {
        PyErr_NoMemory();
        goto out;
    }
    if (fill_batch(self, m, opcode, lo, ro, lens, layers, ud, (size_t)n, ops, tmp) < 0)
        goto out;
    for (Py_ssize_t i = 0; i < n; i++)
        ops[i].timeout_ms = timeout_ms;
    rc = enter_op(self, m);
    if (rc == 0) {
        for (Py_ssize_t i = 0; i < n; i++)
            ops[i].mr = m->mr;
        Py_BEGIN_ALLOW_THREADS
        uint64_t t0 = now_ns();
        got = railwire_submit_batch(self->rs, ops, (size_t)n, handles);
        atomic_store(&self->last_batch_c_ns, now_ns() - t0);
        Py_END_ALLOW_THREADS
        leave_op(self, m);
    }
    if (rc == 0 && got < 0)
        rc = got;
    if (rc < 0) {
        rwpy_raise(rc, "submit_batch of %zd %ss (nothing was submitted)", n, op_name(opcode));
        goto out;
    }
    result = PyList_New(got);
    for (int i = 0; result && i < got; i++) {
        PyObject *h = PyLong_FromUnsignedLongLong(handles[i]);
        if (!h)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, i, h);
    }
    if (result && got < n) {
        /* Not expected (the arguments were checked above); the submitted
         * transfers are real, so hand their handles over with the error. */
        rwpy_raise(RAILWIRE_E_INVALID, "submit_batch: only %d of %zd %ss were submitted (op %d was "
                   "refused; the log says why); the error's .handles lists the submitted ones",
                   got, n, op_name(opcode), got);
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        PyObject *idx = PyLong_FromLong(got);
        if (ev && idx) {
            PyObject_SetAttrString(ev, "handles", result);
            PyObject_SetAttrString(ev, "index", idx);
        }
        Py_XDECREF(idx);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        Py_CLEAR(result);
    }
out:
    PyMem_Free(ops);
    PyMem_Free(handles);
    PyMem_Free(tmp);
    return result;
}
