/* SPDX-License-Identifier: MIT */
/* The event loops of the tcp client: one process-wide pool shared by every
 * client ep (every rail of every railset), min(cores, rails connected)
 * threads, started as rails connect and stopped when the last rail is
 * destroyed.  Each loop is an epoll set of edge-triggered, non-blocking
 * rail sockets; it runs each rail's send queue and receive state machine
 * (tcp_cli_io.c) for at most one quantum per turn, so a rail that streams
 * or stalls never holds up the others on its loop.
 *
 * Other threads talk to a loop through its command lists (add, kick, kill)
 * and its eventfd.  A fork()ed child inherits no loop thread: the pool's
 * fork handler marks every inherited ep dead and orphaned, so the child can
 * destroy them without waiting for a thread that does not exist in it (and
 * without touching the parent's connections).
 *
 * Lock order: an ep's lock may be held while taking its loop's lock, never
 * the other way round; the pool lock is never taken with either held by a
 * loop thread. */
#ifndef RW_TCP_CLI_LOOP_H
#define RW_TCP_CLI_LOOP_H

#include "tcp/tcp_internal.h"

/* Most loops the pool ever runs (also bounded by the cores). */
#define RW_TCP_CLI_LOOPS_MAX 64u

/* Hands a connected ep to loop (its place mod min(cores, the configured
 * most)), starting that loop's thread if it has none, so at most
 * min(cores, eps) loops run.  The ep must be up with
 * its socket set.  Returns 0, or RAILWIRE_E_SYSTEM / RAILWIRE_E_NOMEM
 * (logged; the ep is not attached). */
int rw_tcp_cli_loop_attach(struct rw_tcp_cli_ep *ep);

/* With ep->lock held: asks the ep's loop to run its send queue (requests
 * were posted that the posting thread did not write). */
void rw_tcp_cli_loop_kick(struct rw_tcp_cli_ep *ep);

/* With ep->lock held: as rw_tcp_cli_loop_kick, but a sleeping loop is not
 * woken: it runs the ep's send queue on its next wake-up.  Only for an ep
 * whose loop receives and that awaits answers (their input wakes it). */
void rw_tcp_cli_loop_defer(struct rw_tcp_cli_ep *ep);

/* Returns 1 when the thread of the ep's loop is running (handling events
 * or spinning), so that a kick reaches it without a wakeup and it sends
 * what was queued together with what else it has; 0 when it sleeps.  A
 * hint, read without a lock. */
int rw_tcp_cli_loop_awake(const struct rw_tcp_cli_ep *ep);

/* With ep->lock held: makes the ep's loop watch its socket's input (in)
 * or not (a waiting caller receives, tcp_cli_attend.c).  Turning it on
 * again reports input already waiting. */
void rw_tcp_cli_loop_watch_in(struct rw_tcp_cli_ep *ep, int in);

/* Asks the ep's loop to drop the ep and waits until the loop no longer
 * touches it nor its buffers (bounded: loop handlers never block).  The ep
 * must be dead already.  Never called from a loop thread. */
void rw_tcp_cli_loop_kill(struct rw_tcp_cli_ep *ep);

/* Gives the ep's place back (after rw_tcp_cli_loop_kill): the last ep of
 * the process stops and joins the loop threads. */
void rw_tcp_cli_loop_detach(struct rw_tcp_cli_ep *ep);

/* Returns the place of a new ep: consecutive calls return consecutive
 * numbers.  Attach puts the ep on loop (place mod the pool's size), so the
 * rails of a railset, created in order, go round the loops in order (as a
 * server puts a session's rails: tcp_loop.h), and each loop of a host
 * talks to as few loops of the peer's as it can. */
unsigned rw_tcp_cli_pool_place(void);

/* Sets the most loop threads the pool runs (1..RW_TCP_CLI_LOOPS_MAX;
 * 0 = the number of cores).  Takes effect for loops started later.  For
 * tests and benchmarks. */
void rw_tcp_cli_pool_configure(unsigned n);

/* The thread of the loop serving a connected ep (for tests that measure
 * what the thread serving a rail costs). */
pthread_t rw_tcp_cli_loop_thread(const struct rw_tcp_cli_ep *ep);

/* Number of client eps attached to the loops of this process (a hint:
 * read without the pool lock). */
unsigned rw_tcp_cli_pool_eps(void);

/* Number of client loop threads running in this process. */
unsigned rw_tcp_cli_pool_threads(void);

#endif
