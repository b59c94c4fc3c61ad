/* SPDX-License-Identifier: MIT */
/* `railwire decode KIND --rails N [--hex]`: decodes one captured handshake
 * message from stdin (raw bytes or hex text) and prints it as one JSON
 * object.  Exit 0 on success, 1 on a decode failure (`error: CLASS: ...` on
 * stderr, nothing on stdout), 2 on a usage error. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hex.h"
#include "json_out.h"
#include "wire/wire.h"

#define MAX_INPUT (64u << 20) /* far above the largest message (~393 KB), even as hex */

static const char help[] =
    "usage: railwire decode KIND --rails N [--hex]\n"
    "\n"
    "Decode one captured handshake message (spec/WIRE.md) read from stdin and\n"
    "print it as one JSON object.\n"
    "\n"
    "KIND says what the bytes are:\n"
    "  ro-server   the server's reply in the read-only dialect: u8 n | n x RO params\n"
    "  rw-server   the server's reply in the read-write dialect: u8 n | n x RW params\n"
    "  client      the client's whole emitted stream: the request byte, then\n"
    "              u8 n | n x QP identity\n"
    "  ack         the server's ack byte\n"
    "\n"
    "options:\n"
    "  --rails N   the rail count the client asked for, 0..255 (required except for ack)\n"
    "  --hex       stdin is hex text (either case, whitespace ignored), not raw bytes\n"
    "  -h, --help  show this help\n"
    "\n"
    "On success it prints, then exits 0:\n"
    "  {\"kind\": \"ro-server\", \"rails\": [{\"qpn\": Q, \"psn\": P, \"gid\": \"<32 hex digits>\",\n"
    "    \"layers\": [[base_addr, rkey], ...]}, ...]}\n"
    "  rw-server rails have \"base_addr\" and \"rkey\" instead of \"layers\"; client rails\n"
    "  have qpn, psn and gid; an ack prints {\"kind\": \"ack\", \"status\": 0}.\n"
    "On a decode failure it prints `error: CLASS: message` on stderr and exits 1,\n"
    "CLASS being one of peer-rejected (no byte of the server's reply: the server\n"
    "rejected the client, see its log), truncated, bad-rail-count,\n"
    "rail-count-mismatch, bad-layer-count, refused, or trailing-bytes (bytes after\n"
    "a complete message).  Usage errors exit 2.\n"
    "\n"
    "example:\n"
    "  echo '02 01' | railwire decode rw-server --rails 2 --hex\n"
    "  error: truncated: ...\n";

enum kind { K_RO, K_RW, K_CLIENT, K_ACK };

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("railwire decode: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrun `railwire decode --help` for usage\n", stderr);
    return 2;
}

static int decode_error(int err)
{
    fprintf(stderr, "error: %s: %s\n", railwire_error_class(err), railwire_strerror(err));
    return 1;
}

static int parse_rails(const char *s, unsigned *out)
{
    char *end;
    unsigned long v;

    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || v > 255)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* Reads all of stdin into a malloc'd buffer.  Returns 0, or -1 with errno
 * (EFBIG when over MAX_INPUT). */
