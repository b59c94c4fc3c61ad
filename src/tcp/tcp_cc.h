/* SPDX-License-Identifier: MIT */
/* The congestion control of rail sockets.  BBR models the path from its
 * round-trip time and delivery rate and caps its window at about twice that
 * product; on a same-host path (loopback, or a peer at one of this host's
 * own addresses) the round trip is a few microseconds, the cap comes to a
 * few segments, and one connection of 1 MiB transfers moved half of what
 * the same socket moves under cubic or reno (docs/tcp-transport.md).
 *
 * Where the system's algorithm is a BBR, every rail socket is therefore
 * put on reno (cubic where reno is not permitted) before it connects
 * (client) or listens (server): rw_tcp_cc_prepare.  Once connected, a rail
 * to another host goes back to the system's algorithm, and a same-host
 * rail stays on reno, however many rails its railset has.  Before, not
 * after: BBR turns on the kernel's internal pacing when it starts on a
 * connection, and switching the connection to reno later leaves that
 * pacing on, at a rate derived from reno's window and the round trip.  On
 * loopback both BBR's own pacing and that left-over pacing fell into a low
 * mode in which tcp_pace_kick fired tens of thousands of times a second
 * and each byte cost three times the CPU.  On 2 CPUs, 1 MiB READs at
 * depth 8: 12 rails under BBR (which the older rule kept above 2 rails a
 * CPU) moved 3.3-4.8 GB/s, 16 rails switched to reno after connecting
 * 3.4-3.9, and sockets that never ran BBR 8.2-11.6 at both counts
 * (docs/benchmarks.md, twenty-third session).  The left-over pacing is
 * what had made reno and cubic look slow on many loopback rails, and so
 * had kept 8 and more rails on BBR.
 *
 * A connected socket still on a BBR (one not prepared: a route's
 * congctl, or a listener this library did not make) keeps the older rule:
 * same-host, in a railset (or session) of at most RW_TCP_CC_RAILS_PER_CPU
 * (RW_TCP_CC_SERVER_RAILS_PER_CPU) rails for each CPU the process may use
 * (rw_cpus_usable), it is switched to reno (or cubic) after all, with its
 * pacing left on; otherwise it keeps BBR.  Reno rather than cubic since a
 * rail's sender carries one or two 512 KiB slices at a time, and cubic's
 * HyStart ends the slow start of such bursts early
 * (TcpExtTCPHystartTrainDetect counted one per rail at a window of 29-37
 * segments; docs/benchmarks.md, nineteenth session).
 *
 * RAILWIRE_TCP_CONGESTION overrides the choice: "auto" (the default, the
 * rule above), "system" (never change it), or an algorithm's name for
 * every rail socket, set before it connects or listens (as
 * net.ipv4.tcp_congestion_control spells it; unprivileged processes may
 * only pick those listed in net.ipv4.tcp_allowed_congestion_control). */
#ifndef RW_TCP_CC_H
#define RW_TCP_CC_H

#include <sys/socket.h>

/* Same-host rails per usable CPU up to which a connected socket still on a
 * BBR (not prepared) moves to reno: a client's rails, and a server
 * session's. */
#define RW_TCP_CC_RAILS_PER_CPU 2u
#define RW_TCP_CC_SERVER_RAILS_PER_CPU 4u

/* Returns 1 if a connection from `local` to `peer` stays on this host: the
 * peer is a loopback address (127.0.0.0/8, ::1, IPv4-mapped 127/8) or has
 * the local end's own IP. */
int rw_tcp_same_host(const struct sockaddr_storage *local, const struct sockaddr_storage *peer);

/* Applies RAILWIRE_TCP_CONGESTION's choice to a rail socket fd before it
 * connects or listens (a listener's accepted sockets inherit it): "auto"
 * puts it on reno (cubic where reno is refused) if the system's algorithm
 * is a BBR, a name sets that name, "system" does nothing.  Never fails: a
 * refused choice leaves the socket as it was (the connected socket's
 * rw_tcp_pick_congestion then logs a refused name). */
void rw_tcp_cc_prepare(int fd);

/* Applies the choice to the connected rail socket fd of a railset of
 * set_rails rails (0: unknown, counted as 1): "auto" returns a prepared
 * socket to the system's algorithm if its peer is on another host, and
 * moves a socket still on a BBR by the older rule (above); a name is set
 * again, a refusal logged (rate limited).  Never fails the rail. */
void rw_tcp_pick_congestion(int fd, unsigned set_rails);
/* The same for the rail socket of a server session of set_rails rails
 * (the older rule's limit there: RW_TCP_CC_SERVER_RAILS_PER_CPU rails a
 * CPU; its sockets send the READ answers). */
void rw_tcp_pick_server_congestion(int fd, unsigned set_rails);

/* Tests: the algorithm taken for the system's (NULL: read it again from a
 * new socket, as at first use).  Call before any rail socket is made. */
void rw_tcp_cc_assume_system(const char *name);

#endif
