/* SPDX-License-Identifier: MIT */
/* The client side: a railset is N rails to one server, brought up by one
 * handshake and used together.  Every READ or WRITE is cut into slices that
 * are striped across the rails; a transfer completes only when every byte
 * moved, and a rail that dies has its unfinished slices re-issued on the
 * others.  Transfers fail only when every rail is gone.
 *
 * Healing (on by default, docs/healing.md): a railset that has lost rails
 * opens a new session to the same server for the rails it lacks, proves each
 * new rail with a small READ and puts it back in service, so a long-running
 * railset does not degrade one transient fault at a time.  A railset may
 * therefore hold rails of several sessions; each session's control
 * connection is one liveness signal among several, never the reason a
 * working rail dies.
 *
 * Threading: a railset is thread-safe.  railwire_submit,
 * railwire_submit_batch, railwire_poll, railwire_wait, railwire_read,
 * railwire_write, railwire_mr_register/deregister and
 * railwire_railset_stats may be called on one railset from any number of
 * threads at once.  Every completion is delivered exactly once: a transfer
 * of railwire_read/railwire_write is only ever returned to the helper that
 * submitted it (another thread's poll or wait never takes it), and a
 * transfer of railwire_submit/_batch to exactly one poll or wait, in any
 * thread.  railwire_railset_close must not run concurrently with any other
 * call on the same railset.  Memory registration runs without blocking the
 * other threads' transfers.  Healing runs its blocking work (connect,
 * handshake, rail bring-up, probe) in one background thread per railset,
 * started when the first rail is lost, so submit, poll and wait never block
 * on it. */
#ifndef RAILWIRE_RAILSET_H
#define RAILWIRE_RAILSET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <railwire/error.h>
#include <railwire/export.h>
#include <railwire/tls.h>
#include <railwire/mem.h>
#include <railwire/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct railwire_railset railwire_railset;
typedef struct railwire_mr railwire_mr;
typedef uint64_t railwire_handle; /* names one submitted transfer; never 0 */

/* Rails per railset: the RW dialect's wire allows 255; the RO dialect's
 * framing allows 8 (RAILWIRE_MAX_RO_RAILS). */
#define RAILWIRE_MAX_RAILS 255
#define RAILWIRE_MAX_RO_RAILS 8

/* Connection options.  Initialise with railwire_railset_opts_init(), then
 * change what you need; pointers are borrowed for the call only.
 *
 * ABI (docs/abi.md): struct_size comes first and is set by
 * railwire_railset_opts_init() to the sizeof the caller was compiled with.
 * The library reads only struct_size bytes; every field beyond them takes its
 * default, so a program built against an older header keeps working with a
 * newer library.  Fields are only ever appended. */
