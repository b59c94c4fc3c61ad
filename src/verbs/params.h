/* SPDX-License-Identifier: MIT */
/* Pure helpers of the verbs transport: the RAILWIRE_DEVICES list, the path
 * MTU rule and the link speed.  No device access; unit-tested without
 * hardware. */
#ifndef RW_VERBS_PARAMS_H
#define RW_VERBS_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#define RW_VERBS_DEV_NAME_MAX 64
#define RW_VERBS_MAX_PORTS 64

/* One "dev[:port]" item.  port 0 = every active port of the device
 * (domain_open: the first active one). */
struct rw_devspec {
    char dev[RW_VERBS_DEV_NAME_MAX];
    unsigned port;
};

/* Parses "dev[:port],dev[:port],..." (spaces around items allowed) into out.
 * Returns the number of items (>= 1), or RAILWIRE_E_INVALID for an empty
 * list, an empty or too-long name, a bad port number, or more than `max`
 * items.  Does not log. */
int rw_devspec_parse(const char *s, struct rw_devspec *out, size_t max);

/* libibverbs MTU codes (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5) <-> bytes.
 * rw_mtu_bytes returns 0 for an unknown code; rw_mtu_code_floor returns the
 * largest code whose size is <= bytes, or 0 if bytes < 256. */
unsigned rw_mtu_bytes(int code);
int rw_mtu_code_floor(unsigned bytes);

/* The path MTU rule: min(port active MTU, cap, env); cap 0 means 4096 and
 * env 0 means unset.  Returns the libibverbs code, or 0 if the cap or env
 * value is below 256 (invalid). */
int rw_path_mtu(int active_code, unsigned cap_bytes, unsigned env_bytes);

/* Link rate in Gbit/s from libibverbs' active_speed and active_width codes;
 * unknown codes count as 1x / 10 Gbit/s lanes so the result is always > 0. */
double rw_link_gbps(uint8_t active_speed, uint8_t active_width);

/* Reads an unsigned decimal environment variable.  Returns 1 and sets *v
 * when set and valid, 0 when unset or empty, RAILWIRE_E_INVALID when set to
 * something else (logged, naming the variable). */
int rw_env_uint(const char *name, unsigned long max, unsigned long *v);

/* The GID index override in force: cfg_index if >= 0 ("the gid_index
 * option"), else RAILWIRE_GID_INDEX if set, else -1.  *src names the source
 * (static string, NULL for none).  Returns RAILWIRE_E_INVALID for a
 * malformed environment value (logged). */
int rw_verbs_gid_override(int cfg_index, const char **src);

#endif
