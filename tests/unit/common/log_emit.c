/* SPDX-License-Identifier: MIT */
/* Helper for log_format_test.py: writes log lines through the library's own
 * stderr sink (so RAILWIRE_LOG_FORMAT applies), then, with "cut", prints
 * JSON lines built in buffers too small for them on stdout. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/log_json.h"

static void storm(int i)
{
    rw_warn_rl("server: rejecting client 127.0.0.2:%d: bad hello", 40000 + i);
}

int main(int argc, char **argv)
{
    rw_err("plain");
    rw_warn("server: client 10.0.0.9:41234: rail 3 said \"no\" \\ tab\there\nnewline");
    rw_info("ctl \x01\x1f del \x7f utf8 \xc3\xa9 bad \xff\xc0\xaf end");
    rw_debug("debug line");
    for (int i = 0; i < 3 * RW_LOG_RL_BURST; i++)
        storm(i);
    if (argc > 1 && !strcmp(argv[1], "cut")) {
        char msg[RW_LOG_MSG_MAX], quotes[200], out[256 + 64];
        struct timespec t = {0, 0};
        for (size_t i = 0; i + 1 < sizeof(msg); i++)
            msg[i] = "a\"\\\x01\xc3\xa9"[i % 6];
        msg[sizeof(msg) - 1] = '\0';
        memset(quotes, '"', sizeof(quotes) - 1);
        quotes[sizeof(quotes) - 1] = '\0';
        for (size_t cap = 256; cap <= sizeof(out); cap += 7) {
            rw_log_json_line(out, cap, &t, RAILWIRE_LOG_WARN, msg);
            fputs(out, stdout);
            rw_log_json_line(out, cap, &t, RAILWIRE_LOG_WARN, quotes);
            fputs(out, stdout);
        }
    }
    return 0;
}
