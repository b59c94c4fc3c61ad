/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <railwire/log.h>

#include "gtest.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_text[16384];
static size_t g_len;

static const char *standin_path(void)
{
    const char *moved = getenv("RAILWIRE_TEST_STANDIN");
    return moved && *moved ? moved : RW_STANDIN_PATH;
}

void gt_use_standin(void)
{
    setenv("RAILWIRE_CUDA_LIBRARY", standin_path(), 1);
}

static void sink(enum railwire_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    pthread_mutex_lock(&g_mu);
    size_t n = strlen(msg);
    if (g_len + n + 2 < sizeof(g_text)) {
        memcpy(g_text + g_len, msg, n);
        g_len += n;
        g_text[g_len++] = '\n';
        g_text[g_len] = 0;
    }
    pthread_mutex_unlock(&g_mu);
}

void gt_log_capture(void)
{
    pthread_mutex_lock(&g_mu);
    g_len = 0;
    g_text[0] = 0;
    pthread_mutex_unlock(&g_mu);
    railwire_log_set_level(RAILWIRE_LOG_DEBUG);
    railwire_log_set_sink(sink, NULL);
}

int gt_log_has(const char *needle)
{
    pthread_mutex_lock(&g_mu);
    int has = strstr(g_text, needle) != NULL;
    pthread_mutex_unlock(&g_mu);
    return has;
}

const char *gt_log_text(void)
{
    return g_text;
}

void *gt_standin_sym(const char *name)
{
    void *h = dlopen(standin_path(), RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *s = dlsym(h, name);
    dlclose(h);
    return s;
}
