/* SPDX-License-Identifier: MIT */
/* What a tcp server domain has served: requests and payload bytes, counted
 * by the serving code with relaxed atomics (no lock, no ordering: readers
 * only want a recent total) and read through ops->domain_served. */
#ifndef RW_TCP_SERVED_H
#define RW_TCP_SERVED_H

#include <stdatomic.h>
#include <stdint.h>

struct rw_domain;
struct rw_served;

struct rw_tcp_served {
    atomic_uint_least64_t reads, writes;           /* requests answered with OK */
    atomic_uint_least64_t bytes_read, bytes_written;
    atomic_uint_least64_t refused;                 /* requests refused (access) */
    atomic_uint_least64_t bytes_by_ref;            /* READ payload bytes spliced, not copied
                                                      (tcp_serve_splice.c) */
};

/* Counts one request answered on a domain: op is RW_TCP_OP_READ or
 * RW_TCP_OP_WRITE, len its payload, ok 0 when the access was refused (its
 * bytes are then not counted).  Called just before the answer is sent, so
 * a client that has seen its completion also sees it counted.
 * Thread-safe, never blocks. */
void rw_tcp_served_count(struct rw_tcp_served *s, unsigned op, uint32_t len, int ok);

/* ops->domain_served of the tcp transport: fills *out from a server
 * domain's counters (zeros for a client domain).  Returns 0. */
int rw_tcp_domain_served(struct rw_domain *dom, struct rw_served *out);

#endif
