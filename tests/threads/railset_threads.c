/* SPDX-License-Identifier: MIT */
/* One railset used from many threads at once, over loopback with the real
 * tcp transport (include/railwire/railset.h: thread-safe).  A plain program
 * rather than a Criterion suite so that it also runs under ThreadSanitizer
 * (Criterion does not start there); ctest runs it in the release, ASan and
 * TSan builds.  Exit status 0 when every scenario passed.
 *
 *   async  T threads submit READs with unique user_data and all of them
 *          poll/wait: every transfer is delivered exactly once, with the
 *          right bytes, to some thread;
 *   sync   T threads run synchronous READ/WRITE helpers while others submit
 *          and wait: every helper gets its own transfer's status, and no
 *          poll/wait ever returns a helper's transfer;
 *   heal   as async, with rail 1 killed mid-run: it heals and nothing fails;
 *   mr     registrations come and go on one thread while others transfer;
 *   server servers created and destroyed from several threads at once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "rail/client/railset_testing.h"
#include "tcp/tcp_internal.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define LAYER (8 * MIB)
#define MAX_T 16

static uint8_t *layer;
static atomic_int failures;   /* of the scenario that runs (reset by each) */

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            if (atomic_fetch_add(&failures, 1) > 20) {                                             \
                fprintf(stderr, "too many failures; giving up\n");                                 \
                exit(1);                                                                           \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint8_t pat(size_t i)
{
    return (uint8_t)(i * 151u + (i >> 11) * 5u + 3u);
}

static railwire_server *start_server(enum railwire_dialect d, void *mem, size_t len)
{
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = d;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.io_timeout_ms = 5000;
    railwire_region reg = {mem, len};
    if (d == RAILWIRE_DIALECT_RO) {
        o.layers = &reg;
        o.n_layers = 1;
    } else {
        o.arena = reg;
    }
    railwire_server *s = NULL;
    if (railwire_server_create(&o, &s) < 0)
        return NULL;
    return s;
}

static railwire_railset *connect_rs(railwire_server *s, enum railwire_dialect d, unsigned rails)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = d;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.slice_size = 64 * KIB;
    o.heal_backoff_min_ms = 20;
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(s));
    railwire_railset *rs = NULL;
    if (railwire_railset_connect("127.0.0.1", port, &o, &rs) < 0)
        return NULL;
    return rs;
}

/* The tcp ep's counters of a rail, for dump_railset. */
static void dump_tcp_ep(struct rw_ep *e, FILE *f)
{
    struct rw_tcp_cli_ep *ep = rw_container_of(e, struct rw_tcp_cli_ep, base);
    pthread_mutex_lock(&ep->lock);
    fprintf(f, "    tcp ep: state %d posted %llu sent %llu answered %llu done %llu "
            "polled %llu tx_busy %d\n", (int)ep->state, (unsigned long long)ep->posted,
            (unsigned long long)ep->sent, (unsigned long long)ep->answered,
            (unsigned long long)ep->done, (unsigned long long)ep->polled, ep->tx_busy);
    pthread_mutex_unlock(&ep->lock);
}

/* What the railset holds, for a failure message (a transfer that timed out). */
static void dump_railset(railwire_railset *rs)
{
    rw_test_dump(rs, stderr, dump_tcp_ep);
}

/* ---- async: exactly-once delivery across threads --------------------- */

struct async_ctx {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf;             /* per transfer: its own 64 KiB slot */
    unsigned threads, per_thread;
    size_t size;
    atomic_uint *seen;        /* deliveries per transfer id */
    atomic_uint delivered;
    atomic_uint submitted;
    int kill_rail_at;         /* kill rail 1 after this many deliveries (-1: never) */
    atomic_int killed;
};

struct async_arg {
    struct async_ctx *c;
    unsigned t;
};

static void check_slot(struct async_ctx *c, unsigned id)
{
    uint64_t off = (uint64_t)(id % 64) * c->size;
    const uint8_t *p = c->buf + (size_t)id * c->size;
    for (size_t i = 0; i < c->size; i += 997)
        if (p[i] != pat(off + i)) {
            CHECK(0, "transfer %u: byte %zu is 0x%02x, expected 0x%02x", id, i, p[i],
                  pat(off + i));
            return;
        }
}

