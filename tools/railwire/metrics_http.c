/* SPDX-License-Identifier: MIT */
/* The bounded /metrics listener (metrics_http.h): one thread, poll() over
 * the listener, a wake eventfd and at most METRICS_HTTP_MAX_CONNS
 * non-blocking connections. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "metrics_http.h"

#define DRAIN_MS 500 /* after the answer: read what the client still sends, then close */

enum conn_state { C_FREE, C_READ, C_WRITE, C_DRAIN };

struct conn {
    enum conn_state state;
    int fd;
    int64_t deadline_ms;
    size_t in_len;
    char in[METRICS_HTTP_MAX_REQUEST];
    char *out;          /* owned: the whole answer */
    size_t out_len, out_off;
};

struct metrics_http {
    int lfd, wake_fd;
    unsigned port;
    pthread_t thread;
    int started;
    metrics_render_fn render;
    void *arg;
    struct conn conns[METRICS_HTTP_MAX_CONNS];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int metrics_http_listen(const char *host, const char *port, struct metrics_http **out)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int one = 1, fd = -1, e;

    e = getaddrinfo(host, port, &hints, &res);
    if (e != 0) {
        fprintf(stderr, "error: --metrics %s:%s: cannot resolve the address: %s\n", host, port,
                gai_strerror(e));
        return -1;
    }
    fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "error: --metrics %s:%s: socket: %s\n", host, port, strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
        fprintf(stderr, "error: --metrics %s:%s: cannot listen: %s\n", host, port,
                strerror(errno));
        freeaddrinfo(res);
        close(fd);
        return -1;
    }
    freeaddrinfo(res);
    struct metrics_http *h = calloc(1, sizeof(*h));
    if (!h) {
        fprintf(stderr, "error: --metrics: out of memory\n");
        close(fd);
        return -1;
    }
    h->lfd = fd;
    h->wake_fd = -1;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    for (unsigned i = 0; i < METRICS_HTTP_MAX_CONNS; i++)
        h->conns[i].fd = -1;
    *out = h;
    return 0;
}

unsigned metrics_http_port(const struct metrics_http *h)
{
    return h ? h->port : 0;
}

static void conn_close(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    c->out = NULL;
    c->fd = -1;
    c->state = C_FREE;
}

static const char *reason_of(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/* Builds the whole answer into c->out; switches to C_WRITE. */
static void conn_answer(struct metrics_http *h, struct conn *c, int code)
{
    char *body = NULL;
    size_t body_len = 0;
    const char *ctype = "text/plain; charset=utf-8";

    if (code == 200) {
        /* Counters may gain digits between the sizing call and the real one. */
        size_t cap = 0;
        int done = 0;
        for (int tries = 0; tries < 4 && !done; tries++) {
            ssize_t need = h->render(h->arg, body, cap);
            if (need < 0) {
                code = 500;
                break;
            }
            if ((size_t)need < cap) {
                body_len = (size_t)need;
                done = 1;
                break;
            }
            cap = (size_t)need + 1024;
            char *nb = realloc(body, cap);
            if (!nb) {
                code = 500;
                break;
            }
            body = nb;
        }
        if (code == 200 && !done)
            code = 500;
        if (code == 200)
            ctype = "text/plain; version=0.0.4; charset=utf-8";
    }
    char err[64];
    if (code != 200) {
        /* Errors carry their reason as a one-line text body. */
        free(body);
        body = NULL;
        body_len = (size_t)snprintf(err, sizeof(err), "%s\n", reason_of(code));
    }
    char head[256];
    int hn = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                      "Connection: close\r\n\r\n", code, reason_of(code), ctype, body_len,
                      code == 405 ? "Allow: GET\r\n" : "");
    c->out = malloc((size_t)hn + body_len);
    if (!c->out) {
        free(body);
        conn_close(c);
        return;
    }
    memcpy(c->out, head, (size_t)hn);
    memcpy(c->out + hn, body ? body : err, body_len);
    c->out_len = (size_t)hn + body_len;
    c->out_off = 0;
    c->state = C_WRITE;
    free(body);
}

/* The status for a complete request head in c->in (NUL-terminated):
 * 200, 400, 404 or 405. */
static int classify(const char *req)
{
    const char *sp1 = strchr(req, ' ');
    if (!sp1 || sp1 == req)
        return 400;
    const char *target = sp1 + 1;
    const char *sp2 = strchr(target, ' ');
    const char *eol = strpbrk(req, "\r\n");
    if (!sp2 || !eol || sp2 > eol || sp2 == target)
        return 400;
    if (strncmp(sp2 + 1, "HTTP/1.", 7) || (eol - (sp2 + 1)) != 8)
        return 400;
    for (const char *p = req; p < sp1; p++)
        if (*p < 'A' || *p > 'Z')
            return 400;
    if (sp1 - req != 3 || strncmp(req, "GET", 3))
        return 405;
    size_t tlen = (size_t)(sp2 - target);
    if (tlen >= 8 && !strncmp(target, "/metrics", 8) && (tlen == 8 || target[8] == '?'))
        return 200;
    return 404;
}

