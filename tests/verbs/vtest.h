/* SPDX-License-Identifier: MIT */
/* Helpers of the verbs suites: which devices to use, rails at the transport
 * level, waiting for completions with a timeout.
 *
 * Devices come from the environment, so the soft-RoCE VM (ci/verbs-vm.sh)
 * and real NICs use the same binaries:
 *   RAILWIRE_TEST_DEVS_A   "dev[:port],..." of the client side ("host A")
 *   RAILWIRE_TEST_DEVS_B   "dev[:port],..." of the server side ("host B")
 *   RAILWIRE_TEST_GID_INDEX  forced GID index (unset = railwire's choice)
 * Unset A/B: the first active port serves both sides (loopback on one
 * device).  Without any RDMA device every test skips. */
#ifndef RW_TESTS_VERBS_VTEST_H
#define RW_TESTS_VERBS_VTEST_H

#include <stddef.h>

#include "transport/transport.h"

#define VT_MAX_DEVS 8

/* Skips the calling test (cr_skip) when no active RDMA port exists. */
void vt_require_devices(void);

/* Fills out with side 'A' or 'B' devices; returns the count (>= 1 once
 * vt_require_devices passed). */
size_t vt_devs(char side, char out[][64], size_t max);

/* The forced GID index from RAILWIRE_TEST_GID_INDEX, or -1. */
int vt_gid_index(void);

/* Opens a domain on side's device i (mod count). */
int vt_open(char side, unsigned i, enum rw_role role, struct rw_domain **out);

/* One rail: client domain+ep on A's device i, server domain+ep on B's. */
struct vt_rail {
    struct rw_domain *cd, *sd;
    struct rw_ep *cep, *sep;
};

/* Brings rail i up (both eps connected).  Returns 0 or the first error. */
int vt_rail_up(unsigned i, unsigned depth, struct vt_rail *r);
/* Destroys what vt_rail_up created (any part may be NULL). */
void vt_rail_down(struct vt_rail *r);

/* Polls ep until `want` completions arrived (stored in wcs) or timeout_ms
 * passed.  Returns the number collected. */
int vt_collect(struct rw_ep *ep, struct rw_wc *wcs, int want, int timeout_ms);

/* Fills buf with a pattern that depends on seed and position. */
void vt_pattern(unsigned char *buf, size_t len, unsigned seed);

#endif
