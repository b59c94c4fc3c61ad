/* SPDX-License-Identifier: MIT */
/* Golden tests over every line of the wire vectors file (a copy of
 * spec/vectors/wire-vectors.tsv): exact decode, exact re-encode, error
 * classes, truncation at every length, and the state machines fed all at
 * once, one byte at a time and in odd chunks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/support/drive.h"
#include "golden/support/vectors.h"
#include "railwire/log.h"

static struct tv_vector *vecs;
static size_t nvecs;

static void setup(void)
{
    char why[256];
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
    if (tv_load(tv_path(), &vecs, &nvecs, why, sizeof(why)))
        cr_assert_fail("loading the vectors: %s", why);
}

static void teardown(void)
{
    tv_free_all(vecs, nvecs);
}

TestSuite(vectors, .init = setup, .fini = teardown);

static int is_server_reply(enum tv_kind k)
{
    return k == TV_RO_SERVER || k == TV_RW_SERVER;
}

/* Checks a successful outcome against the line's expected records. */
static void expect_records(const struct tv_vector *v, const struct drv_outcome *o, const char *how)
{
    char why[256];

    switch (v->kind) {
    case TV_RO_SERVER:
    case TV_RW_SERVER:
        cr_assert(tv_reply_equal(&v->expect, &o->reply, why, sizeof(why)), "line %d (%s): %s",
                  v->line, how, why);
        break;
    case TV_CLIENT:
        cr_assert(tv_ids_equal(&v->expect, o->ids, o->n_ids, why, sizeof(why)), "line %d (%s): %s",
                  v->line, how, why);
        break;
    case TV_ACK:
        cr_assert_eq(o->ack, RW_STATUS_OK, "line %d (%s)", v->line, how);
        break;
    }
}

Test(vectors, file_covers_every_kind_and_class)
{
    int kinds[4] = {0}, ok = 0, err = 0;
    int classes[6] = {0};
    static const char *const names[] = {"peer-rejected", "truncated", "bad-rail-count",
                                        "rail-count-mismatch", "bad-layer-count", "refused"};

    cr_assert_geq(nvecs, 118, "the vectors file has %zu lines", nvecs);
    for (size_t i = 0; i < nvecs; i++) {
        kinds[vecs[i].kind]++;
        if (vecs[i].ok)
            ok++;
        else {
            err++;
            for (int c = 0; c < 6; c++)
                classes[c] += !strcmp(vecs[i].err_class, names[c]);
        }
    }
    for (int k = 0; k < 4; k++)
        cr_assert_gt(kinds[k], 0, "kind %d has no vectors", k);
    for (int c = 0; c < 6; c++)
        cr_assert_gt(classes[c], 0, "class %s has no vectors", names[c]);
    cr_assert_gt(ok, 0);
    cr_assert_gt(err, 0);
}

Test(vectors, ok_lines_decode_to_exactly_the_expected_records)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        struct drv_outcome o;
        if (!v->ok)
            continue;
        drv_decode_message(v->kind, v->want, v->bytes, v->len, &o);
        cr_assert_eq(o.rc, 0, "line %d (%s): %s", v->line, v->kind_name, railwire_error_class(o.rc));
        cr_assert_eq(o.used, v->len, "line %d: consumed %zu of %zu bytes", v->line, o.used, v->len);
        expect_records(v, &o, "decoder");
        drv_outcome_free(&o);
    }
}

/* Re-encodes the decoded records, and the expected records, and compares
 * both with the vector's bytes. */
Test(vectors, ok_lines_reencode_to_exactly_the_same_bytes)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        struct drv_outcome o;
        uint8_t *out = NULL;
        size_t cap = v->len + 8;
        ssize_t n = 0, m;
        if (!v->ok)
            continue;
        drv_decode_message(v->kind, v->want, v->bytes, v->len, &o);
        cr_assert_eq(o.rc, 0, "line %d", v->line);
        out = malloc(cap);
        cr_assert_not_null(out);
        switch (v->kind) {
        case TV_RO_SERVER: n = rw_encode_ro_reply(out, cap, o.reply.ro, o.reply.n_rails); break;
        case TV_RW_SERVER: n = rw_encode_rw_reply(out, cap, o.reply.rw, o.reply.n_rails); break;
        case TV_CLIENT:
            n = rw_encode_request(out, cap, v->want);
            m = rw_encode_client_ids(out + 1, cap - 1, o.ids, o.n_ids);
            n = m < 0 ? m : n + m;
            break;
        case TV_ACK: n = rw_encode_ack(out, cap, o.ack); break;
        }
        cr_assert_eq(n, (ssize_t)v->len, "line %d: re-encoded %zd bytes, vector has %zu", v->line, n,
                     v->len);
        cr_assert_arr_eq(out, v->bytes, v->len, "line %d: re-encoded bytes differ", v->line);
        free(out);
        drv_outcome_free(&o);

        if (v->kind != TV_ACK) {
            n = tv_encode(&v->expect, v->kind, v->want, &out);
            cr_assert_eq(n, (ssize_t)v->len, "line %d: expected records encode to %zd bytes",
                         v->line, n);
            cr_assert_arr_eq(out, v->bytes, v->len, "line %d: expected records encode differently",
                             v->line);
            free(out);
        }
    }
}