typedef struct railwire_railset_opts {
    uint32_t struct_size;              /* sizeof(railwire_railset_opts) of the caller's
                                          header; set by railwire_railset_opts_init() */
    uint32_t dialect;                  /* enum railwire_dialect, default RO */
    uint32_t transport;                /* enum railwire_transport, default AUTO */
    unsigned n_rails;                  /* RW 1..255, RO 1..8; default 1 */
    /* tcp: local addresses to bind (rail i leaves by local_addrs[i mod
     * n_local_addrs]); NULL (n_local_addrs 0) or a NULL entry = any.  verbs:
     * devices "dev[:port]" (rail i on devices[i mod n_devices]); NULL
     * (n_devices 0) = RAILWIRE_DEVICES or every active port, rail i on port
     * i mod n.  A count is 0 exactly when its array is NULL, and at most
     * n_rails. */
    const char *const *local_addrs;
    unsigned n_local_addrs;
    unsigned n_devices;
    const char *const *devices;
    int gid_index;                     /* verbs: -1 = choose (default) */
    unsigned mtu;                      /* verbs: path MTU cap, 0 = 4096 */
    size_t slice_size;                 /* striping unit in bytes, 0 = default (512 KiB);
                                          capped by the transport's largest message.
                                          A transfer <= slice_size goes whole to one rail */
    unsigned queue_depth;              /* slices in flight per rail, 0 = default (16;
                                          tcp: 64, holding at most 16 full slices'
                                          bytes); capped by the device's queue size */
    int connect_timeout_ms;            /* default 5000 */
    int io_timeout_ms;                 /* bounds each handshake step (params, ids, ack)
                                          as a whole and each rail connect; default 10000 */
    int op_timeout_ms;                 /* a slice outstanding longer than this
                                          marks its rail dead, default 10000 */
    /* Healing (see docs/healing.md for every bound). */
    int heal;                          /* 1 (default): lost rails are replaced by rails
                                          of new sessions to the same server; 0: a lost
                                          rail stays lost (the behaviour before healing) */
    int heal_backoff_min_ms;           /* delay before the first heal attempt, default 100 */
    int heal_backoff_max_ms;           /* the delay doubles (with jitter) after each failed
                                          attempt, up to this; default 30000 */
    int heal_stable_ms;                /* damping: a rail that dies within this long of
                                          being healed doubles the delay instead of
                                          resetting it; the delay resets once every rail
                                          has been up this long; default 10000 */
    int all_down_timeout_ms;           /* with healing on: how long transfers wait while
                                          no rail is live before they fail with
                                          all-rails-down; 0 = default (op_timeout_ms) */
    unsigned max_slice_tries;          /* a slice is carried (posted) at most this many
                                          times across rails and heals, then its
                                          transfer fails with the last error; 0 =
                                          default: 3 with healing on, unbounded with it off */
    int busy_poll_us;                  /* how long a thread waiting for completions
                                          (railwire_wait, railwire_read/write, and the tcp
                                          rails' receive threads) keeps polling before it
                                          sleeps, in microseconds, while transfers are
                                          outstanding: waking a sleeping thread costs more
                                          than a small transfer.  It gives way to any other
                                          runnable thread, and a window that found nothing
                                          is not reopened until something completes, so a
                                          stalled server never keeps it spinning; after four
                                          empty windows in a row a waiter sleeps at once
                                          until answers come sooner again.  A spin
                                          that loses its CPU to another process for a
                                          time slice (no idle core) stops every spin of
                                          the process for 10 ms, doubling up to 1 s
                                          while that lasts.  0 = default (50), -1 = sleep
                                          at once, at most 1000000 */
    uint32_t reserved0;                /* 0 (makes the tail padding a field: a member
                                          appended later starts past every byte an
                                          older caller's struct_size covers) */
    /* TLS 1.3 on the control connection and on every tcp rail
     * (include/railwire/tls.h); NULL = plain.  One set of credentials is
     * built at connect and used for every rail and every heal (each
     * authenticates in full).  Borrowed for railwire_railset_connect() only. */
    const struct railwire_tls_opts *tls;
    size_t staging_bytes;              /* CUDA memory on tcp (docs/gpu.md): the most pinned
                                          host memory the railset holds to stage payloads
                                          between the device and the sockets, in 1 MiB
                                          chunks allocated on demand; when every chunk is
                                          in use, transfers wait for one (back-pressure)
                                          and nothing more is allocated.  0 = default
                                          (64 MiB); at least one chunk */
    /* Rails on the NICs nearest the memory they carry (docs/gpu.md):
     * "cuda:N" (GPU N), "numa:N" (NUMA node N) or "auto" (the CUDA device
     * current on the connecting thread, else its CPU's NUMA node; the first
     * registration logs when its memory lives elsewhere).  verbs: rails go
     * round-robin over the devices nearest the target; tcp: over the local
     * addresses of the nearest interfaces the topology knows.  NULL or ""
     * (default): the usual placement.  An explicit devices / local_addrs
     * list wins (near is then ignored, logged).  Anything else fails the
     * connect with RAILWIRE_E_INVALID.  Borrowed for the call. */
    const char *near;
} railwire_railset_opts;

