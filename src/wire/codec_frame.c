/* SPDX-License-Identifier: MIT */
/* Incremental framing of the handshake messages: validates each counted
 * field once, as soon as it is complete, and says how many bytes the message
 * needs from what it has seen so far. */
#include "wire/wire.h"

#include "common/log.h"

enum {
    PH_REQUEST, /* client stream: the request byte */
    PH_COUNT,   /* the framed (or echoed) rail count */
    PH_RAIL,    /* RO: the fixed part of one rail's params, up to n_layers */
    PH_TAIL,    /* the rest of the message has no counted field */
    PH_DONE,
};

#define RO_FIXED 28u /* qpn | psn | gid | n_layers */

static const char *kind_name(enum rw_frame_kind kind)
{
    switch (kind) {
    case RW_FRAME_RO_REPLY: return "RO server reply";
    case RW_FRAME_RW_REPLY: return "RW server reply";
    case RW_FRAME_CLIENT_IDS: return "client QP identities";
    case RW_FRAME_CLIENT_STREAM: return "client stream";
    }
    return "message";
}

static ssize_t fail(struct rw_frame *f, int err, const char *what, unsigned long got, unsigned long at)
{
    rw_debug("%s: %s (%s %lu at byte %lu, asked for %u rails)", kind_name(f->kind),
             railwire_error_class(err), what, got, at, f->want);
    f->error = err;
    return err;
}

void rw_frame_init(struct rw_frame *f, enum rw_frame_kind kind, unsigned want)
{
    f->kind = kind;
    f->want = want;
    f->need = 1;
    f->pos = 0;
    f->rails = 0;
    f->rail = 0;
    f->phase = kind == RW_FRAME_CLIENT_STREAM ? PH_REQUEST : PH_COUNT;
    f->error = 0;
}

size_t rw_frame_max_size(enum rw_frame_kind kind)
{
    switch (kind) {
    case RW_FRAME_RO_REPLY: return 1 + RW_MAX_RO_RAILS * RW_RO_PARAMS_SIZE(RW_MAX_LAYERS);
    case RW_FRAME_RW_REPLY: return 1 + RW_MAX_RW_RAILS * (size_t)RW_RW_PARAMS_SIZE;
    case RW_FRAME_CLIENT_IDS: return 1 + RW_MAX_RW_RAILS * (size_t)RW_QP_ID_SIZE;
    case RW_FRAME_CLIENT_STREAM: return 2 + RW_MAX_RW_RAILS * (size_t)RW_QP_ID_SIZE;
    }
    return 0;
}

/* The count byte at buf[at] is complete: check it and frame what follows. */
static ssize_t count_done(struct rw_frame *f, const uint8_t *buf, size_t at)
{
    unsigned n = buf[at];

    if (f->kind == RW_FRAME_RO_REPLY && (n == 0 || n > RW_MAX_RO_RAILS))
        return fail(f, RAILWIRE_E_BAD_RAIL_COUNT, "rail count", n, at);
    if (n != f->want)
        return fail(f, RAILWIRE_E_RAIL_COUNT_MISMATCH, "rail count", n, at);
    f->rails = n;
    f->pos = at + 1;
    switch (f->kind) {
    case RW_FRAME_RO_REPLY:
        f->need = f->pos + RO_FIXED;
        f->phase = PH_RAIL;
        break;
    case RW_FRAME_RW_REPLY:
        f->need = f->pos + (size_t)n * RW_RW_PARAMS_SIZE;
        f->phase = PH_TAIL;
        break;
    default:
        f->need = f->pos + (size_t)n * RW_QP_ID_SIZE;
        f->phase = PH_TAIL;
        break;
    }
    return 0;
}

/* RO: the fixed part of rail f->rail (at f->pos) is complete. */
static ssize_t rail_done(struct rw_frame *f, const uint8_t *buf)
{
    uint32_t n_layers;
    size_t end;

    rw_get_le32(&n_layers, buf + f->pos + RO_FIXED - 4);
    if (n_layers == 0 || n_layers > RW_MAX_LAYERS)
        return fail(f, RAILWIRE_E_BAD_LAYER_COUNT, "layer count", n_layers, f->pos + RO_FIXED - 4);
    end = f->pos + RW_RO_PARAMS_SIZE(n_layers);
    if (++f->rail < f->rails) {
        f->pos = end;
        f->need = end + RO_FIXED;
    } else {
        f->need = end;
        f->phase = PH_TAIL;
    }
    return 0;
}

ssize_t rw_frame_scan(struct rw_frame *f, const uint8_t *buf, size_t len)
{
    ssize_t rc = 0;

    if (f->error)
        return f->error;
    if (!buf && len)
        return RAILWIRE_E_INVALID;
    for (;;) {
        if (f->phase == PH_DONE)
            return (ssize_t)f->need;
        if (len < f->need)
            return RAILWIRE_E_NEED_MORE;
        switch (f->phase) {
        case PH_REQUEST:
            if (buf[0] != f->want)
                return fail(f, RAILWIRE_E_RAIL_COUNT_MISMATCH, "request byte", buf[0], 0);
            f->need = 2;
            f->phase = PH_COUNT;
            break;
        case PH_COUNT:
            rc = count_done(f, buf, f->need - 1);
            break;
        case PH_RAIL:
            rc = rail_done(f, buf);
            break;
        default: /* PH_TAIL */
            f->phase = PH_DONE;
            break;
        }
        if (rc < 0)
            return rc;
    }
}
