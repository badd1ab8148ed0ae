/* Configuration changes: the audit log, the agents' command queue and the device
 * configuration as last reported.
 *
 * A change is created (validated beforehand, lib/validate.h) in state "pending" with who,
 * when, why, the requested values and the object's values at that moment (old).  The answer to
 * the target agent's next report carries it as a command (state "sent"); the agent applies it
 * read-modify-write and reports the outcome: "applied" (with the values read back), "failed"
 * (with the device's error) or "timed_out" (it arrived after its deadline).  A change nobody
 * answered for a grace period after its deadline is marked "timed_out" by rocefabd.  Until a
 * change is settled it is sent again with every answer; agents apply an id only once.  A change
 * whose validation counted changes still out (after_ids, change_set_add) is sent only once
 * they are applied, and fails unsent (DEPENDS_ON_FAILED) when one of them does not apply. */
#ifndef ROCEFAB_CHANGES_H
#define ROCEFAB_CHANGES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/err.h"

#define CHANGES_GRACE_NS (10 * INT64_C(1000000000)) /* after the deadline, before timing out */

enum change_kind { CHANGE_DCQCN, CHANGE_ECN, CHANGE_PFC };
const char *change_kind_name(enum change_kind k); /* "dcqcn", "ecn", "pfc" */
int change_kind_parse(const char *s, enum change_kind *ret);

/* An ingest hook (daemon/ingest.h), on the writer thread inside a report's transaction: stores
 * the report's configuration, records its command outcomes, times out expired changes of the
 * agent and appends the commands for it to commands.  ctx is unused. */
int changes_on_report(void *ctx, struct store *s, const struct report *rep, int64_t now,
		      json_t *commands);

/* A scheduler pass (daemon/sched.h; ctx: the struct store): queues the time-out of every change
 * past its deadline and grace (for agents gone silent).  One sent is in doubt (it may have been
 * applied) until a report its agent made after the deadline settles it (changes_on_report). */
int changes_sweep(void *ctx, int64_t now);

/* An operator's word on a change in doubt whose agent cannot say (gone for good, its outcome
 * lost): applied or not, recorded with who, when and why (reason NULL: none).  Either way the
 * changes that counted it fail (DEPENDS_ON_FAILED): a word is no read-back.  A store job;
 * waits for its commit.  -ENOENT (UNKNOWN_CHANGE), -EALREADY (NOT_IN_DOUBT). */
int changes_settle(struct store *s, int64_t id, bool applied, const char *actor, const char *reason,
		   struct rf_err *e);

/* --- reading ----------------------------------------------------------------------------- */

struct changes_filter {
	const char *agent, *kind, *state; /* NULL: any */
	int64_t batch;			  /* 0: any */
	const char *device, *port;
	int queue; /* -2: any */
	bool in_doubt; /* only the changes in doubt */
	unsigned limit;
};
int changes_list(struct store_reader *rd, const struct changes_filter *f, json_t **ret,
		 struct rf_err *e);
int changes_get(struct store_reader *rd, int64_t id, json_t **ret, struct rf_err *e);
/* Where a change batch stands: *open while one of its changes is pending or sent, else *failed
 * when one failed or timed out (err: the first one's message); neither when every change is
 * applied.  0 or -errno (e set). */
int changes_batch_state(struct store_reader *rd, int64_t batch, bool *open, bool *failed, char *err, size_t len,
			struct rf_err *e);
/* The newest batch whose reason is exactly `reason` (*batch 0: none).  A scan of the table: for
 * finding, after a crash, a batch stored just before its id could be saved elsewhere. */
int changes_batch_of_reason(struct store_reader *rd, const char *reason, int64_t *batch, struct rf_err *e);

/* The configuration entries of an agent as last reported: [{device, port[, queue], values,
 * updated}].  device/port NULL: any; queue -2: any. */
int configs_get(struct store_reader *rd, const char *agent, enum change_kind kind,
		const char *device, const char *port, int queue, json_t **ret, struct rf_err *e);

