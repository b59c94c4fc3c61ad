/* SPDX-License-Identifier: MIT */
/* The tcp transport's ops table: dispatches each ep call to the client or
 * the server implementation according to the domain's role. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "tcp/tcp_cli_io.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_stage.h"

static int is_server(const struct rw_ep *ep)
{
    return rw_tcp_dom(ep->dom)->role == RW_ROLE_SERVER;
}

static struct rw_tcp_srv_ep *srv(struct rw_ep *ep)
{
    return rw_container_of(ep, struct rw_tcp_srv_ep, base);
}

static struct rw_tcp_cli_ep *cli(struct rw_ep *ep)
{
    return rw_container_of(ep, struct rw_tcp_cli_ep, base);
}

/* domain_open: rw_tcp_domain_open, then this table as the domain's ops
 * (tcp_domain.c does not name the table, so the ops file is the only one
 * that points both ways). */
static int tcp_domain_open(const struct rw_domain_cfg *cfg, struct rw_domain **out)
{
    int rc = rw_tcp_domain_open(cfg, out);
    if (rc == 0)
        (*out)->ops = &rw_tcp_ops;
    return rc;
}

static int tcp_ep_create(struct rw_domain *dom, const struct rw_ep_cfg *cfg, struct rw_ep **out)
{
    static const struct rw_ep_cfg defaults;
    struct rw_tcp_domain *d = rw_tcp_dom(dom);

    *out = NULL;
    if (!cfg)
        cfg = &defaults;
    if (d->role == RW_ROLE_SERVER && cfg->same_session &&
        cfg->same_session->dom->ops != &rw_tcp_ops) {
        rw_err("tcp: ep_create: same_session names an ep that is not a tcp server ep");
        return RAILWIRE_E_INVALID;
    }
    if (d->role == RW_ROLE_SERVER)
        return rw_tcp_srv_ep_create(d, cfg, out);
    return rw_tcp_cli_ep_create(d, cfg, out);
}

static int tcp_ep_connect(struct rw_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    if (!remote) {
        rw_err("tcp: ep_connect without a remote identity");
        return RAILWIRE_E_INVALID;
    }
    if (is_server(ep))
        return rw_tcp_srv_ep_connect(srv(ep), remote, timeout_ms);
    return rw_tcp_cli_ep_connect(cli(ep), remote, timeout_ms);
}

static int tcp_ep_post(struct rw_ep *ep, const struct rw_wr *wrs, size_t n)
{
    if (is_server(ep)) {
        rw_err("tcp: ep_post on a server endpoint: the tcp server side is passive");
        return RAILWIRE_E_UNSUPPORTED;
    }
    if (rw_tcp_stage_any(wrs, n))
        return rw_tcp_stage_post(cli(ep), wrs, n);
    return rw_tcp_cli_ep_post(cli(ep), wrs, n);
}

static int tcp_ep_poll(struct rw_ep *ep, struct rw_wc *wcs, int max)
{
    if (is_server(ep))
        return 0;
    int n = rw_tcp_cli_ep_poll(cli(ep), wcs, max);
    if (n == 0 && max > 0 && rw_tcp_cli_attend(cli(ep)))
        n = rw_tcp_cli_ep_poll(cli(ep), wcs, max);
    if (n >= 0 && __atomic_load_n(&cli(ep)->stage, __ATOMIC_ACQUIRE))
        n = rw_tcp_stage_polled(cli(ep), wcs, n, max);
    return n;
}

static int tcp_ep_wait_fd(struct rw_ep *ep)
{
    return is_server(ep) ? -1 : cli(ep)->wfd;
}

static int tcp_ep_arm_after(struct rw_ep *ep, unsigned want)
{
    if (is_server(ep))
        return 0;
    /* Staged completions (CUDA memory) are held past ep->polled until
     * their copy ends (tcp_stage.c): the caller's count of what it awaits
     * no longer matches the ring's, so every completion wakes. */
    if (__atomic_load_n(&cli(ep)->stage, __ATOMIC_ACQUIRE))
        want = 1;
    int rc = rw_tcp_cli_arm(cli(ep), want);
    if (rc >= 0 && rw_tcp_stage_busy(cli(ep))) {
        /* Held completions and no wake-up from the driver: stay awake. */
        rw_tcp_cli_notify(cli(ep));
        rc = 0;
    }
    return rc;
}

static int tcp_ep_arm(struct rw_ep *ep)
{
    return tcp_ep_arm_after(ep, 1);
}

static void tcp_ep_kill(struct rw_ep *ep)
{
    if (!ep)
        return;
    if (is_server(ep))
        rw_tcp_srv_ep_kill(srv(ep));
    else {
        rw_tcp_cli_ep_kill(cli(ep));
        rw_tcp_stage_kill(cli(ep));
    }
}

static void tcp_ep_destroy(struct rw_ep *ep)
{
    if (!ep)
        return;
    if (is_server(ep))
        rw_tcp_srv_ep_destroy(srv(ep));
    else {
        rw_tcp_cli_ep_stop(cli(ep));
        rw_tcp_stage_ep_free(cli(ep)); /* its staging, once no thread uses it */
        rw_tcp_cli_ep_free(cli(ep));
    }
}

static int tcp_ep_liveness(struct rw_ep *ep)
{
    return is_server(ep) ? rw_tcp_srv_ep_liveness(srv(ep)) : RW_EP_UNKNOWN;
}

const struct rw_transport_ops rw_tcp_ops = {
    .name = "tcp",
    .rails_share_cores = 1,
    .domain_open = tcp_domain_open,
    .domain_close = rw_tcp_domain_close,
    .mr_reg = rw_tcp_mr_reg,
    .mr_dereg = rw_tcp_mr_dereg,
    .ep_create = tcp_ep_create,
    .ep_connect = tcp_ep_connect,
    .ep_post = tcp_ep_post,
    .ep_poll = tcp_ep_poll,
    .ep_wait_fd = tcp_ep_wait_fd,
    .ep_arm = tcp_ep_arm,
    .ep_arm_after = tcp_ep_arm_after,
    .ep_kill = tcp_ep_kill,
    .ep_destroy = tcp_ep_destroy,
    .ep_liveness = tcp_ep_liveness,
    .domain_served = rw_tcp_domain_served,
    .mr_reg_mem = rw_tcp_mr_reg_mem,
};
