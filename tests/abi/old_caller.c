/* SPDX-License-Identifier: MIT */
/* An older (and a newer) caller against the current library: built against
 * the saved 1.0 headers (tests/abi/1.0/include, not include/), linked
 * against the shared library of this build.  It proves that the library
 * never reads or writes a byte past what the caller said it has:
 *
 * - every caller struct is placed so that its last byte is the last byte
 *   before a PROT_NONE page (any access past it is a SIGSEGV), or followed
 *   by canary bytes that must come back unchanged;
 * - option structs with struct_size set to an older, smaller prefix work,
 *   and the fields past it take their defaults (canary bytes past the prefix
 *   would be invalid options if they were read);
 * - stats with an older, smaller element size get that prefix only;
 * - a newer caller (a struct larger than the library's) gets zeros past the
 *   library's fields, and its unknown fields are accepted only when zero;
 * - railwire_op and railwire_completion have one size for 1.x: the library
 *   reads and writes exactly sizeof of them, rejects flags it does not know
 *   and (until deadlines are implemented) a nonzero timeout_ms.
 * Exit status 0 when every check holds; each failed check is printed. */
#include <railwire.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The layout this program was compiled with is the 1.0 layout. */
_Static_assert(sizeof(railwire_op) == 64, "1.0 railwire_op is 64 bytes");
_Static_assert(sizeof(railwire_completion) == 64, "1.0 railwire_completion is 64 bytes");
_Static_assert(offsetof(railwire_railset_opts, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(railwire_server_opts, struct_size) == 0, "struct_size first");

#define CANARY 0xA5
#define ARENA (1u << 20)

static int failures;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

/* Two pages, the second PROT_NONE: guarded(size) returns a zeroed object
 * of `size` bytes whose end is the start of the inaccessible page. */
struct guard {
    unsigned char *map;
    size_t page;
};

static void *guarded(struct guard *g, size_t size)
{
    g->page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > g->page) {
        fprintf(stderr, "guarded: %zu bytes is more than a page\n", size);
        exit(2);
    }
    g->map = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED || mprotect(g->map + g->page, g->page, PROT_NONE) != 0) {
        perror("guarded: mmap/mprotect");
        exit(2);
    }
    memset(g->map, 0, g->page);
    return g->map + g->page - size;
}

static void unguard(struct guard *g)
{
    munmap(g->map, 2 * g->page);
}

/* 1 when the n bytes at p all hold CANARY. */
static int canary_intact(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != CANARY)
            return 0;
    return 1;
}

/* An older railwire_railset_opts: the fields before heal (so heal, the
 * heal times, max_slice_tries and busy_poll_us are past its end). */
#define OLD_RS_OPTS offsetof(railwire_railset_opts, heal)
/* An older railwire_server_opts: up to the RW arena, the least accepted. */
#define OLD_SRV_OPTS RAILWIRE_SERVER_OPTS_MIN_SIZE
/* An older railwire_rail_stats: index and state only. */
#define OLD_RAIL_STATS offsetof(railwire_rail_stats, name)
/* An older struct railwire_server_stats: the gauges only. */
#define OLD_SRV_STATS offsetof(struct railwire_server_stats, accepted)

static void test_opts_init(void)
{
    struct guard g;
    size_t sizes[] = {RAILWIRE_RAILSET_OPTS_MIN_SIZE, OLD_RS_OPTS, sizeof(railwire_railset_opts)};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        railwire_railset_opts *o = guarded(&g, sizes[k]);
        CHECK(railwire_railset_opts_init_sized(o, sizes[k]) == 0, "size %zu", sizes[k]);
        CHECK(o->struct_size == sizes[k], "struct_size %u, want %zu", o->struct_size, sizes[k]);
        CHECK(o->dialect == RAILWIRE_DIALECT_RO && o->n_rails == 1, "defaults in the prefix");
        unguard(&g);
    }
    size_t ssizes[] = {RAILWIRE_SERVER_OPTS_MIN_SIZE, sizeof(railwire_server_opts)};
    for (size_t k = 0; k < sizeof(ssizes) / sizeof(ssizes[0]); k++) {
        railwire_server_opts *o = guarded(&g, ssizes[k]);
        CHECK(railwire_server_opts_init_sized(o, ssizes[k]) == 0, "size %zu", ssizes[k]);
        CHECK(o->struct_size == ssizes[k], "struct_size %u", o->struct_size);
        CHECK(o->listen_port && !strcmp(o->listen_port, "0") && o->gid_index == -1,
              "server defaults in the prefix");
        unguard(&g);
    }
    /* Below the least size, or 0: refused, nothing written. */
    unsigned char buf[sizeof(railwire_railset_opts) + sizeof(railwire_server_opts)];
    memset(buf, CANARY, sizeof(buf));
    CHECK(railwire_railset_opts_init_sized((railwire_railset_opts *)(void *)buf,
                                           RAILWIRE_RAILSET_OPTS_MIN_SIZE - 4) ==
              RAILWIRE_E_INVALID, "a size below the least");
    CHECK(railwire_railset_opts_init_sized((railwire_railset_opts *)(void *)buf, 0) ==
              RAILWIRE_E_INVALID, "size 0");
    CHECK(railwire_server_opts_init_sized((railwire_server_opts *)(void *)buf, 8) ==
              RAILWIRE_E_INVALID, "server size 8");
    CHECK(canary_intact(buf, sizeof(buf)), "a refused init wrote into the struct");
    /* The macro passes the caller's sizeof. */
    railwire_railset_opts full;
    memset(&full, CANARY, sizeof(full));
    CHECK(railwire_railset_opts_init(&full) == 0 && full.struct_size == sizeof(full) &&
              full.heal == 1 && full.busy_poll_us == 0, "railwire_railset_opts_init(&o)");
}

