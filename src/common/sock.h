/* SPDX-License-Identifier: MIT */
/* Control-socket I/O: name resolution, connect with a timeout, listening,
 * and reads/writes each bounded by a timeout.  Sockets are non-blocking;
 * every wait goes through poll().  Error classes stay apart:
 * RAILWIRE_E_CONNECT (refused, unreachable, bad name), RAILWIRE_E_TIMEOUT,
 * RAILWIRE_E_IO (reset or failed mid-stream); a clean end of stream is a
 * return of 0 from rw_sock_recv(). */
#ifndef RW_RAIL_SOCK_H
#define RW_RAIL_SOCK_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <railwire/error.h>

/* Resolves host:port (IPv4, IPv6 or a name) and connects, trying each
 * address in turn, all within timeout_ms (<= 0: 5000).  Returns 0 and a
 * connected non-blocking socket in *fd (caller closes), RAILWIRE_E_TIMEOUT
 * when the time ran out, RAILWIRE_E_CONNECT otherwise. */
int rw_sock_connect(const char *host, const char *port, int timeout_ms, int *fd);

/* Binds host:port (NULL host: every IPv4 address) and listens with
 * `backlog`.  Returns 0 and a non-blocking listening socket in *fd, or
 * RAILWIRE_E_CONNECT (bad address, port in use) / RAILWIRE_E_SYSTEM. */
int rw_sock_listen(const char *host, const char *port, int backlog, int *fd);
/* rw_sock_listen without the message for a bind or listen that failed:
 * *sys_err gets its errno (0 on success, or when the address did not
 * resolve, which is still logged), for a caller that may try another port. */
int rw_sock_listen_try(const char *host, const char *port, int backlog, int *fd, int *sys_err);

/* Turns on TCP keepalive (first probe after about timeout_ms / 2, then one
 * a second) and TCP_USER_TIMEOUT = timeout_ms on a connected socket, so a
 * peer that vanished without a FIN or RST (power loss, cable pulled) turns
 * into a read error instead of a silence that lasts forever.  Failures are
 * logged at debug level (the socket still works). */
void rw_sock_keepalive(int fd, int timeout_ms);

/* Sends all `len` bytes within timeout_ms (<= 0: 10000) for the whole call.
 * Returns 0, RAILWIRE_E_TIMEOUT or RAILWIRE_E_IO (peer gone). */
int rw_sock_send_all(int fd, const void *buf, size_t len, int timeout_ms);

/* Receives up to `cap` bytes, waiting at most timeout_ms (<= 0: 10000).
 * Returns the count (> 0), 0 at a clean end of stream, RAILWIRE_E_TIMEOUT
 * or RAILWIRE_E_IO (reset). */
ssize_t rw_sock_recv(int fd, void *buf, size_t cap, int timeout_ms);

/* The bound port of a socket, 0 on error. */
unsigned rw_sock_local_port(int fd);

/* Writes "addr:port" ("[v6]:port") of the peer (peer != 0) or of the local
 * end into buf; "?" when unknown.  Returns buf. */
char *rw_sock_name(int fd, int peer, char *buf, size_t cap);

/* Writes the numeric local address of fd (no port, no brackets: "0.0.0.0",
 * "::1") into buf; "" on error.  Returns buf. */
char *rw_sock_host(int fd, char *buf, size_t cap);

/* Formats a socket address like rw_sock_name.  Returns buf. */
char *rw_sockaddr_str(const struct sockaddr *sa, char *buf, size_t cap);

#endif
