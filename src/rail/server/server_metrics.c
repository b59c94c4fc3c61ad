/* SPDX-License-Identifier: MIT */
/* railwire_server_metrics(): the server's counters in the Prometheus text
 * format, from one railwire_server_stats() snapshot (never the loop's
 * state).  docs/metrics.md describes every family.
 *
 * One row per sample; rows in a row share a family (HELP and TYPE) while
 * their name is the same.  A new gauge is one row (and, if it is a new
 * counter of the server, one field appended to railwire_server_stats). */
#include <stdio.h>
#include <string.h>

#include "rail/metrics/metrics_text.h"
#include "rail/server/server_internal.h"

/* What a row reads: the snapshot plus the limits fixed at create. */
struct srv_view {
    struct railwire_server_stats st;
    uint64_t max_clients, max_pending;
};

enum row_flags {
    ROW_TRANSPORT = 1, /* prepend transport="..." to the labels */
    ROW_DATA = 2,      /* only where the transport counts the data path (tcp) */
    ROW_NS = 4,        /* the field holds nanoseconds: rendered as seconds */
    ROW_STAGING = 8,   /* only where CUDA memory is staged (a staging pool exists) */
};

struct srv_row {
    const char *name, *type, *help;
    const char *labels; /* NULL or `key="value"` pairs */
    size_t field;       /* offsetof(struct srv_view, ...) */
    unsigned flags;
};

#define V(f) offsetof(struct srv_view, f)
#define S(f) offsetof(struct srv_view, st.f)
#define DATA_NOTE " Counted on tcp only: verbs READ/WRITE are one-sided RDMA that never reach the server's CPU, so a verbs server has no samples here."