/* Starts an RW tcp server on loopback from options of an older size whose
 * bytes past that size are canaries (as options they would be invalid:
 * allow would point at 0xA5A5..., io_timeout_ms be negative). */
static railwire_server *start_server(unsigned char *arena, char port[16])
{
    unsigned char buf[sizeof(railwire_server_opts) + 64];
    memset(buf, CANARY, sizeof(buf));
    railwire_server_opts *o = (railwire_server_opts *)(void *)buf;
    CHECK(railwire_server_opts_init_sized(o, OLD_SRV_OPTS) == 0, "server init");
    CHECK(canary_intact(buf + OLD_SRV_OPTS, sizeof(buf) - OLD_SRV_OPTS),
          "server_opts_init wrote past struct_size");
    o->dialect = RAILWIRE_DIALECT_RW;
    o->transport = RAILWIRE_TRANSPORT_TCP;
    o->listen_host = "127.0.0.1";
    o->arena = (railwire_region){arena, ARENA};
    railwire_server *srv = NULL;
    int rc = railwire_server_create(o, &srv);
    CHECK(rc == 0, "server_create with %zu-byte options: %s", (size_t)OLD_SRV_OPTS,
          railwire_strerror(rc));
    if (rc < 0)
        exit(1);
    snprintf(port, 16, "%u", railwire_server_port(srv));
    return srv;
}

static void test_connect_opts(const char *port)
{
    /* An older caller: heal and what follows are past its struct_size, and
     * canaries there (heal = 0xA5A5A5A5 would be refused) must not be read. */
    unsigned char buf[sizeof(railwire_railset_opts) + 64];
    memset(buf, CANARY, sizeof(buf));
    railwire_railset_opts *o = (railwire_railset_opts *)(void *)buf;
    CHECK(railwire_railset_opts_init_sized(o, OLD_RS_OPTS) == 0, "init");
    CHECK(canary_intact(buf + OLD_RS_OPTS, sizeof(buf) - OLD_RS_OPTS), "init wrote past");
    o->dialect = RAILWIRE_DIALECT_RW;
    o->transport = RAILWIRE_TRANSPORT_TCP;
    railwire_railset *rs = NULL;
    int rc = railwire_railset_connect("127.0.0.1", port, o, &rs);
    CHECK(rc == 0, "connect with %zu-byte options: %s", (size_t)OLD_RS_OPTS,
          railwire_strerror(rc));
    railwire_railset_close(rs);

    /* The least size, at the end of a page: n_rails 2 is its last field. */
    struct guard g;
    o = guarded(&g, RAILWIRE_RAILSET_OPTS_MIN_SIZE);
    railwire_railset_opts_init_sized(o, RAILWIRE_RAILSET_OPTS_MIN_SIZE);
    o->dialect = RAILWIRE_DIALECT_RW;
    o->transport = RAILWIRE_TRANSPORT_TCP;
    o->n_rails = 2;
    rs = NULL;
    rc = railwire_railset_connect("127.0.0.1", port, o, &rs);
    CHECK(rc == 0, "connect with the least options: %s", railwire_strerror(rc));
    CHECK(rs && railwire_railset_rail_count(rs) == 2, "2 rails");
    railwire_railset_close(rs);
    unguard(&g);

    /* Options never initialised (struct_size 0) are refused. */
    railwire_railset_opts zero;
    memset(&zero, 0, sizeof(zero));
    zero.dialect = RAILWIRE_DIALECT_RW;
    zero.n_rails = 1;
    rs = NULL;
    CHECK(railwire_railset_connect("127.0.0.1", port, &zero, &rs) == RAILWIRE_E_INVALID && !rs,
          "struct_size 0");

    /* A newer caller: more bytes, zero (accepted) or not (refused).  The
     * library under test may know fields past the 1.0 struct (it grows at
     * the end), so the unknown field sits well past any of them. */
    unsigned char nbuf[sizeof(railwire_railset_opts) + 1024];
    memset(nbuf, 0, sizeof(nbuf));
    o = (railwire_railset_opts *)(void *)nbuf;
    CHECK(railwire_railset_opts_init_sized(o, sizeof(nbuf)) == 0, "newer init");
    o->dialect = RAILWIRE_DIALECT_RW;
    o->transport = RAILWIRE_TRANSPORT_TCP;
    rc = railwire_railset_connect("127.0.0.1", port, o, &rs);
    CHECK(rc == 0, "newer options, unknown fields 0: %s", railwire_strerror(rc));
    railwire_railset_close(rs);
    nbuf[sizeof(nbuf) - 5] = 1;
    rs = NULL;
    CHECK(railwire_railset_connect("127.0.0.1", port, o, &rs) == RAILWIRE_E_INVALID && !rs,
          "newer options with an unknown field set");
}

