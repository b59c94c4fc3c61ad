/* SPDX-License-Identifier: MIT */
/* _railwire._Server: a railwire_server publishing Python memory (RO
 * layers, or one RW arena).  It holds every buffer (and so its object)
 * until close(), which first stops the server, so no client can touch
 * memory that Python has freed.  railwire.Server wraps it. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ext.h"

#define RWPY_MAX_ADDRS 64

typedef struct {
    PyObject_HEAD
    railwire_server *srv;     /* NULL once closed */
    struct rwpy_buf *bufs;    /* the layers, or the arena */
    unsigned n_bufs;
    unsigned port;
} rwpy_server;

static void server_release(rwpy_server *s)
{
    railwire_server *srv = s->srv;
    s->srv = NULL; /* before the GIL is released: a second close is a no-op */
    if (srv) {
        Py_BEGIN_ALLOW_THREADS
        railwire_server_destroy(srv);
        Py_END_ALLOW_THREADS
    }
    for (unsigned i = 0; i < s->n_bufs; i++)
        rwpy_buf_release(&s->bufs[i]);
    PyMem_Free(s->bufs);
    s->bufs = NULL;
    s->n_bufs = 0;
}

/* Borrowed UTF-8 pointers of a None-or-list of str; `keep` holds them. */
static int addr_list(PyObject *list, const char *what, const char **out, unsigned *n, PyObject **keep)
{
    *n = 0;
    *keep = NULL;
    if (list == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(list, "");
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "%s must be None or a list of str", what);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len > RWPY_MAX_ADDRS) {
        Py_DECREF(seq);
        return rwpy_raise(RAILWIRE_E_INVALID, "at most %d %s", RWPY_MAX_ADDRS, what), -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        out[i] = PyUnicode_Check(it) ? PyUnicode_AsUTF8(it) : NULL;
        if (!out[i]) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s[%zd] must be a str", what, i);
            return -1;
        }
    }
    *n = (unsigned)len;
    *keep = seq;
    return 0;
}