static void *async_main(void *arg)
{
    struct async_arg *a = arg;
    struct async_ctx *c = a->c;
    unsigned total = c->threads * c->per_thread;
    unsigned next = 0;
    railwire_completion comp[16];

    while (atomic_load(&c->delivered) < total && !atomic_load(&failures)) {
        /* Keep up to 8 of this thread's transfers in flight. */
        while (next < c->per_thread &&
               atomic_load(&c->submitted) - atomic_load(&c->delivered) < 8 * c->threads) {
            unsigned id = a->t * c->per_thread + next;
            railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = c->mr,
                              .local = c->buf + (size_t)id * c->size, .length = c->size,
                              .remote_offset = (uint64_t)(id % 64) * c->size, .user_data = id};
            railwire_handle h;
            int rc = railwire_submit(c->rs, &op, &h);
            CHECK(rc == 0, "submit %u: %s", id, railwire_strerror(rc));
            if (rc)
                return NULL;
            atomic_fetch_add(&c->submitted, 1);
            next++;
        }
        int n = railwire_wait(c->rs, comp, 16, 200);
        if (n == RAILWIRE_E_TIMEOUT)
            continue;
        CHECK(n > 0, "wait: %s", railwire_strerror(n));
        if (n <= 0)
            return NULL;
        for (int k = 0; k < n; k++) {
            unsigned id = (unsigned)comp[k].user_data;
            CHECK(id < total, "unknown user_data %u", id);
            if (id >= total)
                continue;
            unsigned times = atomic_fetch_add(&c->seen[id], 1) + 1;
            CHECK(times == 1, "transfer %u delivered %u times", id, times);
            CHECK(comp[k].status == 0, "transfer %u failed: %s", id,
                  railwire_strerror(comp[k].status));
            if (comp[k].status == 0)
                check_slot(c, id);
            unsigned d = atomic_fetch_add(&c->delivered, 1) + 1;
            if (c->kill_rail_at >= 0 && d >= (unsigned)c->kill_rail_at &&
                !atomic_exchange(&c->killed, 1)) {
                /* As a reset would: behind the railset's back. */
                rw_test_kill_rail(c->rs, 1);
            }
        }
    }
    return NULL;
}

static int run_async(unsigned threads, int kill_at)
{
    int before = atomic_load(&failures);
    railwire_server *s = start_server(RAILWIRE_DIALECT_RO, layer, LAYER);
    CHECK(s != NULL, "server");
    railwire_railset *rs = s ? connect_rs(s, RAILWIRE_DIALECT_RO, 2) : NULL;
    CHECK(rs != NULL, "connect");
    if (!rs) {
        railwire_server_destroy(s);
        return 1;
    }
    struct async_ctx c = {.rs = rs, .threads = threads, .per_thread = 200, .size = 64 * KIB,
                          .kill_rail_at = kill_at};
    unsigned total = threads * c.per_thread;
    c.buf = malloc((size_t)total * c.size);
    c.seen = calloc(total, sizeof(*c.seen));
    CHECK(c.buf && c.seen, "out of memory");
    CHECK(railwire_mr_register(rs, c.buf, (size_t)total * c.size, &c.mr) == 0, "register");
    pthread_t th[MAX_T];
    struct async_arg args[MAX_T];
    for (unsigned t = 0; t < threads; t++) {
        args[t] = (struct async_arg){&c, t};
        pthread_create(&th[t], NULL, async_main, &args[t]);
    }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    CHECK(atomic_load(&c.delivered) == total, "delivered %u of %u", atomic_load(&c.delivered),
          total);
    for (unsigned id = 0; id < total; id++)
        CHECK(atomic_load(&c.seen[id]) == 1, "transfer %u delivered %u times", id,
              atomic_load(&c.seen[id]));
    if (kill_at >= 0) {
        railwire_rail_stats st[2];
        /* The kill happened mid-run; give the heal a moment to land. */
        for (int64_t end = rw_now_ms() + 10000; rw_now_ms() < end;) {
            railwire_completion x;
            railwire_poll(rs, &x, 0);
            railwire_railset_stats(rs, st, 2, sizeof(*st));
            if (st[1].state == RAILWIRE_RAIL_UP && st[1].heals)
                break;
            usleep(10000);
        }
        CHECK(st[1].state == RAILWIRE_RAIL_UP && st[1].heals >= 1,
              "rail 1 did not heal (state %d, heals %llu)", (int)st[1].state,
              (unsigned long long)st[1].heals);
    }
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(c.buf);
    free(c.seen);
    return atomic_load(&failures) != before;
}

