/* SPDX-License-Identifier: MIT */
/* railwire.Railset: life cycle (connect, close, context manager), the
 * properties and stats().  Submitting is in railset_io.c, waiting in
 * railset_wait.c. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ext.h"

/* Converts None or a sequence of n str/None entries into out[0..n) (UTF-8
 * owned by the entries, which `keep` holds).  0 or -1. */
static int str_list(PyObject *list, const char *what, unsigned n, const char **out, PyObject **keep)
{
    *keep = NULL;
    if (list == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(list, "");
    if (!seq || (size_t)PySequence_Fast_GET_SIZE(seq) != n) {
        Py_XDECREF(seq);
        PyErr_Format(PyExc_TypeError, "%s must be None or a list of %u entries", what, n);
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (it == Py_None) {
            out[i] = NULL;
        } else if (PyUnicode_Check(it)) {
            out[i] = PyUnicode_AsUTF8(it);
            if (!out[i]) {
                Py_DECREF(seq);
                return -1;
            }
        } else {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "%s[%u] must be a str or None", what, i);
            return -1;
        }
    }
    *keep = seq;
    return 0;
}

PyObject *rwpy_connect(PyObject *module, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"host", "port", "rails", "dialect", "transport", "local_addrs",
                             "devices", "slice_size", "queue_depth", "connect_timeout_ms",
                             "io_timeout_ms", "op_timeout_ms", "busy_poll_us", "tls_cert",
                             "tls_key", "tls_ca", "tls_psk", "tls_psk_identity",
                             "tls_server_name", "near", NULL};
    railwire_tls_opts tls;
    const char *host, *port, *near = NULL;
    unsigned rails, queue_depth;
    int dialect, transport, cto, ioto, opto, busy_poll_us;
    PyObject *local = Py_None, *devs = Py_None, *keep_l = NULL, *keep_d = NULL;
    Py_ssize_t slice;
    const char *local_v[RAILWIRE_MAX_RAILS] = {0}, *dev_v[RAILWIRE_MAX_RAILS] = {0};
    railwire_railset_opts o;
    railwire_railset *rs = NULL;
    int rc;

    (void)module;
    railwire_tls_opts_init(&tls);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssIiiOOnIiiii|zzzzzzz:_connect", kwlist, &host,
                                     &port, &rails, &dialect, &transport, &local, &devs, &slice,
                                     &queue_depth, &cto, &ioto, &opto, &busy_poll_us,
                                     &tls.cert_file, &tls.key_file, &tls.ca_file, &tls.psk_file,
                                     &tls.psk_identity, &tls.server_name, &near))
        return NULL;
    if (rails < 1 || rails > RAILWIRE_MAX_RAILS)
        return rwpy_raise(RAILWIRE_E_INVALID, "rails=%u: a railset has 1..%d rails", rails,
                          RAILWIRE_MAX_RAILS);
    if (slice < 0)
        return rwpy_raise(RAILWIRE_E_INVALID, "slice_size must be positive");
    if (str_list(local, "local_addrs", rails, local_v, &keep_l) < 0 ||
        str_list(devs, "devices", rails, dev_v, &keep_d) < 0) {
        Py_XDECREF(keep_l);
        return NULL;
    }
    railwire_railset_opts_init(&o);
    o.dialect = (uint32_t)dialect;
    o.transport = (uint32_t)transport;
    o.n_rails = rails;
    o.local_addrs = keep_l ? local_v : NULL;
    o.n_local_addrs = keep_l ? rails : 0;
    o.devices = keep_d ? dev_v : NULL;
    o.n_devices = keep_d ? rails : 0;
    o.slice_size = (size_t)slice;
    o.queue_depth = queue_depth;
    o.connect_timeout_ms = cto;
    o.io_timeout_ms = ioto;
    o.op_timeout_ms = opto;
    o.busy_poll_us = busy_poll_us;
    o.near = near;
    if (tls.cert_file || tls.key_file || tls.ca_file || tls.psk_file)
        o.tls = &tls;

    rwpy_railset *self = PyObject_GC_New(rwpy_railset, &rwpy_railset_type);
    if (!self) {
        Py_XDECREF(keep_l);
        Py_XDECREF(keep_d);
        return NULL;
    }
    memset((char *)self + sizeof(PyObject), 0, sizeof(*self) - sizeof(PyObject));
    self->fd = -1;
    self->close_fd = -1;
    self->mrs = PyList_New(0);
    if (self->mrs)
        self->close_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!self->mrs || self->close_fd < 0) {
        if (self->mrs && self->close_fd < 0)
            rwpy_raise(RAILWIRE_E_SYSTEM, "eventfd for the railset (check ulimit -n)");
        Py_CLEAR(self->mrs);
        atomic_store(&self->closing, 1);
        PyObject_GC_Del(self);
        Py_XDECREF(keep_l);
        Py_XDECREF(keep_d);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = railwire_railset_connect(host, port, &o, &rs);
    Py_END_ALLOW_THREADS
    Py_XDECREF(keep_l);
    Py_XDECREF(keep_d);
    snprintf(self->target, sizeof(self->target), strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
    if (rc < 0) {
        PyObject *err = rwpy_raise(rc, "connect to %s (%u rail%s, dialect %s)", self->target, rails,
                                   rails == 1 ? "" : "s", dialect == RAILWIRE_DIALECT_RW ? "rw" : "ro");
        atomic_store(&self->closing, 1);
        Py_DECREF(self);
        return err;
    }
    self->rs = rs;
    /* The fd every wait sleeps on (and Railset.fileno()). */
    self->fd = railwire_railset_fd(rs);
    if (self->fd < 0) {
        PyObject *err = rwpy_raise(self->fd, "the railset fd of the railset to %s", self->target);
        Py_DECREF(self); /* closes rs */
        return err;
    }
    self->n_rails = railwire_railset_rail_count(rs);
    self->n_layers = railwire_railset_layer_count(rs);
    self->dialect = dialect;
    snprintf(self->transport, sizeof(self->transport), "%s", railwire_railset_transport(rs));
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

void rwpy_railset_drop_mrs(rwpy_railset *self)
{
    if (!self->mrs)
        return;
    Py_ssize_t n = PyList_GET_SIZE(self->mrs);
    for (Py_ssize_t i = 0; i < n; i++) {
        rwpy_mr *m = (rwpy_mr *)PyList_GET_ITEM(self->mrs, i);
        m->mr = NULL; /* freed by railwire_railset_close */
        if (m->state != RWPY_MR_CLOSED)
            rwpy_mr_forget(m);
    }
    Py_CLEAR(self->mrs);
}

/* Closes the C railset (failing every unfinished transfer) and releases
 * every region.  Idempotent.  GIL held.  No new C call starts once
 * `closing` is set; the threads sleeping in a wait are woken through
 * close_fd and leave, and the C calls in progress never block, so the
 * drain below is short. */
static void railset_close(rwpy_railset *self)
{
    if (atomic_exchange(&self->closing, 1))
        return;
    railwire_railset *rs = self->rs;
    uint64_t one = 1;
    if (self->close_fd >= 0 && write(self->close_fd, &one, sizeof(one)) < 0) {
        /* the counter is saturated: sleepers are awake anyway */
    }
    Py_BEGIN_ALLOW_THREADS
    while (atomic_load(&self->users) > 0) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    railwire_railset_close(rs);
    Py_END_ALLOW_THREADS
    self->rs = NULL;
    self->fd = -1;
    rwpy_railset_drop_mrs(self);
}

static PyObject *railset_close_m(rwpy_railset *self, PyObject *noargs)
{
    (void)noargs;
    railset_close(self);
    Py_RETURN_NONE;
}

static PyObject *railset_enter(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return Py_NewRef(self);
}

static PyObject *railset_exit(rwpy_railset *self, PyObject *args)
{
    (void)args;
    railset_close(self);
    Py_RETURN_NONE;
}

static PyObject *railset_register(rwpy_railset *self, PyObject *buf)
{
    return rwpy_mr_register(self, buf);
}

static PyObject *railset_stats(rwpy_railset *self, PyObject *noargs)
{
    railwire_rail_stats st[RAILWIRE_MAX_RAILS];
    int n;

    (void)noargs;
    memset(st, 0, sizeof(st));
    n = rwpy_rs_enter(self);
    if (n == 0) {
        Py_BEGIN_ALLOW_THREADS
        n = railwire_railset_stats(self->rs, st, RAILWIRE_MAX_RAILS, sizeof(*st));
        Py_END_ALLOW_THREADS
        rwpy_rs_leave(self);
    }
    if (n < 0)
        return rwpy_raise(n, "stats of the railset to %s", self->target);
    if (n > RAILWIRE_MAX_RAILS)
        n = RAILWIRE_MAX_RAILS;
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *d = rwpy_rail_stats_to_dict(&st[i]);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, d);
    }
    return list;
}

