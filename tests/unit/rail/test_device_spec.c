/* SPDX-License-Identifier: MIT */
/* Per-rail domain placement: tcp local addresses, verbs "dev[:port]" and
 * the RAILWIRE_DEVICES default, rail i on entry i mod n. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "rail/device_spec.h"

Test(device_spec, tcp_uses_the_local_address_or_any)
{
    struct rw_domain_cfg cfg = {0};
    struct rw_domain_place pl;
    rw_domain_place_fill(&cfg, &pl, "tcp", "10.1.2.3", "ignored", 0);
    cr_assert_str_eq(cfg.device, "10.1.2.3");
    cr_assert_eq(cfg.port, 0);
    rw_domain_place_fill(&cfg, &pl, "tcp", "fd00::1", NULL, 1);
    cr_assert_str_eq(cfg.device, "fd00::1", "an IPv6 address keeps its colons");
    rw_domain_place_fill(&cfg, &pl, "tcp", NULL, NULL, 2);
    cr_assert_null(cfg.device);
}

Test(device_spec, verbs_device_and_port)
{
    struct rw_domain_cfg cfg = {0};
    struct rw_domain_place pl;
    rw_domain_place_fill(&cfg, &pl, "verbs", "10.0.0.1", "mlx5_1:2", 0);
    cr_assert_str_eq(cfg.device, "mlx5_1");
    cr_assert_eq(cfg.port, 2);
    rw_domain_place_fill(&cfg, &pl, "verbs", NULL, "rxe_a0", 0);
    cr_assert_str_eq(cfg.device, "rxe_a0");
    cr_assert_eq(cfg.port, 0);
}

#if RAILWIRE_HAVE_VERBS
Test(device_spec, verbs_default_is_railwire_devices_round_robin)
{
    setenv("RAILWIRE_DEVICES", "rxe_a0:1,rxe_a1", 1);
    struct rw_domain_place d[8];
    cr_assert_eq(rw_default_places("verbs", d, 8), 2);
    cr_assert_str_eq(d[0].device, "rxe_a0:1");
    struct rw_domain_cfg cfg = {0};
    struct rw_domain_place pl;
    const char *want[4] = {"rxe_a0", "rxe_a1", "rxe_a0", "rxe_a1"};
    for (unsigned i = 0; i < 4; i++) {
        rw_domain_place_fill(&cfg, &pl, "verbs", NULL, NULL, i);
        cr_assert_str_eq(cfg.device, want[i], "rail %u", i);
    }
    cr_assert_eq(rw_default_places("tcp", d, 8), 0);
}
#endif
