/* SPDX-License-Identifier: MIT */
/* What the server's event loops (tcp_loop.c) and the client's
 * (tcp_cli_loop.c) share: the kernel objects of a loop (an epoll set with
 * an eventfd for commands), the table of what a loop watches, its FIFO of
 * members that used their quantum, and the bounded wait of a thread that
 * asked a loop to let a member go.  Each loop keeps its own policy (what a
 * member is, when it spins, what a command does); the bookkeeping is here
 * once.  A loop's table and ready FIFO belong to its thread alone. */
#ifndef RW_TCP_EVLOOP_H
#define RW_TCP_EVLOOP_H

#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>

/* A loop's epoll set and its command eventfd (registered in the set with
 * data.ptr NULL, so an event without a pointer means "commands waiting").
 * `what` names the loop kind in messages ("event loop", "client event
 * loop"); it is a static string, not owned. */
struct rw_evloop_fds {
    int epfd;
    int evfd;
    unsigned id;
    const char *what;
};

/* Opens f's epoll set and eventfd (close-on-exec, the eventfd
 * non-blocking).  Returns 0, or RAILWIRE_E_SYSTEM with both closed and the
 * cause logged (naming the file descriptor limit). */
int rw_evloop_fds_open(struct rw_evloop_fds *f, const char *what, unsigned id);
/* Closes what rw_evloop_fds_open opened (either may be -1). */
void rw_evloop_fds_close(struct rw_evloop_fds *f);
/* Wakes the loop's thread: one eventfd write (a counter already non-zero
 * is no error: the loop wakes anyway). */
void rw_evloop_wake(const struct rw_evloop_fds *f);
/* Loop thread: consumes the eventfd's count. */
void rw_evloop_drain(const struct rw_evloop_fds *f);
/* Loop thread: epoll_wait for at most timeout ms (-1: none); returns the
 * events in ev, 0 on none or EINTR (other errors are logged, rate-limited,
 * and count as none). */
int rw_evloop_wait(const struct rw_evloop_fds *f, struct epoll_event *ev, int max, int timeout);
/* Loop thread: stops watching fd; a socket the set no longer holds
 * (ENOENT, EBADF) is no error. */
void rw_evloop_unwatch(const struct rw_evloop_fds *f, int fd);

/* What a loop keeps of each watched member, embedded in it (the owner is
 * found with rw_list_entry, common/list.h). */
struct rw_evloop_member {
    unsigned idx;                      /* position in the table, (unsigned)-1 = none */
    int on_ready;                      /* on the ready FIFO */
    struct rw_evloop_member *ready_next;
};

/* A loop's members: a table (for the timeout scan and fork) and the FIFO
 * of those that used their quantum and run again after the next poll. */
struct rw_evloop_set {
    struct rw_evloop_member **tab;     /* n of cap entries, malloc'd */
    unsigned n, cap;
    struct rw_evloop_member *ready_head, *ready_tail;
};

/* Marks m as in no table and no FIFO (before its first add). */
void rw_evloop_member_init(struct rw_evloop_member *m);
/* Puts m in the table (growing it from first_cap entries).  Returns 0 or
 * RAILWIRE_E_NOMEM (m is then in no table). */
int rw_evloop_set_add(struct rw_evloop_set *s, struct rw_evloop_member *m, unsigned first_cap);
/* Takes m out of the table and the FIFO (either may not hold it). */
void rw_evloop_set_remove(struct rw_evloop_set *s, struct rw_evloop_member *m);
/* Frees the table (the members are the owners'). */
void rw_evloop_set_free(struct rw_evloop_set *s);
/* Queues m on the ready FIFO unless it is there already. */
void rw_evloop_ready_push(struct rw_evloop_set *s, struct rw_evloop_member *m);
/* Takes the whole ready FIFO (oldest first), leaving it empty: members a
 * run queues again wait for the next poll.  Walk it with
 * rw_evloop_ready_next, which unlinks each member as it goes. */
struct rw_evloop_member *rw_evloop_ready_take(struct rw_evloop_set *s);
/* The member after m in a taken list; m is off the FIFO afterwards. */
struct rw_evloop_member *rw_evloop_ready_next(struct rw_evloop_member *m);

/* Waits, holding `lock` (taken by the caller) on `cond`, until *done is
 * set by the loop thread.  Loop handlers never block, so this ends within
 * a loop turn; past 5 s it logs once that the loop looks stuck and goes on
 * waiting. */
void rw_evloop_await_release(pthread_cond_t *cond, pthread_mutex_t *lock, const int *done,
                             const struct rw_evloop_fds *f, const char *member);

#endif
