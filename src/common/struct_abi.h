/* SPDX-License-Identifier: MIT */
/* Copying public structs whose size the caller gives (docs/abi.md): the
 * caller's copy may be older (smaller) or newer (larger) than the library's. */
#ifndef RW_COMMON_STRUCT_ABI_H
#define RW_COMMON_STRUCT_ABI_H

#include <stddef.h>
#include <string.h>

/* Reads a caller's struct of caller_size bytes into lib (lib_size bytes,
 * already holding the defaults): copies min(caller_size, lib_size) bytes, so
 * the fields past the caller's size keep their defaults.  Bytes the caller
 * has beyond lib_size (a newer header) must be 0: they would be fields this
 * library does not know.  Returns 0, or -1 when such a byte is not 0 (its
 * offset in *bad). */
static inline int rw_struct_in(void *lib, size_t lib_size, const void *caller, size_t caller_size,
                               size_t *bad)
{
    const unsigned char *c = caller;
    for (size_t i = lib_size; i < caller_size; i++) {
        if (c[i]) {
            *bad = i;
            return -1;
        }
    }
    memcpy(lib, caller, caller_size < lib_size ? caller_size : lib_size);
    return 0;
}

/* Writes the library's record (lib_size bytes) into a caller's struct of
 * caller_size bytes: the first min(caller_size, lib_size) bytes, then zeros
 * up to caller_size (fields this library does not know).  Writes no byte
 * past caller_size. */
static inline void rw_struct_out(void *caller, size_t caller_size, const void *lib,
                                 size_t lib_size)
{
    memcpy(caller, lib, caller_size < lib_size ? caller_size : lib_size);
    if (caller_size > lib_size)
        memset((unsigned char *)caller + lib_size, 0, caller_size - lib_size);
}

#endif