/* ---- sync helpers among async traffic ------------------------------- */

struct sync_ctx {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf;
    uint8_t *arena;
    atomic_int stop;
    atomic_uint sync_ops, async_ops, async_submitted;
};

struct sync_arg {
    struct sync_ctx *c;
    unsigned t;
};

static void *sync_main(void *arg)
{
    struct sync_arg *a = arg;
    struct sync_ctx *c = a->c;
    uint8_t *mine = c->buf + (size_t)a->t * 128 * KIB;
    uint64_t remote = (uint64_t)a->t * 128 * KIB;
    for (unsigned k = 0; !atomic_load(&c->stop) && !atomic_load(&failures); k++) {
        memset(mine, (int)(a->t * 16 + (k & 15)), 64 * KIB);
        int rc = railwire_write(c->rs, c->mr, mine, 64 * KIB, 0, remote, 20000);
        CHECK(rc == 0, "sync write (thread %u): %s", a->t, railwire_strerror(rc));
        if (rc)
            dump_railset(c->rs);
        memset(mine + 64 * KIB, 0, 64 * KIB);
        rc = railwire_read(c->rs, c->mr, mine + 64 * KIB, 64 * KIB, 0, remote, 20000);
        CHECK(rc == 0, "sync read (thread %u): %s", a->t, railwire_strerror(rc));
        if (rc)
            dump_railset(c->rs);
        CHECK(memcmp(mine, mine + 64 * KIB, 64 * KIB) == 0, "thread %u read back other bytes",
              a->t);
        atomic_fetch_add(&c->sync_ops, 2);
    }
    return NULL;
}

/* Async READs of a range no helper writes, delivered to whichever async
 * thread polls or waits first: each is delivered exactly once, and no
 * completion of a helper's transfer ever arrives here (user_data marks
 * ours). */
#define ASYNC_MAX 200000
#define ASYNC_SLOTS 32
static atomic_uchar async_seen[ASYNC_MAX];
static atomic_int async_busy[ASYNC_SLOTS]; /* a READ in flight lands in slot k */

static void take(struct sync_ctx *c, const railwire_completion *comp, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t id = (comp[k].user_data - 0xa5a500000000ull) >> 8;
        unsigned slot = (unsigned)(comp[k].user_data & 0xff);
        CHECK(id < ASYNC_MAX, "poll/wait returned a transfer that is not an async one "
              "(user_data 0x%llx): a synchronous helper's?", (unsigned long long)comp[k].user_data);
        if (id >= ASYNC_MAX)
            continue;
        unsigned times = atomic_fetch_add(&async_seen[id], 1) + 1;
        CHECK(times == 1, "async transfer %llu delivered %u times", (unsigned long long)id, times);
        CHECK(comp[k].status == 0, "async read failed: %s", railwire_strerror(comp[k].status));
        if (slot < ASYNC_SLOTS)
            atomic_store(&async_busy[slot], 0);
        atomic_fetch_add(&c->async_ops, 1);
    }
}

