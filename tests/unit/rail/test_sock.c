/* SPDX-License-Identifier: MIT */
/* Control-socket I/O over real loopback sockets: connect (IPv4, IPv6,
 * refused, timed out), bounded reads and writes, end of stream vs reset. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sock.h"
#include "hs_peer.h"

static char port_str[16];

/* Listens on host with an ephemeral port (port_str gets it). */
static int listen_any(const char *host, int backlog)
{
    int fd = -1;
    cr_assert_eq(rw_sock_listen(host, "0", backlog, &fd), 0);
    snprintf(port_str, sizeof(port_str), "%u", rw_sock_local_port(fd));
    return fd;
}

static int accept_wait(int lfd)
{
    int fd = hs_peer_accept(lfd, 2000);
    if (fd < 0)
        cr_assert_fail("no connection to accept");
    return fd;
}

Test(sock, ipv4_connect_send_recv_and_clean_eof)
{
    int lfd = listen_any("127.0.0.1", 16);
    int c = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port_str, 2000, &c), 0);
    int s = accept_wait(lfd);
    cr_assert_eq(rw_sock_send_all(c, "hello", 5, 1000), 0);
    char buf[16];
    size_t got = 0;
    while (got < 5) {
        ssize_t n = rw_sock_recv(s, buf + got, sizeof(buf) - got, 1000);
        cr_assert_gt(n, 0);
        got += (size_t)n;
    }
    cr_assert_eq(memcmp(buf, "hello", 5), 0);
    close(c);
    cr_assert_eq(rw_sock_recv(s, buf, sizeof(buf), 1000), 0, "clean close reads as end of stream");
    char name[80];
    rw_sock_name(s, 0, name, sizeof(name));
    cr_assert_eq(strncmp(name, "127.0.0.1:", 10), 0, "local name is %s", name);
    close(s);
    close(lfd);
}

Test(sock, ipv6_loopback)
{
    int lfd = listen_any("::1", 16);
    int c = -1;
    cr_assert_eq(rw_sock_connect("::1", port_str, 2000, &c), 0);
    int s = accept_wait(lfd);
    char name[80];
    rw_sock_name(s, 1, name, sizeof(name));
    cr_assert_eq(strncmp(name, "[::1]:", 6), 0, "peer name is %s", name);
    cr_assert_eq(rw_sock_send_all(s, "x", 1, 1000), 0);
    char b;
    cr_assert_eq(rw_sock_recv(c, &b, 1, 1000), 1);
    cr_assert_eq(b, 'x');
    close(c);
    close(s);
    close(lfd);
}

Test(sock, refused_port_is_a_connect_error_not_a_timeout)
{
    int lfd = listen_any("127.0.0.1", 1);
    close(lfd); /* nobody listens on port_str now */
    int c = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port_str, 2000, &c), RAILWIRE_E_CONNECT);
    cr_assert_eq(rw_sock_connect("no-such-host.invalid", "1", 2000, &c), RAILWIRE_E_CONNECT);
}

Test(sock, unanswered_connect_times_out)
{
    /* A listener whose accept queue is full drops new SYNs: the connect
     * sees silence, as with a dead host. */
    int lfd = listen_any("127.0.0.1", 0);
    int fds[16], n = 0, rc = 0;
    for (; n < 16; n++) {
        rc = rw_sock_connect("127.0.0.1", port_str, 300, &fds[n]);
        if (rc < 0)
            break;
    }
    cr_assert_eq(rc, RAILWIRE_E_TIMEOUT, "connect to a full backlog must time out");
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(lfd);
}

Test(sock, silent_peer_read_times_out)
{
    int lfd = listen_any("127.0.0.1", 16);
    int c = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port_str, 2000, &c), 0);
    int s = accept_wait(lfd);
    char b[4];
    cr_assert_eq(rw_sock_recv(c, b, sizeof(b), 50), RAILWIRE_E_TIMEOUT);
    close(c);
    close(s);
    close(lfd);
}