/* The smallest struct_size accepted: the fields up to and including n_rails
 * (railwire_railset_opts of 1.0 is larger; see docs/abi.md). */
#define RAILWIRE_RAILSET_OPTS_MIN_SIZE 16u

/* Fills the first `size` bytes of *o with the defaults and sets
 * o->struct_size = size; writes no byte past `size`.  Returns 0, or
 * RAILWIRE_E_INVALID (NULL o, size below RAILWIRE_RAILSET_OPTS_MIN_SIZE or
 * above 4 GiB).  Call it through railwire_railset_opts_init(). */
RAILWIRE_API int railwire_railset_opts_init_sized(railwire_railset_opts *o, size_t size);

/* Fills *o with the defaults (and o->struct_size with sizeof *o, the size of
 * the caller's header); evaluates to railwire_railset_opts_init_sized()'s
 * result. */
#define railwire_railset_opts_init(o) railwire_railset_opts_init_sized((o), sizeof(*(o)))

/* Connects to `host`:`port` (IPv4, IPv6 or a name), runs the handshake and
 * brings up every rail, or fails as a whole with the reason logged:
 * RAILWIRE_E_PEER_REJECTED (the server closed before its params: a cap, the
 * rail count or the dialect; see the server's log), RAILWIRE_E_REFUSED (ack
 * != 0), RAILWIRE_E_TRUNCATED, RAILWIRE_E_TIMEOUT (connect or a handshake
 * read/write ran out of time), RAILWIRE_E_CONNECT (refused, unreachable,
 * unknown name), RAILWIRE_E_INVALID (bad options), a wire class error or a
 * transport error.  `o` may be NULL (defaults).  On success *out is owned by
 * the caller; release it with railwire_railset_close().  The control
 * connection stays open as the session's liveness signal until close. */
RAILWIRE_API int railwire_railset_connect(const char *host, const char *port,
                                          const railwire_railset_opts *o, railwire_railset **out);

/* Closes the rails and the control connection, fails every unfinished
 * transfer and frees the railset and its registrations.  NULL is a no-op. */
RAILWIRE_API void railwire_railset_close(railwire_railset *rs);

/* Number of rails granted (== opts.n_rails). */
RAILWIRE_API unsigned railwire_railset_rail_count(const railwire_railset *rs);
/* RO: number of layers the server published (the same on every rail); RW: 1. */
RAILWIRE_API unsigned railwire_railset_layer_count(const railwire_railset *rs);
/* Name of the transport in use: "tcp" or "verbs". */
RAILWIRE_API const char *railwire_railset_transport(const railwire_railset *rs);

/* Registers local memory for transfers on every rail.  The memory stays
 * owned by the caller and must outlive the registration.  *out is released
 * with railwire_mr_deregister() or by railwire_railset_close(). */
RAILWIRE_API int railwire_mr_register(railwire_railset *rs, void *addr, size_t len, railwire_mr **out);
/* Registers the memory *mem describes (railwire/mem.h: host memory, CUDA
 * device memory or a DMA-BUF) on every rail, for use as the local side of
 * transfers like a railwire_mr_register registration.  railwire reads only
 * mem->struct_size bytes of *mem and keeps no pointer to it; the caller
 * keeps the memory (and any dmabuf_fd) and must keep it valid until
 * railwire_mr_deregister.  CUDA memory loads the CUDA driver on first use
 * (libcuda.so.1, or $RAILWIRE_CUDA_LIBRARY); host memory never does.
 * Paths (docs/gpu.md; logged at info and counted per rail in
 * railwire_rail_stats.regs_*): verbs registers CUDA memory as a DMA-BUF,
 * else through nvidia-peermem; tcp moves CUDA memory through bounded
 * pinned host staging buffers (railwire_railset_opts.staging_bytes), the
 * CPU never touching device memory.  Returns 0 and *out (release with
 * railwire_mr_deregister), RAILWIRE_E_INVALID (bad descriptor: the log says
 * which field), RAILWIRE_E_NO_DEVICE (no CUDA driver: the log names what was
 * looked for), RAILWIRE_E_UNSUPPORTED (the transport cannot carry that
 * kind, e.g. a DMA-BUF on tcp), or the driver's or transport's error
 * (logged, naming each attempt and what to check). */
