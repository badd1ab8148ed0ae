/* Retention and the disk budget: see retention.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/retention.h"
#include "lib/log.h"

#define HOUR_NS (3600 * (int64_t)1000000000)

static const char *const names[RET_N] = { "raw samples", "per-minute rollups", "per-hour rollups",
					  "probe results" };
/* how short the budget may make each */
static const int64_t floor_ns[RET_N] = { RETENTION_RAW_MIN_NS, HOUR_NS, 24 * HOUR_NS, 0 };

/* Deletes at most RETENTION_STEP_ROWS rows older than before: the key's column lists (a
 * WITHOUT ROWID table's key, or rowid), the table and the condition. */
static const char *const step_sql[RET_N] = {
	/* raw samples by whole minutes: a minute's rows after its first follow it (daemon/codec.h) */
	"DELETE FROM samples WHERE (port_id, t_ns) IN (SELECT port_id, t_ns FROM samples WHERE "
	"port_id IN (SELECT id FROM ports) AND t_ns < ?1 - ?1 % 60000000000 LIMIT ?2)",
	/* a bucket goes when it ended before the limit, a block (res < 0) when its last did */
	/* (one SELECT each: an OR of the two would not use the index for t_ns) */
	"DELETE FROM rollups WHERE rowid IN (SELECT rowid FROM (SELECT rowid FROM rollups WHERE "
	"res = 60 AND port_id IN (SELECT id FROM ports) AND t_ns < ?1 - 60000000000 LIMIT ?2 / 20) "
	"UNION ALL SELECT rowid FROM (SELECT rowid FROM rollups WHERE res = -60 AND port_id IN "
	"(SELECT id FROM ports) AND t_ns < ?1 - 3600000000000 LIMIT ?2 / 20))",
	"DELETE FROM rollups WHERE rowid IN (SELECT rowid FROM (SELECT rowid FROM rollups WHERE "
	"res = 3600 AND port_id IN (SELECT id FROM ports) AND t_ns < ?1 - 3600000000000 LIMIT ?2 / 20) "
	"UNION ALL SELECT rowid FROM (SELECT rowid FROM rollups WHERE res = -3600 AND port_id IN "
	"(SELECT id FROM ports) AND t_ns < ?1 - 86400000000000 LIMIT ?2 / 20))",
	"DELETE FROM probe_results WHERE (t_ns, src, dst, op, size, label) IN (SELECT t_ns, src, dst, "
	"op, size, label FROM probe_results WHERE t_ns < ?1 LIMIT ?2)",
};

struct prune_job {
	struct store_job job;
	struct retention *rt;
	int64_t now;
	int64_t before_ns[RET_N];
	unsigned changes[RET_N];
	bool more; /* a step deleted all it may: another follows */
	uint64_t used;
};

void retention_init(struct retention *rt)
{
	pthread_mutex_init(&rt->lock, NULL);
	rt->st = (struct retention_status){ .max_bytes = rt->max_bytes };
	retention_configure(rt, rt->samples_ns, rt->minutes_ns, rt->hours_ns, rt->probes_ns);
}

void retention_fini(struct retention *rt)
{
	pthread_mutex_destroy(&rt->lock);
}

void retention_configure(struct retention *rt, int64_t samples_ns, int64_t minutes_ns,
			 int64_t hours_ns, int64_t probes_ns)
{
	const int64_t c[RET_N] = { samples_ns, minutes_ns, hours_ns, probes_ns };

	pthread_mutex_lock(&rt->lock);
	rt->samples_ns = samples_ns;
	rt->minutes_ns = minutes_ns;
	rt->hours_ns = hours_ns;
	rt->probes_ns = probes_ns;
	for (int i = 0; i < RET_N; i++) {
		rt->st.configured_ns[i] = c[i];
		/* what the budget cut stays cut (no longer than configured); the rest is as configured */
		if (!rt->cut[i] || rt->st.in_force_ns[i] >= c[i]) {
			rt->st.in_force_ns[i] = c[i];
			rt->cut[i] = false;
		}
	}
	pthread_mutex_unlock(&rt->lock);
}

void retention_stop(struct retention *rt)
{
	pthread_mutex_lock(&rt->lock);
	rt->stopping = true;
	pthread_mutex_unlock(&rt->lock);
}

void retention_get_status(struct retention *rt, struct retention_status *ret)
{
	pthread_mutex_lock(&rt->lock);
	*ret = rt->st;
	pthread_mutex_unlock(&rt->lock);
}

