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
    unsigned queue_depth;              /* slices in flight per rail, 0 = default (16);
                                          capped by the device's queue size */
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
                                          stalled server never keeps it spinning.  0 =
                                          default (50), -1 = sleep at once, at most 1000000 */
    uint32_t reserved0;                /* 0 (makes the tail padding a field: a member
                                          appended later starts past every byte an
                                          older caller's struct_size covers) */
    size_t staging_bytes;              /* CUDA memory on tcp (docs/gpu.md): the most pinned
                                          host memory the railset holds to stage payloads
                                          between the device and the sockets, in 1 MiB
                                          chunks allocated on demand; when every chunk is
                                          in use, transfers wait for one (back-pressure)
                                          and nothing more is allocated.  0 = default
                                          (64 MiB); at least one chunk */
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
    uint32_t flags;         /* none defined in 1.0: must be 0 (else RAILWIRE_E_INVALID) */
    railwire_mr *mr;
    void *local;
    size_t length;          /* >= 1 */
    uint64_t remote_offset;
    uint64_t user_data;     /* returned in the completion */
    uint32_t layer;
    uint32_t timeout_ms;    /* per-transfer deadline, 0 = none (the railset's
                               op_timeout_ms still bounds each slice).  Not
                               supported yet: a nonzero value fails with
                               RAILWIRE_E_INVALID */
    uint64_t reserved[1];   /* room for growth: leave 0; read only when a flag says so */
} railwire_op;

/* Submits one transfer.  Returns 0 and sets *handle, or an error and
 * nothing was submitted: RAILWIRE_E_INVALID (unknown opcode or flags, a
 * nonzero timeout_ms, length 0, local range outside mr, remote offset +
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
                               `length` when status is 0; otherwise the bytes of
                               the slices that completed (a lower bound: a slice
                               that failed may have moved part of its bytes) */
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
    /* Memory registrations made on this rail, by the path each took
     * (railwire_mr_register_mem, docs/gpu.md): host memory; CUDA memory or a
     * DMA-BUF registered by verbs as a DMA-BUF or through nvidia-peermem;
     * CUDA memory moved by tcp through pinned host staging buffers. */
    uint64_t regs_host;
    uint64_t regs_dmabuf;
    uint64_t regs_peermem;
    uint64_t regs_staged;
} railwire_rail_stats;

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
