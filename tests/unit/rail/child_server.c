/* SPDX-License-Identifier: MIT */
/* A server in a forked child process (see child_server.h). */
#include "child_server.h"

#include <criterion/criterion.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t child_server_fork(void (*child)(int to_parent, int from_parent), int *up, int *down)
{
    int to_parent[2], from_parent[2];
    cr_assert_eq(pipe(to_parent), 0);
    cr_assert_eq(pipe(from_parent), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(to_parent[0]);
        close(from_parent[1]);
        child(to_parent[1], from_parent[0]);
        _exit(127);
    }
    close(to_parent[1]);
    close(from_parent[0]);
    *up = to_parent[0];
    *down = from_parent[1];
    return pid;
}

void child_server_reap(pid_t pid, const char *what)
{
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s status %d", what, status);
}
