/* SPDX-License-Identifier: MIT */
/* railwire: the command-line tool.  Dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const char usage[] =
    "usage: railwire COMMAND [OPTIONS]\n"
    "\n"
    "Move bytes between machines' memory over several network rails at once.\n"
    "\n"
    "commands:\n"
    "  decode   decode a captured handshake (hex or raw bytes on stdin) to JSON\n"
    "  serve    publish read-only layers or a read-write arena to clients\n"
    "  bench    measure striped READ/WRITE throughput and latency against a server\n"
    "  devices  list RDMA devices, ports and GIDs, and the GID railwire would use\n"
    "\n"
    "options:\n"
    "  -h, --help     this text\n"
    "  --version      print the version and exit\n"
    "\n"
    "Run `railwire COMMAND --help` for a command's options.\n"
    "Environment: RAILWIRE_TRANSPORT=tcp|verbs, RAILWIRE_DEVICES=dev[:port],...,\n"
    "RAILWIRE_GID_INDEX=N, RAILWIRE_MTU=BYTES, RAILWIRE_LOG=error|warn|info|debug,\n"
    "RAILWIRE_LOG_FORMAT=text|json; railwire(7) describes every variable.\n";

#ifndef RAILWIRE_TOOL_VERSION
#define RAILWIRE_TOOL_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        {"decode", cmd_decode},
        {"serve", cmd_serve},
        {"bench", cmd_bench},
        {"devices", cmd_devices},
    };

    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("railwire %s\n", RAILWIRE_TOOL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "railwire: unknown command '%s'\n\n%s", argv[1], usage);
    return 2;
}
