/* SPDX-License-Identifier: MIT */
/* The server against raw-socket clients: option checks, caps enforced
 * before anything is allocated, a silent or garbage-sending client never
 * delays another, destroy is bounded with clients still connected. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "common/sock.h"

static uint8_t arena[1 << 20];
static railwire_server *srv;
static char port[16];
static int first_byte_ms; /* 0: the default */

static void start(unsigned max_clients, int io_timeout_ms)
{
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){arena, sizeof(arena)};
    o.max_clients = max_clients;
    o.io_timeout_ms = io_timeout_ms;
    if (first_byte_ms)
        o.first_byte_timeout_ms = first_byte_ms;
    cr_assert_eq(railwire_server_create(&o, &srv), 0);
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
}

static void stop(void)
{
    railwire_server_destroy(srv);
    srv = NULL;
}

static int raw_connect(void)
{
    int fd = -1;
    cr_assert_eq(rw_sock_connect("127.0.0.1", port, 2000, &fd), 0);
    return fd;
}

static int good_client(railwire_railset **rs)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    return railwire_railset_connect("127.0.0.1", port, &o, rs);
}

/* Reads until end of stream; returns the bytes read before it, or -1 if the
 * stream did not end within ms. */
static long read_to_eof(int fd, int ms)
{
    long total = 0;
    int64_t end = rw_now_ms() + ms;
    uint8_t b[512];
    for (;;) {
        int left = rw_ms_left(end);
        if (left == 0)
            return -1;
        ssize_t n = rw_sock_recv(fd, b, sizeof(b), left);
        if (n == 0)
            return total;
        if (n < 0)
            return n == RAILWIRE_E_TIMEOUT ? -1 : total;
        total += n;
    }
}

Test(server, invalid_options_are_refused)
{
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    railwire_server *s = NULL;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID, "RO without layers");
    railwire_region r = {arena, sizeof(arena)};
    o.layers = &r;
    o.n_layers = 1;
    o.max_bytes = sizeof(arena) - 1;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_LIMIT, "over max_bytes");
    o.max_bytes = 0;
    o.max_clients = 0;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID);
    o.max_clients = 1;
    o.busy_poll_us = 1000001;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID, "busy poll over one second");
    o.busy_poll_us = -1;
    o.zero_copy_reads = 2;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID, "zero_copy_reads is 0 or 1");
    o.zero_copy_reads = 1;
    o.reserved3 = 1;
    cr_assert_eq(railwire_server_create(&o, &s), RAILWIRE_E_INVALID, "reserved3 must be 0");
    o.reserved3 = 0;
    o.listen_host = "127.0.0.1";
    cr_assert_eq(railwire_server_create(&o, &s), 0);
    cr_assert_gt(railwire_server_port(s), 0);
    cr_assert_eq(railwire_server_sessions(s), 0);
    railwire_server_destroy(s);
    railwire_server_destroy(NULL);
}

Test(server, zero_rails_request_is_rejected_by_closing)
{
    start(8, 2000);
    int fd = raw_connect();
    uint8_t zero = 0;
    cr_assert_eq(rw_sock_send_all(fd, &zero, 1, 1000), 0);
    cr_assert_eq(read_to_eof(fd, 3000), 0, "rejection is an end of stream before any byte");
    close(fd);
    int64_t end = rw_now_ms() + 5000;
    while (railwire_server_sessions(srv) > 0 && rw_now_ms() < end)
        usleep(1000);
    cr_assert_eq(railwire_server_sessions(srv), 0, "the rejected session was not released");
    stop();
}

Test(server, silent_and_garbage_clients_do_not_delay_others)
{
    start(8, 60000);
    int silent = raw_connect();   /* never sends a byte */
    int half = raw_connect();     /* asks for rails, never answers the params */
    uint8_t two = 2;
    cr_assert_eq(rw_sock_send_all(half, &two, 1, 1000), 0);
    railwire_railset *rs;
    int64_t t0 = rw_now_ms();
    cr_assert_eq(good_client(&rs), 0);
    uint8_t buf[4096];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, sizeof(buf), &mr), 0);
    memset(buf, 0x5c, sizeof(buf));
    cr_assert_eq(railwire_write(rs, mr, buf, sizeof(buf), 0, 100, 20000), 0);
    cr_assert_eq(arena[100], 0x5c);
    cr_assert_lt(rw_now_ms() - t0, 30000, "a good client was held up behind silent ones");
    railwire_railset_close(rs);
    /* A client sending junk after its request gets rejected or cut off, never served. */
    int junk = raw_connect();
    uint8_t j[64];
    memset(j, 0xff, sizeof(j));
    rw_sock_send_all(junk, j, sizeof(j), 1000);
    close(junk);
    close(silent);
    close(half);
    stop();
}

