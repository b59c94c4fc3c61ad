/* SPDX-License-Identifier: MIT */
/* rw_log_json_line: the fields, RFC 8259 escaping, UTF-8 repair, what is
 * taken from a message and what is not, and truncation that stays valid. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/log_json.h"

static char line[RW_LOG_JSON_MAX];
static const struct timespec t0 = {.tv_sec = 86400 + 3661, .tv_nsec = 5 * 1000000 + 999};

static const char *json(enum railwire_log_level level, const char *msg)
{
    size_t n = rw_log_json_line(line, sizeof(line), &t0, level, msg);
    cr_assert_eq(n, strlen(line));
    cr_assert(n > 0 && line[n - 1] == '\n', "no newline: %s", line);
    return line;
}

Test(log_json, fields_of_a_plain_message)
{
    cr_assert_str_eq(json(RAILWIRE_LOG_WARN, "hello"),
                     "{\"time\":\"1970-01-02T01:01:01.005Z\",\"level\":\"warn\","
                     "\"message\":\"hello\"}\n");
    cr_assert_str_eq(json(RAILWIRE_LOG_DEBUG, ""),
                     "{\"time\":\"1970-01-02T01:01:01.005Z\",\"level\":\"debug\","
                     "\"message\":\"\"}\n");
}

Test(log_json, component_peer_rail_suppressed)
{
    cr_assert_str_eq(json(RAILWIRE_LOG_INFO, "server: client 10.0.0.9:41234: 2 tcp rail(s) up"),
                     "{\"time\":\"1970-01-02T01:01:01.005Z\",\"level\":\"info\","
                     "\"component\":\"server\",\"peer\":\"10.0.0.9:41234\","
                     "\"message\":\"server: client 10.0.0.9:41234: 2 tcp rail(s) up\"}\n");
    cr_assert(strstr(json(RAILWIRE_LOG_WARN, "server: refusing client [fe80::1%eth0]:7000: rail 3 "
                                             "did not connect (x) (12 similar lines suppressed)"),
                     ",\"component\":\"server\",\"peer\":\"[fe80::1%eth0]:7000\",\"rail\":3,"
                     "\"suppressed\":12,\"message\":"),
              "%s", line);
    cr_assert(strstr(json(RAILWIRE_LOG_ERROR, "rail 0 (tcp:1.2.3.4) is down (x)"),
                     "\"level\":\"error\",\"rail\":0,\"message\""),
              "%s", line);
    cr_assert(strstr(json(RAILWIRE_LOG_ERROR, "mr_register: registering 8 bytes on rail 1 (a) failed"),
                     "\"component\":\"mr_register\",\"rail\":1,"),
              "%s", line);
}

Test(log_json, nothing_taken_from_look_alikes)
{
    static const char *const msgs[] = {
        "accept failed: Too many open files",     /* no "word:" at the start */
        "Server: x",                              /* components are lower case */
        "check the client address; 2 rails",      /* not an address, not "rail N" */
        "the client 1.2.3.4 has no port",         /* an address without ":PORT" */
        "trail 3 and rail 4x and rails 5",        /* not whole words */
        "x (similar lines suppressed)",           /* no count */
        "x (12 similar lines suppressed) later",  /* not at the end */
    };
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        json(RAILWIRE_LOG_WARN, msgs[i]);
        const char *m = strstr(line, ",\"message\":");
        cr_assert_not_null(m);
        cr_expect_eq(m - line, (long)strlen("{\"time\":\"1970-01-02T01:01:01.005Z\","
                                            "\"level\":\"warn\""),
                     "a field was taken from '%s': %s", msgs[i], line);
    }
}

Test(log_json, escapes_per_rfc8259)
{
    json(RAILWIRE_LOG_WARN, "q\" b\\ n\n r\r t\t bs\b ff\f c\x01 x\x1f del\x7f /");
    cr_assert(strstr(line, "\"message\":\"q\\\" b\\\\ n\\n r\\r t\\t bs\\b ff\\f c\\u0001 "
                           "x\\u001f del\x7f /\"}\n"),
              "%s", line);
}

Test(log_json, utf8_kept_and_repaired)
{
    /* Valid 2-, 3- and 4-byte characters pass through unchanged. */
    json(RAILWIRE_LOG_WARN, "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x82");
    cr_assert(strstr(line, "\"message\":\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x82\"}"), "%s", line);
    /* Each byte that starts no valid sequence becomes U+FFFD: a stray
     * continuation, an overlong '/', a surrogate, past U+10FFFF, a cut tail. */
#define R "\xef\xbf\xbd"
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\x80z", "a" R "z"},
        {"\xc0\xaf", R R},
        {"\xed\xa0\x80", R R R},
        {"\xf4\x90\x80\x80", R R R R},
        {"\xff", R},
        {"end\xe2\x82", "end" R R},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[64];
        snprintf(want, sizeof(want), "\"message\":\"%s\"}\n", cases[i].out);
        json(RAILWIRE_LOG_WARN, cases[i].in);
        cr_expect(strstr(line, want), "case %zu: %s", i, line);
    }
#undef R
}

Test(log_json, truncation_stays_one_valid_object)
{
    char msg[RW_LOG_MSG_MAX];
    char small[300];

    memset(msg, '"', sizeof(msg) - 1); /* every byte needs a 2-byte escape */
    msg[sizeof(msg) - 1] = '\0';
    size_t n = rw_log_json_line(small, sizeof(small), &t0, RAILWIRE_LOG_WARN, msg);
    cr_assert_eq(n, strlen(small));
    cr_assert(n < sizeof(small));
    static const char tail[] = "\",\"truncated\":true}\n";
    cr_assert_str_eq(small + n - strlen(tail), tail, "%s", small);
    /* No escape cut in half: the message body is whole \" pairs. */
    const char *body = strstr(small, "\"message\":\"") + strlen("\"message\":\"");
    size_t blen = (size_t)(small + n - strlen(tail) - body);
    cr_assert(blen > 0 && blen % 2 == 0, "body of %zu bytes", blen);
    for (size_t i = 0; i < blen; i += 2)
        cr_assert(body[i] == '\\' && body[i + 1] == '"');

    /* The full-size buffer holds the worst message whole. */
    memset(msg, 0x01, sizeof(msg) - 1); /* 6-byte escapes */
    n = rw_log_json_line(line, sizeof(line), &t0, RAILWIRE_LOG_WARN, msg);
    cr_assert_null(strstr(line, "truncated"));
    cr_assert_eq(n, strlen("{\"time\":\"1970-01-02T01:01:01.005Z\",\"level\":\"warn\","
                           "\"message\":\"\"}\n") + 6 * (sizeof(msg) - 1));

    /* A buffer below the minimum gets an empty string, not a broken line. */
    cr_assert_eq(rw_log_json_line(small, 100, &t0, RAILWIRE_LOG_WARN, "x"), 0);
    cr_assert_str_eq(small, "");
}
