/* SPDX-License-Identifier: MIT */
/* `railwire decode` run as a process over every line of the wire vectors
 * file: exit status, the JSON on stdout (parsed and compared record by
 * record) and the error class on stderr; plus raw input, trailing bytes and
 * usage errors. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden/support/json.h"
#include "golden/support/vectors.h"

#ifndef RAILWIRE_CLI_PATH
#error "RAILWIRE_CLI_PATH must name the built railwire binary"
#endif

struct run {
    int status;      /* exit code, or -1 if it did not exit normally */
    char *out, *err; /* NUL-terminated, owned */
    size_t out_len;
};

static char *slurp(int fd, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ssize_t got;

    cr_assert_not_null(buf);
    lseek(fd, 0, SEEK_SET);
    while ((got = read(fd, buf + n, cap - n - 1)) > 0) {
        n += (size_t)got;
        if (n + 1 == cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static int temp_fd(void)
{
    char path[] = "/tmp/rw-decode-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    return fd;
}

/* Runs `railwire decode ARGS...` with `in` on stdin. */
static void run_cli(struct run *r, const void *in, size_t in_len, const char *const *args)
{
    const char *argv[16] = {RAILWIRE_CLI_PATH, "decode"};
    int fds[3] = {temp_fd(), temp_fd(), temp_fd()};
    int n = 2, st;
    pid_t pid;

    for (int i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    cr_assert_eq(write(fds[0], in, in_len), (ssize_t)in_len);
    lseek(fds[0], 0, SEEK_SET);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        for (int i = 0; i < 3; i++)
            dup2(fds[i], i);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->out = slurp(fds[1], &r->out_len);
    r->err = slurp(fds[2], NULL);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static void hex_of(const struct tv_vector *v, char **hex, size_t *len)
{
    *hex = malloc(v->len * 2 + 2);
    cr_assert_not_null(*hex);
    for (size_t i = 0; i < v->len; i++)
        sprintf(*hex + 2 * i, "%02x", v->bytes[i]);
    (*hex)[2 * v->len] = '\n';
    *len = 2 * v->len + 1;
}

/* Checks a successful run's stdout: exactly one JSON object and a newline,
 * of the vector's kind, with exactly the expected records. */
static void check_json(const struct tv_vector *v, const struct run *r)
{
    const struct tj_value *kind, *rails, *status;
    struct tv_records got;
    struct tj_value *j;
    const char *perr = NULL;
    char why[256];

    cr_assert_gt(r->out_len, 0, "line %d: no output", v->line);
    cr_assert_eq(r->out[r->out_len - 1], '\n', "line %d: output does not end in a newline", v->line);
    cr_assert_null(memchr(r->out, '\n', r->out_len - 1), "line %d: more than one line", v->line);
    cr_assert_eq(r->out[0], '{', "line %d: output is not a JSON object", v->line);
    j = tj_parse(r->out, &perr);
    cr_assert_not_null(j, "line %d: output is not JSON (at offset %ld)", v->line,
                       (long)(perr - r->out));
    kind = tj_get(j, "kind");
    cr_assert(kind && kind->type == TJ_STRING && !strcmp(kind->str, v->kind_name),
              "line %d: wrong kind", v->line);
    cr_assert_eq(j->n, 2, "line %d: the object has %zu keys, want 2", v->line, j->n);
    if (v->kind == TV_ACK) {
        status = tj_get(j, "status");
        cr_assert(status && status->type == TJ_UINT && status->u == 0, "line %d: status", v->line);
    } else {
        rails = tj_get(j, "rails");
        cr_assert_eq(tv_records_from_json(rails, v->kind, &got, why, sizeof(why)), 0, "line %d: %s",
                     v->line, why);
        cr_assert(tv_records_equal(&v->expect, &got, why, sizeof(why)), "line %d: %s", v->line, why);
        tv_records_free(&got);
    }
    tj_free(j);
}

static void check_error(const struct run *r, int line, const char *cls)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "error: %s: ", cls);
    cr_assert_eq(r->status, 1, "line %d: exit %d, want 1 (stderr: %s)", line, r->status, r->err);
    cr_assert_eq(r->out_len, 0, "line %d: stdout not empty on failure", line);
    cr_assert_eq(strncmp(r->err, prefix, strlen(prefix)), 0, "line %d: stderr \"%s\", want \"%s...\"",
                 line, r->err, prefix);
    cr_assert_eq(strchr(r->err, '\n'), r->err + strlen(r->err) - 1, "line %d: one line", line);
}

static struct tv_vector *vecs;
static size_t nvecs;

static void setup(void)
{
    char why[256];
    if (tv_load(tv_path(), &vecs, &nvecs, why, sizeof(why)))
        cr_assert_fail("loading the vectors: %s", why);
}

static void teardown(void)
{
    tv_free_all(vecs, nvecs);
}

TestSuite(decode_cli, .init = setup, .fini = teardown, .timeout = 240);

Test(decode_cli, every_vector_line_as_hex)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        char want[8], *hex;
        size_t hex_len;
        struct run r;
        const char *args[] = {v->kind_name, "--rails", want, "--hex", NULL};

        snprintf(want, sizeof(want), "%u", v->want);
        hex_of(v, &hex, &hex_len);
        run_cli(&r, hex, hex_len, args);
        if (v->ok) {
            cr_assert_eq(r.status, 0, "line %d (%s): exit %d, stderr: %s", v->line, v->kind_name,
                         r.status, r.err);
            check_json(v, &r);
        } else {
            check_error(&r, v->line, v->err_class);
        }
        run_free(&r);
        free(hex);
    }
}

Test(decode_cli, every_vector_line_as_raw_bytes)
{
    for (size_t i = 0; i < nvecs; i++) {
        const struct tv_vector *v = &vecs[i];
        char want[8];
        struct run r;
        const char *args[] = {v->kind_name, "--rails", want, NULL};

        snprintf(want, sizeof(want), "%u", v->want);
        run_cli(&r, v->bytes ? (const void *)v->bytes : "", v->len, args);
        if (v->ok) {
            cr_assert_eq(r.status, 0, "line %d: exit %d, stderr: %s", v->line, r.status, r.err);
            check_json(v, &r);
        } else {
            check_error(&r, v->line, v->err_class);
        }
        run_free(&r);
    }
}

Test(decode_cli, hex_whitespace_and_case_are_ignored)
{
    static const char in[] = " 0 1\n\t01000000 02000000 07070707070707070707070707070707\r\n"
                             "0100 0000 0100000000000000 0200 0000\n";
    static const char *const args[] = {"ro-server", "--rails", "1", "--hex", NULL};
    static const char upper[] = "0A";
    static const char *const ack_args[] = {"ack", "--hex", NULL};
    struct run r;

    run_cli(&r, in, strlen(in), args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert_str_eq(r.out, "{\"kind\": \"ro-server\", \"rails\": [{\"qpn\": 1, \"psn\": 2, \"gid\": "
                            "\"07070707070707070707070707070707\", \"layers\": [[1, 2]]}]}\n");
    run_free(&r);
    run_cli(&r, upper, strlen(upper), ack_args);
    check_error(&r, 0, "refused");
    run_free(&r);
}

Test(decode_cli, u64_values_print_exactly)
{
    /* base_addr 2^64-1 and rkey 2^32-1 in an RW reply. */
    static const char in[] = "01 ffffffff ffffffff 00000000000000000000000000000000"
                             " ffffffffffffffff ffffffff";
    static const char *const args[] = {"rw-server", "--rails=1", "--hex", NULL};
    struct run r;

    run_cli(&r, in, strlen(in), args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert_str_eq(r.out, "{\"kind\": \"rw-server\", \"rails\": [{\"qpn\": 4294967295, \"psn\": "
                            "4294967295, \"gid\": \"00000000000000000000000000000000\", "
                            "\"base_addr\": 18446744073709551615, \"rkey\": 4294967295}]}\n");
    run_free(&r);
}

Test(decode_cli, trailing_bytes_fail)
{
    static const char *const ack_args[] = {"ack", "--hex", NULL};
    static const char *const rw_args[] = {"rw-server", "--rails", "0", "--hex", NULL};
    struct run r;

    run_cli(&r, "00 00", 5, ack_args);
    check_error(&r, 0, "trailing-bytes");
    run_free(&r);
    run_cli(&r, "00ff", 4, rw_args);
    check_error(&r, 0, "trailing-bytes");
    run_free(&r);
}

Test(decode_cli, empty_inputs)
{
    static const char *const ack_args[] = {"ack", NULL};
    static const char *const client_args[] = {"client", "--rails", "1", NULL};
    static const char *const rw_args[] = {"rw-server", "--rails", "1", "--hex", NULL};
    struct run r;

    run_cli(&r, "", 0, ack_args);
    check_error(&r, 0, "truncated");
    run_free(&r);
    run_cli(&r, "", 0, client_args);
    check_error(&r, 0, "truncated");
    run_free(&r);
    run_cli(&r, " \n", 2, rw_args);
    check_error(&r, 0, "peer-rejected");
    run_free(&r);
}

static void expect_usage(const char *in, const char *const *args, const char *needle)
{
    struct run r;
    run_cli(&r, in, strlen(in), args);
    cr_assert_eq(r.status, 2, "args %s: exit %d (stderr %s)", args[0], r.status, r.err);
    cr_assert_eq(r.out_len, 0);
    cr_assert_not_null(strstr(r.err, needle), "stderr \"%s\" lacks \"%s\"", r.err, needle);
    run_free(&r);
}

Test(decode_cli, usage_errors_exit_2)
{
    expect_usage("0g", (const char *const[]){"ack", "--hex", NULL}, "offset 1");
    expect_usage("00 0", (const char *const[]){"ack", "--hex", NULL}, "offset 3");
    expect_usage("00", (const char *const[]){"ro-server", "--hex", NULL}, "--rails");
    expect_usage("00", (const char *const[]){"ro-server", "--rails", "256", NULL}, "256");
    expect_usage("00", (const char *const[]){"ro-server", "--rails", "x", NULL}, "x");
    expect_usage("00", (const char *const[]){"ro-server", "--rails", NULL}, "--rails");
    expect_usage("00", (const char *const[]){"bogus", "--rails", "1", NULL}, "bogus");
    expect_usage("00", (const char *const[]){"--rails", "1", NULL}, "KIND");
    expect_usage("00", (const char *const[]){"ack", "--frob", NULL}, "--frob");
}

Test(decode_cli, help_describes_the_command)
{
    struct run r;
    run_cli(&r, "", 0, (const char *const[]){"--help", NULL});
    cr_assert_eq(r.status, 0);
    cr_assert_not_null(strstr(r.out, "usage: railwire decode KIND --rails N [--hex]"));
    for (const char *const *k = (const char *const[]){"ro-server", "rw-server", "client", "ack",
                                                      "peer-rejected", "trailing-bytes", NULL};
         *k; k++)
        cr_assert_not_null(strstr(r.out, *k), "help lacks %s", *k);
    run_free(&r);
}
