/* The congestion-control tuner of rocefabd: cc/tuner.h on what the agents report.
 *
 * Every snapshot the PFC detector's pass builds from the fast lane (the agents' 200 ms
 * readings, which carry the tuner's counters too) is added to the tuner's running sum; every
 * cc.interval the sum is one decision interval: the configuration the agents last reported
 * (ECN of every switch queue of the lossless priority, DCQCN of every host) is what the tuner
 * believes is set, cc_tn_run() proposes, and the proposals to apply go through the audited
 * change path (actor "tuner", or "tuner (asked by TOKEN)" for an operator's apply), one change
 * set per proposal; their outcomes come back from the change log.  In advise mode a proposal
 * waits for POST /api/v1/cc/proposals/{id}/apply or /reject; its rollout and any rollback
 * follow without asking.  The policy is saved in the database (meta key "cc_policy").  The
 * pingmesh's tail latency of each interval (the median pair's p99) is a safety signal.
 *
 * Thread safety: one lock; the change sets are committed outside it. */
#ifndef ROCEFAB_DAEMON_TUNER_H
#define ROCEFAB_DAEMON_TUNER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "cc/snap.h"
#include "cc/tuner.h"
#include "daemon/store.h"
#include "lib/buf.h"
#include "lib/err.h"

struct tuner_opts {
	int64_t interval_ns; /* the decision interval (cc.interval) */
	int64_t deadline_ns; /* of its changes (changes.deadline) */
	enum cc_tn_mode mode; /* unless the database holds a policy (cc.mode) */
};

struct tuner;

int tuner_new(struct store *s, const struct tuner_opts *o, struct tuner **ret);
void tuner_free(struct tuner *t);
/* Publishes each proposal's news (made, decided, applied, rolled back) as a "proposal" event
 * {"id", "state"}.  Set before the first pass. */
struct events;
void tuner_set_events(struct tuner *t, struct events *ev);

/* The pingmesh's tail latency over a decision interval: 0 and the p99 in microseconds, or < 0
 * when no probe came (daemon/pingmesh.h pingmesh_take_tail).  Called once per decision, under
 * the tuner's lock. */
typedef int (*tuner_probe_fn)(void *ctx, double *p99_us);
void tuner_set_probe_source(struct tuner *t, tuner_probe_fn fn, void *ctx);

/* A fault the PFC detector names now on priority prio, the one tuned, that no congestion
 * control cures (a deadlock, a pause storm, a slow receiver): true and its words in buf
 * ("slow_receiver h24"), false when none.  Called once per decision, under the tuner's lock:
 * no harder step starts while one is named (cc_tn_input.fault). */
typedef bool (*tuner_fault_fn)(void *ctx, unsigned prio, char *buf, size_t len);
void tuner_set_fault_source(struct tuner *t, tuner_fault_fn fn, void *ctx);

/* A detector snapshot (detector_set_listener; ctx: the tuner). */
void tuner_observe(void *ctx, const struct cc_snap *s);
/* The scheduler pass (ctx: the tuner). */
int tuner_run(void *ctx, int64_t now);

/* The policy in force, and a change of it by actor for reason (NULL: none given) (fields as GET
 * gives them; unknown ones or bad values refused with problem codes UNKNOWN_FIELD / BAD_VALUE,
 * all or nothing): saved with a row of the settings log, in force at once. */
json_t *tuner_policy(struct tuner *t);
int tuner_set_policy(struct tuner *t, json_t *changes, const char *actor, const char *reason, struct rf_err *e);

/* Proposals: those waiting or being applied (all: the recent ones too), newest first. */
json_t *tuner_proposals(struct tuner *t, bool all);
/* An operator's decision on a waiting proposal, for reason (NULL: none given; the record's
 * decision_reason, and its change set's reason after the tuner's): *ret is the proposal.
 * -ENOENT (NO_SUCH_PROPOSAL), -EALREADY (NOT_WAITING), -ESTALE (WITHDRAWN: a canary that no
 * longer fits what it was made for, rejected instead; the error says why). */
int tuner_decide(struct tuner *t, uint64_t id, bool apply, const char *actor, const char *reason, json_t **ret,
		 struct rf_err *e);
/* Every step's proposals with who decided and how they went, oldest first (a new reference). */
json_t *tuner_history(struct tuner *t);
/* Undoes every step the tuner completed, newest first (rollback proposals, applied at the
 * next pass whatever the mode; reason as for tuner_decide).  -EBUSY (STEP_IN_PROGRESS) while a
 * step is under way. */
int tuner_rollback(struct tuner *t, const char *actor, const char *reason, json_t **ret, struct rf_err *e);
json_t *tuner_status(struct tuner *t);
void tuner_render_metrics(struct tuner *t, struct buf *out);

#endif
