/* The controllers' view of the fabric over one interval (DESIGN.md section 6): the topology
 * (nodes, their ports, the links between ports), and for every port and lossless priority what
 * the agents report — counters as deltas over the interval, gauges as read at its end — under
 * the registry's names (schemas/counters.json), plus the port's current PFC setting.
 *
 * Two builders fill it: rocefabd from the deltas the agents report, and the simulator from its
 * devices' counters as its virtual agents would report them.  Both name counters by registry
 * name (cc_snap_set), so neither can give the controllers something a real fabric does not
 * report.  cc_snap_json() renders a snapshot canonically (sorted), so that two builders can be
 * compared byte for byte.  No I/O. */
#ifndef ROCEFAB_CC_SNAP_H
#define ROCEFAB_CC_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/lane.h"

struct hmap;

#define CC_NPRIO 8
#define CC_NONE UINT32_MAX


struct cc_prio {
	uint64_t v[CF_N];
	uint32_t have; /* bit f: field f was reported (an absent field is not a zero) */
};

enum cc_node_kind { CC_HOST, CC_SWITCH };

struct cc_node {
	const char *name;
	enum cc_node_kind kind;
	uint32_t *ports; /* indexes into snap->ports, sorted by port name after cc_snap_finish */
	uint32_t nports;
	size_t capports;
};

struct cc_port {
	const char *name; /* as its node names it (a switch port by its neighbour) */
	uint32_t node;
	uint32_t peer; /* the port at the other end of its link, CC_NONE when unknown */
	bool down;
	uint8_t lossless; /* priorities with PFC on at this port (bitmap), as configured now */
	uint64_t speed_mbps; /* 0: not reported */
	uint64_t pv[CP_N];   /* port counters (lane_pfield) */
	uint32_t phave;	     /* bit f: port field f was reported */
	/* the times of the two readings its deltas are between (us; 0: not known — each of the
	 * simulator's snapshots is a new interval): rocefabd's runs may see the same readings
	 * twice, so what counts intervals counts these, not runs */
	int64_t read_from_us, read_to_us;
	/* no readings: a host port without readings of its own (its agent silent, its fast lane
	 * off), known from the topology as the peer of a switch port that received pauses
	 * (rocefabd's snapshots; the detector reads it from that side) */
	bool silent;
	char *key;	  /* "node\x1fport": name points into it */
};

struct cc_snap {
	int64_t t_us;	     /* the end of the interval (fabric time, or wall time in rocefabd) */
	int64_t interval_us; /* its length */
	uint8_t prios;	     /* the priorities the snapshot holds: the fabric's lossless ones */
	unsigned nprios;
	int8_t rank[CC_NPRIO]; /* a priority's place among them, -1: not held */
	struct cc_node *nodes;
	uint32_t nnodes;
	size_t capnodes;
	struct cc_port *ports;
	uint32_t nports;
	size_t capports;
	/* private */
	struct cc_prio *prbuf; /* nprios entries per port, in increasing priority */
	size_t prcap;	       /* ports it has room for */
	struct hmap *node_idx, *port_idx;
};

/* A snapshot of the given priorities (bitmap, not 0) over [t_us - interval_us, t_us].  NULL
 * when out of memory. */
struct cc_snap *cc_snap_new(uint8_t prios, int64_t t_us, int64_t interval_us);
void cc_snap_free(struct cc_snap *s);

/* The node of that name (made, with its kind, when new): its index or -ENOMEM / -EINVAL (a
 * node already added with the other kind). */
int cc_snap_node(struct cc_snap *s, const char *name, enum cc_node_kind kind);
/* The port of that name on a node (made when new): its index or -ENOMEM / -EINVAL. */
int cc_snap_port(struct cc_snap *s, uint32_t node, const char *name);
/* Joins two ports by a link: 0, or -EINVAL when either is already linked to another port. */
int cc_snap_link(struct cc_snap *s, uint32_t a, uint32_t b);
/* Sets a counter (delta) or gauge by its registry name; prio is the priority or -1 for a port
 * counter (lane_pfield).  Names and priorities the snapshot does not hold are ignored (0);
 * -EINVAL for a priority out of 0..7. */
int cc_snap_set(struct cc_snap *s, uint32_t port, const char *name, int prio, uint64_t value);
/* Adds snapshot s (a later interval) to acc, the sum of the intervals so far, port by port by
 * name (made in acc when new): counters add, gauges take s's reading except the peaks
 * (queue_watermark_periodic_bytes), which take the larger; the port's speed, PFC setting,
 * state and link are s's.  acc's interval grows by s's and ends where s ends.  Priorities acc
 * does not hold are left out.  A silent port adds nothing but its place and link, and stays
 * silent in acc unless readings of it came in another interval.  A node of another
 * kind in acc (its agent's role flipped) takes s's, and its sums so far are dropped (its ports
 * silent and unlinked until s's readings of them).  0 or -ENOMEM
 * (acc is then partly merged).  Call cc_snap_finish(acc) before reading it. */
int cc_snap_merge(struct cc_snap *acc, const struct cc_snap *s);
/* Sorts every node's ports by name, for a canonical order.  Call once built. */
void cc_snap_finish(struct cc_snap *s);

/* The entry of a port and priority, NULL when the snapshot does not hold the priority (inline:
 * the detector asks for every queue of the fabric). */
static inline struct cc_prio *cc_snap_prio(const struct cc_snap *s, uint32_t port, unsigned prio)
{
	if (port >= s->nports || prio >= CC_NPRIO || s->rank[prio] < 0)
		return NULL;
	return &s->prbuf[(size_t)port * s->nprios + (unsigned)s->rank[prio]];
}
/* Whether e's readings say its port was paused by its peer in the interval: pause time, pause
 * frames received, or paused at the interval's end (false for none of them read, or e NULL). */
bool cc_prio_paused(const struct cc_prio *e);
/* Whether e reads any of those (a port's paused state can be told at all). */
bool cc_prio_reads_paused(const struct cc_prio *e);
/* "node:port", into buf. */
const char *cc_snap_port_label(const struct cc_snap *s, uint32_t port, char *buf, size_t len);
int cc_snap_find_node(const struct cc_snap *s, const char *name);
int cc_snap_find_port(const struct cc_snap *s, const char *node, const char *port);

/* The snapshot as JSON, nodes and ports sorted by name (a new reference, NULL when out of
 * memory): {t_us, interval_us, priorities, nodes: [{name, kind, ports: [{name, peer, down,
 * lossless, prio: {"3": {field: value}}, speed_mbps and counters: {field: value} when
 * reported, silent: true for a port without readings (its priorities empty)}]}]}. */
json_t *cc_snap_json(const struct cc_snap *s);

#endif
