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
 * ep_post itself when nothing else is queued and the loop sleeps (no
 * wakeup of the loop). */
#define RW_TCP_INLINE_MAX (16u * 1024)

/* Called by ep_post with ep->lock held after queuing entries [first,
 * first + cnt): if nothing older waits, they are small, the ep's loop
 * sleeps and fewer than 8 answers are due, writes them without blocking
 * (temporarily releasing the lock); whatever is left goes to the ep's loop
 * (kicked: a running loop without a wakeup; a sleeping one that will wake
 * for the due answers, with none).  Returns with the lock held. */
void rw_tcp_cli_send_locked(struct rw_tcp_cli_ep *ep, uint64_t first, uint64_t cnt);

/* --- a waiting caller receiving on its rail (tcp_cli_attend.c) --- */

/* ep_create: makes ep->wfd, the ep's wait fd (an epoll set of ep->evfd).
 * Returns 0, or RAILWIRE_E_SYSTEM (logged; ep->wfd is -1). */
int rw_tcp_cli_wait_init(struct rw_tcp_cli_ep *ep);

/* ep_arm_after: clears the eventfd, sets the mark of the next wake-up
 * (the eventfd is written once `want` completions past ep->polled are
 * published, or one fails; rw_tcp_cli_publish_locked), and adds the rail
 * socket to the wait set while a caller awaits a few small answers (or
 * removes it).  Returns 1 when the socket is in the wait set (ep_poll
 * receives), 0 when not, or RAILWIRE_E_SYSTEM (logged). */
int rw_tcp_cli_arm(struct rw_tcp_cli_ep *ep, unsigned want);

/* ep_poll with nothing to deliver: when the ep is armed for it and the
 * loop is not receiving, runs the receive state machine in the calling
 * thread (non-blocking).  Returns 1 when it ran, 0 when not. */
int rw_tcp_cli_attend(struct rw_tcp_cli_ep *ep);

/* Whether every request posted has its answer and the verdict is in (an
 * attending caller stops receiving there).  Takes ep->lock. */
int rw_tcp_cli_rx_idle(struct rw_tcp_cli_ep *ep);

/* The loop's timeout scan, ep->lock held: gives the socket's input back
 * to the loop when the attending caller has not come back for a while. */
void rw_tcp_cli_attend_scan_locked(struct rw_tcp_cli_ep *ep, int64_t now);

/* --- called by the ep's loop thread only (rx_run also by an attending
 * caller, which then owns the receive state machine) --- */

/* Runs the receive state machine for one quantum (tcp_cli_rx.c).  Returns
 * 1 when the quantum was used, 0 when the socket has nothing more (or the
 * ep failed: rw_tcp_cli_fail was called).  *spin_ns as in rw_tcp_cli_run. */
int rw_tcp_cli_rx_run(struct rw_tcp_cli_ep *ep, uint64_t *spin_ns);
/* Loop thread: ep's socket reported a hang-up or an error.  Its edge does
 * not come again, so from now on a short read does not mark the socket
 * empty: the receiver reads on to the end of stream or the error. */
void rw_tcp_cli_rx_hup(struct rw_tcp_cli_ep *ep);
/* The thread that runs the receive: drops the SO_RCVLOWAT a big READ
 * payload set (tcp_cli_rx.c), so that the next edge comes with the next
 * byte, and bytes already queued make one now. */
void rw_tcp_cli_rx_lowat_off(struct rw_tcp_cli_ep *ep);

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