static void test_stats(railwire_railset *rs, railwire_server *srv)
{
    struct guard g;
    /* Older rail stats: two elements of OLD_RAIL_STATS bytes up to the page end. */
    unsigned char *p = guarded(&g, 2 * OLD_RAIL_STATS);
    CHECK(railwire_railset_stats(rs, (railwire_rail_stats *)(void *)p, 2, OLD_RAIL_STATS) == 2,
          "older rail stats");
    for (unsigned i = 0; i < 2; i++) {
        railwire_rail_stats st;
        memcpy(&st, p + i * OLD_RAIL_STATS, OLD_RAIL_STATS);
        CHECK(st.index == i && st.state == RAILWIRE_RAIL_UP, "rail %u: index %u state %u", i,
              st.index, st.state);
    }
    unguard(&g);
    /* Newer rail stats: 32 more bytes each, zeros past the library's fields,
     * canary after the array. */
    size_t nsz = sizeof(railwire_rail_stats) + 32;
    unsigned char buf[2 * (sizeof(railwire_rail_stats) + 32) + 64];
    memset(buf, CANARY, sizeof(buf));
    CHECK(railwire_railset_stats(rs, (railwire_rail_stats *)(void *)buf, 2, nsz) == 2,
          "newer rail stats");
    for (unsigned i = 0; i < 2; i++) {
        const unsigned char *tail = buf + i * nsz + sizeof(railwire_rail_stats);
        int zero = 1;
        for (size_t k = 0; k < 32; k++)
            zero &= tail[k] == 0;
        CHECK(zero, "rail %u: the fields the library does not know are not zero", i);
    }
    CHECK(canary_intact(buf + 2 * nsz, 64), "rail stats written past max * elem_size");
    /* One element asked for of two rails: nothing past the first. */
    memset(buf, CANARY, sizeof(buf));
    CHECK(railwire_railset_stats(rs, (railwire_rail_stats *)(void *)buf, 1, OLD_RAIL_STATS) == 2,
          "rail count with max 1");
    CHECK(canary_intact(buf + OLD_RAIL_STATS, sizeof(buf) - OLD_RAIL_STATS), "max 1 wrote past");
    CHECK(railwire_railset_stats(rs, (railwire_rail_stats *)(void *)buf, 1, 4) ==
              RAILWIRE_E_INVALID, "an element size below the least");

    /* Older server stats at the page end. */
    struct railwire_server_stats *ss = guarded(&g, OLD_SRV_STATS);
    CHECK(railwire_server_stats(srv, ss, OLD_SRV_STATS) == 0, "older server stats");
    CHECK(ss->sessions_live >= 1, "sessions_live %llu", (unsigned long long)ss->sessions_live);
    unguard(&g);
    unsigned char sbuf[sizeof(struct railwire_server_stats) + 64];
    memset(sbuf, CANARY, sizeof(sbuf));
    CHECK(railwire_server_stats(srv, (struct railwire_server_stats *)(void *)sbuf,
                                sizeof(struct railwire_server_stats)) == 0, "server stats");
    CHECK(canary_intact(sbuf + sizeof(struct railwire_server_stats), 64), "server stats wrote past");
    CHECK(railwire_server_stats(srv, (struct railwire_server_stats *)(void *)sbuf, 0) ==
              RAILWIRE_E_INVALID, "server stats size 0");
}

