/* SPDX-License-Identifier: MIT */
/* The client's send rules (src/tcp/tcp_cli_io.c, rw_tcp_cli_send_locked):
 * a post is sent inline by the caller, handed to a running loop, queued
 * for a sleeping loop's next wake-up when answers are due (deferred), or
 * left to the loop when it is large.  Whatever the path, every request
 * posted reaches the server, whole and once, without any answer to wake
 * the loop: a fake server that reads and never answers counts the bytes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "common/time.h"
#include "tcp/tcp_cli_io.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_proto.h"
#include "tcp_fixture.h"

#define KIB 1024u
#define BUF (4096u * KIB)

/* A silent rail and the bytes its server must have read. */
struct quiet {
    struct t_silent s;
    unsigned long long expect;
};

static void quiet_open(struct quiet *q, unsigned depth)
{
    struct rw_ep_cfg cfg = {.depth = depth};

    t_silent_open(&q->s, &cfg, BUF);
    q->expect = 0;
}

/* Posts n transfers of len bytes, one post call each. */
static void post(struct quiet *q, int write, unsigned n, size_t len)
{
    for (unsigned i = 0; i < n; i++) {
        struct rw_wr wr = {.wr_id = i, .opcode = write ? RW_OP_WRITE : RW_OP_READ,
                           .local = q->s.buf, .mr = q->s.lmr, .length = len,
                           .remote_addr = 4096 * (uint64_t)i, .rkey = 1};
        cr_assert_eq(rw_tcp_ops.ep_post(q->s.cep, &wr, 1), 1);
        q->expect += RW_TCP_REQ_SIZE + (write ? len : 0);
    }
}

/* Waits (bounded) until the server read exactly what was posted; returns
 * what it read. */
static unsigned long long wait_sent(struct quiet *q, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    while (atomic_load(&q->s.f.drained) < q->expect && rw_ms_left(deadline) > 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&q->s.f.drained);
}

/* The loop sleeps (nothing to do for longer than its spin). */
static void let_the_loop_sleep(void)
{
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
}

Test(tcp_send, a_small_post_reaches_the_server_from_an_idle_rail)
{
    struct quiet q;

    quiet_open(&q, 32);
    post(&q, 0, 1, 4 * KIB);
    cr_assert_eq(wait_sent(&q, 10000), q.expect);
    t_silent_close(&q.s);
}

Test(tcp_send, a_post_deferred_behind_due_answers_is_sent_though_none_comes)
{
    struct quiet q;

    quiet_open(&q, 32);
    post(&q, 0, 8, 4 * KIB); /* 8 answers due: the rule's threshold */
    cr_assert_eq(wait_sent(&q, 10000), q.expect);
    let_the_loop_sleep();
    /* Deferred to the loop's next wake-up, and nothing else is posted (a
     * later post would kick the loop, which sends both). */
    post(&q, 0, 1, 4 * KIB);
    cr_assert_eq(wait_sent(&q, 10000), q.expect, "the loop's timer sends what was deferred");
    t_silent_close(&q.s);
}

Test(tcp_send, a_post_deferred_behind_few_large_answers_is_sent_though_none_comes)
{
    struct quiet q;

    quiet_open(&q, 32);
    post(&q, 0, 2, 64 * KIB); /* 2 answers, 128 KiB due: the byte threshold */
    cr_assert_eq(wait_sent(&q, 10000), q.expect);
    let_the_loop_sleep();
    post(&q, 0, 1, 4 * KIB);
    cr_assert_eq(wait_sent(&q, 10000), q.expect, "the loop's timer sends what was deferred");
    t_silent_close(&q.s);
}

Test(tcp_send, a_large_write_is_sent_whole_by_the_loop)
{
    struct quiet q;

    quiet_open(&q, 32);
    post(&q, 1, 1, RW_TCP_INLINE_MAX + 1);
    post(&q, 1, 2, 1024 * KIB);
    cr_assert_eq(wait_sent(&q, 20000), q.expect);
    t_silent_close(&q.s);
}

Test(tcp_send, every_path_mixed_sends_each_request_once)
{
    struct quiet q;
    static const size_t sizes[] = {16, 4 * KIB, 16 * KIB, 64 * KIB, 1024 * KIB};
    unsigned seed = 7;

    quiet_open(&q, 64);
    /* Bursts of 1-4 posts of mixed sizes and kinds, with pauses that let
     * the loop fall asleep between some of them, up to the ep's depth. */
    for (unsigned posted = 0; posted < 60;) {
        unsigned burst = 1 + rand_r(&seed) % 4;
        for (unsigned k = 0; k < burst && posted < 60; k++, posted++)
            post(&q, rand_r(&seed) % 2, 1, sizes[rand_r(&seed) % 5]);
        if (rand_r(&seed) % 4 == 0)
            let_the_loop_sleep();
    }
    cr_assert_eq(wait_sent(&q, 30000), q.expect);
    t_silent_close(&q.s);
}
