/* SPDX-License-Identifier: MIT */
#include "golden/support/json.h"

#include <stdlib.h>
#include <string.h>

struct parser {
    const char *p;
    int depth;
};

static void skip_ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static void release(struct tj_value *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        release(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static int parse_value(struct parser *ps, struct tj_value *v);

static char *parse_string(struct parser *ps)
{
    size_t cap = 16, len = 0;
    char *s;

    if (*ps->p != '"')
        return NULL;
    ps->p++;
    s = malloc(cap);
    if (!s)
        return NULL;
    for (;;) {
        char c = *ps->p;
        if (c == '\0' || (unsigned char)c < 0x20)
            goto bad;
        ps->p++;
        if (c == '"')
            break;
        if (c == '\\') {
            char e = *ps->p++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            default: ps->p--; goto bad;
            }
        }
        if (len + 2 > cap) {
            char *n = realloc(s, cap *= 2);
            if (!n)
                goto bad;
            s = n;
        }
        s[len++] = c;
    }
    s[len] = '\0';
    return s;
bad:
    free(s);
    return NULL;
}

static int parse_uint(struct parser *ps, uint64_t *out)
{
    uint64_t v = 0;

    if (*ps->p < '0' || *ps->p > '9')
        return -1;
    if (ps->p[0] == '0' && ps->p[1] >= '0' && ps->p[1] <= '9')
        return -1; /* no leading zeros */
    while (*ps->p >= '0' && *ps->p <= '9') {
        unsigned d = (unsigned)(*ps->p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
        ps->p++;
    }
    if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E')
        return -1;
    *out = v;
    return 0;
}

static int push(struct tj_value *v, size_t *cap, int with_key)
{
    if (v->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        struct tj_value *items = realloc(v->items, ncap * sizeof(*items));
        if (!items)
            return -1;
        v->items = items;
        if (with_key) {
            char **keys = realloc(v->keys, ncap * sizeof(*keys));
            if (!keys)
                return -1;
            v->keys = keys;
        }
        *cap = ncap;
    }
    memset(&v->items[v->n], 0, sizeof(v->items[0]));
    if (with_key)
        v->keys[v->n] = NULL;
    v->n++;
    return 0;
}

static int parse_container(struct parser *ps, struct tj_value *v, int object)
{
    char close = object ? '}' : ']';
    size_t cap = 0;

    v->type = object ? TJ_OBJECT : TJ_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        if (push(v, &cap, object))
            return -1;
        if (object) {
            v->keys[v->n - 1] = parse_string(ps);
            if (!v->keys[v->n - 1])
                return -1;
            skip_ws(ps);
            if (*ps->p != ':')
                return -1;
            ps->p++;
        }
        if (parse_value(ps, &v->items[v->n - 1]))
            return -1;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p != close)
            return -1;
        ps->p++;
        return 0;
    }
}

static int parse_value(struct parser *ps, struct tj_value *v)
{
    int rc;

    skip_ws(ps);
    if (++ps->depth > 64)
        return -1;
    switch (*ps->p) {
    case '{': rc = parse_container(ps, v, 1); break;
    case '[': rc = parse_container(ps, v, 0); break;
    case '"':
        v->type = TJ_STRING;
        v->str = parse_string(ps);
        rc = v->str ? 0 : -1;
        break;
    default:
        v->type = TJ_UINT;
        rc = parse_uint(ps, &v->u);
        break;
    }
    ps->depth--;
    return rc;
}

struct tj_value *tj_parse(const char *text, const char **err)
{
    struct parser ps = {text, 0};
    struct tj_value *v = calloc(1, sizeof(*v));

    if (!v) {
        *err = text;
        return NULL;
    }
    if (parse_value(&ps, v) == 0) {
        skip_ws(&ps);
        if (*ps.p == '\0')
            return v;
    }
    *err = ps.p;
    tj_free(v);
    return NULL;
}

void tj_free(struct tj_value *v)
{
    if (!v)
        return;
    release(v);
    free(v);
}

const struct tj_value *tj_get(const struct tj_value *v, const char *key)
{
    if (!v || v->type != TJ_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key))
            return &v->items[i];
    return NULL;
}
