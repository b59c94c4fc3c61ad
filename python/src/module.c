/* SPDX-License-Identifier: MIT */
/* The _railwire extension module: types, functions and constants.  The
 * public API is railwire/__init__.py, which builds on this. */
#include "ext.h"

/* Every code of include/railwire/error.h, exported as E_<NAME>
 * (tests/python/test_errors.py checks the header against this list). */
static const struct {
    const char *name;
    int code;
} error_codes[] = {
    {"E_PEER_REJECTED", RAILWIRE_E_PEER_REJECTED},
    {"E_TRUNCATED", RAILWIRE_E_TRUNCATED},
    {"E_BAD_RAIL_COUNT", RAILWIRE_E_BAD_RAIL_COUNT},
    {"E_RAIL_COUNT_MISMATCH", RAILWIRE_E_RAIL_COUNT_MISMATCH},
    {"E_BAD_LAYER_COUNT", RAILWIRE_E_BAD_LAYER_COUNT},
    {"E_REFUSED", RAILWIRE_E_REFUSED},
    {"E_NEED_MORE", RAILWIRE_E_NEED_MORE},
    {"E_NOSPACE", RAILWIRE_E_NOSPACE},
    {"E_INVALID", RAILWIRE_E_INVALID},
    {"E_STATE", RAILWIRE_E_STATE},
    {"E_NOMEM", RAILWIRE_E_NOMEM},
    {"E_TIMEOUT", RAILWIRE_E_TIMEOUT},
    {"E_CONNECT", RAILWIRE_E_CONNECT},
    {"E_IO", RAILWIRE_E_IO},
    {"E_RAIL_DOWN", RAILWIRE_E_RAIL_DOWN},
    {"E_ALL_RAILS_DOWN", RAILWIRE_E_ALL_RAILS_DOWN},
    {"E_REMOTE_ACCESS", RAILWIRE_E_REMOTE_ACCESS},
    {"E_LIMIT", RAILWIRE_E_LIMIT},
    {"E_NO_DEVICE", RAILWIRE_E_NO_DEVICE},
    {"E_VERBS", RAILWIRE_E_VERBS},
    {"E_QP_RTR", RAILWIRE_E_QP_RTR},
    {"E_RETRY_EXCEEDED", RAILWIRE_E_RETRY_EXCEEDED},
    {"E_UNSUPPORTED", RAILWIRE_E_UNSUPPORTED},
    {"E_CLOSED", RAILWIRE_E_CLOSED},
    {"E_PROTOCOL", RAILWIRE_E_PROTOCOL},
    {"E_SYSTEM", RAILWIRE_E_SYSTEM},
    {"E_TLS", RAILWIRE_E_TLS},
};

static PyObject *m_strerror(PyObject *self, PyObject *arg)
{
    (void)self;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(railwire_strerror((int)code));
}

static PyObject *m_error_class(PyObject *self, PyObject *arg)
{
    (void)self;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(railwire_error_class((int)code));
}

static PyObject *m_set_log_level(PyObject *self, PyObject *arg)
{
    (void)self;
    long lvl = PyLong_AsLong(arg);
    if (lvl == -1 && PyErr_Occurred())
        return NULL;
    if (lvl < RAILWIRE_LOG_ERROR || lvl > RAILWIRE_LOG_DEBUG)
        return rwpy_raise(RAILWIRE_E_INVALID, "log level %ld: use LOG_ERROR..LOG_DEBUG (0..3)", lvl);
    railwire_log_set_level((enum railwire_log_level)lvl);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_connect", (PyCFunction)(void (*)(void))rwpy_connect, METH_VARARGS | METH_KEYWORDS,
     "Low-level connect; use railwire.connect()."},
    {"_server_create", (PyCFunction)(void (*)(void))rwpy_server_create, METH_VARARGS | METH_KEYWORDS,
     "Low-level server; use railwire.Server()."},
    {"_set_error_factory", rwpy_set_error_factory, METH_O, NULL},
    {"strerror", m_strerror, METH_O, "strerror(code) -> str: what went wrong and what to check."},
    {"error_class", m_error_class, METH_O,
     "error_class(code) -> str: the short class name ('peer-rejected', 'timeout', ...)."},
    {"set_log_level", m_set_log_level, METH_O,
     "set_log_level(level): most verbose level the C library logs to stderr (LOG_ERROR..LOG_DEBUG)."},
    {NULL, NULL, 0, NULL},
};

static void module_free(void *m)
{
    (void)m;
    rwpy_errors_clear();
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "railwire._railwire",
    .m_doc = "C extension of the railwire package (use `import railwire`).",
    .m_size = -1,
    .m_methods = module_methods,
    .m_free = module_free,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
    if (PyType_Ready(t) < 0)
        return -1;
    Py_INCREF(t);
    if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__railwire(void);

PyMODINIT_FUNC PyInit__railwire(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (add_type(m, &rwpy_railset_type, "Railset") < 0 ||
        add_type(m, &rwpy_mr_type, "MemoryRegion") < 0 ||
        add_type(m, &rwpy_server_type, "_Server") < 0 || rwpy_completion_init(m) < 0)
        goto fail;
    PyObject *codes = PyDict_New();
    if (!codes || PyModule_AddObject(m, "ERROR_CODES", codes) < 0) {
        Py_XDECREF(codes);
        goto fail;
    }
    for (size_t i = 0; i < sizeof(error_codes) / sizeof(error_codes[0]); i++) {
        PyObject *v = PyLong_FromLong(error_codes[i].code);
        if (!v || PyDict_SetItemString(codes, error_codes[i].name + 2, v) < 0 ||
            PyModule_AddIntConstant(m, error_codes[i].name, error_codes[i].code) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddIntConstant(m, "OK", RAILWIRE_OK) < 0 ||
        PyModule_AddIntConstant(m, "READ", RAILWIRE_OP_READ) < 0 ||
        PyModule_AddIntConstant(m, "WRITE", RAILWIRE_OP_WRITE) < 0 ||
        PyModule_AddIntConstant(m, "DIALECT_RO", RAILWIRE_DIALECT_RO) < 0 ||
        PyModule_AddIntConstant(m, "DIALECT_RW", RAILWIRE_DIALECT_RW) < 0 ||
        PyModule_AddIntConstant(m, "TRANSPORT_AUTO", RAILWIRE_TRANSPORT_AUTO) < 0 ||
        PyModule_AddIntConstant(m, "TRANSPORT_TCP", RAILWIRE_TRANSPORT_TCP) < 0 ||
        PyModule_AddIntConstant(m, "TRANSPORT_VERBS", RAILWIRE_TRANSPORT_VERBS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_RAILS", RAILWIRE_MAX_RAILS) < 0 ||
        PyModule_AddIntConstant(m, "LOG_ERROR", RAILWIRE_LOG_ERROR) < 0 ||
        PyModule_AddIntConstant(m, "LOG_WARN", RAILWIRE_LOG_WARN) < 0 ||
        PyModule_AddIntConstant(m, "LOG_INFO", RAILWIRE_LOG_INFO) < 0 ||
        PyModule_AddIntConstant(m, "LOG_DEBUG", RAILWIRE_LOG_DEBUG) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_VERBS", RAILWIRE_HAVE_VERBS) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
