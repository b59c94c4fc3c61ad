/* SPDX-License-Identifier: MIT */
/* Zero-copy READ answers of a tcp server (railwire_server_opts.
 * zero_copy_reads, docs/tcp-transport.md): an answer of at least
 * RW_TCP_SPLICE_MIN bytes on memory registered with
 * RW_ACCESS_READ_BY_REFERENCE goes to the socket through a pipe: the
 * header is written into the pipe (a copy of a few bytes),
 * the payload's pages are mapped into it (vmsplice), and the pipe is
 * spliced into the socket, so the server's CPU never copies the payload.
 * Plain sockets only (TLS encrypts a copy anyway); CUDA memory is staged
 * (tcp_serve_stage.c).  A connection holds a pipe of the process's pool
 * only while an answer goes through it; an answer that finds every pipe in
 * use is copied, and a connection whose pipe cannot be made (out of
 * descriptors, or over the user's pipe-buffer limit) copies its answers
 * for RW_TCP_SPLICE_RETRY_MS, then tries again.  Loop thread only, except
 * the pool calls at the end. */
#ifndef RW_TCP_SERVE_SPLICE_H
#define RW_TCP_SERVE_SPLICE_H

#include <stdint.h>

#include "tcp/tcp_internal.h"
#include "tcp/tcp_serve_stage.h"

/* Smallest READ payload answered by reference.  Below it the three system
 * calls of a spliced answer cost more than the copy they spare: on 2 CPUs,
 * 1 rail of 64 KiB READs moved 8-16% less spliced, 128 KiB 9-14% more. */
#define RW_TCP_SPLICE_MIN (128u * 1024)

/* Most pipes the process holds (open, in use or spare). */
#define RW_TCP_SPLICE_PIPES_MAX 32u

/* How long a connection whose pipe could not be made copies its answers
 * before it tries again: the causes (descriptors, the user's pipe pages)
 * are the process's and pass, and a failed try costs a pipe2 call and one
 * rate-limited log line. */
#define RW_TCP_SPLICE_RETRY_MS 1000

/* Returns 1 if c's answer in progress goes (or is going) through a pipe:
 * it started so, or it is a READ answer of at least RW_TCP_SPLICE_MIN
 * bytes on by-reference host memory over a plain socket and a pipe could
 * be taken from the pool (c->pipe_state 1 until the answer is sent).
 * Returns 0 when the answer is copied: every pipe in use (tried again at
 * the next answer), or no pipe could be made (c->pipe_state -1: the
 * connection copies until RW_TCP_SPLICE_RETRY_MS after the failed try). */
int rw_tcp_splice_wanted(struct rw_tcp_conn *c, int64_t now);

/* Sends c's answer in progress (header and payload) through its pipe, as
 * step_send does with copies: within the connection's cap and the queue
 * budget (bytes in the pipe count as queued), at most *quantum bytes
 * (decreased by what moved).  Returns RW_TCP_S_CONT with c->state set to
 * RW_TCP_C_HDR once every byte is in the socket, RW_TCP_S_WAIT (c->wait
 * says for what), RW_TCP_S_YIELD, or RW_TCP_S_CLOSE with *why. */
enum rw_tcp_step rw_tcp_splice_send(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum,
                                    const char **why);

/* At c's close: hands its pipe back, if it holds one, closing it if bytes
 * of an answer are left in it (their pages go back when the kernel lets
 * go of them). */
void rw_tcp_splice_close(struct rw_tcp_conn *c);

/* Closes the pool's spare pipes (the last server domain of the process
 * closed: rw_tcp_pool_release).  Thread-safe. */
void rw_tcp_splice_drain(void);

/* Pipes the process holds now, in use or spare.  Thread-safe. */
unsigned rw_tcp_splice_pipes_open(void);

/* Tests: at most max pipes (0: RW_TCP_SPLICE_PIPES_MAX), and a connection
 * whose pipe could not be made tries again after retry_ms (0:
 * RW_TCP_SPLICE_RETRY_MS).  Thread-safe. */
void rw_tcp_splice_configure(unsigned max, unsigned retry_ms);

/* The queue budget step_send and rw_tcp_splice_send share (tcp_serve.c):
 * takes between `need` and `want` bytes of c's cap and of the budget into
 * *got.  Returns RW_TCP_S_CONT, or RW_TCP_S_WAIT with c->wait set
 * (RW_TCP_W_CAP or RW_TCP_W_BUDGET) and nothing taken. */
enum rw_tcp_step rw_tcp_conn_reserve(struct rw_tcp_conn *c, int64_t now, uint64_t want,
                                     uint64_t need, uint64_t *got);

#endif
