/* PFC deadlock and pause-storm detection (DESIGN.md section 6): one interval's snapshot in,
 * findings with evidence and proposed changes out.  No I/O; the caller applies the changes
 * (rocefabd through its audited change path, the simulator directly after an actuation delay)
 * and tells the detector how each went.
 *
 * The pause-dependency graph: an egress queue (port, priority) is *stuck* when it was paused by
 * its peer for (nearly) the whole interval, sent nothing and is not empty.  A stuck queue waits
 * on the peer's ingress buffer, which waits on the egress queues of the peer's node its packets
 * are headed to; no device reports where an ingress buffer's packets go, so the edge goes to
 * every stuck queue of that node on the same priority.  (Queues paused most of the interval
 * that still drain are vertices too, for the victims of storms; cycles are of stuck ones only.)
 * Classes:
 *
 *   deadlock        a strongly connected component of stuck queues: a cycle (ports in cycle
 *                   order, the priority, since when)
 *   pause_storm     a pause source with no downstream cause: a port that paused its peer for
 *                   the whole interval while it received nothing and its node has no stuck
 *                   queue (typically a NIC), with the stuck queues that wait on it (victims)
 *   slow_receiver   a host that pauses its switch port for a good share of the interval while
 *                   it keeps receiving; raised until slow_hold intervals in a row are not so
 *                   (it pauses only while a burst comes to it)
 *   congestion      queues paused for most of the interval that still drain: recorded, never
 *                   an alarm
 *   persistent      a deadlock that formed again after its break was restored: the break is
 *                   kept ("fix routing")
 *
 * Mitigation (modes off / advise / auto per class): a deadlock is broken at one queue — the
 * one whose release frees most of the component, then the shallowest — by taking its port's
 * priority out of lossless mode (the port ignores pauses; what its peer cannot take is dropped
 * there) for restore_us, then restoring it.  A storm: the switch port facing the culprit leaves
 * lossless mode until the culprit has not paused for restore_us. */
#ifndef ROCEFAB_CC_DEADLOCK_H
#define ROCEFAB_CC_DEADLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cc/snap.h"

enum cc_dl_class {
	CC_DL_DEADLOCK,
	CC_DL_PAUSE_STORM,
	CC_DL_SLOW_RECEIVER,
	CC_DL_CONGESTION,
	CC_DL_PERSISTENT,
	CC_DL_NCLASSES
};

enum cc_dl_mode { CC_DL_OFF, CC_DL_ADVISE, CC_DL_AUTO };

struct cc_dl_conf {
	enum cc_dl_mode deadlock_mode, storm_mode;
	int64_t restore_us;	/* a break lasts this long; a storm's isolation this long after the
				 * culprit stopped pausing */
	double stuck_share;	/* paused at least this share of the interval (0.9) */
	double slow_share;	/* a host pausing this share while receiving: slow receiver (0.2) */
	unsigned slow_hold;	/* a slow receiver found stays raised until it has not been one for
				 * this many intervals (25: 5 s of 200 ms ones; 0: cleared at once) */
	double congestion_share; /* paused this share while draining: congestion (0.5) */
	unsigned max_listed;	/* victims and congested ports listed per finding (64) */
	int64_t action_timeout_us; /* an action without an outcome this long is taken as done */
};

extern const struct cc_dl_conf cc_dl_defaults;

const char *cc_dl_class_name(enum cc_dl_class c);
const char *cc_dl_mode_name(enum cc_dl_mode m);
/* -EINVAL for an unknown name. */
int cc_dl_mode_parse(const char *s, enum cc_dl_mode *ret);
/* NULL, or what is wrong with the configuration (restore_us <= 0, shares outside (0, 1]). */
const char *cc_dl_conf_check(const struct cc_dl_conf *c);

#define CC_DL_NAME 160 /* a host port's label is DEVICE:PORT, 64 + 1 + 64 */
/* findings per run at most (storms, slow receivers, deadlocks): the rest is counted */
#define CC_DL_MAX_FINDINGS 1024

/* A queue named in a finding, with what the snapshot said of it. */
struct cc_dl_queue {
	char node[CC_DL_NAME], port[CC_DL_NAME];
	uint64_t paused_us, tx_bytes, depth_bytes;
};

struct cc_dl_finding {
	uint64_t id;		/* stable while the same thing persists (same priority and ports; a deadlock
				 * that turns persistent keeps its id) */
	enum cc_dl_class cls;
	uint8_t prio;
	struct cc_dl_queue *ports; /* deadlock: the cycle's egress queues in cycle order; storm and
				    * slow receiver: the source (the culprit's port); congestion: the
				    * congested queues */
	unsigned nports;
	struct cc_dl_queue *victims; /* storm: stuck queues that wait on the culprit */
	unsigned nvictims, victims_total;
	int64_t first_us, last_us;
	bool fresh;		/* first seen in this interval */
	bool mitigated;		/* an action of ours holds for it */
	bool silent;		/* storm: no readings of the source's own (a hung host's agent often
				 * sends none): read from the switch port it pauses */
	bool unread;		/* storm, isolated: neither the source nor the port it paused gives
				 * readings that show whether it still pauses (both gone, or a switch
				 * that counts no pause frames and a source with none of its own): the
				 * isolation is kept, and so is the finding, as it was last read */
	char culprit[CC_DL_NAME]; /* storm, slow receiver: the node */
	char summary[640];	/* one line for an operator */
	struct cc_dl_queue suggested; /* the queue a mitigation would change (node empty: none) */
	struct cc_dl_queue paused;    /* storm, slow receiver: the switch port the source pauses (its
				       * peer), this interval (a slow receiver's paused_us: its summary's,
				       * of its last slow interval); node empty: none known */
};

