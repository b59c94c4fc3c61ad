/* SPDX-License-Identifier: MIT */
/* CUDA memory a tcp server publishes (path "staged", docs/gpu.md): the
 * server's CPU never touches device memory.  A request on a staged region
 * moves its payload through chunks of the server's bounded pinned pool, on
 * one CUDA stream per rail connection, created on its first staged request:
 * - READ: the device bytes are copied device -> chunk (up to
 *   RW_TCP_SST_SLOTS chunks ahead), and each chunk is sent once its copy
 *   has completed;
 * - WRITE: the payload is received into chunks, each copied chunk ->
 *   device once full; the answer goes out only after every copy of the
 *   request has completed.
 * The event loop never waits for a copy: a connection whose copy has not
 * completed, or that finds every chunk of the pool in use (back-pressure:
 * nothing more is allocated), returns RW_TCP_W_COPY and is run again
 * shortly (rw_tcp_sst_resched) to query its copies' events, while the
 * loop serves its other connections.  Loop thread only. */
#ifndef RW_TCP_SERVE_STAGE_H
#define RW_TCP_SERVE_STAGE_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcp/tcp_internal.h"

/* Chunks (and copies) one connection holds at most. */
#define RW_TCP_SST_SLOTS 4u

/* What a step of a connection's state machine returns (tcp_serve.c). */
enum rw_tcp_step {
    RW_TCP_S_CONT,   /* go on */
    RW_TCP_S_WAIT,   /* c->wait says for what */
    RW_TCP_S_YIELD,  /* the quantum is used up */
    RW_TCP_S_CLOSE,  /* close the connection (*why says why) */
    RW_TCP_S_DONE,   /* a staged WRITE's payload is on the device: answer OK */
};

/* A recv that returned k <= 0 (0: end of stream; `inside`: in the middle
 * of a request), for tcp_serve.c and the staged payloads.  Returns
 * RW_TCP_S_WAIT (EAGAIN; c->wait set) or RW_TCP_S_CLOSE with *why. */
static inline enum rw_tcp_step rw_tcp_conn_recv_err(struct rw_tcp_conn *c, ssize_t k,
                                                    int inside, const char **why)
{
    if (k == 0) {
        *why = inside ? "the client closed the connection in the middle of a request" : "";
        return RW_TCP_S_CLOSE;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->wait = RW_TCP_W_IN;
        return RW_TCP_S_WAIT;
    }
    *why = "connection error or reset";
    return RW_TCP_S_CLOSE;
}

/* A checked request of c->req on key k (k->stage_pool set), whose device
 * bytes start at c->mem: makes the request staged (c->staged = 1) and
 * creates the connection's staging state on first use.  Returns 0, or an
 * error (logged) after which the connection is closed. */
int rw_tcp_sst_begin(struct rw_tcp_conn *c, const struct rw_tcp_key *k);

/* WRITE payload of a staged request (state RW_TCP_C_WPAY).  Returns
 * RW_TCP_S_DONE once every byte is received and copied to the device,
 * else as a step (RW_TCP_S_WAIT with c->wait RW_TCP_W_IN or RW_TCP_W_COPY). */
enum rw_tcp_step rw_tcp_sst_payload(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum,
                                    const char **why);

/* READ answer of a staged request: sets *src and *avail to the payload
 * bytes ready to send now (in a chunk whose copy has completed; *avail may
 * be 0).  Returns RW_TCP_S_CONT, RW_TCP_S_WAIT (c->wait = RW_TCP_W_COPY)
 * when no payload is ready and no header (hdr bytes) is pending either, or
 * RW_TCP_S_CLOSE when a copy failed. */
enum rw_tcp_step rw_tcp_sst_window(struct rw_tcp_conn *c, size_t hdr, const uint8_t **src,
                                   uint64_t *avail, const char **why);
/* n payload bytes from the window were sent: a chunk sent whole goes back
 * to the pool. */
void rw_tcp_sst_sent(struct rw_tcp_conn *c, uint64_t n);

/* After a run that ended waiting for RW_TCP_W_COPY: runs c again after
 * the loop's next poll while the wait is young (the copies of a chunk take
 * microseconds on a GPU), then every millisecond (the tick list). */
void rw_tcp_sst_resched(struct rw_tcp_conn *c);

/* Closing c: waits (bounded) for its copies in flight, returns its chunks
 * and frees its staging state.  NULL state is a no-op. */
void rw_tcp_sst_close(struct rw_tcp_conn *c);

#endif
