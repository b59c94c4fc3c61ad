/* SPDX-License-Identifier: MIT */
#include "common/cpus.h"

#include <sched.h>
#include <unistd.h>

unsigned rw_cpus_usable(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    return n < 1 ? 1 : (unsigned)n;
}
