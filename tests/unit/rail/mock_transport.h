/* SPDX-License-Identifier: MIT */
/* A mock transport for the rail layer's unit tests: an in-process "remote"
 * made of the regions registered with remote access, and endpoints whose
 * work requests run (memcpy) only when polled, so tests decide exactly when
 * operations finish.  Faults: kill an ep now, fail it after k completions,
 * black-hole it (operations never finish), make ep_post fail, shrink its
 * queue.  Single-threaded; not for production. */
#ifndef RW_TEST_MOCK_TRANSPORT_H
#define RW_TEST_MOCK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

extern const struct rw_transport_ops rw_mock_ops;

/* Settings the next domain_open uses (then reset to defaults: gbps 10,
 * max_qp_wr 1024, max_msg 0 = unlimited). */
void mock_next_domain(double gbps, unsigned max_qp_wr, uint32_t max_msg);

/* The default_depth of every domain opened from now on (0, the start: none,
 * the rail layer's own default), as tcp's 64.  mock_reset keeps it (the
 * world's init resets): set it back to 0 after the init that needed it. */
void mock_set_default_depth(unsigned depth);
/* ep_post of every ep together accepts up to n outstanding ops, as tcp's
 * staging chunks bound what all rails move at once (0: no bound; mock_reset
 * sets 0). */
void mock_set_shared_slots(unsigned n);
/* Forgets every registration and counter (call at the start of a test). */
void mock_reset(void);

/* Faults and knobs of one ep. */
void mock_ep_fail_now(struct rw_ep *ep);                   /* dies: outstanding ops fail RAIL_DOWN */
void mock_ep_fail_after(struct rw_ep *ep, unsigned k);     /* dies after k more successful ops */
void mock_ep_blackhole(struct rw_ep *ep, int on);          /* accepted ops never finish */
void mock_ep_post_fails(struct rw_ep *ep, int on);         /* ep_post returns RAIL_DOWN */
void mock_ep_set_depth(struct rw_ep *ep, unsigned depth);  /* ep_post accepts up to depth outstanding */
void mock_ep_set_per_poll(struct rw_ep *ep, unsigned k);   /* ops finished per ep_poll (0 = all) */
void mock_ep_use_wait_fd(struct rw_ep *ep, int on);        /* 0: ep_wait_fd returns -1 */
/* Each op accepted from now on finishes only us microseconds after its
 * post, and the ep's wait fd (a timerfd then) fires when the oldest is
 * due: a rail whose answers take that long.  Call it with nothing
 * outstanding; 0 or -1 (outstanding ops, or no timerfd). */
int mock_ep_set_delay_us(struct rw_ep *ep, unsigned us);

/* Counters of one ep. */
unsigned mock_ep_completed(const struct rw_ep *ep);        /* ops finished with success */
uint64_t mock_ep_bytes(const struct rw_ep *ep);            /* bytes moved */
unsigned mock_ep_max_outstanding(const struct rw_ep *ep);  /* high-water mark of outstanding ops */
unsigned mock_ep_killed(const struct rw_ep *ep);           /* ep_kill calls */
unsigned mock_ep_outstanding(const struct rw_ep *ep);

/* Domains + registrations + eps not yet released. */
unsigned mock_live_objects(void);
/* ep_kill calls on any ep since mock_reset. */
unsigned mock_kills_total(void);

/* Number of work requests that broke the contract (local range outside the
 * given mr, mr of another domain, length 0 or above max_msg). */
unsigned mock_violations(void);
/* Every WR ever accepted, in order: its remote address and length are
 * recorded for inspection (up to 4096). */
size_t mock_log(const struct rw_wr **out);

#endif
