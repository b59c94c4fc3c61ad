/* SPDX-License-Identifier: MIT */
/* Shared declarations of the _railwire extension module: the Railset,
 * MemoryRegion and server objects and the helpers their files share. */
#ifndef RWPY_EXT_H
#define RWPY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>

#include <railwire.h>

/* A buffer taken from a Python object (buffer protocol, __array_interface__
 * or a CPU torch tensor's data_ptr()); holds a reference to the object (and
 * its buffer export) until rwpy_buf_release(). */
struct rwpy_buf {
    void *addr;
    size_t len;
    int readonly;
    int cuda;        /* CUDA device memory (__cuda_array_interface__): never read by the CPU */
    int has_view;    /* view holds a buffer export */
    Py_buffer view;
    PyObject *keep;  /* the object, when not held through view */
};

/* Fills *b from `obj`.  want_write: 1 = must be writable, 0 = read-only is
 * fine (b->readonly says which it got).  Returns 0, or -1 with a Python
 * exception set (nothing held). */
int rwpy_buf_acquire(PyObject *obj, int want_write, struct rwpy_buf *b);
/* Releases what rwpy_buf_acquire took; safe to call twice.  GIL held. */
void rwpy_buf_release(struct rwpy_buf *b);
/* The object the buffer came from (borrowed), or NULL after release. */
PyObject *rwpy_buf_object(const struct rwpy_buf *b);

/* The Railset object.  The C railset is thread-safe, so its calls run
 * with the GIL released and no lock of the extension's own.  Only its
 * close must not overlap another call: every C call is bracketed by
 * rwpy_rs_enter (GIL held: refuses once `closing` is set) and
 * rwpy_rs_leave, and close waits for `users` to drop to zero after waking
 * the threads that sleep (close_fd), so it never waits for a transfer. */
typedef struct {
    PyObject_HEAD
    railwire_railset *rs;          /* NULL once closed */
    atomic_long users;             /* C calls in progress */
    atomic_int closing;            /* close() has started */
    int fd;                        /* railwire_railset_fd (owned by rs) */
    int close_fd;                  /* eventfd: close wakes the sleepers */
    atomic_long sync_inflight;     /* synchronous read/write transfers in flight */
    _Atomic uint64_t last_batch_c_ns; /* time inside railwire_submit_batch */
    unsigned n_rails, n_layers;
    int dialect;
    char transport[16];
    char target[300];
    PyObject *mrs;                 /* list of open MemoryRegion objects */
} rwpy_railset;

/* GIL held: 0, or RAILWIRE_E_CLOSED (closing: no C call may start). */
static inline int rwpy_rs_enter(rwpy_railset *self)
{
    if (atomic_load(&self->closing) || !self->rs)
        return RAILWIRE_E_CLOSED;
    atomic_fetch_add(&self->users, 1);
    return 0;
}

/* Any thread, GIL or not: ends what rwpy_rs_enter began. */
static inline void rwpy_rs_leave(rwpy_railset *self)
{
    atomic_fetch_sub(&self->users, 1);
}

/* GIL released: sleeps until the railset fd or close fires, or ms pass.
 * Returns 1 when a signal interrupted it (the caller checks signals), else
 * 0. */
int rwpy_sleep(rwpy_railset *self, int ms);

/* The MemoryRegion object. */
typedef struct {
    PyObject_HEAD
    rwpy_railset *owner;           /* strong reference */
    railwire_mr *mr;               /* NULL once deregistered */
    struct rwpy_buf buf;
    int state;                     /* RWPY_MR_OPEN / _CLOSING / _CLOSED (GIL) */
    atomic_long busy;              /* submits using mr now (entered with the GIL held) */
} rwpy_mr;

enum { RWPY_MR_OPEN = 0, RWPY_MR_CLOSING = 1, RWPY_MR_CLOSED = 2 };

extern PyTypeObject rwpy_railset_type;
extern PyTypeObject rwpy_mr_type;
extern PyTypeObject rwpy_server_type;
extern PyTypeObject *rwpy_completion_type;

/* errors.c: raises the railwire.Error subclass of `code` with the message
 * "<context>: <railwire_strerror(code)>".  Always returns NULL. */