static ssize_t render_railset(const void *rs, char *buf, size_t size)
{
    return railwire_railset_metrics(rs, buf, size);
}

/* Railset.metrics(): railwire_railset_metrics() as a str. */
static PyObject *railset_metrics(rwpy_railset *self, PyObject *noargs)
{
    char *text = NULL, what[320];
    ssize_t n;

    (void)noargs;
    n = rwpy_rs_enter(self);
    if (n == 0) {
        Py_BEGIN_ALLOW_THREADS
        n = rwpy_metrics_render(render_railset, self->rs, &text);
        Py_END_ALLOW_THREADS
        rwpy_rs_leave(self);
    }
    snprintf(what, sizeof(what), "the railset to %s", self->target);
    return rwpy_metrics_str(n, text, what);
}

static PyObject *railset_fileno(rwpy_railset *self, PyObject *noargs)
{
    (void)noargs;
    if (atomic_load(&self->closing) || self->fd < 0)
        return rwpy_raise(RAILWIRE_E_CLOSED, "fileno of the railset to %s", self->target);
    return PyLong_FromLong(self->fd);
}

static PyObject *get_rails(rwpy_railset *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(self->n_rails);
}

static PyObject *get_layers(rwpy_railset *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(self->n_layers);
}

static PyObject *get_transport(rwpy_railset *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->transport);
}

