/* SPDX-License-Identifier: MIT */
/* The waiting side of Railset: poll(), wait(), cancel() and the
 * synchronous helpers' wait for their own handle.
 *
 * The C railset is thread-safe and returns every completion exactly once,
 * so these call it directly with the GIL released.  A synchronous
 * read/write submits its transfer reserved (RAILWIRE_OP_F_RESERVED), so no
 * other thread's poll()/wait() can take it.  A thread with nothing to take
 * sleeps in poll(2) on the railset's fd (railwire_railset_fd) and the
 * close eventfd: a completion, a deadline or close wakes it at once, and a
 * signal (Ctrl-C in the main thread) interrupts the sleep, so no wait is
 * cut into slices. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "ext.h"

#define RWPY_MAX_WAIT_MS (24 * 3600 * 1000)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds left before `deadline` (rounded up), 0 when past. */
static int ms_left(double deadline)
{
    double left = (deadline - now_s()) * 1000.0;
    if (left <= 0)
        return 0;
    if (left >= RWPY_MAX_WAIT_MS)
        return RWPY_MAX_WAIT_MS;
    return (int)ceil(left);
}

int rwpy_sleep(rwpy_railset *self, int ms)
{
    struct pollfd p[2] = {{.fd = self->fd, .events = POLLIN}, {.fd = self->close_fd, .events = POLLIN}};
    return poll(p, 2, ms) < 0 && errno == EINTR;
}

int rwpy_parse_seconds(PyObject *o, const char *what, double none, double *out)
{
    if (!o || o == Py_None) {
        *out = none;
        return 0;
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    if (!(v >= 0))
        return rwpy_raise(RAILWIRE_E_INVALID, "%s must be None or >= 0 seconds", what), -1;
    *out = v > RWPY_MAX_WAIT_S ? RWPY_MAX_WAIT_S : v;
    return 0;
}

static int parse_max(PyObject *v, size_t *out)
{
    Py_ssize_t m = PyLong_AsSsize_t(v);
    if (m == -1 && PyErr_Occurred())
        return -1;
    if (m < 1)
        return rwpy_raise(RAILWIRE_E_INVALID, "max must be at least 1 (got %zd)", m), -1;
    if (m > (1 << 20))
        m = 1 << 20;
    *out = (size_t)m;
    return 0;
}

PyObject *rwpy_railset_poll(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"max", NULL};
    PyObject *maxo = NULL, *list;
    size_t max = 64;
    int n;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:poll", kwlist, &maxo))
        return NULL;
    if (maxo && parse_max(maxo, &max) < 0)
        return NULL;
    railwire_completion *out = PyMem_Malloc(max * sizeof(*out));
    if (!out)
        return PyErr_NoMemory();
    n = rwpy_rs_enter(self);
    if (n == 0) {
        Py_BEGIN_ALLOW_THREADS
        n = railwire_poll(self->rs, out, (int)max);
        Py_END_ALLOW_THREADS
        rwpy_rs_leave(self);
    }
    if (n < 0) {
        PyMem_Free(out);
        return rwpy_raise(n, "poll on the railset to %s", self->target);
    }
    list = rwpy_completions_to_list(out, (size_t)n);
    PyMem_Free(out);
    return list;
}

/* What a wait() ended with. */
enum { W_GOT, W_IDLE, W_TIMEOUT, W_SIGNAL, W_CLOSED, W_ERROR };

/* GIL released, nothing ready yet: sleeps until something may be (at
 * most until the deadline).  Returns W_TIMEOUT when the deadline passed,
 * W_SIGNAL when a signal interrupted the sleep, W_CLOSED when the railset
 * is closing, else W_GOT (look again). */
static int wait_more(rwpy_railset *self, double deadline)
{
    int ms = ms_left(deadline);
    if (ms == 0)
        return W_TIMEOUT;
    if (rwpy_sleep(self, ms))
        return W_SIGNAL;
    if (atomic_load(&self->closing))
        return W_CLOSED;
    return W_GOT;
}

/* GIL released: the body of wait(): takes up to max completions into out,
 * sleeping on the fd until one comes, the time runs out, nothing this
 * wait could return is pending (the synchronous helpers' transfers are
 * not), a signal or close. */
static int wait_loop(rwpy_railset *self, railwire_completion *out, size_t max, double deadline,
                     int *n)
{
    for (;;) {
        *n = railwire_poll(self->rs, out, (int)max);
        if (*n > 0)
            return W_GOT;
        if (*n < 0)
            return W_ERROR;
        long mine = (long)railwire_railset_pending(self->rs) - atomic_load(&self->sync_inflight);
        if (mine <= 0)
            return W_IDLE;
        int why = wait_more(self, deadline);
        if (why != W_GOT)
            return why;
    }
}

