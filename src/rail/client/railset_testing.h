/* SPDX-License-Identifier: MIT */
/* What tests and benches may see of a railset's internals: accessors, not
 * the private struct (railset_internal.h), so the railset can change its
 * layout without touching them.  Call them with no other thread inside the
 * railset, or from a diagnostic dump (racy reads, for printing only).  The
 * rail indexes are < railwire_railset_rail_count(). */
#ifndef RW_RAIL_CLIENT_RAILSET_TESTING_H
#define RW_RAIL_CLIENT_RAILSET_TESTING_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <stdint.h>
#include <stdio.h>

#include <railwire/railset.h>

#include "rail/client/near_place.h" /* rw_near_plan_make, rw_near_place_names */
#include "rail/client/railset_local.h"

/* Rail i's public state (derived from the rail state machine). */
enum railwire_rail_state rw_test_rail_state(const railwire_railset *rs, unsigned i);
/* Rail i's counters, as railwire_railset_stats gives them. */
railwire_rail_stats rw_test_rail_stats(const railwire_railset *rs, unsigned i);
/* Rail i's ep and domain (the railset's; not to be destroyed). */
struct rw_ep *rw_test_rail_ep(const railwire_railset *rs, unsigned i);
struct rw_domain *rw_test_rail_dom(const railwire_railset *rs, unsigned i);
/* Kills rail i's ep behind the railset's back (as a reset of the link
 * would), under the railset's lock (any thread may call it); the railset
 * finds out through its detectors. */
void rw_test_kill_rail(railwire_railset *rs, unsigned i);
/* Reports rail i failed with `reason`, as a detector would, and runs the
 * dispatch (failover and healing react at once). */
void rw_test_fail_rail(railwire_railset *rs, unsigned i, int reason);
/* A registration's rw_mr on rail i's domain (NULL where none). */
struct rw_mr *rw_test_mr_rail(const railwire_mr *mr, unsigned i);
/* Slices outstanding on rail i, and their bytes. */
size_t rw_test_rail_outstanding(const railwire_railset *rs, unsigned i);
uint64_t rw_test_rail_inflight_bytes(const railwire_railset *rs, unsigned i);
/* How many of rail i's next completions a sleeping poller would let pass
 * (rw_rail_wake_after in poll_wait.c). */
unsigned rw_test_rail_wake_after(const railwire_railset *rs, unsigned i);
/* Slices waiting for a rail. */
size_t rw_test_pending(const railwire_railset *rs);
/* Rails in service; rails with outstanding slices. */
unsigned rw_test_live(const railwire_railset *rs);
unsigned rw_test_busy(const railwire_railset *rs);
/* Whether a thread sleeps in poll() for the railset (the poller), taking
 * the lock: the one accessor another thread may call meanwhile. */
int rw_test_poller_sleeps(railwire_railset *rs);
/* Effective slice size; the poller's spin window. */
size_t rw_test_slice_size(const railwire_railset *rs);
uint64_t rw_test_busy_poll_ns(const railwire_railset *rs);
/* Bumped each time a rail is put in service (connect or heal). */
uint64_t rw_test_rails_gen(const railwire_railset *rs);
/* 1 / the fastest live rail's gbps (the rail choice's scale). */
double rw_test_min_inv_gbps(const railwire_railset *rs);
/* The control connection of the railset's first session (-1: none). */
int rw_test_session0_fd(const railwire_railset *rs);
/* Prints the railset's scheduling state to f (a hang's diagnostic), under
 * its lock; rail_cb (optional) adds each rail's transport detail. */
void rw_test_dump(railwire_railset *rs, FILE *f, void (*rail_cb)(struct rw_ep *ep, FILE *f));

/* Healing hooks (heal.c).  Sets the control port later sessions dial (only
 * before the first attempt starts); returns 1 while an attempt is in
 * progress. */
void rw_heal_test_set_port(railwire_railset *rs, const char *port);
int rw_heal_test_busy(const railwire_railset *rs);
/* Healers freed so far in this process: a worker that outlived its
 * railset's close frees its healer (and releases the TLS credentials it
 * holds) last. */
uint64_t rw_heal_test_healers_freed(void);

#endif