static PyObject *get_dialect(rwpy_railset *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->dialect == RAILWIRE_DIALECT_RW ? "rw" : "ro");
}

static PyObject *get_closed(rwpy_railset *self, void *c)
{
    (void)c;
    return PyBool_FromLong(atomic_load(&self->closing));
}

static PyObject *get_pending(rwpy_railset *self, void *c)
{
    size_t n = 0;

    (void)c;
    if (rwpy_rs_enter(self) == 0) {
        n = railwire_railset_pending(self->rs);
        rwpy_rs_leave(self);
    }
    return PyLong_FromSize_t(n);
}

static PyObject *get_last_batch_c_ns(rwpy_railset *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(atomic_load(&self->last_batch_c_ns));
}

static PyObject *railset_repr(rwpy_railset *self)
{
    if (atomic_load(&self->closing))
        return PyUnicode_FromFormat("<railwire.Railset to %s, closed>", self->target);
    return PyUnicode_FromFormat("<railwire.Railset to %s: %s, %u rail%s, dialect %s, %u layer%s>",
                                self->target, self->transport, self->n_rails,
                                self->n_rails == 1 ? "" : "s",
                                self->dialect == RAILWIRE_DIALECT_RW ? "rw" : "ro", self->n_layers,
                                self->n_layers == 1 ? "" : "s");
}

static int railset_traverse(rwpy_railset *self, visitproc visit, void *arg)
{
    Py_VISIT(self->mrs);
    return 0;
}

static int railset_clear(rwpy_railset *self)
{
    railset_close(self);
    return 0;
}

static void railset_dealloc(rwpy_railset *self)
{
    PyObject_GC_UnTrack(self);
    railset_close(self);
    Py_CLEAR(self->mrs);
    if (self->close_fd >= 0)
        close(self->close_fd);
    PyObject_GC_Del(self);
}

#define METH_KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

