/* SPDX-License-Identifier: MIT */
/* The congestion control of rail sockets.  BBR models the path from its
 * round-trip time and delivery rate and caps its window at about twice that
 * product; on a same-host path (loopback, or a peer at one of this host's
 * own addresses) the round trip is a few microseconds, the cap comes to a
 * few segments, and one connection of 1 MiB transfers moved half of what
 * the same socket moves under cubic or reno (docs/tcp-transport.md).  So a
 * same-host rail whose algorithm is a BBR, of a railset (or session) of at
 * most RW_TCP_CC_RAILS_PER_CPU rails for each CPU the process may use
 * (rw_cpus_usable, the count that sizes the client's event loops), is
 * switched to reno (below), or to cubic where reno is not permitted.  With
 * more rails each connection carries a small share and BBR's cap no longer
 * binds, while cubic's unpaced sends measured about half as fast on many
 * loopback connections (same document); those rails, and rails to other
 * hosts, keep the system's algorithm.  Two rails a CPU: on 2 CPUs, 3 and 4
 * rails moved 1.1-1.5x under cubic at 64 KiB and 1 MiB, 8 rails gained and
 * lost by turns (0.77-1.22x), 16 and 64 lost (0.63-0.94x).  Reno rather
 * than cubic since a rail's sender carries one or two 512 KiB slices at a
 * time, and cubic's HyStart ends the slow start of such bursts early
 * (TcpExtTCPHystartTrainDetect counted one per rail at a window of 29-37
 * segments): first found on the server's sockets (READ answers, below),
 * then on the client's (WRITE payloads: 4 rails of 1 MiB WRITEs on 2
 * CPUs moved 1.15x under reno, median of 10 alternating pairs, 64 KiB
 * 1.07x; 1-3 rails and 4 KiB the same; docs/benchmarks.md, nineteenth
 * session).
 * RAILWIRE_TCP_CONGESTION overrides the choice: "auto" (the default, the
 * rule above), "system" (never change it), or an algorithm's name for
 * every rail socket (as net.ipv4.tcp_congestion_control spells
 * it; unprivileged processes may only pick those listed in
 * net.ipv4.tcp_allowed_congestion_control). */
#ifndef RW_TCP_CC_H
#define RW_TCP_CC_H

#include <sys/socket.h>

/* Same-host rails per usable CPU up to which a BBR rail moves to reno:
 * a client's rails, and a server session's (whose sockets send the READ
 * answers; see rw_tcp_pick_congestion). */
#define RW_TCP_CC_RAILS_PER_CPU 2u
#define RW_TCP_CC_SERVER_RAILS_PER_CPU 4u

/* Returns 1 if a connection from `local` to `peer` stays on this host: the
 * peer is a loopback address (127.0.0.0/8, ::1, IPv4-mapped 127/8) or has
 * the local end's own IP. */
int rw_tcp_same_host(const struct sockaddr_storage *local, const struct sockaddr_storage *peer);

/* Applies RAILWIRE_TCP_CONGESTION's choice (above) to the connected rail
 * socket fd of a railset of set_rails rails (0: unknown, counted as 1).
 * Never fails the rail: a refused algorithm is logged (rate limited) and
 * the socket keeps the system's. */
void rw_tcp_pick_congestion(int fd, unsigned set_rails);
/* The same for the rail socket of a server session of set_rails rails,
 * which moves to reno (cubic where reno is refused) up to
 * RW_TCP_CC_SERVER_RAILS_PER_CPU rails a CPU.  Its sockets send the READ
 * answers: 8 same-host rails on 2 CPUs moved 1 MiB READs 1.2-1.4x faster
 * with the server's sockets off BBR and the client's on it (whose WRITEs
 * lost under cubic), and reno moved them 1.3-1.4x faster again than cubic
 * (9.9k-11.0k against 7.1k-7.8k a second): a rail of 8 carries one or two
 * 512 KiB answers at a time, and cubic's HyStart ends the slow start of
 * such bursts early (TcpExtTCPHystartTrainDetect counts it), leaving a
 * small window that the client's ACKs must clock out; reno grows it to
 * what the socket holds.  4 KiB, 64 KiB and WRITE rows moved the same
 * within the runs' spread (docs/benchmarks.md, seventeenth session). */
void rw_tcp_pick_server_congestion(int fd, unsigned set_rails);

#endif