static const struct srv_row rows[] = {
    {"railwire_server_sessions_live", "gauge",
     "Sessions whose handshake completed and that are not released (lingering ones included).",
     NULL, S(sessions_live), 0},
    {"railwire_server_sessions_lingering", "gauge",
     "Live sessions whose control connection ended; their rails are kept until they close or the linger runs out.",
     NULL, S(sessions_lingering), 0},
    {"railwire_server_sessions_opened_total", "counter",
     "Handshakes completed (ack sent).", NULL, S(sessions_opened), 0},
    {"railwire_server_sessions_released_total", "counter",
     "Sessions released, by reason.", "reason=\"control_ended\"", S(released_control_ended), 0},
    {"railwire_server_sessions_released_total", NULL, NULL, "reason=\"linger_expired\"",
     S(released_linger_expired), 0},
    {"railwire_server_sessions_released_total", NULL, NULL, "reason=\"no_rail_attached\"",
     S(released_no_rail_attached), 0},
    {"railwire_server_sessions_released_total", NULL, NULL, "reason=\"rails_closed\"",
     S(released_rails_closed), 0},
    {"railwire_server_sessions_released_total", NULL, NULL, "reason=\"server_stopping\"",
     S(released_server_stopping), 0},
    {"railwire_server_sessions_released_total", NULL, NULL, "reason=\"displaced\"",
     S(released_displaced), 0},
    {"railwire_server_rails", "gauge",
     "Rails of live sessions by what the transport knows of them (refreshed every 100 ms; verbs has no signal: unknown).",
     "state=\"attached\"", S(rails_attached), ROW_TRANSPORT},
    {"railwire_server_rails", NULL, NULL, "state=\"waiting\"", S(rails_waiting), ROW_TRANSPORT},
    {"railwire_server_rails", NULL, NULL, "state=\"closed\"", S(rails_closed), ROW_TRANSPORT},
    {"railwire_server_rails", NULL, NULL, "state=\"unknown\"", S(rails_unknown), ROW_TRANSPORT},
    {"railwire_server_rails_never_attached_total", "counter",
     "Rails released because the client's rail had not attached within the I/O timeout of the ack.",
     NULL, S(rails_never_attached), 0},
    {"railwire_server_read_bytes_total", "counter",
     "Payload bytes clients read from the published memory." DATA_NOTE, NULL, S(bytes_read),
     ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_read_bytes_by_reference_total", "counter",
     "Of the payload bytes clients read, those handed to the sockets by reference to the published memory rather than copied (tcp, zero_copy_reads)." DATA_NOTE,
     NULL, S(bytes_read_by_reference), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_written_bytes_total", "counter",
     "Payload bytes clients wrote into the arena." DATA_NOTE, NULL, S(bytes_written),
     ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_requests_total", "counter",
     "READ and WRITE requests served." DATA_NOTE, "op=\"read\"", S(requests_read),
     ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_requests_total", NULL, NULL, "op=\"write\"", S(requests_written),
     ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_data_path_counted", "gauge",
     "1 when the transport counts the data path (tcp), 0 when it cannot (verbs: one-sided RDMA never reaches the server's CPU, so the byte and request counters are absent).",
     NULL, S(data_counted), ROW_TRANSPORT},
    {"railwire_server_refusals_total", "counter",
     "Connections, handshakes and requests refused, by class: allowlist (closed at accept), per_peer, max_clients and rails (caps), setup (rails could not be created), handshake_timeout and handshake_failure (rejected handshakes), remote_access (requests outside the published memory; tcp only), identity (authenticated TLS clients not in the TLS allow list), lockout (addresses that failed to authenticate too often, closed at accept).",
     "class=\"allowlist\"", S(rejected_allowlist), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"per_peer\"", S(rejected_per_peer), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"max_clients\"",
     S(rejected_max_clients), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"rails\"", S(rejected_rails), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"setup\"", S(rejected_setup), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"handshake_timeout\"",
     S(handshake_timeouts), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"handshake_failure\"",
     S(handshake_failures), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"remote_access\"",
     S(requests_refused), ROW_DATA},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"identity\"",
     S(rejected_identity), 0},
    {"railwire_server_refusals_total", NULL, NULL, "class=\"lockout\"",
     S(rejected_lockout), 0},
    {"railwire_server_tls", "gauge", "1 when the listener runs TLS 1.3, 0 when it is plain.",
     NULL, S(tls), 0},
    {"railwire_server_tls_handshakes_total", "counter",
     "Control connections whose TLS handshake completed.", NULL, S(tls_handshakes), 0},
    {"railwire_server_tls_failures_total", "counter",
     "TLS handshakes that failed or timed out (also counted as handshake_failure or handshake_timeout refusals).",
     NULL, S(tls_failures), 0},
    {"railwire_server_tls_gate_waits_total", "counter",
     "TLS handshakes that waited for a place (concurrent TLS handshakes are bounded).", NULL,
     S(tls_gate_waits), 0},
    {"railwire_server_tls_reloads_total", "counter",
     "TLS credential reloads (SIGHUP, railwire_server_reload_tls), by result.",
     "result=\"ok\"", S(tls_reloads), 0},
    {"railwire_server_tls_reloads_total", NULL, NULL, "result=\"failed\"",
     S(tls_reload_failures), 0},
    {"railwire_server_tls_mismatch_total", "counter",
     "Clients that spoke the other protocol: a plain client at a TLS listener, a TLS client at a plain one.",
     "client=\"plain\"", S(plain_at_tls), 0},
    {"railwire_server_tls_mismatch_total", NULL, NULL, "client=\"tls\"", S(tls_at_plain), 0},
    {"railwire_server_connections_accepted_total", "counter", "Control connections accepted.",
     NULL, S(accepted), 0},
    {"railwire_server_pending_connections", "gauge",
     "Connections still in their handshake (the pending pool).", NULL, S(pending), 0},
    {"railwire_server_pending_connections_max", "gauge",
     "Size of the pending pool (max_pending); when full the oldest connection is evicted.",
     NULL, V(max_pending), 0},
    {"railwire_server_pending_evictions_total", "counter",
     "Pending connections closed because the pool was full.", NULL, S(evicted), 0},
    {"railwire_server_slots_held", "gauge",
     "Session slots taken under max_clients: live sessions plus handshakes past the params.",
     NULL, S(slots_held), 0},
    {"railwire_server_slots_max", "gauge", "The session slot budget (max_clients).", NULL,
     V(max_clients), 0},
    {"railwire_server_accept_paused", "gauge",
     "1 while accepting is paused for lack of descriptors or memory.", NULL, S(accept_paused),
     0},
    {"railwire_server_accept_pauses_total", "counter",
     "Times accepting was paused (EMFILE, ENFILE, ENOMEM, ENOBUFS).", NULL, S(accept_pauses),
     0},
    {"railwire_server_accept_errors_total", "counter",
     "Accept failures other than nothing to accept.", NULL, S(accept_errors), 0},
    {"railwire_server_queue_budget_bytes", "gauge",
     "The tcp queue budget: bytes that may be queued towards clients (READ answers in the kernel's send queues), shared by every tcp server of the process." DATA_NOTE,
     NULL, S(queue_budget_bytes), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_queue_share_bytes", "gauge",
     "The most one session may have queued of the tcp queue budget." DATA_NOTE, NULL,
     S(queue_share_bytes), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_queued_bytes", "gauge",
     "Bytes queued towards clients now, counted in the tcp queue budget." DATA_NOTE, NULL,
     S(queued_bytes), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_queued_peak_bytes", "gauge",
     "The highest value of railwire_server_queued_bytes since the server started." DATA_NOTE,
     NULL, S(queued_peak_bytes), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_queue_evictions_total", "counter",
     "Rail connections closed because their queued bytes had not moved while the queue budget was used up (clients that do not read their answers)." DATA_NOTE,
     NULL, S(queue_evictions), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_queue_starved_total", "counter",
     "Times a connection found the queue budget used up and waited." DATA_NOTE, NULL,
     S(queue_starved), ROW_TRANSPORT | ROW_DATA},
    {"railwire_server_registered_bytes", "gauge",
     "Bytes of published memory registered, over every domain (published bytes times domains).",
     NULL, S(registered_bytes), ROW_TRANSPORT},
    {"railwire_server_registrations", "gauge",
     "Memory registrations held (regions times domains).", NULL, S(registrations),
     ROW_TRANSPORT},
    {"railwire_server_registration_seconds_total", "counter",
     "Time spent registering the published memory, summed over registrations (domains register in parallel).",
     NULL, S(registration_ns), ROW_TRANSPORT | ROW_NS},
    {"railwire_server_registration_max_seconds", "gauge",
     "The longest single registration of the published memory.", NULL,
     S(registration_max_ns), ROW_TRANSPORT | ROW_NS},
    {"railwire_server_registrations_by_path", "gauge",
     "Registrations of the published memory by the path each took (docs/gpu.md): host memory, a DMA-BUF (verbs), nvidia-peermem (verbs), or staged through pinned host memory (tcp).",
     "path=\"host\"", S(regs_host), ROW_TRANSPORT},
    {"railwire_server_registrations_by_path", NULL, NULL, "path=\"dmabuf\"", S(regs_dmabuf),
     ROW_TRANSPORT},
    {"railwire_server_registrations_by_path", NULL, NULL, "path=\"peermem\"", S(regs_peermem),
     ROW_TRANSPORT},
    {"railwire_server_registrations_by_path", NULL, NULL, "path=\"staged\"", S(regs_staged),
     ROW_TRANSPORT},
    {"railwire_server_staging_bound_bytes", "gauge",
     "The most pinned host memory the server stages CUDA memory through (staging_bytes, in whole chunks).",
     NULL, S(staging_bound), ROW_STAGING},
    {"railwire_server_staging_allocated_bytes", "gauge",
     "Pinned staging memory allocated so far (never above the bound).", NULL,
     S(staging_allocated), ROW_STAGING},
    {"railwire_server_staging_in_use_bytes", "gauge",
     "Pinned staging memory held by requests now.", NULL, S(staging_in_use), ROW_STAGING},
    {"railwire_server_staging_waits_total", "counter",
     "Times a request found every staging chunk in use and waited (back-pressure).", NULL,
     S(staging_waits), ROW_STAGING},
};