PyObject *rwpy_server_create(PyObject *module, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"dialect", "transport", "host", "port", "layers", "arena", "rail_addrs",
                             "devices", "max_clients", "max_rails", "max_bytes", "io_timeout_ms",
                             "gid_index", "busy_poll_us", "tls_cert", "tls_key", "tls_ca",
                             "tls_psk", "tls_allow", "staging_bytes", NULL};
    railwire_tls_opts tls;
    PyObject *tls_allow = Py_None, *keep_t = NULL;
    const char *allow_v[RWPY_MAX_ADDRS];
    unsigned n_tls_allow = 0;
    int dialect, transport, io_timeout, gid_index, busy_poll_us;
    const char *host, *port;
    PyObject *layers, *arena, *rail_addrs, *devices, *keep_a = NULL, *keep_d = NULL, *seq = NULL;
    unsigned max_clients, max_rails;
    unsigned long long max_bytes, staging_bytes = 0;
    const char *addr_v[RWPY_MAX_ADDRS], *dev_v[RWPY_MAX_ADDRS];
    railwire_region *regions = NULL;
    railwire_mem *mems = NULL, arena_mem;
    int any_cuda = 0;
    railwire_server_opts o;
    rwpy_server *s = NULL;
    int rc;

    (void)module;
    railwire_tls_opts_init(&tls);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iissOOOOIIKiii|zzzzOK:_server_create", kwlist,
                                     &dialect, &transport, &host, &port, &layers, &arena,
                                     &rail_addrs, &devices, &max_clients, &max_rails, &max_bytes,
                                     &io_timeout, &gid_index, &busy_poll_us, &tls.cert_file,
                                     &tls.key_file, &tls.ca_file, &tls.psk_file, &tls_allow,
                                     &staging_bytes))
        return NULL;
    railwire_server_opts_init(&o);
    if (addr_list(rail_addrs, "rail_addrs", addr_v, &o.n_rail_addrs, &keep_a) < 0 ||
        addr_list(devices, "devices", dev_v, &o.n_devices, &keep_d) < 0 ||
        addr_list(tls_allow, "tls_allow", allow_v, &n_tls_allow, &keep_t) < 0)
        goto fail;
    if (tls.cert_file || tls.key_file || tls.ca_file || tls.psk_file)
        o.tls = &tls;
    o.tls_allow = n_tls_allow ? allow_v : NULL;
    o.n_tls_allow = n_tls_allow;
    s = PyObject_New(rwpy_server, &rwpy_server_type);
    if (!s)
        goto fail;
    s->srv = NULL;
    s->bufs = NULL;
    s->n_bufs = 0;
    s->port = 0;
    if (dialect == RAILWIRE_DIALECT_RO) {
        seq = layers == Py_None ? NULL : PySequence_Fast(layers, "");
        if (!seq || PySequence_Fast_GET_SIZE(seq) < 1 || PySequence_Fast_GET_SIZE(seq) > 4096 ||
            arena != Py_None) {
            PyErr_Clear();
            rwpy_raise(RAILWIRE_E_INVALID, "dialect 'ro' serves layers=[buffer, ...] (1..4096 of "
                       "them) and no arena");
            goto fail;
        }
        s->n_bufs = 0;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        s->bufs = PyMem_Calloc((size_t)n, sizeof(*s->bufs));
        regions = PyMem_Calloc((size_t)n, sizeof(*regions));
        mems = PyMem_Calloc((size_t)n, sizeof(*mems));
        if (!s->bufs || !regions || !mems) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (rwpy_buf_acquire(PySequence_Fast_GET_ITEM(seq, i), 0, &s->bufs[i]) < 0)
                goto fail;
            s->n_bufs++;
            regions[i].addr = s->bufs[i].addr;
            regions[i].len = s->bufs[i].len;
            /* device memory is published as such, never read through the host */
            railwire_mem_init(&mems[i]);
            mems[i].kind = s->bufs[i].cuda ? RAILWIRE_MEM_CUDA : RAILWIRE_MEM_HOST;
            mems[i].addr = s->bufs[i].addr;
            mems[i].len = s->bufs[i].len;
            any_cuda |= s->bufs[i].cuda;
        }
        if (any_cuda) {
            o.layer_mems = mems;
            o.n_layer_mems = (unsigned)n;
        } else {
            o.layers = regions;
            o.n_layers = (unsigned)n;
        }
    } else if (dialect == RAILWIRE_DIALECT_RW) {
        if (arena == Py_None || layers != Py_None) {
            rwpy_raise(RAILWIRE_E_INVALID, "dialect 'rw' serves arena=buffer (writable) and no layers");
            goto fail;
        }
        s->bufs = PyMem_Calloc(1, sizeof(*s->bufs));
        if (!s->bufs) {
            PyErr_NoMemory();
            goto fail;
        }
        if (rwpy_buf_acquire(arena, 1, &s->bufs[0]) < 0)
            goto fail;
        s->n_bufs = 1;
        if (s->bufs[0].cuda) {
            railwire_mem_init(&arena_mem);
            arena_mem.kind = RAILWIRE_MEM_CUDA;
            arena_mem.addr = s->bufs[0].addr;
            arena_mem.len = s->bufs[0].len;
            o.arena_mem = &arena_mem;
        } else {
            o.arena.addr = s->bufs[0].addr;
            o.arena.len = s->bufs[0].len;
        }
    } else {
        rwpy_raise(RAILWIRE_E_INVALID, "unknown dialect %d", dialect);
        goto fail;
    }
    o.dialect = (uint32_t)dialect;
    o.transport = (uint32_t)transport;
    o.listen_host = host;
    o.listen_port = port;
    o.rail_addrs = o.n_rail_addrs ? addr_v : NULL;
    o.devices = o.n_devices ? dev_v : NULL;
    if (max_clients)
        o.max_clients = max_clients;
    if (max_rails)
        o.max_rails_per_client = max_rails;
    o.max_bytes = max_bytes;
    if (io_timeout > 0)
        o.io_timeout_ms = io_timeout;
    o.gid_index = gid_index;
    o.busy_poll_us = busy_poll_us;
    o.staging_bytes = (size_t)staging_bytes;
    railwire_server *srv = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = railwire_server_create(&o, &srv);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        rwpy_raise(rc, "start a %s server on %s:%s", dialect == RAILWIRE_DIALECT_RW ? "rw" : "ro",
                   host, port);
        goto fail;
    }
    s->srv = srv;
    s->port = railwire_server_port(srv);
    Py_XDECREF(seq);
    Py_XDECREF(keep_a);
    Py_XDECREF(keep_d);
    Py_XDECREF(keep_t);
    PyMem_Free(regions);
    PyMem_Free(mems);
    return (PyObject *)s;
fail:
    Py_XDECREF(seq);
    Py_XDECREF(keep_a);
    Py_XDECREF(keep_d);
    Py_XDECREF(keep_t);
    PyMem_Free(regions);
    PyMem_Free(mems);
    Py_XDECREF(s);
    return NULL;
}

static PyObject *server_close(rwpy_server *s, PyObject *noargs)
{
    (void)noargs;
    server_release(s);
    Py_RETURN_NONE;
}

static PyObject *server_get_port(rwpy_server *s, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(s->port);
}

static PyObject *server_get_sessions(rwpy_server *s, void *c)
{
    (void)c;
    if (!s->srv)
        return PyLong_FromLong(0);
    unsigned n;
    railwire_server *srv = s->srv;
    Py_BEGIN_ALLOW_THREADS
    n = railwire_server_sessions(srv);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLong(n);
}

