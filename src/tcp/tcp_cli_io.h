/* SPDX-License-Identifier: MIT */
/* The I/O of a client ep, run by its event loop (tcp_cli_loop.c): a send
 * queue that writes request headers and WRITE payloads straight from the
 * posted buffers, and a receive state machine that reads responses and
 * READ payloads straight into the posted buffers and queues completions.
 * The socket is non-blocking; every handler returns when the socket would
 * block or the rail used its quantum.  When the rail fails (or ep_kill),
 * the loop drops it and completes every outstanding WR with
 * RAILWIRE_E_RAIL_DOWN, so no buffer is touched after its completion. */
#ifndef RW_TCP_CLI_IO_H
#define RW_TCP_CLI_IO_H

#include "tcp/tcp_internal.h"

/* Takes ownership of the connected socket fd (closed by ep_destroy; made
 * non-blocking here), marks the ep up and hands it to an event loop.
 * Returns 0, or RAILWIRE_E_SYSTEM / RAILWIRE_E_NOMEM (logged; the ep is
 * dead). */
int rw_tcp_cli_io_start(struct rw_tcp_cli_ep *ep, int fd);

/* Marks the ep dead with `err` (first failure wins; logs `what` then) and
 * shuts the socket down. */
void rw_tcp_cli_fail(struct rw_tcp_cli_ep *ep, int err, const char *what);

/* Requests of at most this many bytes (header + payload) are written by
 * ep_post itself when nothing else is queued (no wakeup of the loop). */
#define RW_TCP_INLINE_MAX (16u * 1024)

/* Called by ep_post with ep->lock held after queuing entries [first,
 * first + cnt): if nothing older waits and they are small, writes them
 * without blocking (temporarily releasing the lock); whatever is left goes
 * to the ep's loop.  Returns with the lock held. */
void rw_tcp_cli_send_locked(struct rw_tcp_cli_ep *ep, uint64_t first, uint64_t cnt);

/* --- called by the ep's loop thread only --- */

/* Runs the receive state machine for one quantum (tcp_cli_rx.c).  Returns
 * 1 when the quantum was used, 0 when the socket has nothing more (or the
 * ep failed: rw_tcp_cli_fail was called).  *spin_ns as in rw_tcp_cli_run. */
int rw_tcp_cli_rx_run(struct rw_tcp_cli_ep *ep, uint64_t *spin_ns);

/* Signals the ep's wait fd (a completion was queued). */
void rw_tcp_cli_notify(struct rw_tcp_cli_ep *ep);

/* With ep->lock held: publishes the completions that are both answered and
 * fully sent (see the counters in tcp_internal.h).  Returns 1 when the
 * completion queue went from empty to non-empty (call rw_tcp_cli_notify
 * once the lock is released). */
int rw_tcp_cli_publish_locked(struct rw_tcp_cli_ep *ep);

/* Runs the ep's send queue (writable: the socket reported room) and
 * receive state machine for one quantum.  Returns 1 when the ep used its
 * quantum and must run again after the other rails, 0 when it waits for
 * its socket, -1 when it is dead (the loop drops it).  *spin_ns is raised
 * to the ep's busy-poll window when it awaits a small answer. */
int rw_tcp_cli_run(struct rw_tcp_cli_ep *ep, int writable, uint64_t *spin_ns);

/* Timeout check: fails the ep when a send or an awaited answer made no
 * progress for the I/O timeout.  Returns 1 when the ep is dead. */
int rw_tcp_cli_scan(struct rw_tcp_cli_ep *ep, int64_t now);

/* Completes every outstanding WR of a dead ep with RAILWIRE_E_RAIL_DOWN
 * (answered ones keep their result) and signals the wait fd.  Called once
 * nothing else will touch the ep's buffers. */
void rw_tcp_cli_finish(struct rw_tcp_cli_ep *ep);

#endif
