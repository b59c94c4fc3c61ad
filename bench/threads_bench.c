/* SPDX-License-Identifier: MIT */
/* Many threads on one railset: ops/s of 1, 2, 4 and 8 threads submitting
 * 4 KiB and 64 KiB READs over loopback tcp, as a ratio of one thread in the
 * same run (the railset is thread-safe; this shows what its lock costs).
 *
 *   sync   each thread loops railwire_read (one transfer in flight each)
 *   async  each thread keeps 8 of its transfers in flight with
 *          railwire_submit and takes whatever completions railwire_wait
 *          hands it (delivery is shared)
 *
 * usage: railwire_threads_bench [--seconds S] [--rails N] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "common/time.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define DEPTH 8

struct job {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf;            /* per thread: DEPTH slots of size */
    size_t size;
    int async;
    unsigned threads;
    int64_t end_ms;
    atomic_ullong ops;
    atomic_int errors;
    atomic_int inflight;
};

struct targ {
    struct job *j;
    unsigned t;
};

static void *worker(void *arg)
{
    struct targ *a = arg;
    struct job *j = a->j;
    uint8_t *mine = j->buf + (size_t)a->t * DEPTH * j->size;
    unsigned next = 0;
    railwire_completion c[32];

    while (rw_now_ms() < j->end_ms) {
        if (!j->async) {
            int rc = railwire_read(j->rs, j->mr, mine, j->size, 0, (uint64_t)a->t * j->size, 10000);
            if (rc)
                atomic_fetch_add(&j->errors, 1);
            else
                atomic_fetch_add(&j->ops, 1);
            continue;
        }
        while (atomic_load(&j->inflight) < (int)(DEPTH * j->threads)) {
            railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = j->mr,
                              .local = mine + (size_t)(next % DEPTH) * j->size, .length = j->size,
                              .remote_offset = (uint64_t)(next % 64) * j->size};
            railwire_handle h;
            if (railwire_submit(j->rs, &op, &h) < 0) {
                atomic_fetch_add(&j->errors, 1);
                break;
            }
            atomic_fetch_add(&j->inflight, 1);
            next++;
        }
        int n = railwire_wait(j->rs, c, 32, 100);
        if (n > 0) {
            atomic_fetch_sub(&j->inflight, n);
            atomic_fetch_add(&j->ops, (unsigned long long)n);
        }
    }
    return NULL;
}

/* Drains what is still in flight so the next run starts clean. */
static void drain(struct job *j)
{
    railwire_completion c[32];
    int64_t end = rw_now_ms() + 20000;
    while (atomic_load(&j->inflight) > 0 && rw_now_ms() < end) {
        int n = railwire_wait(j->rs, c, 32, 200);
        if (n > 0)
            atomic_fetch_sub(&j->inflight, n);
    }
}

static double run(railwire_railset *rs, railwire_mr *mr, uint8_t *buf, size_t size, int async,
                  unsigned threads, double seconds)
{
    struct job j = {.rs = rs, .mr = mr, .buf = buf, .size = size, .async = async,
                    .threads = threads};
    pthread_t th[8];
    struct targ args[8];
    int64_t t0 = rw_now_ms();
    j.end_ms = t0 + (int64_t)(seconds * 1000);
    for (unsigned t = 0; t < threads; t++) {
        args[t] = (struct targ){&j, t};
        pthread_create(&th[t], NULL, worker, &args[t]);
    }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    double el = (double)(rw_now_ms() - t0) / 1e3;
    drain(&j);
    if (atomic_load(&j.errors))
        fprintf(stderr, "warning: %d transfer(s) failed\n", atomic_load(&j.errors));
    return (double)atomic_load(&j.ops) / el;
}

int main(int argc, char **argv)
{
    double seconds = 2.0;
    unsigned rails = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rails"))
            rails = (unsigned)atoi(argv[i + 1]);
    }
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
    size_t layer = 64 * 64 * KIB;
    uint8_t *mem = calloc(1, layer);
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    railwire_region reg = {mem, layer};
    so.layers = &reg;
    so.n_layers = 1;
    railwire_server *srv;
    if (railwire_server_create(&so, &srv) < 0)
        return 1;
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.queue_depth = 64;
    railwire_railset *rs;
    if (railwire_railset_connect("127.0.0.1", port, &o, &rs) < 0)
        return 1;
    size_t buf_len = 8 * DEPTH * 64 * KIB;
    uint8_t *buf = malloc(buf_len);
    railwire_mr *mr;
    if (railwire_mr_register(rs, buf, buf_len, &mr) < 0)
        return 1;
    printf("one railset, %u tcp rail(s) on loopback, %.1f s per run; ops/s and the ratio "
           "against 1 thread in the same run\n", rails, seconds);
    printf("%-6s %6s %8s %12s %7s\n", "mode", "size", "threads", "ops/s", "ratio");
    static const size_t sizes[] = {4 * KIB, 64 * KIB};
    static const unsigned counts[] = {1, 2, 4, 8};
    for (int async = 0; async <= 1; async++) {
        for (size_t s = 0; s < 2; s++) {
            double base = 0;
            for (size_t k = 0; k < 4; k++) {
                double v = run(rs, mr, buf, sizes[s], async, counts[k], seconds);
                if (k == 0)
                    base = v;
                printf("%-6s %5zuK %8u %12.0f %7.2f\n", async ? "async" : "sync", sizes[s] / KIB,
                       counts[k], v, base > 0 ? v / base : 0);
                fflush(stdout);
            }
        }
    }
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    free(buf);
    free(mem);
    return 0;
}