Test(server, destroy_is_bounded_with_clients_connected)
{
    first_byte_ms = 60000;
    start(8, 60000);
    int silent = raw_connect();
    int half = raw_connect();
    uint8_t one = 1;
    cr_assert_eq(rw_sock_send_all(half, &one, 1, 1000), 0);
    railwire_railset *rs;
    cr_assert_eq(good_client(&rs), 0);
    /* One session, two connections still in their handshake. */
    int64_t end = rw_now_ms() + 5000;
    struct railwire_server_stats st = {0};
    while (rw_now_ms() < end) {
        cr_assert_eq(railwire_server_stats(srv, &st, sizeof(st)), 0);
        if (st.sessions_live == 1 && st.pending == 2)
            break;
        usleep(1000);
    }
    cr_assert_eq(st.sessions_live, 1);
    cr_assert_eq(st.pending, 2);
    cr_assert_eq(railwire_server_sessions(srv), 1);
    stop(); /* io timeout is 60 s: destroy must not wait for it */
    cr_assert_geq(read_to_eof(silent, 5000), 0, "the silent client's connection was not closed");
    cr_assert_geq(read_to_eof(half, 5000), 0);
    close(silent);
    close(half);
    railwire_railset_close(rs);
}

Test(server, clients_over_the_cap_are_rejected_and_later_ones_served)
{
    start(1, 2000);
    railwire_railset *a, *b;
    cr_assert_eq(good_client(&a), 0);
    cr_assert_eq(good_client(&b), RAILWIRE_E_PEER_REJECTED);
    railwire_railset_close(a);
    int64_t end = rw_now_ms() + 5000;
    while (railwire_server_sessions(srv) > 0 && rw_now_ms() < end)
        usleep(1000);
    cr_assert_eq(good_client(&b), 0);
    railwire_railset_close(b);
    stop();
}

Test(server, a_client_dribbling_its_ids_is_cut_off_without_an_ack)
{
    start(8, 300);
    int fd = raw_connect();
    uint8_t one = 1;
    cr_assert_eq(rw_sock_send_all(fd, &one, 1, 1000), 0);
    uint8_t params[64];
    size_t got = 0;
    while (got < 37) {
        ssize_t n = rw_sock_recv(fd, params + got, sizeof(params) - got, 2000);
        cr_assert_gt(n, 0);
        got += (size_t)n;
    }
    cr_assert_eq(params[0], 1);
    /* 1 + 24 bytes of ids, one every 100 ms: slower than the 300 ms step bound. */
    uint8_t ids[25] = {1};
    for (int i = 0; i < 25; i++) {
        if (rw_sock_send_all(fd, &ids[i], 1, 1000) < 0)
            break;
        usleep(100 * 1000);
    }
    cr_assert_eq(read_to_eof(fd, 5000), 0, "the server acked or kept a dribbling client");
    close(fd);
    stop();
}

Test(server, a_host_name_as_listen_address_serves_rails_too)
{
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "localhost";
    o.arena = (railwire_region){arena, sizeof(arena)};
    cr_assert_eq(railwire_server_create(&o, &srv), 0);
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
    railwire_railset_opts c;
    railwire_railset_opts_init(&c);
    c.dialect = RAILWIRE_DIALECT_RW;
    c.transport = RAILWIRE_TRANSPORT_TCP;
    c.n_rails = 2;
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("localhost", port, &c, &rs), 0);
    uint8_t buf[8192];
    memset(buf, 0x3d, sizeof(buf));
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, sizeof(buf), &mr), 0);
    cr_assert_eq(railwire_write(rs, mr, buf, sizeof(buf), 0, 64, 20000), 0);
    cr_assert_eq(memcmp(arena + 64, buf, sizeof(buf)), 0);
    railwire_railset_close(rs);
    stop();
}
