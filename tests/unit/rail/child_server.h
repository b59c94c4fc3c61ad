/* SPDX-License-Identifier: MIT */
/* A server in a forked child process, for the suites that measure or starve
 * the server's own process (its descriptors, threads, CPU): the child and
 * the test talk over two pipes. */
#ifndef RW_TEST_CHILD_SERVER_H
#define RW_TEST_CHILD_SERVER_H

#include <sys/types.h>

/* Forks a child that runs child(to_parent, from_parent) and never returns
 * (it must _exit; a return exits 127).  In the parent: *up is read from
 * the child's to_parent, *down writes to its from_parent (both owned by
 * the caller); returns the child's pid.  Asserts (criterion) that the
 * pipes and the fork were made. */
pid_t child_server_fork(void (*child)(int to_parent, int from_parent), int *up, int *down);

/* Waits for the child and asserts that it exited with status 0; `what`
 * names it in the failure message. */
void child_server_reap(pid_t pid, const char *what);

#endif