enum cc_dl_op { CC_DL_LOSSY, CC_DL_RESTORE };
const char *cc_dl_op_name(enum cc_dl_op op); /* lossless_off, restore */

/* A proposed change: take a port's priority out of lossless mode, or put it back. */
struct cc_dl_action {
	uint64_t id;
	uint64_t finding;
	enum cc_dl_class cls;
	enum cc_dl_op op;
	char node[CC_DL_NAME], port[CC_DL_NAME];
	uint8_t prio;
	char reason[1024];
};

struct cc_dl_result {
	int64_t t_us;
	struct cc_dl_finding *findings; /* every finding of this interval */
	size_t nfindings;
	uint64_t *cleared; /* ids of findings active before and gone now */
	size_t ncleared;
	struct cc_dl_action *actions; /* to apply, in order; report each with cc_dl_action_done */
	size_t nactions;
	unsigned stuck_queues; /* figures of the interval */
};

struct cc_dl;

struct cc_dl *cc_dl_new(const struct cc_dl_conf *c);
void cc_dl_free(struct cc_dl *d);
/* Changes modes and restore time while running (holds in force keep their times). */
void cc_dl_configure(struct cc_dl *d, const struct cc_dl_conf *c);
const struct cc_dl_conf *cc_dl_config(const struct cc_dl *d);

/* Analyses one interval.  The result stays valid until the next call or cc_dl_free.  0 or
 * -ENOMEM. */
int cc_dl_run(struct cc_dl *d, const struct cc_snap *s, const struct cc_dl_result **ret);
/* The outcome of an action: a break or isolation that failed is forgotten (the finding stays
 * unmitigated); a restoration that failed is retried at the next interval. */
void cc_dl_action_done(struct cc_dl *d, uint64_t action, bool ok);
/* (An action whose outcome never comes is taken as done after action_timeout_us; a hold whose
 * port someone else put back into lossless mode is dropped; holds move only when a snapshot
 * comes: without readings nothing is known, and nothing is changed.) */
/* Advise mode: an operator asks to mitigate an active finding.  0 and the action in *ret,
 * -ENOENT (no such active finding), -EALREADY (mitigated), -EINVAL (its class has no action). */
int cc_dl_mitigate(struct cc_dl *d, uint64_t finding, struct cc_dl_action *ret);
/* Whether a finding has a hold (in force, being applied or restored), over or not. */
bool cc_dl_held(const struct cc_dl *d, uint64_t finding);
/* Whether a queue (node, port, priority) is held: its hold gone (restored, or an operator put
 * the port back), nothing of the detector's is left to do on it. */
bool cc_dl_holds_queue(const struct cc_dl *d, const char *node, const char *port, unsigned prio);
/* Holds in force (a break or an isolation we applied, with when it lifts). */
size_t cc_dl_holds(const struct cc_dl *d);
/* Each: the queue (node, port, priority), the finding and its class, its state (applying,
 * in_force, restoring) and since when, when it lifts (until_us; null: a persistent deadlock's,
 * until an operator puts the port back, or a storm's while its culprit still pauses) and a
 * storm's culprit.  A new reference. */
json_t *cc_dl_holds_json(const struct cc_dl *d);

/* The first finding of r on priority prio that congestion control cannot cure — a deadlock
 * (persistent too) found min_age_us ago or more, a pause storm, a slow receiver — as "CLASS WHO"
 * in buf (a storm's or a slow receiver's culprit, a deadlock's first queue NODE:PORT, or the
 * one its break holds), with " and more" when there are others: true; false (buf "") when
 * none.  The tuner starts no harder step meanwhile (cc_tn_input.fault): their pauses are no
 * congestion's.  (A deadlock of one or two short intervals may be heavy pausing: the graph
 * links an ingress to every stuck queue of its node; seen at 100 us in rocefab-sim on a
 * lossy link's fabric, gone the interval after.)  buf: CC_DL_FAULT_LEN is room for any. */
#define CC_DL_FAULT_LEN (2 * CC_DL_NAME + 48)
bool cc_dl_fault(const struct cc_dl_result *r, unsigned prio, int64_t min_age_us, char *buf, size_t len);

/* JSON renderings (new references). */
json_t *cc_dl_finding_json(const struct cc_dl_finding *f);
json_t *cc_dl_action_json(const struct cc_dl_action *a);

#endif
