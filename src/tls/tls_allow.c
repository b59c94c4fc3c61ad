/* SPDX-License-Identifier: MIT */
#include "tls/tls_allow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

void rw_tls_allow_init(struct rw_tls_allow *a)
{
    memset(a, 0, sizeof(*a));
}

static int valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n >= RW_TLS_NAME_MAX)
        return 0;
    if (name[0] == '*')
        return n > 2 && name[1] == '.' && strchr(name + 1, '*') == NULL;
    return strchr(name, '*') == NULL;
}

int rw_tls_allow_add(struct rw_tls_allow *a, const char *name)
{
    char *copy;

    if (!valid(name)) {
        rw_err("TLS: --tls-allow '%s' is not a name or '*.suffix' (1 to 255 bytes, '*' only "
               "as a leading '*.')", name ? name : "");
        return RAILWIRE_E_INVALID;
    }
    if (a->n == a->cap) {
        unsigned cap = a->cap ? a->cap * 2 : 8;
        char **nn = realloc(a->names, cap * sizeof(*nn));
        if (!nn)
            return RAILWIRE_E_NOMEM;
        a->names = nn;
        a->cap = cap;
    }
    copy = strdup(name);
    if (!copy)
        return RAILWIRE_E_NOMEM;
    a->names[a->n++] = copy;
    return 0;
}

int rw_tls_allow_name_matches(const char *entry, const char *name, int case_fold)
{
    size_t ne = strlen(entry), nn = strlen(name);

    if (nn == 0)
        return 0;
    if (entry[0] == '*') {
        const char *suffix = entry + 1; /* ".suffix" */
        size_t ns = ne - 1;
        if (nn <= ns)
            return 0;
        return case_fold ? strcasecmp(name + nn - ns, suffix) == 0
                         : strcmp(name + nn - ns, suffix) == 0;
    }
    return case_fold ? strcasecmp(entry, name) == 0 : strcmp(entry, name) == 0;
}

static int entry_matches(const char *e, const struct rw_tls_peer *p)
{
    if (p->psk)
        return rw_tls_allow_name_matches(e, p->psk_identity, 0);
    if (rw_tls_allow_name_matches(e, p->cn, 1))
        return 1;
    for (unsigned i = 0; i < p->n_dns && i < RW_TLS_MAX_SANS; i++)
        if (rw_tls_allow_name_matches(e, p->dns[i], 1))
            return 1;
    return 0;
}

int rw_tls_allow_check(const struct rw_tls_allow *a, const struct rw_tls_peer *p,
                       const char **why)
{
    if (why)
        *why = "";
    if (a->n == 0)
        return 1;
    for (unsigned i = 0; i < a->n; i++)
        if (entry_matches(a->names[i], p)) {
            if (why)
                *why = a->names[i];
            return 1;
        }
    return 0;
}

char *rw_tls_peer_describe(const struct rw_tls_peer *p, char *buf, size_t cap)
{
    size_t off;

    if (cap == 0)
        return buf;
    if (p->psk) {
        snprintf(buf, cap, "psk:%s", p->psk_identity);
        return buf;
    }
    snprintf(buf, cap, "cn:%s", p->cn[0] ? p->cn : "(none)");
    off = strlen(buf);
    for (unsigned i = 0; i < p->n_dns && i < RW_TLS_MAX_SANS && off + 1 < cap; i++) {
        int k = snprintf(buf + off, cap - off, "%s%s", i ? "," : " dns:", p->dns[i]);
        if (k < 0)
            break;
        off += (size_t)k;
        if (off >= cap)
            break;
    }
    return buf;
}

void rw_tls_allow_clear(struct rw_tls_allow *a)
{
    for (unsigned i = 0; i < a->n; i++)
        free(a->names[i]);
    free(a->names);
    rw_tls_allow_init(a);
}
