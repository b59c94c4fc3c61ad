/* SPDX-License-Identifier: MIT */
#include "common/log_json.h"

#include <stdio.h>
#include <string.h>

/* Space kept free for what closes the object whatever happens:
 * "\",\"truncated\":true}\n" plus the NUL. */
#define JSON_TAIL_MAX 24

struct jw {
    char *p;
    size_t len;
    size_t cap;
};

static void jw_put(struct jw *w, const char *s, size_t n)
{
    /* Callers only pass bounded pieces and the caller checked cap >= 256
     * before the bounded fields; the check keeps a bug from overflowing. */
    if (w->len + n + JSON_TAIL_MAX > w->cap)
        return;
    memcpy(w->p + w->len, s, n);
    w->len += n;
}

static void jw_str(struct jw *w, const char *s)
{
    jw_put(w, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if the bytes
 * there are not one (the caller then replaces one byte with U+FFFD). */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char b = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the 2nd byte */

    if (b < 0x80)
        return 1;
    if (b >= 0xc2 && b <= 0xdf)
        len = 2;
    else if (b >= 0xe0 && b <= 0xef) {
        len = 3;
        if (b == 0xe0)
            lo = 0xa0; /* no overlong forms */
        else if (b == 0xed)
            hi = 0x9f; /* no UTF-16 surrogates */
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4;
        if (b == 0xf0)
            lo = 0x90;
        else if (b == 0xf4)
            hi = 0x8f; /* nothing above U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* Appends `s` escaped as the inside of a JSON string, stopping before a
 * character that would not leave `reserve` bytes free.  Returns 0 when all
 * of it fit, -1 when it was cut. */
static int jw_escaped(struct jw *w, const char *s, size_t reserve)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);

    while (n > 0) {
        char esc[8];
        const char *piece = esc;
        size_t plen, used;

        if (*u == '"' || *u == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*u;
            plen = 2;
            used = 1;
        } else if (*u < 0x20) {
            static const char short_esc[] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n',
                                             ['\r'] = 'r', ['\t'] = 't'};
            if (*u < sizeof(short_esc) && short_esc[*u]) {
                esc[0] = '\\';
                esc[1] = short_esc[*u];
                plen = 2;
            } else {
                snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)*u);
                plen = 6;
            }
            used = 1;
        } else if ((used = utf8_seq_len(u, n)) != 0) {
            piece = (const char *)u;
            plen = used;
        } else {
            piece = "\xef\xbf\xbd"; /* U+FFFD REPLACEMENT CHARACTER */
            plen = 3;
            used = 1;
        }
        if (w->len + plen + reserve > w->cap)
            return -1;
        memcpy(w->p + w->len, piece, plen);
        w->len += plen;
        u += used;
        n -= used;
    }
    return 0;
}

/* The leading "word:" of railwire's messages ("server: ...").  Returns its
 * length, 0 if there is none. */
static size_t msg_component(const char *msg)
{
    size_t i = 0;

    while (i < 32 && ((msg[i] >= 'a' && msg[i] <= 'z') || msg[i] == '_'))
        i++;
    if (i == 0 || msg[i] != ':' || (msg[i + 1] != ' ' && msg[i + 1] != '\0'))
        return 0;
    return i;
}

static int is_addr_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '.' || c == ':' || c == '[' || c == ']' || c == '%' || c == '_' || c == '-';
}

/* Finds the address after "client " that ends in ":PORT" (the server names
 * its peers that way).  Returns its length and sets *at, or returns 0. */
static size_t msg_peer(const char *msg, const char **at)
{
    static const char key[] = "client ";
    const char *p = msg;

    while ((p = strstr(p, key)) != NULL) {
        if (p == msg || p[-1] == ' ' || p[-1] == '(') {
            const char *a = p + sizeof(key) - 1;
            size_t n = 0;
            while (n < 64 && is_addr_char(a[n]))
                n++;
            if (n > 0 && a[n - 1] == ':') /* "client 1.2.3.4:5: rest" */
                n--;
            size_t d = 0;
            while (d < n && a[n - 1 - d] >= '0' && a[n - 1 - d] <= '9')
                d++;
            if (n < 64 && d > 0 && d < n && a[n - 1 - d] == ':') {
                *at = a;
                return n;
            }
        }
        p += sizeof(key) - 1;
    }
    return 0;
}

