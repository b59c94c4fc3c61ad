/* SPDX-License-Identifier: MIT */
/* Rate-limited log lines: the burst per window, the count of suppressed
 * lines carried into the next emitted one, one limiter per call site,
 * disabled levels not counted, and exact counts under threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

#define MS 1000000ull
#define WINDOW ((uint64_t)RW_LOG_RL_INTERVAL_MS * MS)

static char lines[64][RW_LOG_MSG_MAX + 64];
static int n_lines;

static void capture(enum railwire_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (n_lines < 64)
        snprintf(lines[n_lines], sizeof(lines[0]), "%s", msg);
    n_lines++;
}

static void setup(void)
{
    n_lines = 0;
    railwire_log_set_level(RAILWIRE_LOG_WARN);
    railwire_log_set_sink(capture, NULL);
}

static void teardown(void)
{
    railwire_log_set_sink(NULL, NULL);
}

TestSuite(log_ratelimit, .init = setup, .fini = teardown);

Test(log_ratelimit, burst_then_count_then_new_window)
{
    struct rw_log_rl rl = RW_LOG_RL_INIT;
    unsigned long sup = 99;
    uint64_t t = 1000 * MS;

    for (int i = 0; i < RW_LOG_RL_BURST; i++) {
        cr_assert_eq(rw_log_rl_admit(&rl, t + (uint64_t)i * MS, &sup), 1, "line %d", i);
        cr_assert_eq(sup, 0);
    }
    for (int i = 0; i < 7; i++)
        cr_assert_eq(rw_log_rl_admit(&rl, t + WINDOW - 1, &sup), 0, "line %d let through", i);
    /* The window is measured from its first line. */
    cr_assert_eq(rw_log_rl_admit(&rl, t + WINDOW, &sup), 1);
    cr_assert_eq(sup, 7);
    cr_assert_eq(rw_log_rl_admit(&rl, t + WINDOW + 1, &sup), 1);
    cr_assert_eq(sup, 0, "the count is reported once");
}

Test(log_ratelimit, clock_going_back_stays_in_window)
{
    struct rw_log_rl rl = RW_LOG_RL_INIT;
    unsigned long sup;
    uint64_t t = 50 * WINDOW;

    for (int i = 0; i < RW_LOG_RL_BURST; i++)
        cr_assert_eq(rw_log_rl_admit(&rl, t, &sup), 1);
    cr_assert_eq(rw_log_rl_admit(&rl, t - 10 * WINDOW, &sup), 0);
    cr_assert_eq(rw_log_rl_admit(&rl, t + WINDOW, &sup), 1);
    cr_assert_eq(sup, 1);
}

Test(log_ratelimit, suffix_on_the_next_emitted_line)
{
    struct rw_log_rl rl = RW_LOG_RL_INIT;

    for (int i = 0; i < RW_LOG_RL_BURST + 3; i++)
        rw_log_rl_at(&rl, 0, RAILWIRE_LOG_WARN, "bad hello from %s", "10.0.0.9:1");
    cr_assert_eq(n_lines, RW_LOG_RL_BURST);
    cr_assert_str_eq(lines[0], "bad hello from 10.0.0.9:1");
    rw_log_rl_at(&rl, WINDOW, RAILWIRE_LOG_WARN, "bad hello from %s", "10.0.0.9:2");
    cr_assert_eq(n_lines, RW_LOG_RL_BURST + 1);
    cr_assert_str_eq(lines[RW_LOG_RL_BURST], "bad hello from 10.0.0.9:2 (3 similar lines suppressed)");
}

Test(log_ratelimit, suffix_survives_a_message_that_is_cut)
{
    struct rw_log_rl rl = RW_LOG_RL_INIT;
    char big[2 * RW_LOG_MSG_MAX];

    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (int i = 0; i < RW_LOG_RL_BURST + 1; i++)
        rw_log_rl_at(&rl, 0, RAILWIRE_LOG_WARN, "%s", big);
    rw_log_rl_at(&rl, WINDOW, RAILWIRE_LOG_WARN, "%s", big);
    cr_assert_eq(n_lines, RW_LOG_RL_BURST + 1);
    const char *last = lines[RW_LOG_RL_BURST];
    cr_assert_eq(strlen(last), RW_LOG_MSG_MAX - 1);
    const char *want = " (1 similar lines suppressed)";
    cr_assert_str_eq(last + strlen(last) - strlen(want), want);
}

static void site_a(void)
{
    rw_warn_rl("site a %d", 1);
}

static void site_b(void)
{
    rw_err_rl("site b");
}

static void site_debug(void)
{
    rw_debug_rl("site debug");
}

Test(log_ratelimit, one_limiter_per_call_site)
{
    for (int i = 0; i < 20; i++) {
        site_a();
        site_b();
    }
    cr_assert_eq(n_lines, 2 * RW_LOG_RL_BURST, "%d lines", n_lines);
    int a = 0, b = 0;
    for (int i = 0; i < n_lines; i++) {
        a += !strcmp(lines[i], "site a 1");
        b += !strcmp(lines[i], "site b");
    }
    cr_assert_eq(a, RW_LOG_RL_BURST);
    cr_assert_eq(b, RW_LOG_RL_BURST);
}

Test(log_ratelimit, disabled_levels_are_not_counted)
{
    for (int i = 0; i < 20; i++)
        site_debug(); /* level is warn: dropped before the limiter */
    cr_assert_eq(n_lines, 0);
    railwire_log_set_level(RAILWIRE_LOG_DEBUG);
    site_debug();
    cr_assert_eq(n_lines, 1);
    cr_assert_str_eq(lines[0], "site debug", "counted while disabled: %s", lines[0]);
}

#define THREADS 4
#define CALLS 2500
static struct rw_log_rl shared = RW_LOG_RL_INIT;
static atomic_ulong admitted_total;

static void *hammer(void *arg)
{
    (void)arg;
    unsigned long sup;
    for (int i = 0; i < CALLS; i++)
        if (rw_log_rl_admit(&shared, 7 * MS, &sup))
            atomic_fetch_add(&admitted_total, 1);
    return NULL;
}

Test(log_ratelimit, exact_under_threads)
{
    pthread_t th[THREADS];
    unsigned long sup;

    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, hammer, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&admitted_total), RW_LOG_RL_BURST);
    cr_assert_eq(rw_log_rl_admit(&shared, 7 * MS + WINDOW, &sup), 1);
    cr_assert_eq(sup, (unsigned long)THREADS * CALLS - RW_LOG_RL_BURST);
}
