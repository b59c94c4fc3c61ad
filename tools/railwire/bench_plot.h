/* SPDX-License-Identifier: MIT */
/* `railwire bench --plot FILE.png`: draws a run's results with gnuplot. */
#ifndef RAILWIRE_TOOL_BENCH_PLOT_H
#define RAILWIRE_TOOL_BENCH_PLOT_H

#include "bench_report.h"

/* Writes the figures of `s` (one row per transfer size) to BASE.dat and a
 * gnuplot script to BASE.gp, where BASE is `png` without its ".png", then
 * runs gnuplot to draw `png`: GB/s against size (the total, and each rail
 * when there are several) above transfers/s against size.  The .dat and .gp
 * files stay, so the picture can be redrawn or restyled.  Returns 0, or -1
 * with the reason on stderr (gnuplot missing or failing, a file that cannot
 * be written). */
int bench_plot_png(const char *png, const struct bench_summary *s);

#endif
