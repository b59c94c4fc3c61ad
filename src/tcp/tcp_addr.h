/* SPDX-License-Identifier: MIT */
/* Addresses of the tcp transport: parsing the configured local address, and
 * the mapping between a socket address and the 16-byte GID of a QP identity
 * (an IPv4 address travels IPv4-mapped, ::ffff:a.b.c.d; an IPv6 address as
 * is).  The port travels in the low 16 bits of a server QPN, not here. */
#ifndef RW_TCP_ADDR_H
#define RW_TCP_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Parses a numeric IPv4 or IPv6 address ("10.0.0.1", "::1", "[::1]") into
 * *ss with port 0; NULL or "" means 0.0.0.0.  An IPv4-mapped IPv6 address
 * becomes AF_INET.  Returns 0 or RAILWIRE_E_INVALID (logged). */
int rw_tcp_addr_parse(const char *s, struct sockaddr_storage *ss);

/* Length of the sockaddr in *ss for bind/connect (0 for an unknown family). */
socklen_t rw_tcp_addr_len(const struct sockaddr_storage *ss);

/* Returns 1 if *ss is the wildcard address (0.0.0.0 or ::). */
int rw_tcp_addr_is_any(const struct sockaddr_storage *ss);

/* Returns the port of *ss (host order), 0 for an unknown family. */
uint16_t rw_tcp_addr_port(const struct sockaddr_storage *ss);

/* Sets the port of *ss (host order). */
void rw_tcp_addr_set_port(struct sockaddr_storage *ss, uint16_t port);

/* Returns 1 if both addresses are IP addresses with the same IP (ports
 * ignored; an IPv4 address equals its IPv4-mapped IPv6 form), 0 otherwise. */
int rw_tcp_addr_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

/* Writes the GID of *ss: IPv4-mapped for AF_INET, the address for AF_INET6,
 * all zeroes for anything else. */
void rw_tcp_addr_to_gid(const struct sockaddr_storage *ss, uint8_t gid[16]);

/* Builds the socket address of `gid` and `port` (AF_INET for an
 * IPv4-mapped GID).  Returns 0, or RAILWIRE_E_INVALID (logged) for an
 * all-zero GID or port 0. */
int rw_tcp_gid_to_addr(const uint8_t gid[16], uint16_t port, struct sockaddr_storage *ss);

/* Formats "a.b.c.d:port" or "[v6]:port" (or without the port when
 * with_port is 0) into buf (NUL-terminated, truncated to cap). */
void rw_tcp_addr_format(const struct sockaddr_storage *ss, int with_port, char *buf, size_t cap);

#endif
