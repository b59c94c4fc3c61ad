/* SPDX-License-Identifier: MIT */
/* The heal worker thread (see heal.h): opens a session through each host
 * in turn, keeps the rails that were asked for, and proves each with a
 * 1-byte READ before the railset's thread installs them. */
#include "rail/client/heal_worker.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/client/railset_testing.h"

#define RW_PROBE_BYTES 64

/* Healers freed in this process (rw_heal_test_healers_freed). */
static atomic_uint_fast64_t healers_freed;

uint64_t rw_heal_test_healers_freed(void)
{
    return atomic_load(&healers_freed);
}

void rw_heal_free_strings(char **v, unsigned n)
{
    for (unsigned i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void rw_healer_free(struct rw_healer *h)
{
    rw_heal_free_strings(h->cfg.local_addr, h->cfg.n_rails);
    rw_heal_free_strings(h->cfg.device, h->cfg.n_rails);
    if (h->has_res)
        rw_session_close(h->cfg.ops, &h->res);
    if (h->open_ctx_release)
        h->open_ctx_release(h->open_ctx);
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h);
    atomic_fetch_add(&healers_freed, 1);
}

/* Destroys rail i of an opened session. */
static void drop_rail(const struct rw_transport_ops *ops, struct rw_session_out *out, unsigned i)
{
    if (out->ep[i])
        ops->ep_destroy(out->ep[i]);
    if (out->dom[i])
        ops->domain_close(out->dom[i]);
    free(out->remote[i]);
    out->ep[i] = NULL;
    out->dom[i] = NULL;
    out->remote[i] = NULL;
}

/* Proves a new rail with a 1-byte READ of its first region, bounded by the
 * op timeout.  Returns 0 or why it failed. */
static int probe_rail(const struct rw_heal_cfg *cfg, struct rw_domain *dom, struct rw_ep *ep,
                      const struct rw_mr_desc *remote, unsigned i)
{
    const struct rw_transport_ops *ops = cfg->ops;
    uint8_t *buf = calloc(1, RW_PROBE_BYTES);
    struct rw_mr *mr = NULL;
    int rc;

    if (!buf)
        return RAILWIRE_E_NOMEM;
    rc = ops->mr_reg(dom, buf, RW_PROBE_BYTES, RW_ACCESS_LOCAL, &mr);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = buf, .mr = mr, .length = 1,
                       .remote_addr = remote[0].base_addr, .rkey = remote[0].rkey,
                       .signaled = 1};
    rc = ops->ep_post(ep, &wr, 1);
    if (rc == 1) {
        int64_t deadline = rw_now_ms() + (cfg->op_timeout_ms > 0 ? cfg->op_timeout_ms : 10000);
        for (;;) {
            struct rw_wc wc;
            int n = ops->ep_poll(ep, &wc, 1);
            if (n < 0) {
                rc = n;
                break;
            }
            if (n == 1) {
                rc = wc.status;
                break;
            }
            int left = rw_ms_left(deadline);
            if (left == 0) {
                rc = RAILWIRE_E_TIMEOUT;
                break;
            }
            int fd = ops->ep_wait_fd(ep);
            if (fd >= 0 && ops->ep_arm(ep) >= 0) {
                n = ops->ep_poll(ep, &wc, 1);
                if (n == 1) {
                    rc = wc.status;
                    break;
                }
                struct pollfd p = {.fd = fd, .events = POLLIN};
                poll(&p, 1, left < 50 ? left : 50);
            } else {
                struct timespec ts = {0, 1000000L};
                nanosleep(&ts, NULL);
            }
        }
    } else if (rc >= 0) {
        rc = RAILWIRE_E_RAIL_DOWN;
    }
    if (rc != 0) {
        rw_warn("heal: rail %u (%s): the probe READ failed (%s); the new rail is not used", i,
                dom->name, railwire_error_class(rc));
        /* Nothing may touch the probe buffer once it is freed. */
        ops->ep_kill(ep);
    }
    ops->mr_dereg(mr);
    free(buf);
    return rc;
}

/* Drops the rails nobody asked for and probes the others.  Returns 0 when
 * at least one needed rail passed its probe. */
static int probe_all(const struct rw_healer *h, const struct rw_heal_req *req,
                     struct rw_session_out *out)
{
    int rc = RAILWIRE_E_CONNECT, ok = 0;

    for (unsigned i = 0; i < out->n_rails; i++) {
        if (!out->ep[i])
            continue;
        if (!req->need[i]) {
            drop_rail(h->cfg.ops, out, i);
            continue;
        }
        int e = probe_rail(&h->cfg, out->dom[i], out->ep[i], out->remote[i], i);
        if (e == 0) {
            ok = 1;
        } else {
            rc = e;
            drop_rail(h->cfg.ops, out, i);
        }
    }
    return ok ? 0 : rc;
}

static int stopping(struct rw_healer *h)
{
    pthread_mutex_lock(&h->lock);
    int s = h->stop;
    pthread_mutex_unlock(&h->lock);
    return s;
}

/* One attempt: each host in turn until a session opens; then the probes. */
static int attempt(struct rw_healer *h, const struct rw_heal_req *req, struct rw_session_out *out,
                   char *via)
{
    int rc = RAILWIRE_E_CONNECT;

    for (unsigned k = 0; k < req->n_hosts && !stopping(h); k++) {
        rc = h->open(&h->cfg, req, req->hosts[k], out, h->open_ctx);
        if (rc < 0) {
            rw_info("heal: no session through %s (%s)", req->hosts[k], railwire_error_class(rc));
            continue;
        }
        rc = probe_all(h, req, out);
        if (rc == 0) {
            snprintf(via, RW_HEAL_HOST_MAX, "%s", req->hosts[k]);
            return 0;
        }
        /* The server answered but its rails do not work: another address
         * reaches the same rails. */
        rw_session_close(h->cfg.ops, out);
        return rc;
    }
    return rc;
}

void *rw_heal_worker_main(void *arg)
{
    struct rw_healer *h = arg;

    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->stop && !h->has_req) {
            /* Idle until asked; the bounded wait only re-checks. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&h->cond, &h->lock, &ts);
        }
        if (h->stop)
            break;
        struct rw_heal_req req = h->req;
        h->has_req = 0;
        h->busy = 1;
        pthread_mutex_unlock(&h->lock);

        struct rw_session_out out;
        char via[RW_HEAL_HOST_MAX] = "";
        memset(&out, 0, sizeof(out));
        out.fd = -1;
        int rc = attempt(h, &req, &out, via);

        pthread_mutex_lock(&h->lock);
        h->busy = 0;
        if (h->stop) {
            if (rc == 0)
                rw_session_close(h->cfg.ops, &out);
            break;
        }
        h->res = out;
        h->res_rc = rc;
        memcpy(h->res_via, via, sizeof(via));
        h->has_res = 1;
        atomic_store(&h->res_ready, 1);
        uint64_t one = 1;
        if (h->wake_fd >= 0 && write(h->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            rw_debug("heal: cannot signal the wake eventfd: %s", strerror(errno));
    }
    int last = --h->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (last)
        rw_healer_free(h);
    return NULL;
}