RAILWIRE_API int railwire_mr_register_mem(railwire_railset *rs, const railwire_mem *mem,
                                          railwire_mr **out);
/* Releases a registration; fails with RAILWIRE_E_STATE while a transfer
 * still uses it. */
RAILWIRE_API int railwire_mr_deregister(railwire_mr *mr);

enum railwire_opcode { RAILWIRE_OP_READ = 0, RAILWIRE_OP_WRITE = 1 };

/* One transfer: `length` bytes between local [local, local+length) (inside
 * `mr`) and the remote range at `remote_offset` from the base of `layer`
 * (RO) or of the arena (RW, layer ignored).
 *
 * ABI (docs/abi.md): this struct has one size for every 1.x release (64
 * bytes on LP64): it has no struct_size and the submit calls take no
 * element size, so the hot path pays nothing for growth.  Growth goes into
 * `reserved`; a later release gives a reserved field its meaning only
 * together with a bit in `flags`, and the library checks `flags`, so a
 * field it does not know is never silently dropped.  Zero the whole struct
 * (an initialiser such as `railwire_op op = {.opcode = ...}` does) and leave
 * flags and reserved at 0. */
typedef struct railwire_op {
    uint32_t opcode;        /* enum railwire_opcode */
    uint32_t flags;         /* RAILWIRE_OP_F_* bits (1.0: RAILWIRE_OP_F_RESERVED); any
                               other bit is RAILWIRE_E_INVALID */
    railwire_mr *mr;
    void *local;
    size_t length;          /* >= 1 */
    uint64_t remote_offset;
    uint64_t user_data;     /* returned in the completion */
    uint32_t layer;
    uint32_t timeout_ms;    /* the transfer's own deadline, counted from its submit:
                               0 = none.  A transfer not finished by then is
                               cancelled as by railwire_cancel and completes with
                               RAILWIRE_E_TIMEOUT (see railwire_cancel for when and
                               for what a WRITE may have changed).  The railset's
                               op_timeout_ms still bounds each slice. */
    uint64_t reserved[1];   /* room for growth: leave 0; read only when a flag says so */
} railwire_op;

/* A bit of railwire_op.flags: the transfer is reserved for
 * railwire_wait_handle.  railwire_poll and railwire_wait never return it,
 * so a thread that submits it and then waits for its handle cannot lose
 * its completion to another thread's poll, not even between the submit and
 * the wait.  railwire_wait_handle(rs, h, 0, NULL) lifts the reservation
 * (the transfer is then returned by poll/wait like any other). */
#define RAILWIRE_OP_F_RESERVED 0x1u

/* Submits one transfer.  Returns 0 and sets *handle, or an error and
 * nothing was submitted: RAILWIRE_E_INVALID (unknown opcode or flags,
 * length 0, local range outside mr, remote offset +
 * length overflowing), RAILWIRE_E_REMOTE_ACCESS (RO:
 * no such layer), RAILWIRE_E_ALL_RAILS_DOWN.  Never blocks on the network:
 * what does not fit the rails' queues waits in order inside the railset.
 * The local buffer must stay untouched until the transfer completes. */
RAILWIRE_API int railwire_submit(railwire_railset *rs, const railwire_op *op, railwire_handle *handle);

/* Submits n transfers; handles[i] receives op i's handle.  Returns the number
 * submitted (all n, or fewer if op k is invalid: ops k..n-1 were not
 * submitted) or an error. */
