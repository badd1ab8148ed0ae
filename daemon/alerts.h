/* Alerts: the faults rocefabd's controllers name, for as long as they last.
 *
 * This module is the one owner of the alerts table.  A source (the pingmesh localization now,
 * the PFC detector next) owns a set of alert kinds and, every pass, tells what it finds:
 * alerts_sync() raises an alert for a finding that is new, updates one that goes on (last
 * seen, evidence) and clears those of the source's kinds that are over; an alert once cleared
 * stays in the history.  Writes go through the store's writer thread (a job, so a pass never
 * waits for the database); reads run on a reader connection.
 *
 * An alert may carry details (a JSON object: the PFC detector's ports in cycle order, victims,
 * suggested action; a cause it is attributed to) and be acknowledged by an operator (POST
 * /api/v1/alerts/{id}/ack): an acknowledged alert stays active while its finding lasts. */
#ifndef ROCEFAB_ALERTS_H
#define ROCEFAB_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/store.h"
#include "lib/err.h"

/* At most this many alerts are listed (newest first). */
#define ALERTS_LIST_MAX 200

struct alert_finding {
	const char *kind;     /* "link", "host", ... one of the source's kinds */
	const char *subject;  /* what it names: "leaf0:h3", "h7" */
	const char *evidence; /* one line, for operators */
	const char *details;  /* a JSON object as text, or NULL */
	/* another source's alert explains it (a pingmesh finding a PFC finding explains): one
	 * fault, one alert, none raised for it.  One raised before goes on (ALERT_KEEP: a fault
	 * found before may be one of its own), or, the same fault (ALERT_FOLD: the culprit host
	 * itself), is cleared, saying so (this evidence and details) */
	enum alert_how { ALERT_RAISE, ALERT_KEEP, ALERT_FOLD } how;
	int64_t last_ns; /* when it was last seen, by rocefabd's clock (0: now) */
};

/* "alerts": the table name under which raised, cleared and acknowledged alerts are reported
 * to store_set_watch()'s function (their refreshes are not). */
extern const char ALERTS_TABLE[];

/* Queues the sync of one source's alerts at time now (ns): of the kinds (NULL-terminated),
 * every active alert that is not one of the n findings is cleared, and each finding is raised
 * or updated (as its how says).  source names the source in the log ("pingmesh").  Copies
 * what it needs.
 * 0, or -EAGAIN (the store's queue is full: the next pass tries again), -ENOMEM, -EINVAL. */
int alerts_sync(struct store *s, const char *source, const char *const *kinds,
		const struct alert_finding *f, size_t n, int64_t now);

/* The history, newest first: alerts in state "active" or "cleared" (NULL: both), at most
 * ALERTS_LIST_MAX, as {"items": [...], "count": N}.  -EINVAL (BAD_PARAMETER "state") for
 * another state. */
int alerts_list(struct store_reader *rd, const char *state, json_t **ret, struct rf_err *e);

/* One alert as alerts_list() shows it.  -ENOENT (NO_SUCH_ALERT). */
int alerts_get(struct store_reader *rd, int64_t id, json_t **ret, struct rf_err *e);
/* Acknowledges an alert (a store job; waits for its commit): by whom and when; the first
 * acknowledgement stands (the same caller again: 0, nothing changed).  -ENOENT
 * (NO_SUCH_ALERT), -EALREADY (ALREADY_ACKED: by another, said who and when). */
int alerts_ack(struct store *s, int64_t id, const char *actor, int64_t now, struct rf_err *e);
/* An action on an alert's finding: who (an operator's name; "detector" for its own, in auto
 * mode, and for each restoration, once applied), what (op: "lossless_off" or "restore"), the
 * change and why (NULL: no reason given). */
struct alert_action {
	const char *by, *op, *reason;
	int64_t change;
};
/* Records an action on alert id, or (id 0) on the newest alert of kind and subject: a
 * restoration comes after its alert cleared (a store job; waits for its commit).  The alert
 * keeps its last ALERT_MITIGATIONS_MAX.  -ENOENT (NO_SUCH_ALERT). */
#define ALERT_MITIGATIONS_MAX 32
int alerts_mitigated(struct store *s, int64_t id, const char *kind, const char *subject,
		     const struct alert_action *a, int64_t now, struct rf_err *e);

#endif