PyObject *rwpy_raise(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns a new reference to the exception instance for `code` (not raised),
 * or NULL with an exception set. */
PyObject *rwpy_error_new(int code, const char *context);
/* Python-callable: sets the factory errors.py provides. */
PyObject *rwpy_set_error_factory(PyObject *self, PyObject *factory);
void rwpy_errors_clear(void);

/* completion.c: creates the Completion struct-sequence type. 0 or -1. */
int rwpy_completion_init(PyObject *module);
/* Returns a list of Completion objects for c[0..n), or NULL. */
PyObject *rwpy_completions_to_list(const railwire_completion *c, size_t n);

/* stats.c: returns a new dict with every field of *s. */
PyObject *rwpy_rail_stats_to_dict(const railwire_rail_stats *s);

/* intarray.c: reads `obj` (an int, a sequence of ints or a 1-D integer
 * buffer such as a numpy array) into out[0..n) as uint64.  An int is
 * repeated n times (only if allow_scalar).  `what` names the argument in
 * errors.  0, or -1 with an exception set. */
int rwpy_uint64_array(PyObject *obj, const char *what, int allow_scalar, size_t n, uint64_t *out);
/* One non-negative int (anything with __index__) as uint64.  0 or -1. */
int rwpy_uint64(PyObject *obj, const char *what, uint64_t *out);
/* The length of a sequence or 1-D buffer, or -1 with an exception set. */
Py_ssize_t rwpy_array_len(PyObject *obj, const char *what);

/* railset.c */
PyObject *rwpy_connect(PyObject *self, PyObject *args, PyObject *kw);
/* Releases every region of `self` (after the C railset is closed). */
void rwpy_railset_drop_mrs(rwpy_railset *self);

/* mr.c: registers `obj` on `rs`; returns a new MemoryRegion or NULL. */
PyObject *rwpy_mr_register(rwpy_railset *rs, PyObject *obj);
/* Releases the buffer and marks the region closed (railset close).  GIL held. */
void rwpy_mr_forget(rwpy_mr *m);

/* railset_wait.c: the waiting side. */
PyObject *rwpy_railset_wait(rwpy_railset *self, PyObject *args, PyObject *kw);
PyObject *rwpy_railset_poll(rwpy_railset *self, PyObject *args, PyObject *kw);
PyObject *rwpy_railset_cancel(rwpy_railset *self, PyObject *arg);
/* Waits for reserved transfer h (RAILWIRE_OP_F_RESERVED) for up to
 * timeout_s; returns its status with *c filled, RAILWIRE_E_TIMEOUT (the
 * reservation is lifted: it stays pending and a later poll()/wait()
 * returns it), RAILWIRE_E_CLOSED, or -1 with a Python exception
 * (KeyboardInterrupt) set, also after lifting the reservation.  GIL held;
 * the caller has entered the railset. */
int rwpy_wait_own(rwpy_railset *self, railwire_handle h, double timeout_s, railwire_completion *c);
/* Parses a timeout in seconds (None: `none`) into *out.  0 or -1. */
int rwpy_parse_seconds(PyObject *o, const char *what, double none, double *out);

/* module.c: the main thread's PyThread ident (the only one signals reach). */
extern unsigned long rwpy_main_thread;

/* railset_io.c: the submitting side. */
PyObject *rwpy_railset_submit_read(rwpy_railset *self, PyObject *args, PyObject *kw);
PyObject *rwpy_railset_submit_write(rwpy_railset *self, PyObject *args, PyObject *kw);
PyObject *rwpy_railset_submit_batch(rwpy_railset *self, PyObject *args, PyObject *kw);
PyObject *rwpy_railset_read(rwpy_railset *self, PyObject *args, PyObject *kw);
PyObject *rwpy_railset_write(rwpy_railset *self, PyObject *args, PyObject *kw);

/* server.c */
PyObject *rwpy_server_create(PyObject *self, PyObject *args, PyObject *kw);

/* metrics.c: railwire_railset_metrics / railwire_server_metrics. */
typedef ssize_t (*rwpy_metrics_fn)(const void *obj, char *buf, size_t size);
/* Renders obj's text into a buffer grown until it fits.  Returns its
 * length with *out owned by the caller (free it, or pass it to
 * rwpy_metrics_str), or a RAILWIRE_E_* code with *out NULL
 * (RAILWIRE_E_STATE: the text kept growing; the renderers never return
 * it themselves).  Needs no GIL. */
ssize_t rwpy_metrics_render(rwpy_metrics_fn render, const void *obj, char **out);
/* Returns a new str of n bytes of text (or raises for a negative n, the
 * message naming `what`); frees text either way.  Needs the GIL. */
PyObject *rwpy_metrics_str(ssize_t n, char *text, const char *what);

/* The longest wait railwire_wait accepts (24 hours); None means this. */
#define RWPY_MAX_WAIT_S (24.0 * 3600.0)

#endif
