/* SPDX-License-Identifier: MIT */
/* The tcp server never drops WRITE payload it has offered a window for.
 *
 * Found by issue 20's rail-count sweep: 1 MiB WRITEs at depth 8 on 64 rails
 * ran at a third of the 8-rail rate, with a p99 of 210 ms.  The server
 * shrank each connection's SO_RCVBUF to its (small, 64-way split) queue cap
 * on its first answer, after the kernel had already offered the client the
 * listener's larger window; the kernel then pruned the receive queue and
 * dropped data in flight (TcpExtRcvPruned, TcpExtTCPRcvQDrop), and every
 * rail waited out a 200 ms retransmission timeout.
 *
 * The test runs in a network namespace of its own (unnamed: it dies with
 * the test process), so the kernel's TcpExt counters it reads are this
 * test's alone: it asserts that none of the server's receive queues was
 * pruned and no segment was dropped for want of receive memory, and that
 * every byte arrived.  Skipped where a namespace cannot be made (not
 * root). */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#define MIB (1024u * 1024u)
#define RAILS 64
#define DEPTH 8
#define ROUNDS 6
#define ARENA ((size_t)DEPTH * MIB)

/* Returns the value of TcpExt counter `name` in this namespace, or -1. */
static long long tcpext(const char *name)
{
    FILE *f = fopen("/proc/net/netstat", "r");
    char names[8192], values[8192];
    long long v = -1;

    if (!f)
        return -1;
    while (fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
        if (strncmp(names, "TcpExt:", 7) != 0)
            continue;
        char *sn, *sv;
        char *n = strtok_r(names, " \n", &sn), *x = strtok_r(values, " \n", &sv);
        while (n && x) {
            if (strcmp(n, name) == 0)
                v = atoll(x);
            n = strtok_r(NULL, " \n", &sn);
            x = strtok_r(NULL, " \n", &sv);
        }
    }
    fclose(f);
    return v;
}

static railwire_server *start(uint8_t *arena, char *port, size_t port_len)
{
    railwire_server_opts o;
    railwire_server *srv = NULL;

    railwire_server_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.arena = (railwire_region){arena, ARENA};
    cr_assert_eq(railwire_server_create(&o, &srv), 0);
    snprintf(port, port_len, "%u", railwire_server_port(srv));
    return srv;
}

static railwire_railset *connect_rails(const char *port)
{
    railwire_railset_opts o;
    railwire_railset *rs = NULL;

    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = RAILS;
    o.io_timeout_ms = 20000;
    o.op_timeout_ms = 20000;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), 0);
    return rs;
}

/* DEPTH 1 MiB WRITEs in flight at once, ROUNDS times, each round a
 * different pattern; waits for every completion and checks its status. */
static void write_rounds(railwire_railset *rs, railwire_mr *mr, uint8_t *src, const uint8_t *arena)
{
    for (int round = 0; round < ROUNDS; round++) {
        railwire_op ops[DEPTH];
        railwire_handle h[DEPTH];

        for (size_t i = 0; i < ARENA; i++)
            src[i] = (uint8_t)(i * 7u + (i >> 12) + (unsigned)round * 31u);
        for (int i = 0; i < DEPTH; i++)
            ops[i] = (railwire_op){.opcode = RAILWIRE_OP_WRITE, .mr = mr,
                                   .local = src + (size_t)i * MIB, .length = MIB,
                                   .remote_offset = (uint64_t)i * MIB, .user_data = (uint64_t)i};
        cr_assert_eq(railwire_submit_batch(rs, ops, DEPTH, h), DEPTH);
        for (int done = 0; done < DEPTH;) {
            railwire_completion c[DEPTH];
            int k = railwire_wait(rs, c, DEPTH, 30000);
            cr_assert_gt(k, 0, "round %d: a WRITE did not complete (%d)", round, k);
            for (int j = 0; j < k; j++)
                cr_assert_eq(c[j].status, 0, "round %d, WRITE %llu: status %d", round,
                             (unsigned long long)c[j].user_data, c[j].status);
            done += k;
        }
        cr_assert_eq(memcmp(arena, src, ARENA), 0, "round %d: the server's arena differs", round);
    }
}

Test(server_rcvbuf, writes_on_64_rails_are_never_dropped_by_the_servers_receive_queue,
     .timeout = 240)
{
    if (unshare(CLONE_NEWNET) != 0 || system("ip link set lo up") != 0)
        cr_skip_test("cannot create a network namespace here (needs root)");
    long long pruned0 = tcpext("RcvPruned"), qdrop0 = tcpext("TCPRcvQDrop");
    cr_assert_geq(pruned0, 0, "no TcpExt RcvPruned counter in /proc/net/netstat");
    cr_assert_geq(qdrop0, 0, "no TcpExt TCPRcvQDrop counter in /proc/net/netstat");

    uint8_t *arena = calloc(1, ARENA), *src = malloc(ARENA);
    cr_assert(arena && src);
    char port[16];
    railwire_server *srv = start(arena, port, sizeof(port));
    railwire_railset *rs = connect_rails(port);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, src, ARENA, &mr), 0);

    write_rounds(rs, mr, src, arena);

    long long pruned = tcpext("RcvPruned") - pruned0, qdrop = tcpext("TCPRcvQDrop") - qdrop0;
    railwire_mr_deregister(mr);
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    free(arena);
    free(src);
    cr_assert_eq(pruned, 0, "the kernel pruned %lld receive queues: a socket buffer was shrunk "
                 "under a window already offered", pruned);
    cr_assert_eq(qdrop, 0, "the kernel dropped %lld segments for want of receive memory", qdrop);
}
