/* SPDX-License-Identifier: MIT */
/* Issue 19 from many threads at once, over loopback with the real tcp
 * transport (a plain program, so that it also runs under ThreadSanitizer):
 * one thread drives the railset through railwire_railset_fd and
 * railwire_poll alone (an event loop), three submit READs (some with a
 * deadline) and cancel every fourth at once, two run reserved transfers
 * with railwire_wait_handle and synchronous railwire_read, and rail 1 is
 * killed mid-run (healing replaces it: the fd must follow).  Every async
 * transfer comes back exactly once, to the event loop, as success or
 * CANCELED; every reserved one to its own waiter; nothing is left pending.
 * Exit status 0 when it all held. */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "common/time.h"
#include "rail/client/railset_internal.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define ARENA (8 * MIB)
#define SUBMITTERS 3
#define PER_SUBMITTER 3000
#define WAITERS 2
#define PER_WAITER 400
#define N_ASYNC (SUBMITTERS * PER_SUBMITTER)

static railwire_railset *rs;
static uint8_t *scratch;           /* READ targets (each in use by one transfer at a time) */
#define SLOTS 128                  /* per submitter, 16 KiB each, from the start of scratch */
#define WAITER_AREA (8 * MIB)      /* the waiters' own 64 KiB each, from here */
#define SCRATCH (16 * MIB)
static atomic_uchar seen[N_ASYNC];
static atomic_int failures, submitted_all, async_done, cancelled;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                                     \
        fputc('\n', stderr);                                                                       \
        atomic_fetch_add(&failures, 1);                                                            \
    } while (0)

static railwire_mr *scratch_mr;

static void *event_loop(void *arg)
{
    (void)arg;
    int fd = railwire_railset_fd(rs);
    if (fd < 0) {
        FAIL("railwire_railset_fd: %s", railwire_strerror(fd));
        return NULL;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    railwire_completion c[64];
    int64_t deadline = rw_now_ms() + 120000;
    while (atomic_load(&async_done) < N_ASYNC && rw_now_ms() < deadline) {
        if (poll(&p, 1, 1000) < 0)
            continue;
        int n;
        while ((n = railwire_poll(rs, c, 64)) > 0) {
            for (int k = 0; k < n; k++) {
                uint64_t id = c[k].user_data;
                if (id >= N_ASYNC || atomic_fetch_add(&seen[id], 1) != 0)
                    FAIL("async transfer %llu returned twice or unknown",
                         (unsigned long long)id);
                if (c[k].status == RAILWIRE_E_CANCELED)
                    atomic_fetch_add(&cancelled, 1);
                else if (c[k].status != 0)
                    FAIL("async transfer %llu: %s", (unsigned long long)id,
                         railwire_strerror(c[k].status));
                atomic_fetch_add(&async_done, 1);
            }
        }
    }
    if (atomic_load(&async_done) != N_ASYNC)
        FAIL("the event loop got %d of %d async completions", atomic_load(&async_done), N_ASYNC);
    return NULL;
}

static void *submitter(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < PER_SUBMITTER; i++) {
        unsigned id = t * PER_SUBMITTER + i;
        /* The slot's previous transfer must have come back before it is
         * reused (the event loop marks it seen). */
        while (i >= SLOTS && !atomic_load(&seen[id - SLOTS]) && !atomic_load(&failures))
            sched_yield();
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = scratch_mr,
                          .local = scratch + ((size_t)t * SLOTS + i % SLOTS) * 16 * KIB,
                          .length = (id % 3) ? 4 * KIB : 16 * KIB,
                          .remote_offset = (uint64_t)(id * 4099u) % (ARENA - 16 * KIB),
                          .user_data = id, .timeout_ms = (id % 2) ? 60000 : 0};
        railwire_handle h;
        int rc = railwire_submit(rs, &op, &h);
        if (rc < 0) {
            FAIL("submit %u: %s", id, railwire_strerror(rc));
            atomic_fetch_add(&async_done, 1);
            atomic_fetch_add(&seen[id], 1);
            continue;
        }
        if (id % 4 == 0) {
            rc = railwire_cancel(rs, h);
            /* STATE: it finished already; INVALID: the loop returned it already. */
            if (rc < 0 && rc != RAILWIRE_E_STATE && rc != RAILWIRE_E_INVALID)
                FAIL("cancel %u: %s", id, railwire_strerror(rc));
        }
        while (railwire_railset_pending(rs) > 512)
            sched_yield(); /* keep the load bounded */
    }
    atomic_fetch_add(&submitted_all, 1);
    return NULL;
}

