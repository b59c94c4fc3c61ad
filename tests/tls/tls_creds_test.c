/* SPDX-License-Identifier: MIT */
/* TLS credentials: what loads, each refused input with a message that
 * names the file and what to fix (key not matching its certificate, PSK
 * file readable by others, bad PSK lines, missing options), and reloads
 * that swap in new credentials or keep the old ones on failure while
 * established connections keep running. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tls_fixture.h"

TestSuite(tls_creds, .init = tls_fx_setup, .fini = tls_fx_teardown, .timeout = 60);

static int build(enum rw_tls_role role, const char *cert, const char *key, const char *ca,
                 const char *psk)
{
    railwire_tls_opts o = tls_opts(cert, key, ca, psk);
    struct rw_tls_creds *c = NULL;
    int rc = rw_tls_creds_new(&o, role, &c);

    cr_assert_eq(rc == 0, c != NULL);
    rw_tls_creds_unref(c);
    return rc;
}

Test(tls_creds, loads_certificates_and_psk)
{
    cr_assert_eq(build(RW_TLS_SERVER, "server.pem", "server.key", "ca.pem", NULL), 0);
    cr_assert_eq(build(RW_TLS_CLIENT, "client.pem", "client.key", "ca.pem", NULL), 0);
    cr_assert_eq(build(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"), 0);
    cr_assert_eq(build(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt"), 0);
    cr_assert_eq(build(RW_TLS_SERVER, "server.pem", "server.key", "ca.pem", "psk.txt"), 0);
}

Test(tls_creds, key_that_does_not_match_its_certificate)
{
    cr_assert_eq(build(RW_TLS_SERVER, "server.pem", "client.key", "ca.pem", NULL),
                 RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("TLS") && tls_log_has("does not match the certificate") &&
              tls_log_has("client.key"));
}

Test(tls_creds, missing_files_and_options)
{
    railwire_tls_opts o;
    struct rw_tls_creds *c = NULL;

    cr_assert_eq(build(RW_TLS_SERVER, "nope.pem", "server.key", "ca.pem", NULL),
                 RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("nope.pem"));
    cr_assert_eq(build(RW_TLS_SERVER, "server.pem", NULL, "ca.pem", NULL), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("missing: key"));
    cr_assert_eq(build(RW_TLS_SERVER, NULL, NULL, NULL, NULL), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("no credentials"));
    cr_assert_eq(build(RW_TLS_SERVER, NULL, NULL, NULL, "nope.txt"), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("cannot open the PSK file"));
    memset(&o, 0, sizeof(o)); /* never initialised */
    cr_assert_eq(rw_tls_creds_new(&o, RW_TLS_CLIENT, &c), RAILWIRE_E_INVALID);
    cr_assert_null(c);
    cr_assert(tls_log_has("railwire_tls_opts_init"));
}

Test(tls_creds, opts_init_sets_size_and_nulls)
{
    railwire_tls_opts o;

    memset(&o, 0xa5, sizeof(o));
    railwire_tls_opts_init(&o);
    cr_assert_eq(o.struct_size, sizeof(o));
    cr_assert_null(o.cert_file);
    cr_assert_null(o.server_name);
    /* An older caller's shorter struct: only its fields are touched. */
    memset(&o, 0xa5, sizeof(o));
    railwire_tls_opts_init_sized(&o, offsetof(railwire_tls_opts, psk_file));
    cr_assert_eq(o.struct_size, offsetof(railwire_tls_opts, psk_file));
    cr_assert_null(o.ca_file);
    cr_assert_eq((uintptr_t)o.psk_file, (uintptr_t)0xa5a5a5a5a5a5a5a5ull);
}

Test(tls_creds, short_struct_hides_later_fields)
{
    railwire_tls_opts o = tls_opts(NULL, NULL, NULL, "psk.txt");
    struct rw_tls_creds *c = NULL;

    /* struct_size ends before psk_file: the PSK is not seen. */
    o.struct_size = (uint32_t)offsetof(railwire_tls_opts, psk_file);
    cr_assert_eq(rw_tls_creds_new(&o, RW_TLS_SERVER, &c), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("no credentials"));
}