PyObject *rwpy_railset_wait(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", "max", NULL};
    PyObject *to = Py_None, *maxo = NULL, *list = NULL;
    size_t max = 64;
    double timeout;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:wait", kwlist, &to, &maxo))
        return NULL;
    if (maxo && parse_max(maxo, &max) < 0)
        return NULL;
    if (rwpy_parse_seconds(to, "timeout", RWPY_MAX_WAIT_S, &timeout) < 0)
        return NULL;
    railwire_completion *out = PyMem_Malloc(max * sizeof(*out));
    if (!out)
        return PyErr_NoMemory();
    double deadline = now_s() + timeout;
    for (;;) {
        int n = 0, why, rc = rwpy_rs_enter(self);
        if (rc < 0) {
            list = rwpy_raise(rc, "wait on the railset to %s", self->target);
            break;
        }
        Py_BEGIN_ALLOW_THREADS
        why = wait_loop(self, out, max, deadline, &n);
        Py_END_ALLOW_THREADS
        rwpy_rs_leave(self);
        if (why == W_SIGNAL) {
            if (PyErr_CheckSignals() < 0)
                break;
            continue;
        }
        if (why == W_CLOSED)
            list = rwpy_raise(RAILWIRE_E_CLOSED, "wait on the railset to %s", self->target);
        else if (why == W_ERROR)
            list = rwpy_raise(n, "wait on the railset to %s", self->target);
        else
            list = rwpy_completions_to_list(out, why == W_GOT ? (size_t)n : 0);
        break;
    }
    PyMem_Free(out);
    return list;
}

/* GIL released: waits for reserved h; returns W_GOT (*c, *status), W_TIMEOUT,
 * W_SIGNAL, W_CLOSED or W_ERROR (*status). */
static int own_loop(rwpy_railset *self, railwire_handle h, double deadline, railwire_completion *c,
                    int *status)
{
    for (;;) {
        int rc = railwire_wait_handle(self->rs, h, 0, c);
        if (rc == 0) {
            *status = c->status;
            return W_GOT;
        }
        if (rc != RAILWIRE_E_TIMEOUT) {
            *status = rc;
            return W_ERROR;
        }
        int why = wait_more(self, deadline);
        if (why != W_GOT)
            return why;
    }
}

int rwpy_wait_own(rwpy_railset *self, railwire_handle h, double timeout_s, railwire_completion *c)
{
    double deadline = now_s() + timeout_s;
    int status = 0, why;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        why = own_loop(self, h, deadline, c, &status);
        if (why != W_GOT && why != W_SIGNAL && why != W_CLOSED)
            railwire_wait_handle(self->rs, h, 0, NULL); /* poll()/wait() return it later */
        Py_END_ALLOW_THREADS
        if (why != W_SIGNAL)
            break;
        if (PyErr_CheckSignals() < 0) {
            Py_BEGIN_ALLOW_THREADS
            railwire_wait_handle(self->rs, h, 0, NULL);
            Py_END_ALLOW_THREADS
            atomic_fetch_sub(&self->sync_inflight, 1);
            return -1;
        }
    }
    atomic_fetch_sub(&self->sync_inflight, 1);
    if (why == W_GOT || why == W_ERROR)
        return status;
    return why == W_TIMEOUT ? RAILWIRE_E_TIMEOUT : RAILWIRE_E_CLOSED;
}

PyObject *rwpy_railset_cancel(rwpy_railset *self, PyObject *arg)
{
    uint64_t h;
    if (rwpy_uint64(arg, "handle", &h) < 0)
        return NULL;
    int rc = rwpy_rs_enter(self);
    if (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = railwire_cancel(self->rs, h);
        Py_END_ALLOW_THREADS
        rwpy_rs_leave(self);
    }
    if (rc == RAILWIRE_E_STATE)
        return rwpy_raise(rc, "cancel transfer %llu: it already finished (its completion, with its "
                          "own status, is returned by poll()/wait())", (unsigned long long)h);
    if (rc == RAILWIRE_E_INVALID)
        return rwpy_raise(rc, "cancel transfer %llu: no such transfer is pending (never submitted "
                          "on this railset, or its completion was already returned)",
                          (unsigned long long)h);
    if (rc < 0)
        return rwpy_raise(rc, "cancel transfer %llu on the railset to %s", (unsigned long long)h,
                          self->target);
    Py_RETURN_NONE;
}
