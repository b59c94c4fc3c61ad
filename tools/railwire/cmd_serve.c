/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the real `railwire serve` before any commit. */
#include <stdio.h>

#include "commands.h"

int cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "railwire serve: not built yet\n");
    return 1;
}