Test(tls_creds, psk_file_readable_by_others_is_refused)
{
    char p[512];

    cr_assert_eq(chmod(tls_path(p, sizeof(p), tls_dir, "psk.txt"), 0644), 0);
    cr_assert_eq(build(RW_TLS_SERVER, NULL, NULL, NULL, "psk.txt"), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("readable by group or others") && tls_log_has("chmod 600"));
    tls_log_reset();
    cr_assert_eq(chmod(p, 0640), 0);
    cr_assert_eq(build(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt"), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("readable by group or others"));
    cr_assert_eq(chmod(p, 0400), 0);
    cr_assert_eq(build(RW_TLS_CLIENT, NULL, NULL, NULL, "psk.txt"), 0);
}

static void bad_psk(const char *text, const char *why)
{
    tls_log_reset();
    cr_assert_eq(tls_write_file(tls_dir, "bad.txt", text, 0600), 0);
    cr_assert_eq(build(RW_TLS_SERVER, NULL, NULL, NULL, "bad.txt"), RAILWIRE_E_INVALID,
                 "accepted: %s", text);
    cr_assert(tls_log_has(why), "no '%s' logged for: %s", why, text);
}

#define K32 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

Test(tls_creds, psk_lines_refused)
{
    bad_psk("alpha:0001020304\n", "shorter than 32 bytes");
    bad_psk("alpha:" K32 "0\n", "odd number");
    bad_psk("alpha:" K32 "zz\n", "not hexadecimal");
    bad_psk("alpha " K32 "\n", "no ':'");
    bad_psk(":" K32 "\n", "empty identity");
    bad_psk("al pha:" K32 "\n", "space");
    bad_psk("alpha:" K32 "\nalpha:" K32 "\n", "appears twice");
    bad_psk("# only a comment\n\n", "no IDENTITY:HEXKEY line");
    bad_psk("alpha:" K32 K32 "\n", "longer than 48 bytes");
    cr_assert(tls_log_has("line 1"));
}

Test(tls_creds, psk_parse_details)
{
    struct rw_tls_psk *k = NULL;
    unsigned n = 0;
    char p[512];

    cr_assert_eq(tls_write_file(tls_dir, "ok.txt",
                                "  # keys\r\n"
                                "host:a:b:" K32 "  \r\n"
                                "\n"
                                "z:" K32 "0a0b0c0d0e0f0a0b0c0d0e0f0a0b0c0d\n",
                                0600), 0);
    cr_assert_eq(rw_tls_psk_file_load(tls_path(p, sizeof(p), tls_dir, "ok.txt"), &k, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(k[0].identity, "host:a:b"); /* the key follows the last ':' */
    cr_assert_eq(k[0].key_len, 32);
    cr_assert_eq(k[0].key[31], 0x1f);
    cr_assert_eq(k[1].key_len, 48);
    free(k);
}

Test(tls_creds, client_identity_must_be_in_file)
{
    railwire_tls_opts o = tls_opts(NULL, NULL, NULL, "psk.txt");
    struct rw_tls_creds *c = NULL;

    o.psk_identity = "nobody";
    cr_assert_eq(rw_tls_creds_new(&o, RW_TLS_CLIENT, &c), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("nobody") && tls_log_has("--tls-psk-identity"));
}

/* Copies dir/from over dir/to. */
static void copy_file(const char *from, const char *to)
{
    char a[512], b[512], buf[8192];
    FILE *f = fopen(tls_path(a, sizeof(a), tls_dir, from), "r"), *g;
    size_t n;

    cr_assert_not_null(f);
    g = fopen(tls_path(b, sizeof(b), tls_dir, to), "w");
    cr_assert_not_null(g);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, g);
    fclose(f);
    fclose(g);
}

Test(tls_creds, reload_swaps_or_keeps_old_and_sessions_keep_running)
{
    struct rw_tls_slot slot;
    struct rw_tls_creds *a, *b, *cc;
    railwire_tls_opts o;
    struct tls_pair p, q;

    copy_file("server.pem", "live.pem");
    copy_file("server.key", "live.key");
    o = tls_opts("live.pem", "live.key", "ca.pem", NULL);
    cr_assert_eq(rw_tls_slot_init(&slot, &o, RW_TLS_SERVER), 0);
    a = rw_tls_slot_get(&slot);
    cc = tls_creds(RW_TLS_CLIENT, "client.pem", "client.key", "ca.pem", NULL);
    tls_pair_open(&p, cc, a, "server.test", 0);
    tls_pair_handshake(&p, 5000);
    cr_assert_eq(p.crc, 0);
    cr_assert_eq(p.src, 0);

    /* A broken key file: the reload fails, the old credentials stay. */
    copy_file("client.key", "live.key");
    cr_assert_eq(rw_tls_slot_reload(&slot), RAILWIRE_E_INVALID);
    cr_assert(tls_log_has("keeping the previous TLS credentials"));
    b = rw_tls_slot_get(&slot);
    cr_assert_eq(b, a);
    rw_tls_creds_unref(b);
    cr_assert_eq(slot.reload_failures, 1);

    /* A good pair (the expired one): swapped in; new connections use it. */
    copy_file("expired.pem", "live.pem");
    copy_file("expired.key", "live.key");
    cr_assert_eq(rw_tls_slot_reload(&slot), 0);
    b = rw_tls_slot_get(&slot);
    cr_assert_neq(b, a);
    cr_assert_eq(slot.reloads, 1);
    tls_pair_open(&q, cc, b, "server.test", 0);
    tls_pair_handshake(&q, 5000);
    cr_assert_eq(rw_tls_conn_reason(q.cli), RW_TLS_R_CERT_EXPIRED, "the new cert is in use");
    tls_pair_close(&q);

    /* The connection made before both reloads still carries data. */
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    tls_pair_close(&p);
    rw_tls_creds_unref(a);
    rw_tls_creds_unref(b);
    rw_tls_creds_unref(cc);
    rw_tls_slot_destroy(&slot);
}

Test(tls_creds, reload_of_a_psk_file)
{
    struct rw_tls_slot slot;
    struct rw_tls_creds *s, *wrong;
    railwire_tls_opts o;
    struct tls_pair p;
    int rc;

    copy_file("psk.txt", "live.txt");
    cr_assert_eq(chmod(tls_path((char[512]){0}, 512, tls_dir, "live.txt"), 0600), 0);
    o = tls_opts(NULL, NULL, NULL, "live.txt");
    cr_assert_eq(rw_tls_slot_init(&slot, &o, RW_TLS_SERVER), 0);
    wrong = tls_creds(RW_TLS_CLIENT, NULL, NULL, NULL, "psk-wrong.txt");
    /* The server rotates alpha's key to psk-wrong's: that client gets in. */
    copy_file("psk-wrong.txt", "live.txt");
    cr_assert_eq(rw_tls_slot_reload(&slot), 0);
    s = rw_tls_slot_get(&slot);
    tls_pair_open(&p, wrong, s, NULL, 0);
    tls_pair_handshake(&p, 5000);
    rc = tls_pair_ping(&p, 5000);
    cr_assert_eq(rc, 0, "%s / %s", rw_tls_conn_error(p.cli), rw_tls_conn_error(p.srv));
    tls_pair_close(&p);
    /* A rotation to a file others can read is refused; the key stays. */
    cr_assert_eq(chmod(tls_path((char[512]){0}, 512, tls_dir, "live.txt"), 0644), 0);
    cr_assert_eq(rw_tls_slot_reload(&slot), RAILWIRE_E_INVALID);
    rw_tls_creds_unref(s);
    s = rw_tls_slot_get(&slot);
    tls_pair_open(&p, wrong, s, NULL, 0);
    tls_pair_handshake(&p, 5000);
    cr_assert_eq(tls_pair_ping(&p, 5000), 0);
    tls_pair_close(&p);
    rw_tls_creds_unref(s);
    rw_tls_creds_unref(wrong);
    rw_tls_slot_destroy(&slot);
}
