/* SPDX-License-Identifier: MIT */
/* A tiny JSON reader for the test suites: objects, arrays, strings (simple
 * escapes only) and non-negative integers up to 2^64-1, read exactly.
 * Enough for the vectors file's `expected` column and `railwire decode`'s
 * output; anything else is a parse error. */
#ifndef RW_TEST_JSON_H
#define RW_TEST_JSON_H

#include <stddef.h>
#include <stdint.h>

enum tj_type { TJ_OBJECT, TJ_ARRAY, TJ_STRING, TJ_UINT };

struct tj_value {
    enum tj_type type;
    uint64_t u;               /* TJ_UINT */
    char *str;                /* TJ_STRING (NUL-terminated, owned) */
    size_t n;                 /* TJ_OBJECT / TJ_ARRAY: entry count */
    struct tj_value *items;   /* n values (owned) */
    char **keys;              /* TJ_OBJECT: n keys (owned) */
};

/* Parses the whole of `text` (trailing whitespace allowed).  Returns a value
 * the caller frees with tj_free(), or NULL with *err pointing at the offending
 * character. */
struct tj_value *tj_parse(const char *text, const char **err);
/* Frees a value from tj_parse() (NULL is fine). */
void tj_free(struct tj_value *v);
/* The member `key` of an object, or NULL (also when v is not an object). */
const struct tj_value *tj_get(const struct tj_value *v, const char *key);

#endif
