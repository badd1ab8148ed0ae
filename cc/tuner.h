/* The congestion-control tuner (DESIGN.md section 6): one interval's snapshot in, proposed
 * changes of ECN marking (switch egress queues) and DCQCN (host NICs) out, with the evidence
 * and the expected effect.  No I/O; the caller applies the changes (rocefabd through its
 * audited change path, actor "tuner"; the simulator directly after an actuation delay) and
 * tells the tuner how each went.
 *
 * What it reads (what agents report, never flow completion times): per port class the queue
 * depth of the tuned priority, the ECN marks, the bytes sent against the port speed, the PFC
 * pause time; per host the CNPs handled, the bytes sent and the retransmissions; the
 * pingmesh's p99 when there is one.  Classes: ToR downlinks (switch ports facing hosts), ToR
 * uplinks (the other ports of a switch with hosts), spine ports (switches without hosts) —
 * each with its own Kmin/Kmax/Pmax — and the host classes, each with its own DCQCN setting: the policy's
 * host_classes (a name and a pattern of host names each, the first match wins) and "hosts",
 * every host no pattern matches.
 *
 * One step at a time per class (the classes step side by side): a move (one knob of one
 * class, one bounded step) goes to a canary first (canary_share of the class, at most
 * max_share; a host class's spread over the order of
 * the queues of the hosts' ToR ports, so that it is matched to the rest), is judged over
 * canary_intervals against the rest of the class in the same intervals and against the
 * fabric before the step, then rolls out to the rest (max_share of the class per step) or is
 * rolled back.  A step is rolled back when a safety signal — pause time, drops,
 * retransmissions, the probes' p99 — got worse (the retransmissions beyond what the frames
 * links lost explain; in an interval in which a link goes down or up, and the next, or one
 * with more ports down than before the step, no retransmissions and of the drops only those at
 * full buffers), or when the move missed its aim.  A move
 * rolled back is not tried again for tabu_intervals (a harder move made while ports pause,
 * rolled back for a fabric-wide rise, which a storm growing on its own causes too: for
 * canary_intervals, at least 3, once per tabu_intervals; a harder move rolled back for no
 * clear gain: unless ports pause), a kept one is not undone for as long, and after a harder
 * step is kept the class is not softened for twice that.  A rollback leaves a member whose old
 * value would break what it does not break now (an XOFF lowered since); one that fails is
 * tried again on the members not back, five times, then the step is kept as completed (for
 * cc_tn_rollback_all).  A canary not sent yet whose members report another value than its
 * step moves from is withdrawn (its error says why).
 * Hard invariants hold on every change proposed (cc_tn_ecn_check): Kmin < Kmax <= the PFC
 * XOFF threshold less one control loop, every value inside the device ranges of the policy.
 * A class most of whose members are outside the policy at one value of a knob (a policy
 * narrowed, XOFF lowered under Kmax) gets that knob stepped to the nearest value inside first,
 * kept unless it hurts; fewer than half set apart outside are left as they are.
 *
 * Modes: off (no moves: a step under way is rolled back, a canary waiting rejected, and
 * cc_tn_rollback_all still undoes completed steps), advise (a step waits for cc_tn_decide; its
 * rollout and any rollback follow without asking, as they only finish or undo what was
 * approved), auto. */
#ifndef ROCEFAB_CC_TUNER_H
#define ROCEFAB_CC_TUNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cc/snap.h"

enum cc_tn_mode { CC_TN_OFF, CC_TN_ADVISE, CC_TN_AUTO };

/* The switch classes, "hosts" (the hosts of no named class), then the policy's host classes
 * in its order (CC_TN_HOST_CLASS0 + i). */
enum cc_tn_class { CC_TN_TOR_DOWN, CC_TN_TOR_UP, CC_TN_SPINE, CC_TN_HOSTS, CC_TN_HOST_CLASS0 };
#define CC_TN_NSWITCH_CLASSES 3
#define CC_TN_MAX_HOST_CLASSES 4 /* named, besides "hosts" */
#define CC_TN_NCLASSES (CC_TN_HOST_CLASS0 + CC_TN_MAX_HOST_CLASSES)
#define CC_TN_NHOST_SLOTS (CC_TN_NCLASSES - CC_TN_HOSTS)

