/* SPDX-License-Identifier: MIT */
/* railwire_railset_fd over loopback with the real tcp transport: an
 * epoll-driven loop moves 100,000 transfers (every byte checked, each with
 * a deadline that never fires) with no railwire_wait and no other thread
 * making progress; the fd stays quiet once everything is returned. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <railwire.h>

#define KIB 1024u
#define MIB (1024u * 1024u)
#define N_XFERS 100000u
#define INFLIGHT 256u
#define PAGE (4 * KIB)

static uint8_t pat(size_t i)
{
    return (uint8_t)(i * 167u + (i >> 12) * 13u + 5u);
}

Test(railset_fd, epoll_loop_moves_100k_transfers_without_wait, .timeout = 240)
{
    size_t len = 16 * MIB;
    uint8_t *arena = malloc(len);
    cr_assert_not_null(arena);
    for (size_t i = 0; i < len; i++)
        arena[i] = pat(i);
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){arena, len};
    railwire_server *srv = NULL;
    cr_assert_eq(railwire_server_create(&so, &srv), 0);
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));

    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    railwire_railset *rs = NULL;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), 0);
    uint8_t *local = calloc(INFLIGHT, PAGE);
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(rs, local, (size_t)INFLIGHT * PAGE, &mr), 0);

    int fd = railwire_railset_fd(rs);
    cr_assert_geq(fd, 0);
    cr_assert_eq(railwire_railset_fd(rs), fd, "the same fd every time");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);

    uint64_t slot_off[INFLIGHT]; /* remote offset each slot reads */
    unsigned submitted = 0, done = 0, wakeups = 0;
    for (unsigned s = 0; s < INFLIGHT; s++) {
        slot_off[s] = ((uint64_t)submitted * 7919u % (len / PAGE)) * PAGE + (submitted % 61);
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = local + (size_t)s * PAGE,
                          .length = PAGE - 64, .remote_offset = slot_off[s], .user_data = s,
                          .timeout_ms = 60000};
        railwire_handle h;
        cr_assert_eq(railwire_submit(rs, &op, &h), 0);
        submitted++;
    }
    railwire_completion c[64];
    while (done < N_XFERS) {
        struct epoll_event out;
        int n = epoll_wait(ep, &out, 1, 20000);
        cr_assert_eq(n, 1, "the fd stayed quiet with %u transfers in flight", submitted - done);
        wakeups++;
        int got;
        do {
            got = railwire_poll(rs, c, 64);
            cr_assert_geq(got, 0);
            for (int k = 0; k < got; k++) {
                cr_assert_eq(c[k].status, 0, "transfer %u: %s", done, railwire_strerror(c[k].status));
                cr_assert_eq(c[k].bytes_moved, PAGE - 64);
                unsigned s = (unsigned)c[k].user_data;
                cr_assert_eq(memcmp(local + (size_t)s * PAGE, arena + slot_off[s], PAGE - 64), 0,
                             "transfer %u read the wrong bytes", done);
                done++;
                if (submitted < N_XFERS) {
                    slot_off[s] = ((uint64_t)submitted * 7919u % (len / PAGE)) * PAGE +
                                  (submitted % 61);
                    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr,
                                      .local = local + (size_t)s * PAGE, .length = PAGE - 64,
                                      .remote_offset = slot_off[s], .user_data = s,
                                      .timeout_ms = 60000};
                    railwire_handle h;
                    cr_assert_eq(railwire_submit(rs, &op, &h), 0);
                    submitted++;
                }
            }
        } while (got == 64);
    }
    cr_assert_eq(railwire_railset_pending(rs), 0);
    /* Everything returned: a level-triggered fd now stays quiet (one stale
     * wakeup at most, answered by an empty poll). */
    struct epoll_event out;
    if (epoll_wait(ep, &out, 1, 200) == 1)
        cr_assert_eq(railwire_poll(rs, c, 64), 0);
    cr_assert_eq(epoll_wait(ep, &out, 1, 200), 0, "the fd fires with nothing to return");
    cr_log_info("%u transfers, %u wakeups", done, wakeups);
    close(ep);
    railwire_mr_deregister(mr);
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    free(local);
    free(arena);
}
