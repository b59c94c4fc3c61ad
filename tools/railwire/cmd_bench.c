/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the real `railwire bench` before any commit. */
#include <stdio.h>

#include "commands.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "railwire bench: not built yet\n");
    return 1;
}
