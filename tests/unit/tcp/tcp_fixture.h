/* SPDX-License-Identifier: MIT */
/* Shared helpers of the tcp transport suites: a server and a client domain
 * on loopback, registered server memory, connected ep pairs, completion
 * waits, and a scripted fake server speaking the rail protocol. */
#ifndef RW_TESTS_TCP_FIXTURE_H
#define RW_TESTS_TCP_FIXTURE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tcp/tcp_proto.h"
#include "transport/transport.h"

#define T_SRV_LEN (8u << 20)

struct tpair {
    struct rw_domain *sdom, *cdom;
    uint8_t *smem;            /* T_SRV_LEN bytes, pattern-filled, registered RW */
    struct rw_mr *smr;
    struct rw_ep *sep, *cep;
};

/* Fills buf with a pattern that depends on seed and position. */
void t_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* Opens both domains on `addr` ("127.0.0.1" or "::1"); io_timeout_ms 0 =
 * default.  Registers smem. Asserts on failure. */
void t_open(struct tpair *p, const char *addr, int io_timeout_ms);

/* Creates a server ep exposing the given MRs (NULL/0: p->smr) and a client
 * ep of `depth`, and connects them (both sides concurrently).  Asserts. */
void t_connect(struct tpair *p, struct rw_mr *const *exposed, size_t n_exposed, unsigned depth);
/* The same with the client ep's options given (the server ep gets its depth
 * and its set_rails). */
void t_connect_cfg(struct tpair *p, struct rw_mr *const *exposed, size_t n_exposed,
                   const struct rw_ep_cfg *ccfg);

/* Runs the server's ep_connect(remote, timeout) in a thread while the
 * client connects; returns the client's code, *srv_rc gets the server's. */
int t_connect_both(struct rw_ep *sep, struct rw_ep *cep, int timeout_ms, int *srv_rc);

/* t_open and t_connect (client depth `depth`), then a client buffer of len
 * bytes (malloc'd, uninitialised) registered on the client domain into
 * *lmr.  Returns the buffer (the caller deregisters *lmr and frees it).
 * Asserts. */
uint8_t *t_open_with_buf(struct tpair *p, int io_timeout_ms, unsigned depth, size_t len,
                         struct rw_mr **lmr);

/* Destroys what t_open/t_connect created (NULL members skipped). */
void t_close(struct tpair *p);

/* Polls ep until n completions arrived or timeout_ms passed, sleeping on
 * the wait fd between polls.  Returns how many arrived. */
int t_wait(struct rw_ep *ep, struct rw_wc *wcs, int n, int timeout_ms);

/* Posts all n WRs, waiting for completions to make room as needed; the
 * completions reaped on the way are stored in wcs (room for n).  Returns
 * how many completions were stored. */
int t_post_all(struct rw_ep *ep, const struct rw_wr *wrs, size_t n, struct rw_wc *wcs, int timeout_ms);

/* Holds `thread` (an event loop's) in a signal handler (SIGUSR1) until
 * t_release_thread, so that what reaches its sockets meanwhile comes to it
 * in one edge.  Asserts that it parked within 10 s.  One at a time. */
void t_park_thread(pthread_t thread);
void t_release_thread(void);

/* A fake server: a loopback listener that accepts one rail connection,
 * reads its hello, answers `verdict`, then reads requests forever and
 * answers none (until fake_close). */
struct fake_srv {
    int lfd, cfd;
    uint16_t port;
    struct rw_qp_id id;       /* what a client must connect to */
    uint8_t verdict;
    _Atomic int started;      /* set once the hello was answered */
    _Atomic unsigned long long drained; /* bytes read after the hello */
    /* fake_start_reset's script: once reset_after_bytes were read and
     * reset_go is set, answer the first reset_answers requests (OK, no
     * payload) and reset the connection at once (0: never). */
    unsigned reset_answers;
    unsigned long long reset_after_bytes;
    _Atomic int reset_go;     /* set by the test: run the script */
    _Atomic int reset;        /* the script ran: the thread closed cfd */
    void *thread;
};
void fake_start(struct fake_srv *f, uint8_t verdict);
/* fake_start (verdict OK) with the reset script above. */
void fake_start_reset(struct fake_srv *f, unsigned answers, unsigned long long after_bytes);
/* Waits (bounded) until the fake server accepted and answered.  Returns 1 if so. */
int fake_wait_attached(struct fake_srv *f, int timeout_ms);
/* Closes the fake server's connection (the client sees EOF) and stops it. */
void fake_close(struct fake_srv *f);

/* A client ep connected to a fake server that reads and never answers, with
 * a registered local buffer: every request posted stays outstanding. */
struct t_silent {
    struct fake_srv f;
    struct rw_domain *cdom;
    struct rw_ep *cep;
    uint8_t *buf;             /* buf_len bytes, zeroed, registered local */
    struct rw_mr *lmr;
};
/* Starts the fake server, opens a client domain and an ep of cfg, connects
 * it and waits until the server answered its hello.  Asserts. */
void t_silent_open(struct t_silent *s, const struct rw_ep_cfg *cfg, size_t buf_len);
/* Destroys what t_silent_open created and stops the fake server. */
void t_silent_close(struct t_silent *s);

/* Opens a listening TCP socket on 127.0.0.1, an ephemeral port (backlog
 * given).  Returns the socket (the caller closes it) and its port in
 * *port.  Asserts. */
int t_listen_loopback(int backlog, uint16_t *port);

/* Builds a remote identity for 127.0.0.1:port (qpn = port). */
struct rw_qp_id t_loopback_id(uint16_t port, uint32_t slot, uint32_t psn);

#endif
