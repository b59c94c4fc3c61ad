/* SPDX-License-Identifier: MIT */
/* A bound on concurrent TLS handshakes.  The server enters the gate
 * before it starts a connection's handshake and leaves it when the
 * handshake ends (done, failed or timed out), so a flood of ClientHellos
 * holds at most `max` handshakes' worth of CPU and memory at a time; the
 * rest wait in admission (with its deadlines) or are refused. */
#ifndef RW_TLS_GATE_H
#define RW_TLS_GATE_H

#include <pthread.h>
#include <stdint.h>

struct rw_tls_gate {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    unsigned max, busy;
    uint64_t entered, full; /* entries, and refusals/waits that found it full */
};

/* Default bound: twice the CPUs this process may run on (rw_cpus_usable),
 * at least 4. */
unsigned rw_tls_gate_default(void);

/* max 0 = rw_tls_gate_default().  Returns 0 or RAILWIRE_E_SYSTEM. */
int rw_tls_gate_init(struct rw_tls_gate *g, unsigned max);

/* Non-blocking: returns 1 and holds a slot, or 0 (full; counted). */
int rw_tls_gate_try(struct rw_tls_gate *g);

/* Waits for a slot until deadline_ms (rw_now_ms() clock).  Returns 0
 * (holds a slot) or RAILWIRE_E_TIMEOUT. */
int rw_tls_gate_enter(struct rw_tls_gate *g, int64_t deadline_ms);

/* Releases a slot held by try/enter. */
void rw_tls_gate_leave(struct rw_tls_gate *g);

/* Slots held now. */
unsigned rw_tls_gate_busy(struct rw_tls_gate *g);

void rw_tls_gate_destroy(struct rw_tls_gate *g);

#endif
