/* SPDX-License-Identifier: MIT */
/* The `railwire serve`/`bench` helpers: size and address parsing, latency
 * percentiles, and the data pattern that --verify checks against. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_pattern.h"
#include "bench_stats.h"
#include "bench_util.h"

Test(tool_parse, sizes)
{
    uint64_t v;

    cr_assert_eq(tool_parse_size("4096", "s", 0, &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(tool_parse_size("4K", "s", 0, &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(tool_parse_size("64MiB", "s", 0, &v), 0);
    cr_assert_eq(v, 64ull << 20);
    cr_assert_eq(tool_parse_size("1g", "s", 0, &v), 0);
    cr_assert_eq(v, 1ull << 30);
    cr_assert_eq(tool_parse_size("2TB", "s", 0, &v), 0);
    cr_assert_eq(v, 2ull << 40);
    cr_assert_eq(tool_parse_size("0", "s", 1, &v), 0);
    cr_assert_eq(v, 0);
    const char *bad[] = {"", "K", "-1", "1.5M", "12Q", "4KK", "0", "99999999999T", " 1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(tool_parse_size(bad[i], "s", 0, &v), -1, "'%s' accepted", bad[i]);
}

Test(tool_parse, hostport)
{
    char h[64], p[16];

    cr_assert_eq(tool_parse_hostport("127.0.0.1:7000", "a", h, sizeof(h), p, sizeof(p)), 0);
    cr_assert_str_eq(h, "127.0.0.1");
    cr_assert_str_eq(p, "7000");
    cr_assert_eq(tool_parse_hostport("[::1]:0", "a", h, sizeof(h), p, sizeof(p)), 0);
    cr_assert_str_eq(h, "::1");
    cr_assert_str_eq(p, "0");
    const char *bad[] = {"127.0.0.1", "127.0.0.1:", ":7000", "::1:7000", "[::1]7000",
                         "127.0.0.1:65536", "127.0.0.1:x", "[::1:7000"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(tool_parse_hostport(bad[i], "a", h, sizeof(h), p, sizeof(p)), -1,
                     "'%s' accepted", bad[i]);
}

Test(tool_stats, percentiles)
{
    struct bench_lat l = {0};

    cr_assert_eq(bench_lat_percentile(&l, 50), 0);
    for (uint64_t i = 100; i >= 1; i--)
        cr_assert_eq(bench_lat_add(&l, i * 1000), 0);
    cr_expect_eq(bench_lat_percentile(&l, 50), 50000);
    cr_expect_eq(bench_lat_percentile(&l, 99), 99000);
    cr_expect_eq(bench_lat_percentile(&l, 100), 100000);
    bench_lat_reset(&l);
    cr_assert_eq(bench_lat_add(&l, 7), 0);
    cr_expect_eq(bench_lat_percentile(&l, 99), 7);
    bench_lat_free(&l);
}

/* The pattern of a range equals the same bytes cut out of a larger fill, so
 * a transfer at any offset can be checked on its own. */
Test(tool_pattern, offsets_and_layers)
{
    static uint8_t whole[4096], part[1000];
    size_t at;
    uint8_t got, want;

    bench_pattern_fill(whole, sizeof(whole), 0, 3, 0);
    for (size_t off = 0; off < 64; off++) {
        bench_pattern_fill(part, sizeof(part), 0, 3, off + 5);
        cr_assert_eq(memcmp(part, whole + off + 5, sizeof(part)), 0, "offset %zu", off + 5);
        cr_assert_eq(bench_pattern_check(whole + off, 333, 0, 3, off, &at, &got, &want), 0);
    }
    /* A different layer or seed gives different bytes, and check says where. */
    bench_pattern_fill(part, sizeof(part), 0, 4, 0);
    cr_assert_neq(memcmp(part, whole, sizeof(part)), 0);
    bench_pattern_fill(part, sizeof(part), 1, 3, 0);
    cr_assert_neq(memcmp(part, whole, sizeof(part)), 0);
    memcpy(part, whole + 8, sizeof(part));
    part[777] ^= 0x40;
    cr_assert_eq(bench_pattern_check(part, sizeof(part), 0, 3, 8, &at, &got, &want), -1);
    cr_expect_eq(at, 777);
    cr_expect_eq(got, whole[8 + 777] ^ 0x40);
    cr_expect_eq(want, whole[8 + 777]);
}

/* Pinned bytes: wire_peer.py `pattern` must produce exactly these (the CLI
 * suite checks that by verifying files it wrote). */
Test(tool_pattern, pinned_first_word)
{
    uint8_t b[8];
    uint64_t w = 0;

    bench_pattern_fill(b, 8, 0, 0, 0);
    for (int i = 7; i >= 0; i--)
        w = w << 8 | b[i];
    /* splitmix64(0 + 0x9E3779B97F4A7C15) */
    cr_expect_eq(w, 0xE220A8397B1DCDAFull, "got %016llx", (unsigned long long)w);
}

/* The benchmark's buffers are resident before the first transfer is timed:
 * at depth d the bench maps d x size bytes, and a READ into pages never
 * touched pays a page fault (and a page clear) per 4 KiB inside the timed
 * run -- d times more of it at depth d than at depth 1, all in the first
 * d transfers, which is what made 64 MiB at depth 8 slower than at depth 1
 * and its p99 many times its p50 (issue 20). */
/* The same buffers ask for transparent huge pages: on this VM (THP in
 * `madvise` mode) a TCP stream received into a rotating 512 MiB buffer of
 * 4 KiB pages ran at 0.18-0.21 GB/s against 0.60-0.66 GB/s into 64 MiB,
 * and at 0.66 GB/s into 512 MiB advised MADV_HUGEPAGE: the page walks of a
 * working set d times larger, not the transport, made depth 8 of 64 MiB
 * slower than depth 1.  Checked in /proc/self/smaps (VmFlags "hg"). */
Test(tool_buf, buffers_are_advised_huge_pages)
{
    size_t len = 64u << 20;
    uint8_t *p = tool_buf_alloc(len);
    char line[512], want[64];
    int found = 0, hg = 0;
    FILE *f = fopen("/proc/self/smaps", "r");

    cr_assert_not_null(p);
    cr_assert_not_null(f);
    snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)p);
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, want, strlen(want)))
            found = 1;
        else if (found && !strncmp(line, "VmFlags:", 8)) {
            hg = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    cr_assert(found, "the buffer's mapping is in /proc/self/smaps");
    cr_assert(hg, "the buffer's mapping is not advised MADV_HUGEPAGE (VmFlags without hg)");
    munmap(p, len);
}

Test(tool_buf, buffers_are_resident_when_allocated)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 64u << 20, n = len / page, missing = 0;
    unsigned char *vec = malloc(n);
    uint8_t *p = tool_buf_alloc(len);

    cr_assert_not_null(vec);
    cr_assert_not_null(p);
    cr_assert_eq(mincore(p, len, vec), 0);
    for (size_t i = 0; i < n; i++)
        missing += !(vec[i] & 1);
    cr_assert_eq(missing, 0, "%zu of %zu pages of a fresh 64 MiB bench buffer are not resident",
                 missing, n);
    cr_assert_eq(p[0], 0);
    cr_assert_eq(p[len - 1], 0);
    munmap(p, len);
    free(vec);
}
