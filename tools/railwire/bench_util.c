/* SPDX-License-Identifier: MIT */
#include "bench_util.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log_json.h"

int tool_parse_size(const char *s, const char *what, int allow_zero, uint64_t *out)
{
    char *end;
    unsigned long long v;
    uint64_t mul = 1;

    if (!s || !*s || !isdigit((unsigned char)*s))
        goto bad;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        goto bad;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        goto bad;
    if (v > UINT64_MAX / mul) {
        fprintf(stderr, "error: %s '%s' is too large\n", what, s);
        return -1;
    }
    if (v == 0 && !allow_zero) {
        fprintf(stderr, "error: %s must not be 0\n", what);
        return -1;
    }
    *out = (uint64_t)v * mul;
    return 0;
bad:
    fprintf(stderr, "error: bad %s '%s' (expected a number with an optional K, M, G or T suffix)\n",
            what, s ? s : "");
    return -1;
}

int tool_parse_uint(const char *s, const char *what, unsigned long lo, unsigned long hi,
                    unsigned long *out)
{
    char *end;
    unsigned long v;

    if (!s || !isdigit((unsigned char)*s))
        goto bad;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end)
        goto bad;
    if (v < lo || v > hi) {
        fprintf(stderr, "error: %s must be %lu..%lu (got %s)\n", what, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
bad:
    fprintf(stderr, "error: bad %s '%s' (expected a number)\n", what, s ? s : "");
    return -1;
}

int tool_parse_busy_poll(const char *s, const char *what, int *out)
{
    unsigned long v;

    if (tool_parse_uint(s, what, 0, 1000000, &v) < 0)
        return -1;
    *out = v ? (int)v : -1;
    return 0;
}

int tool_parse_hostport(const char *s, const char *what, char *host, size_t hostcap,
                        char *port, size_t portcap)
{
    const char *h, *p, *colon;
    size_t hl;
    unsigned long pv;
    struct addrinfo hints, *res = NULL;
    int rc;

    if (!s || !*s)
        goto bad;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            goto bad;
        h = s + 1;
        hl = (size_t)(close - h);
        p = close + 2;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            goto bad;
        if (memchr(s, ':', (size_t)(colon - s))) {
            fprintf(stderr, "error: bad %s '%s': put an IPv6 address in brackets, e.g. [::1]:7000\n",
                    what, s);
            return -1;
        }
        h = s;
        hl = (size_t)(colon - s);
        p = colon + 1;
    }
    if (hl == 0 || hl >= hostcap)
        goto bad;
    if (tool_parse_uint(p, "port", 0, 65535, &pv) < 0)
        goto bad;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, portcap, "%lu", pv);

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        fprintf(stderr, "error: bad %s '%s': host '%s': %s\n", what, s, host, gai_strerror(rc));
        return -1;
    }
    freeaddrinfo(res);
    return 0;
bad:
    fprintf(stderr, "error: bad %s '%s' (expected HOST:PORT or [IPv6]:PORT, port 0..65535)\n",
            what, s ? s : "");
    return -1;
}

void tool_format_hostport(char *buf, size_t cap, const char *host, unsigned port)
{
    if (strchr(host, ':'))
        snprintf(buf, cap, "[%s]:%u", host, port);
    else
        snprintf(buf, cap, "%s:%u", host, port);
}

int tool_parse_dialect(const char *s, enum railwire_dialect *out)
{
    if (s && !strcmp(s, "ro")) {
        *out = RAILWIRE_DIALECT_RO;
        return 0;
    }
    if (s && !strcmp(s, "rw")) {
        *out = RAILWIRE_DIALECT_RW;
        return 0;
    }
    fprintf(stderr, "error: bad dialect '%s' (expected ro or rw)\n", s ? s : "");
    return -1;
}

int tool_parse_transport(const char *s, enum railwire_transport *out)
{
    if (s && !strcmp(s, "tcp"))
        *out = RAILWIRE_TRANSPORT_TCP;
    else if (s && !strcmp(s, "verbs"))
        *out = RAILWIRE_TRANSPORT_VERBS;
    else if (s && !strcmp(s, "auto"))
        *out = RAILWIRE_TRANSPORT_AUTO;
    else {
        fprintf(stderr, "error: bad transport '%s' (expected tcp, verbs or auto)\n", s ? s : "");
        return -1;
    }
    return 0;
}

void tool_format_size(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned u = 0;

    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, cap, "%llu %s", (unsigned long long)bytes, units[u]);
}

void tool_log_sink(enum railwire_log_level level, const char *msg, void *user)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    FILE *f = user ? (FILE *)user : stderr;
    struct timespec ts;
    struct tm tm;
    char when[32];

    clock_gettime(CLOCK_REALTIME, &ts);
    if (rw_log_format_json()) { /* RAILWIRE_LOG_FORMAT=json */
        char line[RW_LOG_JSON_MAX];
        fwrite(line, 1, rw_log_json_line(line, sizeof(line), &ts, level, msg), f);
        fflush(f);
        return;
    }
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(f, "%s.%03ldZ %-5s %s\n", when, ts.tv_nsec / 1000000L,
            (unsigned)level < 4 ? names[level] : "?", msg);
    fflush(f);
}

void tool_log_level_default(enum railwire_log_level dflt)
{
    const char *s = getenv("RAILWIRE_LOG");

    if (s && *s)
        return; /* the library reads it itself */
    railwire_log_set_level(dflt);
}

uint64_t tool_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *tool_buf_alloc(size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    volatile uint8_t *v;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    /* Huge pages where the kernel has them (THP in `madvise` mode ignores
     * buffers that do not ask): d transfers of 64 MiB in flight touch d x 64
     * MiB, and with 4 KiB pages the page walks of that working set, not the
     * transport, set the speed.  Advice only: no error if refused. */
    (void)madvise(p, len, MADV_HUGEPAGE);
    /* Faulted in now, not by the first transfers of the timed run. */
    v = p;
    for (size_t off = 0; off < len; off += page)
        v[off] = 0;
    return p;
}
