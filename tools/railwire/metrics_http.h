/* SPDX-License-Identifier: MIT */
/* A minimal, bounded HTTP/1.x listener that serves one text document on
 * GET /metrics (`railwire serve --metrics HOST:PORT`).  It runs in a thread
 * of its own with non-blocking sockets, so a slow or hostile scraper can
 * never stall anything else:
 *   - GET only (405 otherwise), /metrics only (404), malformed 400;
 *   - the request line and headers must fit METRICS_HTTP_MAX_REQUEST bytes
 *     (431 otherwise); a request body is never read;
 *   - each connection has METRICS_HTTP_TIMEOUT_MS from accept to the end of
 *     its answer; then it is closed;
 *   - at most METRICS_HTTP_MAX_CONNS connections at once; one more gets 503
 *     and is closed at once.
 * Every answer closes the connection (Connection: close). */
#ifndef RAILWIRE_TOOL_METRICS_HTTP_H
#define RAILWIRE_TOOL_METRICS_HTTP_H

#include <stddef.h>
#include <sys/types.h>

#define METRICS_HTTP_MAX_REQUEST 4096
#define METRICS_HTTP_TIMEOUT_MS 5000
#define METRICS_HTTP_MAX_CONNS 8

struct metrics_http;

/* Renders the document into buf like snprintf (returns the length it needs,
 * or a negative code); called from the listener's thread. */
typedef ssize_t (*metrics_render_fn)(void *arg, char *buf, size_t size);

/* Binds host:port (a numeric address or a name; port "0" picks a free one)
 * and listens, without serving yet.  Returns 0 and *out (owned by the
 * caller: metrics_http_stop), or -1 with a message naming the address and
 * the reason printed on stderr. */
int metrics_http_listen(const char *host, const char *port, struct metrics_http **out);

/* The bound port. */
unsigned metrics_http_port(const struct metrics_http *h);

/* Starts serving in a new thread; render(arg, ...) is called once per
 * request to /metrics.  Returns 0 or -1 (message on stderr). */
int metrics_http_start(struct metrics_http *h, metrics_render_fn render, void *arg);

/* Stops the thread (within one poll round), closes every connection and
 * the listener, and frees h.  NULL is a no-op. */
void metrics_http_stop(struct metrics_http *h);

#endif
