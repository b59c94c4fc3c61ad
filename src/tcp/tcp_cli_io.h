/* SPDX-License-Identifier: MIT */
/* The I/O threads of a client ep.  The sender writes request headers and
 * WRITE payloads straight from the posted buffers (one sendmsg per batch);
 * the receiver reads responses and READ payloads straight into the posted
 * buffers and queues completions.  When either fails (or ep_kill), both
 * stop, and the last one out completes every outstanding WR with
 * RAILWIRE_E_RAIL_DOWN, so no buffer is touched after its completion. */
#ifndef RW_TCP_CLI_IO_H
#define RW_TCP_CLI_IO_H

#include "tcp/tcp_internal.h"

/* Takes ownership of the connected blocking socket fd (closed by
 * ep_destroy), marks the ep up and starts both threads.  Returns 0, or
 * RAILWIRE_E_SYSTEM (logged; the ep is dead). */
int rw_tcp_cli_io_start(struct rw_tcp_cli_ep *ep, int fd);

/* Marks the ep dead with `err` (first failure wins; logs `what` then) and
 * shuts the socket down so both threads stop. */
void rw_tcp_cli_fail(struct rw_tcp_cli_ep *ep, int err, const char *what);

/* Requests of at most this many bytes (header + payload) are written by
 * ep_post itself when nothing else is queued (no wakeup of the sender). */
#define RW_TCP_INLINE_MAX (16u * 1024)

/* Called by ep_post with ep->lock held after queuing entries [first,
 * first + cnt): if nothing older waits and they are small, writes them
 * without blocking (temporarily releasing the lock); whatever is left goes
 * to the sender thread.  Returns with the lock held. */
void rw_tcp_cli_send_locked(struct rw_tcp_cli_ep *ep, uint64_t first, uint64_t cnt);

#endif
