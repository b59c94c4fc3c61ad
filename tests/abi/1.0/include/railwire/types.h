/* SPDX-License-Identifier: MIT */
/* Small shared types of the public API. */
#ifndef RAILWIRE_TYPES_H
#define RAILWIRE_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

/* The two handshake dialects of spec/WIRE.md.  A listening port speaks one. */
enum railwire_dialect {
    RAILWIRE_DIALECT_RO = 0, /* read-only layers: experts, weights, LoRA tiers */
    RAILWIRE_DIALECT_RW = 1, /* one read-write arena per rail: KV overflow, snapshots */
};

/* Which transport carries the rails. */
enum railwire_transport {
    RAILWIRE_TRANSPORT_AUTO = 0,  /* verbs if an active RDMA port exists, else tcp;
                                     RAILWIRE_TRANSPORT=tcp|verbs overrides */
    RAILWIRE_TRANSPORT_TCP = 1,   /* software transport: one-sided ops carried over TCP */
    RAILWIRE_TRANSPORT_VERBS = 2, /* RDMA RC queue pairs through libibverbs */
};

#ifdef __cplusplus
}
#endif
#endif
