/* SPDX-License-Identifier: MIT */
/* `railwire_null_bench rate`: can one core keep N rails of a fast NIC busy?
 * Each rail is the null transport's rate model: a link of --line-gbs GB/s
 * that serialises its WRs in post order, plus a fixed --latency-us.  A
 * completion becomes visible once CLOCK_MONOTONIC has passed its modelled
 * finish time.  The clock is real time, not a simulated one: the wire keeps
 * moving while the railset spends CPU submitting, striping and polling, so
 * whatever the railset costs shows up as idle wire, exactly as it would on a
 * NIC.  (A simulated clock that advanced only per operation would hide that
 * cost.)  Time this thread lost to other processes also shows up as idle
 * wire, so every row reports the thread's CPU share of the run: below ~0.95
 * the figure says more about the machine's load than about the railset.
 *
 * One thread drives the railset (one core), keeping enough transfers in
 * flight to fill every rail's queue; the figure is the bytes completed
 * during the run over the run's length, as a ratio of rails x line rate. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "null_bench.h"
#include "null_world.h"

#define NR_MAX_LIST 16
#define NR_MAX_RUNS 51
#define NR_POLL_MAX 64
#define NR_MAX_DEPTH 4096

struct nr_opts {
    unsigned rails[NR_MAX_LIST];
    int n_rails;
    uint64_t sizes[NR_MAX_LIST];
    int n_sizes;
    double line_gbs, latency_us, seconds;
    unsigned runs, rail_depth, depth;
    uint64_t slice;
};

static const char nr_usage[] =
    "usage: railwire_null_bench rate [OPTIONS]\n"
    "  --rails LIST       rail counts (default 8,16)\n"
    "  --sizes LIST       transfer sizes, K/M suffixes (default 64K,256K,1M,16M)\n"
    "  --line-gbs GB/s    modelled line rate per rail (default 50: a 400G NIC)\n"
    "  --latency-us US    modelled fixed latency per WR (default 2)\n"
    "  --seconds S        length of one run (default 0.25)\n"
    "  --runs N           runs per figure, median reported (default 5)\n"
    "  --slice BYTES      striping slice (default: the library's, 512 KiB)\n"
    "  --rail-depth N     slices in flight per rail (default: the library's, 16)\n"
    "  --depth N          transfers in flight (default: enough to fill every rail)\n";

static int parse_sizes(const char *s, uint64_t *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || n == max)
            return -1;
        if (*end == 'K' || *end == 'k')
            v <<= 10, end++;
        else if (*end == 'M' || *end == 'm')
            v <<= 20, end++;
        else if (*end == 'G' || *end == 'g')
            v <<= 30, end++;
        if (!v || v > (1ull << 30))
            return -1;
        out[n++] = v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

static int nr_parse(int argc, char **argv, struct nr_opts *o)
{
    enum { O_RAILS = 256, O_SIZES, O_LINE, O_LAT, O_SECS, O_RUNS, O_SLICE, O_RDEPTH, O_DEPTH };
    static const struct option lo[] = {
        {"rails", required_argument, NULL, O_RAILS},   {"sizes", required_argument, NULL, O_SIZES},
        {"line-gbs", required_argument, NULL, O_LINE}, {"latency-us", required_argument, NULL, O_LAT},
        {"seconds", required_argument, NULL, O_SECS},  {"runs", required_argument, NULL, O_RUNS},
        {"slice", required_argument, NULL, O_SLICE},   {"rail-depth", required_argument, NULL, O_RDEPTH},
        {"depth", required_argument, NULL, O_DEPTH},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->rails[0] = 8;
    o->rails[1] = 16;
    o->n_rails = 2;
    o->n_sizes = parse_sizes("64K,256K,1M,16M", o->sizes, NR_MAX_LIST);
    o->line_gbs = 50;
    o->latency_us = 2;
    o->seconds = 0.25;
    o->runs = 5;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_RAILS: o->n_rails = nb_parse_list(optarg, o->rails, NR_MAX_LIST); break;
        case O_SIZES: o->n_sizes = parse_sizes(optarg, o->sizes, NR_MAX_LIST); break;
        case O_LINE: o->line_gbs = strtod(optarg, NULL); break;
        case O_LAT: o->latency_us = strtod(optarg, NULL); break;
        case O_SECS: o->seconds = strtod(optarg, NULL); break;
        case O_RUNS: o->runs = (unsigned)strtoul(optarg, NULL, 10); break;
        case O_SLICE: o->slice = strtoull(optarg, NULL, 10); break;
        case O_RDEPTH: o->rail_depth = (unsigned)strtoul(optarg, NULL, 10); break;
        case O_DEPTH: o->depth = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'h': fputs(nr_usage, stdout); return 1;
        default: fputs(nr_usage, stderr); return -1;
        }
    }
    if (o->n_rails <= 0 || o->n_sizes <= 0 || !(o->line_gbs > 0) || o->latency_us < 0 ||
        !(o->seconds > 0) || !o->runs || o->runs > NR_MAX_RUNS || o->depth > NR_MAX_DEPTH) {
        fputs(nr_usage, stderr);
        return -1;
    }
    return 0;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Results of one run. */