/* --- the targets of a change --------------------------------------------------------------
 *
 * A change request names one object (GET/PUT /api/v1/switches/S/ports/P/pfc) or a selection
 * by glob patterns (POST /api/v1/changes; the tuner next).  Either way its targets are found
 * with the configuration their agents last reported, and the requested values are validated
 * against every one of them (lib/validate.h) before anything is stored: all or nothing. */

#define CHANGES_MAX_TARGETS 10000
#define CHANGES_REJECTIONS_MAX 20 /* rejections detailed in a change set */

/* One object a change applies to, with what its validation needs. */
struct change_target {
	char agent[65], device[65], port[65];
	int queue;	   /* ECN; -1 otherwise */
	json_t *current;   /* its values as last reported (owned; stored as the change's "old") */
	json_t *expect;	   /* and once the changes still out on it are applied (owned) */
	int64_t line_mbps; /* DCQCN: the port's speed (0 unknown) */
	bool pmax_percent; /* ECN: the switch takes Pmax in whole percent (SONiC's WRED profile) */
	json_t *port_pfc;  /* ECN: the PFC settings of the queue's port (owned, or NULL) */
	json_t *port_ecn;  /* PFC of a switch port: the ECN settings of its queues (owned) */
	json_t *pfc_now, *ecn_now; /* the same as reported (owned, or NULL) */
	json_t *after;	   /* the ids of the changes still out that expect and port_* count (or NULL) */
	int64_t seen;	   /* the newest change when it was read */
	int64_t clash;	   /* at commit: a change its check counts stored since (0: none) */
	char clash_by[80]; /* its actor */
	bool clash_gone;   /* clash is a change it counted, settled since without being applied
			    * by its agent (its report, or an operator's word): no longer out */
};

/* The targets of one request, each validated against the requested values. */
struct change_set {
	enum change_kind kind;
	bool on_switch;
	json_t *params; /* the requested values (a copy) */
	struct change_target *t;
	size_t n, cap;
	size_t matched;	    /* objects a selection matched (more than n when over its limit) */
	int64_t seen;	    /* the newest change when the first target was read (-1: not yet) */
	/* a change to a target's PFC stored after it was read refuses the set at commit
	 * (CHANGED_MEANWHILE) instead of having the target checked again (as other changes its
	 * check counts still do): for a caller that made the values from the PFC it read (the
	 * detector's priorities, a whole mask) */
	bool refuse_changed;
	size_t nbad;	    /* targets that reject the values */
	struct rf_err first; /* why the first of them did */
	json_t *rejections; /* the first CHANGES_REJECTIONS_MAX: [{target, code, detail, pointer}] */
};

/* One object's values as they will be once the changes still on their way to it are applied
 * (what a change to it is validated against; NULL when it reported none), or -errno with e. */
int changes_expected(struct store_reader *rd, const char *agent, enum change_kind kind, const char *device,
		     const char *port, int queue, json_t **ret, struct rf_err *e);

/* A set of changes of kind to hosts or switches, setting params (copied). */
int change_set_init(struct change_set *cs, enum change_kind kind, bool on_switch, json_t *params);
void change_set_fini(struct change_set *cs);
/* Adds one target from a configuration entry ({device, port[, queue], values}, as
 * configs_get() gives) of agent, and validates the values against it (a rejection is counted
 * in the set, not returned).  -E2BIG (TOO_MANY_TARGETS) beyond CHANGES_MAX_TARGETS.
 *
 * Validated against what the object will hold when the change reaches it: its values as
 * reported with the changes still out on it laid over them in order (pending ones before their
 * deadline, sent ones until their outcome, sent ones timed out while their agent was silent
 * until it reports again) — and the same of its port's PFC (ECN; a priority lossless as
 * reported counts as lossless) or its queues' ECN (PFC of a switch port), all in one read
 * transaction.  Two changes made back to back therefore check against each other:
 * Kmax lowered just after Kmin was is accepted, and Kmax lowered under a Kmin raised just
 * before is refused, though neither has been read back yet.  A target the values pass only
 * with those changes records them (after): the change waits for them (changes_on_report).
 * Each target is read in a read transaction of its own: not from inside one of the caller's. */
int change_set_add(struct store_reader *rd, struct change_set *cs, const char *agent, json_t *entry,
		   struct rf_err *e);

