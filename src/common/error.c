/* SPDX-License-Identifier: MIT */
#include <railwire/error.h>

#include <stddef.h>

struct err_entry {
    int code;
    const char *cls;
    const char *msg;
};

static const struct err_entry errors[] = {
    {RAILWIRE_OK, "ok", "success"},
    {RAILWIRE_E_PEER_REJECTED, "peer-rejected",
     "the peer closed the connection before replying: it rejected this client "
     "(a cap, the rail count or the dialect); the reason is in the peer's log"},
    {RAILWIRE_E_TRUNCATED, "truncated",
     "the message ends inside a record: the peer closed mid-message or sent a "
     "short record; check that both sides speak the same dialect (RO or RW)"},
    {RAILWIRE_E_BAD_RAIL_COUNT, "bad-rail-count",
     "the RO rail count is 0 or greater than 8; check the server's rail configuration"},
    {RAILWIRE_E_RAIL_COUNT_MISMATCH, "rail-count-mismatch",
     "the framed or echoed rail count differs from the count the client asked for; "
     "check both sides' rail counts and that the port speaks the expected dialect"},
    {RAILWIRE_E_BAD_LAYER_COUNT, "bad-layer-count",
     "an RO layer count is 0 or greater than 4096; check the server's published layers, "
     "and that the port speaks the RO dialect (an RW server's reply reads this way)"},
    {RAILWIRE_E_REFUSED, "refused",
     "the server refused the rails at the ack (status byte not 0); the reason is in the server's log"},
    {RAILWIRE_E_NEED_MORE, "need-more", "more bytes are needed to decode the message"},
    {RAILWIRE_E_NOSPACE, "no-space", "the output buffer is too small; nothing was written"},
    {RAILWIRE_E_INVALID, "invalid", "invalid argument or a value the wire format cannot carry"},
    {RAILWIRE_E_STATE, "state", "the call is not allowed in the object's current state"},
    {RAILWIRE_E_NOMEM, "no-memory", "out of memory"},
    {RAILWIRE_E_TIMEOUT, "timeout",
     "timed out; check that the peer is up, reachable on that address and port, and not overloaded"},
    {RAILWIRE_E_CONNECT, "connect",
     "could not connect; check the address and port, that the server is listening, and firewalls"},
    {RAILWIRE_E_IO, "io", "the connection failed or was reset; the peer may have died, check its log"},
    {RAILWIRE_E_RAIL_DOWN, "rail-down", "the rail carrying this operation failed"},
    {RAILWIRE_E_ALL_RAILS_DOWN, "all-rails-down",
     "every rail of the railset failed; check the links, the peer and its log"},
    {RAILWIRE_E_REMOTE_ACCESS, "remote-access",
     "the peer refused the access: wrong key, range outside the published region, "
     "or WRITE to a read-only layer; check the layer index, offset and length"},
    {RAILWIRE_E_LIMIT, "limit", "a configured cap or queue bound was exceeded"},
    {RAILWIRE_E_NO_DEVICE, "no-device",
     "no usable RDMA device or active port; check `railwire devices` and RAILWIRE_DEVICES"},
    {RAILWIRE_E_VERBS, "verbs", "a libibverbs call failed; the log names the call and errno"},
    {RAILWIRE_E_QP_RTR, "qp-rtr",
     "failed to modify the QP to RTR: check the path MTU (RAILWIRE_MTU) and the GID index "
     "(RAILWIRE_GID_INDEX) on both sides"},
    {RAILWIRE_E_RETRY_EXCEEDED, "retry-exceeded",
     "transport retries exceeded: usually an MTU or GID mismatch between the sides, "
     "or a link that is down; check RAILWIRE_MTU, RAILWIRE_GID_INDEX and the cabling"},
    {RAILWIRE_E_UNSUPPORTED, "unsupported", "not supported by this transport or build"},
    {RAILWIRE_E_CLOSED, "closed", "the object was closed while the operation was pending"},
    {RAILWIRE_E_PROTOCOL, "protocol", "the peer sent bytes this side cannot accept; check versions"},
    {RAILWIRE_E_SYSTEM, "system", "an operating system call failed; the log names the call and errno"},
    {RAILWIRE_E_TLS, "tls",
     "TLS failed: the handshake, the credentials or a record; check the certificates, the CA, "
     "the server name, the PSK file and identity, and that both sides have TLS on (the log says which)"},
    {RAILWIRE_E_CANCELED, "canceled", "the transfer was cancelled by railwire_cancel before it finished"},
};

static const struct err_entry *find(int err)
{
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].code == err)
            return &errors[i];
    return NULL;
}

const char *railwire_strerror(int err)
{
    const struct err_entry *e = find(err);
    return e ? e->msg : "unknown railwire error code";
}

const char *railwire_error_class(int err)
{
    const struct err_entry *e = find(err);
    return e ? e->cls : "unknown";
}
