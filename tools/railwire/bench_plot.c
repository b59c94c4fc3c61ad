/* SPDX-License-Identifier: MIT */
/* `railwire bench --plot` (see bench_plot.h). */
#include "bench_plot.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Returns 1 if `prog` is an executable on PATH. */
static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n && n < sizeof(buf) - strlen(prog) - 2) {
            snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* Writes s as a gnuplot single-quoted string ('' stands for '). */
static void gp_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

static int write_data(const char *path, const struct bench_summary *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# size_bytes gbps transfers_per_s p50_us p99_us");
    for (unsigned r = 0; r < s->rails; r++)
        fprintf(f, " rail%u_gbps", r);
    fprintf(f, "\n");
    for (unsigned i = 0; i < s->n_results; i++) {
        const struct bench_result *x = &s->results[i];
        fprintf(f, "%llu %.6f %.1f %.2f %.2f", (unsigned long long)x->size, x->gbps, x->tps,
                x->p50_us, x->p99_us);
        for (unsigned r = 0; r < s->rails; r++)
            fprintf(f, " %.6f", x->rail_gbps[r]);
        fprintf(f, "\n");
    }
    return fclose(f) ? -1 : 0;
}

static int write_script(const char *path, const char *dat, const char *png,
                        const struct bench_summary *s)
{
    char title[512];
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    snprintf(title, sizeof(title), "railwire bench: %s %s, %u rail%s, depth %u, %s%s",
             s->transport, s->op, s->rails, s->rails == 1 ? "" : "s", s->depth, s->target,
             s->loopback ? " (loopback)" : "");
    fprintf(f, "set terminal pngcairo size 1000,900 font ',11'\nset output ");
    gp_str(f, png);
    fprintf(f, "\nset multiplot layout 2,1 title ");
    gp_str(f, title);
    fprintf(f, "\nset logscale x 2\nset format x '%%.0b%%B'\nset grid\nset key left top\n"
               "set xlabel 'transfer size (bytes)'\nset ylabel 'GB/s (1e9 bytes/s)'\nplot ");
    gp_str(f, dat);
    fprintf(f, " using 1:2 with linespoints lw 2 title 'total'");
    for (unsigned r = 0; s->rails > 1 && r < s->rails; r++) {
        fprintf(f, ", '' using 1:%u with linespoints title 'rail %u'", 6 + r, r);
    }
    fprintf(f, "\nset logscale y 10\nset ylabel 'transfers/s'\nplot ");
    gp_str(f, dat);
    fprintf(f, " using 1:3 with linespoints lw 2 title 'transfers/s'\nunset multiplot\n");
    return fclose(f) ? -1 : 0;
}

int bench_plot_png(const char *png, const struct bench_summary *s)
{
    if (!on_path("gnuplot")) {
        fprintf(stderr, "error: --plot needs gnuplot, which is not on PATH (Debian: apt-get "
                        "install gnuplot-nox); the figures are printed above\n");
        return -1;
    }
    size_t n = strlen(png);
    if (n > 4 && !strcmp(png + n - 4, ".png"))
        n -= 4;
    char *dat = malloc(n + 5), *gp = malloc(n + 4);
    int rc = -1;
    if (!dat || !gp) {
        fprintf(stderr, "error: --plot: out of memory\n");
        goto out;
    }
    snprintf(dat, n + 5, "%.*s.dat", (int)n, png);
    snprintf(gp, n + 4, "%.*s.gp", (int)n, png);
    if (write_data(dat, s) < 0 || write_script(gp, dat, png, s) < 0) {
        fprintf(stderr, "error: --plot: cannot write %s / %s: %s\n", dat, gp, strerror(errno));
        goto out;
    }
    char *argv[] = {"gnuplot", gp, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    int st = 0;
    if (err || waitpid(pid, &st, 0) < 0) {
        fprintf(stderr, "error: --plot: cannot run gnuplot: %s\n", strerror(err ? err : errno));
        goto out;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "error: --plot: gnuplot failed on %s (see its message above)\n", gp);
        goto out;
    }
    rc = 0;
out:
    free(dat);
    free(gp);
    return rc;
}
