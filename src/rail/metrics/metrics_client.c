/* SPDX-License-Identifier: MIT */
/* railwire_railset_metrics(): a railset's per-rail counters
 * (railwire_railset_stats) in the Prometheus text format, so an engine can
 * serve them on its own endpoint.  docs/metrics.md describes every family.
 * Labels are per rail (rail index and local domain name), so a railset has
 * at most RAILWIRE_MAX_RAILS series per family. */
#include <stdlib.h>
#include <string.h>

#include <railwire/railset.h>

#include "rail/metrics/metrics_text.h"

struct cli_row {
    const char *name, *type, *help;
    size_t field; /* offsetof(railwire_rail_stats, ...), a uint64_t */
};

#define R(f) offsetof(railwire_rail_stats, f)

static const struct cli_row rows[] = {
    {"railwire_client_read_bytes_total", "counter", "Bytes this rail has read from the server.",
     R(bytes_read)},
    {"railwire_client_written_bytes_total", "counter",
     "Bytes this rail has written to the server.", R(bytes_written)},
    {"railwire_client_slices_total", "counter", "Slices (striping units) completed on this rail.",
     R(ops)},
    {"railwire_client_slice_errors_total", "counter", "Slices that failed on this rail.",
     R(errors)},
    {"railwire_client_slices_reissued_total", "counter",
     "Slices moved from this rail to others after it died.", R(reissued)},
    {"railwire_client_heals_total", "counter", "Times healing put this rail back in service.",
     R(heals)},
    {"railwire_client_heal_attempts_total", "counter",
     "Heal attempts that tried to bring this rail back.", R(heal_attempts)},
};

static void rail_labels(struct rw_mtext *m, const railwire_rail_stats *s)
{
    rw_mt_printf(m, "{rail=\"%u\",device=\"", s->index);
    rw_mt_label_value(m, s->name);
    rw_mt_printf(m, "\"}");
}

static const char *tls_mode(uint32_t tls)
{
    switch (tls) {
    case RAILWIRE_RAIL_TLS_OFF:
        return "off";
    case RAILWIRE_RAIL_TLS_USER:
        return "user";
    case RAILWIRE_RAIL_TLS_KERNEL:
        return "kernel";
    default:
        return "unknown";
    }
}

static const char *ktls_dirs(uint32_t k)
{
    static const char *const names[4] = {"none", "send", "recv", "both"};
    return names[k & (RAILWIRE_KTLS_SEND | RAILWIRE_KTLS_RECV)];
}

ssize_t railwire_railset_metrics(const railwire_railset *rs, char *buf, size_t size)
{
    railwire_rail_stats *st;
    struct rw_mtext m;
    unsigned up = 0;
    int n;

    if (!rs || (!buf && size))
        return RAILWIRE_E_INVALID;
    st = calloc(RAILWIRE_MAX_RAILS, sizeof(*st));
    if (!st)
        return RAILWIRE_E_NOMEM;
    n = railwire_railset_stats(rs, st, RAILWIRE_MAX_RAILS, sizeof(*st));
    if (n < 0) {
        free(st);
        return n;
    }
    if (n > RAILWIRE_MAX_RAILS)
        n = RAILWIRE_MAX_RAILS;
    rw_mt_init(&m, buf, size);
    rw_mt_build_info(&m);
    for (int i = 0; i < n; i++)
        up += st[i].state == RAILWIRE_RAIL_UP;
    rw_mt_family(&m, "railwire_client_rails", "gauge", "Rails of the railset by state.");
    rw_mt_printf(&m, "railwire_client_rails{transport=\"%s\",state=\"up\"} %u\n",
                 railwire_railset_transport(rs), up);
    rw_mt_printf(&m, "railwire_client_rails{transport=\"%s\",state=\"down\"} %u\n",
                 railwire_railset_transport(rs), (unsigned)n - up);
    rw_mt_family(&m, "railwire_client_rail_up", "gauge",
                 "1 while the rail is in service, 0 while it is down.");
    for (int i = 0; i < n; i++) {
        rw_mt_printf(&m, "railwire_client_rail_up");
        rail_labels(&m, &st[i]);
        rw_mt_printf(&m, " %d\n", st[i].state == RAILWIRE_RAIL_UP);
    }
    rw_mt_family(&m, "railwire_client_rail_control_up", "gauge",
                 "1 while the control connection of the rail's session is open (its end does "
                 "not stop the rail).");
    for (int i = 0; i < n; i++) {
        rw_mt_printf(&m, "railwire_client_rail_control_up");
        rail_labels(&m, &st[i]);
        rw_mt_printf(&m, " %d\n", st[i].control_up ? 1 : 0);
    }
    rw_mt_family(&m, "railwire_client_rail_tls", "gauge",
                 "Always 1: the rail's TLS mode in the labels (mode off, user or kernel; ktls "
                 "the directions the kernel holds: none, send, recv or both).");
    for (int i = 0; i < n; i++) {
        rw_mt_printf(&m, "railwire_client_rail_tls{rail=\"%u\",device=\"", st[i].index);
        rw_mt_label_value(&m, st[i].name);
        rw_mt_printf(&m, "\",mode=\"%s\",ktls=\"%s\"} 1\n", tls_mode(st[i].tls),
                     ktls_dirs(st[i].tls_ktls));
    }
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        rw_mt_family(&m, rows[r].name, rows[r].type, rows[r].help);
        for (int i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, (const char *)&st[i] + rows[r].field, sizeof(v));
            rw_mt_printf(&m, "%s", rows[r].name);
            rail_labels(&m, &st[i]);
            rw_mt_printf(&m, " %llu\n", (unsigned long long)v);
        }
    }
    free(st);
    return (ssize_t)rw_mt_finish(&m);
}
