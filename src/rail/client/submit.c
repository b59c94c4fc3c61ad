/* SPDX-License-Identifier: MIT */
/* railwire_submit / railwire_submit_batch: validate a transfer, then hand it
 * to the striper.  Nothing here touches the network except through
 * rw_stripe_schedule(), which never blocks. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/client/dispatch.h"

/* Returns the error of an op that validate() refused, with the reason
 * logged: the checks one by one, kept off the submit path. */
static __attribute__((noinline, cold)) int explain(const railwire_railset *rs,
                                                   const railwire_op *op)
{
    if (op->opcode != RAILWIRE_OP_READ && op->opcode != RAILWIRE_OP_WRITE) {
        rw_err("submit: unknown opcode %u", op->opcode);
        return RAILWIRE_E_INVALID;
    }
    if (op->flags & ~(uint32_t)RAILWIRE_OP_F_RESERVED) {
        rw_err("submit: op flags 0x%x are not known to this library (1.0 defines "
               "RAILWIRE_OP_F_RESERVED only): the program was built against a newer railwire "
               "header, or the op was not zeroed", op->flags);
        return RAILWIRE_E_INVALID;
    }
    if (op->length == 0) {
        rw_err("submit: length must be at least 1 byte");
        return RAILWIRE_E_INVALID;
    }
    const struct railwire_mr *mr = op->mr;
    if (!mr || mr->rs != rs) {
        rw_err("submit: the op's mr is %s", mr ? "registered on another railset" : "NULL");
        return RAILWIRE_E_INVALID;
    }
    uintptr_t lo = (uintptr_t)mr->addr, p = (uintptr_t)op->local;
    if (!op->local || p < lo || p - lo > mr->len || op->length > mr->len - (p - lo)) {
        rw_err("submit: local range [%p, +%zu) is not inside the registration [%p, +%zu)",
               op->local, op->length, mr->addr, mr->len);
        return RAILWIRE_E_INVALID;
    }
    uint32_t layer = rs->dialect == RAILWIRE_DIALECT_RO ? op->layer : 0;
    if (layer >= rs->n_layers) {
        rw_err("submit: layer %u does not exist: the server published %u layer(s)", op->layer,
               rs->n_layers);
        return RAILWIRE_E_REMOTE_ACCESS;
    }
    if (op->remote_offset > UINT64_MAX - op->length) {
        rw_err("submit: remote offset %llu + length %zu overflows",
               (unsigned long long)op->remote_offset, op->length);
        return RAILWIRE_E_INVALID;
    }
    rw_err("submit: remote offset %llu + length %zu overflows the address space of a rail's "
           "region (base up to 0x%llx)", (unsigned long long)op->remote_offset, op->length,
           (unsigned long long)rs->layer_max_base[layer]);
    return RAILWIRE_E_REMOTE_ACCESS;
}

_Static_assert(offsetof(railwire_op, opcode) == 0 && offsetof(railwire_op, flags) == 4,
               "validate reads opcode and flags as one word");

/* The word at `p` (8 bytes, any alignment). */
static inline uint64_t word_at(const void *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    return w;
}

/* Returns 0 when `op` is a transfer this railset can carry, else the error
 * (logged by explain(), which repeats these checks one by one).  No call on
 * the way to 0: this runs once per transfer. */
static inline __attribute__((always_inline)) int validate(const railwire_railset *rs,
                                                          const railwire_op *op)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* opcode in the low half, flags in the high half: one test for both */
    if ((word_at(&op->opcode) & ~((uint64_t)RAILWIRE_OP_F_RESERVED << 32)) > RAILWIRE_OP_WRITE)
        return explain(rs, op);
#else
    if (op->opcode > RAILWIRE_OP_WRITE || (op->flags & ~(uint32_t)RAILWIRE_OP_F_RESERVED))
        return explain(rs, op);
#endif
    const struct railwire_mr *mr = op->mr;
    uintptr_t lo, p = (uintptr_t)op->local;
    if (op->length == 0 || !mr || mr->rs != rs || !op->local || p < (lo = (uintptr_t)mr->addr) ||
        p - lo > mr->len || op->length > mr->len - (p - lo))
        return explain(rs, op);
    uint32_t lt = rs->dialect == RAILWIRE_DIALECT_RO ? op->layer : 0; /* RW: ignored */
    if (lt >= rs->n_layers || op->remote_offset > UINT64_MAX - op->length ||
        rs->layer_max_base[lt] > UINT64_MAX - (op->remote_offset + op->length))
        return explain(rs, op);
    return 0;
}

int rw_submit_locked(railwire_railset *rs, const railwire_op *op, struct rw_waiter *sync,
                     railwire_handle *handle)
{
    if (rs->n_live == 0 && (!rs->healer || rs->all_down_expired)) {
        rw_err("submit: every rail of the railset is down");
        return RAILWIRE_E_ALL_RAILS_DOWN;
    }
    int rc = validate(rs, op);
    if (rc < 0)
        return rc;
    struct rw_xfer *x;
    /* A single-slice transfer with nothing queued before it is posted at
     * once, past the pending FIFO and the scheduling round. */
    int direct = !rs->pending.head && op->length <= rs->slice_size;
    rc = rw_stripe_submit(rs, op, direct, &x);
    if (rc < 0)
        return rc;
    x->sync_owned = sync != NULL;
    x->waiter = sync;
    /* issue 19: reservation, deadline (a plain op is never reserved) */
    if (!rw_xfer_submit_extras(rs, x, op) && !sync)
        rs->n_async++;
    *handle = x->handle;
    if (direct)
        rw_stripe_post_one(rs, &x->one);
    else
        rw_stripe_schedule(rs);
    if (rw_rail_events_pending(rs)) /* a post failed */
        rw_railset_dispatch_run(rs, rw_now_ms());
    return 0;
}

int railwire_submit(railwire_railset *rs, const railwire_op *op, railwire_handle *handle)
{
    if (!rs || !op || !handle) {
        rw_err("submit: NULL railset, op or handle");
        return RAILWIRE_E_INVALID;
    }
    rs_lock(rs);
    int rc = rw_submit_locked(rs, op, NULL, handle);
    rs_unlock(rs);
    return rc;
}

int railwire_submit_batch(railwire_railset *rs, const railwire_op *ops, size_t n,
                          railwire_handle *handles)
{
    if (!rs || (n && (!ops || !handles))) {
        rw_err("submit_batch: NULL railset, ops or handles");
        return RAILWIRE_E_INVALID;
    }
    if (n > INT32_MAX)
        n = INT32_MAX;
    rs_lock(rs);
    if (n && rs->n_live == 0 && (!rs->healer || rs->all_down_expired)) {
        rs_unlock(rs);
        rw_err("submit_batch: every rail of the railset is down");
        return RAILWIRE_E_ALL_RAILS_DOWN;
    }
    size_t k;
    int rc = 0;
    for (k = 0; k < n; k++) {
        rc = validate(rs, &ops[k]);
        if (rc < 0)
            break;
        struct rw_xfer *x;
        rc = rw_stripe_submit(rs, &ops[k], 0, &x);
        if (rc < 0)
            break;
        if (!rw_xfer_submit_extras(rs, x, &ops[k])) /* issue 19: reservation, deadline */
            rs->n_async++;
        handles[k] = x->handle;
    }
    rw_stripe_schedule(rs);
    if (rw_rail_events_pending(rs)) /* a post failed */
        rw_railset_dispatch_run(rs, rw_now_ms());
    rs_unlock(rs);
    if (k == 0 && rc < 0)
        return rc;
    return (int)k;
}