static int64_t pragma(struct store *s, const char *sql)
{
	sqlite3_stmt *st = store_stmt(s, sql);
	int64_t v = -1;

	if (st && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	if (st)
		sqlite3_reset(st);
	return v;
}

static int prune_apply(struct store_job *sj, struct store *s)
{
	struct prune_job *pj = (struct prune_job *)sj;

	for (int i = 0; i < RET_N; i++) {
		sqlite3_stmt *st = store_stmt(s, step_sql[i]);
		int rc;

		if (!st)
			return -EIO;
		sqlite3_bind_int64(st, 1, pj->before_ns[i]);
		sqlite3_bind_int(st, 2, RETENTION_STEP_ROWS);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return store_errno(rc);
		pj->changes[i] = (unsigned)sqlite3_changes(store_writer_db(s));
		pj->more |= pj->changes[i] >= (i == RET_1M || i == RET_1H ? RETENTION_STEP_ROWS / 20
									   : RETENTION_STEP_ROWS);
	}
	{
		int64_t pages = pragma(s, "PRAGMA page_count"), free_pages = pragma(s, "PRAGMA freelist_count"),
			size = pragma(s, "PRAGMA page_size");

		if (pages >= 0 && free_pages >= 0 && size > 0)
			pj->used = (uint64_t)(pages - free_pages) * (uint64_t)size;
	}
	return 0;
}

static int submit(struct retention *rt, int64_t now);

/* The budget's decision for the next pass: shorter while over it, longer again well under. */
static void budget_locked(struct retention *rt, uint64_t used)
{
	struct retention_status *st = &rt->st;
	bool was = st->shortened, was_unmet = st->unmet;

	st->used_bytes = used;
	if (!rt->max_bytes)
		return;
	st->unmet = false;
	if (used > rt->max_bytes) {
		/* in proportion to how far over (the data is about proportional to the time kept),
		 * at least a fifth */
		double f = 0.9 * (double)rt->max_bytes / (double)used;
		int i;

		if (f > 0.8)
			f = 0.8;
		for (i = RET_RAW; i <= RET_1H; i++)
			if (st->in_force_ns[i] > floor_ns[i]) {
				int64_t v = (int64_t)((double)st->in_force_ns[i] * f);

				st->in_force_ns[i] = v > floor_ns[i] ? v : floor_ns[i];
				rt->cut[i] = true;
				break; /* the raw samples go first, then the minutes, then the hours */
			}
		st->unmet = i > RET_1H;
	} else if (used * 10 < rt->max_bytes * 9) {
		for (int i = RET_1H; i >= RET_RAW; i--)
			if (st->in_force_ns[i] < st->configured_ns[i]) {
				int64_t v = st->in_force_ns[i] + st->in_force_ns[i] / 10 + 1;

				st->in_force_ns[i] = v < st->configured_ns[i] ? v : st->configured_ns[i];
				rt->cut[i] = st->in_force_ns[i] < st->configured_ns[i];
				break;
			}
	}
	if (st->unmet && !was_unmet)
		log_warning("store", "store.max_bytes (%" PRIu64 " bytes) cannot be met: the database "
				     "uses %" PRIu64 " bytes with every retention at its shortest (raw "
				     "samples 2 min, minutes 1 h, hours 1 d); raise the budget",
			    rt->max_bytes, used);
	st->shortened = false;
	for (int i = RET_RAW; i <= RET_1H; i++)
		st->shortened |= st->in_force_ns[i] < st->configured_ns[i];
	if (st->shortened && !was)
		log_warning("store", "store.max_bytes (%" PRIu64 " bytes) holds the database under "
				     "its budget by keeping data for less than configured: %s %" PRId64
				     " s, %s %" PRId64 " s, %s %" PRId64 " s",
			    rt->max_bytes, names[0], st->in_force_ns[0] / 1000000000, names[1],
			    st->in_force_ns[1] / 1000000000, names[2], st->in_force_ns[2] / 1000000000);
	else if (!st->shortened && was)
		log_notice("store", "the database fits its budget with the configured retentions again");
}

static void prune_done(struct store_job *sj, int result)
{
	struct prune_job *pj = (struct prune_job *)sj;
	struct retention *rt = pj->rt;
	bool again = false;

	pthread_mutex_lock(&rt->lock);
	if (result < 0) {
		log_warning("store", "pruning old data failed: %s", strerror(-result));
	} else {
		for (int i = 0; i < RET_N; i++)
			rt->st.pruned[i] += pj->changes[i];
		if (pj->changes[RET_RAW] || pj->changes[RET_1M] || pj->changes[RET_1H] ||
		    pj->changes[RET_PROBES])
			log_debug("store", "pruned %u sample rows, %u minute and %u hour rollups, "
					   "%u probe results",
				  pj->changes[RET_RAW], pj->changes[RET_1M], pj->changes[RET_1H],
				  pj->changes[RET_PROBES]);
		if (pj->used && !pj->more)
			budget_locked(rt, pj->used);
		else if (pj->used)
			rt->st.used_bytes = pj->used;
		again = pj->more;
	}
	again &= !rt->stopping;
	rt->busy = again;
	pthread_mutex_unlock(&rt->lock);
	/* the rest of this pass's deletions, as the next job: reports go in between */
	if (again && submit(rt, pj->now) < 0) {
		pthread_mutex_lock(&rt->lock);
		rt->busy = false;
		pthread_mutex_unlock(&rt->lock);
	}
	free(pj);
}

static int submit(struct retention *rt, int64_t now)
{
	struct prune_job *pj = calloc(1, sizeof(*pj));
	int r;

	if (!pj)
		return -ENOMEM;
	pj->job.apply = prune_apply;
	pj->job.done = prune_done;
	pj->rt = rt;
	pj->now = now;
	pthread_mutex_lock(&rt->lock);
	for (int i = 0; i < RET_N; i++)
		pj->before_ns[i] = now - rt->st.in_force_ns[i];
	pthread_mutex_unlock(&rt->lock);
	if ((r = store_submit(rt->store, &pj->job)) < 0)
		free(pj);
	return r;
}

int retention_prune(void *ctx, int64_t now)
{
	struct retention *rt = ctx;
	bool busy;
	int r;

	pthread_mutex_lock(&rt->lock);
	busy = rt->busy || rt->stopping;
	rt->busy = true;
	pthread_mutex_unlock(&rt->lock);
	if (busy)
		return 0; /* the previous pass's steps are still going */
	if ((r = submit(rt, now)) < 0) {
		pthread_mutex_lock(&rt->lock);
		rt->busy = false;
		pthread_mutex_unlock(&rt->lock);
	}
	return r;
}
