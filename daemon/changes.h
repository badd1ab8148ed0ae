/* Configuration changes: the audit log, the agents' command queue and the device
 * configuration as last reported.
 *
 * A change is created (validated beforehand, daemon/validate.h) in state "pending" with who,
 * when, why, the requested values and the object's values at that moment (old).  The answer to
 * the target agent's next report carries it as a command (state "sent"); the agent applies it
 * read-modify-write and reports the outcome: "applied" (with the values read back), "failed"
 * (with the device's error) or "timed_out" (it arrived after its deadline).  A change nobody
 * answered for a grace period after its deadline is marked "timed_out" by rocefabd.  Until a
 * change is settled it is sent again with every answer; agents apply an id only once. */
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

struct change_spec {
	char agent[65];
	enum change_kind kind;
	char device[65], port[65];
	int queue;      /* ECN; -1 otherwise */
	json_t *params; /* requested values (owned) */
	json_t *old;	/* the object's values when the change was made (owned, may be NULL) */
};

/* On the writer thread, inside a report's transaction: stores the report's configuration,
 * records its command outcomes, times out expired changes of the agent and returns the
 * commands for it (a new array). */
int changes_on_report(struct store *s, const struct report *rep, int64_t now, json_t **ret_commands);

/* Creates changes in one transaction (all or none).  done() runs on the writer thread with
 * the result and the id of the first change (the batch id). */
typedef void (*changes_cb)(void *ctx, int result, int64_t batch);
int changes_submit(struct store *s, struct change_spec *specs, size_t n, const char *actor,
		   const char *reason, int64_t deadline_ns, changes_cb cb, void *ctx);
/* Creates changes and waits for the commit: 0 and *ret_batch, or a negative errno. */
int changes_create(struct store *s, struct change_spec *specs, size_t n, const char *actor,
		   const char *reason, int64_t deadline_ns, int64_t *ret_batch);
void change_specs_free(struct change_spec *specs, size_t n);

/* Queues the time-out of every change past its deadline and grace (for agents gone silent). */
int changes_sweep(struct store *s);

/* --- reading ----------------------------------------------------------------------------- */

struct changes_filter {
	const char *agent, *kind, *state; /* NULL: any */
	int64_t batch;			  /* 0: any */
	const char *device, *port;
	int queue; /* -2: any */
	unsigned limit;
};
int changes_list(struct store_reader *rd, const struct changes_filter *f, json_t **ret,
		 struct rf_err *e);
int changes_get(struct store_reader *rd, int64_t id, json_t **ret, struct rf_err *e);

/* The configuration entries of an agent as last reported: [{device, port[, queue], values,
 * updated}].  device/port NULL: any; queue -2: any. */
int configs_get(struct store_reader *rd, const char *agent, enum change_kind kind,
		const char *device, const char *port, int queue, json_t **ret, struct rf_err *e);

#endif
