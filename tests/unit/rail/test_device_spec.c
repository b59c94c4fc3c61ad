/* SPDX-License-Identifier: MIT */
/* Per-rail domain placement: tcp local addresses, verbs "dev[:port]" and
 * the RAILWIRE_DEVICES default, rail i on entry i mod n. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "rail/session/device_spec.h"

Test(device_spec, tcp_uses_the_local_address_or_any)
{
    struct rw_domain_cfg cfg = {0};
    struct rw_domain_place pl;
    rw_domain_place_fill(&cfg, &pl, &rw_tcp_ops, "10.1.2.3", "ignored", 0);
    cr_assert_str_eq(cfg.device, "10.1.2.3");
    cr_assert_eq(cfg.port, 0);
    rw_domain_place_fill(&cfg, &pl, &rw_tcp_ops, "fd00::1", NULL, 1);
    cr_assert_str_eq(cfg.device, "fd00::1", "an IPv6 address keeps its colons");
    rw_domain_place_fill(&cfg, &pl, &rw_tcp_ops, NULL, NULL, 2);
    cr_assert_null(cfg.device);
}

/* A transport placed by device, as verbs is, in any build. */
static const struct rw_transport_ops by_device = {.name = "by-device", .places_by_device = 1};

Test(device_spec, verbs_device_and_port)
{
    struct rw_domain_cfg cfg = {0};
    struct rw_domain_place pl;
    rw_domain_place_fill(&cfg, &pl, &by_device, "10.0.0.1", "mlx5_1:2", 0);
    cr_assert_str_eq(cfg.device, "mlx5_1");
    cr_assert_eq(cfg.port, 2);
    rw_domain_place_fill(&cfg, &pl, &by_device, NULL, "rxe_a0", 0);
    cr_assert_str_eq(cfg.device, "rxe_a0");
    cr_assert_eq(cfg.port, 0);
}

#if RAILWIRE_HAVE_VERBS
Test(device_spec, verbs_default_is_railwire_devices_round_robin)
{
    setenv("RAILWIRE_DEVICES", "rxe_a0:1,rxe_a1", 1);
    struct rw_domain_place d[8];
    cr_assert_eq(rw_default_places(&rw_verbs_ops, d, 8), 2);
    cr_assert_str_eq(d[0].device, "rxe_a0:1");
    struct rw_domain_cfg cfg = {0};
    struct rw_domain_place pl;
    const char *want[4] = {"rxe_a0", "rxe_a1", "rxe_a0", "rxe_a1"};
    for (unsigned i = 0; i < 4; i++) {
        rw_domain_place_fill(&cfg, &pl, &rw_verbs_ops, NULL, NULL, i);
        cr_assert_str_eq(cfg.device, want[i], "rail %u", i);
    }
    cr_assert_eq(rw_default_places(&rw_tcp_ops, d, 8), 0);
}
#endif