/* Reads 1..9 decimal digits at s; returns how many, 0 if none (or more). */
static size_t read_digits(const char *s, unsigned long *v)
{
    size_t n = 0;

    *v = 0;
    while (s[n] >= '0' && s[n] <= '9') {
        if (n == 9)
            return 0;
        *v = *v * 10 + (unsigned long)(s[n] - '0');
        n++;
    }
    return n;
}

/* The number after the first "rail " that is a whole word ("rail 2 (...)").
 * Returns 1 and sets *rail, or 0. */
static int msg_rail(const char *msg, unsigned long *rail)
{
    static const char key[] = "rail ";
    const char *p = msg;

    while ((p = strstr(p, key)) != NULL) {
        if (p == msg || p[-1] == ' ' || p[-1] == '(') {
            const char *d = p + sizeof(key) - 1;
            size_t n = read_digits(d, rail);
            char after = n ? d[n] : 'x';
            if (n && !((after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
                       after == '_' || after == '.'))
                return 1;
        }
        p += sizeof(key) - 1;
    }
    return 0;
}

/* N of a trailing " (N similar lines suppressed)" (the rate limiter's).
 * Returns 1 and sets *n, or 0. */
static int msg_suppressed(const char *msg, unsigned long *n)
{
    static const char tail[] = " similar lines suppressed)";
    size_t len = strlen(msg), tl = sizeof(tail) - 1;

    if (len < tl + 3 || strcmp(msg + len - tl, tail) != 0)
        return 0;
    const char *open = msg + len - tl;
    while (open > msg && open[-1] >= '0' && open[-1] <= '9')
        open--;
    if (open - msg < 2 || open[-1] != '(' || open[-2] != ' ')
        return 0;
    size_t d = read_digits(open, n);
    return d > 0 && open + d == msg + len - tl;
}

size_t rw_log_json_line(char *out, size_t cap, const struct timespec *when,
                        enum railwire_log_level level, const char *msg)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    struct jw w = {out, 0, cap};
    char buf[96];
    struct tm tm;
    unsigned long v;

    if (cap < 256) {
        if (cap)
            out[0] = '\0';
        return 0;
    }
    gmtime_r(&when->tv_sec, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    jw_str(&w, "{\"time\":\"");
    jw_str(&w, buf);
    snprintf(buf, sizeof(buf), ".%03ldZ\",\"level\":\"%s\"", when->tv_nsec / 1000000L,
             (unsigned)level < 4 ? names[level] : "unknown");
    jw_str(&w, buf);

    size_t n = msg_component(msg);
    if (n) {
        jw_str(&w, ",\"component\":\"");
        jw_put(&w, msg, n); /* [a-z_] only: nothing to escape */
        jw_str(&w, "\"");
    }
    const char *peer;
    if ((n = msg_peer(msg, &peer)) != 0) {
        jw_str(&w, ",\"peer\":\"");
        jw_put(&w, peer, n); /* address characters only: nothing to escape */
        jw_str(&w, "\"");
    }
    if (msg_rail(msg, &v)) {
        snprintf(buf, sizeof(buf), ",\"rail\":%lu", v);
        jw_str(&w, buf);
    }
    if (msg_suppressed(msg, &v)) {
        snprintf(buf, sizeof(buf), ",\"suppressed\":%lu", v);
        jw_str(&w, buf);
    }
    jw_str(&w, ",\"message\":\"");
    if (jw_escaped(&w, msg, JSON_TAIL_MAX) == 0) {
        memcpy(out + w.len, "\"}\n", 4);
        return w.len + 3;
    }
    memcpy(out + w.len, "\",\"truncated\":true}\n", 21);
    return w.len + 20;
}