RAILWIRE_API int railwire_submit_batch(railwire_railset *rs, const railwire_op *ops, size_t n,
                                       railwire_handle *handles);

/* A finished transfer.  status is 0 only if every byte moved; otherwise an
 * error such as RAILWIRE_E_REMOTE_ACCESS or RAILWIRE_E_ALL_RAILS_DOWN.
 *
 * ABI (docs/abi.md): one size for every 1.x release (64 bytes), no element
 * size argument to poll or wait.  The library writes every byte of each
 * completion it returns (flags and reserved as 0 in 1.0); a later release
 * that fills a reserved field says so with a bit in `flags`. */
typedef struct railwire_completion {
    railwire_handle handle;
    uint64_t user_data;
    int32_t status;
    uint32_t flags;         /* none defined in 1.0: 0 */
    size_t length;          /* the transfer's length */
    uint64_t bytes_moved;   /* bytes known to have reached their destination:
                               `length` when status is 0; for a failed, cancelled
                               or timed-out transfer, the bytes of its slices that
                               completed (a lower bound, not necessarily a prefix:
                               a slice that failed may have moved part of its bytes) */
    uint64_t reserved[3];   /* room for growth: 0 in 1.0 */
} railwire_completion;

/* Makes progress and returns up to `max` finished transfers without
 * blocking: the count (>= 0) or RAILWIRE_E_INVALID.  A finished transfer is
 * returned exactly once, by poll, wait or the synchronous helper that
 * submitted it. */
RAILWIRE_API int railwire_poll(railwire_railset *rs, railwire_completion *out, int max);

/* Like railwire_poll but waits up to timeout_ms (< 0: 24 hours at most) for
 * at least one completion.  Returns the count (>= 1), or RAILWIRE_E_TIMEOUT
 * (also at once when nothing is pending).  Sleeps in poll() on the rails'
 * completion channels rather than spinning. */
RAILWIRE_API int railwire_wait(railwire_railset *rs, railwire_completion *out, int max, int timeout_ms);

/* Synchronous helpers: submit one transfer and wait for it (other
 * completions that arrive meanwhile are kept for later polls).  Return the
 * transfer's status, or RAILWIRE_E_TIMEOUT (the transfer is then still
 * pending and will complete later). */
RAILWIRE_API int railwire_read(railwire_railset *rs, railwire_mr *mr, void *local, size_t length,
                               uint32_t layer, uint64_t remote_offset, int timeout_ms);
RAILWIRE_API int railwire_write(railwire_railset *rs, railwire_mr *mr, const void *local, size_t length,
                                uint32_t layer, uint64_t remote_offset, int timeout_ms);

/* Waits for one transfer of railwire_submit/_batch, `h`, up to timeout_ms
 * (0: do not wait; < 0: 24 hours at most), and returns it in *out: 0, or
 * RAILWIRE_E_TIMEOUT (not finished yet; it stays pending and this call or
 * poll/wait can return it later, as before), or RAILWIRE_E_INVALID (NULL
 * rs, h unknown: never submitted, already returned, or a transfer of the
 * synchronous helpers railwire_read/railwire_write).  While a thread waits
 * here for h, railwire_poll and railwire_wait do not return h; use
 * RAILWIRE_OP_F_RESERVED to keep them off it from the submit on.  Several
 * threads may wait for different handles at once; the transfer is
 * returned exactly once.  Makes progress like railwire_poll; sleeps on the
 * railset's fd (railwire_railset_fd) rather than spinning.
 * out == NULL: returns at once, and lifts the RAILWIRE_OP_F_RESERVED
 * reservation of h: 0, or RAILWIRE_E_INVALID as above. */
RAILWIRE_API int railwire_wait_handle(railwire_railset *rs, railwire_handle h, int timeout_ms,
                                      railwire_completion *out);

