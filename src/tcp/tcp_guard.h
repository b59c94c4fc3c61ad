/* SPDX-License-Identifier: MIT */
/* Lockout of peers that guess: a peer address (IP, any port) whose rail
 * hellos are refused RW_TCP_LOCKOUT_FAILS times, each within
 * RW_TCP_LOCKOUT_MS of the previous one, is locked out for
 * RW_TCP_LOCKOUT_MS: its connections are refused at accept, hellos
 * unread.  Process-wide (every server domain), a table of
 * RW_TCP_GUARD_PEERS addresses (the stalest entry is reused when full). */
#ifndef RW_TCP_GUARD_H
#define RW_TCP_GUARD_H

#include <stdint.h>
#include <sys/socket.h>

#define RW_TCP_LOCKOUT_FAILS 16
#define RW_TCP_LOCKOUT_MS 60000
#define RW_TCP_GUARD_PEERS 1024

/* Returns 1 if the peer of `ss` is locked out now. */
int rw_tcp_guard_locked(const struct sockaddr_storage *ss, int64_t now_ms);
/* Counts one refused hello from `ss`.  Returns 1 when this failure locked
 * the peer out (the caller logs it). */
int rw_tcp_guard_fail(const struct sockaddr_storage *ss, int64_t now_ms);
/* The same for the peer of a connected socket (getpeername). */
int rw_tcp_guard_fail_fd(int fd, int64_t now_ms);

#endif
