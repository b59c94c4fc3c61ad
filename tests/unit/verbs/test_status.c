/* SPDX-License-Identifier: MIT */
/* Completion statuses and errno conventions become RAILWIRE_E_* codes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <railwire/error.h>

#include "verbs/status.h"

Test(status, every_wc_status_maps_to_a_code)
{
    cr_assert_eq(rw_wc_status_code(IBV_WC_SUCCESS), 0);
    cr_assert_eq(rw_wc_status_code(IBV_WC_WR_FLUSH_ERR), RAILWIRE_E_RAIL_DOWN);
    cr_assert_eq(rw_wc_status_code(IBV_WC_REM_ACCESS_ERR), RAILWIRE_E_REMOTE_ACCESS);
    /* Only REM_ACCESS is a refusal that leaves the transfer failed; an
     * invalid-request NAK is a rail failure the railset re-issues. */
    cr_assert_eq(rw_wc_status_code(IBV_WC_REM_INV_REQ_ERR), RAILWIRE_E_IO);
    cr_assert_eq(rw_wc_status_code(IBV_WC_RETRY_EXC_ERR), RAILWIRE_E_RETRY_EXCEEDED);
    cr_assert_eq(rw_wc_status_code(IBV_WC_RNR_RETRY_EXC_ERR), RAILWIRE_E_RETRY_EXCEEDED);
    cr_assert_eq(rw_wc_status_code(IBV_WC_REM_OP_ERR), RAILWIRE_E_IO);
    cr_assert_eq(rw_wc_status_code(IBV_WC_LOC_PROT_ERR), RAILWIRE_E_VERBS);
    cr_assert_eq(rw_wc_status_code((enum ibv_wc_status)9999), RAILWIRE_E_VERBS);
    /* No status maps to success or to an unknown code. */
    for (int st = IBV_WC_SUCCESS; st <= IBV_WC_TM_RNDV_INCOMPLETE; st++) {
        int c = rw_wc_status_code((enum ibv_wc_status)st);
        cr_assert((st == IBV_WC_SUCCESS) == (c == 0), "status %d -> %d", st, c);
        if (c)
            cr_assert_str_neq(railwire_error_class(c), "unknown");
        cr_assert(strlen(rw_wc_status_hint((enum ibv_wc_status)st)) > 0);
    }
}

Test(status, retry_exceeded_hint_names_mtu_and_gid)
{
    const char *h = rw_wc_status_hint(IBV_WC_RETRY_EXC_ERR);
    cr_assert(strstr(h, "MTU") && strstr(h, "GID"), "hint: %s", h);
}

Test(status, errno_conventions_normalised)
{
    cr_assert_eq(rw_verbs_errno(0, 0), 0);
    cr_assert_eq(rw_verbs_errno(ENOMEM, 0), ENOMEM);   /* ibv_post_send */
    cr_assert_eq(rw_verbs_errno(-EINVAL, 0), EINVAL);  /* ibv_poll_cq */
    cr_assert_eq(rw_verbs_errno(-1, EAGAIN), EAGAIN);  /* -1 + errno */
}
