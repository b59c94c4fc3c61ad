/* SPDX-License-Identifier: MIT */
/* `railwire bench`: a perftest-style client.  Keeps -q transfers of one size
 * in flight over a railset of --rails rails, reports GB/s (total and per
 * rail), transfers/s and latency percentiles, and with --verify checks every
 * byte against the bench pattern.  --loopback runs its own server in the same
 * process so one command shows the whole data path on any machine. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <railwire.h>

#include "bench_loopback.h"
#include "bench_plot.h"
#include "bench_report.h"
#include "bench_run.h"
#include "bench_util.h"
#include "commands.h"
#include "gpu/topology.h"
#include "tls_cli.h"

#define BENCH_SWEEP_MIN (4ull << 10)
#define BENCH_SWEEP_MAX (64ull << 20)
#define BENCH_BUF_CAP (1ull << 30)     /* client buffer bound (depth x size) */
#define BENCH_SWEEP_SECONDS 1.0        /* per size in -a mode unless -D is given */

static const char bench_usage[] =
    "usage: railwire bench (--connect HOST:PORT | --loopback) [OPTIONS]\n"
    "\n"
    "Measure striped READ or WRITE throughput and latency over N rails.\n"
    "  railwire bench --loopback --rails 2 --write --verify\n"
    "runs its own server in this process (127.0.0.1, ephemeral port) and shows\n"
    "the whole data path on any machine.\n"
    "\n"
    "options:\n"
    "  --connect HOST:PORT    server to use ([IPv6]:PORT works too)\n"
    "  --loopback             start a server in this process on 127.0.0.1; its\n"
    "                         memory holds the bench pattern, so --verify works\n"
    "  --dialect ro|rw        handshake dialect (default rw with --write, else ro)\n"
    "  --rails N              rails (RW 1..255, RO 1..8; default 1); more rails than\n"
    "                         local addresses share them (rail i uses the (i mod n)-th)\n"
    "  --read | --write       operation (default --read)\n"
    "  -s, --size SIZE        bytes per transfer (default 1M; K/M/G suffixes)\n"
    "  -a, --all              sweep sizes 4 KiB..64 MiB (powers of 2); each size\n"
    "                         runs -n transfers or -D seconds, at most 1 s unless\n"
    "                         -D is given\n"
    "  -q, --depth N          transfers in flight (default 8)\n"
    "  -n, --iters N          transfers per size (default 1000 unless -D)\n"
    "  -D, --duration SEC     run for SEC seconds per size\n"
    "  --warmup N             before each size, N transfers of it that are not\n"
    "                         timed (a new connection's first tenths of a second\n"
    "                         run slower: TCP windows, the scheduler placing the\n"
    "                         threads); failures in them still count (default 0)\n"
    "  --verify               check every byte: reads against the pattern the\n"
    "                         server holds (seed 0: --loopback, `serve --fill`,\n"
    "                         or files written with that pattern); each write\n"
    "                         carries its own pattern and is read back and\n"
    "                         compared as soon as it completes (so GB/s under\n"
    "                         --write --verify includes the read-backs' time)\n"
    "  --span SIZE            remote bytes per layer the bench may use (default:\n"
    "                         loopback: depth x size; else one transfer size)\n"
    "  --layers N             remote layers to spread reads over (RO; default: all\n"
    "                         the server publishes)\n"
    "  --slice SIZE           striping slice size (default: the library's)\n"
    "  --rail-depth N         slices in flight per rail (default: the library's)\n"
    "  --transport T          tcp, verbs or auto (default auto)\n"
    "  --local-addr ADDR      tcp: local address of rail i (repeatable; rail i\n"
    "                         uses the (i mod n)-th)\n"
    "  --device DEV[:PORT]    verbs: device of rail i (repeatable)\n"
    "  --near SPEC            place rails on the NICs nearest cuda:N (a GPU), numa:N\n"
    "                         (a NUMA node) or auto (the current CUDA device, else\n"
    "                         this CPU's node); --local-addr/--device win.  The\n"
    "                         topology is this machine's, or RAILWIRE_HWLOC_XML's\n"
    "  --connect-timeout MS   default 5000\n"
    "  --io-timeout MS        bounds each handshake step and rail connect (default\n"
    "                         10000)\n"
    "  --op-timeout MS        a slice outstanding longer marks its rail dead\n"
    "                         (default: the library's, 10000)\n"
    "  --no-heal              do not heal lost rails (by default a lost rail is\n"
    "                         replaced by a rail of a new session to the server)\n"
    "  --all-down-timeout MS  with healing: how long transfers wait while no rail\n"
    "                         is live before failing (default: the op timeout)\n"
    "  --busy-poll-us US      how long a thread waiting for completions keeps\n"
    "                         polling before it sleeps, while transfers are in\n"
    "                         flight (0..1000000, 0 = sleep at once; default: the\n"
    "                         library's, 50); with --loopback also the server's\n"
    "  --copy-reads           with --loopback: the server copies every READ answer\n"
    "                         into its socket (by default answers of 128 KiB or\n"
    "                         more go by reference to its memory: zero_copy_reads)\n"
    "  --tls-cert FILE --tls-key FILE --tls-ca FILE\n"
    "                         TLS 1.3 with certificates (PEM) on the control\n"
    "                         connection and every tcp rail; the server's\n"
    "                         certificate must chain to --tls-ca and carry the\n"
    "                         host connected to (or --tls-server-name)\n"
    "  --tls-psk FILE         TLS 1.3 with a pre-shared key: IDENTITY:HEXKEY lines\n"
    "                         (mode 0600); the first line, or --tls-psk-identity\n"
    "  --tls-psk-identity NAME  the PSK line to use\n"
    "  --tls-server-name NAME the name the server's certificate must carry\n"
    "                         (default: the --connect host).  With --loopback the\n"
    "                         in-process server uses the same files (a PSK file,\n"
    "                         or a certificate valid for both roles)\n"
    "  --json                 print one JSON object on stdout instead of the table\n"
    "  --plot FILE.png        also draw the results (with -a: the sweep) with gnuplot\n"
    "  --metrics-dump         after the run, print the railset's metrics on stdout\n"
    "                         in the Prometheus text format (railwire_railset_metrics;\n"
    "                         docs/metrics.md), after the table\n"
    "  --quiet                no progress or \"connected\" line on stderr\n"
    "  -v, --verbose          debug logging\n"
    "  -h, --help             this text\n"
    "\n"
    "exit status: 0 if every transfer succeeded (and verified), 1 if any failed,\n"
    "a verify found a mismatch or the connection failed, 2 on a usage error.\n";