static void conn_read(struct metrics_http *h, struct conn *c)
{
    for (;;) {
        if (c->in_len == sizeof(c->in) - 1) {
            conn_answer(h, c, 431);
            return;
        }
        ssize_t k = recv(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len, 0);
        if (k == 0) {
            conn_close(c); /* closed before a whole request: nothing to answer */
            return;
        }
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            conn_close(c);
            return;
        }
        c->in_len += (size_t)k;
        c->in[c->in_len] = '\0';
        if (memchr(c->in, '\0', c->in_len)) {
            conn_answer(h, c, 400);
            return;
        }
        if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
            conn_answer(h, c, classify(c->in));
            return;
        }
    }
}

static void conn_write(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            conn_close(c);
            return;
        }
        c->out_off += (size_t)k;
    }
    /* All sent: let the client read it before the close, and read what it
     * still sends (a body we ignored) so the close is not a reset. */
    shutdown(c->fd, SHUT_WR);
    c->state = C_DRAIN;
    int64_t drain_end = now_ms() + DRAIN_MS;
    if (drain_end < c->deadline_ms)
        c->deadline_ms = drain_end;
}

static void conn_drain(struct conn *c)
{
    char junk[1024];
    for (;;) {
        ssize_t k = recv(c->fd, junk, sizeof(junk), 0);
        if (k > 0)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        conn_close(c);
        return;
    }
}

static void accept_all(struct metrics_http *h)
{
    for (;;) {
        int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: poll tells us again */
        struct conn *c = NULL;
        for (unsigned i = 0; i < METRICS_HTTP_MAX_CONNS && !c; i++)
            if (h->conns[i].state == C_FREE)
                c = &h->conns[i];
        if (!c) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                       "Connection: close\r\n\r\n";
            if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                /* best effort: the client sees the close either way */
            }
            close(fd);
            continue;
        }
        c->fd = fd;
        c->state = C_READ;
        c->in_len = 0;
        c->deadline_ms = now_ms() + METRICS_HTTP_TIMEOUT_MS;
    }
}

static void *serve_main(void *arg)
{
    struct metrics_http *h = arg;
    struct pollfd pfd[2 + METRICS_HTTP_MAX_CONNS];
    struct conn *owner[2 + METRICS_HTTP_MAX_CONNS];

    for (;;) {
        int64_t now = now_ms(), next = now + 1000;
        nfds_t n = 0;
        pfd[n++] = (struct pollfd){.fd = h->wake_fd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
        for (unsigned i = 0; i < METRICS_HTTP_MAX_CONNS; i++) {
            struct conn *c = &h->conns[i];
            if (c->state == C_FREE)
                continue;
            if (now >= c->deadline_ms) {
                conn_close(c); /* too slow to ask, to read its answer, or to close */
                continue;
            }
            if (c->deadline_ms < next)
                next = c->deadline_ms;
            owner[n] = c;
            pfd[n++] = (struct pollfd){.fd = c->fd,
                                       .events = c->state == C_WRITE ? POLLOUT : POLLIN};
        }
        int r = poll(pfd, n, (int)(next - now));
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        if (pfd[0].revents)
            break; /* metrics_http_stop */
        if (pfd[1].revents)
            accept_all(h);
        for (nfds_t i = 2; i < n; i++) {
            struct conn *c = owner[i];
            if (!pfd[i].revents || c->state == C_FREE)
                continue;
            if (c->state == C_READ)
                conn_read(h, c);
            if (c->state == C_WRITE)
                conn_write(c);
            else if (c->state == C_DRAIN)
                conn_drain(c);
        }
    }
    return NULL;
}

int metrics_http_start(struct metrics_http *h, metrics_render_fn render, void *arg)
{
    h->render = render;
    h->arg = arg;
    h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->wake_fd < 0) {
        fprintf(stderr, "error: --metrics: eventfd: %s\n", strerror(errno));
        return -1;
    }
    int e = pthread_create(&h->thread, NULL, serve_main, h);
    if (e != 0) {
        fprintf(stderr, "error: --metrics: cannot start the listener thread: %s\n", strerror(e));
        return -1;
    }
    h->started = 1;
    return 0;
}

void metrics_http_stop(struct metrics_http *h)
{
    if (!h)
        return;
    if (h->started) {
        uint64_t one = 1;
        if (write(h->wake_fd, &one, sizeof(one)) < 0)
            fprintf(stderr, "warning: --metrics: cannot wake the listener: %s\n", strerror(errno));
        pthread_join(h->thread, NULL);
    }
    for (unsigned i = 0; i < METRICS_HTTP_MAX_CONNS; i++)
        if (h->conns[i].state != C_FREE)
            conn_close(&h->conns[i]);
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    close(h->lfd);
    free(h);
}
