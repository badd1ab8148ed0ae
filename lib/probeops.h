/* The probe vocabulary that several layers share: the operations a probe can use and the sizes
 * it may carry.  The probe engine (agents/probe/) runs them; rocefabd's pingmesh plans with
 * them and its API validates them; the simulator answers them.  One table, as lib/params.h is
 * for the configuration knobs. */
#ifndef ROCEFAB_PROBEOPS_H
#define ROCEFAB_PROBEOPS_H

#include <stdbool.h>
#include <stddef.h>

enum probe_op { PROBE_WRITE, PROBE_READ, PROBE_SEND, PROBE_CAS, PROBE_FAA, PROBE_UD, PROBE_UDP,
		PROBE_TCP, PROBE_NOPS };

/* For messages: the names probe_op_parse() accepts. */
#define PROBE_OPS_TEXT "write, read, send, cas, faa, ud, udp or tcp"

#define PROBE_MIN_SIZE 8
#define PROBE_MAX_SIZE 65536

/* "write", ...; "?" for a value out of range. */
const char *probe_op_name(enum probe_op op);
/* 0 and *ret, or -EINVAL for a name that is not an operation (NULL included). */
int probe_op_parse(const char *s, enum probe_op *ret);
bool probe_op_valid(const char *s);
/* RDMA operations (verbs), as opposed to the kernel's UDP and TCP. */
bool probe_op_is_verbs(enum probe_op op);
/* The largest message op carries: a UD message fits in one MTU (4096 bytes), a UDP datagram
 * in 65000 bytes (its header within 64 KiB); others PROBE_MAX_SIZE.  (cas and faa move 8
 * bytes at any size asked: their results say 8.) */
unsigned probe_op_max_size(enum probe_op op);
/* Whether a probe endpoint's address (the len bytes of addr before ":PORT") may be handed to
 * the hosts that probe it: numeric IPv4, or IPv6 in brackets; not a name (each prober would
 * resolve it, to anything), nor unspecified, link-local (169.254.169.254 is a cloud's metadata
 * service), multicast or broadcast.  Loopback passes: one machine's agents (tests, a lab)
 * probe each other that way. */
bool probe_endpoint_address_ok(const char *addr, size_t len);
/* Whether it is a loopback address (127/8, [::1]): fit only for agents that reach rocefabd over
 * loopback too (one machine), since every prober would connect to its own. */
bool probe_endpoint_is_loopback(const char *addr, size_t len);

#endif
