/* SPDX-License-Identifier: MIT */
/* `railwire serve`: publish read-only layers (files mapped read-only, one
 * layer each) or one read-write arena (anonymous memory) on a listening
 * address until SIGINT or SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <railwire.h>

#include "bench_pattern.h"
#include "bench_util.h"
#include "commands.h"
#include "tls_cli.h"
#include "metrics_http.h"
#include "serve_cuda.h"

#define SERVE_MAX_ADDRS 64
#define SERVE_MAX_LISTEN 16
#define SERVE_MAX_ALLOW 256

static const char serve_usage[] =
    "usage: railwire serve --dialect ro --listen HOST:PORT --layer FILE [--layer FILE ...] [OPTIONS]\n"
    "       railwire serve --dialect rw --listen HOST:PORT --arena SIZE [OPTIONS]\n"
    "\n"
    "Publish memory to railwire clients until SIGINT or SIGTERM.  RO: each FILE is\n"
    "mapped read-only and published as one layer (layer i = the i-th --layer).\n"
    "RW: one arena of SIZE bytes of anonymous memory (zeroed) that clients may\n"
    "READ and WRITE.  HOST may be an IPv6 literal in brackets ([::1]:7000); PORT 0\n"
    "picks a free port.  Prints \"listening on HOST:PORT\" once ready, then logs\n"
    "every session (peer, rails, why rejected) with timestamps on stderr.\n"
    "\n"
    "options:\n"
    "  --dialect ro|rw        handshake dialect of the port (required)\n"
    "  --listen HOST:PORT     control address (required; repeatable, one per NIC, all\n"
    "                         on one port, so a client that lost one path reaches\n"
    "                         the server through another; 0.0.0.0 or [::] takes\n"
    "                         every address)\n"
    "  --layer FILE           RO: a layer (repeatable, 1..4096, non-empty files)\n"
    "  --arena SIZE           RW: arena size, e.g. 64M, 1G (K/M/G/T suffixes)\n"
    "  --fill                 RW: fill the arena with the bench pattern (seed 0) so\n"
    "                         `railwire bench --read --verify` can check it\n"
    "  --cuda N               RW: allocate the arena in the memory of CUDA device N\n"
    "                         (cuMemAlloc through the driver loaded at run time:\n"
    "                         libcuda.so.1, or the file RAILWIRE_CUDA_LIBRARY names)\n"
    "                         and publish it as CUDA memory: verbs registers it as\n"
    "                         a DMA-BUF, else through nvidia-peermem; tcp stages it\n"
    "                         through pinned host memory (see docs/gpu.md).  --fill\n"
    "                         copies the pattern in through the driver\n"
    "  --staging SIZE         tcp with --cuda: the most pinned host memory used to\n"
    "                         stage payloads (default 64M, at least 16K); when it is\n"
    "                         all in use, requests wait for it\n"
    "  --rail-addr ADDR       tcp: address a rail listener binds to (repeatable;\n"
    "                         rail i uses the (i mod n)-th; default: HOST)\n"
    "  --transport T          tcp, verbs or auto (default auto: verbs if an active\n"
    "                         RDMA port exists, else tcp)\n"
    "  --device DEV[:PORT]    verbs: device of the rails (repeatable)\n"
    "  --gid-index N          verbs: GID index (default: choose)\n"
    "  --max-rails N          cap: rails per client (default 255, the RW wire's\n"
    "                         limit; RO clients ask for at most 8)\n"
    "  --max-clients N        cap: concurrent sessions (default 64)\n"
    "  --max-bytes SIZE       cap: bytes published (RO: all layers, RW: the arena)\n"
    "  --io-timeout MS        per handshake step (default 10000); also how long a\n"
    "                         rail may take to attach after the ack (rails that have\n"
    "                         not attached by then are released)\n"
    "  --session-linger MS    after a session's control connection ends, keep its\n"
    "                         rails until they are all closed (tcp) or this long\n"
    "                         has passed (default 30000; 0 = release at once)\n"
    "  --max-sessions-per-peer N\n"
    "                         cap per client IP address: sessions (lingering and\n"
    "                         in-handshake ones included) and connections still\n"
    "                         in their handshake (default 16; 0 = no cap)\n"
    "  --max-pending N        connections still in their handshake, server-wide;\n"
    "                         when full the oldest is closed (default 256)\n"
    "  --first-byte-timeout MS\n"
    "                         a new connection must send its request byte within\n"
    "                         this long (default 2000, at most --io-timeout)\n"
    "  --allow CIDR           only peers in this block may connect (repeatable;\n"
    "                         IPv4 or IPv6, e.g. 10.0.0.0/8, fd00::/8, 192.0.2.7;\n"
    "                         default: everyone); others are closed at accept.\n"
    "                         Any client that reaches the port can read every\n"
    "                         published byte (and write an RW arena): allow only\n"
    "                         your fleet (see docs/security.md)\n"
    "  --tls-cert FILE --tls-key FILE --tls-ca FILE\n"
    "                         TLS 1.3 with mutual certificates (PEM): the control\n"
    "                         connection and every tcp rail are encrypted; clients\n"
    "                         need a certificate that chains to FILE of --tls-ca\n"
    "  --tls-psk FILE         TLS 1.3 with pre-shared keys: IDENTITY:HEXKEY lines\n"
    "                         (keys of 32 to 48 bytes; the file must not be\n"
    "                         readable by group or others); every identity in it\n"
    "                         is accepted.  May be combined with certificates\n"
    "  --tls-allow NAME       with TLS: only clients whose certificate CN or DNS SAN,\n"
    "                         or PSK identity, is NAME (or matches *.suffix) get a\n"
    "                         session (repeatable; default: every authenticated\n"
    "                         client).  SIGHUP reads the TLS files again: new\n"
    "                         sessions use them, established ones keep running;\n"
    "                         a reload that fails keeps the old ones and logs why\n"
    "  --metrics HOST:PORT    serve Prometheus metrics on http://HOST:PORT/metrics\n"
    "                         (a port of its own, off by default; GET only, small\n"
    "                         requests, 5 s per connection, 8 connections at once;\n"
    "                         every metric is in docs/metrics.md).  verbs READ and\n"
    "                         WRITE never reach the server's CPU: no byte counters\n"
    "                         there\n"
    "  --busy-poll-us US      tcp: how long an event-loop thread that just served\n"
    "                         requests keeps polling before it sleeps, so an\n"
    "                         active client's next request is not delayed by a\n"
    "                         wake-up (0..1000000, 0 = sleep at once; default 50;\n"
    "                         an idle server sleeps)\n"
    "  --copy-reads           tcp: copy every READ answer into the socket.  By\n"
    "                         default answers of 128 KiB or more are handed to it\n"
    "                         by reference to the arena or layers, which this\n"
    "                         command maps until it exits (zero_copy_reads,\n"
    "                         docs/tcp-transport.md)\n"
    "  -v, --verbose          debug logging (RAILWIRE_LOG=... also works)\n"
    "  -h, --help             this text\n"
    "\n"
    "exit status: 0 after a clean stop, 1 if the server could not start, 2 on a\n"
    "usage error (TLS files that cannot be used included: a key that does not\n"
    "match its certificate, a PSK file readable by group or others).\n";

struct serve_layer {
    void *addr;
    size_t len;
};

static int map_layer(const char *path, struct serve_layer *out)
{
    struct stat st;
    void *p;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        fprintf(stderr, "error: layer '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        fprintf(stderr, "error: layer '%s': fstat: %s\n", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "error: layer '%s' is not a regular file\n", path);
        goto fail;
    }
    if (st.st_size == 0) {
        fprintf(stderr, "error: layer '%s' is empty (a layer must hold at least one byte)\n", path);
        goto fail;
    }
    /* MAP_PRIVATE: ibv_reg_mr refuses (EFAULT) a read-only MAP_SHARED file
     * mapping on Linux 6.1; a private read-only mapping registers fine and
     * is the same bytes (nothing writes to it). */
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "error: layer '%s': mmap of %lld bytes: %s\n", path, (long long)st.st_size,
                strerror(errno));
        goto fail;
    }
    close(fd);
    out->addr = p;
    out->len = (size_t)st.st_size;
    return 0;
