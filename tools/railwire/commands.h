/* SPDX-License-Identifier: MIT */
/* The `railwire` subcommands.  Each takes the arguments after its own name
 * (argv[0] is the subcommand name) and returns the process exit status. */
#ifndef RAILWIRE_TOOL_COMMANDS_H
#define RAILWIRE_TOOL_COMMANDS_H

int cmd_decode(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_devices(int argc, char **argv);

#endif
