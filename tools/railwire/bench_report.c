/* SPDX-License-Identifier: MIT */
#include "bench_report.h"

#include <stdlib.h>

#include "bench_util.h"

/* Rails up to this count get a column each in the results and a row each in
 * the rail table; more are summarised (min / median / max, and a row for
 * every rail that is not plainly healthy). */
#define REPORT_RAILS_IN_FULL 8
#define REPORT_ROWS_IN_FULL 16

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* min, median and max of v[0..n) (v is sorted in place). */
static void spread(double *v, unsigned n, double *lo, double *mid, double *hi)
{
    qsort(v, n, sizeof(*v), cmp_double);
    *lo = n ? v[0] : 0;
    *mid = n ? v[n / 2] : 0;
    *hi = n ? v[n - 1] : 0;
}

/* A rail worth its own row when there are many: down, healed, erring. */
static int notable(const railwire_rail_stats *st)
{
    return st->state != RAILWIRE_RAIL_UP || st->heals || st->errors || st->last_down_reason ||
           !st->control_up;
}

static const char *state_name(enum railwire_rail_state st)
{
    return st == RAILWIRE_RAIL_UP ? "up" : "down";
}

void bench_report_table(FILE *f, const struct bench_summary *s)
{
    char sz[32];

    fprintf(f, "transport %s, dialect %s, %s, %u rail%s, depth %u, target %s%s\n", s->transport,
            s->dialect, s->op, s->rails, s->rails == 1 ? "" : "s", s->depth, s->target,
            s->loopback ? " (loopback)" : "");
    tool_format_size(sz, sizeof(sz), s->reg_bytes);
    fprintf(f, "connect %.2f ms, registration %.3f ms (%s)", s->connect_ms, s->reg_ms, sz);
    if (s->loopback)
        fprintf(f, ", server create+registration %.3f ms", s->server_reg_ms);
    fprintf(f, "\n\n");

    int full = s->rails <= REPORT_RAILS_IN_FULL;
    double v[RAILWIRE_MAX_RAILS], lo, mid, hi;
    fprintf(f, "%10s %10s %9s %12s %10s %10s", "size", "transfers", "GB/s", "transfers/s",
            "p50 us", "p99 us");
    if (full)
        for (unsigned r = 0; r < s->rails; r++)
            fprintf(f, "  rail%u GB/s", r);
    else
        fprintf(f, "  per-rail GB/s min / median / max");
    fprintf(f, "\n");
    for (unsigned i = 0; i < s->n_results; i++) {
        const struct bench_result *x = &s->results[i];
        tool_format_size(sz, sizeof(sz), x->size);
        fprintf(f, "%10s %10llu %9.3f %12.0f %10.1f %10.1f", sz, (unsigned long long)x->transfers,
                x->gbps, x->tps, x->p50_us, x->p99_us);
        if (full) {
            for (unsigned r = 0; r < s->rails; r++)
                fprintf(f, "  %10.3f", x->rail_gbps[r]);
        } else {
            for (unsigned r = 0; r < s->rails; r++)
                v[r] = x->rail_gbps[r];
            spread(v, s->rails, &lo, &mid, &hi);
            fprintf(f, "  %.3f / %.3f / %.3f", lo, mid, hi);
        }
        if (x->failed)
            fprintf(f, "  (%llu FAILED)", (unsigned long long)x->failed);
        fprintf(f, "\n");
    }

    fprintf(f, "\n%4s %-24s %5s %14s %14s %10s %7s %8s %5s %7s  %s\n", "rail", "name", "state",
            "bytes read", "bytes written", "slices", "errors", "reissued", "heals", "session",
            "last down reason");
    unsigned shown = 0, up = 0;
    for (unsigned r = 0; r < s->n_rail; r++) {
        const railwire_rail_stats *st = &s->rail[r];
        v[r] = (double)(st->bytes_read + st->bytes_written);
        up += st->state == RAILWIRE_RAIL_UP;
        if (s->n_rail > REPORT_ROWS_IN_FULL && !notable(st))
            continue;
        shown++;
        fprintf(f, "%4u %-24s %5s %14llu %14llu %10llu %7llu %8llu %5llu %6u%s  %s\n", st->index,
                st->name, state_name(st->state), (unsigned long long)st->bytes_read,
                (unsigned long long)st->bytes_written, (unsigned long long)st->ops,
                (unsigned long long)st->errors, (unsigned long long)st->reissued,
                (unsigned long long)st->heals, st->session, st->control_up ? " " : "*",
                st->last_down_reason ? railwire_error_class(st->last_down_reason) : "-");
    }
    if (s->n_rail > REPORT_ROWS_IN_FULL) {
        spread(v, s->n_rail, &lo, &mid, &hi);
        fprintf(f, "%u rails, %u up; %u shown above (down, healed, erring or without a control "
                   "connection), the other %u healthy; bytes per rail min %.0f, median %.0f, max "
                   "%.0f (--json lists every rail)\n", s->n_rail, up, shown, s->n_rail - shown, lo,
                mid, hi);
    }
    for (unsigned r = 0; r < s->n_rail; r++)
        if (!s->rail[r].control_up) {
            fprintf(f, "(* = the session's control connection has ended; its rails keep working)\n");
            break;
        }
    fprintf(f, "\nverify: %s; failed transfers: %llu%s%s\n", s->verify,
            (unsigned long long)s->failed, s->first_error[0] ? "; first error: " : "",
            s->first_error);
}