/* The knobs, by the names of the REST API's ECN and DCQCN objects (the facts file's). */
enum cc_tn_knob {
	CC_TN_KMIN,	   /* kmin_bytes */
	CC_TN_KMAX,	   /* kmax_bytes */
	CC_TN_PMAX,	   /* pmax */
	CC_TN_CNP_GAP,	   /* min_time_between_cnps (NP, us) */
	CC_TN_TIME_RESET,  /* rpg_time_reset (us): the rate-increase timer */
	CC_TN_AI_RATE,	   /* rpg_ai_rate (Mb/s) */
	CC_TN_HAI_RATE,	   /* rpg_hai_rate (Mb/s) */
	CC_TN_BYTE_RESET,  /* rpg_byte_reset (64-byte units): the byte counter */
	CC_TN_ALPHA_G,	   /* dce_tcp_g (1/1024): the alpha EWMA weight */
	CC_TN_NKNOBS
};

struct cc_tn_ecn {
	uint64_t kmin_bytes, kmax_bytes;
	double pmax;
};

struct cc_tn_dcqcn {
	double min_time_between_cnps_us, rpg_time_reset_us, rpg_ai_rate_mbps, rpg_hai_rate_mbps;
	uint64_t rpg_byte_reset;
	uint32_t dce_tcp_g;
};

/* A class of hosts with its own DCQCN setting (GPU servers, storage nodes): the hosts whose
 * name matches the pattern (fnmatch(3): *, ?, [...]). */
struct cc_tn_host_class {
	char name[32]; /* letters, digits, '_', '-', '.'; not a fixed class's name */
	char hosts[128];
};

struct cc_tn_policy {
	enum cc_tn_mode mode;
	double canary_share;	   /* of a class, the canary (0.5: the noise of bursty traffic needs
				    * many members to see a change through) */
	double max_share;	   /* of a class, changed per step at most (0.5) */
	unsigned canary_intervals; /* a step is judged after this many intervals (3) */
	unsigned tabu_intervals;   /* a move rolled back is not tried again for this long (30; one
				    * against pauses rolled back for a fabric-wide rise: above); a
				    * class is not softened for twice this after a harder step */
	/* a harder ECN move made while ports paused is undone, one at a time, once no port paused
	 * above pause_target for this many intervals (10; 0: kept until the rules soften it) */
	unsigned relax_intervals;
	double max_factor;	   /* a threshold, rate or timer moves by at most this factor (2) */
	double pmax_step;	   /* pmax moves by at most this much (0.1) */
	double qdelay_target_us;   /* the tail queueing delay aimed below (20) */
	double pause_target;	   /* share of port time paused above which it acts (0.0005) */
	/* a host pausing its switch port this share of the time or more holds every harder step
	 * while the hosts' own pauses are a quarter or more of the fabric's (0.01; 0: only the
	 * faults the PFC detector names hold them) */
	double host_pause_hold;
	double tolerance;	   /* a signal is worse when it grows by more than this share (0.25) */
	/* device ranges */
	uint64_t kmin_floor_bytes, kmax_ceiling_bytes;
	double pmax_floor, pmax_ceiling;
	double cnp_gap_min_us, cnp_gap_max_us, time_reset_min_us, time_reset_max_us, ai_min_mbps, ai_max_mbps,
		hai_min_mbps, hai_max_mbps;
	uint64_t byte_reset_min, byte_reset_max;
	uint32_t g_min, g_max;
	uint64_t loop_bytes; /* room for one control loop below XOFF: rate x RTT, at least 1 */
	struct cc_tn_host_class host_classes[CC_TN_MAX_HOST_CLASSES];
	unsigned nhost_classes;
};

extern const struct cc_tn_policy cc_tn_defaults;

const char *cc_tn_mode_name(enum cc_tn_mode m);
int cc_tn_mode_parse(const char *s, enum cc_tn_mode *ret);
/* The fixed classes' names ("?" for a named host class: cc_tn_class_label). */
const char *cc_tn_class_name(enum cc_tn_class c);
int cc_tn_class_parse(const char *s, enum cc_tn_class *ret);
static inline bool cc_tn_class_is_hosts(enum cc_tn_class c)
{
	return c >= CC_TN_HOSTS;
}
/* A class's name under a policy (its own host classes), and back (-ENOENT: no such class). */
const char *cc_tn_class_label(const struct cc_tn_policy *p, enum cc_tn_class c);
int cc_tn_class_lookup(const struct cc_tn_policy *p, const char *s, enum cc_tn_class *ret);
/* The class of a host under a policy: the first host class whose pattern matches, else
 * CC_TN_HOSTS. */
