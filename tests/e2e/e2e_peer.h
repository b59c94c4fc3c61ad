/* SPDX-License-Identifier: MIT */
/* Scripted handshake peers for the end-to-end suites, written from
 * spec/WIRE.md: each listens on 127.0.0.1 (ephemeral port) in a thread and
 * misbehaves in one way. */
#ifndef RW_E2E_PEER_H
#define RW_E2E_PEER_H

#include <pthread.h>

#include <railwire.h>

enum e2e_peer_kind {
    E2E_PEER_CLOSE_EARLY,   /* reads the request, closes before any reply byte */
    E2E_PEER_SILENT,        /* accepts and never answers */
    E2E_PEER_ACK_REFUSE,    /* relays a real server's handshake but turns its
                               ack into 1 (STATUS_ERR) */
    E2E_PEER_BACKLOG_FULL,  /* a listener whose accept queue is full: SYNs
                               are dropped, so connect() times out */
};

struct e2e_peer {
    enum e2e_peer_kind kind;
    int lfd;
    int filler_fd;              /* BACKLOG_FULL: the connection filling the queue */
    char port[16];
    /* ACK_REFUSE: the real server behind, and what its reply looks like. */
    const char *real_port;
    enum railwire_dialect dialect;
    unsigned n_layers;
    pthread_t th;
    int started;
    int served;                 /* set once the peer finished its script */
};

/* Starts the peer.  For ACK_REFUSE, real_port/dialect/n_layers name the real
 * server.  Asserts on failure. */
void e2e_peer_start(struct e2e_peer *p, enum e2e_peer_kind kind, const char *real_port,
                    enum railwire_dialect dialect, unsigned n_layers);

/* Stops the peer and closes its sockets. */
void e2e_peer_stop(struct e2e_peer *p);

#endif