Test(vectors, err_lines_fail_with_their_class)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        struct drv_outcome o;
        if (v->ok)
            continue;
        drv_decode_message(v->kind, v->want, v->bytes, v->len, &o);
        cr_assert_eq(o.rc, v->err, "line %d (%s): got %s, want %s", v->line, v->kind_name,
                     railwire_error_class(o.rc), v->err_class);
        drv_outcome_free(&o);
    }
}

Test(vectors, err_lines_fail_with_their_class_through_the_state_machine)
{
    static const size_t chunks[] = {0, 1, 7};
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        if (v->ok)
            continue;
        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
            struct drv_outcome o;
            drv_read_message(v->kind, v->want, v->bytes, v->len, chunks[c], &o);
            if (o.skipped) {
                /* A client cannot ask for this many rails (e.g. RO 9): the
                 * decoder test above covers the line. */
                cr_assert(v->kind == TV_RO_SERVER && (v->want == 0 || v->want > 8), "line %d",
                          v->line);
                continue;
            }
            cr_assert_eq(o.rc, v->err, "line %d (%s, chunk %zu): got %s, want %s", v->line,
                         v->kind_name, chunks[c], railwire_error_class(o.rc), v->err_class);
            drv_outcome_free(&o);
        }
    }
}

/* The decoder on every strict prefix of a valid message says "need more",
 * which at end-of-stream is peer-rejected for 0 bytes of a server reply and
 * truncated otherwise. */
Test(vectors, ok_lines_truncated_at_every_length_fail_in_the_decoder)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        if (!v->ok)
            continue;
        for (size_t len = 0; len < v->len; len++) {
            struct drv_outcome o;
            int want = is_server_reply(v->kind) && len == 0 ? RAILWIRE_E_PEER_REJECTED
                                                            : RAILWIRE_E_TRUNCATED;
            drv_decode_message(v->kind, v->want, v->bytes, len, &o);
            cr_assert_eq(o.rc, want, "line %d (%s) cut at %zu of %zu: got %s", v->line,
                         v->kind_name, len, v->len, railwire_error_class(o.rc));
            cr_assert_null(o.reply.ro, "line %d: a failed decode left an allocation", v->line);
            cr_assert_null(o.reply.rw, "line %d: a failed decode left an allocation", v->line);
        }
    }
}

Test(vectors, ok_lines_truncated_at_every_length_fail_in_the_state_machine, .timeout = 240)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        if (!v->ok)
            continue;
        for (size_t len = 0; len < v->len; len++) {
            struct drv_outcome o;
            int want = is_server_reply(v->kind) && len == 0 ? RAILWIRE_E_PEER_REJECTED
                                                            : RAILWIRE_E_TRUNCATED;
            drv_read_message(v->kind, v->want, v->bytes, len, 0, &o);
            cr_assert(!o.skipped, "line %d", v->line);
            cr_assert_eq(o.rc, want, "line %d (%s) cut at %zu of %zu: got %s", v->line,
                         v->kind_name, len, v->len, railwire_error_class(o.rc));
            cr_assert_eq(o.used, len, "line %d cut at %zu: used %zu", v->line, len, o.used);
            drv_outcome_free(&o);
        }
    }
}

/* All at once, one byte at a time and in chunks of 2, 5 and 4099 bytes: the
 * state machine's result is the decoder's. */
Test(vectors, state_machine_fed_in_any_pieces_matches_the_decoder)
{
    static const size_t chunks[] = {0, 1, 2, 5, 4099};
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        if (!v->ok)
            continue;
        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
            struct drv_outcome o;
            char how[32];
            snprintf(how, sizeof(how), "state machine, chunk %zu", chunks[c]);
            drv_read_message(v->kind, v->want, v->bytes, v->len, chunks[c], &o);
            cr_assert(!o.skipped, "line %d", v->line);
            cr_assert_eq(o.rc, 0, "line %d (%s, %s): %s", v->line, v->kind_name, how,
                         railwire_error_class(o.rc));
            cr_assert_eq(o.used, v->len, "line %d (%s): used %zu of %zu", v->line, how, o.used, v->len);
            expect_records(v, &o, how);
            drv_outcome_free(&o);
        }
    }
}

/* Bytes after a complete message are not consumed: the decoder reports the
 * message's size and the state machine stops at its end. */
Test(vectors, ok_lines_with_trailing_bytes_stop_at_the_message_end)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        struct drv_outcome o;
        uint8_t *buf;
        if (!v->ok)
            continue;
        buf = malloc(v->len + 3);
        cr_assert_not_null(buf);
        memcpy(buf, v->bytes, v->len);
        memset(buf + v->len, 0xee, 3);
        drv_decode_message(v->kind, v->want, buf, v->len + 3, &o);
        cr_assert_eq(o.rc, 0, "line %d", v->line);
        cr_assert_eq(o.used, v->len, "line %d", v->line);
        drv_outcome_free(&o);
        drv_read_message(v->kind, v->want, buf, v->len + 3, 0, &o);
        cr_assert_eq(o.rc, 0, "line %d", v->line);
        cr_assert_eq(o.used, v->len, "line %d", v->line);
        drv_outcome_free(&o);
        free(buf);
    }
}
