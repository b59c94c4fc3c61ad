/* SPDX-License-Identifier: MIT */
#include "null_bench.h"
int nb_rate_main(int argc, char **argv){(void)argc;(void)argv;return 2;}
