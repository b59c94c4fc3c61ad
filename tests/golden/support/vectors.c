/* SPDX-License-Identifier: MIT */
#include "golden/support/vectors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"ro-server", "rw-server", "client", "ack"};

static void say(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}

const char *tv_path(void)
{
    return RAILWIRE_SOURCE_DIR "/tests/golden/vectors/wire-vectors.tsv";
}

int tv_kind_from_name(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, kind_names[i]))
            return i;
    return -1;
}

int tv_class_code(const char *cls)
{
    static const int codes[] = {RAILWIRE_E_PEER_REJECTED, RAILWIRE_E_TRUNCATED,
                                RAILWIRE_E_BAD_RAIL_COUNT, RAILWIRE_E_RAIL_COUNT_MISMATCH,
                                RAILWIRE_E_BAD_LAYER_COUNT, RAILWIRE_E_REFUSED};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (!strcmp(cls, railwire_error_class(codes[i])))
            return codes[i];
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int tv_hex_decode(const char *hex, size_t nhex, uint8_t **out, size_t *len)
{
    uint8_t *b;

    *out = NULL;
    *len = 0;
    if (nhex % 2)
        return -1;
    if (nhex == 0)
        return 0;
    b = malloc(nhex / 2);
    if (!b)
        return -1;
    for (size_t i = 0; i < nhex / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return -1;
        }
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = b;
    *len = nhex / 2;
    return 0;
}

/* ---------------------------------------------------------------- records */

static int get_u(const struct tj_value *o, const char *key, uint64_t max, uint64_t *v, char *why,
                 size_t whylen)
{
    const struct tj_value *x = tj_get(o, key);
    if (!x || x->type != TJ_UINT || x->u > max) {
        say(why, whylen, "key \"%s\" missing or not an integer <= %llu", key, (unsigned long long)max);
        return -1;
    }
    *v = x->u;
    return 0;
}

static int get_qp(const struct tj_value *o, struct rw_qp_id *id, char *why, size_t whylen)
{
    const struct tj_value *g = tj_get(o, "gid");
    uint64_t qpn, psn;
    uint8_t *gid;
    size_t glen;

    if (!o || o->type != TJ_OBJECT) {
        say(why, whylen, "a record is not an object");
        return -1;
    }
    if (get_u(o, "qpn", UINT32_MAX, &qpn, why, whylen) || get_u(o, "psn", UINT32_MAX, &psn, why, whylen))
        return -1;
    if (!g || g->type != TJ_STRING || strlen(g->str) != 32) {
        say(why, whylen, "gid missing or not 32 hex digits");
        return -1;
    }
    for (const char *c = g->str; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) {
            say(why, whylen, "gid \"%s\" is not lower-case hex", g->str);
            return -1;
        }
    if (tv_hex_decode(g->str, 32, &gid, &glen)) {
        say(why, whylen, "gid \"%s\" is not hex", g->str);
        return -1;
    }
    id->qpn = (uint32_t)qpn;
    id->psn = (uint32_t)psn;
    memcpy(id->gid, gid, 16);
    free(gid);
    return 0;
}

static int get_layers(const struct tj_value *o, struct rw_ro_params *ro, char *why, size_t whylen)
{
    const struct tj_value *l = tj_get(o, "layers");

    if (!l || l->type != TJ_ARRAY) {
        say(why, whylen, "layers missing or not an array");
        return -1;
    }
    ro->n_layers = (uint32_t)l->n;
    ro->layers = calloc(l->n ? l->n : 1, sizeof(*ro->layers));
    if (!ro->layers)
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        const struct tj_value *e = &l->items[i];
        if (e->type != TJ_ARRAY || e->n != 2 || e->items[0].type != TJ_UINT ||
            e->items[1].type != TJ_UINT || e->items[1].u > UINT32_MAX) {
            say(why, whylen, "layer %zu is not [u64, u32]", i);
            return -1;
        }
        ro->layers[i].base_addr = e->items[0].u;
        ro->layers[i].rkey = (uint32_t)e->items[1].u;
    }
    return 0;
}

int tv_records_from_json(const struct tj_value *arr, enum tv_kind kind, struct tv_records *r,
                         char *why, size_t whylen)
{
    static const size_t nkeys[] = {4, 5, 3, 0};

    memset(r, 0, sizeof(*r));
    if (!arr || arr->type != TJ_ARRAY || kind == TV_ACK) {
        say(why, whylen, "records are not a JSON array");
        return -1;
    }
    r->n = (unsigned)arr->n;
    if (kind == TV_RO_SERVER)
        r->ro = calloc(arr->n + 1, sizeof(*r->ro));
    else if (kind == TV_RW_SERVER)
        r->rw = calloc(arr->n + 1, sizeof(*r->rw));
    else
        r->ids = calloc(arr->n + 1, sizeof(*r->ids));
    if (!r->ro && !r->rw && !r->ids)
        return -1;
    for (size_t i = 0; i < arr->n; i++) {
        const struct tj_value *o = &arr->items[i];
        uint64_t v;
        if (o->type != TJ_OBJECT || o->n != nkeys[kind]) {
            say(why, whylen, "record %zu is not an object with exactly %zu keys", i, nkeys[kind]);
            return -1;
        }
        switch (kind) {
        case TV_RO_SERVER:
            if (get_qp(o, &r->ro[i].qp, why, whylen) || get_layers(o, &r->ro[i], why, whylen))
                return -1;
            break;
        case TV_RW_SERVER:
            if (get_qp(o, &r->rw[i].qp, why, whylen) ||
                get_u(o, "base_addr", UINT64_MAX, &r->rw[i].arena.base_addr, why, whylen) ||
                get_u(o, "rkey", UINT32_MAX, &v, why, whylen))
                return -1;
            r->rw[i].arena.rkey = (uint32_t)v;
            break;
        default:
            if (get_qp(o, &r->ids[i], why, whylen))
                return -1;
            break;
        }
    }
    return 0;
}