/* Cancels transfer h (of railwire_submit/_batch).  Returns 0, or
 * RAILWIRE_E_INVALID (NULL rs, or h unknown: never submitted or already
 * returned by poll/wait/wait_handle), or RAILWIRE_E_STATE (h already
 * finished: its completion, with its own status, waits to be returned).
 * Cancelling a transfer already being cancelled returns 0 and changes
 * nothing.  The completion is still returned once, by poll, wait or
 * wait_handle, with status RAILWIRE_E_CANCELED (or the first error one of
 * its slices met before; or 0 when the cancel came too late to stop any
 * part of it and every byte moved):
 *  - slices not yet posted to a rail are dropped at once; when none of the
 *    transfer's slices is on the wire it completes at once (the next
 *    poll returns it);
 *  - slices already on the wire are never re-issued; the transfer
 *    completes once each of them has completed on its rail or its rail has
 *    been killed (after which no copy of it can land: the rule that keeps
 *    re-issue safe).  A rail kills itself when a slice has been outstanding
 *    for op_timeout_ms, so the cancel completes at most op_timeout_ms
 *    (plus about 100 ms of checking) after the cancel, and at once on a
 *    healthy rail when its slices complete.
 * completion.bytes_moved counts the bytes of the slices that completed.
 * A cancelled WRITE: the transfer's slices are posted in order, so the
 * remote bytes that may have changed are a prefix [remote_offset,
 * remote_offset + P) of its range, P the end of the last slice posted
 * before the cancel (a multiple of the slice size, or length); each of
 * those bytes holds either its old value or the new one; bytes_moved of
 * them are known to hold the new one; no byte at or after P and none
 * outside the range changed.  A cancelled READ: the local buffer holds
 * the same mix and may still be written until the completion is
 * returned, never after. */
RAILWIRE_API int railwire_cancel(railwire_railset *rs, railwire_handle h);

/* Transfers of railwire_submit/_batch whose completion has not been
 * returned yet (in flight, or finished and waiting for poll/wait/
 * wait_handle); 0 for NULL. */
RAILWIRE_API size_t railwire_railset_pending(railwire_railset *rs);

/* A file descriptor for an event loop (epoll, poll, select, asyncio's
 * add_reader, libuv's uv_poll): it becomes readable when railwire_poll
 * (or railwire_wait_handle) may have something to return or to do.
 * Level-triggered: it stays readable until a railwire_poll or
 * railwire_wait_handle call has taken what made it so; it may also be
 * readable with nothing to return (then poll returns 0).  After it fires,
 * call railwire_poll until it returns fewer than `max`, then go back to
 * waiting.  Register it level-triggered (not EPOLLET/EPOLLONESHOT).  No
 * completion is missed: a transfer that finishes (in any thread, or on a
 * rail's own completion channel), a per-transfer deadline or a rail's op
 * timeout that falls due, and a rail replaced by healing all make the fd
 * readable without any other call, until the next poll.  Nothing needs
 * another thread's railwire_wait; the caller's poll calls drive progress.
 * The fd is owned by the railset (do not close or read it); the same fd
 * is returned by every call, and it is closed by railwire_railset_close.
 * Returns the fd (>= 0), or RAILWIRE_E_INVALID (NULL rs) or
 * RAILWIRE_E_SYSTEM (the epoll, eventfd or timerfd could not be made). */
RAILWIRE_API int railwire_railset_fd(railwire_railset *rs);

enum railwire_rail_state { RAILWIRE_RAIL_UP = 0, RAILWIRE_RAIL_DOWN = 1 };

/* Per-rail counters.  Fields may be appended in later versions, never
 * reordered: railwire_railset_stats() takes the caller's sizeof. */
