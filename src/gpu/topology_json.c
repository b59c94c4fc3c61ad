/* SPDX-License-Identifier: MIT */
/* The topology as JSON (rw_topo_json, see topology.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/topology.h"

struct buf {
    char *p;
    size_t len, cap;
    int oom;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->oom)
        return;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

/* Names here come from sysfs or an XML file: escape anything unusual. */
static void str(struct buf *b, const char *s)
{
    put(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(b, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            put(b, "\\u%04x", c);
        else
            put(b, "%c", c);
    }
    put(b, "\"");
}

static void path(struct buf *b, const struct rw_topo_dev *d)
{
    put(b, "\"pcie_path\": [");
    for (size_t i = 0; i < d->depth; i++) {
        put(b, "%s", i ? ", " : "");
        str(b, d->path[i]);
    }
    put(b, "]");
}

static void nic(struct buf *b, const struct rw_topo *t, const struct rw_topo_dev *n)
{
    put(b, "{\"rdma\": ");
    str(b, n->rdma);
    put(b, ", \"netdev\": ");
    str(b, n->netdev);
    put(b, ", \"pci\": ");
    str(b, n->busid);
    put(b, ", \"numa\": %d, \"socket\": %d, ", n->numa, n->package);
    path(b, n);
    put(b, ", \"gpus\": [");
    for (size_t g = 0; g < t->n_gpus; g++) {
        unsigned hops;
        enum rw_topo_rel rel = rw_topo_relation(n, &t->gpus[g], &hops);
        put(b, "%s{\"cuda\": %d, \"pci\": ", g ? ", " : "", t->gpus[g].cuda);
        str(b, t->gpus[g].busid);
        put(b, ", \"relation\": \"%s\", \"hops\": %u, \"distance\": %u}", rw_topo_rel_name(rel),
            hops, rw_topo_distance(n, &t->gpus[g]));
    }
    put(b, "]}");
}

char *rw_topo_json(const struct rw_topo *t)
{
    struct buf b = {.p = malloc(1024), .cap = 1024};
    if (!b.p)
        return NULL;
    put(&b, "{\"source\": ");
    str(&b, t->source);
    put(&b, ", \"nics\": [");
    for (size_t i = 0; i < t->n_nics; i++) {
        put(&b, "%s", i ? ", " : "");
        nic(&b, t, &t->nics[i]);
    }
    put(&b, "], \"gpus\": [");
    for (size_t i = 0; i < t->n_gpus; i++) {
        const struct rw_topo_dev *g = &t->gpus[i];
        put(&b, "%s{\"cuda\": %d, \"pci\": ", i ? ", " : "", g->cuda);
        str(&b, g->busid);
        put(&b, ", \"numa\": %d, \"socket\": %d, ", g->numa, g->package);
        path(&b, g);
        put(&b, "}");
    }
    put(&b, "]}");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
