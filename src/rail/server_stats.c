/* SPDX-License-Identifier: MIT */
/* The server's counters: updated by the loop thread, read from any thread. */
#include <string.h>

#include "rail/server_internal.h"

void rw_srv_count(struct railwire_server *srv, size_t field, int64_t d)
{
    pthread_mutex_lock(&srv->stats_lock);
    uint64_t *p = (uint64_t *)(void *)((char *)&srv->st + field);
    *p = (uint64_t)((int64_t)*p + d);
    pthread_mutex_unlock(&srv->stats_lock);
}

int railwire_server_stats(const railwire_server *srv, struct railwire_server_stats *out)
{
    if (!srv || !out)
        return RAILWIRE_E_INVALID;
    pthread_mutex_t *lock = (pthread_mutex_t *)&srv->stats_lock;
    pthread_mutex_lock(lock);
    memcpy(out, &srv->st, sizeof(*out));
    pthread_mutex_unlock(lock);
    return 0;
}

unsigned railwire_server_sessions(const railwire_server *srv)
{
    if (!srv)
        return 0;
    pthread_mutex_t *lock = (pthread_mutex_t *)&srv->stats_lock;
    pthread_mutex_lock(lock);
    unsigned n = (unsigned)srv->st.sessions_live;
    pthread_mutex_unlock(lock);
    return n;
}