enum cc_tn_class cc_tn_host_class_of(const struct cc_tn_policy *p, const char *host);
const char *cc_tn_knob_name(enum cc_tn_knob k);
int cc_tn_knob_parse(const char *s, enum cc_tn_knob *ret);
/* The policy as JSON (a new reference), and back: the fields named change, the rest keep their
 * values; an unknown field or a bad value is refused with its name in err (and *p unchanged). */
json_t *cc_tn_policy_json(const struct cc_tn_policy *p);
int cc_tn_policy_from_json(json_t *o, struct cc_tn_policy *p, char *err, size_t len);
/* A policy saved by an older release as that one took it: a loop_bytes of 0 was the default,
 * the ranges of the hosts' knobs could be fractional (whole units now: rounded inward), the
 * ranges went past what devices take (held to it now: the hosts' rates 1600000 Mb/s,
 * byte_reset 32767, kmax_ceiling_bytes and loop_bytes 1 TiB, kmin_floor_bytes 1 byte below),
 * and a hosts pattern could leave a '[' open (escaped now: "gpu\\[1-4", the name it matched).  A
 * repaired copy to read with cc_tn_policy_from_json, or NULL when nothing needs repair. */
json_t *cc_tn_policy_repaired(json_t *doc);
/* Whether two policies are alike, field by field (no padding bytes compared). */
bool cc_tn_policy_equal(const struct cc_tn_policy *a, const struct cc_tn_policy *b);
/* NULL, or what is wrong with a policy: "FIELD: what", the field to mend first. */
const char *cc_tn_policy_check(const struct cc_tn_policy *p);
/* NULL, or which invariant an ECN setting breaks (xoff_bytes 0: not known). */
const char *cc_tn_ecn_check(const struct cc_tn_policy *p, const struct cc_tn_ecn *e, uint64_t xoff_bytes);
const char *cc_tn_dcqcn_check(const struct cc_tn_policy *p, const struct cc_tn_dcqcn *d);
double cc_tn_knob_get_ecn(const struct cc_tn_ecn *e, enum cc_tn_knob k);
double cc_tn_knob_get_dcqcn(const struct cc_tn_dcqcn *d, enum cc_tn_knob k);

/* One change of one device: an egress queue's ECN or a host's DCQCN. */
struct cc_tn_change {
	char node[64], port[64]; /* port empty for a host */
	bool host;
	struct cc_tn_ecn ecn_from, ecn_to;
	struct cc_tn_dcqcn dc_from, dc_to;
};

enum cc_tn_phase { CC_TN_CANARY, CC_TN_ROLLOUT, CC_TN_ROLLBACK };
enum cc_tn_pstate { CC_TN_WAITING, CC_TN_APPROVED, CC_TN_APPLIED, CC_TN_FAILED, CC_TN_REJECTED };

struct cc_tn_proposal {
	uint64_t id;
	uint64_t step;	  /* the step it belongs to (a canary, its rollouts, its rollback) */
	enum cc_tn_phase phase;
	enum cc_tn_pstate state;
	enum cc_tn_class cls;
	char cls_name[32]; /* the class's name when it was made (host classes may be renamed) */
	enum cc_tn_knob knob;
	double from, to;
	bool forced;
	int64_t t_us;	  /* when proposed */
	char reason[320]; /* the evidence, in words */
	char expect[200]; /* the expected effect */
	char error[320];  /* why the tuner withdrew it or gave it up ("" : neither) */
	bool unsent;	  /* approved, and the caller has not sent it (cc_tn_not_sent) */
	unsigned left_out; /* a rollout: members left out as it was sent (cc_tn_sendable) */
	json_t *evidence; /* the signals behind it */
	struct cc_tn_change *changes;
	size_t nchanges;
};

struct cc_tn;

struct cc_tn *cc_tn_new(const struct cc_tn_policy *p);
void cc_tn_free(struct cc_tn *t);
/* -EINVAL (and nothing changed) when the policy is bad.  A change of more than the mode
 * withdraws (rejects, without a hold) every canary waiting for an operator: it was made under
 * the policy before.  A new mode then decides those left: off rejects them and rolls back a
 * step under way, auto approves them.  New host classes come in force at once, or when no step
 * of a host class is applied in part any more (a step's members stay its members until it is
 * done or undone: cc_tn_json's host_classes_pending meanwhile, and no host class starts a
 * step). */
