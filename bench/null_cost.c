/* SPDX-License-Identifier: MIT */
/* `railwire_null_bench cost`: ns per transfer through a real railset over
 * the null transport (submit -> post -> completion -> poll), for single-slice
 * transfers one at a time and pipelined, submit_batch, and multi-slice
 * transfers, at each rail count asked for.  Each figure is the median of
 * --runs runs; runs of the different cases are interleaved so that load
 * from other processes hits them alike.  Instruction counts come from
 * bench/null_callgrind.sh, which runs this under callgrind. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "null_bench.h"
#include "null_world.h"

#define NC_MAX_RAILS 16
#define NC_MAX_RUNS 51
#define NC_CASES 4

struct nc_opts {
    unsigned rails[NC_MAX_RAILS];
    int n_rails;
    const char *only;
    uint64_t ops;
    unsigned runs, slices, depth, batch, rail_depth;
    uint64_t slice;
    int use_wait, eventfd, counts, no_warmup;
};

static const char nc_usage[] =
    "usage: railwire_null_bench cost [OPTIONS]\n"
    "  --rails LIST      rail counts, comma separated (default 1,8)\n"
    "  --case NAME       single | pipelined | batch | multi (default: all four)\n"
    "  --ops N           transfers per run (default 200000; multi: / slices)\n"
    "  --runs N          runs per figure, median reported (default 5)\n"
    "  --slices N        slices per transfer in the multi case (default 16)\n"
    "  --depth N         transfers in flight in the pipelined case (default 32)\n"
    "  --batch N         transfers per submit_batch in the batch case (default 32)\n"
    "  --slice BYTES     slice size (default 4096; single-slice transfers are this long)\n"
    "  --rail-depth N    slices in flight per rail (default 256)\n"
    "  --wait            complete with railwire_wait instead of railwire_poll\n"
    "  --eventfd         give each ep an eventfd (default: wait fd -1)\n"
    "  --counts          also print the null transport's counters per transfer\n"
    "  --no-warmup       skip the warm-up pass (under callgrind: every transfer\n"
    "                    nb_measure runs is then one of --ops)\n";

static int nc_parse(int argc, char **argv, struct nc_opts *o)
{
    enum { O_RAILS = 256, O_CASE, O_OPS, O_RUNS, O_SLICES, O_DEPTH, O_BATCH, O_SLICE, O_RDEPTH,
           O_WAIT, O_EVFD, O_COUNTS, O_NOWARM };
    static const struct option lo[] = {
        {"rails", required_argument, NULL, O_RAILS}, {"case", required_argument, NULL, O_CASE},
        {"ops", required_argument, NULL, O_OPS},     {"runs", required_argument, NULL, O_RUNS},
        {"slices", required_argument, NULL, O_SLICES}, {"depth", required_argument, NULL, O_DEPTH},
        {"batch", required_argument, NULL, O_BATCH}, {"slice", required_argument, NULL, O_SLICE},
        {"rail-depth", required_argument, NULL, O_RDEPTH}, {"wait", no_argument, NULL, O_WAIT},
        {"eventfd", no_argument, NULL, O_EVFD},     {"counts", no_argument, NULL, O_COUNTS},
        {"no-warmup", no_argument, NULL, O_NOWARM},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->rails[0] = 1;
    o->rails[1] = 8;
    o->n_rails = 2;
    o->ops = 200000;
    o->runs = 5;
    o->slices = 16;
    o->depth = 32;
    o->batch = 32;
    o->slice = 4096;
    o->rail_depth = 256;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;
        switch (c) {
        case O_RAILS:
            o->n_rails = nb_parse_list(optarg, o->rails, NC_MAX_RAILS);
            if (o->n_rails <= 0)
                return fprintf(stderr, "error: bad --rails '%s'\n", optarg), -1;
            break;
        case O_CASE: o->only = optarg; break;
        case O_OPS: o->ops = v; break;
        case O_RUNS: o->runs = (unsigned)v; break;
        case O_SLICES: o->slices = (unsigned)v; break;
        case O_DEPTH: o->depth = (unsigned)v; break;
        case O_BATCH: o->batch = (unsigned)v; break;
        case O_SLICE: o->slice = v; break;
        case O_RDEPTH: o->rail_depth = (unsigned)v; break;
        case O_WAIT: o->use_wait = 1; break;
        case O_EVFD: o->eventfd = 1; break;
        case O_COUNTS: o->counts = 1; break;
        case O_NOWARM: o->no_warmup = 1; break;
        case 'h': fputs(nc_usage, stdout); return 1;
        default: fputs(nc_usage, stderr); return -1;
        }
    }
    if (!o->ops || !o->runs || o->runs > NC_MAX_RUNS || !o->slices || !o->depth || !o->batch ||
        !o->slice || o->slice > (1u << 30) || !o->rail_depth) {
        fprintf(stderr, "error: --ops, --slices, --depth, --batch, --slice, --rail-depth must be "
                        "> 0, --runs 1..%d\n", NC_MAX_RUNS);
        return -1;
    }
    return 0;
}

int nb_cost_main(int argc, char **argv)
{
    struct nc_opts o;
    int prc = nc_parse(argc, argv, &o);
    if (prc)
        return prc > 0 ? 0 : 2;

    struct nb_case all[NC_CASES] = {
        {"single", 1, 1, 0, o.use_wait},
        {"pipelined", 1, o.depth, 0, o.use_wait},
        {"batch", 1, 0, o.batch, o.use_wait},
        {"multi", o.slices, 1, 0, o.use_wait},
    };
    struct nb_case cases[NC_CASES];
    unsigned n_cases = 0;
    for (unsigned i = 0; i < NC_CASES; i++)
        if (!o.only || !strcmp(o.only, all[i].name))
            cases[n_cases++] = all[i];
    if (!n_cases) {
        fprintf(stderr, "error: unknown --case '%s'\n", o.only);
        return 2;
    }

    size_t buf_len = (size_t)o.slice * o.slices;
    char *buf = malloc(buf_len);
    struct null_world *w = calloc((size_t)o.n_rails, sizeof(*w));
    double *ns = calloc((size_t)o.n_rails * n_cases * o.runs, sizeof(*ns));
    struct null_counters *cnt = calloc((size_t)o.n_rails * n_cases, sizeof(*cnt));
    int *ok = calloc((size_t)o.n_rails, sizeof(*ok));
    if (!buf || !w || !ns || !cnt || !ok) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    struct null_config nc = {.max_qp_wr = 4096, .use_eventfd = o.eventfd};
    null_configure(&nc);
    railwire_railset_opts ro;
    railwire_railset_opts_init(&ro);
    ro.slice_size = (size_t)o.slice;
    ro.queue_depth = o.rail_depth;
    for (int r = 0; r < o.n_rails; r++) {
        int rc = null_world_open(&w[r], o.rails[r], &ro, buf, buf_len);
        ok[r] = rc == 0;
        if (rc < 0 && o.rails[r] <= RAILWIRE_MAX_RAILS) {
            fprintf(stderr, "error: null railset of %u rails: %s\n", o.rails[r],
                    railwire_strerror(rc));
            return 1;
        }
    }

    int failed = 0;
    /* A warm-up pass (caches, the allocator's free lists), then the runs. */
    for (unsigned run = o.no_warmup ? 1 : 0; run <= o.runs; run++) {
        for (unsigned k = 0; k < n_cases; k++) {
            for (int r = 0; r < o.n_rails; r++) {
                if (!ok[r])
                    continue;
                const struct nb_case *c = &cases[k];
                uint64_t n = c->slices > 1 ? o.ops / c->slices : o.ops;
                if (!n)
                    n = 1;
                if (run == 0)
                    n = n / 10 + 1;
                railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = w[r].mr, .local = buf,
                                  .length = (size_t)o.slice * c->slices};
                null_reset_counters();
                uint64_t t0 = nb_now_ns();
                uint64_t errors = nb_measure(w[r].rs, &op, c, n);
                uint64_t t1 = nb_now_ns();
                if (errors) {
                    fprintf(stderr, "error: %s, %u rails: %llu transfers failed\n", c->name,
                            o.rails[r], (unsigned long long)errors);
                    failed = 1;
                }
                if (run == 0)
                    continue;
                ns[((size_t)r * n_cases + k) * o.runs + run - 1] = (double)(t1 - t0) / (double)n;
                struct null_counters *q = &cnt[(size_t)r * n_cases + k];
                null_counters_get(q);
                /* Counts do not depend on the load: every slice posted once,
                 * completed once, with its bytes. */
                uint64_t want = n * c->slices;
                if (q->wrs != want || q->wcs != want || q->bytes != want * o.slice) {
                    fprintf(stderr, "error: %s, %u rails: %llu WRs, %llu completions, %llu bytes "
                                    "for %llu slices of %llu bytes\n", c->name, o.rails[r],
                            (unsigned long long)q->wrs, (unsigned long long)q->wcs,
                            (unsigned long long)q->bytes, (unsigned long long)want,
                            (unsigned long long)o.slice);
                    failed = 1;
                }
                q->bytes = n; /* from here on: the transfers of this run */
            }
        }
    }

    /* Calibration: what one clock read costs here (the railset makes two
     * per transfer today, see docs/cost.md). */
    {
        uint64_t t0 = nb_now_ns(), sink = 0;
        for (int i = 0; i < 100000; i++)
            sink += nb_now_ns() & 1;
        printf("clock_gettime(CLOCK_MONOTONIC): %.1f ns per call (%llu)\n",
               (double)(nb_now_ns() - t0) / 100000.0, (unsigned long long)(sink & 0));
    }
    printf("%-10s %5s %7s %11s %9s %9s %10s", "case", "rails", "slices", "ns/xfer p50", "min",
           "max", "ns/slice");
    if (o.counts)
        printf(" %9s %10s %10s", "WRs/xfer", "posts/xfer", "polls/xfer");
    printf("\n");
    for (unsigned k = 0; k < n_cases; k++) {
        for (int r = 0; r < o.n_rails; r++) {
            const struct nb_case *c = &cases[k];
            if (!ok[r]) {
                printf("%-10s %5u %7u  n/a: API caps rails at %d\n", c->name, o.rails[r],
                       c->slices, RAILWIRE_MAX_RAILS);
                continue;
            }
            double *v = &ns[((size_t)r * n_cases + k) * o.runs];
            double med = nb_median(v, o.runs); /* sorts v */
            printf("%-10s %5u %7u %11.1f %9.1f %9.1f %10.1f", c->name, o.rails[r], c->slices, med,
                   v[0], v[o.runs - 1], med / c->slices);
            if (o.counts) {
                const struct null_counters *q = &cnt[(size_t)r * n_cases + k];
                double n = (double)q->bytes;
                printf(" %9.2f %10.2f %10.2f", (double)q->wrs / n, (double)q->post_calls / n,
                       (double)q->poll_calls / n);
            }
            printf("\n");
        }
    }
    for (int r = 0; r < o.n_rails; r++)
        if (ok[r])
            null_world_close(&w[r]);
    free(ok);
    free(cnt);
    free(ns);
    free(w);
    free(buf);
    return failed;
}