ssize_t railwire_server_metrics(const railwire_server *srv, char *buf, size_t size)
{
    struct srv_view v;
    struct rw_mtext m;
    const char *last = "";

    if (!srv || (!buf && size))
        return RAILWIRE_E_INVALID;
    if (railwire_server_stats(srv, &v.st, sizeof(v.st)) < 0)
        return RAILWIRE_E_INVALID;
    v.max_clients = srv->max_clients;
    v.max_pending = srv->max_pending;
    rw_mt_init(&m, buf, size);
    rw_mt_build_info(&m);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct srv_row *r = &rows[i];
        uint64_t val;
        if ((r->flags & ROW_DATA) && !v.st.data_counted)
            continue;
        if ((r->flags & ROW_STAGING) && !v.st.staging_bound)
            continue;
        if (strcmp(r->name, last)) {
            /* The first row of a family carries its type and help. */
            const struct srv_row *h = r;
            while (!h->type)
                h--;
            rw_mt_family(&m, r->name, h->type, h->help);
            last = r->name;
        }
        memcpy(&val, (const char *)&v + r->field, sizeof(val));
        rw_mt_printf(&m, "%s", r->name);
        if (r->labels || (r->flags & ROW_TRANSPORT)) {
            rw_mt_printf(&m, "{");
            if (r->flags & ROW_TRANSPORT)
                rw_mt_printf(&m, "transport=\"%s\"%s", srv->ops->name, r->labels ? "," : "");
            rw_mt_printf(&m, "%s}", r->labels ? r->labels : "");
        }
        if (r->flags & ROW_NS)
            rw_mt_printf(&m, " %.9f\n", (double)val / 1e9);
        else
            rw_mt_printf(&m, " %llu\n", (unsigned long long)val);
    }
    return (ssize_t)rw_mt_finish(&m);
}
