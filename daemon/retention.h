/* Retention: old raw samples, rollups and pingmesh results are deleted, each after its own time
 * (store.retention, store.retention_1m, store.retention_1h, store.probe_retention).  A scheduler pass (daemon/sched.h) that queues the
 * deletion as a store job, so the pass never waits for the database. */
#ifndef ROCEFAB_RETENTION_H
#define ROCEFAB_RETENTION_H

#include <stdint.h>

#include "daemon/store.h"

struct retention {
	struct store *store;
	int64_t samples_ns; /* raw samples older than this are deleted */
	int64_t minutes_ns; /* per-minute rollups (daemon/rollup.h) older than this */
	int64_t hours_ns;   /* per-hour rollups */
	int64_t probes_ns;  /* probe results older than this are deleted */
};

/* The pass; ctx is a struct retention.  -EAGAIN when the store is busy (the next pass
 * deletes what this one did not). */
int retention_prune(void *ctx, int64_t now);

#endif