static void *async_poll_main(void *arg)
{
    struct sync_arg *a = arg;
    struct sync_ctx *c = a->c;
    railwire_completion comp[4];
    while (!atomic_load(&c->stop) && !atomic_load(&failures)) {
        /* A free slot of the shared pool: two READs in flight never land
         * in the same bytes. */
        int slot = -1;
        for (int k = 0; k < ASYNC_SLOTS && slot < 0; k++) {
            int zero = 0;
            if (atomic_compare_exchange_strong(&async_busy[k], &zero, 1))
                slot = k;
        }
        if (slot >= 0) {
            unsigned id = atomic_fetch_add(&c->async_submitted, 1);
            if (id >= ASYNC_MAX) {
                atomic_fetch_sub(&c->async_submitted, 1);
                atomic_store(&async_busy[slot], 0);
                break;
            }
            railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = c->mr,
                              .local = c->buf + 16 * 128 * KIB + (size_t)slot * 64 * KIB,
                              .length = 64 * KIB, .remote_offset = 15 * 128 * KIB,
                              .user_data = 0xa5a500000000ull + ((uint64_t)id << 8) + (unsigned)slot};
            railwire_handle h;
            int rc = railwire_submit(c->rs, &op, &h);
            CHECK(rc == 0, "submit: %s", railwire_strerror(rc));
        }
        int n = a->t & 1 ? railwire_poll(c->rs, comp, 4) : railwire_wait(c->rs, comp, 4, 100);
        if (n > 0)
            take(c, comp, n);
        else
            CHECK(n == 0 || n == RAILWIRE_E_TIMEOUT, "poll/wait: %s", railwire_strerror(n));
    }
    return NULL;
}

static int run_sync(unsigned sync_threads)
{
    int before = atomic_load(&failures);
    size_t len = 16 * 128 * KIB;
    uint8_t *arena = calloc(1, len);
    railwire_server *s = start_server(RAILWIRE_DIALECT_RW, arena, len);
    railwire_railset *rs = s ? connect_rs(s, RAILWIRE_DIALECT_RW, 2) : NULL;
    CHECK(rs != NULL, "connect");
    if (!rs) {
        railwire_server_destroy(s);
        free(arena);
        return 1;
    }
    size_t local_len = len + ASYNC_SLOTS * 64 * KIB;
    struct sync_ctx c = {.rs = rs, .buf = malloc(local_len), .arena = arena};
    CHECK(railwire_mr_register(rs, c.buf, local_len, &c.mr) == 0, "register");
    pthread_t th[MAX_T];
    struct sync_arg args[MAX_T];
    unsigned n = sync_threads + 2;
    for (unsigned t = 0; t < n; t++) {
        args[t] = (struct sync_arg){&c, t};
        pthread_create(&th[t], NULL, t < sync_threads ? sync_main : async_poll_main, &args[t]);
    }
    usleep(1500 * 1000);
    atomic_store(&c.stop, 1);
    for (unsigned t = 0; t < n; t++)
        pthread_join(th[t], NULL);
    /* What the async threads submitted last is still delivered, once. */
    for (int64_t end = rw_now_ms() + 20000;
         atomic_load(&c.async_ops) < atomic_load(&c.async_submitted) && rw_now_ms() < end;) {
        railwire_completion comp[16];
        int k = railwire_wait(rs, comp, 16, 200);
        if (k > 0)
            take(&c, comp, k);
    }
    CHECK(atomic_load(&c.async_ops) == atomic_load(&c.async_submitted),
          "%u async transfers submitted, %u delivered", atomic_load(&c.async_submitted),
          atomic_load(&c.async_ops));
    CHECK(atomic_load(&c.sync_ops) > 0 && atomic_load(&c.async_ops) > 0,
          "nothing moved (sync %u, async %u)", atomic_load(&c.sync_ops), atomic_load(&c.async_ops));
    printf("  sync: %u synchronous ops by %u threads among %u async reads\n",
           atomic_load(&c.sync_ops), sync_threads, atomic_load(&c.async_ops));
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(c.buf);
    free(arena);
    return atomic_load(&failures) != before;
}

/* ---- registrations while others transfer ---------------------------- */

struct mr_ctx {
    railwire_railset *rs;
    atomic_int stop;
};

