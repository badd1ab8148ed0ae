/* The scheduler of rocefabd's periodic passes: the pingmesh localization, the time-out of
 * changes nobody answered, the pruning of old data, and next the PFC detector and the tuner.
 *
 * A pass is an object with its own state (its ctx) and a period; the scheduler runs each one
 * when it is due, one at a time, on the thread that calls sched_run_due() (rocefabd's main
 * thread, between signals).  A pass must not block for long: what it writes goes to the store
 * as a job.  Times are CLOCK_MONOTONIC for when to run; a pass gets the wall-clock time too
 * (what the data is stamped with). */
#ifndef ROCEFAB_SCHED_H
#define ROCEFAB_SCHED_H

#include <stdint.h>

#include "lib/err.h"

struct sched;

struct sched_pass {
	const char *name;  /* for the log: "pingmesh", "retention" */
	int64_t period_ns; /* > 0 */
	int64_t first_ns;  /* delay of the first run after sched_add() (0: at the first call) */
	/* One run at wall-clock time now (ns).  0; -EAGAIN when the store is too busy now (the
	 * pass is skipped, logged at debug only); another negative errno is a failure, logged
	 * once until the pass works again. */
	int (*run)(void *ctx, int64_t now);
	void *ctx;
};

struct sched_stats {
	uint64_t runs, skipped, failures; /* skipped: -EAGAIN */
	int64_t last_ns; /* how long the last run took (wall clock) */
	int last_result;
};

int sched_new(struct sched **ret);
/* Frees the scheduler, not the passes' contexts (their owners free them). */
void sched_free(struct sched *s);
/* Adds a pass at monotonic time mono_now; p is copied.  -EINVAL for a pass without a run or a
 * period, -EEXIST for a name already there. */
int sched_add(struct sched *s, const struct sched_pass *p, int64_t mono_now);
/* Runs every pass due at mono_now (monotonic ns), now being the wall-clock time, in the order
 * they were added; returns the time until the next one is due (ns, >= 0). */
int64_t sched_run_due(struct sched *s, int64_t mono_now, int64_t now);
/* A pass's figures; -ENOENT for an unknown name. */
int sched_get_stats(const struct sched *s, const char *name, struct sched_stats *ret);

#endif