int cc_tn_set_policy(struct cc_tn *t, const struct cc_tn_policy *p);
const struct cc_tn_policy *cc_tn_get_policy(const struct cc_tn *t);
/* NULL, or, when not one switch port the tuner tracks would have room for a Kmax under policy
 * p (XOFF - loop_bytes at most kmin_floor_bytes on every one), why: "loop_bytes: ..." in buf.
 * NULL too while no port's XOFF is known. */
const char *cc_tn_policy_fits(const struct cc_tn *t, const struct cc_tn_policy *p, char *buf, size_t len);

/* What is configured now, before the first run and whenever someone else changed it: a switch
 * port's ECN on the tuned priority, a host's DCQCN.  -ENOMEM. */
int cc_tn_track_port(struct cc_tn *t, const char *node, const char *port, const struct cc_tn_ecn *e);
int cc_tn_track_host(struct cc_tn *t, const char *host, const struct cc_tn_dcqcn *d);
/* A tracked port's own PFC XOFF threshold on the tuned priority, as its switch reports it (0:
 * not lossless there, or not reported): Kmax is kept a control loop below it, and a port above
 * is listed outside the policy; a port without one goes by cc_tn_input's xoff_bytes.
 * -ENOENT: the port is not tracked. */
int cc_tn_track_xoff(struct cc_tn *t, const char *node, const char *port, uint64_t xoff_bytes);

struct cc_tn_input {
	const struct cc_snap *snap; /* with the tuner's fields (speed, marks, port counters) */
	unsigned prio;		    /* the priority tuned (a lossless one) */
	uint64_t xoff_bytes;	    /* the switches' PFC XOFF threshold, effective (0: unknown) */
	double probe_p99_us;	    /* the pingmesh's p99 over the interval, < 0: none */
	bool hold_switch;	    /* no new step of a switch class (prio is not the lowest
				     * lossless priority any more: steps under way finish or roll
				     * back, and an operator's rollback lets the caller move) */
	const char *fault;	    /* a fault on prio the PFC detector names now, which no
				     * congestion control cures (a deadlock, a pause storm, a slow
				     * receiver: cc_dl_fault, "slow_receiver h24"), NULL: none.  No
				     * harder step starts meanwhile: the pauses and deep queues it
				     * causes are not congestion control's to fix, and harder
				     * marking for them only slows every other flow.  (Without one,
				     * a host pausing its switch port may be read as one: the
				     * policy's host_pause_hold.) */
};

/* One interval: updates the signals and the step in progress; returns how many proposals it
 * made (cc_tn_pending gives those to act on), or -ENOMEM. */
int cc_tn_run(struct cc_tn *t, const struct cc_tn_input *in);
/* Proposals to apply now (approved or not needing approval), oldest first, and those waiting
 * for an operator; borrowed until the next call into the tuner. */
struct cc_tn_proposal **cc_tn_pending(struct cc_tn *t, size_t *n);
struct cc_tn_proposal *cc_tn_find(struct cc_tn *t, uint64_t id);
/* The proposals made after id `after` that the tuner still keeps (its last 1,024), oldest first:
 * those to act on and those done when made (a step's completion, with no change); borrowed until
 * the next call into the tuner. */
struct cc_tn_proposal **cc_tn_made_since(struct cc_tn *t, uint64_t after, size_t *n);
/* An operator's decision on a waiting proposal: -ENOENT unknown, -EALREADY not waiting; -ESTALE
 * a canary withdrawn instead of approved (rejected, its error says why: one of its members was
 * set since it was made, or its value would now break an invariant on one — an XOFF threshold
 * lowered, the policy narrowed). */
int cc_tn_decide(struct cc_tn *t, uint64_t id, bool apply);
/* Whether an approved proposal may be sent now: a canary is checked again as cc_tn_decide does
 * (the caller sends it after the decision that approved it, a policy or a member may have
 * changed since): -ESTALE withdrawn; -ENOENT unknown, -EALREADY not approved. */
