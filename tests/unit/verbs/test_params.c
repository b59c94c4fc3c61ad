/* SPDX-License-Identifier: MIT */
/* RAILWIRE_DEVICES parsing, the path MTU rule, link speed, env numbers. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include <railwire/error.h>

#include "verbs/params.h"

Test(devspec, parses_names_and_ports)
{
    struct rw_devspec s[8];
    cr_assert_eq(rw_devspec_parse("rxe_a0:1, mlx5_0,mlx5_1:2", s, 8), 3);
    cr_assert_str_eq(s[0].dev, "rxe_a0");
    cr_assert_eq(s[0].port, 1);
    cr_assert_str_eq(s[1].dev, "mlx5_0");
    cr_assert_eq(s[1].port, 0);
    cr_assert_str_eq(s[2].dev, "mlx5_1");
    cr_assert_eq(s[2].port, 2);
    cr_assert_eq(rw_devspec_parse("dev", s, 8), 1);
    cr_assert_str_eq(s[0].dev, "dev");
}

Test(devspec, rejects_malformed)
{
    struct rw_devspec s[2];
    const char *bad[] = {"", ",", "dev,", ":1", "dev:", "dev:0", "dev:x", "dev:1x", "dev:256",
                         "a,b,c",
                         "a_name_that_is_far_too_long_for_any_rdma_device_name_0123456789abcdef"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(rw_devspec_parse(bad[i], s, 2), RAILWIRE_E_INVALID, "'%s' accepted", bad[i]);
    cr_assert_eq(rw_devspec_parse(NULL, s, 2), RAILWIRE_E_INVALID);
}

Test(mtu, bytes_and_codes)
{
    cr_assert_eq(rw_mtu_bytes(1), 256);
    cr_assert_eq(rw_mtu_bytes(5), 4096);
    cr_assert_eq(rw_mtu_bytes(0), 0);
    cr_assert_eq(rw_mtu_bytes(6), 0);
    cr_assert_eq(rw_mtu_code_floor(1500), 3); /* 1024 */
    cr_assert_eq(rw_mtu_code_floor(9000), 5);
    cr_assert_eq(rw_mtu_code_floor(255), 0);
}

Test(mtu, path_mtu_is_min_of_port_cap_env)
{
    cr_assert_eq(rw_path_mtu(5, 0, 0), 5);    /* 4096 port, default cap 4096 */
    cr_assert_eq(rw_path_mtu(3, 0, 0), 3);    /* port 1024 wins */
    cr_assert_eq(rw_path_mtu(5, 2048, 0), 4); /* cap wins */
    cr_assert_eq(rw_path_mtu(5, 0, 1024), 3); /* env wins */
    cr_assert_eq(rw_path_mtu(5, 1024, 4096), 3);
    cr_assert_eq(rw_path_mtu(4, 8192, 0), 4); /* a cap above 4096 changes nothing */
    cr_assert_eq(rw_path_mtu(5, 100, 0), 0);  /* invalid cap */
    cr_assert_eq(rw_path_mtu(5, 0, 100), 0);  /* invalid env */
}

Test(speed, gbps_from_speed_and_width)
{
    cr_assert_float_eq(rw_link_gbps(32, 2), 103.125, 1e-9); /* EDR 4x */
    cr_assert_float_eq(rw_link_gbps(1, 1), 2.5, 1e-9);      /* SDR 1x */
    cr_assert_float_eq(rw_link_gbps(64, 2), 200.0, 1e-9);   /* HDR 4x */
    cr_assert_float_eq(rw_link_gbps(128, 16), 200.0, 1e-9); /* NDR 2x */
    cr_assert(rw_link_gbps(0, 0) > 0);
}

Test(env, unsigned_values)
{
    unsigned long v = 99;
    unsetenv("RWT_VERBS_X");
    cr_assert_eq(rw_env_uint("RWT_VERBS_X", 10, &v), 0);
    setenv("RWT_VERBS_X", "7", 1);
    cr_assert_eq(rw_env_uint("RWT_VERBS_X", 10, &v), 1);
    cr_assert_eq(v, 7);
    setenv("RWT_VERBS_X", "11", 1);
    cr_assert_eq(rw_env_uint("RWT_VERBS_X", 10, &v), RAILWIRE_E_INVALID);
    setenv("RWT_VERBS_X", "-1", 1);
    cr_assert_eq(rw_env_uint("RWT_VERBS_X", 10, &v), RAILWIRE_E_INVALID);
    setenv("RWT_VERBS_X", "3x", 1);
    cr_assert_eq(rw_env_uint("RWT_VERBS_X", 10, &v), RAILWIRE_E_INVALID);
    unsetenv("RWT_VERBS_X");
}
