/* SPDX-License-Identifier: MIT */
/* The event loops' shared core (src/tcp/tcp_evloop.c): the table of
 * watched members, the ready FIFO (order, no duplicates, a member removed
 * while a taken list is walked), and the eventfd that wakes a loop. */
#include <criterion/criterion.h>
#include <poll.h>

#include "common/list.h"
#include "tcp/tcp_evloop.h"

struct item {
    int id;
    struct rw_evloop_member member;
};

static struct item *item_of(struct rw_evloop_member *m)
{
    return rw_list_entry(m, struct item, member);
}

static void items_init(struct item *it, int n)
{
    for (int i = 0; i < n; i++) {
        it[i].id = i;
        rw_evloop_member_init(&it[i].member);
    }
}

Test(tcp_evloop, the_table_keeps_every_member_once_across_removals)
{
    struct rw_evloop_set s = {0};
    struct item it[40];
    items_init(it, 40);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(rw_evloop_set_add(&s, &it[i].member, 4), 0, "add %d", i);
    cr_assert_eq(s.n, 40);
    for (int i = 0; i < 40; i += 3)
        rw_evloop_set_remove(&s, &it[i].member);
    rw_evloop_set_remove(&s, &it[0].member); /* twice: no effect */
    int seen[40] = {0};
    for (unsigned k = 0; k < s.n; k++) {
        struct item *x = item_of(s.tab[k]);
        cr_assert_eq(x->member.idx, k, "item %d thinks it is at %u, not %u", x->id, x->member.idx, k);
        seen[x->id]++;
    }
    for (int i = 0; i < 40; i++)
        cr_assert_eq(seen[i], i % 3 ? 1 : 0, "item %d seen %d times", i, seen[i]);
    for (int i = 0; i < 40; i += 3)
        cr_assert_eq(it[i].member.idx, (unsigned)-1);
    rw_evloop_set_free(&s);
}

Test(tcp_evloop, the_ready_fifo_runs_members_once_in_order)
{
    struct rw_evloop_set s = {0};
    struct item it[5];
    items_init(it, 5);
    int order[] = {3, 1, 4, 0, 2};
    for (int i = 0; i < 5; i++)
        rw_evloop_ready_push(&s, &it[order[i]].member);
    rw_evloop_ready_push(&s, &it[1].member); /* already queued: stays where it is */
    int k = 0;
    for (struct rw_evloop_member *m = rw_evloop_ready_take(&s), *next; m; m = next) {
        next = rw_evloop_ready_next(m);
        cr_assert_lt(k, 5);
        cr_assert_eq(item_of(m)->id, order[k], "position %d", k);
        cr_assert_eq(m->on_ready, 0);
        k++;
        /* queued again while the taken list is walked: the next take */
        if (item_of(m)->id == 4)
            rw_evloop_ready_push(&s, m);
    }
    cr_assert_eq(k, 5);
    struct rw_evloop_member *m = rw_evloop_ready_take(&s);
    cr_assert_not_null(m);
    cr_assert_eq(item_of(m)->id, 4);
    cr_assert_null(rw_evloop_ready_next(m));
    cr_assert_null(rw_evloop_ready_take(&s));
}

Test(tcp_evloop, a_member_removed_from_the_fifo_is_not_run)
{
    struct rw_evloop_set s = {0};
    struct item it[3];
    items_init(it, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(rw_evloop_set_add(&s, &it[i].member, 2), 0);
        rw_evloop_ready_push(&s, &it[i].member);
    }
    rw_evloop_set_remove(&s, &it[2].member); /* the tail */
    rw_evloop_set_remove(&s, &it[0].member); /* the head */
    rw_evloop_ready_push(&s, &it[0].member); /* queued again behind 1 */
    int ids[3], k = 0;
    for (struct rw_evloop_member *m = rw_evloop_ready_take(&s), *next; m; m = next) {
        next = rw_evloop_ready_next(m);
        cr_assert_lt(k, 3);
        ids[k++] = item_of(m)->id;
    }
    cr_assert_eq(k, 2);
    cr_assert_eq(ids[0], 1);
    cr_assert_eq(ids[1], 0);
    rw_evloop_set_free(&s);
}

Test(tcp_evloop, a_wake_makes_the_command_eventfd_readable_until_drained)
{
    struct rw_evloop_fds f;
    struct epoll_event ev[4];
    cr_assert_eq(rw_evloop_fds_open(&f, "test loop", 7), 0);
    cr_assert_eq(rw_evloop_wait(&f, ev, 4, 0), 0, "nothing before a wake");
    rw_evloop_wake(&f);
    rw_evloop_wake(&f);
    cr_assert_eq(rw_evloop_wait(&f, ev, 4, 1000), 1);
    cr_assert_null(ev[0].data.ptr, "the eventfd is the event without a member");
    rw_evloop_drain(&f);
    struct pollfd p = {.fd = f.evfd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 0), 0, "drained: both wakes consumed");
    rw_evloop_fds_close(&f);
    cr_assert_eq(f.epfd, -1);
    cr_assert_eq(f.evfd, -1);
    rw_evloop_fds_close(&f); /* closing twice is harmless */
}
