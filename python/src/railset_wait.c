/* SPDX-License-Identifier: MIT */
/* The waiting side of Railset: poll(), wait() and the synchronous helpers'
 * wait for their own handle.
 *
 * Completions leave the C railset only through rwpy_pump(), which hands
 * each one to the synchronous helper waiting for that handle, if any, or
 * else to the railset's queue, which poll() and wait() return first.  So a
 * synchronous read/write always gets its own completion, whichever thread
 * took it from C, and every completion is returned exactly once.  Every
 * wait is a loop of C waits of at most RWPY_WAIT_SLICE_MS with the lock
 * released (and signals checked) in between. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "ext.h"

#define RWPY_PUMP_BATCH 256

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds of the next wait slice before `deadline`: 0..SLICE. */
static int slice_ms(double deadline)
{
    double left = (deadline - now_s()) * 1000.0;
    if (left <= 0)
        return 0;
    if (left >= RWPY_WAIT_SLICE_MS)
        return RWPY_WAIT_SLICE_MS;
    return (int)ceil(left);
}

/* [lock] Gives one completion to its waiter or to the queue. */
static void deliver(rwpy_railset *self, const railwire_completion *c)
{
    for (struct rwpy_waiter **pw = &self->waiters; *pw; pw = &(*pw)->next) {
        struct rwpy_waiter *w = *pw;
        if (w->handle == c->handle) {
            w->c = *c;
            w->done = 1;
            *pw = w->next;
            self->n_waiters--;
            return;
        }
    }
    /* Room was reserved at submit: cap >= queued + in flight. */
    rwpy_compq_push(&self->q, c);
}

int rwpy_pump(rwpy_railset *self, int ms)
{
    railwire_completion tmp[RWPY_PUMP_BATCH];
    int total = 0, n;

    n = ms < 0 ? railwire_poll(self->rs, tmp, RWPY_PUMP_BATCH)
               : railwire_wait(self->rs, tmp, RWPY_PUMP_BATCH, ms);
    while (n > 0) {
        self->inflight -= (size_t)n;
        for (int i = 0; i < n; i++)
            deliver(self, &tmp[i]);
        total += n;
        if (n < RWPY_PUMP_BATCH)
            break;
        n = railwire_poll(self->rs, tmp, RWPY_PUMP_BATCH); /* more may be ready */
    }
    return total ? total : n;
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
    size_t max = 64, n = 0;
    int rc = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:poll", kwlist, &maxo))
        return NULL;
    if (maxo && parse_max(maxo, &max) < 0)
        return NULL;
    railwire_completion *out = PyMem_Malloc(max * sizeof(*out));
    if (!out)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    rwpy_rslock_acquire(&self->lock);
    if (!self->rs) {
        rc = RAILWIRE_E_CLOSED;
    } else {
        rc = rwpy_pump(self, -1);
        n = rwpy_compq_pop(&self->q, out, max);
    }
    rwpy_rslock_release(&self->lock);
    Py_END_ALLOW_THREADS
    if (rc < 0 && n == 0) {
        PyMem_Free(out);
        return rwpy_raise(rc, "poll on the railset to %s", self->target);
    }
    list = rwpy_completions_to_list(out, n);
    PyMem_Free(out);
    return list;
}

PyObject *rwpy_railset_wait(rwpy_railset *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", "max", NULL};
    PyObject *to = Py_None, *maxo = NULL, *list;
    size_t max = 64;
    double timeout = RWPY_MAX_WAIT_S;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:wait", kwlist, &to, &maxo))
        return NULL;
    if (maxo && parse_max(maxo, &max) < 0)
        return NULL;
    if (to != Py_None) {
        timeout = PyFloat_AsDouble(to);
        if (timeout == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(timeout >= 0))
            return rwpy_raise(RAILWIRE_E_INVALID, "timeout must be None or >= 0 seconds");
        if (timeout > RWPY_MAX_WAIT_S)
            timeout = RWPY_MAX_WAIT_S;
    }
    railwire_completion *out = PyMem_Malloc(max * sizeof(*out));
    if (!out)
        return PyErr_NoMemory();
    double deadline = now_s() + timeout;
    for (;;) {
        size_t n = 0;
        int rc = 0, idle = 0, ms = slice_ms(deadline);
        Py_BEGIN_ALLOW_THREADS
        rwpy_rslock_acquire(&self->lock);
        if (!self->rs) {
            rc = RAILWIRE_E_CLOSED;
        } else {
            n = rwpy_compq_pop(&self->q, out, max);
            if (n == 0 && self->inflight > self->n_waiters) {
                rc = rwpy_pump(self, ms);
                n = rwpy_compq_pop(&self->q, out, max);
            } else if (n == 0) {
                idle = 1; /* nothing pending that this wait could return */
            }
        }
        rwpy_rslock_release(&self->lock);
        Py_END_ALLOW_THREADS
        if (n || idle || (rc < 0 && rc != RAILWIRE_E_TIMEOUT)) {
            if (n || idle)
                list = rwpy_completions_to_list(out, n);
            else
                list = rwpy_raise(rc, "wait on the railset to %s", self->target);
            PyMem_Free(out);
            return list;
        }
        if (ms == 0 || PyErr_CheckSignals() < 0) {
            PyMem_Free(out);
            return PyErr_Occurred() ? NULL : PyList_New(0);
        }
    }
}

/* [lock] taken here: gives up waiting for w.  Its completion, now or later,
 * goes to the queue, so poll()/wait() return it. */
static void abandon(rwpy_railset *self, struct rwpy_waiter *w)
{
    Py_BEGIN_ALLOW_THREADS
    rwpy_rslock_acquire(&self->lock);
    if (self->rs) {
        if (w->done) {
            rwpy_compq_push(&self->q, &w->c);
        } else {
            for (struct rwpy_waiter **pw = &self->waiters; *pw; pw = &(*pw)->next) {
                if (*pw == w) {
                    *pw = w->next;
                    self->n_waiters--;
                    break;
                }
            }
        }
    }
    rwpy_rslock_release(&self->lock);
    Py_END_ALLOW_THREADS
}

int rwpy_wait_own(rwpy_railset *self, struct rwpy_waiter *w, double timeout_s)
{
    double deadline = now_s() + timeout_s;
    for (;;) {
        int rc = 0, done = 0, closed = 0, ms = slice_ms(deadline);
        Py_BEGIN_ALLOW_THREADS
        rwpy_rslock_acquire(&self->lock);
        if (w->done) {
            done = 1;
        } else if (!self->rs) {
            closed = 1;
        } else {
            rc = rwpy_pump(self, ms);
            done = w->done;
        }
        rwpy_rslock_release(&self->lock);
        Py_END_ALLOW_THREADS
        if (done)
            return w->c.status;
        if (closed)
            return RAILWIRE_E_CLOSED;
        if (rc < 0 && rc != RAILWIRE_E_TIMEOUT) {
            abandon(self, w);
            return rc;
        }
        if (ms == 0) {
            abandon(self, w);
            return RAILWIRE_E_TIMEOUT;
        }
        if (PyErr_CheckSignals() < 0) {
            abandon(self, w);
            return -1;
        }
    }
}
