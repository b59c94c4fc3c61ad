/* SPDX-License-Identifier: MIT */
#include "verbs/status.h"

#include <railwire/error.h>

int rw_verbs_errno(int rc, int saved_errno)
{
    if (rc == 0)
        return 0;
    if (rc == -1 && saved_errno > 0)
        return saved_errno;
    return rc > 0 ? rc : -rc;
}

int rw_wc_status_code(enum ibv_wc_status st)
{
    switch (st) {
    case IBV_WC_SUCCESS:
        return 0;
    case IBV_WC_WR_FLUSH_ERR:
        return RAILWIRE_E_RAIL_DOWN;
    case IBV_WC_REM_ACCESS_ERR:
        return RAILWIRE_E_REMOTE_ACCESS;
    case IBV_WC_REM_INV_REQ_ERR:
        /* railwire only sends well-formed READ/WRITEs inside registered
         * ranges (a bad key or range is REM_ACCESS), so an invalid-request
         * NAK is a protocol glitch on the rail (seen with rdma_rxe under
         * load): fail the rail, let the railset re-issue elsewhere. */
        return RAILWIRE_E_IO;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return RAILWIRE_E_RETRY_EXCEEDED;
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_REM_INV_RD_REQ_ERR:
    case IBV_WC_BAD_RESP_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
        return RAILWIRE_E_IO;
    default:
        return RAILWIRE_E_VERBS;
    }
}

const char *rw_wc_status_hint(enum ibv_wc_status st)
{
    switch (st) {
    case IBV_WC_SUCCESS:
        return "ok";
    case IBV_WC_WR_FLUSH_ERR:
        return "the QP was already in the error state (an earlier failure or a kill)";
    case IBV_WC_REM_ACCESS_ERR:
        return "the peer refused the access: wrong rkey, range outside the region, or WRITE to a read-only layer";
    case IBV_WC_REM_INV_REQ_ERR:
        return "the peer NAKed the request as invalid (opcode sequence or length): a protocol "
               "error on this rail; check both sides' MTU and the peer's kernel log";
    case IBV_WC_RETRY_EXC_ERR:
        return "no answer after all transport retries: check the MTU (RAILWIRE_MTU) and the GID "
               "(RAILWIRE_GID_INDEX) on both sides, and that the link is up";
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return "the peer was not ready (RNR) after all retries: check that the peer's QP is alive";
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
        return "local buffer outside its registered MR or wrong lkey: a railwire bug or a freed registration";
    case IBV_WC_LOC_QP_OP_ERR:
        return "local QP operation error: the WR was malformed for this QP, or (soft-RoCE) the "
               "port's netdev went down; check the link (`railwire devices`)";
    case IBV_WC_LOC_LEN_ERR:
        return "local length error: the message exceeds the port's max message size";
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_REM_INV_RD_REQ_ERR:
        return "the peer could not complete the operation: check the peer's log and its QP";
    case IBV_WC_BAD_RESP_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
        return "bad or missing response from the peer: check the link and the peer";
    default:
        return "a local verbs failure: check dmesg and the device state (`railwire devices`)";
    }
}
