/* SPDX-License-Identifier: MIT */
/* How many CPUs this process may run on, the count railwire sizes its
 * client thread pools by (the tcp client's event loops, the verbs poster
 * threads) and the count the same-host congestion-control rule compares a
 * railset's rails with. */
#ifndef RW_COMMON_CPUS_H
#define RW_COMMON_CPUS_H

/* Returns the online CPUs, or fewer when the process's affinity mask (a
 * cpuset, taskset, a container's CPU list) allows fewer; at least 1. */
unsigned rw_cpus_usable(void);

#endif