/* A selection by glob patterns (fnmatch); NULL matches anything.  One that names nothing
 * (every object of the kind on every switch or host) must say all; and however it is made, a
 * selection changes at most max_targets objects, so that a typo does not rewrite the fabric. */
struct change_select {
	const char *node;   /* agent ids */
	const char *device;
	const char *port;   /* a host's port matches as PORT or DEVICE:PORT */
	int queue;	    /* ECN queue; -2 any */
	bool all;	    /* the caller means every object (no pattern, no queue) */
	size_t max_targets; /* 0: CHANGES_MAX_TARGETS; more than that counts as that */
};
/* Adds every object of the set's kind and role whose agent reported it and that the selection
 * matches.  -EINVAL (EMPTY_SELECTION) for a selection that names nothing without all;
 * -ENOENT (NO_TARGETS) when nothing matches; -ERANGE (TOO_MANY_TARGETS) when more than
 * max_targets do (cs->matched says how many; the set then holds only the first max_targets);
 * -EINVAL (SCHEMA_VIOLATION) for DCQCN on switches or ECN on hosts.  e's pointer is /select. */
int changes_select(struct store_reader *rd, struct change_set *cs, const struct change_select *sel,
		   struct rf_err *e);
/* One object by name: the configuration entries of kind that agent (a "host" or "switch",
 * by role) reported, optionally of one device, port and queue (-2: any), in *ret (a new
 * array).  -ENOENT with UNKNOWN_HOST, UNKNOWN_SWITCH, UNKNOWN_PORT, UNKNOWN_QUEUE or
 * NO_CONFIGURATION. */
int changes_lookup(struct store_reader *rd, const char *role, enum change_kind kind, const char *agent,
		   const char *device, const char *port, int queue, json_t **ret, struct rf_err *e);
/* 0 when every target accepts the values; else -EINVAL with e: the first rejection as it is,
 * or (summary) "N of M targets reject the change" with its code and pointer. */
int change_set_check(const struct change_set *cs, bool summary, struct rf_err *e);
/* Stores a change per target (the values normalized, each target's current values as "old")
 * in one transaction, all or none, and waits for the commit: 0 and the batch id (the first
 * change's id), or a negative errno with e set: -EINVAL for a set with no target or a
 * rejection; -EAGAIN (QUEUE_FULL) or another (STORE_ERROR) when the store did not take it.
 * A target to which another change its check counts was stored after it was read (two
 * changes checked side by side could break together what neither breaks alone: Kmax raised
 * above an XOFF lowered at the same moment) is read and checked again as the set is stored,
 * where nothing else can be, and its rejection then counted in the set (-EINVAL, as
 * change_set_check(summary) says; cs->rejections).  More than CHANGES_RECHECK_MAX such targets
 * are read again on a reader and the set sent again, CHANGES_CLASH_TRIES times in all before
 * -EALREADY (CHANGED_MEANWHILE, nothing stored).  With refuse_changed a change to a target's
 * PFC refuses the set at once: -EALREADY. */
int change_set_commit(struct store *s, struct change_set *cs, const char *actor, const char *reason,
		      int64_t deadline_ns, int64_t *ret_batch, struct rf_err *e);
/* How many times a set is sent to be stored (change_set_commit), and the detector makes its
 * own again, before a CHANGED_MEANWHILE stands: each try reads what the one before clashed
 * with. */
#define CHANGES_CLASH_TRIES 3
/* Targets changed meanwhile read again on the writer at most (each is a few queries) */
#define CHANGES_RECHECK_MAX 64

/* A seam for tests of what waits for a CHANGED_MEANWHILE (tests/unit/test_dtuner.c): called
 * before each try of change_set_commit to store a set (another change stored there clashes
 * with it), and the most such targets read again on the writer.  rocefabd leaves it as it is:
 * no call, CHANGES_RECHECK_MAX.  Process-wide: a test sets it only while no set is being stored
 * (the writer reads it in a job, after the queue's lock that ordered the test's write), and puts
 * it back right after. */
struct changes_seam {
	void (*before_try)(void *arg);
	void *arg;
	size_t recheck_max;
};
extern struct changes_seam changes_seam;

#endif
