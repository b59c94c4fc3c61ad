/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the real `railwire devices` before any commit. */
#include <stdio.h>

#include "commands.h"

int cmd_devices(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "railwire devices: not built yet\n");
    return 1;
}
