/* Retention and the disk budget: old raw samples, rollups and pingmesh results are deleted,
 * each after its own time (store.retention, store.retention_1m, store.retention_1h,
 * store.probe_retention); and with store.max_bytes, when the database's pages in use exceed
 * it, the retentions in force shorten in proportion (to 90 % of budget / use, at least 20 %
 * a pass): the raw samples' first (down to RETENTION_RAW_MIN_NS), then the minutes' (down to
 * an hour), then the hours' (a day); they lengthen again, 10 % a pass up to the configured
 * ones, once the use is below 90 % of the budget.  Deleting is done in steps (RETENTION_STEP_ROWS
 * raw rows, a twentieth of that of rollups, which are larger), each its own store job, so that
 * reports keep being stored between them (a pass whose steps are not done queues the next step
 * at once).
 *
 * A pass (daemon/sched.h) queues the job, so it never waits for the database.  The status is
 * read by /api/v1/health and /metrics from other threads. */
#ifndef ROCEFAB_RETENTION_H
#define ROCEFAB_RETENTION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/store.h"

#define RETENTION_RAW_MIN_NS (120 * (int64_t)1000000000)
#define RETENTION_STEP_ROWS 20000

enum retention_data { RET_RAW, RET_1M, RET_1H, RET_PROBES, RET_N };

struct retention_status {
	uint64_t used_bytes;  /* pages in use at the last pass (the file keeps its largest size:
			       * freed pages are reused); 0: not measured yet (the first
			       * seconds after the start) */
	uint64_t max_bytes;   /* store.max_bytes; 0: none */
	int64_t in_force_ns[RET_N];   /* the retentions applied */
	int64_t configured_ns[RET_N]; /* as configured */
	uint64_t pruned[RET_N];	      /* rows deleted since the start */
	bool shortened;		      /* the budget holds a retention below its configured one */
	bool unmet;		      /* over the budget with every retention at its shortest */
};

struct retention {
	struct store *store;
	int64_t samples_ns; /* raw samples older than this are deleted */
	int64_t minutes_ns; /* per-minute rollups (daemon/rollup.h) older than this */
	int64_t hours_ns;   /* per-hour rollups */
	int64_t probes_ns;  /* probe results older than this are deleted */
	uint64_t max_bytes; /* store.max_bytes; 0: no budget */

	/* the pass's state; retention_init() before the first pass */
	pthread_mutex_t lock;
	struct retention_status st;
	bool cut[RET_N]; /* the budget shortened it */
	bool busy;	 /* a job (or a chain of steps) is queued */
	bool stopping;	 /* no more jobs (rocefabd stops) */
};

void retention_init(struct retention *rt);
void retention_fini(struct retention *rt);
/* The configured retentions changed (SIGHUP): in force from the next pass. */
void retention_configure(struct retention *rt, int64_t samples_ns, int64_t minutes_ns,
			 int64_t hours_ns, int64_t probes_ns);
void retention_get_status(struct retention *rt, struct retention_status *ret);
/* No job queued from now on (before the store is flushed and closed). */
void retention_stop(struct retention *rt);

/* The pass; ctx is a struct retention.  -EAGAIN when the store is busy (the next pass
 * deletes what this one did not). */
int retention_prune(void *ctx, int64_t now);

#endif