void tv_records_free(struct tv_records *r)
{
    if (r->ro)
        for (unsigned i = 0; i < r->n; i++)
            free(r->ro[i].layers);
    free(r->ro);
    free(r->rw);
    free(r->ids);
    memset(r, 0, sizeof(*r));
}

static int qp_equal(const struct rw_qp_id *a, const struct rw_qp_id *b, unsigned i, char *why,
                    size_t whylen)
{
    if (a->qpn != b->qpn || a->psn != b->psn || memcmp(a->gid, b->gid, 16)) {
        say(why, whylen, "rail %u: qp identity differs (qpn %u vs %u, psn %u vs %u)", i, a->qpn,
            b->qpn, a->psn, b->psn);
        return 0;
    }
    return 1;
}

static int ro_equal(const struct rw_ro_params *a, const struct rw_ro_params *b, unsigned n,
                    char *why, size_t whylen)
{
    for (unsigned i = 0; i < n; i++) {
        if (!qp_equal(&a[i].qp, &b[i].qp, i, why, whylen))
            return 0;
        if (a[i].n_layers != b[i].n_layers) {
            say(why, whylen, "rail %u: %u layers vs %u", i, a[i].n_layers, b[i].n_layers);
            return 0;
        }
        for (uint32_t l = 0; l < a[i].n_layers; l++)
            if (a[i].layers[l].base_addr != b[i].layers[l].base_addr ||
                a[i].layers[l].rkey != b[i].layers[l].rkey) {
                say(why, whylen, "rail %u layer %u differs", i, l);
                return 0;
            }
    }
    return 1;
}

static int rw_equal(const struct rw_rw_params *a, const struct rw_rw_params *b, unsigned n,
                    char *why, size_t whylen)
{
    for (unsigned i = 0; i < n; i++) {
        if (!qp_equal(&a[i].qp, &b[i].qp, i, why, whylen))
            return 0;
        if (a[i].arena.base_addr != b[i].arena.base_addr || a[i].arena.rkey != b[i].arena.rkey) {
            say(why, whylen, "rail %u: arena differs", i);
            return 0;
        }
    }
    return 1;
}

static int ids_equal(const struct rw_qp_id *a, const struct rw_qp_id *b, unsigned n, char *why,
                     size_t whylen)
{
    for (unsigned i = 0; i < n; i++)
        if (!qp_equal(&a[i], &b[i], i, why, whylen))
            return 0;
    return 1;
}

int tv_records_equal(const struct tv_records *a, const struct tv_records *b, char *why, size_t whylen)
{
    if (a->n != b->n || !a->ro != !b->ro || !a->rw != !b->rw || !a->ids != !b->ids) {
        say(why, whylen, "%u records vs %u (or different kinds)", a->n, b->n);
        return 0;
    }
    if (a->ro)
        return ro_equal(a->ro, b->ro, a->n, why, whylen);
    if (a->rw)
        return rw_equal(a->rw, b->rw, a->n, why, whylen);
    return ids_equal(a->ids, b->ids, a->n, why, whylen);
}

int tv_reply_equal(const struct tv_records *exp, const struct rw_server_reply *r, char *why,
                   size_t whylen)
{
    if (r->n_rails != exp->n) {
        say(why, whylen, "%u rails decoded, %u expected", r->n_rails, exp->n);
        return 0;
    }
    if (exp->ro) {
        if (r->dialect != RAILWIRE_DIALECT_RO || !r->ro || r->rw) {
            say(why, whylen, "not decoded as an RO reply");
            return 0;
        }
        return ro_equal(exp->ro, r->ro, exp->n, why, whylen);
    }
    if (r->dialect != RAILWIRE_DIALECT_RW || r->ro || (exp->n && !r->rw)) {
        say(why, whylen, "not decoded as an RW reply");
        return 0;
    }
    return rw_equal(exp->rw, r->rw, exp->n, why, whylen);
}

int tv_ids_equal(const struct tv_records *exp, const struct rw_qp_id *ids, unsigned n, char *why,
                 size_t whylen)
{
    if (n != exp->n || !exp->ids) {
        say(why, whylen, "%u ids vs %u expected", n, exp->n);
        return 0;
    }
    return ids_equal(exp->ids, ids, n, why, whylen);
}

