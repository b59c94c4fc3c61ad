/* SPDX-License-Identifier: MIT */
/* Transport choice: explicit values, RAILWIRE_TRANSPORT, AUTO.  The real
 * transports are replaced by stubs so device availability is scripted. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "transport/select.h"

const struct rw_transport_ops rw_tcp_ops = {.name = "tcp"};
static int verbs_present;
#if RAILWIRE_HAVE_VERBS
const struct rw_transport_ops rw_verbs_ops = {.name = "verbs"};
int rw_verbs_available(void)
{
    return verbs_present;
}
#endif

static void clean_env(void)
{
    unsetenv("RAILWIRE_TRANSPORT");
    verbs_present = 0;
}

TestSuite(transport_select, .init = clean_env);

Test(transport_select, explicit_tcp_is_tcp_whatever_the_environment)
{
    const struct rw_transport_ops *ops = NULL;
    setenv("RAILWIRE_TRANSPORT", "verbs", 1);
    verbs_present = 1;
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_TCP, &ops), 0);
    cr_assert_eq(ops, &rw_tcp_ops);
}

Test(transport_select, auto_without_devices_is_tcp)
{
    const struct rw_transport_ops *ops = NULL;
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), 0);
    cr_assert_eq(ops, &rw_tcp_ops);
}

Test(transport_select, env_tcp_overrides_auto)
{
    const struct rw_transport_ops *ops = NULL;
    verbs_present = 1;
    setenv("RAILWIRE_TRANSPORT", "tcp", 1);
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), 0);
    cr_assert_eq(ops, &rw_tcp_ops);
}

Test(transport_select, unknown_env_value_is_invalid)
{
    const struct rw_transport_ops *ops = NULL;
    setenv("RAILWIRE_TRANSPORT", "carrier-pigeon", 1);
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_transport_select((enum railwire_transport)9, &ops), RAILWIRE_E_INVALID);
}

#if RAILWIRE_HAVE_VERBS
Test(transport_select, auto_with_an_active_port_is_verbs)
{
    const struct rw_transport_ops *ops = NULL;
    verbs_present = 1;
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), 0);
    cr_assert_eq(ops, &rw_verbs_ops);
}

Test(transport_select, verbs_without_a_port_is_no_device)
{
    const struct rw_transport_ops *ops = NULL;
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_VERBS, &ops), RAILWIRE_E_NO_DEVICE);
    setenv("RAILWIRE_TRANSPORT", "verbs", 1);
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), RAILWIRE_E_NO_DEVICE);
    verbs_present = 1;
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), 0);
    cr_assert_eq(ops, &rw_verbs_ops);
}
#else
Test(transport_select, verbs_in_a_build_without_it_is_unsupported)
{
    const struct rw_transport_ops *ops = NULL;
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_VERBS, &ops), RAILWIRE_E_UNSUPPORTED);
    setenv("RAILWIRE_TRANSPORT", "VERBS", 1);
    cr_assert_eq(rw_transport_select(RAILWIRE_TRANSPORT_AUTO, &ops), RAILWIRE_E_UNSUPPORTED);
}
#endif