static ssize_t render_server(const void *srv, char *buf, size_t size)
{
    return railwire_server_metrics(srv, buf, size);
}

/* Server.metrics(): railwire_server_metrics() as a str.  The GIL stays
 * held (the render is a snapshot copy that never waits on the network), so
 * a close() from another thread cannot free the server under it. */
static PyObject *server_metrics(rwpy_server *s, PyObject *noargs)
{
    char *text = NULL, what[64];
    ssize_t n;

    (void)noargs;
    n = s->srv ? rwpy_metrics_render(render_server, s->srv, &text) : RAILWIRE_E_CLOSED;
    snprintf(what, sizeof(what), "the server on port %u", s->port);
    return rwpy_metrics_str(n, text, what);
}

/* Server.stats(): railwire_server_stats() as a dict, one key per field of
 * struct railwire_server_stats (include/railwire/server.h says what each
 * counts), so a field added there is added to this table alone. */
#define F(name) {#name, offsetof(struct railwire_server_stats, name)}
static const struct {
    const char *name;
    size_t off;
} stats_fields[] = {
    F(sessions_live), F(sessions_lingering), F(pending), F(slots_held), F(rails_live),
    F(accept_paused), F(accepted), F(sessions_opened), F(released_control_ended),
    F(released_linger_expired), F(released_no_rail_attached), F(released_rails_closed),
    F(released_server_stopping), F(rails_never_attached), F(rejected_allowlist),
    F(rejected_per_peer), F(rejected_max_clients), F(rejected_rails), F(rejected_setup),
    F(evicted), F(handshake_timeouts), F(handshake_failures), F(accept_errors), F(accept_pauses),
    F(data_counted), F(requests_read), F(requests_written), F(bytes_read), F(bytes_written),
    F(requests_refused), F(rails_attached), F(rails_waiting), F(rails_closed), F(rails_unknown),
    F(registered_bytes), F(registrations), F(registration_ns), F(registration_max_ns),
    F(queue_budget_bytes), F(queue_share_bytes), F(queued_bytes), F(queued_peak_bytes),
    F(queue_evictions), F(queue_starved), F(released_displaced), F(tls), F(tls_handshakes),
    F(tls_failures), F(rejected_identity), F(rejected_lockout), F(tls_gate_waits), F(tls_reloads),
    F(tls_reload_failures), F(plain_at_tls), F(tls_at_plain), F(regs_host), F(regs_dmabuf),
    F(regs_peermem), F(regs_staged), F(staging_bound), F(staging_chunk), F(staging_allocated),
    F(staging_in_use), F(staging_waits), F(bytes_read_by_reference),
};
#undef F

static PyObject *server_stats(rwpy_server *s, PyObject *noargs)
{
    struct railwire_server_stats st;
    (void)noargs;
    if (!s->srv)
        return rwpy_raise(RAILWIRE_E_CLOSED, "stats of the server on port %u", s->port);
    int rc = railwire_server_stats(s->srv, &st, sizeof(st));
    if (rc < 0)
        return rwpy_raise(rc, "stats of the server on port %u", s->port);
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < sizeof(stats_fields) / sizeof(stats_fields[0]); i++) {
        uint64_t v;
        memcpy(&v, (const char *)&st + stats_fields[i].off, sizeof(v));
        PyObject *o = PyLong_FromUnsignedLongLong(v);
        if (!o || PyDict_SetItemString(d, stats_fields[i].name, o) < 0) {
            Py_XDECREF(o);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(o);
    }
    return d;
}

static PyObject *server_get_closed(rwpy_server *s, void *c)
{
    (void)c;
    return PyBool_FromLong(s->srv == NULL);
}

static void server_dealloc(rwpy_server *s)
{
    server_release(s);
    PyObject_Free(s);
}

static PyMethodDef server_methods[] = {
    {"close", (PyCFunction)(void (*)(void))server_close, METH_NOARGS,
     "Stops the server, ends every session and releases the buffers.  Idempotent."},
    {"metrics", (PyCFunction)(void (*)(void))server_metrics, METH_NOARGS,
     "The server's counters in the Prometheus text format (str)."},
    {"stats", (PyCFunction)(void (*)(void))server_stats, METH_NOARGS,
     "The server's counters (railwire_server_stats) as a dict."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef server_getset[] = {
    {"port", (getter)server_get_port, NULL, "the bound control port", NULL},
    {"sessions", (getter)server_get_sessions, NULL, "live client sessions", NULL},
    {"closed", (getter)server_get_closed, NULL, "True once closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rwpy_server_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "railwire._Server",
    .tp_basicsize = sizeof(rwpy_server),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The C server under railwire.Server.",
    .tp_dealloc = (destructor)server_dealloc,
    .tp_methods = server_methods,
    .tp_getset = server_getset,
};