ssize_t tv_encode(const struct tv_records *r, enum tv_kind kind, unsigned want, uint8_t **out)
{
    size_t cap = 2 + (size_t)r->n * 36;
    ssize_t n, m;

    if (kind == TV_RO_SERVER) {
        cap = rw_ro_reply_size(r->ro, r->n);
        if (!cap)
            return RAILWIRE_E_INVALID;
    }
    *out = malloc(cap);
    if (!*out)
        return RAILWIRE_E_NOMEM;
    switch (kind) {
    case TV_RO_SERVER: n = rw_encode_ro_reply(*out, cap, r->ro, r->n); break;
    case TV_RW_SERVER: n = rw_encode_rw_reply(*out, cap, r->rw, r->n); break;
    case TV_CLIENT:
        n = rw_encode_request(*out, cap, want);
        if (n < 0)
            break;
        m = rw_encode_client_ids(*out + n, cap - (size_t)n, r->ids, r->n);
        n = m < 0 ? m : n + m;
        break;
    default: n = RAILWIRE_E_INVALID; break;
    }
    if (n < 0) {
        free(*out);
        *out = NULL;
    }
    return n;
}

/* ------------------------------------------------------------------ file */

static int parse_line(char *line, int lineno, struct tv_vector *v, char *why, size_t whylen)
{
    char *f[5];
    char *p = line, *end;
    int k;

    memset(v, 0, sizeof(*v));
    v->line = lineno;
    for (int i = 0; i < 5; i++) {
        f[i] = p;
        p = strchr(p, '\t');
        if (i < 4) {
            if (!p) {
                say(why, whylen, "line %d: fewer than 5 tab-separated fields", lineno);
                return -1;
            }
            *p++ = '\0';
        } else if (p) {
            say(why, whylen, "line %d: more than 5 fields", lineno);
            return -1;
        }
    }
    k = tv_kind_from_name(f[0]);
    if (k < 0) {
        say(why, whylen, "line %d: unknown kind \"%s\"", lineno, f[0]);
        return -1;
    }
    v->kind = (enum tv_kind)k;
    v->kind_name = kind_names[k];
    v->want = (unsigned)strtoul(f[1], &end, 10);
    if (*f[1] == '\0' || *end || v->want > 255) {
        say(why, whylen, "line %d: bad want \"%s\"", lineno, f[1]);
        return -1;
    }
    if (tv_hex_decode(f[2], strlen(f[2]), &v->bytes, &v->len)) {
        say(why, whylen, "line %d: bad hex", lineno);
        return -1;
    }
    if (!strcmp(f[3], "err")) {
        v->err = tv_class_code(f[4]);
        snprintf(v->err_class, sizeof(v->err_class), "%s", f[4]);
        if (!v->err) {
            say(why, whylen, "line %d: unknown class \"%s\"", lineno, f[4]);
            return -1;
        }
        return 0;
    }
    if (strcmp(f[3], "ok")) {
        say(why, whylen, "line %d: status \"%s\" is neither ok nor err", lineno, f[3]);
        return -1;
    }
    v->ok = 1;
    if (v->kind == TV_ACK) {
        if (*f[4]) {
            say(why, whylen, "line %d: an ok ack has no expected records", lineno);
            return -1;
        }
        return 0;
    }
    {
        const char *err = NULL;
        struct tj_value *j = tj_parse(f[4], &err);
        char inner[200];
        int rc;
        if (!j) {
            say(why, whylen, "line %d: bad JSON at column %ld", lineno, (long)(err - f[4]));
            return -1;
        }
        rc = tv_records_from_json(j, v->kind, &v->expect, inner, sizeof(inner));
        tj_free(j);
        if (rc) {
            say(why, whylen, "line %d: %s", lineno, inner);
            return -1;
        }
    }
    return 0;
}

int tv_load(const char *path, struct tv_vector **out, size_t *n, char *why, size_t whylen)
{
    FILE *fp = fopen(path, "r");
    struct tv_vector *v = NULL;
    size_t count = 0, cap = 0, lcap = 0;
    char *line = NULL;
    ssize_t got;
    int lineno = 0;

    *out = NULL;
    *n = 0;
    if (!fp) {
        say(why, whylen, "cannot open %s", path);
        return -1;
    }
    while ((got = getline(&line, &lcap, fp)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = '\0';
        if (got == 0)
            continue;
        if (count == cap) {
            struct tv_vector *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
            if (!nv)
                goto fail;
            v = nv;
        }
        if (parse_line(line, lineno, &v[count], why, whylen)) {
            count++;
            goto fail;
        }
        count++;
    }
    free(line);
    fclose(fp);
    *out = v;
    *n = count;
    return 0;
fail:
    free(line);
    fclose(fp);
    tv_free_all(v, count);
    return -1;
}

void tv_free_all(struct tv_vector *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].bytes);
        tv_records_free(&v[i].expect);
    }
    free(v);
}
