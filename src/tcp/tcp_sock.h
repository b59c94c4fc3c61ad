/* SPDX-License-Identifier: MIT */
/* Socket helpers of the tcp transport: tuning, a connect bounded by a
 * timeout, deadline-bounded I/O on non-blocking sockets (hello/verdict), and
 * the blocking data-path I/O (vectored sends, a small staging reader that
 * hands payloads straight to their final buffer). */
#ifndef RW_TCP_SOCK_H
#define RW_TCP_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Socket buffer size a client rail asks for with SO_SNDBUF/SO_RCVBUF
 * (server sockets are sized from the queue budget, tcp_budget.h). */
#define RW_TCP_SOCKBUF (4u << 20)

/* Returns a random 32-bit value from getrandom(2) (non-zero when nonzero is
 * set). */
uint32_t rw_tcp_random32(int nonzero);

/* Sets or clears O_NONBLOCK.  Returns 0 or RAILWIRE_E_SYSTEM (logged). */
int rw_tcp_set_nonblock(int fd, int on);

/* Options every rail socket gets before connect/after accept: TCP_NODELAY,
 * SO_SNDBUF/SO_RCVBUF = sockbuf (0: left alone), keepalive and
 * TCP_USER_TIMEOUT = io_timeout_ms so a dead peer surfaces as an error.
 * Failures are logged as warnings (the rail still works, only slower or
 * slower to notice a dead peer). */
void rw_tcp_tune(int fd, int io_timeout_ms, unsigned sockbuf);

/* Ends a connection whose queued bytes must never reach the peer (a rail
 * dying with requests outstanding: its WRITEs are carried again on other
 * rails, and a late copy from this one, sent once a flapping link comes
 * back, would land over whatever was written there since).  Drops what
 * the socket still queues and sends the peer a reset; the fd stays open
 * for its owner to close.  Call it once no other thread is inside the
 * socket (the caller has shut it down already to wake them). */
void rw_tcp_abort(int fd);

/* Sets SO_SNDTIMEO and SO_RCVTIMEO to ms (blocking data-path I/O then fails
 * with RAILWIRE_E_TIMEOUT after ms without progress). */
void rw_tcp_set_io_timeouts(int fd, int ms);

/* Creates a non-blocking TCP socket of `remote`'s family, binds it to
 * `local` (NULL or a wildcard address: no bind), tunes it and connects
 * within timeout_ms.  On success returns 0 and the socket in *fd (still
 * non-blocking).  Errors (logged): RAILWIRE_E_CONNECT (refused, unreachable,
 * family mismatch), RAILWIRE_E_TIMEOUT, RAILWIRE_E_SYSTEM. */
int rw_tcp_connect(const struct sockaddr_storage *local, const struct sockaddr_storage *remote,
                   int timeout_ms, int io_timeout_ms, int *fd);

/* Sends / receives exactly n bytes on a non-blocking socket before
 * deadline_ms (rw_now_ms() clock).  Return 0, RAILWIRE_E_TIMEOUT,
 * RAILWIRE_E_CLOSED (recv: clean EOF before the first byte), RAILWIRE_E_IO.
 * Not logged: the caller knows what the bytes were. */
int rw_tcp_send_deadline(int fd, const void *buf, size_t n, int64_t deadline_ms);
int rw_tcp_recv_deadline(int fd, void *buf, size_t n, int64_t deadline_ms);

/* Sends the whole iovec on a blocking socket (the array is modified to
 * track progress).  flags are added to MSG_NOSIGNAL.  Returns 0,
 * RAILWIRE_E_TIMEOUT (SO_SNDTIMEO ran out with no progress) or
 * RAILWIRE_E_IO (errno kept).  Not logged. */
int rw_tcp_sendv(int fd, struct iovec *iov, int iovcnt, int flags);

/* Staging reader for a blocking socket.  Small frames are read in bulk into
 * buf, so one recv can take many small answers; payloads go straight to
 * their destination, except what a bulk read already staged (so at most
 * RW_TCP_RX_STAGE bytes of a payload are ever copied out of buf, and a
 * caller that stages only what it expects of small answers copies nothing
 * of a big one). */
#define RW_TCP_RX_STAGE (64u * 1024)
struct rw_tls_conn;

struct rw_tcp_rx {
    int fd;
    struct rw_tls_conn *tls;  /* not owned: the bytes come through TLS (NULL: plain) */
    size_t off;  /* first unread byte in buf */
    size_t len;  /* end of valid bytes in buf */
    int dry;     /* a plain recv of this receive pass came back short: the
                  * socket was empty then, so another recv of the pass could
                  * only return EAGAIN (tcp_cli_rx.c, rx_recv) */
    _Atomic int hup; /* the loop saw the socket hang up or fail: no edge
                      * comes again, so a short read no longer means dry
                      * (set by the loop thread, read by the receiver) */
    uint8_t buf[RW_TCP_RX_STAGE];
};

/* Bytes staged and not yet consumed. */
static inline size_t rw_tcp_rx_avail(const struct rw_tcp_rx *rx)
{
    return rx->len - rx->off;
}

/* Consumes n staged bytes (n <= rw_tcp_rx_avail). */
static inline void rw_tcp_rx_consume(struct rw_tcp_rx *rx, size_t n)
{
    rx->off += n;
}

#endif