struct nr_run {
    double ratio;           /* bytes / (wall x rails x line rate) */
    double cpu_share;       /* thread CPU time / wall time */
    double xfers_per_s;
    double clock_reads_per_xfer; /* the model's own clock reads */
};

/* Keeps `depth` transfers of `op` in flight for `seconds`; returns 0 or -1. */
static int nr_one(railwire_railset *rs, const railwire_op *op, unsigned depth, double seconds,
                  unsigned rails, double line_gbs, struct nr_run *out)
{
    railwire_completion comp[NR_POLL_MAX];
    railwire_handle h;
    uint64_t bytes = 0, xfers = 0;
    unsigned inflight = 0;
    null_reset_counters();
    uint64_t c0 = thread_cpu_ns(), t0 = nb_now_ns(), now = t0;
    uint64_t t_end = t0 + (uint64_t)(seconds * 1e9);
    while (now < t_end) {
        while (inflight < depth) {
            if (railwire_submit(rs, op, &h) < 0)
                return -1;
            inflight++;
        }
        int got = railwire_poll(rs, comp, NR_POLL_MAX);
        if (got < 0)
            return -1;
        for (int i = 0; i < got; i++) {
            if (comp[i].status)
                return -1;
            bytes += comp[i].length;
        }
        xfers += (uint64_t)got;
        inflight -= (unsigned)got;
        now = nb_now_ns();
    }
    double wall = (double)(now - t0), cpu = (double)(thread_cpu_ns() - c0);
    struct null_counters q;
    null_counters_get(&q);
    /* Drain what is still in flight (not counted). */
    while (inflight) {
        int got = railwire_poll(rs, comp, NR_POLL_MAX);
        if (got < 0)
            return -1;
        inflight -= (unsigned)got;
    }
    out->ratio = (double)bytes / (wall * rails * line_gbs); /* GB/s = bytes per ns */
    out->cpu_share = cpu / wall;
    out->xfers_per_s = (double)xfers / (wall / 1e9);
    out->clock_reads_per_xfer = xfers ? (double)q.clock_reads / (double)xfers : 0;
    return 0;
}