int cc_tn_sendable(struct cc_tn *t, uint64_t id);
/* How applying a proposal went. */
enum cc_tn_outcome {
	CC_TN_OUT_APPLIED,  /* every change applied and read back */
	CC_TN_OUT_FAILED,   /* a change failed or timed out: any of them may have been applied */
	CC_TN_OUT_NOT_SENT, /* none reached the fabric (the change set could not be stored) */
};
/* How applying went: a canary or rollout not applied is rolled back (on the members it may
 * have changed, and those of its step before it), a failed rollback is tried again (the
 * caller reports the members' values meanwhile), an operator's rollback of a completed step
 * that failed leaves the step to undo again. */
int cc_tn_applied(struct cc_tn *t, uint64_t id, enum cc_tn_outcome how);
/* A step chosen by someone else (an operator, a test of the rollback): one knob of one class
 * to a value, through the same canary and judgement.  -EINVAL with *why when it breaks an
 * invariant or the policy's range (or is not whole where the knob takes whole numbers: all but
 * pmax), -EBUSY when a step of that class is in progress (or, for a host class, new host
 * classes wait to come in force).  It goes out in any mode, off too (the simulator's
 * --force-step with --cc-mode off: that step alone). */
int cc_tn_force(struct cc_tn *t, enum cc_tn_class cls, enum cc_tn_knob knob, double value, const char **why);
/* Undo every step still rolled out since the start, newest first, as rollback proposals; a
 * canary waiting for an operator is rejected.  -EBUSY while a step is applied in part (it
 * finishes or rolls back by itself). */
int cc_tn_rollback_all(struct cc_tn *t);
/* The caller has not sent approved proposal id (nothing of it can be out): turning the tuner
 * off then rejects a canary without a rollback of its members (before, a rollback of changes
 * from a value to the same went out).  -ENOENT, or -EALREADY when it is not approved. */
int cc_tn_not_sent(struct cc_tn *t, uint64_t id);

/* What must outlive the process, for cc_tn_state_load() in the next one: the id counters, the
 * last 1,000 completed steps not undone with the members they changed (for
 * cc_tn_rollback_all), the steps under way (applied in part) with the members they touched,
 * and the moves held back (tabu, no softening) with the intervals left, on a clock of tens of
 * intervals shared by all (up to 19 more: the state changes once in ten intervals for them) (a
 * new reference). */
json_t *cc_tn_state_json(const struct cc_tn *t);
/* Takes a saved state back, after the members are tracked and before the first run: ids go on
 * from the saved ones, completed steps can be rolled back, the holds go on (at most as long
 * as the policy holds a move now; those of classes gone, or unreadable, are dropped: a hold
 * only delays a move), and each step that was under way becomes its class's step in rollback,
 * an approved proposal for the members still at its new value that the policy lets go back
 * (whatever the mode: half a step is no setting anyone chose).  Returns how many rollback
 * proposals, with err empty or saying how many holds were dropped (for the log); -EINVAL with
 * err (nothing taken) when the document is malformed, -EBUSY when a step is in progress,
 * -ENOMEM. */
int cc_tn_state_load(struct cc_tn *t, json_t *doc, char *err, size_t len);

/* Ids from here on at least these (a caller that knows of proposals and steps the saved state
 * does not). */
void cc_tn_ids_at_least(struct cc_tn *t, uint64_t next_id, uint64_t next_step);

/* The tuner's state as JSON: policy, step in progress, the signals of the last interval and
 * the class settings (a new reference). */
json_t *cc_tn_json(const struct cc_tn *t);
#define CC_TN_LISTED 64 /* changes listed in a proposal's JSON (nchanges counts them all) */
json_t *cc_tn_proposal_json(const struct cc_tn_proposal *p);
/* The class's setting as the tuner sees it (the majority of its members). */
void cc_tn_class_ecn(const struct cc_tn *t, enum cc_tn_class c, struct cc_tn_ecn *ret);
void cc_tn_class_dcqcn(const struct cc_tn *t, enum cc_tn_class c, struct cc_tn_dcqcn *ret);
uint64_t cc_tn_steps(const struct cc_tn *t, uint64_t *rolled_back);
/* Why no harder step starts now (a fault: GET /api/v1/cc's harder_held_for), NULL when
 * nothing holds them or the tuner is off. */
const char *cc_tn_harder_held(const struct cc_tn *t);
/* Whether the switch queues tuned hold something of the tuner's: a step of a switch class under
 * way or waiting for an operator, one completed and not undone, or its undo still to go out.
 * The caller keeps to the priority of those queues meanwhile (the undos belong there). */
bool cc_tn_queues_changed(const struct cc_tn *t);

#endif