fail:
    close(fd);
    return -1;
}

static ssize_t render_metrics(void *arg, char *buf, size_t size)
{
    return railwire_server_metrics(arg, buf, size);
}

int cmd_serve(int argc, char **argv)
{
    enum { O_DIALECT = 256, O_LISTEN, O_LAYER, O_ARENA, O_FILL, O_RAIL_ADDR, O_TRANSPORT,
           O_DEVICE, O_GID, O_MAX_RAILS, O_MAX_CLIENTS, O_MAX_BYTES, O_IO_TIMEOUT, O_LINGER,
           O_PER_PEER, O_MAX_PENDING, O_FIRST_BYTE, O_ALLOW, O_METRICS, O_BUSY_POLL,
           O_TLS_ALLOW, O_CUDA, O_STAGING, O_COPY_READS };
    static const struct option longopts[] = {
        {"dialect", required_argument, NULL, O_DIALECT},
        {"listen", required_argument, NULL, O_LISTEN},
        {"layer", required_argument, NULL, O_LAYER},
        {"arena", required_argument, NULL, O_ARENA},
        {"fill", no_argument, NULL, O_FILL},
        {"cuda", required_argument, NULL, O_CUDA},
        {"staging", required_argument, NULL, O_STAGING},
        {"rail-addr", required_argument, NULL, O_RAIL_ADDR},
        {"transport", required_argument, NULL, O_TRANSPORT},
        {"device", required_argument, NULL, O_DEVICE},
        {"gid-index", required_argument, NULL, O_GID},
        {"max-rails", required_argument, NULL, O_MAX_RAILS},
        {"max-clients", required_argument, NULL, O_MAX_CLIENTS},
        {"max-bytes", required_argument, NULL, O_MAX_BYTES},
        {"io-timeout", required_argument, NULL, O_IO_TIMEOUT},
        {"session-linger", required_argument, NULL, O_LINGER},
        {"max-sessions-per-peer", required_argument, NULL, O_PER_PEER},
        {"max-pending", required_argument, NULL, O_MAX_PENDING},
        {"first-byte-timeout", required_argument, NULL, O_FIRST_BYTE},
        {"allow", required_argument, NULL, O_ALLOW},
        {"metrics", required_argument, NULL, O_METRICS},
        {"busy-poll-us", required_argument, NULL, O_BUSY_POLL},
        {"copy-reads", no_argument, NULL, O_COPY_READS},
        {"tls-cert", required_argument, NULL, TLS_O_CERT},
        {"tls-key", required_argument, NULL, TLS_O_KEY},
        {"tls-ca", required_argument, NULL, TLS_O_CA},
        {"tls-psk", required_argument, NULL, TLS_O_PSK},
        {"tls-allow", required_argument, NULL, O_TLS_ALLOW},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    railwire_server_opts o;
    railwire_server *srv = NULL;
    const char *layer_paths[4096];
    unsigned n_layer_paths = 0;
    const char *rail_addrs[SERVE_MAX_ADDRS], *devices[SERVE_MAX_ADDRS];
    unsigned n_rail_addrs = 0, n_devices = 0;
    struct serve_layer *layers = NULL;
    railwire_region *regions = NULL;
    unsigned n_mapped = 0;
    void *arena = NULL;
    uint64_t arena_size = 0, max_bytes = 0, total = 0, staging = 0;
    int copy_reads = 0;
    int cuda_dev = -1;
    railwire_mem arena_mem;
    int have_dialect = 0, fill = 0, verbose = 0, rc = 2, c;
    char hosts[SERVE_MAX_LISTEN][256], port[16] = "", where[300], sz[32];
    const char *host_ptrs[SERVE_MAX_LISTEN];
    unsigned n_hosts = 0;
    const char *allow[SERVE_MAX_ALLOW];
    unsigned n_allow = 0;
    const char *tls_allow[SERVE_MAX_ALLOW];
    unsigned n_tls_allow = 0;
    struct tls_cli tls;
    unsigned long v;
    char metrics_host[256], metrics_port[16];
    int have_metrics = 0;
    struct metrics_http *metrics = NULL;
    sigset_t sigs;
    int sig;

    railwire_server_opts_init(&o);
    tls_cli_init(&tls);
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (c) {
        case O_DIALECT:
            if (tool_parse_dialect(optarg, &o.dialect) < 0)
                return 2;
            have_dialect = 1;
            break;
        case O_LISTEN: {
            char p[16];
            if (n_hosts == SERVE_MAX_LISTEN) {
                fprintf(stderr, "error: at most %d --listen addresses\n", SERVE_MAX_LISTEN);
                return 2;
            }
            if (tool_parse_hostport(optarg, "listen address", hosts[n_hosts], sizeof(hosts[0]), p,
                                    sizeof(p)) < 0)
                return 2;
            if (n_hosts && strcmp(p, port) && strcmp(p, "0")) {
                fprintf(stderr, "error: --listen %s: every --listen must use the port of the "
                                "first (%s), so clients reach the server through any address "
                                "with one port (or give port 0 for \"the same\")\n", optarg, port);
                return 2;
            }
            if (!n_hosts)
                snprintf(port, sizeof(port), "%s", p);
            host_ptrs[n_hosts] = hosts[n_hosts];
            n_hosts++;
            break;
        }
        case O_LAYER:
            if (n_layer_paths == 4096) {
                fprintf(stderr, "error: at most 4096 layers\n");
                return 2;
            }
            layer_paths[n_layer_paths++] = optarg;
            break;
        case O_ARENA:
            if (tool_parse_size(optarg, "arena size", 0, &arena_size) < 0)
                return 2;
            if (arena_size > SIZE_MAX / 2) {
                fprintf(stderr, "error: arena size '%s' is too large\n", optarg);
                return 2;
            }
            break;
        case O_FILL:
            fill = 1;
            break;
        case O_CUDA:
            if (tool_parse_uint(optarg, "--cuda", 0, 1023, &v) < 0)
                return 2;
            cuda_dev = (int)v;
            break;
        case O_STAGING:
            if (tool_parse_size(optarg, "--staging", 0, &staging) < 0)
                return 2;
            break;
        case O_RAIL_ADDR:
        case O_DEVICE:
            if ((c == O_RAIL_ADDR ? n_rail_addrs : n_devices) == SERVE_MAX_ADDRS) {
                fprintf(stderr, "error: at most %d --rail-addr/--device\n", SERVE_MAX_ADDRS);
                return 2;
            }
            if (c == O_RAIL_ADDR)
                rail_addrs[n_rail_addrs++] = optarg;
            else
                devices[n_devices++] = optarg;
            break;
        case O_TRANSPORT:
            if (tool_parse_transport(optarg, &o.transport) < 0)
                return 2;
            break;
        case O_GID:
            if (tool_parse_uint(optarg, "gid index", 0, 255, &v) < 0)
                return 2;
            o.gid_index = (int)v;
            break;
        case O_MAX_RAILS:
            if (tool_parse_uint(optarg, "--max-rails", 1, 255, &v) < 0)
                return 2;
            o.max_rails_per_client = (unsigned)v;
            break;
        case O_MAX_CLIENTS:
            if (tool_parse_uint(optarg, "--max-clients", 1, 1000000, &v) < 0)
                return 2;
            o.max_clients = (unsigned)v;
            break;
        case O_MAX_BYTES:
            if (tool_parse_size(optarg, "--max-bytes", 0, &max_bytes) < 0)
                return 2;
            o.max_bytes = max_bytes;
            break;
        case O_IO_TIMEOUT:
            if (tool_parse_uint(optarg, "--io-timeout", 1, 3600000, &v) < 0)
                return 2;
            o.io_timeout_ms = (int)v;
            break;
        case O_LINGER:
            if (tool_parse_uint(optarg, "--session-linger", 0, 86400000, &v) < 0)
                return 2;
            o.session_linger_ms = (int)v;
            break;
        case O_PER_PEER:
            if (tool_parse_uint(optarg, "--max-sessions-per-peer", 0, 1000000, &v) < 0)
                return 2;
            o.max_sessions_per_peer = (unsigned)v;
            break;
        case O_MAX_PENDING:
            if (tool_parse_uint(optarg, "--max-pending", 1, 1000000, &v) < 0)
                return 2;
            o.max_pending = (unsigned)v;
            break;
        case O_FIRST_BYTE:
            if (tool_parse_uint(optarg, "--first-byte-timeout", 1, 3600000, &v) < 0)
                return 2;
            o.first_byte_timeout_ms = (int)v;
            break;
        case O_COPY_READS:
            copy_reads = 1;
            break;
        case O_BUSY_POLL:
            if (tool_parse_busy_poll(optarg, "--busy-poll-us", &o.busy_poll_us) < 0)
                return 2;
            break;
        case O_ALLOW:
            if (n_allow == SERVE_MAX_ALLOW) {
                fprintf(stderr, "error: at most %d --allow blocks\n", SERVE_MAX_ALLOW);
                return 2;
            }
            allow[n_allow++] = optarg;
            break;
        case O_TLS_ALLOW:
            if (n_tls_allow == SERVE_MAX_ALLOW) {
                fprintf(stderr, "error: at most %d --tls-allow names\n", SERVE_MAX_ALLOW);
                return 2;
            }
            tls_allow[n_tls_allow++] = optarg;
            break;
        case TLS_O_CERT:
        case TLS_O_KEY:
        case TLS_O_CA:
        case TLS_O_PSK:
            tls_cli_take(&tls, c, optarg);
            break;
        case O_METRICS:
            if (tool_parse_hostport(optarg, "--metrics address", metrics_host,
                                    sizeof(metrics_host), metrics_port, sizeof(metrics_port)) < 0)
                return 2;
            have_metrics = 1;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'h':
            fputs(serve_usage, stdout);
            return 0;
        default:
            fprintf(stderr, "run `railwire serve --help` for the options\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (n_tls_allow && !tls.any) {
        fprintf(stderr, "error: --tls-allow needs TLS (--tls-cert/--tls-key/--tls-ca or "
                        "--tls-psk)\n");
        return 2;
    }
    if (!have_dialect || !n_hosts) {
        fprintf(stderr, "error: --dialect and --listen are required\n%s", serve_usage);
        return 2;
    }
    if (o.dialect == RAILWIRE_DIALECT_RO && (!n_layer_paths || arena_size || fill)) {
        fprintf(stderr, "error: --dialect ro takes one or more --layer FILE (and no --arena/--fill)\n");
        return 2;
    }
    if (o.dialect == RAILWIRE_DIALECT_RW && (!arena_size || n_layer_paths)) {
        fprintf(stderr, "error: --dialect rw takes --arena SIZE (and no --layer)\n");
        return 2;
    }
    if ((cuda_dev >= 0 || staging) && o.dialect != RAILWIRE_DIALECT_RW) {
        fprintf(stderr, "error: --cuda and --staging are for --dialect rw (the arena)\n");
        return 2;
    }
    o.staging_bytes = (size_t)staging;
    /* The arena and the layers stay mapped until the process exits, and
     * nothing but clients' WRITEs is written into them. */
    o.zero_copy_reads = !copy_reads;

    railwire_log_set_sink(tool_log_sink, stderr);
    if (verbose)
        railwire_log_set_level(RAILWIRE_LOG_DEBUG);
    else
        tool_log_level_default(RAILWIRE_LOG_INFO);
    /* Credentials that cannot be used are a usage error, found before any
     * memory is mapped. */
    rc = tls_cli_check(&tls, 1);
    if (rc)
        goto out;

    rc = 1;
    if (o.dialect == RAILWIRE_DIALECT_RO) {
        layers = calloc(n_layer_paths, sizeof(*layers));
        regions = calloc(n_layer_paths, sizeof(*regions));
        if (!layers || !regions) {
            fprintf(stderr, "error: out of memory\n");
            goto out;
        }
        for (; n_mapped < n_layer_paths; n_mapped++) {
            if (map_layer(layer_paths[n_mapped], &layers[n_mapped]) < 0)
                goto out;
            regions[n_mapped].addr = layers[n_mapped].addr;
            regions[n_mapped].len = layers[n_mapped].len;
            total += layers[n_mapped].len;
        }
        o.layers = regions;
        o.n_layers = n_layer_paths;
    } else if (cuda_dev >= 0) {
        if (serve_cuda_arena(cuda_dev, (size_t)arena_size, fill, &arena) < 0)
            goto out;
        railwire_mem_init(&arena_mem);
        arena_mem.kind = RAILWIRE_MEM_CUDA;
        arena_mem.addr = arena;
        arena_mem.len = (size_t)arena_size;
        arena_mem.device = cuda_dev;
        o.arena_mem = &arena_mem;
        total = arena_size;
    } else {
        arena = mmap(NULL, (size_t)arena_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED) {
            arena = NULL;
            fprintf(stderr, "error: cannot allocate an arena of %llu bytes: %s\n",
                    (unsigned long long)arena_size, strerror(errno));
            goto out;
        }
        /* Huge pages where THP runs in `madvise` mode: a client with many
         * large transfers in flight walks a large part of the arena (see
         * tool_buf_alloc).  Advice only. */
        (void)madvise(arena, (size_t)arena_size, MADV_HUGEPAGE);
        if (fill)
            bench_pattern_fill(arena, (size_t)arena_size, 0, 0, 0);
        o.arena.addr = arena;
        o.arena.len = (size_t)arena_size;
        total = arena_size;
    }
    o.listen_host = hosts[0];
    o.listen_hosts = host_ptrs;
    o.n_listen_hosts = n_hosts;
    o.listen_port = port;
    o.rail_addrs = n_rail_addrs ? rail_addrs : NULL;
    o.n_rail_addrs = n_rail_addrs;
    o.devices = n_devices ? devices : NULL;
    o.n_devices = n_devices;
    o.allow = n_allow ? allow : NULL;
    o.n_allow = n_allow;
    o.tls = tls_cli_opts(&tls);
    o.tls_allow = n_tls_allow ? tls_allow : NULL;
    o.n_tls_allow = n_tls_allow;

    /* Block the stop signals before the server starts its threads so they
     * inherit the mask and only sigwait() below receives them. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    /* The metrics port is bound first: a port in use fails before the
     * memory is registered. */
    if (have_metrics && metrics_http_listen(metrics_host, metrics_port, &metrics) < 0)
        goto out;
    c = railwire_server_create(&o, &srv);
    if (c < 0) {
        fprintf(stderr, "error: cannot start the server on %s:%s: %s: %s\n", hosts[0], port,
                railwire_error_class(c), railwire_strerror(c));
        goto out;
    }
    tool_format_hostport(where, sizeof(where), hosts[0], railwire_server_port(srv));
    tool_format_size(sz, sizeof(sz), total);
    if (o.dialect == RAILWIRE_DIALECT_RO)
        printf("listening on %s (dialect ro, %u layer%s, %s)\n", where, n_mapped,
               n_mapped == 1 ? "" : "s", sz);
    else
        printf("listening on %s (dialect rw, arena %s%s%s)\n", where, sz,
               cuda_dev >= 0 ? " of CUDA memory" : "", fill ? ", pattern-filled" : "");
    for (unsigned i = 1; i < n_hosts; i++) {
        tool_format_hostport(where, sizeof(where), hosts[i], railwire_server_port(srv));
        printf("also listening on %s\n", where);
    }
    if (metrics) {
        if (metrics_http_start(metrics, render_metrics, srv) < 0)
            goto out;
        tool_format_hostport(where, sizeof(where), metrics_host, metrics_http_port(metrics));
        printf("metrics on http://%s/metrics\n", where);
    }
    fflush(stdout);

    for (;;) {
        if (sigwait(&sigs, &sig) != 0)
            continue;
        if (sig != SIGHUP)
            break;
        /* Reload: the library logs the outcome (and why a failure kept
         * the old credentials). */
        if (o.tls)
            railwire_server_reload_tls(srv);
        else
            tool_log_sink(RAILWIRE_LOG_INFO, "railwire serve: SIGHUP: no TLS to reload", stderr);
    }
    {
        /* Through the log sink, so it is a log line in either format. */
        char msg[128];
        snprintf(msg, sizeof(msg), "railwire serve: %s received, stopping (%u live session%s)",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", railwire_server_sessions(srv),
                 railwire_server_sessions(srv) == 1 ? "" : "s");
        tool_log_sink(RAILWIRE_LOG_INFO, msg, stderr);
    }
    /* The listener reads the server: it stops first. */
    metrics_http_stop(metrics);
    metrics = NULL;
    railwire_server_destroy(srv);
    srv = NULL;
    rc = 0;
out:
    metrics_http_stop(metrics);
    railwire_server_destroy(srv);
    for (unsigned i = 0; i < n_mapped; i++)
        munmap(layers[i].addr, layers[i].len);
    free(layers);
    free(regions);
    if (arena && cuda_dev >= 0)
        serve_cuda_free(cuda_dev, arena);
    else if (arena)
        munmap(arena, (size_t)arena_size);
    railwire_log_set_sink(NULL, NULL);
    return rc;
}
