/* SPDX-License-Identifier: MIT */
#include "bench_run.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_pattern.h"
#include "bench_util.h"

/* Where slot j of a run of `size` goes: distinct remote ranges for distinct
 * slots as far as the span allows. */
static void slot_target(const struct bench_run *b, uint64_t size, unsigned j, uint32_t *layer,
                        uint64_t *offset)
{
    uint64_t per_layer = b->span >= size ? b->span / size : 1;

    *layer = j % b->n_layers;
    *offset = ((j / b->n_layers) % per_layer) * size;
}

static const char *op_name(enum railwire_opcode op)
{
    return op == RAILWIRE_OP_READ ? "read" : "write";
}

static void note_error(struct bench_run *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note_error(struct bench_run *b, const char *fmt, ...)
{
    va_list ap;

    if (b->first_error[0])
        return;
    va_start(ap, fmt);
    vsnprintf(b->first_error, sizeof(b->first_error), fmt, ap);
    va_end(ap);
    fprintf(stderr, "error: %s\n", b->first_error);
}

static void check_slot(struct bench_run *b, const uint8_t *data, uint64_t size, uint32_t seed,
                       uint32_t layer, uint64_t offset, uint64_t transfer)
{
    size_t at;
    uint8_t got, want;

    if (!bench_pattern_check(data, (size_t)size, seed, layer, offset, &at, &got, &want))
        return;
    if (!b->mismatch) {
        b->mismatch = 1;
        b->first_error[0] = '\0';
        note_error(b, "verify: mismatch in %s #%llu (%llu bytes, layer %u, remote offset %llu): "
                      "byte %zu (remote offset %llu) is 0x%02x, expected 0x%02x",
                   b->opcode == RAILWIRE_OP_WRITE ? "read-back of write" : "transfer",
                   (unsigned long long)transfer,
                   (unsigned long long)size, layer, (unsigned long long)offset, at,
                   (unsigned long long)(offset + at), got, want);
    }
}

static void rail_bytes(railwire_railset *rs, uint64_t *out)
{
    railwire_rail_stats *st = calloc(RAILWIRE_MAX_RAILS, sizeof(*st));
    int n = st ? railwire_railset_stats(rs, st, RAILWIRE_MAX_RAILS, sizeof(*st)) : 0;

    memset(out, 0, RAILWIRE_MAX_RAILS * sizeof(*out));
    for (int i = 0; i < n && i < RAILWIRE_MAX_RAILS; i++)
        out[i] = st[i].bytes_read + st[i].bytes_written;
    free(st);
}

/* Per-slot state of one run. */
struct slot {
    uint64_t start_ns;
    uint64_t seq;               /* transfer number */
    int reading_back;           /* --write --verify: the read-back is in flight */
};

static int submit_op(struct bench_run *b, enum railwire_opcode opc, uint8_t *local, uint64_t size,
                     uint32_t layer, uint64_t off, uint64_t user_data)
{
    railwire_op op;
    railwire_handle h;

    memset(&op, 0, sizeof(op));
    op.opcode = opc;
    op.mr = b->mr;
    op.local = local;
    op.length = (size_t)size;
    op.layer = layer;
    op.remote_offset = off;
    op.user_data = user_data;
    return railwire_submit(b->rs, &op, &h);
}

int bench_run_size(struct bench_run *b, uint64_t size, uint64_t iters, double seconds,
                   struct bench_result *res)
{
    const int wverify = b->verify && b->opcode == RAILWIRE_OP_WRITE;
    const size_t half = wverify ? b->buf_len / 2 : b->buf_len;
    unsigned depth = b->depth, inflight = 0, nfree = 0;
    unsigned *free_slots = NULL;
    struct slot *sl = NULL;
    uint64_t submitted = 0, t0, t_end, now, next_progress, last_done;
    uint64_t before[RAILWIRE_MAX_RAILS], after[RAILWIRE_MAX_RAILS];
    railwire_completion comp[64];
    char sz[32];
    int rc = 0, tty = isatty(STDERR_FILENO), printed = 0;

    memset(res, 0, sizeof(*res));
    res->size = size;
    if ((uint64_t)depth * size > half)
        depth = (unsigned)(half / size);
    if (wverify) {
        /* Writes in flight must target distinct remote ranges, or a
         * read-back could see the bytes of another write still in flight. */
        uint64_t per_layer = b->span >= size ? b->span / size : 1;
        uint64_t targets = per_layer * (b->n_layers ? b->n_layers : 1);
        if (targets < depth) {
            fprintf(stderr, "note: --write --verify at %llu bytes: the span holds %llu distinct "
                            "target(s), so %llu write(s) in flight instead of %u; give --span "
                            ">= depth x size for full depth\n",
                    (unsigned long long)size, (unsigned long long)targets,
                    (unsigned long long)targets, depth);
            depth = (unsigned)targets;
        }
    }
    if (depth < 1)
        return RAILWIRE_E_INVALID;
    free_slots = calloc(depth, sizeof(*free_slots));
    sl = calloc(depth, sizeof(*sl));
    if (!free_slots || !sl) {
        rc = RAILWIRE_E_NOMEM;
        goto out;
    }
    for (unsigned j = depth; j-- > 0;)
        free_slots[nfree++] = j;
    bench_lat_reset(&b->lat);
    tool_format_size(sz, sizeof(sz), size);
    rail_bytes(b->rs, before);

    t0 = tool_now_ns();
    t_end = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : UINT64_MAX;
    next_progress = t0 + 1000000000ull;
    last_done = t0;
    for (;;) {
        now = tool_now_ns();
        while (nfree && (!iters || submitted < iters) && now < t_end) {
            unsigned j = free_slots[--nfree];
            uint8_t *local = b->buf + (size_t)j * size;
            uint64_t off;
            uint32_t layer;

            slot_target(b, size, j, &layer, &off);
            if (b->verify && b->opcode == RAILWIRE_OP_READ)
                memset(local, 0, (size_t)size);
            if (wverify)
                bench_pattern_fill(local, (size_t)size, BENCH_SEED_WRITE(submitted), layer, off);
            sl[j].seq = submitted;
            sl[j].reading_back = 0;
            sl[j].start_ns = tool_now_ns();
            rc = submit_op(b, b->opcode, local, size, layer, off, j);
            if (rc < 0) {
                free_slots[nfree++] = j;
                b->failed++;
                res->failed++;
                note_error(b, "submit of %s #%llu (%s, layer %u, offset %llu) failed: %s: %s",
                           op_name(b->opcode), (unsigned long long)submitted, sz, layer,
                           (unsigned long long)off, railwire_error_class(rc), railwire_strerror(rc));
                goto drain;
            }
            submitted++;
            inflight++;
        }
        if (!inflight)
            break;
        rc = railwire_wait(b->rs, comp, 64, 1000);
        now = tool_now_ns();
        if (rc == RAILWIRE_E_TIMEOUT) {
            rc = 0;
        } else if (rc < 0) {
            note_error(b, "waiting for completions failed: %s: %s", railwire_error_class(rc),
                       railwire_strerror(rc));
            goto drain;
        }
        for (int i = 0; i < rc; i++) {
            unsigned j = (unsigned)comp[i].user_data;
            uint8_t *local = b->buf + (size_t)j * size;
            uint32_t layer;
            uint64_t off;
            int st = comp[i].status;

            slot_target(b, size, j, &layer, &off);
            last_done = now;
            if (!sl[j].reading_back)
                bench_lat_add(&b->lat, now - sl[j].start_ns);
            if (st) {
                b->failed++;
                res->failed++;
                note_error(b, "%s #%llu (%s, layer %u, offset %llu) failed: %s: %s",
                           sl[j].reading_back ? "read-back of write" : op_name(b->opcode),
                           (unsigned long long)sl[j].seq, sz, layer, (unsigned long long)off,
                           railwire_error_class(st), railwire_strerror(st));
                /* With every rail gone nothing more can move: stop submitting. */
                if (st == RAILWIRE_E_ALL_RAILS_DOWN || st == RAILWIRE_E_CLOSED)
                    t_end = 0;
            } else if (wverify && !sl[j].reading_back) {
                /* The write is done: read the range back into the slot's
                 * twin in the second half and check it there. */
                uint8_t *twin = b->buf + half + (size_t)j * size;
                memset(twin, 0, (size_t)size);
                sl[j].reading_back = 1;
                st = submit_op(b, RAILWIRE_OP_READ, twin, size, layer, off, j);
                if (st == 0) {
                    res->transfers++;
                    continue; /* the slot stays busy until the read-back */
                }
                b->failed++;
                res->failed++;
                note_error(b, "read-back of write #%llu could not be submitted: %s",
                           (unsigned long long)sl[j].seq, railwire_error_class(st));
            } else if (wverify) {
                check_slot(b, b->buf + half + (size_t)j * size, size,
                           BENCH_SEED_WRITE(sl[j].seq), layer, off, sl[j].seq);
            } else {
                res->transfers++;
                if (b->verify)
                    check_slot(b, local, size, BENCH_SEED_SERVED, layer, off, sl[j].seq);
            }
            free_slots[nfree++] = j;
            inflight--;
        }
        rc = 0;
        if (now - last_done > (uint64_t)b->stall_ms * 1000000ull) {
            note_error(b, "no %s completed for %d ms with %u in flight: giving up",
                       op_name(b->opcode), b->stall_ms, inflight);
            rc = RAILWIRE_E_TIMEOUT;
            goto drain;
        }
        if (b->progress && now >= next_progress) {
            double el = (double)(now - t0) / 1e9;
            fprintf(stderr, "%s[%6.1f s] %s %s: %llu done, %.3f GB/s, %llu failed%s", tty ? "\r" : "",
                    el, sz, op_name(b->opcode), (unsigned long long)res->transfers,
                    (double)res->transfers * (double)size / el / 1e9,
                    (unsigned long long)res->failed, tty ? "   " : "\n");
            printed = 1;
            next_progress += 1000000000ull;
        }
    }
drain:
    /* On an early stop, wait (bounded) for what is still in flight so no
     * transfer touches the buffers after we return. */
    while (inflight) {
        int n = railwire_wait(b->rs, comp, 64, b->stall_ms);
        if (n <= 0)
            break;
        for (int i = 0; i < n; i++) {
            if (comp[i].status) {
                b->failed++;
                res->failed++;
            } else if (!sl[comp[i].user_data].reading_back) {
                res->transfers++;
            }
            inflight--;
        }
    }
    now = tool_now_ns();
    if (printed && tty)
        fputc('\n', stderr);
    res->seconds = (double)(now - t0) / 1e9;
    rail_bytes(b->rs, after);
    if (res->seconds > 0) {
        res->gbps = (double)res->transfers * (double)size / res->seconds / 1e9;
        res->tps = (double)res->transfers / res->seconds;
        for (int r = 0; r < RAILWIRE_MAX_RAILS; r++)
            res->rail_gbps[r] = (double)(after[r] - before[r]) / res->seconds / 1e9;
    }
    res->p50_us = (double)bench_lat_percentile(&b->lat, 50) / 1e3;
    res->p99_us = (double)bench_lat_percentile(&b->lat, 99) / 1e3;
out:
    free(free_slots);
    free(sl);
    return rc;
}