struct bench_opts {
    char host[256], port[16];
    const char *plot;          /* --plot FILE.png, NULL when not asked */
    int have_connect, loopback, have_dialect, verify, json, quiet, verbose, sweep;
    int metrics_dump;
    enum railwire_dialect dialect;
    enum railwire_transport transport;
    enum railwire_opcode opcode;
    unsigned rails, depth, rail_depth, layers;
    uint64_t size, iters, span, slice;
    uint64_t warmup;           /* --warmup: untimed transfers before each size */
    double seconds;
    int connect_timeout, io_timeout, op_timeout, all_down_timeout, no_heal;
    int busy_poll_us;          /* library value: 0 = default, -1 = never */
    int copy_reads;            /* --copy-reads: the loopback server's zero_copy_reads off */
    const char *local[RAILWIRE_MAX_RAILS * 4];
    unsigned n_local;
    const char *dev[RAILWIRE_MAX_RAILS * 4];
    unsigned n_dev;
    const char *near;          /* --near, NULL when not given */
    struct tls_cli tls;        /* --tls-* */
};

static int parse_args(int argc, char **argv, struct bench_opts *b)
{
    enum { O_CONNECT = 256, O_LOOPBACK, O_DIALECT, O_RAILS, O_READ, O_WRITE, O_VERIFY, O_SPAN,
           O_LAYERS, O_SLICE, O_RAIL_DEPTH, O_TRANSPORT, O_LOCAL, O_DEVICE, O_CTIMEOUT, O_OTIMEOUT,
           O_JSON, O_QUIET, O_NO_HEAL, O_ALL_DOWN, O_IOTIMEOUT, O_METRICS_DUMP,
           O_BUSY_POLL, O_NEAR, O_WARMUP, O_COPY_READS };
    static const struct option longopts[] = {
        {"connect", required_argument, NULL, O_CONNECT},
        {"loopback", no_argument, NULL, O_LOOPBACK},
        {"dialect", required_argument, NULL, O_DIALECT},
        {"rails", required_argument, NULL, O_RAILS},
        {"read", no_argument, NULL, O_READ},
        {"write", no_argument, NULL, O_WRITE},
        {"size", required_argument, NULL, 's'},
        {"all", no_argument, NULL, 'a'},
        {"depth", required_argument, NULL, 'q'},
        {"iters", required_argument, NULL, 'n'},
        {"duration", required_argument, NULL, 'D'},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"verify", no_argument, NULL, O_VERIFY},
        {"span", required_argument, NULL, O_SPAN},
        {"layers", required_argument, NULL, O_LAYERS},
        {"slice", required_argument, NULL, O_SLICE},
        {"rail-depth", required_argument, NULL, O_RAIL_DEPTH},
        {"transport", required_argument, NULL, O_TRANSPORT},
        {"local-addr", required_argument, NULL, O_LOCAL},
        {"device", required_argument, NULL, O_DEVICE},
        {"near", required_argument, NULL, O_NEAR},
        {"connect-timeout", required_argument, NULL, O_CTIMEOUT},
        {"op-timeout", required_argument, NULL, O_OTIMEOUT},
        {"io-timeout", required_argument, NULL, O_IOTIMEOUT},
        {"json", no_argument, NULL, O_JSON},
        {"metrics-dump", no_argument, NULL, O_METRICS_DUMP},
        {"no-heal", no_argument, NULL, O_NO_HEAL},
        {"all-down-timeout", required_argument, NULL, O_ALL_DOWN},
        {"busy-poll-us", required_argument, NULL, O_BUSY_POLL},
        {"copy-reads", no_argument, NULL, O_COPY_READS},
        {"tls-cert", required_argument, NULL, TLS_O_CERT},
        {"tls-key", required_argument, NULL, TLS_O_KEY},
        {"tls-ca", required_argument, NULL, TLS_O_CA},
        {"tls-psk", required_argument, NULL, TLS_O_PSK},
        {"tls-psk-identity", required_argument, NULL, TLS_O_PSK_IDENTITY},
        {"tls-server-name", required_argument, NULL, TLS_O_SERVER_NAME},
        {"plot", required_argument, NULL, 'P'},
        {"quiet", no_argument, NULL, O_QUIET},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long v;
    int c, have_op = 0;

    memset(b, 0, sizeof(*b));
    b->rails = 1;
    b->depth = 8;
    b->size = 1ull << 20;
    b->opcode = RAILWIRE_OP_READ;
    b->transport = RAILWIRE_TRANSPORT_AUTO;
    tls_cli_init(&b->tls);
    optind = 1;
    while ((c = getopt_long(argc, argv, "s:aq:n:D:vh", longopts, NULL)) != -1) {
        switch (c) {
        case O_CONNECT:
            if (tool_parse_hostport(optarg, "--connect address", b->host, sizeof(b->host), b->port,
                                    sizeof(b->port)) < 0)
                return -1;
            b->have_connect = 1;
            break;
        case O_LOOPBACK: b->loopback = 1; break;
        case O_DIALECT:
            if (tool_parse_dialect(optarg, &b->dialect) < 0)
                return -1;
            b->have_dialect = 1;
            break;
        case O_RAILS:
            if (tool_parse_uint(optarg, "--rails", 1, RAILWIRE_MAX_RAILS, &v) < 0)
                return -1;
            b->rails = (unsigned)v;
            break;
        case O_READ:
        case O_WRITE:
            if (have_op) {
                fprintf(stderr, "error: give one of --read and --write\n");
                return -1;
            }
            have_op = 1;
            b->opcode = c == O_READ ? RAILWIRE_OP_READ : RAILWIRE_OP_WRITE;
            break;
        case 's':
            if (tool_parse_size(optarg, "transfer size (-s)", 0, &b->size) < 0)
                return -1;
            if (b->size > BENCH_BUF_CAP) {
                fprintf(stderr, "error: -s is at most 1 GiB\n");
                return -1;
            }
            break;
        case 'a': b->sweep = 1; break;
        case 'q':
            if (tool_parse_uint(optarg, "depth (-q)", 1, 4096, &v) < 0)
                return -1;
            b->depth = (unsigned)v;
            break;
        case 'n':
            if (tool_parse_uint(optarg, "iterations (-n)", 1, (unsigned long)-1, &v) < 0)
                return -1;
            b->iters = v;
            break;
        case 'D': {
            char *end;
            b->seconds = strtod(optarg, &end);
            if (*end || !(b->seconds > 0) || b->seconds > 86400) {
                fprintf(stderr, "error: bad duration (-D) '%s' (seconds, > 0)\n", optarg);
                return -1;
            }
            break;
        }
        case O_VERIFY: b->verify = 1; break;
        case O_SPAN:
            if (tool_parse_size(optarg, "--span", 0, &b->span) < 0)
                return -1;
            break;
        case O_LAYERS:
            if (tool_parse_uint(optarg, "--layers", 1, 4096, &v) < 0)
                return -1;
            b->layers = (unsigned)v;
            break;
        case O_SLICE:
            if (tool_parse_size(optarg, "--slice", 0, &b->slice) < 0)
                return -1;
            break;
        case O_WARMUP:
            if (tool_parse_uint(optarg, "--warmup", 0, 1000000, &v) < 0)
                return -1;
            b->warmup = v;
            break;
        case O_RAIL_DEPTH:
            if (tool_parse_uint(optarg, "--rail-depth", 1, 65536, &v) < 0)
                return -1;
            b->rail_depth = (unsigned)v;
            break;
        case O_TRANSPORT:
            if (tool_parse_transport(optarg, &b->transport) < 0)
                return -1;
            break;
        case O_LOCAL:
        case O_DEVICE:
            if ((c == O_LOCAL ? b->n_local : b->n_dev) == RAILWIRE_MAX_RAILS * 4) {
                fprintf(stderr, "error: too many --local-addr/--device\n");
                return -1;
            }
            if (c == O_LOCAL)
                b->local[b->n_local++] = optarg;
            else
                b->dev[b->n_dev++] = optarg;
            break;
        case O_NEAR: {
            struct rw_near n;
            if (!*optarg || rw_near_parse(optarg, &n) < 0) {
                fprintf(stderr, "error: --near '%s': give cuda:N (a GPU), numa:N (a NUMA node) "
                                "or auto\n", optarg);
                return -1;
            }
            b->near = optarg;
            break;
        }
        case O_CTIMEOUT:
        case O_OTIMEOUT:
            if (tool_parse_uint(optarg, c == O_CTIMEOUT ? "--connect-timeout" : "--op-timeout", 1,
                                3600000, &v) < 0)
                return -1;
            if (c == O_CTIMEOUT)
                b->connect_timeout = (int)v;
            else
                b->op_timeout = (int)v;
            break;
        case O_JSON: b->json = 1; break;
        case O_METRICS_DUMP: b->metrics_dump = 1; break;
        case O_NO_HEAL: b->no_heal = 1; break;
        case O_COPY_READS:
            b->copy_reads = 1;
            break;
        case O_BUSY_POLL:
            if (tool_parse_busy_poll(optarg, "--busy-poll-us", &b->busy_poll_us) < 0)
                return -1;
            break;
        case O_IOTIMEOUT:
            if (tool_parse_uint(optarg, "--io-timeout", 1, 3600000, &v) < 0)
                return -1;
            b->io_timeout = (int)v;
            break;
        case O_ALL_DOWN:
            if (tool_parse_uint(optarg, "--all-down-timeout", 1, 3600000, &v) < 0)
                return -1;
            b->all_down_timeout = (int)v;
            break;
        case 'P': b->plot = optarg; break;
        case O_QUIET: b->quiet = 1; break;
        case TLS_O_CERT: case TLS_O_KEY: case TLS_O_CA: case TLS_O_PSK:
        case TLS_O_PSK_IDENTITY: case TLS_O_SERVER_NAME:
            tls_cli_take(&b->tls, c, optarg);
            break;
        case 'v': b->verbose = 1; break;
        case 'h':
            fputs(bench_usage, stdout);
            return 1;
        default:
            fprintf(stderr, "run `railwire bench --help` for the options\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (b->have_connect == b->loopback) {
        fprintf(stderr, "error: give exactly one of --connect HOST:PORT and --loopback\n");
        return -1;
    }
    if (b->metrics_dump && b->json) {
        fprintf(stderr, "error: --metrics-dump and --json both write stdout; give one of them\n");
        return -1;
    }
    if (!b->have_dialect)
        b->dialect = b->opcode == RAILWIRE_OP_WRITE ? RAILWIRE_DIALECT_RW : RAILWIRE_DIALECT_RO;
    if (b->dialect == RAILWIRE_DIALECT_RO && b->rails > RAILWIRE_MAX_RO_RAILS) {
        fprintf(stderr, "error: --rails %u: the RO dialect carries at most %d rails (its wire "
                        "framing); use --dialect rw for up to %d\n", b->rails,
                RAILWIRE_MAX_RO_RAILS, RAILWIRE_MAX_RAILS);
        return -1;
    }
    if (!b->iters && !b->seconds)
        b->iters = 1000;
    return 0;
}

/* Prints the railset's metrics text on stdout.  Returns 0 or -1 (message
 * on stderr). */
static int dump_metrics(const railwire_railset *rs)
{
    char *buf = NULL;
    size_t cap = 0;
    for (int tries = 0; tries < 4; tries++) {
        ssize_t need = railwire_railset_metrics(rs, buf, cap);
        if (need < 0) {
            fprintf(stderr, "error: --metrics-dump: %s\n", railwire_strerror((int)need));
            break;
        }
        if ((size_t)need < cap) {
            fputs(buf, stdout);
            free(buf);
            return 0;
        }
        cap = (size_t)need + 1024;
        char *nb = realloc(buf, cap);
        if (!nb) {
            fprintf(stderr, "error: --metrics-dump: out of memory\n");
            break;
        }
        buf = nb;
    }
    free(buf);
    return -1;
}

int cmd_bench(int argc, char **argv)
{
    struct bench_opts b;
    struct bench_loopback lb;
    struct bench_summary *sum = NULL;
    struct bench_run run;
    railwire_railset_opts o;
    railwire_railset *rs = NULL;
    const char *local_addrs[RAILWIRE_MAX_RAILS], *devices[RAILWIRE_MAX_RAILS];
    char target[300];
    uint64_t sizes[BENCH_MAX_SIZES], max_size, t0;
    unsigned n_sizes = 0;
    int rc, exit_code = 1;

    memset(&lb, 0, sizeof(lb));
    memset(&run, 0, sizeof(run));
    rc = parse_args(argc, argv, &b);
    if (rc)
        return rc > 0 ? 0 : 2;

    railwire_log_set_sink(tool_log_sink, stderr);
    if (b.verbose)
        railwire_log_set_level(RAILWIRE_LOG_DEBUG);
    else
        tool_log_level_default(RAILWIRE_LOG_WARN);
    if (tls_cli_check(&b.tls, 0))
        return 2; /* files that cannot be used: a usage error, said why */
    signal(SIGPIPE, SIG_IGN);

    if (b.sweep)
        for (uint64_t s = BENCH_SWEEP_MIN; s <= BENCH_SWEEP_MAX; s *= 2)
            sizes[n_sizes++] = s;
    else
        sizes[n_sizes++] = b.size;
    max_size = sizes[n_sizes - 1];

    sum = calloc(1, sizeof(*sum));
    if (!sum) {
        fprintf(stderr, "error: out of memory\n");
        goto out;
    }
    /* The client buffer: depth slots of the largest size, bounded. */
    {
        uint64_t slots = (uint64_t)b.depth * max_size;
        if (slots > BENCH_BUF_CAP)
            slots = BENCH_BUF_CAP;
        if (slots < max_size)
            slots = max_size;
        slots -= slots % max_size;
        run.buf_len = (size_t)(b.verify && b.opcode == RAILWIRE_OP_WRITE ? 2 * slots : slots);
    }

    if (b.loopback) {
        unsigned n_layers = b.layers ? b.layers : 2;
        uint64_t per_layer = b.span;
        if (!per_layer) {
            unsigned slots = (b.depth + n_layers - 1) / n_layers;
            per_layer = (uint64_t)slots * max_size;
            if (per_layer * n_layers > BENCH_BUF_CAP)
                per_layer = BENCH_BUF_CAP / n_layers;
            if (per_layer < max_size)
                per_layer = max_size;
        }
        if (b.dialect == RAILWIRE_DIALECT_RW && !b.span) {
            per_layer = (uint64_t)b.depth * max_size;
            if (per_layer > BENCH_BUF_CAP)
                per_layer = BENCH_BUF_CAP;
            if (per_layer < max_size)
                per_layer = max_size;
        }
        if (bench_loopback_start(&lb, b.dialect, b.transport, n_layers, (size_t)per_layer,
                                 b.busy_poll_us, !b.copy_reads, b.loopback ? tls_cli_opts(&b.tls) : NULL) < 0)
            goto out;
        snprintf(b.host, sizeof(b.host), "127.0.0.1");
        snprintf(b.port, sizeof(b.port), "%u", lb.port);
        b.span = per_layer;
        sum->server_reg_ms = lb.create_ms;
    }
    tool_format_hostport(target, sizeof(target), b.host, (unsigned)strtoul(b.port, NULL, 10));

    railwire_railset_opts_init(&o);
    o.dialect = b.dialect;
    o.transport = b.transport;
    o.n_rails = b.rails;
    for (unsigned i = 0; i < b.rails; i++) {
        local_addrs[i] = b.n_local ? b.local[i % b.n_local] : NULL;
        devices[i] = b.n_dev ? b.dev[i % b.n_dev] : NULL;
    }
    if (b.n_local) {
        o.local_addrs = local_addrs;
        o.n_local_addrs = b.rails;
    }
    if (b.n_dev) {
        o.devices = devices;
        o.n_devices = b.rails;
    }
    o.near = b.near;
    o.slice_size = (size_t)b.slice;
    if (b.rail_depth)
        o.queue_depth = b.rail_depth;
    if (b.connect_timeout)
        o.connect_timeout_ms = b.connect_timeout;
    if (b.op_timeout)
        o.op_timeout_ms = b.op_timeout;
    if (b.io_timeout)
        o.io_timeout_ms = b.io_timeout;
    if (b.no_heal)
        o.heal = 0;
    if (b.all_down_timeout)
        o.all_down_timeout_ms = b.all_down_timeout;
    o.busy_poll_us = b.busy_poll_us;
    o.tls = tls_cli_opts(&b.tls);

    t0 = tool_now_ns();
    rc = railwire_railset_connect(b.host, b.port, &o, &rs);
    sum->connect_ms = (double)(tool_now_ns() - t0) / 1e6;
    if (rc < 0) {
        fprintf(stderr, "error: connect to %s (%s, %u rail%s): %s: %s\n", target,
                b.dialect == RAILWIRE_DIALECT_RO ? "ro" : "rw", b.rails, b.rails == 1 ? "" : "s",
                railwire_error_class(rc), railwire_strerror(rc));
        rs = NULL;
        goto out;
    }

    run.buf = tool_buf_alloc(run.buf_len);
    if (!run.buf) {
        fprintf(stderr, "error: cannot allocate %zu bytes of buffers\n", run.buf_len);
        goto out;
    }
    t0 = tool_now_ns();
    rc = railwire_mr_register(rs, run.buf, run.buf_len, &run.mr);
    sum->reg_ms = (double)(tool_now_ns() - t0) / 1e6;
    sum->reg_bytes = run.buf_len;
    if (rc < 0) {
        fprintf(stderr, "error: registering %zu bytes: %s: %s\n", run.buf_len,
                railwire_error_class(rc), railwire_strerror(rc));
        goto out;
    }

    run.rs = rs;
    run.opcode = b.opcode;
    run.depth = b.depth;
    run.verify = b.verify;
    run.n_layers = b.dialect == RAILWIRE_DIALECT_RO ? railwire_railset_layer_count(rs) : 1;
    if (b.layers && b.layers < run.n_layers)
        run.n_layers = b.layers;
    if (!run.n_layers)
        run.n_layers = 1;
    run.span = b.span;
    run.progress = !b.quiet;
    run.stall_ms = 60000;
    if (b.op_timeout && 3 * b.op_timeout > run.stall_ms)
        run.stall_ms = 3 * b.op_timeout;
    if (b.all_down_timeout && 2 * b.all_down_timeout > run.stall_ms)
        run.stall_ms = 2 * b.all_down_timeout;

    sum->transport = railwire_railset_transport(rs);
    sum->dialect = b.dialect == RAILWIRE_DIALECT_RO ? "ro" : "rw";
    sum->op = b.opcode == RAILWIRE_OP_READ ? "read" : "write";
    sum->target = target;
    sum->loopback = b.loopback;
    sum->rails = railwire_railset_rail_count(rs);
    sum->depth = b.depth;
    sum->slice = b.slice;
    sum->warmup = b.warmup;
    if (!b.json && !b.quiet)
        fprintf(stderr, "connected to %s: transport %s, %u rail%s, connect %.2f ms, registration %.3f ms\n",
                target, sum->transport, sum->rails, sum->rails == 1 ? "" : "s", sum->connect_ms,
                sum->reg_ms);

    for (unsigned i = 0; i < n_sizes; i++) {
        double secs = b.seconds;
        if (b.sweep && !secs)
            secs = BENCH_SWEEP_SECONDS;
        if (b.warmup) {
            struct bench_result discard;
            rc = bench_run_size(&run, sizes[i], b.warmup, 0, &discard);
            if (rc < 0)
                break;
        }
        rc = bench_run_size(&run, sizes[i], b.iters, secs, &sum->results[sum->n_results++]);
        if (rc < 0)
            break;
    }
    sum->n_rail = (unsigned)railwire_railset_stats(rs, sum->rail, RAILWIRE_MAX_RAILS, sizeof(*sum->rail));
    sum->verify = !b.verify ? "off" : run.mismatch ? "mismatch" : "ok";
    sum->failed = run.failed;
    snprintf(sum->first_error, sizeof(sum->first_error), "%s", run.first_error);
    if (b.json)
        bench_report_json(stdout, sum);
    else
        bench_report_table(stdout, sum);
    exit_code = (rc < 0 || run.failed || run.mismatch) ? 1 : 0;
    if (b.metrics_dump && dump_metrics(rs) < 0)
        exit_code = 1;
    fflush(stdout);
    if (b.plot && bench_plot_png(b.plot, sum) < 0)
        exit_code = 1;
out:
    railwire_railset_close(rs); /* also releases run.mr */
    if (run.buf)
        munmap(run.buf, run.buf_len);
    bench_lat_free(&run.lat);
    bench_loopback_stop(&lb);
    free(sum);
    railwire_log_set_sink(NULL, NULL);
    return exit_code;
}