static int read_all(FILE *in, uint8_t **out, size_t *len)
{
    size_t cap = 65536, n = 0;
    uint8_t *buf = malloc(cap);

    if (!buf)
        return -1;
    for (;;) {
        size_t got;
        if (n == cap) {
            uint8_t *nb;
            if (cap >= MAX_INPUT) {
                free(buf);
                errno = EFBIG;
                return -1;
            }
            nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        got = fread(buf + n, 1, cap - n, in);
        n += got;
        if (got == 0) {
            if (ferror(in)) {
                free(buf);
                return -1;
            }
            break;
        }
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Decodes `len` bytes of `kind` and prints the JSON; returns the exit code. */
static int decode(enum kind kind, unsigned want, const uint8_t *buf, size_t len)
{
    struct rw_server_reply reply = {0};
    struct rw_qp_id *ids = NULL;
    uint8_t status = 0;
    ssize_t n;
    int rc;

    switch (kind) {
    case K_RO: n = rw_decode_ro_reply(buf, len, want, &reply); break;
    case K_RW: n = rw_decode_rw_reply(buf, len, want, &reply); break;
    case K_CLIENT:
        ids = calloc(want ? want : 1, sizeof(*ids));
        if (!ids)
            return decode_error(RAILWIRE_E_NOMEM);
        n = rw_decode_client_stream(buf, len, want, ids);
        break;
    default: n = rw_decode_ack(buf, len, &status); break;
    }
    if (n == RAILWIRE_E_NEED_MORE)
        n = rw_eof_error(kind == K_RO || kind == K_RW, len);
    if (n < 0) {
        free(ids);
        return decode_error((int)n);
    }
    if ((size_t)n < len) {
        fprintf(stderr,
                "error: trailing-bytes: %zu bytes follow a complete %zd-byte message; check the "
                "KIND and --rails, or that the capture holds one message only\n",
                len - (size_t)n, n);
        rc = 1;
        goto out;
    }
    switch (kind) {
    case K_RO:
    case K_RW: rc = tool_json_reply(stdout, &reply); break;
    case K_CLIENT: rc = tool_json_client(stdout, ids, want); break;
    default: rc = tool_json_ack(stdout, status); break;
    }
    fputc('\n', stdout);
    if (rc || fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "error: io: writing the JSON to stdout failed: %s\n", strerror(errno));
        rc = 1;
    }
out:
    free(ids);
    rw_server_reply_free(&reply);
    return rc;
}

int cmd_decode(int argc, char **argv)
{
    static const char *const kinds[] = {"ro-server", "rw-server", "client", "ack"};
    const char *kind_arg = NULL, *rails_arg = NULL;
    uint8_t *raw = NULL, *bytes = NULL;
    size_t raw_len = 0, len = 0, where = 0;
    unsigned want = 0;
    int hex = 0, kind = -1, rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(a, "--hex")) {
            hex = 1;
        } else if (!strcmp(a, "--rails")) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", a);
            rails_arg = argv[++i];
        } else if (!strncmp(a, "--rails=", 8)) {
            rails_arg = a + 8;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else if (kind_arg) {
            return usage_error("unexpected argument '%s' (one KIND only)", a);
        } else {
            kind_arg = a;
        }
    }
    if (!kind_arg)
        return usage_error("%s", "missing KIND (ro-server, rw-server, client or ack)");
    for (int k = 0; k < 4; k++)
        if (!strcmp(kind_arg, kinds[k]))
            kind = k;
    if (kind < 0)
        return usage_error("unknown KIND '%s' (ro-server, rw-server, client or ack)", kind_arg);
    if (rails_arg && parse_rails(rails_arg, &want))
        return usage_error("--rails '%s' is not a number in 0..255", rails_arg);
    if (!rails_arg && kind != K_ACK)
        return usage_error("%s needs --rails N (the rail count the client asked for)", kind_arg);

    if (read_all(stdin, &raw, &raw_len)) {
        if (errno == EFBIG)
            return usage_error("%s", "the input is larger than 64 MiB: not one handshake message");
        fprintf(stderr, "railwire decode: reading stdin failed: %s\n", strerror(errno));
        return 2;
    }
    if (hex) {
        switch (tool_hex_parse((const char *)raw, raw_len, &bytes, &len, &where)) {
        case TOOL_HEX_OK:
            break;
        case TOOL_HEX_BAD_CHAR:
            fprintf(stderr,
                    "railwire decode: --hex: non-hex character 0x%02x at offset %zu of the input\n",
                    raw[where], where);
            free(raw);
            return 2;
        case TOOL_HEX_ODD:
            fprintf(stderr,
                    "railwire decode: --hex: odd number of hex digits: the last one, at offset "
                    "%zu of the input, has no pair\n", where);
            free(raw);
            return 2;
        default:
            fprintf(stderr, "railwire decode: out of memory\n");
            free(raw);
            return 2;
        }
        free(raw);
    } else {
        bytes = raw;
        len = raw_len;
    }
    rc = decode((enum kind)kind, want, bytes, len);
    free(bytes);
    return rc;
}