/* Writes s as a JSON string (the names and messages here are plain ASCII,
 * but escape what JSON requires anyway). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void bench_report_json(FILE *f, const struct bench_summary *s)
{
    fprintf(f, "{\"transport\": ");
    json_str(f, s->transport);
    fprintf(f, ", \"dialect\": ");
    json_str(f, s->dialect);
    fprintf(f, ", \"op\": ");
    json_str(f, s->op);
    fprintf(f, ", \"target\": ");
    json_str(f, s->target);
    fprintf(f, ", \"loopback\": %s, \"rails\": %u, \"depth\": %u, \"slice\": %llu, \"warmup\": %llu",
            s->loopback ? "true" : "false", s->rails, s->depth, (unsigned long long)s->slice,
            (unsigned long long)s->warmup);
    fprintf(f, ", \"connect_ms\": %.3f, \"registration_ms\": %.3f, \"registration_bytes\": %llu",
            s->connect_ms, s->reg_ms, (unsigned long long)s->reg_bytes);
    if (s->loopback)
        fprintf(f, ", \"server_registration_ms\": %.3f", s->server_reg_ms);
    fprintf(f, ", \"results\": [");
    for (unsigned i = 0; i < s->n_results; i++) {
        const struct bench_result *x = &s->results[i];
        fprintf(f, "%s{\"size\": %llu, \"transfers\": %llu, \"failed\": %llu, \"seconds\": %.6f, "
                   "\"gbps\": %.6f, \"transfers_per_s\": %.1f, \"p50_us\": %.2f, \"p99_us\": %.2f, "
                   "\"rail_gbps\": [",
                i ? ", " : "", (unsigned long long)x->size, (unsigned long long)x->transfers,
                (unsigned long long)x->failed, x->seconds, x->gbps, x->tps, x->p50_us, x->p99_us);
        for (unsigned r = 0; r < s->rails; r++)
            fprintf(f, "%s%.6f", r ? ", " : "", x->rail_gbps[r]);
        fprintf(f, "]}");
    }
    fprintf(f, "], \"rail_stats\": [");
    for (unsigned r = 0; r < s->n_rail; r++) {
        const railwire_rail_stats *st = &s->rail[r];
        static const char *const ktls[4] = {"none", "send", "recv", "both"};
        fprintf(f, "%s{\"index\": %u, \"name\": ", r ? ", " : "", st->index);
        json_str(f, st->name);
        fprintf(f, ", \"tls\": \"%s\", \"tls_ktls\": \"%s\"",
                st->tls == RAILWIRE_RAIL_TLS_KERNEL ? "kernel"
                : st->tls == RAILWIRE_RAIL_TLS_USER ? "user" : "off",
                ktls[st->tls_ktls & 3u]);
        fprintf(f, ", \"state\": \"%s\", \"gbps_weight\": %.3f, \"bytes_read\": %llu, "
                   "\"bytes_written\": %llu, \"slices\": %llu, \"errors\": %llu, \"reissued\": %llu, "
                   "\"heals\": %llu, \"heal_attempts\": %llu, \"session\": %u, \"control_up\": %s, "
                   "\"down_reason\": ",
                state_name(st->state), st->gbps, (unsigned long long)st->bytes_read,
                (unsigned long long)st->bytes_written, (unsigned long long)st->ops,
                (unsigned long long)st->errors, (unsigned long long)st->reissued,
                (unsigned long long)st->heals, (unsigned long long)st->heal_attempts, st->session,
                st->control_up ? "true" : "false");
        if (st->down_reason)
            json_str(f, railwire_error_class(st->down_reason));
        else
            fprintf(f, "null");
        fprintf(f, ", \"last_down_reason\": ");
        if (st->last_down_reason)
            json_str(f, railwire_error_class(st->last_down_reason));
        else
            fprintf(f, "null");
        fprintf(f, "}");
    }
    fprintf(f, "], \"verify\": ");
    json_str(f, s->verify);
    fprintf(f, ", \"failed\": %llu, \"first_error\": ", (unsigned long long)s->failed);
    json_str(f, s->first_error);
    fprintf(f, "}\n");
}
