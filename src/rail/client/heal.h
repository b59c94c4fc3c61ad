/* SPDX-License-Identifier: MIT */
/* Healing (docs/healing.md): a railset that has lost rails opens a new
 * session to the same server for the rails it lacks, proves each new rail
 * with a 1-byte READ, and puts it back in service in place of the lost one
 * (rail i keeps its local NIC or device).  Rails whose session's control
 * connection ended are replaced the same way while they still work, before
 * the server's linger releases them.
 *
 * The blocking part (connect, handshake, rail bring-up, probe) runs in one
 * worker thread per railset, started when it is first needed: those calls
 * wait for seconds on a bad link, and submit/poll/wait must never wait on
 * them.  The railset's own thread only posts requests and installs results
 * (rw_heal_tick, from progress), so the railset's structures are touched by
 * that thread alone.  Backoff with jitter between attempts; a rail that
 * dies again soon after a heal doubles the delay instead of resetting it, so
 * a flapping link cannot thrash the server with handshakes. */
#ifndef RW_RAIL_HEAL_H
#define RW_RAIL_HEAL_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <stdint.h>

#include <railwire/railset.h>

#include "rail/client/session_open.h"
#include "transport/transport.h"

#define RW_DEFAULT_HEAL_BACKOFF_MIN_MS 100
#define RW_DEFAULT_HEAL_BACKOFF_MAX_MS 30000
#define RW_DEFAULT_HEAL_STABLE_MS 10000
#define RW_DEFAULT_HEALING_TRIES 3
#define RW_HEAL_MAX_HOSTS 16   /* the last good one, the original, then distinct rail GIDs */
#define RW_HEAL_HOST_MAX 256

/* What a new session of this railset needs, copied from the options at
 * connect (the options' pointers are only borrowed for that call). */
struct rw_heal_cfg {
    const struct rw_transport_ops *ops;
    enum railwire_dialect dialect;
    char port[16];
    unsigned n_rails;
    char **local_addr;          /* n_rails strings (NULL = any), owned by the healer */
    char **device;              /* n_rails strings (NULL = default), owned by the healer */
    int gid_index;
    unsigned mtu;
    unsigned queue_depth;
    int connect_timeout_ms;
    int io_timeout_ms;
    int busy_poll_us;           /* railwire_railset_opts.busy_poll_us */
    int op_timeout_ms;          /* bounds the probe READ */
    unsigned n_layers;          /* RO: a heal must find the same layer count */
    int backoff_min_ms, backoff_max_ms, stable_ms;
};

/* One heal attempt: a session of n_rails rails (so the server maps rail i
 * to the same NIC as in the first session), of which the `need` ones are
 * wanted; the hosts are tried in order. */
struct rw_heal_req {
    unsigned n_rails;
    uint8_t need[RAILWIRE_MAX_RAILS];
    char hosts[RW_HEAL_MAX_HOSTS][RW_HEAL_HOST_MAX];
    unsigned n_hosts;
};

/* Opens one session through `host` (the worker thread calls it).  Fills
 * *out as rw_session_open does (partial: at least one needed rail up).
 * Returns 0 or an error.  heal_open.c has the real one; tests plug in
 * others. */
typedef int (*rw_heal_open_fn)(const struct rw_heal_cfg *cfg, const struct rw_heal_req *req,
                               const char *host, struct rw_session_out *out, void *ctx);

/* The network opener: rw_session_open through `host` with cfg's options. */
int rw_heal_open_network(const struct rw_heal_cfg *cfg, const struct rw_heal_req *req,
                         const char *host, struct rw_session_out *out, void *ctx);

/* Turns healing on for rs, with the original server address `host` and
 * the opener; the healer takes over cfg's strings and its reference to
 * ctx (also on failure): it calls ctx_release(ctx) (when not NULL) once
 * the worker is done with it, which may be after rs is closed, since an
 * attempt in progress at close still runs to its end.
 * Returns 0 or RAILWIRE_E_NOMEM. */
int rw_heal_enable(railwire_railset *rs, const char *host, const struct rw_heal_cfg *cfg,
                   rw_heal_open_fn open, void *ctx, void (*ctx_release)(void *ctx));
/* Stops healing and releases the healer (at close).  Never waits for an
 * attempt in progress: the worker finishes it alone and frees what it
 * opened. */
void rw_heal_disable(railwire_railset *rs);

/* Reaction (dispatch.c) to rail i going down: schedules an attempt
 * (damped when the rail had been healed recently). */
void rw_heal_rail_lost(railwire_railset *rs, unsigned i, int64_t now_ms);
/* The heal timer (dispatch.c, from progress): installs a finished attempt,
 * putting its rails in service through the rail state machine, and starts
 * the next one when it is due.  Never blocks. */
void rw_heal_tick(railwire_railset *rs, int64_t now_ms);
/* Reaction (dispatch.c) to a session's control connection ending: its
 * rails are replaced by a new session's while they still work. */
void rw_heal_session_ended(railwire_railset *rs);
/* An fd that becomes readable when an attempt finished (for the wait's
 * poll()), or -1. */
int rw_heal_wait_fd(const railwire_railset *rs);
/* When the healer wants a tick (its next attempt), INT64_MAX: not before
 * an attempt in progress finishes (its wait fd says when), or never. */
int64_t rw_heal_deadline(const railwire_railset *rs);

/* Test hooks.  Sets the control port later sessions dial (only before the
 * first attempt starts); returns 1 while an attempt is in progress. */
void rw_heal_test_set_port(railwire_railset *rs, const char *port);
int rw_heal_test_busy(const railwire_railset *rs);

#endif