Test(sock, reset_is_io_error_not_end_of_stream)
{
    int lfd = listen_any("127.0.0.1", 16);
    int c = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port_str, 2000, &c), 0);
    int s = accept_wait(lfd);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(s); /* RST */
    char b[4];
    cr_assert_eq(rw_sock_recv(c, b, sizeof(b), 1000), RAILWIRE_E_IO);
    close(c);
    close(lfd);
}

Test(sock, write_to_a_full_peer_times_out)
{
    int lfd = listen_any("127.0.0.1", 16);
    int c = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port_str, 2000, &c), 0);
    int s = accept_wait(lfd);
    size_t big = 64u << 20;
    char *p = calloc(1, big);
    cr_assert_eq(rw_sock_send_all(c, p, big, 100), RAILWIRE_E_TIMEOUT,
                 "64 MiB into a peer that never reads must time out");
    free(p);
    close(c);
    close(s);
    close(lfd);
}

Test(sock, listening_on_a_busy_port_fails)
{
    int lfd = listen_any("127.0.0.1", 16);
    int fd2 = -1;
    cr_assert_eq(rw_sock_listen("127.0.0.1", port_str, 16, &fd2), RAILWIRE_E_CONNECT);
    close(lfd);
}

/* A black-holed address: inside a network namespace of our own, a veth whose
 * peer end has no address, so nothing ever answers for 198.18.0.2. */
Test(sock, black_holed_address_times_out_in_a_namespace)
{
    char ns[32], cmd[512];
    snprintf(ns, sizeof(ns), "rwt-rail-%d", (int)getpid());
    snprintf(cmd, sizeof(cmd),
             "ip netns add %s && ip -n %s link add va type veth peer name vb && "
             "ip -n %s addr add 198.18.0.1/24 dev va && ip -n %s link set va up && "
             "ip -n %s link set vb up", ns, ns, ns, ns, ns);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns);
        (void)system(cmd);
        cr_skip_test("cannot create a network namespace here");
    }
    pid_t pid = fork();
    if (pid == 0) {
        char path[64];
        snprintf(path, sizeof(path), "/run/netns/%s", ns);
        int nfd = open(path, O_RDONLY);
        if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0)
            _exit(2);
        int fd = -1;
        int rc = rw_sock_connect("198.18.0.2", "9", 300, &fd);
        _exit(rc == RAILWIRE_E_TIMEOUT ? 0 : 1);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    snprintf(cmd, sizeof(cmd), "ip netns del %s", ns);
    cr_assert_eq(system(cmd), 0, "namespace %s not removed", ns);
    cr_assert(WIFEXITED(st));
    cr_assert_eq(WEXITSTATUS(st), 0, "connect to a black hole did not time out (child %d)",
                 WEXITSTATUS(st));
}

struct trickle {
    int fd;
    volatile int stop;
};

static void *trickle_reader(void *arg)
{
    struct trickle *t = arg;
    uint8_t b[1024];
    while (!t->stop) {
        if (recv(t->fd, b, sizeof(b), MSG_DONTWAIT) == 0)
            break;
        usleep(20 * 1000); /* about 50 KB/s */
    }
    return NULL;
}

/* The timeout of rw_sock_send_all bounds the whole call: a peer that keeps
 * reading a trickle (so that every single wait makes progress) must not
 * stretch it.  512 KiB at ~50 KB/s would take ~10 s; the bound is 500 ms. */
Test(sock, send_all_is_bounded_as_a_whole_against_a_trickling_reader, .timeout = 60)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    int fl = fcntl(sv[0], F_GETFL);
    fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
    struct trickle t = {.fd = sv[1]};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, trickle_reader, &t), 0);
    size_t len = 512 * 1024;
    uint8_t *big = calloc(1, len);
    int rc = rw_sock_send_all(sv[0], big, len, 500);
    t.stop = 1;
    pthread_join(th, NULL);
    cr_assert_eq(rc, RAILWIRE_E_TIMEOUT, "got %d", rc);
    free(big);
    close(sv[0]);
    close(sv[1]);
}
