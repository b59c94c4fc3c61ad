/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the real `railwire decode` before any commit. */
#include <stdio.h>

#include "commands.h"

int cmd_decode(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "railwire decode: not built yet\n");
    return 1;
}
