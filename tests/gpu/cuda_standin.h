/* SPDX-License-Identifier: MIT */
/* Test-only controls of the stand-in CUDA driver (cuda_standin.c), reached
 * with dlsym on the library named by RAILWIRE_CUDA_LIBRARY.
 *
 * Environment knobs, read at each call:
 *   RAILWIRE_STANDIN_FAIL     "sym[=code],...": those entry points return
 *                             code (default 999, CUDA_ERROR_UNKNOWN)
 *   RAILWIRE_STANDIN_DEVICES  device count (default 2; 0 = no device)
 *   RAILWIRE_STANDIN_DEVMEM   "rw": device memory stays CPU-accessible (to
 *                             stand in for nvidia-peermem in the verbs VM);
 *                             default: PROT_NONE outside the stand-in's copies
 *   RAILWIRE_STANDIN_SYNC     "1": asynchronous copies run in the caller at once
 *                             (no worker hand-off: measures railwire's own
 *                             staging cost, not the scheduler's); default:
 *                             each stream's worker thread runs them
 *   RAILWIRE_STANDIN_DMABUF   "udmabuf": cuMemGetHandleForAddressRange exports
 *                             device memory through /dev/udmabuf; default:
 *                             CUDA_ERROR_NOT_SUPPORTED */
#ifndef RW_TESTS_GPU_CUDA_STANDIN_H
#define RW_TESTS_GPU_CUDA_STANDIN_H

#include <stdint.h>

/* What the stand-in has done since load. */
struct standin_stats {
    uint64_t htod, dtoh;            /* copies done */
    uint64_t htod_bytes, dtoh_bytes;
    uint64_t streams_live, events_live, allocs_live;
};

/* closed != 0: stream workers stop before their next copy until reopened,
 * so a test can observe CUDA_ERROR_NOT_READY.  Returns 0. */
typedef int (*standin_gate_fn)(int closed);
/* Fills *out.  Returns 0. */
typedef int (*standin_stats_fn)(struct standin_stats *out);

#define STANDIN_GATE_SYM "railwire_standin_gate"
#define STANDIN_STATS_SYM "railwire_standin_stats"

#endif