typedef struct railwire_rail_stats {
    unsigned index;
    uint32_t state;         /* enum railwire_rail_state */
    char name[64];          /* local domain, e.g. "tcp:10.0.0.1" or "mlx5_0:1" */
    double gbps;            /* striping weight */
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t ops;           /* slices completed */
    uint64_t errors;        /* slices that failed on this rail */
    uint64_t reissued;      /* slices moved from this rail to others after it died */
    int down_reason;        /* RAILWIRE_E_* that took the rail down, 0 while up */
    int last_down_reason;   /* RAILWIRE_E_* of the last time it went down (kept after a
                               heal), 0 if it never did */
    uint64_t heals;         /* times healing put this rail back in service */
    uint64_t heal_attempts; /* heal attempts that tried to bring this rail back */
    unsigned session;       /* the session the rail belongs to: 0 = the one
                               railwire_railset_connect opened, then 1, 2, ... per heal */
    int control_up;         /* 1 while that session's control connection is open; its
                               end is logged and the rail keeps working */
    uint32_t tls;           /* enum railwire_rail_tls: who runs this rail's TLS record
                               layer (the rail's own bytes; verbs rails: off, the data
                               is RDMA in the clear even when the control connection
                               runs TLS) */
    uint32_t tls_ktls;      /* with tls: RAILWIRE_KTLS_SEND | RAILWIRE_KTLS_RECV, the
                               directions the kernel holds (0: none) */
    /* Memory registrations made on this rail, by the path each took
     * (railwire_mr_register_mem, docs/gpu.md): host memory; CUDA memory or a
     * DMA-BUF registered by verbs as a DMA-BUF or through nvidia-peermem;
     * CUDA memory moved by tcp through pinned host staging buffers. */
    uint64_t regs_host;
    uint64_t regs_dmabuf;
    uint64_t regs_peermem;
    uint64_t regs_staged;
} railwire_rail_stats;

/* railwire_rail_stats.tls */
enum railwire_rail_tls {
    RAILWIRE_RAIL_TLS_OFF = 0,    /* plain */
    RAILWIRE_RAIL_TLS_USER = 1,   /* TLS 1.3, records sealed by OpenSSL in user space */
    RAILWIRE_RAIL_TLS_KERNEL = 2, /* TLS 1.3, the kernel holds the record layer in at
                                     least one direction (tls_ktls says which) */
};
#define RAILWIRE_KTLS_SEND 1u
#define RAILWIRE_KTLS_RECV 2u

/* The smallest elem_size railwire_railset_stats() accepts (index and state). */
#define RAILWIRE_RAIL_STATS_MIN_SIZE 8u

/* Copies the stats of up to `max` rails into out, an array of `max`
 * elements of elem_size bytes each (pass sizeof *out): each element gets the
 * first elem_size bytes of the library's record (zeros beyond the fields the
 * library knows), and no byte past max * elem_size is written.  Returns the
 * rail count, or RAILWIRE_E_INVALID (NULL rs, NULL out with max > 0,
 * elem_size below RAILWIRE_RAIL_STATS_MIN_SIZE). */
RAILWIRE_API int railwire_railset_stats(const railwire_railset *rs, railwire_rail_stats *out,
                                        unsigned max, size_t elem_size);

/* Renders the railset's stats (railwire_railset_stats) in the Prometheus
 * text exposition format (version 0.0.4; families and labels in
 * docs/metrics.md: per rail, labelled rail="INDEX" and device="NAME", so at
 * most RAILWIRE_MAX_RAILS series per family), for an engine to serve on its
 * own endpoint.  Like snprintf: writes at most `size` bytes into buf, the
 * terminating NUL included, and returns the length of the whole text
 * without the NUL; a return >= size means the text was cut (call again
 * with at least the returned length + 1; counters may gain digits between
 * calls).  buf may be NULL when size is 0 and stays owned by the caller.
 * Returns RAILWIRE_E_INVALID (NULL rs, or NULL buf with size > 0) or
 * RAILWIRE_E_NOMEM.  Thread-safe like railwire_railset_stats. */
RAILWIRE_API ssize_t railwire_railset_metrics(const railwire_railset *rs, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
