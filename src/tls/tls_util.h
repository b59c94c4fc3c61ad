/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the TLS files. */
#ifndef RW_TLS_UTIL_H
#define RW_TLS_UTIL_H

#include <signal.h>
#include <stddef.h>

/* Initializes OpenSSL for railwire, once per process, before its first
 * use by railwire: without the exit handler that frees OpenSSL's global
 * state (OPENSSL_INIT_NO_ATEXIT).  railwire's threads (a heal attempt that
 * outlives its railset's close, the loops of a server or railset the
 * program did not close) may still be inside OpenSSL when the program
 * exits; freeing that state under them crashes them.  The memory is the
 * kernel's to reclaim at exit.  Has no effect where the program set
 * OpenSSL up before (its own choice stands).  Returns 0, or
 * RAILWIRE_E_SYSTEM (logged) when OpenSSL cannot initialize. */
int rw_tls_init(void);

/* Writes OpenSSL's queued errors of this thread ("reason; reason") into buf
 * ("no detail" when the queue is empty) and clears the queue.  Returns buf. */
char *rw_tls_ossl_errors(char *buf, size_t cap);

/* Copies at most cap - 1 bytes of src[0..len) into dst, replacing every byte
 * that is not printable ASCII by '?', and terminates it.  For names a peer
 * chose, before they reach a log line. */
void rw_tls_printable(char *dst, size_t cap, const void *src, size_t len);

/* strdup that accepts NULL (returns NULL then).  Sets *fail on allocation
 * failure. */
char *rw_tls_strdup(const char *s, int *fail);

/* SIGPIPE held back around OpenSSL calls that may write to the socket: a
 * pending SIGPIPE raised by them is consumed, never delivered. */
struct rw_tls_sigpipe {
    sigset_t old;
    int was_pending;
    int held; /* the thread blocks SIGPIPE for good: enter/leave do nothing */
};
void rw_tls_sigpipe_enter(struct rw_tls_sigpipe *g);
void rw_tls_sigpipe_leave(struct rw_tls_sigpipe *g);
/* After a call that failed (not a would-block): on a thread that holds
 * SIGPIPE blocked for good, consumes the SIGPIPE the failed write may have
 * left pending. */
void rw_tls_sigpipe_failed(const struct rw_tls_sigpipe *g);

#endif
