/* SPDX-License-Identifier: MIT */
/* Monotonic time helpers used for every timeout. */
#ifndef RW_COMMON_TIME_H
#define RW_COMMON_TIME_H

#include <stdint.h>
#include <time.h>

/* Returns CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t rw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Returns CLOCK_MONOTONIC in milliseconds. */
static inline int64_t rw_now_ms(void)
{
    return (int64_t)(rw_now_ns() / 1000000ull);
}

/* Milliseconds left until `deadline_ms` (never negative). */
static inline int rw_ms_left(int64_t deadline_ms)
{
    int64_t left = deadline_ms - rw_now_ms();
    if (left < 0)
        return 0;
    if (left > 0x7fffffff)
        return 0x7fffffff;
    return (int)left;
}

/* Returns the CLOCK_MONOTONIC time `ms` milliseconds from now (ms >= 0), for
 * pthread_cond_timedwait on a condition variable set to that clock. */
static inline struct timespec rw_monotonic_in_ms(int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#endif
