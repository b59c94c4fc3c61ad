/* SPDX-License-Identifier: MIT */
/* `railwire devices` on whatever this machine has: without RDMA devices it
 * says so and exits 0; with devices every port shows the GID it would use. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "verbs/verbs.h"

#define RW_BIN RAILWIRE_BINARY_DIR "/tools/railwire/railwire"

/* Runs `railwire devices ARGS`, captures stdout into buf; returns the exit status. */
static int run_devices(const char *args, char *buf, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' devices %s 2>/dev/null", RW_BIN, args);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "popen");
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    cr_assert(WIFEXITED(st), "railwire devices did not exit normally");
    return WEXITSTATUS(st);
}

static int have_ports(void)
{
    struct rw_vdev_info *d = NULL;
    size_t n = 0;
    int rc = rw_verbs_inventory(-1, &d, &n);
    rw_verbs_inventory_free(d, n);
    return rc == 0 && n > 0;
}

Test(cmd_devices, text_output_explains_or_says_none)
{
    static char out[1 << 16];
    int st = run_devices("", out, sizeof(out));
    cr_assert_eq(st, 0, "exit status %d", st);
    if (have_ports())
        cr_assert(strstr(out, "railwire uses GID") || strstr(out, "no GID usable"),
                  "no GID explanation in:\n%s", out);
    else
        cr_assert(strstr(out, "no RDMA devices"), "output:\n%s", out);
}

Test(cmd_devices, json_output)
{
    static char out[1 << 16];
    int st = run_devices("--json", out, sizeof(out));
    cr_assert_eq(st, 0);
    cr_assert(strncmp(out, "{\"devices\": [", 13) == 0, "output:\n%s", out);
    if (!have_ports())
        cr_assert(strstr(out, "{\"devices\": []"), "output:\n%s", out);
    else
        cr_assert(strstr(out, "\"gid_index\": "), "output:\n%s", out);
}

Test(cmd_devices, usage_errors_exit_2)
{
    static char out[4096];
    cr_assert_eq(run_devices("--bogus", out, sizeof(out)), 2);
    cr_assert_eq(run_devices("--gid-index x", out, sizeof(out)), 2);
    cr_assert_eq(run_devices("--help", out, sizeof(out)), 0);
    cr_assert(strstr(out, "usage: railwire devices"));
}

Test(cmd_devices, malformed_gid_env_fails_with_1)
{
    static char out[4096];
    cr_assert_eq(run_devices("", out, sizeof(out)), 0);
    setenv("RAILWIRE_GID_INDEX", "abc", 1);
    int st = run_devices("", out, sizeof(out));
    unsetenv("RAILWIRE_GID_INDEX");
    cr_assert_eq(st, 1);
}
