/* SPDX-License-Identifier: MIT */
/* Heal time (issue 18): from a rail's loss to its replacement in service,
 * on tcp loopback, plain and over TLS (certificates or a PSK).  An
 * in-process server and a 2-rail railset with heal_backoff_min_ms = 1, so
 * the figure is the heal's own work (a new control connection and its
 * handshake, TLS included, and a new rail), not the backoff timer.  Each
 * repetition reports rail 1 failed (rw_test_fail_rail, as a detector
 * would) and waits, calling railwire_poll every 100 us (the caller's calls
 * drive healing), until a rail is put in service
 * again (rails_gen moves) and both rails are live.  Prints one JSON line:
 *   {"mode":"psk","reps":200,"median_ms":1.9,"p90_ms":2.6,"min_ms":..,"max_ms":..}
 * usage: railwire_heal_bench [--reps N] [--psk FILE | --cert F --key F --ca F
 *                             [--server-name NAME]]
 * (the same files serve both sides: a PSK file, or a certificate valid as
 * client and server, as `railwire bench --loopback` takes them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "rail/client/railset_testing.h"

static uint8_t arena[1 << 20];

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(void)
{
    fprintf(stderr, "usage: railwire_heal_bench [--reps N] [--psk FILE | --cert FILE --key FILE "
                    "--ca FILE [--server-name NAME]]\n");
    return 2;
}

/* Waits until a rail was put in service after `gen` and `want` rails are
 * live.  Returns the milliseconds it took, or -1 after 10 s. */
static double wait_heal(railwire_railset *rs, uint64_t gen, unsigned want, int64_t t0_us)
{
    int64_t end = rw_now_ms() + 10000;
    while (rw_now_ms() < end) {
        railwire_completion c;
        railwire_poll(rs, &c, 1); /* the caller's calls drive healing */
        if (rw_test_rails_gen(rs) != gen && rw_test_live(rs) == want)
            return (double)(now_us() - t0_us) / 1000.0;
        usleep(100);
    }
    return -1;
}

int main(int argc, char **argv)
{
    railwire_tls_opts tls;
    const char *mode = "plain";
    int reps = 100, use_tls = 0;

    railwire_tls_opts_init(&tls);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage();
        if (!strcmp(argv[i], "--reps"))
            reps = atoi(v);
        else if (!strcmp(argv[i], "--psk"))
            tls.psk_file = v, mode = "psk", use_tls = 1;
        else if (!strcmp(argv[i], "--cert"))
            tls.cert_file = v, mode = "certificates", use_tls = 1;
        else if (!strcmp(argv[i], "--key"))
            tls.key_file = v;
        else if (!strcmp(argv[i], "--ca"))
            tls.ca_file = v;
        else if (!strcmp(argv[i], "--server-name"))
            tls.server_name = v;
        else
            return usage();
        i++;
    }
    if (reps < 1 || reps > 100000)
        return usage();

    railwire_server_opts so;
    railwire_server *srv = NULL;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){arena, sizeof(arena)};
    so.tls = use_tls ? &tls : NULL;
    if (railwire_server_create(&so, &srv)) {
        fprintf(stderr, "heal_bench: cannot start the server (see the log above)\n");
        return 1;
    }
    railwire_railset_opts o;
    railwire_railset *rs = NULL;
    char port[16];
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    o.heal_backoff_min_ms = 1;
    o.heal_backoff_max_ms = 10;
    o.tls = use_tls ? &tls : NULL;
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
    if (railwire_railset_connect("127.0.0.1", port, &o, &rs)) {
        fprintf(stderr, "heal_bench: cannot connect (see the log above)\n");
        railwire_server_destroy(srv);
        return 1;
    }
    double *ms = calloc((size_t)reps, sizeof(*ms));
    int done = 0, rc = 0;
    for (; ms && done < reps; done++) {
        uint64_t gen = rw_test_rails_gen(rs);
        int64_t t0 = now_us();
        rw_test_fail_rail(rs, 1, RAILWIRE_E_RAIL_DOWN);
        ms[done] = wait_heal(rs, gen, 2, t0);
        if (ms[done] < 0) {
            fprintf(stderr, "heal_bench: repetition %d: no heal within 10 s\n", done);
            rc = 1;
            break;
        }
    }
    if (done > 0) {
        qsort(ms, (size_t)done, sizeof(*ms), cmp_double);
        printf("{\"mode\":\"%s\",\"reps\":%d,\"median_ms\":%.3f,\"p90_ms\":%.3f,"
               "\"min_ms\":%.3f,\"max_ms\":%.3f}\n",
               mode, done, ms[done / 2], ms[(done * 9) / 10 < done ? (done * 9) / 10 : done - 1],
               ms[0], ms[done - 1]);
    }
    free(ms);
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    return rc;
}