int nb_rate_main(int argc, char **argv)
{
    struct nr_opts o;
    int prc = nr_parse(argc, argv, &o);
    if (prc)
        return prc > 0 ? 0 : 2;
    uint64_t max_size = 0;
    for (int i = 0; i < o.n_sizes; i++)
        if (o.sizes[i] > max_size)
            max_size = o.sizes[i];
    char *buf = malloc((size_t)max_size);
    if (!buf) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    railwire_railset_opts ro;
    railwire_railset_opts_init(&ro);
    ro.slice_size = (size_t)o.slice;
    ro.queue_depth = o.rail_depth;
    size_t slice = o.slice ? (size_t)o.slice : 512u * 1024u;
    unsigned rdepth = o.rail_depth ? o.rail_depth : 16;

    printf("rate model: each rail a %.1f GB/s link + %.2f us latency, clocked by CLOCK_MONOTONIC "
           "(real time); one thread; %u run(s) of %.2f s per figure\n",
           o.line_gbs, o.latency_us, o.runs, o.seconds);
    printf("%5s %9s %6s %10s %8s %8s %9s %12s %10s %10s\n", "rails", "size", "depth", "ratio p50",
           "min", "max", "cpu share", "xfers/s", "ns budget", "clk/xfer");
    int failed = 0;
    for (int r = 0; r < o.n_rails; r++) {
        unsigned n = o.rails[r];
        struct null_config nc = {.line_gbs = o.line_gbs,
                                 .latency_ns = (uint64_t)(o.latency_us * 1000.0),
                                 .max_qp_wr = 4096};
        null_configure(&nc);
        struct null_world w;
        int rc = null_world_open(&w, n, &ro, buf, (size_t)max_size);
        if (rc < 0) {
            if (n > RAILWIRE_MAX_RAILS) {
                printf("%5u %9s  n/a: API caps rails at %d\n", n, "all", RAILWIRE_MAX_RAILS);
                continue;
            }
            fprintf(stderr, "error: null railset of %u rails: %s\n", n, railwire_strerror(rc));
            failed = 1;
            continue;
        }
        for (int s = 0; s < o.n_sizes; s++) {
            uint64_t size = o.sizes[s];
            uint64_t per = size < slice ? size : slice;
            unsigned depth = o.depth;
            if (!depth) {
                uint64_t d = ((uint64_t)n * rdepth * per + size - 1) / size + 1;
                depth = d < 2 ? 2 : d > NR_MAX_DEPTH ? NR_MAX_DEPTH : (unsigned)d;
            }
            railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = w.mr, .local = buf,
                              .length = (size_t)size};
            struct nr_run runs[NR_MAX_RUNS], warm;
            double ratio[NR_MAX_RUNS], share[NR_MAX_RUNS], xps[NR_MAX_RUNS];
            if (nr_one(w.rs, &op, depth, o.seconds / 5, n, o.line_gbs, &warm) < 0) {
                fprintf(stderr, "error: %u rails, %llu bytes: a transfer failed\n", n,
                        (unsigned long long)size);
                failed = 1;
                break;
            }
            for (unsigned k = 0; k < o.runs; k++) {
                if (nr_one(w.rs, &op, depth, o.seconds, n, o.line_gbs, &runs[k]) < 0) {
                    failed = 1;
                    break;
                }
                ratio[k] = runs[k].ratio;
                share[k] = runs[k].cpu_share;
                xps[k] = runs[k].xfers_per_s;
            }
            if (failed)
                break;
            double med = nb_median(ratio, o.runs);
            char sz[16];
            if (size >= (1u << 20))
                snprintf(sz, sizeof(sz), "%lluM", (unsigned long long)(size >> 20));
            else
                snprintf(sz, sizeof(sz), "%lluK", (unsigned long long)(size >> 10));
            /* ns budget: the time the modelled wire needs per transfer, i.e.
             * what the railset may spend on one to keep every rail busy. */
            printf("%5u %9s %6u %10.3f %8.3f %8.3f %9.2f %12.0f %10.1f %10.2f\n", n, sz, depth, med,
                   ratio[0], ratio[o.runs - 1], nb_median(share, o.runs), nb_median(xps, o.runs),
                   (double)size / (n * o.line_gbs), runs[0].clock_reads_per_xfer);
        }
        null_world_close(&w);
    }
    free(buf);
    return failed;
}
