/* SPDX-License-Identifier: MIT */
/* Shared declarations of the _railwire extension module: the Railset,
 * MemoryRegion and server objects and the helpers their files share. */
#ifndef RWPY_EXT_H
#define RWPY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <railwire.h>

#include "compq.h"
#include "rslock.h"

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

/* The Railset object.  Fields marked [lock] are read and written only with
 * `lock` held (and the GIL released); the others only with the GIL held. */
typedef struct {
    PyObject_HEAD
    struct rwpy_rslock lock;
    railwire_railset *rs;          /* [lock] NULL once closed */
    struct rwpy_compq q;           /* [lock] completions not yet returned */
    struct rwpy_waiter *waiters;   /* [lock] synchronous helpers waiting */
    size_t inflight;               /* [lock] submitted, not yet taken from C */
    size_t n_waiters;              /* [lock] entries in waiters */
    uint64_t last_batch_c_ns;      /* [lock] time inside railwire_submit_batch */
    int closing;                   /* close() has started */
    unsigned n_rails, n_layers;
    int dialect;
    char transport[16];
    char target[300];
    PyObject *mrs;                 /* list of open MemoryRegion objects */
} rwpy_railset;

/* The MemoryRegion object. */
typedef struct {
    PyObject_HEAD
    rwpy_railset *owner;           /* strong reference */
    railwire_mr *mr;               /* [owner->lock] NULL once deregistered */
    struct rwpy_buf buf;
    int state;                     /* RWPY_MR_OPEN / _CLOSING / _CLOSED */
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
/* Waits for `handle`'s completion; returns its status, RAILWIRE_E_TIMEOUT
 * (it stays pending and a later poll/wait returns it), RAILWIRE_E_CLOSED,
 * or -1 with a Python exception (KeyboardInterrupt) set.  Called with the
 * GIL held right after rwpy_waiter_link() under the lock. */
struct rwpy_waiter {
    railwire_handle handle;
    int done;
    railwire_completion c;
    struct rwpy_waiter *next;
};
int rwpy_wait_own(rwpy_railset *self, struct rwpy_waiter *w, double timeout_s);
/* [lock] Moves completions from the C railset to their waiter or the queue:
 * railwire_wait for up to ms (ms < 0: railwire_poll).  Returns the C
 * result (a count or an error). */
int rwpy_pump(rwpy_railset *self, int ms);

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

/* The longest single C wait while the lock is held, so other threads can
 * submit in between and Ctrl-C is seen promptly. */
#define RWPY_WAIT_SLICE_MS 10
/* The longest wait railwire_wait accepts (24 hours); None means this. */
#define RWPY_MAX_WAIT_S (24.0 * 3600.0)

#endif