static void *waiter(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint8_t *own = scratch + WAITER_AREA + (size_t)t * 64 * KIB;
    for (unsigned i = 0; i < PER_WAITER; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .flags = RAILWIRE_OP_F_RESERVED,
                          .mr = scratch_mr, .local = own, .length = 8 * KIB,
                          .remote_offset = (uint64_t)i * 8 * KIB, .user_data = 1u << 30};
        railwire_handle h;
        int rc = railwire_submit(rs, &op, &h);
        if (rc < 0) {
            FAIL("reserved submit: %s", railwire_strerror(rc));
            continue;
        }
        railwire_completion c;
        rc = railwire_wait_handle(rs, h, 30000, &c);
        if (rc < 0 || c.handle != h || c.status != 0 || c.bytes_moved != 8 * KIB)
            FAIL("wait_handle %llu: rc %d status %d", (unsigned long long)h, rc, rc ? 0 : c.status);
        rc = railwire_read(rs, scratch_mr, own + 8 * KIB, 4 * KIB, 0, 4096, 30000);
        if (rc < 0)
            FAIL("railwire_read: %s", railwire_strerror(rc));
    }
    return NULL;
}

int main(void)
{
    railwire_log_set_level(getenv("RAILWIRE_LOG") ? RAILWIRE_LOG_INFO : RAILWIRE_LOG_ERROR);
    uint8_t *arena = calloc(1, ARENA);
    scratch = calloc(1, SCRATCH);
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){arena, ARENA};
    railwire_server *srv = NULL;
    if (!arena || !scratch || railwire_server_create(&so, &srv) < 0) {
        fprintf(stderr, "FAIL: cannot start the server\n");
        return 1;
    }
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    o.heal_backoff_min_ms = 20;
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
    if (railwire_railset_connect("127.0.0.1", port, &o, &rs) < 0 ||
        railwire_mr_register(rs, scratch, SCRATCH, &scratch_mr) < 0) {
        fprintf(stderr, "FAIL: cannot connect\n");
        return 1;
    }
    pthread_t th[1 + SUBMITTERS + WAITERS];
    pthread_create(&th[0], NULL, event_loop, NULL);
    for (unsigned t = 0; t < SUBMITTERS; t++)
        pthread_create(&th[1 + t], NULL, submitter, (void *)(uintptr_t)t);
    for (unsigned t = 0; t < WAITERS; t++)
        pthread_create(&th[1 + SUBMITTERS + t], NULL, waiter, (void *)(uintptr_t)t);
    /* Kill rail 1 mid-run: its slices move, healing replaces its ep, and
     * the event loop's fd must watch the new one. */
    while (atomic_load(&async_done) < N_ASYNC / 3 && atomic_load(&failures) == 0)
        sched_yield();
    rs_lock(rs); /* as a reset would: behind the railset's back */
    rs->ops->ep_kill(rs->rails[1].ep);
    rs_unlock(rs);
    for (unsigned t = 0; t < 1 + SUBMITTERS + WAITERS; t++)
        pthread_join(th[t], NULL);
    if (railwire_railset_pending(rs) != 0)
        FAIL("%zu transfers still pending", railwire_railset_pending(rs));
    railwire_rail_stats st[2];
    railwire_railset_stats(rs, st, 2, sizeof st[0]);
    printf("%d async (%d cancelled), %u reserved + %u sync; rail 1 heals %llu\n",
           atomic_load(&async_done), atomic_load(&cancelled), WAITERS * PER_WAITER,
           WAITERS * PER_WAITER, (unsigned long long)st[1].heals);
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    free(scratch);
    free(arena);
    int f = atomic_load(&failures);
    printf("%s\n", f ? "FAIL" : "PASS");
    return f ? 1 : 0;
}