static PyMethodDef railset_methods[] = {
    {"register", (PyCFunction)(void (*)(void))railset_register, METH_O,
     "register(buf) -> MemoryRegion\n\nRegisters a contiguous buffer (bytearray, memoryview, mmap, "
     "numpy array, CPU torch tensor) for transfers.  The region keeps the buffer alive until "
     "MemoryRegion.close() or the railset's close.  READ needs it writable."},
    {"read", METH_KW(rwpy_railset_read),
     "read(mr, local_offset, length, remote_offset, *, layer=0, timeout=None)\n\nReads length "
     "bytes of the remote layer (RO) or arena (RW) at remote_offset into mr at local_offset and "
     "waits for that transfer alone.  Raises a railwire.Error subclass on failure; on Timeout or "
     "KeyboardInterrupt the transfer stays pending and a later poll()/wait() returns it."},
    {"write", METH_KW(rwpy_railset_write),
     "write(mr, local_offset, length, remote_offset, *, layer=0, timeout=None)\n\nLike read(), "
     "from local memory to remote memory."},
    {"submit_read", METH_KW(rwpy_railset_submit_read),
     "submit_read(mr, local_offset, length, remote_offset, *, layer=0, user_data=0, timeout=None)"
     " -> int\n\nSubmits one READ; returns its handle.  poll()/wait() return its Completion.  "
     "timeout (seconds): the transfer's own deadline; not finished by then, it is cancelled and "
     "completes with status E_TIMEOUT (railwire.Timeout)."},
    {"submit_write", METH_KW(rwpy_railset_submit_write),
     "submit_write(mr, local_offset, length, remote_offset, *, layer=0, user_data=0, timeout=None)"
     " -> int"},
    {"submit_batch", METH_KW(rwpy_railset_submit_batch),
     "submit_batch(opcode, mr, local_offsets, remote_offsets, lengths, *, layers=None, "
     "user_data=None, timeout=None) -> list[int]\n\nSubmits len(local_offsets) transfers in one C call.  "
     "Offsets are sequences or 1-D numpy integer arrays; lengths, layers and user_data may also "
     "be one int for every op.  layers=None: layer 0; user_data=None: each op's index in the "
     "batch.  Returns the handles in order.  Nothing is submitted when an argument is invalid."},
    {"wait", METH_KW(rwpy_railset_wait),
     "wait(timeout=None, max=64) -> list[Completion]\n\nReturns up to max finished transfers, "
     "waiting up to timeout seconds (None: until one finishes) for the first.  Returns [] when "
     "the time runs out or nothing is pending."},
    {"poll", METH_KW(rwpy_railset_poll),
     "poll(max=64) -> list[Completion]\n\nMakes progress and returns up to max finished transfers "
     "without blocking."},
    {"cancel", (PyCFunction)(void (*)(void))rwpy_railset_cancel, METH_O,
     "cancel(handle)\n\nCancels a submitted transfer (railwire_cancel): its completion still "
     "comes back once, from poll()/wait(), with status E_CANCELED (railwire.Canceled) and "
     "bytes_moved, at once when none of it is on the wire, else once what is on the wire has "
     "finished or its rail was declared dead (within op_timeout).  Raises InvalidArgument for an "
     "unknown handle and InvalidState for one that already finished."},
    {"fileno", (PyCFunction)(void (*)(void))railset_fileno, METH_NOARGS,
     "fileno() -> int\n\nThe railset's fd (railwire_railset_fd): level-triggered, readable when "
     "poll() may have completions; after it fires call poll() until it returns fewer than max.  "
     "For selectors, asyncio's add_reader (see railwire.aio) and the like; owned by the railset."},
    {"stats", (PyCFunction)(void (*)(void))railset_stats, METH_NOARGS,
     "stats() -> list[dict]\n\nPer-rail counters: index, state ('up'/'down'), name, gbps, "
     "bytes_read, bytes_written, ops, errors, reissued, down_reason, down_error."},
    {"metrics", (PyCFunction)(void (*)(void))railset_metrics, METH_NOARGS,
     "metrics() -> str\n\nThe railset's counters in the Prometheus text format "
     "(railwire_railset_metrics; docs/metrics.md), for an engine's own /metrics."},
    {"close", (PyCFunction)(void (*)(void))railset_close_m, METH_NOARGS,
     "Closes the rails (unfinished transfers fail and are not returned) and releases every "
     "region.  Idempotent."},
    {"__enter__", railset_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))railset_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef railset_getset[] = {
    {"rails", (getter)get_rails, NULL, "number of rails", NULL},
    {"layers", (getter)get_layers, NULL, "RO: layers the server published; RW: 1", NULL},
    {"transport", (getter)get_transport, NULL, "'tcp' or 'verbs'", NULL},
    {"dialect", (getter)get_dialect, NULL, "'ro' or 'rw'", NULL},
    {"closed", (getter)get_closed, NULL, "True once close() ran", NULL},
    {"pending", (getter)get_pending, NULL, "transfers submitted whose completion was not yet returned", NULL},
    {"_last_batch_c_ns", (getter)get_last_batch_c_ns, NULL,
     "nanoseconds the last submit_batch spent inside railwire_submit_batch (benchmarks)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rwpy_railset_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "railwire.Railset",
    .tp_basicsize = sizeof(rwpy_railset),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "N rails to one server, made by railwire.connect().  Safe to use from many threads.",
    .tp_dealloc = (destructor)railset_dealloc,
    .tp_traverse = (traverseproc)railset_traverse,
    .tp_clear = (inquiry)railset_clear,
    .tp_repr = (reprfunc)railset_repr,
    .tp_methods = railset_methods,
    .tp_getset = railset_getset,
};
