/* The PFC deadlock and pause-storm detector of rocefabd: the fast PFC lane, the pass that runs
 * cc/deadlock.h on it, and what the findings become.
 *
 * Agents post a compact PFC report every agent.pfc_interval (POST /api/v1/agents/{id}/pfc,
 * schemas/pfc-report.schema.json); detector_put() keeps the last two readings of every port in
 * memory (nothing is stored: the 1 s series are the full reports').  Every detector.interval
 * the pass builds the snapshot (cc/snap.h) from them: deltas between each port's last two
 * readings (normalized to the snapshot's interval), gauges as last read, the links of the
 * topology (the neighbours the full reports name) and each port's PFC priorities as last
 * reported; then cc_dl_run().  Findings of the alarm classes become alerts (kinds deadlock,
 * pause_storm, slow_receiver, persistent, restore_failed) with their evidence as details;
 * the changes the detector proposes go through the audited change path (actor "detector",
 * the finding as the reason) in auto mode, or when an operator asks (POST
 * /api/v1/alerts/{id}/mitigate) in advise mode; their outcomes come back from the change log.
 *
 * Thread safety: two locks — one for the lane (the API threads put reports into it) and one
 * for the analysis (the scheduler's thread runs the pass; an operator's mitigation and the
 * status read it), so that reports are never held up by an analysis. */
#ifndef ROCEFAB_DETECTOR_H
#define ROCEFAB_DETECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "cc/deadlock.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/registry.h"

struct detector_conf {
	enum cc_dl_mode deadlock_mode, storm_mode;
	int64_t restore_ns;
};

extern const struct detector_conf detector_defaults;

/* {"deadlock_mode", "storm_mode", "restore_ms"} */
json_t *detector_conf_json(const struct detector_conf *c);
/* Applies a change (any of the fields; unknown ones refused, all or nothing): -EINVAL with e
 * naming the field. */
int detector_conf_apply(struct detector_conf *c, json_t *changes, struct rf_err *e);

struct detector_opts {
	int64_t interval_ns;  /* of the pass (detector.interval) */
	int64_t deadline_ns;  /* of its changes (changes.deadline) */
	struct detector_conf conf; /* unless the database holds one (PUT /api/v1/detector/config) */
};

struct detector;

int detector_new(struct store *s, const struct reg *reg, const struct detector_opts *o, struct detector **ret);
void detector_free(struct detector *d);

/* A parsed fast PFC report of an agent (report_parse_pfc): the readings of its ports are kept
 * (an older or repeated reading of a port is ignored; one timed more than a minute ahead of
 * rocefabd's clock is refused).  0, -ENOMEM, or -ENOSPC when the lane holds its most ports (in
 * all, or of this agent) and the report names new ones.  *ret_refused: readings left out. */
int detector_put(struct detector *d, const struct report *rep, size_t body_bytes, unsigned *ret_refused);

/* The scheduler pass (ctx: the detector). */
int detector_run(void *ctx, int64_t now);

/* Every snapshot the pass builds goes to fn too (the congestion-control tuner sums them over
 * its own interval), on the scheduler's thread, under no lock of the detector's.  Set it
 * before the first pass. */
typedef void (*detector_snap_fn)(void *ctx, const struct cc_snap *s);
void detector_set_listener(struct detector *d, detector_snap_fn fn, void *ctx);

/* The configuration (as stored, or the options'), and a change of it by actor for reason (NULL:
 * none given): saved in the database with a row of the settings log, in force at the next
 * pass. */
json_t *detector_config(struct detector *d);
int detector_set_config(struct detector *d, json_t *changes, const char *actor, const char *reason,
			struct rf_err *e);

/* Mitigates the finding of an active alert of the detector's (advise mode), as asked by actor
 * for reason (NULL: none given; after the finding's in the change's reason): the change is
 * queued like in auto mode.  *ret: {"alert", "action": {...}, "change": id}.  -ENOENT
 * (NO_SUCH_ALERT, NOT_ACTIVE), -EINVAL (NO_ACTION: its class has none), -EALREADY
 * (MITIGATED; CHANGED_MEANWHILE: the port's PFC changed while it was made, three times),
 * -EPERM (MITIGATION_OFF). */
int detector_mitigate(struct detector *d, int64_t alert, const char *actor, const char *reason, json_t **ret,
		      struct rf_err *e);

/* Status: the configuration, the lane's figures, the last run's findings and the holds in force
 * (a new reference). */
json_t *detector_status(struct detector *d);
/* The last snapshot as cc_snap_json() renders it (NULL before the first pass). */
json_t *detector_snapshot(struct detector *d);
/* Every interval analysed over the last 10 to 20 s, summed (cc_snap_merge()) and rendered as
 * cc_snap_json() does, with "intervals": how many (a rate or share of time taken from one
 * interval misses what comes and goes between them); NULL when none (or short of memory). */
json_t *detector_recent(struct detector *d);
/* A fault of the last run on priority prio that congestion control cannot cure (a deadlock, a
 * pause storm, a slow receiver): true and its words in buf (cc_dl_fault: "slow_receiver h24",
 * "deadlock at leaf1:spine0"), false when none. */
bool detector_fault(struct detector *d, unsigned prio, char *buf, size_t len);

/* What explains a pingmesh finding (kind "host", "tor", "link", "fabric"; its subject) over
 * its window (window_ns back from now): a pause storm whose culprit is that host (or the host
 * is among its victims, or under the culprit's ToR), or whose culprit sits under that ToR, or
 * whose victims include that link; any pause storm for losses spread over the fabric; a slow
 * receiver that is that host, or under that ToR with it, or that ToR, or its link to it, and
 * losses spread over the fabric; any deadlock not broken yet (a frozen cycle stops what
 * crosses it and what waits behind it).  Active findings first, then those over within the
 * window (the window's probes still hold the losses of a storm that just ended).  Writes the
 * finding's alert subject into buf, its class (a static string) into *ret_class, and returns
 * true. */
bool detector_explains(struct detector *d, const char *kind, const char *subject, int64_t window_ns, char *buf,
		       size_t len, const char **ret_class);

/* Warnings for a PFC change of a port (an agent's; a host port is DEVICE:PORT) that puts one
 * of its priorities the detector holds out of lossless mode back into it (enable: the
 * priorities the change makes lossless): [{"code": "DETECTOR_HOLD", "detail"}], or NULL when
 * none.  A new reference. */
json_t *detector_hold_warnings(struct detector *d, const char *agent, bool is_switch, const char *device,
				const char *port, int64_t enable);

void detector_render_metrics(struct detector *d, struct buf *out);

#endif
