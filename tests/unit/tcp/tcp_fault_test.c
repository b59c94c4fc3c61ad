/* SPDX-License-Identifier: MIT */
/* Accept-path faults (issue 8, F4): with no descriptor left, the accept
 * thread backs off instead of spinning, and says so once per interval. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <railwire/log.h>

#include "tcp_fixture.h"

static _Atomic int fault_lines;

static void sink(enum railwire_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (strstr(msg, "cannot accept rail connections"))
        atomic_fetch_add(&fault_lines, 1);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Runs in a child process (it exhausts its descriptors).  Returns 0 on
 * success, or which check failed. */
static int emfile_child(void)
{
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "127.0.0.1"};
    struct rw_ep_cfg scfg = {.depth = 4};
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct rw_domain *sdom;
    struct rw_ep *sep;
    struct rlimit rl;
    int cli[4], lowest, n_fill = 0;
    static int fill[4096];
    double c0, used;
    int lines;

    railwire_log_set_sink(sink, NULL);
    if (rw_tcp_ops.domain_open(&sc, &sdom) || rw_tcp_ops.ep_create(sdom, &scfg, &sep))
        return 10;
    sin.sin_port = htons((uint16_t)(sep->local.qpn & 0xffff));
    for (int i = 0; i < 4; i++)
        if ((cli[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0)
            return 11;
    lowest = open("/dev/null", O_RDONLY);
    if (lowest < 0)
        return 12;
    close(lowest);
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return 13;
    rl.rlim_cur = (rlim_t)lowest + 2;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        return 14;
    while (n_fill < 4096) {
        int fd = dup(0);
        if (fd < 0) {
            if (errno != EMFILE)
                return 15;
            break;
        }
        fill[n_fill++] = fd;
    }
    for (int i = 0; i < 4; i++)
        if (connect(cli[i], (struct sockaddr *)&sin, sizeof(sin)) < 0 && errno != EINPROGRESS)
            return 16;
    c0 = cpu_s();
    sleep(3);
    used = cpu_s() - c0;
    lines = atomic_load(&fault_lines);
    if (used > 0.5) {
        fprintf(stderr, "emfile child: %.2f CPU-seconds in 3 s\n", used);
        return 20;
    }
    if (lines < 1 || lines > 6) {
        fprintf(stderr, "emfile child: %d fault lines in 3 s\n", lines);
        return 21;
    }
    /* Descriptors back: the pending clients get accepted (their hello is
     * then awaited as usual). */
    while (n_fill)
        close(fill[--n_fill]);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    for (int i = 0; i < 4; i++)
        close(cli[i]);
    rw_tcp_ops.ep_destroy(sep);
    rw_tcp_ops.domain_close(sdom);
    fprintf(stderr, "emfile child: %.3f CPU-seconds and %d fault line(s) in 3 s\n", used, lines);
    return 0;
}

Test(tcp_fault, emfile_on_accept_backs_off_and_logs_once_per_interval, .timeout = 60)
{
    int status = 0;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(emfile_child());
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child crashed");
    cr_assert_eq(WEXITSTATUS(status), 0, "check %d failed (see stderr)", WEXITSTATUS(status));
}
