/* SPDX-License-Identifier: MIT */
/* The authorisation list (exact names, "*.suffix", CN / DNS SAN / PSK
 * identity) and the handshake gate. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "tls/tls_allow.h"
#include "tls/tls_gate.h"

static struct rw_tls_peer cert_peer(const char *cn, const char *dns1, const char *dns2)
{
    struct rw_tls_peer p;

    memset(&p, 0, sizeof(p));
    snprintf(p.cn, sizeof(p.cn), "%s", cn);
    if (dns1)
        snprintf(p.dns[p.n_dns++], RW_TLS_NAME_MAX, "%s", dns1);
    if (dns2)
        snprintf(p.dns[p.n_dns++], RW_TLS_NAME_MAX, "%s", dns2);
    return p;
}

static struct rw_tls_peer psk_peer(const char *id)
{
    struct rw_tls_peer p;

    memset(&p, 0, sizeof(p));
    p.psk = 1;
    snprintf(p.psk_identity, sizeof(p.psk_identity), "%s", id);
    return p;
}

Test(tls_allow, empty_list_admits_everyone)
{
    struct rw_tls_allow a;
    struct rw_tls_peer p = cert_peer("anyone", NULL, NULL);
    const char *why = "x";

    rw_tls_allow_init(&a);
    cr_assert_eq(rw_tls_allow_check(&a, &p, &why), 1);
    cr_assert_str_eq(why, "");
    rw_tls_allow_clear(&a);
}

Test(tls_allow, entries_are_validated)
{
    struct rw_tls_allow a;
    char longname[300];

    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    rw_tls_allow_init(&a);
    cr_assert_eq(rw_tls_allow_add(&a, ""), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tls_allow_add(&a, "*"), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tls_allow_add(&a, "*."), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tls_allow_add(&a, "a*.b"), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tls_allow_add(&a, "*.*.b"), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_tls_allow_add(&a, longname), RAILWIRE_E_INVALID);
    cr_assert_eq(a.n, 0);
    cr_assert_eq(rw_tls_allow_add(&a, "*.fleet.test"), 0);
    cr_assert_eq(rw_tls_allow_add(&a, "exact-host"), 0);
    cr_assert_eq(a.n, 2);
    rw_tls_allow_clear(&a);
}

Test(tls_allow, exact_and_suffix_matching)
{
    cr_assert(rw_tls_allow_name_matches("node1", "node1", 0));
    cr_assert(!rw_tls_allow_name_matches("node1", "node10", 0));
    cr_assert(!rw_tls_allow_name_matches("node1", "Node1", 0));
    cr_assert(rw_tls_allow_name_matches("node1", "NODE1", 1));
    cr_assert(rw_tls_allow_name_matches("*.fleet.test", "a.fleet.test", 1));
    cr_assert(rw_tls_allow_name_matches("*.fleet.test", "a.b.fleet.test", 1));
    cr_assert(rw_tls_allow_name_matches("*.fleet.test", "A.FLEET.TEST", 1));
    cr_assert(!rw_tls_allow_name_matches("*.fleet.test", "fleet.test", 1));
    cr_assert(!rw_tls_allow_name_matches("*.fleet.test", ".fleet.test", 1));
    cr_assert(!rw_tls_allow_name_matches("*.fleet.test", "evilfleet.test", 1));
    cr_assert(!rw_tls_allow_name_matches("*.fleet.test", "a.fleet.test.evil", 1));
    cr_assert(!rw_tls_allow_name_matches("x", "", 1));
}

Test(tls_allow, cn_san_and_psk_identity)
{
    struct rw_tls_allow a;
    struct rw_tls_peer by_cn = cert_peer("client-a.fleet.test", NULL, NULL);
    struct rw_tls_peer by_san = cert_peer("someone", "x.other.test", "b.fleet.test");
    struct rw_tls_peer none = cert_peer("someone", "x.other.test", NULL);
    struct rw_tls_peer psk_ok = psk_peer("trainer-7"), psk_case = psk_peer("Trainer-7");
    struct rw_tls_peer psk_cnlike = psk_peer("c.fleet.test");
    const char *why;

    rw_tls_allow_init(&a);
    cr_assert_eq(rw_tls_allow_add(&a, "*.fleet.test"), 0);
    cr_assert_eq(rw_tls_allow_add(&a, "trainer-7"), 0);
    cr_assert_eq(rw_tls_allow_check(&a, &by_cn, &why), 1);
    cr_assert_str_eq(why, "*.fleet.test");
    cr_assert_eq(rw_tls_allow_check(&a, &by_san, &why), 1);
    cr_assert_eq(rw_tls_allow_check(&a, &none, &why), 0);
    cr_assert_str_eq(why, "");
    cr_assert_eq(rw_tls_allow_check(&a, &psk_ok, &why), 1);
    cr_assert_str_eq(why, "trainer-7");
    cr_assert_eq(rw_tls_allow_check(&a, &psk_case, NULL), 0, "PSK identities are exact bytes");
    cr_assert_eq(rw_tls_allow_check(&a, &psk_cnlike, NULL), 1);
    rw_tls_allow_clear(&a);
}

Test(tls_allow, describe)
{
    char buf[128];
    struct rw_tls_peer p = cert_peer("c1", "a.test", "b.test"), q = psk_peer("id1");

    cr_assert_str_eq(rw_tls_peer_describe(&p, buf, sizeof(buf)), "cn:c1 dns:a.test,b.test");
    cr_assert_str_eq(rw_tls_peer_describe(&q, buf, sizeof(buf)), "psk:id1");
    rw_tls_peer_describe(&p, buf, 8);
    cr_assert_eq(strlen(buf), 7);
}

Test(tls_gate, bounds_and_counts)
{
    struct rw_tls_gate g;

    cr_assert_eq(rw_tls_gate_init(&g, 3), 0);
    cr_assert_eq(rw_tls_gate_try(&g), 1);
    cr_assert_eq(rw_tls_gate_try(&g), 1);
    cr_assert_eq(rw_tls_gate_try(&g), 1);
    cr_assert_eq(rw_tls_gate_try(&g), 0);
    cr_assert_eq(rw_tls_gate_try(&g), 0);
    cr_assert_eq(rw_tls_gate_busy(&g), 3);
    cr_assert_eq(g.full, 2);
    cr_assert_eq(rw_tls_gate_enter(&g, rw_now_ms() + 20), RAILWIRE_E_TIMEOUT);
    rw_tls_gate_leave(&g);
    cr_assert_eq(rw_tls_gate_try(&g), 1);
    cr_assert_eq(g.entered, 4);
    for (int i = 0; i < 3; i++)
        rw_tls_gate_leave(&g);
    cr_assert_eq(rw_tls_gate_busy(&g), 0);
    rw_tls_gate_destroy(&g);
    cr_assert_geq(rw_tls_gate_default(), 4);
}

static void *leave_later(void *arg)
{
    usleep(20000);
    rw_tls_gate_leave(arg);
    return NULL;
}

Test(tls_gate, enter_waits_for_a_slot)
{
    struct rw_tls_gate g;
    pthread_t t;

    cr_assert_eq(rw_tls_gate_init(&g, 1), 0);
    cr_assert_eq(rw_tls_gate_try(&g), 1);
    pthread_create(&t, NULL, leave_later, &g);
    cr_assert_eq(rw_tls_gate_enter(&g, rw_now_ms() + 10000), 0);
    pthread_join(t, NULL);
    cr_assert_eq(rw_tls_gate_busy(&g), 1);
    rw_tls_gate_leave(&g);
    rw_tls_gate_destroy(&g);
}
