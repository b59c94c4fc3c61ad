/* SPDX-License-Identifier: MIT */
/* The sessions (control connections) the railset's rails belong to, and
 * the detector of a control connection's end (it reports to the rail state
 * machine; the healer reacts through dispatch). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "rail/client/rail_state.h"

struct rw_rsess *rw_rsess_add(railwire_railset *rs, int fd)
{
    struct rw_rsess *s = calloc(1, sizeof(*s));
    if (!s) {
        rw_err("railset: out of memory for a session");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    s->id = rs->next_sess_id++;
    s->fd = fd;
    s->had_ctrl = s->ctrl_up = fd >= 0;
    s->next = rs->sessions;
    rs->sessions = s;
    return s;
}

void rw_rsess_unuse(railwire_railset *rs, struct rw_rsess *s)
{
    if (!s)
        return;
    if (s->users)
        s->users--;
    if (s->users)
        return;
    for (struct rw_rsess **pp = &rs->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (s->fd >= 0) {
        rw_debug("railset: session %u has no rail left; closing its control connection", s->id);
        close(s->fd);
    }
    free(s);
}

void rw_rsess_check(railwire_railset *rs)
{
    for (struct rw_rsess *s = rs->sessions; s; s = s->next) {
        if (!s->ctrl_up)
            continue;
        char junk[256];
        ssize_t n = recv(s->fd, junk, sizeof(junk), MSG_DONTWAIT);
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
            continue; /* still open (bytes after the ack are not part of the conversation) */
        const char *why = n == 0 ? "the server closed it" : strerror(errno);
        close(s->fd);
        s->fd = -1;
        s->ctrl_up = 0;
        unsigned k = 0;
        for (unsigned i = 0; i < rs->n_rails; i++)
            k += rs->rails[i].sess == s;
        rw_warn("railset: the control connection of session %u ended (%s); its %u rail(s) keep "
                "working%s", s->id, why, k,
                rs->healer ? " and are moved to a new session as soon as one opens" : "");
        rw_rail_report_control_ended(rs, s);
    }
}
