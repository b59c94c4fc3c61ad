/* SPDX-License-Identifier: MIT */
/* Threads of a process holding several tcp railsets while they all
 * transfer (issue 20: eight 8-rail railsets run on at most cores + 2
 * threads).  Opens --railsets railsets of --rails rails each to a server
 * of the RW dialect (`railwire serve --dialect rw`), keeps --depth READs
 * of --size bytes in flight on every railset from this one thread, and
 * samples /proc/self/task every 100 ms for --seconds.  Every railset
 * reads the server's first depth x size bytes, so its arena needs them.  Prints one JSON
 * object: the most threads seen, the cores, and the GB/s moved.  When a
 * railset cannot be opened or a transfer fails it says so on stderr,
 * prints no figures and exits 1.
 *
 * usage: railwire_railsets_threads --connect HOST:PORT [--railsets N]
 *        [--rails N] [--size BYTES] [--depth N] [--seconds S] */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "common/cpus.h"
#include "common/time.h"

#define MAX_SETS 64
#define MAX_DEPTH 64

struct set {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf; /* depth slots of size bytes */
    unsigned inflight;
    uint64_t done;
};

static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Submits READ slot `slot` of set s; 0 or the library's error. */
static int submit(struct set *s, unsigned slot, size_t size, size_t span)
{
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = s->mr, .local = s->buf + slot * size,
                      .length = size, .remote_offset = (slot * size) % span, .user_data = slot};
    railwire_handle h;
    int rc = railwire_submit(s->rs, &op, &h);
    if (rc == 0)
        s->inflight++;
    return rc;
}

static int usage(const char *me)
{
    fprintf(stderr, "usage: %s --connect HOST:PORT [--railsets N (1..%d)] [--rails N] "
                    "[--size BYTES] [--depth N (1..%d)] [--seconds S]\n", me, MAX_SETS, MAX_DEPTH);
    return 2;
}

int main(int argc, char **argv)
{
    const char *connect = NULL;
    unsigned n_sets = 8, rails = 8, depth = 8;
    size_t size = 1u << 20;
    double seconds = 2.0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage(argv[0]);
        if (!strcmp(argv[i], "--connect"))
            connect = v;
        else if (!strcmp(argv[i], "--railsets"))
            n_sets = (unsigned)atoi(v);
        else if (!strcmp(argv[i], "--rails"))
            rails = (unsigned)atoi(v);
        else if (!strcmp(argv[i], "--size"))
            size = (size_t)strtoull(v, NULL, 0);
        else if (!strcmp(argv[i], "--depth"))
            depth = (unsigned)atoi(v);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(v);
        else
            return usage(argv[0]);
        i++;
    }
    char host[256];
    const char *colon = connect ? strrchr(connect, ':') : NULL;
    if (!colon || colon == connect || (size_t)(colon - connect) >= sizeof(host) || !n_sets ||
        n_sets > MAX_SETS || !rails || !depth || depth > MAX_DEPTH || !size || seconds <= 0)
        return usage(argv[0]);
    memcpy(host, connect, (size_t)(colon - connect));
    host[colon - connect] = '\0';
    railwire_log_set_level(RAILWIRE_LOG_ERROR);

    static struct set sets[MAX_SETS];
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.dialect = RAILWIRE_DIALECT_RW;
    o.n_rails = rails;
    size_t span = (size_t)depth * size; /* the remote bytes read: the server's arena holds them */
    int rc = 0;
    for (unsigned k = 0; k < n_sets && !rc; k++) {
        struct set *s = &sets[k];
        rc = railwire_railset_connect(host, colon + 1, &o, &s->rs);
        if (rc) {
            fprintf(stderr, "railset %u of %u: %s\n", k, n_sets, railwire_strerror(rc));
            break;
        }
        s->buf = malloc(depth * size);
        rc = s->buf ? railwire_mr_register(s->rs, s->buf, depth * size, &s->mr) : RAILWIRE_E_NOMEM;
        if (rc)
            fprintf(stderr, "railset %u: buffer: %s\n", k, railwire_strerror(rc));
    }

    int most = 0, failed = 0;
    int64_t t0 = rw_now_ms(), end = t0 + (int64_t)(seconds * 1000), next_sample = t0 + 100;
    for (unsigned k = 0; k < n_sets && !rc; k++)
        for (unsigned slot = 0; slot < depth && !rc; slot++)
            rc = submit(&sets[k], slot, size, span);
    while (!rc && rw_now_ms() < end) {
        for (unsigned k = 0; k < n_sets && !rc; k++) {
            struct set *s = &sets[k];
            railwire_completion c[MAX_DEPTH];
            int n = railwire_poll(s->rs, c, (int)depth);
            if (n < 0) {
                rc = n;
                break;
            }
            for (int j = 0; j < n && !rc; j++) {
                s->inflight--;
                if (c[j].status) {
                    fprintf(stderr, "railset %u: a READ failed: %s\n", k,
                            railwire_strerror(c[j].status));
                    failed = 1;
                    continue;
                }
                s->done++;
                rc = submit(s, (unsigned)c[j].user_data, size, span);
            }
        }
        if (rw_now_ms() >= next_sample) {
            int t = task_count();
            if (t > most)
                most = t;
            next_sample += 100;
        }
    }
    double el = (double)(rw_now_ms() - t0) / 1e3;
    uint64_t done = 0;
    for (unsigned k = 0; k < n_sets; k++) {
        struct set *s = &sets[k];
        done += s->done;
        railwire_completion c[MAX_DEPTH];
        int64_t drain_end = rw_now_ms() + 20000;
        while (s->rs && s->inflight && rw_now_ms() < drain_end) {
            int n = railwire_wait(s->rs, c, (int)depth, 200);
            if (n < 0)
                break;
            s->inflight -= (unsigned)n;
        }
        if (s->mr)
            railwire_mr_deregister(s->mr);
        if (s->rs)
            railwire_railset_close(s->rs);
        free(s->buf);
    }
    if (rc || failed) {
        if (rc)
            fprintf(stderr, "stopped: %s\n", railwire_strerror(rc));
        return 1;
    }
    printf("{\"railsets\": %u, \"rails\": %u, \"size\": %zu, \"depth\": %u, \"seconds\": %.2f, "
           "\"most_threads\": %d, \"cores\": %u, \"gbps\": %.3f}\n",
           n_sets, rails, size, depth, el, most, rw_cpus_usable(),
           el > 0 ? (double)done * (double)size / el / 1e9 : 0.0);
    return 0;
}