static void *mr_churn(void *arg)
{
    struct mr_ctx *c = arg;
    uint8_t *b = malloc(MIB);
    while (!atomic_load(&c->stop)) {
        railwire_mr *m;
        int rc = railwire_mr_register(c->rs, b, MIB, &m);
        CHECK(rc == 0, "register: %s", railwire_strerror(rc));
        if (rc == 0) {
            rc = railwire_read(c->rs, m, b, 4096, 0, 0, 20000);
            CHECK(rc == 0, "read through a fresh registration: %s", railwire_strerror(rc));
            if (rc)
                dump_railset(c->rs);
            CHECK(railwire_mr_deregister(m) == 0, "deregister");
        }
    }
    free(b);
    return NULL;
}

static int run_mr(void)
{
    int before = atomic_load(&failures);
    railwire_server *s = start_server(RAILWIRE_DIALECT_RO, layer, LAYER);
    railwire_railset *rs = s ? connect_rs(s, RAILWIRE_DIALECT_RO, 2) : NULL;
    CHECK(rs != NULL, "connect");
    if (!rs) {
        railwire_server_destroy(s);
        return 1;
    }
    struct mr_ctx c = {.rs = rs};
    pthread_t th[2];
    pthread_create(&th[0], NULL, mr_churn, &c);
    pthread_create(&th[1], NULL, mr_churn, &c);
    uint8_t *buf = malloc(MIB);
    railwire_mr *mr;
    CHECK(railwire_mr_register(rs, buf, MIB, &mr) == 0, "register");
    for (int k = 0; k < 100; k++) {
        int rc = railwire_read(rs, mr, buf, MIB, 0, (uint64_t)(k % 7) * MIB, 20000);
        CHECK(rc == 0, "read: %s", railwire_strerror(rc));
        if (rc)
            dump_railset(rs);
        if (k == 50) {
            rw_test_kill_rail(rs, 0); /* a heal swaps registrations meanwhile */
        }
    }
    atomic_store(&c.stop, 1);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    free(buf);
    return atomic_load(&failures) != before;
}

/* ---- servers from several threads ----------------------------------- */

static void *server_churn(void *arg)
{
    (void)arg;
    uint8_t *mem = calloc(1, 64 * KIB);
    for (int k = 0; k < 5; k++) {
        railwire_server *s = start_server(RAILWIRE_DIALECT_RW, mem, 64 * KIB);
        CHECK(s != NULL, "server create");
        if (!s)
            continue;
        railwire_railset *rs = connect_rs(s, RAILWIRE_DIALECT_RW, 1);
        CHECK(rs != NULL, "connect");
        railwire_railset_close(rs);
        railwire_server_destroy(s);
    }
    free(mem);
    return NULL;
}

static int run_servers(void)
{
    int before = atomic_load(&failures);
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, server_churn, NULL);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    return atomic_load(&failures) != before;
}

int main(void)
{
    railwire_log_set_level(getenv("RAILWIRE_LOG") ? RAILWIRE_LOG_INFO : RAILWIRE_LOG_ERROR);
    layer = malloc(LAYER);
    for (size_t i = 0; i < LAYER; i++)
        layer[i] = pat(i);
    int passed = 0, failed = 0, f;
#define SCENARIO(name, call)                                                                       \
    atomic_store(&failures, 0);                                                                    \
    f = (call);                                                                                    \
    printf("%s %s\n", f ? "FAIL" : "PASS", name);                                                  \
    fflush(stdout);                                                                                \
    f ? failed++ : passed++;
    SCENARIO("async: 8 threads submit and wait, exactly-once delivery", run_async(8, -1));
    SCENARIO("sync: 6 threads of synchronous helpers among 2 pollers", run_sync(6));
    SCENARIO("heal: 4 threads while rail 1 is killed and heals", run_async(4, 300));
    SCENARIO("mr: registrations come and go during transfers and a heal", run_mr());
    SCENARIO("server: created and destroyed from 4 threads", run_servers());
#undef SCENARIO
    printf("%d passed, %d failed\n", passed, failed);
    free(layer);
    return failed ? 1 : 0;
}
