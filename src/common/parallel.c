/* SPDX-License-Identifier: MIT */
/* rw_parallel_for: one thread per index (n is small: rails or devices). */
#include "common/parallel.h"

#include <pthread.h>
#include <stdlib.h>

struct job {
    int (*fn)(void *ctx, unsigned i);
    void *ctx;
    unsigned i;
    int rc;
    pthread_t th;
    int started;
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    j->rc = j->fn(j->ctx, j->i);
    return NULL;
}

int rw_parallel_for(unsigned n, int parallel, int (*fn)(void *ctx, unsigned i), void *ctx)
{
    struct job *jobs = NULL;
    if (parallel && n > 1)
        jobs = calloc(n, sizeof(*jobs));
    if (!jobs) {
        int first = 0;
        for (unsigned i = 0; i < n; i++) {
            int rc = fn(ctx, i);
            if (rc < 0 && first == 0)
                first = rc;
        }
        return first;
    }
    for (unsigned i = 0; i < n; i++) {
        jobs[i] = (struct job){.fn = fn, .ctx = ctx, .i = i};
        jobs[i].started = pthread_create(&jobs[i].th, NULL, run_job, &jobs[i]) == 0;
        if (!jobs[i].started)
            jobs[i].rc = fn(ctx, i);
    }
    int first = 0;
    for (unsigned i = 0; i < n; i++) {
        if (jobs[i].started)
            pthread_join(jobs[i].th, NULL);
        if (jobs[i].rc < 0 && first == 0)
            first = jobs[i].rc;
    }
    free(jobs);
    return first;
}
