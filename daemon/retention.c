/* Retention: see retention.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/retention.h"
#include "lib/log.h"

struct prune_job {
	struct store_job job;
	int64_t before_ns, minutes_before_ns, hours_before_ns, probes_before_ns;
	int changes, rollup_changes, probe_changes;
};

static int prune_apply(struct store_job *sj, struct store *s)
{
	static const char sql[] =
		"DELETE FROM samples WHERE port_id IN (SELECT id FROM ports) AND t_ns < ?";
	struct prune_job *pj = (struct prune_job *)sj;
	sqlite3_stmt *st = store_stmt(s, sql);
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, pj->before_ns);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	pj->changes = sqlite3_changes(store_writer_db(s));
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	/* a bucket goes when it ended before the limit */
	for (int res = 60; res <= 3600; res += 3540) {
		if (!(st = store_stmt(s, "DELETE FROM rollups WHERE res = ?1 AND port_id IN "
					 "(SELECT id FROM ports) AND t_ns < ?2 - ?1 * 1000000000")))
			return -EIO;
		sqlite3_bind_int(st, 1, res);
		sqlite3_bind_int64(st, 2, res == 60 ? pj->minutes_before_ns : pj->hours_before_ns);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		pj->rollup_changes += sqlite3_changes(store_writer_db(s));
		if (rc != SQLITE_DONE)
			return store_errno(rc);
	}
	if (!(st = store_stmt(s, "DELETE FROM probe_results WHERE t_ns < ?")))
		return -EIO;
	sqlite3_bind_int64(st, 1, pj->probes_before_ns);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	pj->probe_changes = sqlite3_changes(store_writer_db(s));
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

static void prune_done(struct store_job *sj, int result)
{
	struct prune_job *pj = (struct prune_job *)sj;

	if (result < 0)
		log_warning("store", "pruning old samples failed: %s", strerror(-result));
	else if (pj->changes || pj->rollup_changes || pj->probe_changes)
		log_debug("store", "pruned %d sample rows, %d rollups and %d probe results", pj->changes,
			  pj->rollup_changes, pj->probe_changes);
	free(pj);
}

int retention_prune(void *ctx, int64_t now)
{
	const struct retention *rt = ctx;
	struct prune_job *pj = calloc(1, sizeof(*pj));
	int r;

	if (!pj)
		return -ENOMEM;
	pj->job.apply = prune_apply;
	pj->job.done = prune_done;
	pj->before_ns = now - rt->samples_ns;
	pj->minutes_before_ns = now - rt->minutes_ns;
	pj->hours_before_ns = now - rt->hours_ns;
	pj->probes_before_ns = now - rt->probes_ns;
	if ((r = store_submit(rt->store, &pj->job)) < 0)
		free(pj);
	return r;
}
