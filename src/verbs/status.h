/* SPDX-License-Identifier: MIT */
/* The one place where libibverbs' return conventions become RAILWIRE_E_*
 * codes: ibv_post_* and ibv_modify_qp return a positive errno, ibv_poll_cq a
 * negative value, ibv_reg_mr & co NULL with errno set.  Nothing above
 * src/verbs/ ever sees an errno from libibverbs. */
#ifndef RW_VERBS_STATUS_H
#define RW_VERBS_STATUS_H

#include <infiniband/verbs.h>

/* Converts a libibverbs return value `rc` of any convention (positive errno,
 * negative errno, or -1 with `saved_errno`) to a positive errno; 0 stays 0. */
int rw_verbs_errno(int rc, int saved_errno);

/* Maps a completion status to a RAILWIRE_E_* code (0 for IBV_WC_SUCCESS):
 * flush -> RAILWIRE_E_RAIL_DOWN, remote access -> RAILWIRE_E_REMOTE_ACCESS,
 * (RNR) retry exceeded -> RAILWIRE_E_RETRY_EXCEEDED, invalid request, remote
 * operation/abort, bad response -> RAILWIRE_E_IO (a rail failure), local
 * errors and anything unknown -> RAILWIRE_E_VERBS. */
int rw_wc_status_code(enum ibv_wc_status st);

/* One line saying what to check for a completion status (static string). */
const char *rw_wc_status_hint(enum ibv_wc_status st);

#endif