static void test_ops(railwire_railset *rs)
{
    unsigned char *buf = malloc(4096);
    railwire_mr *mr = NULL;
    CHECK(buf && railwire_mr_register(rs, buf, 4096, &mr) == 0, "mr");
    if (!mr)
        return;
    struct guard g, gc;
    /* One op at the page end: read exactly sizeof(railwire_op). */
    railwire_op *op = guarded(&g, sizeof(*op));
    op->opcode = RAILWIRE_OP_WRITE;
    op->mr = mr;
    op->local = buf;
    op->length = 1000;
    op->remote_offset = 4096;
    op->user_data = 77;
    railwire_handle h = 0;
    CHECK(railwire_submit(rs, op, &h) == 0 && h, "submit");
    /* Its completion in a one-element array at the page end. */
    railwire_completion *c = guarded(&gc, sizeof(*c));
    memset(c, CANARY, sizeof(*c));
    int n = railwire_wait(rs, c, 1, 10000);
    CHECK(n == 1, "wait: %d", n);
    CHECK(c->handle == h && c->user_data == 77 && c->status == 0 && c->length == 1000,
          "completion fields");
    CHECK(c->bytes_moved == 1000, "bytes_moved %llu", (unsigned long long)c->bytes_moved);
    CHECK(c->flags == 0 && c->reserved[0] == 0 && c->reserved[1] == 0 && c->reserved[2] == 0,
          "flags and reserved are written as 0");
    unguard(&gc);

    /* A per-transfer deadline is carried: the transfer completes (in time
     * or with RAILWIRE_E_TIMEOUT), exactly once. */
    op->timeout_ms = 5000;
    CHECK(railwire_submit(rs, op, &h) == 0, "timeout_ms is accepted");
    op->timeout_ms = 0;
    {
        railwire_completion dc;
        int k = railwire_wait(rs, &dc, 1, 10000);
        CHECK(k == 1 && dc.handle == h && (dc.status == 0 || dc.status == RAILWIRE_E_TIMEOUT),
              "the transfer with a deadline completes");
    }
    /* What 1.0 does not carry is refused, never ignored. */
    op->flags = 0x2;
    CHECK(railwire_submit(rs, op, &h) == RAILWIRE_E_INVALID, "unknown flags");
    op->flags = 0;
    op->opcode = 7;
    CHECK(railwire_submit(rs, op, &h) == RAILWIRE_E_INVALID, "unknown opcode");
    unguard(&g);

    /* A batch of 3 at the page end, then 3 completions into an array of 3
     * followed by canaries (poll with max 3 writes no byte past it). */
    railwire_op *ops = guarded(&g, 3 * sizeof(*ops));
    for (unsigned i = 0; i < 3; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * 1024,
                               .length = 1024, .remote_offset = i * 1024, .user_data = i};
    railwire_handle hs[3];
    CHECK(railwire_submit_batch(rs, ops, 3, hs) == 3, "submit_batch");
    unguard(&g);
    unsigned char cbuf[3 * sizeof(railwire_completion) + 64];
    memset(cbuf, CANARY, sizeof(cbuf));
    railwire_completion *cs = (railwire_completion *)(void *)cbuf;
    int got = 0;
    for (int tries = 0; got < 3 && tries < 100; tries++) {
        int k = railwire_wait(rs, cs + got, 3 - got, 10000);
        if (k < 0)
            break;
        got += k;
    }
    CHECK(got == 3, "3 completions, got %d", got);
    for (int i = 0; i < got; i++)
        CHECK(cs[i].status == 0 && cs[i].bytes_moved == 1024, "batch completion %d", i);
    CHECK(canary_intact(cbuf + 3 * sizeof(railwire_completion), 64), "completions written past max");
    railwire_mr_deregister(mr);
    free(buf);
}

int main(void)
{
    unsigned char *arena = calloc(1, ARENA);
    if (!arena)
        return 2;
    test_opts_init();
    char port[16];
    railwire_server *srv = start_server(arena, port);
    test_connect_opts(port);

    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    railwire_railset *rs = NULL;
    int rc = railwire_railset_connect("127.0.0.1", port, &o, &rs);
    CHECK(rc == 0, "connect: %s", railwire_strerror(rc));
    if (rs) {
        test_stats(rs, srv);
        test_ops(rs);
        railwire_railset_close(rs);
    }
    railwire_server_destroy(srv);
    free(arena);
    if (failures) {
        fprintf(stderr, "abi_old_caller: %d check(s) failed\n", failures);
        return 1;
    }
    printf("abi_old_caller: every check passed\n");
    return 0;
}
