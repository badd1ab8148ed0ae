/* Ingest of agent reports: see ingest.h. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/codec.h"
#include "daemon/delta.h"
#include "daemon/idguard.h"
#include "daemon/ingest.h"
#include "daemon/rollup.h"
#include "daemon/rwrite.h"
#include "daemon/views.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/ratelimit.h"
#include "lib/timeutil.h"

/* One counter of one port, as of the newest stored row of that port. */
struct cstate {
	uint16_t counter; /* registry id */
	uint8_t prio;
	uint8_t flags; /* of the newest row */
	uint32_t scale; /* of the source; 0 when loaded from the database and not yet seen again */
	uint64_t raw;
	/* cumulative, in the counter's unit: what /metrics exposes; while scale is 0, what it is
	 * above raw x scale (total_offsets): the source's scale is not stored */
	uint64_t total;
};

/* What c's total is above raw x scale: grows at a wrap or a reset (modulo 2^64: a baseline on
 * an implausible jump keeps the total while raw goes up). */
static uint64_t cstate_offset(const struct cstate *c)
{
	return c->scale ? c->total - c->raw * c->scale : c->total;
}

struct port_state {
	char *key; /* "agent:device:port", the hmap key */
	char *agent, *device, *port;
	int64_t id;   /* ports.id */
	int64_t t_ns; /* read time of the newest stored row, 0 if none */
	bool loaded;  /* t_ns and c reflect the database */
	struct cstate *c;
	uint32_t n;
	/* offsets of totals whose counter the newest stored row lacks (a source that failed in
	 * that report): its total goes on from raw x scale plus this when it comes back */
	struct cstate *orphans; /* counter, prio, total (the offset) */
	uint32_t norphans;
	struct rollup acc; /* the open minute (daemon/rollup.h); empty: none */
	struct codec_chain chain; /* its newest row, that the next may follow (daemon/codec.h) */
	int64_t compacted[2]; /* minutes (hours) before this are in blocks (daemon/rollup.h) */
	int64_t compact_to[2]; /* and before this are closed: ingest_compact's to do */
	int64_t seen_mono; /* when its last sample was stored (CLOCK_MONOTONIC) */
};

struct agent_state {
	char *id;
	char *boot_id, *host_boot_id;
	int64_t last_seq;  /* for boot_id */
	uint64_t inv_hash; /* of the inventory last written, 0 if unknown */
};

struct ingest {
	struct store *store;
	const struct reg *reg;
	uint32_t *dbid;	      /* registry id -> counters.id */
	uint16_t *by_dbid;    /* counters.id -> registry id + 1 (0: unknown) */
	uint32_t max_dbid;
	double *max_rate;     /* registry id -> raw-unit bound for scale 1 */

	pthread_rwlock_t lock; /* writer thread writes; /metrics and stats read */
	struct hmap ports;     /* key -> struct port_state */
	struct hmap agents;    /* id -> struct agent_state */

	pthread_mutex_t stats_lock;
	struct ingest_stats stats;
	uint64_t sec_bucket[16]; /* samples per wall-clock second, ring */
	int64_t sec_of_bucket[16];

	struct {
		ingest_hook_fn fn;
		void *ctx;
	} hooks[INGEST_HOOKS_MAX];
	unsigned nhooks;
	int64_t idle_ns; /* a port silent this long has its open minute written (ingest_flush_idle) */
	struct idguard *idguard; /* agent ids two agents report as */
	struct rwrite *rw; /* remote-write (daemon/rwrite.h); NULL: off */
	unsigned compact_due; /* ports whose closed hours (days) are not in blocks yet */
};

int ingest_add_hook(struct ingest *ing, ingest_hook_fn fn, void *ctx)
{
	if (ing->nhooks == INGEST_HOOKS_MAX)
		return -ENOSPC;
	ing->hooks[ing->nhooks].fn = fn;
	ing->hooks[ing->nhooks].ctx = ctx;
	ing->nhooks++;
	return 0;
}

/* The report is stored (or was already): the hooks' writes and the agent's commands. */
static int run_hooks(struct ingest *ing, const struct report *rep, int64_t now, json_t **ret_commands)
{
	json_t *cmds = json_array();
	int r;

	*ret_commands = NULL;
	if (!cmds)
		return -ENOMEM;
	for (unsigned i = 0; i < ing->nhooks; i++)
		if ((r = ing->hooks[i].fn(ing->hooks[i].ctx, ing->store, rep, now, cmds)) < 0) {
			json_decref(cmds);
			return r;
		}
	*ret_commands = cmds;
	return 0;
}

struct ingest_job {
	struct store_job job;
	struct ingest *ing;
	struct report *rep;
	ingest_cb cb;
	void *ctx;
	struct ingest_result res;
	/* new cache content, swapped in after the job's writes succeeded */
	struct pending {
		struct port_state *ps;
		struct cstate *c;
		uint32_t n;
		int64_t t_ns;
		/* the port's open minute after this job: reset to acc_reset (INT64_MIN: kept),
		 * then add's entries, read at add_t, added */
		int64_t acc_reset, add_t;
		struct sample_entry *add;
		uint32_t nadd;
		/* the row written: add's entries at add_t follow the chain (NEXT), start it again
		 * (FULL), or leave it (a late row) */
		enum { ROW_LATE, ROW_FULL, ROW_NEXT } row;
	} *pend;
	uint32_t npend;
	struct port_state **new_ports; /* created by this job, inserted on success */
	uint32_t nnew_ports;
	uint64_t inv_hash;
	uint32_t left_out;     /* ports of the report not stored: the agent has INGEST_MAX_AGENT_PORTS */
	uint32_t left_out_dev; /* devices (and absent ones): INGEST_MAX_AGENT_DEVICES */
	bool write_inventory;
	struct buf rw; /* the samples for remote-write, sent when the job is committed */
	size_t rw_n;
};

/* --- caches ---------------------------------------------------------------------------- */

static void port_state_free(struct port_state *ps)
{
	if (!ps)
		return;
	free(ps->key);
	free(ps->agent);
	free(ps->device);
	free(ps->port);
	free(ps->c);
	free(ps->orphans);
	rollup_fini(&ps->acc);
	codec_chain_fini(&ps->chain);
	free(ps);
}

static void agent_state_free(struct agent_state *as)
{
	if (!as)
		return;
	free(as->id);
	free(as->boot_id);
	free(as->host_boot_id);
	free(as);
}

static void drop_caches_locked(struct ingest *ing)
{
	size_t it = 0;
	void *v;

	while (hmap_next(&ing->ports, &it, NULL, &v))
		port_state_free(v);
	hmap_fini(&ing->ports);
	hmap_init(&ing->ports);
	it = 0;
	while (hmap_next(&ing->agents, &it, NULL, &v))
		agent_state_free(v);
	hmap_fini(&ing->agents);
	hmap_init(&ing->agents);
	__atomic_store_n(&ing->compact_due, 0, __ATOMIC_RELAXED);
}

static void on_rollback(void *ctx)
{
	struct ingest *ing = ctx;

	log_warning("ingest", "a commit failed; reloading counter state from the database");
	pthread_rwlock_wrlock(&ing->lock);
	drop_caches_locked(ing);
	pthread_rwlock_unlock(&ing->lock);
}

static int cstate_cmp(uint16_t c1, uint8_t p1, uint16_t c2, uint8_t p2)
{
	if (c1 != c2)
		return c1 < c2 ? -1 : 1;
	return p1 < p2 ? -1 : p1 > p2;
}

struct load_ctx {
	struct ingest *ing;
	struct cstate *c;
	uint32_t n, cap;
};

static int load_entry(const struct sample_entry *e, void *arg)
{
	struct load_ctx *l = arg;
	const struct reg_counter *rc = ingest_counter_by_dbid(l->ing, e->counter);

	if (!rc)
		return 0; /* a counter this registry no longer has */
	if (l->n == l->cap) {
		uint32_t nc = l->cap ? l->cap * 2 : 32;
		struct cstate *c = realloc(l->c, nc * sizeof(*c));

		if (!c)
			return -ENOMEM;
		l->c = c;
		l->cap = nc;
	}
	/* total: its offset, from total_offsets (port_load_offsets) */
	l->c[l->n++] = (struct cstate){ .counter = rc->id, .prio = e->prio, .flags = e->flags,
					.scale = 0, .raw = e->raw, .total = 0 };
	return 0;
}

static int cstate_sort_cmp(const void *a, const void *b)
{
	const struct cstate *x = a, *y = b;

	return cstate_cmp(x->counter, x->prio, y->counter, y->prio);
}

/* The offsets of ps's totals (its cache sorted); one whose counter the newest stored row lacks
 * waits among ps's orphans for the counter to come back.  A counter the registry no longer has
 * is left. */
static int port_load_offsets(struct ingest *ing, struct port_state *ps)
{
	static const char sql[] = "SELECT counter, prio, value FROM total_offsets WHERE port_id = ?";
	sqlite3_stmt *st = store_stmt(ing->store, sql);
	int rc, r = 0;

	if (!st)
		return -EIO;
	free(ps->orphans);
	ps->orphans = NULL;
	ps->norphans = 0;
	sqlite3_bind_int64(st, 1, ps->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t dbid = sqlite3_column_int64(st, 0), prio = sqlite3_column_int64(st, 1);
		const struct reg_counter *kc = dbid > 0 && dbid <= UINT32_MAX
							? ingest_counter_by_dbid(ing, (uint32_t)dbid) : NULL;
		struct cstate key = { .counter = kc ? kc->id : 0, .prio = (uint8_t)prio,
				      .total = (uint64_t)sqlite3_column_int64(st, 2) };
		struct cstate *c, *o;

		if (!kc || prio < 0 || prio > UINT8_MAX)
			continue;
		if (ps->n && (c = bsearch(&key, ps->c, ps->n, sizeof(*ps->c), cstate_sort_cmp))) {
			c->total = key.total;
			continue;
		}
		if (!(o = realloc(ps->orphans, (ps->norphans + 1) * sizeof(*o)))) {
			r = -ENOMEM;
			break;
		}
		ps->orphans = o;
		ps->orphans[ps->norphans++] = key;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_errno(rc);
	sqlite3_reset(st);
	return r;
}

/* The offset an orphan of ps keeps for (counter, prio), 0 when none. */
static uint64_t orphan_offset(const struct port_state *ps, uint16_t counter, uint8_t prio)
{
	for (uint32_t i = 0; i < ps->norphans; i++)
		if (ps->orphans[i].counter == counter && ps->orphans[i].prio == prio)
			return ps->orphans[i].total;
	return 0;
}

/* c's offset when it changed from old's (none: 0), written with the sample row.  A gauge has
 * none: /metrics shows its value, and its every fall would be a write. */
static int offset_put(struct ingest *ing, const struct port_state *ps, const struct cstate *c,
		      const struct cstate *old)
{
	static const char sql[] = "INSERT INTO total_offsets(port_id, counter, prio, value) VALUES(?,?,?,?) "
				  "ON CONFLICT(port_id, counter, prio) DO UPDATE SET value = excluded.value";
	uint64_t off = cstate_offset(c);
	sqlite3_stmt *st;

	if (off == (old ? cstate_offset(old) : 0) || reg_counter(ing->reg, c->counter)->kind == REG_KIND_GAUGE)
		return 0;
	if (!(st = store_stmt(ing->store, sql)))
		return -EIO;
	sqlite3_bind_int64(st, 1, ps->id);
	sqlite3_bind_int64(st, 2, ing->dbid[c->counter]);
	sqlite3_bind_int(st, 3, c->prio);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)off);
	return store_step(st);
}

/* Fills ps from its newest stored row (writer thread). */
/* --- rollups (daemon/rollup.h) ---------------------------------------------------------------- */

static bool is_gauge(const struct ingest *ing, uint32_t dbid)
{
	const struct reg_counter *rc = ingest_counter_by_dbid(ing, dbid);

	return rc && rc->kind == REG_KIND_GAUGE;
}

static int64_t block_span(int res_s)
{
	return res_s == 60 ? ROLLUP_1H_NS : ROLLUP_1D_NS;
}

static int block_put(struct ingest *ing, int res_s, const struct port_state *ps, int64_t t0,
		     const struct rollup *slots, size_t n)
{
	static const char put_sql[] =
		"INSERT INTO rollups(res, port_id, t_ns, n, data) VALUES(?,?,?,?,?) "
		"ON CONFLICT(res, port_id, t_ns) DO UPDATE SET n = excluded.n, data = excluded.data";
	sqlite3_stmt *st;
	struct buf b;
	int r;

	buf_init(&b);
	r = rollup_block_encode(slots, n, t0, res_s * NSEC_PER_SEC, &b);
	if (r == 0 && !(st = store_stmt(ing->store, put_sql)))
		r = -EIO;
	if (r == 0) {
		sqlite3_bind_int(st, 1, -res_s);
		sqlite3_bind_int64(st, 2, ps->id);
		sqlite3_bind_int64(st, 3, t0);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)n);
		sqlite3_bind_blob(st, 5, b.data, (int)b.len, SQLITE_STATIC);
		r = store_step(st);
	}
	buf_fini(&b);
	return r;
}

/* The block of (res, port) that starts at t0: its slots (*ret, *ret_n; none when there is no
 * block); -EBADMSG when it is corrupt. */
static int block_get(struct ingest *ing, int res_s, const struct port_state *ps, int64_t t0,
		     struct rollup **ret, size_t *ret_n, bool *exists)
{
	static const char get_sql[] = "SELECT data FROM rollups WHERE res = ? AND port_id = ? AND t_ns = ?";
	sqlite3_stmt *st = store_stmt(ing->store, get_sql);
	int rc, r = 0;

	*ret = NULL;
	*ret_n = 0;
	*exists = false;
	if (!st)
		return -EIO;
	sqlite3_bind_int(st, 1, -res_s);
	sqlite3_bind_int64(st, 2, ps->id);
	sqlite3_bind_int64(st, 3, t0);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*exists = true;
		r = rollup_block_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
					t0, res_s * NSEC_PER_SEC, ret, ret_n);
	} else if (rc != SQLITE_DONE) {
		r = store_errno(rc);
	}
	sqlite3_reset(st);
	return r;
}

static void slots_free(struct rollup *slots, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rollup_fini(&slots[i]);
	free(slots);
}

/* src into the slot of bucket in its block; *n the slots (kept sorted).  */
static int slot_merge(struct rollup **slots, size_t *n, int64_t bucket, const struct rollup *src)
{
	size_t i = 0;
	struct rollup *ns;

	while (i < *n && (*slots)[i].t_ns < bucket)
		i++;
	if (i == *n || (*slots)[i].t_ns != bucket) {
		if (!(ns = realloc(*slots, (*n + 1) * sizeof(*ns))))
			return -ENOMEM;
		*slots = ns;
		memmove(&ns[i + 1], &ns[i], (*n - i) * sizeof(*ns));
		rollup_init(&ns[i], bucket);
		(*n)++;
	}
	return rollup_merge(&(*slots)[i], src);
}

/* A bucket whose block exists (a late sample's minute or hour): src merged into it there.
 * 1: merged; 0: no block. */
static int block_add(struct ingest *ing, int res_s, const struct port_state *ps, int64_t bucket,
		     const struct rollup *src)
{
	int64_t t0 = rollup_bucket(bucket, block_span(res_s));
	struct rollup *slots;
	size_t n;
	bool exists;
	int r = block_get(ing, res_s, ps, t0, &slots, &n, &exists);

	if (r == -EBADMSG)
		return 0; /* (a row of its own; the corrupt block stays, skipped by readers) */
	if (r == 0 && !exists)
		return 0;
	if (r == 0)
		r = slot_merge(&slots, &n, bucket, src);
	if (r == 0)
		r = block_put(ing, res_s, ps, t0, slots, n);
	slots_free(slots, n);
	return r < 0 ? r : 1;
}

/* The port's buckets of res before `before` (an hour's or a day's start) from their rows into
 * their blocks, one row per port and hour (day); the rows merged go.  At most
 * COMPACT_BLOCKS blocks a call (a database from before blocks has weeks of rows a port):
 * 1 when more remain.  A corrupt row is dropped (said in the log); an hour whose block is
 * corrupt keeps its rows and the block as they are. */
#define COMPACT_BLOCKS 4

static int rollup_compact(struct ingest *ing, int res_s, const struct port_state *ps, int64_t before)
{
	static const char rows_sql[] = "SELECT t_ns, data FROM rollups WHERE res = ? AND port_id = ? "
				       "AND t_ns >= ? AND t_ns < ? ORDER BY t_ns";
	static const char del_sql[] = "DELETE FROM rollups WHERE res = ? AND port_id = ? AND t_ns = ?";
	int64_t span = block_span(res_s), from = INT64_MIN;
	struct rollup *slots = NULL, one;
	int64_t *merged = NULL;
	size_t n = 0, nmerged = 0;
	sqlite3_stmt *st;
	int rc, r = 0;

	rollup_init(&one, 0);
	for (int blocks = 0; r == 0; blocks++) {
		int64_t t0 = INT64_MIN;
		bool exists = false, corrupt = false;

		if (!(st = store_stmt(ing->store, rows_sql))) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int(st, 1, res_s);
		sqlite3_bind_int64(st, 2, ps->id);
		sqlite3_bind_int64(st, 3, from);
		sqlite3_bind_int64(st, 4, before);
		while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t t = sqlite3_column_int64(st, 0);
			int64_t *m;

			if (t0 == INT64_MIN) {
				if (blocks == COMPACT_BLOCKS) {
					r = 1; /* more next time */
					break;
				}
				t0 = rollup_bucket(t, span);
				r = block_get(ing, res_s, ps, t0, &slots, &n, &exists);
				if (r == -EBADMSG) {
					corrupt = true;
					r = 0;
					break;
				}
				if (r < 0)
					break;
			} else if (rollup_bucket(t, span) != t0) {
				break;
			}
			if (!(m = realloc(merged, (nmerged + 1) * sizeof(*m)))) {
				r = -ENOMEM;
				break;
			}
			merged = m;
			merged[nmerged++] = t; /* merged, or corrupt and dropped */
			rollup_reset(&one, t);
			r = rollup_decode(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), &one);
			if (r == -EBADMSG) {
				log_warning("ingest", "the %ds rollup of port %s at %" PRId64 " is corrupt; "
						      "dropped", res_s, ps->key, t);
				r = 0;
				continue;
			}
			if (r == 0 && t - t0 >= span)
				r = -EINVAL;
			if (r == 0)
				r = slot_merge(&slots, &n, t, &one);
		}
		if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
			r = store_errno(rc);
		sqlite3_reset(st);
		if (r == 0 && t0 != INT64_MIN && !corrupt) {
			if (n)
				r = block_put(ing, res_s, ps, t0, slots, n);
			if (r == 0 && !(st = store_stmt(ing->store, del_sql)))
				r = -EIO;
			for (size_t i = 0; r == 0 && i < nmerged; i++) {
				sqlite3_bind_int(st, 1, res_s);
				sqlite3_bind_int64(st, 2, ps->id);
				sqlite3_bind_int64(st, 3, merged[i]);
				r = store_step(st);
			}
		} else if (corrupt) {
			log_warning("ingest", "the block of %ds rollups of port %s at %" PRId64 " is "
					      "corrupt; the buckets of its span stay rows", res_s, ps->key, t0);
		}
		slots_free(slots, n);
		slots = NULL;
		n = 0;
		nmerged = 0;
		if (t0 == INT64_MIN)
			break;
		from = t0 + span;
	}
	free(merged);
	rollup_fini(&one);
	return r;
}

/* src added to the stored row (res, port, bucket): read, merged, written back. */
static int rollup_store_add(struct ingest *ing, int res_s, const struct port_state *ps,
			    int64_t bucket, const struct rollup *src)
{
	static const char get_sql[] = "SELECT data FROM rollups WHERE res = ? AND port_id = ? AND t_ns = ?";
	static const char put_sql[] =
		"INSERT INTO rollups(res, port_id, t_ns, n, data) VALUES(?,?,?,?,?) "
		"ON CONFLICT(res, port_id, t_ns) DO UPDATE SET n = excluded.n, data = excluded.data";
	struct rollup row;
	sqlite3_stmt *st = store_stmt(ing->store, get_sql);
	struct buf b;
	int rc, r = 0;

	if (!st)
		return -EIO;
	if ((r = block_add(ing, res_s, ps, bucket, src)) != 0)
		return r < 0 ? r : 0;
	if (!(st = store_stmt(ing->store, get_sql)))
		return -EIO;
	rollup_init(&row, bucket);
	sqlite3_bind_int(st, 1, res_s);
	sqlite3_bind_int64(st, 2, ps->id);
	sqlite3_bind_int64(st, 3, bucket);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		r = rollup_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), &row);
		if (r == -EBADMSG) {
			log_warning("ingest", "the %ds rollup of port %s at %" PRId64 " is corrupt; "
					      "writing it anew", res_s, ps->key, bucket);
			row.n = 0;
			r = 0;
		}
	} else if (rc != SQLITE_DONE) {
		r = store_errno(rc);
	}
	sqlite3_reset(st);
	buf_init(&b);
	if (r == 0)
		r = rollup_merge(&row, src);
	if (r == 0)
		r = rollup_encode(&row, &b);
	if (r == 0 && !(st = store_stmt(ing->store, put_sql)))
		r = -EIO;
	if (r == 0) {
		sqlite3_bind_int(st, 1, res_s);
		sqlite3_bind_int64(st, 2, ps->id);
		sqlite3_bind_int64(st, 3, bucket);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)row.n);
		sqlite3_bind_blob(st, 5, b.data, (int)b.len, SQLITE_STATIC);
		r = store_step(st);
	}
	buf_fini(&b);
	rollup_fini(&row);
	return r;
}

static bool compact_pending(const struct port_state *ps)
{
	return ps->compact_to[0] > ps->compacted[0] || ps->compact_to[1] > ps->compacted[1];
}

/* A closed minute into its row and its hour's; when it is the first of an hour (a day), the
 * port's minutes (hours) before are to go into their blocks (ingest_compact, a few ports a
 * second, so that the hour's end does not stall the writer). */
static int rollup_flush(struct ingest *ing, struct port_state *ps, const struct rollup *m)
{
	int64_t h = rollup_bucket(m->t_ns, ROLLUP_1H_NS), d = rollup_bucket(m->t_ns, ROLLUP_1D_NS);
	bool was = compact_pending(ps);
	int r;

	if (!m->n)
		return 0;
	r = rollup_store_add(ing, 60, ps, m->t_ns, m);
	if (r == 0)
		r = rollup_store_add(ing, 3600, ps, h, m);
	/* (the marks are the writer's, reset with every cache when a commit fails) */
	if (r == 0 && h > ps->compact_to[0])
		ps->compact_to[0] = h;
	if (r == 0 && d > ps->compact_to[1])
		ps->compact_to[1] = d;
	if (!was && compact_pending(ps))
		__atomic_add_fetch(&ing->compact_due, 1, __ATOMIC_RELAXED);
	return r;
}

/* Some ports' closed hours (days) into their blocks: 0, or 1 when more remain.  The marks
 * move only when the whole job's writes did (a failed job is rolled back to its savepoint). */
static int compact_some(struct ingest *ing, unsigned max_ports)
{
	struct {
		struct port_state *ps;
		int64_t compacted[2];
	} done[INGEST_COMPACT_PORTS];
	size_t it = 0;
	void *v;
	unsigned ndone = 0, left = 0;
	bool whole = true;
	int r = 0;

	if (max_ports > INGEST_COMPACT_PORTS)
		max_ports = INGEST_COMPACT_PORTS;
	while (r == 0 && hmap_next(&ing->ports, &it, NULL, &v)) {
		struct port_state *ps = v;
		int64_t c0 = ps->compacted[0], c1 = ps->compacted[1];
		int c;

		if (!compact_pending(ps))
			continue;
		if (ndone == max_ports) {
			whole = false;
			break;
		}
		if (ps->compact_to[0] > c0) {
			if ((c = rollup_compact(ing, 60, ps, ps->compact_to[0])) < 0)
				r = c;
			else if (c == 0)
				c0 = ps->compact_to[0];
		}
		if (r == 0 && ps->compact_to[1] > c1) {
			if ((c = rollup_compact(ing, 3600, ps, ps->compact_to[1])) < 0)
				r = c;
			else if (c == 0)
				c1 = ps->compact_to[1];
		}
		done[ndone].ps = ps;
		done[ndone].compacted[0] = c0;
		done[ndone++].compacted[1] = c1;
		if (ps->compact_to[0] > c0 || ps->compact_to[1] > c1)
			left++;
	}
	if (r < 0)
		return r;
	for (unsigned i = 0; i < ndone; i++) {
		done[i].ps->compacted[0] = done[i].compacted[0];
		done[i].ps->compacted[1] = done[i].compacted[1];
	}
	/* (counted again over every port when the scan saw them all: no drift) */
	if (whole)
		__atomic_store_n(&ing->compact_due, left, __ATOMIC_RELAXED);
	return whole && !left ? 0 : 1;
}

struct fold_ctx {
	struct ingest *ing;
	struct rollup *r;
	int64_t t_ns;
};

static int fold_entry(const struct sample_entry *se, void *arg)
{
	struct fold_ctx *f = arg;

	return rollup_add_sample(f->r, se, f->t_ns, is_gauge(f->ing, se->counter));
}

static int fold_nothing(const struct sample_entry *se, void *arg)
{
	(void)se;
	(void)arg;
	return 0;
}

/* After a start (or a cache dropped by a failed commit): the port's open minute again, from
 * its raw samples after the newest one its last written minute holds (a minute written open,
 * by a silent port's flush or a clean stop, and reported into again is completed, not taken as
 * whole); minutes that closed meanwhile (rocefabd was killed before it wrote them) are written
 * now.  A port with no rollup yet (a database from before them) starts at its newest sample's
 * minute. */
static int rollup_rebuild(struct ingest *ing, struct port_state *ps)
{
	static const char last_sql[] = "SELECT t_ns, data FROM rollups WHERE res = 60 AND port_id = ? "
				       "ORDER BY t_ns DESC LIMIT 1";
	static const char raw_sql[] = "SELECT t_ns, data FROM samples WHERE port_id = ? AND t_ns >= ? "
				      "ORDER BY t_ns";
	sqlite3_stmt *st = store_stmt(ing->store, last_sql);
	struct codec_chain chain;
	struct rollup one;
	int64_t from, done = INT64_MIN; /* the newest sample in the rollups */
	int rc, r = 0;

	rollup_reset(&ps->acc, 0);
	if (!ps->t_ns)
		return 0;
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, ps->id);
	rc = sqlite3_step(st);
	from = rollup_bucket(ps->t_ns, ROLLUP_1M_NS);
	if (rc == SQLITE_ROW) {
		/* read from that minute's start: its rows after the first follow it (codec.h) */
		rollup_init(&one, from = sqlite3_column_int64(st, 0));
		if (rollup_decode(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), &one) == 0) {
			for (size_t i = 0; i < one.n; i++)
				if (one.e[i].last_ns > done)
					done = one.e[i].last_ns;
		}
		if (done == INT64_MIN) /* unreadable (or empty): taken as whole, as before */
			done = from + ROLLUP_1M_NS - 1;
		rollup_fini(&one);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_errno(rc);
	if (!(st = store_stmt(ing->store, raw_sql)))
		return -EIO;
	sqlite3_bind_int64(st, 1, ps->id);
	sqlite3_bind_int64(st, 2, from);
	rollup_init(&one, 0);
	codec_chain_init(&chain);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct fold_ctx f = { .ing = ing, .r = &one, .t_ns = sqlite3_column_int64(st, 0) };
		int64_t m = rollup_bucket(f.t_ns, ROLLUP_1M_NS);

		if (f.t_ns <= done) {
			/* in the rollups already: read only for the chain */
			r = codec_decode_row(&chain, f.t_ns, sqlite3_column_blob(st, 1),
					     (size_t)sqlite3_column_bytes(st, 1), fold_nothing, NULL);
			if (r == -EBADMSG || r == -ESRCH)
				r = 0;
			continue;
		}
		if (ps->acc.n && m != ps->acc.t_ns) {
			if ((r = rollup_flush(ing, ps, &ps->acc)) < 0)
				break;
			rollup_reset(&ps->acc, m);
		}
		ps->acc.t_ns = m;
		/* the row whole or not at all: a corrupt one counts for nothing (port_load says so
		 * for the newest) */
		rollup_reset(&one, m);
		r = codec_decode_row(&chain, f.t_ns, sqlite3_column_blob(st, 1),
				     (size_t)sqlite3_column_bytes(st, 1), fold_entry, &f);
		if (r == 0)
			r = rollup_merge(&ps->acc, &one);
		else if (r == -EBADMSG || r == -ESRCH)
			r = 0;
	}
	rollup_fini(&one);
	codec_chain_fini(&chain);
	if (r == 0 && rc != SQLITE_DONE)
		r = store_errno(rc);
	sqlite3_reset(st);
	return r;
}

/* The rows of a port from the minute of its newest, read as a chain (daemon/codec.h): fn gets
 * the newest row's entries; *ret_t its time (0: no rows).  The chain is left at the newest row
 * when that row can be followed.  -EBADMSG: the newest row is corrupt or cannot be read. */
int ingest_read_newest(sqlite3_stmt *max_st, sqlite3_stmt *rows_st, int64_t port_id,
		       struct codec_chain *chain, int64_t *ret_t,
		       int (*fn)(const struct sample_entry *e, void *ctx), void *ctx)
{
	int64_t newest = 0;
	int rc, r = 0;

	codec_chain_reset(chain);
	*ret_t = 0;
	sqlite3_bind_int64(max_st, 1, port_id);
	rc = sqlite3_step(max_st);
	if (rc == SQLITE_ROW && sqlite3_column_type(max_st, 0) != SQLITE_NULL)
		newest = sqlite3_column_int64(max_st, 0);
	sqlite3_reset(max_st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_errno(rc);
	if (!newest)
		return 0;
	*ret_t = newest;
	sqlite3_bind_int64(rows_st, 1, port_id);
	sqlite3_bind_int64(rows_st, 2, rollup_bucket(newest, ROLLUP_1M_NS));
	sqlite3_bind_int64(rows_st, 3, newest);
	r = -EBADMSG;
	while ((rc = sqlite3_step(rows_st)) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(rows_st, 0);
		const void *blob = sqlite3_column_blob(rows_st, 1);
		size_t len = (size_t)sqlite3_column_bytes(rows_st, 1);

		if (t == newest) {
			r = codec_decode_row(chain, t, blob, len, fn, ctx);
			break;
		}
		/* the rows before: only to follow the chain */
		if (codec_decode_row(chain, t, blob, len, ingest_skip_entry, NULL) == -ENOMEM) {
			r = -ENOMEM;
			break;
		}
	}
	sqlite3_reset(rows_st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_errno(rc);
	if (r == -ESRCH)
		r = -EBADMSG;
	if (r < 0 || chain->t_ns != newest)
		codec_chain_reset(chain);
	return r;
}

int ingest_skip_entry(const struct sample_entry *e, void *ctx)
{
	(void)e;
	(void)ctx;
	return 0;
}

static int port_load(struct ingest *ing, struct port_state *ps)
{
	sqlite3_stmt *mx = store_stmt(ing->store, INGEST_NEWEST_SQL);
	sqlite3_stmt *rows = store_stmt(ing->store, INGEST_ROWS_SQL);
	struct load_ctx l = { .ing = ing };
	int r;

	if (!mx || !rows)
		return -EIO;
	r = ingest_read_newest(mx, rows, ps->id, &ps->chain, &ps->t_ns, load_entry, &l);
	if (r == -EBADMSG) {
		/* its time stays the newest: an older sample is late (stored apart, never over a
		 * row that others follow), a newer one a new baseline */
		log_warning("ingest", "newest sample row of port %s is corrupt; starting "
				      "that port from a new baseline", ps->key);
		l.n = 0;
		r = 0;
	}
	if (r < 0) {
		free(l.c);
		return r;
	}
	if (l.n)
		qsort(l.c, l.n, sizeof(*l.c), cstate_sort_cmp);
	free(ps->c);
	ps->c = l.c;
	ps->n = l.n;
	ps->loaded = true;
	if ((r = port_load_offsets(ing, ps)) < 0)
		return r;
	return rollup_rebuild(ing, ps);
}

/* --- the job --------------------------------------------------------------------------- */

static struct agent_state *agent_get(struct ingest *ing, const char *id, int *ret_err)
{
	static const char sql[] = "SELECT boot_id, host_boot_id, seq FROM agents WHERE id = ?";
	struct agent_state *as = hmap_get(&ing->agents, id);
	sqlite3_stmt *st;
	int rc;

	*ret_err = 0;
	if (as)
		return as;
	as = calloc(1, sizeof(*as));
	if (!as || !(as->id = strdup(id)))
		goto oom;
	st = store_stmt(ing->store, sql);
	if (!st) {
		*ret_err = -EIO;
		agent_state_free(as);
		return NULL;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *b = (const char *)sqlite3_column_text(st, 0);
		const char *hb = (const char *)sqlite3_column_text(st, 1);

		as->boot_id = b ? strdup(b) : NULL;
		as->host_boot_id = hb ? strdup(hb) : NULL;
		as->last_seq = sqlite3_column_int64(st, 2);
	} else if (rc != SQLITE_DONE) {
		*ret_err = store_errno(rc);
	}
	sqlite3_reset(st);
	if (*ret_err < 0) {
		agent_state_free(as);
		return NULL;
	}
	pthread_rwlock_wrlock(&ing->lock);
	*ret_err = hmap_put(&ing->agents, as->id, as, NULL);
	pthread_rwlock_unlock(&ing->lock);
	if (*ret_err < 0) {
		agent_state_free(as);
		return NULL;
	}
	return as;
oom:
	agent_state_free(as);
	*ret_err = -ENOMEM;
	return NULL;
}

/* The last seq stored for (agent, boot), or 0. */
static int boot_last_seq(struct ingest *ing, const struct report *rep,
			 const struct agent_state *as, int64_t *ret)
{
	static const char sql[] = "SELECT last_seq FROM agent_boots WHERE agent_id = ? AND boot_id = ?";
	sqlite3_stmt *st;
	int rc;

	if (as->boot_id && strcmp(as->boot_id, rep->boot_id) == 0) {
		*ret = as->last_seq;
		return 0;
	}
	st = store_stmt(ing->store, sql);
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rep->boot_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*ret = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_errno(rc);
}

static struct ratelimit left_out_log = RATELIMIT_INIT(1024, 60 * NSEC_PER_SEC);

/* One count or existence of the agent's rows (sql binds the agent, then name if not NULL). */
static int agent_rows(struct ingest *ing, const char *sql, const char *agent, const char *name, int64_t *ret)
{
	sqlite3_stmt *st = store_stmt(ing->store, sql);
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	if (name)
		sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*ret = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_errno(rc);
}

/* Whether a row the report names is new and cannot be stored: the agent has max of them
 * (*stored, counted up as new ones are taken).  Asked only when remaining, the rows of the
 * report from this one on, could take it past max. */
static int left_out(struct ingest *ing, const char *exists_sql, const char *agent, const char *name,
		    int64_t *stored, uint32_t remaining, int64_t max, bool *ret)
{
	int64_t have = 0;
	int r;

	*ret = false;
	if (*stored + remaining <= max)
		return 0;
	if ((r = agent_rows(ing, exists_sql, agent, name, &have)) < 0)
		return r;
	*ret = !have && *stored >= max;
	*stored += !have && !*ret;
	return 0;
}

static int write_inventory(struct ingest *ing, const struct report *rep, int64_t now, uint32_t *ret_left,
			   uint32_t *ret_left_dev)
{
	static const char count_sql[] = "SELECT count(*) FROM ports WHERE agent_id = ?";
	static const char exists_sql[] = "SELECT 1 FROM ports WHERE agent_id = ?1 AND key = ?2";
	static const char dev_count_sql[] = "SELECT count(*) FROM devices WHERE agent_id = ?";
	static const char dev_exists_sql[] = "SELECT 1 FROM devices WHERE agent_id = ?1 AND name = ?2";
	int64_t stored = 0, stored_dev = 0;
	uint32_t nabsent = (uint32_t)json_array_size(rep->absent);
	static const char dev_sql[] =
		"INSERT INTO devices(agent_id, name, kind, driver, fw_version, node_guid, present, "
		"last_seen_ns) VALUES(?,?,?,?,?,?,1,?) ON CONFLICT(agent_id, name) DO UPDATE SET "
		"kind=excluded.kind, driver=excluded.driver, fw_version=excluded.fw_version, "
		"node_guid=excluded.node_guid, present=1, last_seen_ns=excluded.last_seen_ns";
	static const char dev_gone_sql[] =
		"UPDATE devices SET present = 0 WHERE agent_id = ? AND last_seen_ns < ?";
	/* (state_ns: when the state changed; was_up: ever up) */
	static const char port_sql[] =
		"INSERT INTO ports(key, agent_id, device, port, netdev, state, speed_mbps, mtu, "
		"link_layer, present, first_seen_ns, last_seen_ns, peer_system, peer_port, state_ns, was_up) "
		"VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,1,?10,?11,?12,?13,?14,?6 = 'up') "
		"ON CONFLICT(key) DO UPDATE SET netdev=excluded.netdev, "
		"state_ns=CASE WHEN state = excluded.state THEN state_ns ELSE excluded.state_ns END, "
		"state=excluded.state, was_up=max(was_up, excluded.was_up), "
		"speed_mbps=excluded.speed_mbps, mtu=excluded.mtu, link_layer=excluded.link_layer, "
		"present=1, last_seen_ns=excluded.last_seen_ns, peer_system=excluded.peer_system, "
		"peer_port=excluded.peer_port";
	static const char port_gone_sql[] =
		"UPDATE ports SET present = 0, state = 'unknown', was_up = 0 WHERE agent_id = ? AND last_seen_ns < ?";
	sqlite3_stmt *st;
	int r;

	/* ports and devices that went stay stored (ports with their data): an agent that keeps
	 * reporting new names (a review: one agent token grew the table by 123,000 rows a report)
	 * is held to INGEST_MAX_AGENT_PORTS and _DEVICES, and the new ones beyond are left out */
	*ret_left = *ret_left_dev = 0;
	if ((r = agent_rows(ing, count_sql, rep->agent_id, NULL, &stored)) < 0 ||
	    (r = agent_rows(ing, dev_count_sql, rep->agent_id, NULL, &stored_dev)) < 0)
		return r;
	for (uint32_t i = 0; i < rep->ndevices; i++) {
		const struct report_device *d = &rep->devices[i];
		bool left;

		if ((r = left_out(ing, dev_exists_sql, rep->agent_id, d->name, &stored_dev,
				  rep->ndevices - i + nabsent, INGEST_MAX_AGENT_DEVICES, &left)) < 0)
			return r;
		if (left) {
			++*ret_left_dev;
			continue;
		}
		if (!(st = store_stmt(ing->store, dev_sql)))
			return -EIO;
		sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, d->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, d->kind, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 4, d->driver);
		store_bind_text_or_null(st, 5, d->fw_version);
		store_bind_text_or_null(st, 6, d->node_guid);
		sqlite3_bind_int64(st, 7, now);
		if ((r = store_step(st)) < 0)
			return r;
	}
	for (uint32_t i = 0; i < rep->nports; i++) {
		const struct report_port *p = &rep->ports[i];
		char key[200];

		snprintf(key, sizeof(key), "%s:%s:%s", rep->agent_id, p->device, p->port);
		{
			bool left;

			if ((r = left_out(ing, exists_sql, rep->agent_id, key, &stored, rep->nports - i,
					  INGEST_MAX_AGENT_PORTS, &left)) < 0)
				return r;
			if (left) {
				++*ret_left;
				continue;
			}
		}
		if (!(st = store_stmt(ing->store, port_sql)))
			return -EIO;
		sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, rep->agent_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, p->device, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, p->port, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 5, p->netdev);
		sqlite3_bind_text(st, 6, p->state, -1, SQLITE_STATIC);
		if (p->speed_mbps >= 0)
			sqlite3_bind_int64(st, 7, p->speed_mbps);
		if (p->mtu >= 0)
			sqlite3_bind_int64(st, 8, p->mtu);
		sqlite3_bind_text(st, 9, p->link_layer, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 10, now);
		sqlite3_bind_int64(st, 11, now);
		store_bind_text_or_null(st, 12, p->peer_system);
		store_bind_text_or_null(st, 13, p->peer_port);
		sqlite3_bind_int64(st, 14, rep->time_ns < now ? rep->time_ns : now); /* (the report's: spooled, later) */
		if ((r = store_step(st)) < 0)
			return r;
	}
	{
		static const char absent_sql[] =
			"INSERT INTO devices(agent_id, name, kind, present, last_seen_ns) "
			"VALUES(?,?,'unknown',0,?) ON CONFLICT(agent_id, name) DO UPDATE SET present=0, "
			"last_seen_ns=excluded.last_seen_ns";
		size_t i;
		json_t *ja;

		json_array_foreach(rep->absent, i, ja) {
			bool left;

			if ((r = left_out(ing, dev_exists_sql, rep->agent_id, json_string_value(ja), &stored_dev,
					  nabsent - (uint32_t)i, INGEST_MAX_AGENT_DEVICES, &left)) < 0)
				return r;
			if (left) {
				++*ret_left_dev;
				continue;
			}
			if (!(st = store_stmt(ing->store, absent_sql)))
				return -EIO;
			sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, json_string_value(ja), -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 3, now);
			if ((r = store_step(st)) < 0)
				return r;
		}
	}
	if (!(st = store_stmt(ing->store, dev_gone_sql)))
		return -EIO;
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	if ((r = store_step(st)) < 0)
		return r;
	if (!(st = store_stmt(ing->store, port_gone_sql)))
		return -EIO;
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	return store_step(st);
}

/* The cached state of a port, created (and loaded from the database) on first use. */
static struct port_state *port_get(struct ingest_job *j, const struct report_port *p, int *ret_err)
{
	static const char sql[] = "SELECT id FROM ports WHERE key = ?";
	struct ingest *ing = j->ing;
	struct port_state *ps;
	sqlite3_stmt *st;
	char key[200];
	int rc;

	snprintf(key, sizeof(key), "%s:%s:%s", j->rep->agent_id, p->device, p->port);
	ps = hmap_get(&ing->ports, key);
	*ret_err = 0;
	if (ps)
		return ps;
	for (uint32_t i = 0; i < j->nnew_ports; i++)
		if (strcmp(j->new_ports[i]->key, key) == 0)
			return j->new_ports[i];
	ps = calloc(1, sizeof(*ps));
	if (!ps || !(ps->key = strdup(key)) || !(ps->agent = strdup(j->rep->agent_id)) ||
	    !(ps->device = strdup(p->device)) || !(ps->port = strdup(p->port))) {
		port_state_free(ps);
		*ret_err = -ENOMEM;
		return NULL;
	}
	if (!(st = store_stmt(ing->store, sql))) {
		port_state_free(ps);
		*ret_err = -EIO;
		return NULL;
	}
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		ps->id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW) {
		/* the inventory is written before samples, so the row must exist */
		*ret_err = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
		port_state_free(ps);
		return NULL;
	}
	if ((*ret_err = port_load(ing, ps)) < 0) {
		port_state_free(ps);
		return NULL;
	}
	{
		struct port_state **n = realloc(j->new_ports, (j->nnew_ports + 1) * sizeof(*n));

		if (!n) {
			port_state_free(ps);
			*ret_err = -ENOMEM;
			return NULL;
		}
		j->new_ports = n;
		j->new_ports[j->nnew_ports++] = ps;
	}
	return ps;
}

struct work_value {
	const struct report_value *v;
};

static int work_cmp(const void *a, const void *b)
{
	const struct report_value *x = ((const struct work_value *)a)->v;
	const struct report_value *y = ((const struct work_value *)b)->v;

	return cstate_cmp(x->counter, x->prio, y->counter, y->prio);
}

/* The open minute of a port as a job that succeeded left it. */
static int rollup_advance(struct ingest *ing, struct port_state *ps, const struct pending *p)
{
	int r = 0;

	if (p->acc_reset != INT64_MIN)
		rollup_reset(&ps->acc, p->acc_reset);
	for (uint32_t i = 0; r == 0 && i < p->nadd; i++)
		r = rollup_add_sample(&ps->acc, &p->add[i], p->add_t, is_gauge(ing, p->add[i].counter));
	return r;
}

/* One sample for remote-write: the series and value /metrics shows for it. */
static int rw_sample(struct ingest_job *j, const struct port_state *ps, const struct report_value *v,
		     const struct cstate *cs, int64_t t)
{
	const struct reg_counter *rc = reg_counter(j->ing->reg, v->counter);
	bool counter = rc->kind == REG_KIND_COUNTER;
	uint64_t val = counter ? cs->total : cs->raw;
	char name[160], prio[8];
	const char *labels[10] = { "__name__", name, "device", ps->device, "host", ps->agent,
				   "port", ps->port, "priority", prio };
	int r;

	snprintf(name, sizeof(name), "rocefab_port_%s%s", rc->metric, counter ? "_total" : "");
	snprintf(prio, sizeof(prio), "%u", cs->prio);
	r = rwrite_series(&j->rw, labels, cs->prio != REG_NO_PRIO ? 5 : 4,
			  rc->metric_scale == 1.0 ? (double)val : (double)val * rc->metric_scale, t);
	if (r == 0)
		j->rw_n++;
	return r;
}

/* Deltas and the stored row for one port.  Nothing in the cache changes here: the new state
 * goes to j->pend and is swapped in when the whole job succeeded. */
/* What delta_compute takes for v, read at t, of ps whose state of it is old (NULL: none). */
static struct delta_in delta_in_of(const struct ingest *ing, const struct port_state *ps,
				   const struct report_value *v, const struct cstate *old, int64_t t, bool new_boot)
{
	return (struct delta_in){ .prev_raw = old ? old->raw : 0, .cur_raw = v->raw, .prev_t_ns = ps->t_ns,
				  .cur_t_ns = t, .width = v->width, .saturate = v->wrap == REG_SATURATE,
				  .have_prev = old != NULL, .new_boot = new_boot,
				  .max_rate = ing->max_rate[v->counter] / v->scale };
}

/* Whether a counter of ps that cannot wrap (64 bits, not a gauge) went back in this read
 * (wv[0..n), at t), as a reset: the port's counters were reset together (delta_in.port_reset). */
static bool port_was_reset(const struct ingest *ing, const struct port_state *ps, const struct work_value *wv,
			   uint32_t n, int64_t t, bool new_boot)
{
	uint32_t i = 0, k = 0;

	while (i < n && k < ps->n) {
		const struct report_value *v = wv[i].v;
		int c = cstate_cmp(v->counter, v->prio, ps->c[k].counter, ps->c[k].prio);
		struct delta_in in;
		uint64_t d;

		if (c == 0 && v->width == 64 && v->wrap != REG_SATURATE && v->raw < ps->c[k].raw &&
		    reg_counter(ing->reg, v->counter)->kind != REG_KIND_GAUGE) { /* (a gauge goes down) */
			in = delta_in_of(ing, ps, v, &ps->c[k], t, new_boot);
			if (delta_compute(&in, &d) & DELTA_RESET)
				return true;
		}
		i += c <= 0;
		k += c >= 0;
	}
	return false;
}

static int ingest_port(struct ingest_job *j, uint32_t port_idx, bool new_boot, struct buf *blob,
		       struct work_value **wv, uint32_t *wvcap)
{
	static const char sql[] = "INSERT OR REPLACE INTO samples(port_id, t_ns, n, data) VALUES(?,?,?,?)";
	/* a sample older than the newest at a time already stored: the stored one stays (replacing
	 * it would count it twice in the rollups, and lose its delta) */
	static const char old_sql[] = "INSERT OR IGNORE INTO samples(port_id, t_ns, n, data) VALUES(?,?,?,?)";
	const struct report *rep = j->rep;
	struct ingest *ing = j->ing;
	struct sample_entry *out = NULL;
	struct port_state *ps;
	struct cstate *nc = NULL;
	struct rollup late = { 0 };
	bool port_reset;
	int64_t acc_reset;
	uint32_t nadd;
	int row;
	uint32_t n = 0, nn = 0, i, k;
	bool narrow = false; /* a value narrower than 64 bits: one a port's reset may be misread on */
	int64_t t = 0;
	sqlite3_stmt *st;
	int r;

	for (uint32_t s = 0; s < rep->nsamples; s++) {
		const struct report_sample *smp = &rep->samples[s];

		if (smp->port_idx != port_idx)
			continue;
		if (smp->t_ns > t)
			t = smp->t_ns;
		for (uint32_t v = smp->first_value; v < smp->first_value + smp->nvalues; v++) {
			if (rep->values[v].skip)
				continue;
			if (n == *wvcap) {
				uint32_t cap = *wvcap ? *wvcap * 2 : 256;
				struct work_value *w = realloc(*wv, cap * sizeof(*w));

				if (!w)
					return -ENOMEM;
				*wv = w;
				*wvcap = cap;
			}
			narrow |= rep->values[v].width < 64;
			(*wv)[n++].v = &rep->values[v];
		}
	}
	if (n == 0)
		return 0;
	qsort(*wv, n, sizeof(**wv), work_cmp);

	ps = port_get(j, &rep->ports[port_idx], &r);
	if (!ps && r == -ENOENT && j->left_out) /* left out of the store (INGEST_MAX_AGENT_PORTS) */
		return 0;
	if (!ps)
		return r;
	if (t == ps->t_ns) {
		/* the same reading again (a paused simulator, a device that did not refresh):
		 * nothing new, and the stored row with its deltas stays as it is */
		return 0;
	}
	/* (the walk only where it can change a reading: most ports' counters are all 64-bit) */
	port_reset = narrow && !new_boot && t > ps->t_ns && port_was_reset(ing, ps, *wv, n, t, new_boot);
	out = calloc(n, sizeof(*out));
	/* the new cache: the union of the old counters and this report's */
	nc = calloc(n + ps->n, sizeof(*nc));
	if (!out || !nc) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0, k = 0; i < n || k < ps->n;) {
		const struct report_value *v = i < n ? (*wv)[i].v : NULL;
		int c = !v ? 1 : k >= ps->n ? -1
					    : cstate_cmp(v->counter, v->prio, ps->c[k].counter,
							 ps->c[k].prio);
		const struct cstate *old = c == 0 ? &ps->c[k] : NULL;
		struct delta_in in;
		uint64_t d;
		unsigned flags;

		if (c > 0) { /* a counter not in this report keeps its state */
			nc[nn++] = ps->c[k++];
			continue;
		}
		in = delta_in_of(ing, ps, v, old, t, new_boot);
		in.port_reset = port_reset;
		flags = delta_compute(&in, &d);
		out[i] = (struct sample_entry){ .counter = ing->dbid[v->counter], .prio = v->prio,
						.flags = (uint8_t)flags, .raw = v->raw,
						.delta = d * v->scale,
						.dt_ns = t - ps->t_ns };
		if (flags & DELTA_CLOCK) {
			/* older than what is stored: keep the newer state */
			nc[nn] = old ? *old : (struct cstate){ .counter = v->counter, .prio = v->prio,
							       .scale = v->scale, .raw = v->raw,
							       .total = v->raw * v->scale };
		} else {
			nc[nn] = (struct cstate){ .counter = v->counter, .prio = v->prio,
						  .flags = (uint8_t)flags, .scale = v->scale,
						  .raw = v->raw };
			if (!old)
				nc[nn].total = v->raw * v->scale + orphan_offset(ps, v->counter, v->prio);
			else
				nc[nn].total = (old->scale ? old->total : old->raw * v->scale + old->total) +
					       ((flags & DELTA_VALID) ? d * v->scale : 0);
			if ((r = offset_put(ing, ps, &nc[nn], old)) < 0)
				goto out;
		}
		if (!(flags & DELTA_VALID))
			j->res.baseline++;
		/* (receivers keep milliseconds: one sample of a series a millisecond) */
		if (ing->rw && t / NSEC_PER_MSEC > ps->t_ns / NSEC_PER_MSEC &&
		    (r = rw_sample(j, ps, v, &nc[nn], t)) < 0)
			goto out;
		nn++;
		i++;
		if (c == 0)
			k++;
	}
	buf_reset(blob);
	/* a row late for its port stands alone; the others follow the port's newest row in its
	 * minute, when they can (daemon/codec.h) */
	if (t < ps->t_ns) {
		row = ROW_LATE;
		r = codec_encode_detached(out, n, blob);
	} else if (ps->chain.t_ns && ps->chain.t_ns == ps->t_ns &&
		   rollup_bucket(t, ROLLUP_1M_NS) == rollup_bucket(ps->t_ns, ROLLUP_1M_NS) &&
		   (r = codec_encode_next(&ps->chain, t, out, n, blob)) != -EAGAIN) {
		row = ROW_NEXT;
	} else {
		row = ROW_FULL;
		buf_reset(blob);
		r = codec_encode(out, n, blob);
	}
	if (r < 0)
		goto out;
	if (!(st = store_stmt(ing->store, t < ps->t_ns ? old_sql : sql))) {
		r = -EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, ps->id);
	sqlite3_bind_int64(st, 2, t);
	sqlite3_bind_int(st, 3, (int)n);
	sqlite3_bind_blob(st, 4, blob->data, (int)blob->len, SQLITE_STATIC);
	if ((r = store_step(st)) < 0)
		goto out;
	if (t < ps->t_ns && sqlite3_changes(store_writer_db(ing->store)) == 0) {
		r = 0; /* stored already: nothing new, the cache as it is */
		goto out;
	}
	j->res.samples += n;
	/* the rollups: the sample into its minute (in memory, when the job succeeded); the open
	 * minute written when a later one starts */
	{
		int64_t m = rollup_bucket(t, ROLLUP_1M_NS);

		if (ps->t_ns && m < rollup_bucket(ps->t_ns, ROLLUP_1M_NS)) {
			/* late (an agent's spool, a clock stepped back): straight into its rows */
			rollup_init(&late, m);
			for (i = 0; r == 0 && i < n; i++)
				r = rollup_add_sample(&late, &out[i], t, is_gauge(ing, out[i].counter));
			if (r == 0)
				r = rollup_flush(ing, ps, &late);
			acc_reset = INT64_MIN;
			nadd = 0;
		} else {
			if (ps->acc.n && m > ps->acc.t_ns)
				r = rollup_flush(ing, ps, &ps->acc);
			acc_reset = ps->acc.n && m == ps->acc.t_ns ? INT64_MIN : m;
			nadd = n;
		}
		if (r < 0)
			goto out;
	}
	{
		struct pending *p = realloc(j->pend, (j->npend + 1) * sizeof(*p));

		if (!p) {
			r = -ENOMEM;
			goto out;
		}
		j->pend = p;
		j->pend[j->npend++] = (struct pending){ .ps = ps, .c = nc, .n = nn,
							.t_ns = t > ps->t_ns ? t : ps->t_ns,
							.acc_reset = acc_reset, .add_t = t,
							.add = nadd ? out : NULL, .nadd = nadd,
							.row = nadd ? row : ROW_LATE };
		nc = NULL;
		if (nadd)
			out = NULL;
	}
	r = 0;
out:
	free(out);
	free(nc);
	rollup_fini(&late);
	return r;
}

/* The host's QP table as reported, and the QPs that entered the error state added up. */
static int write_qps(struct ingest *ing, const struct report *rep)
{
	static const char sql[] = "INSERT INTO qps(agent_id, t_ns, doc, errors_total) VALUES(?,?,?,?) "
				  "ON CONFLICT(agent_id) DO UPDATE SET t_ns=excluded.t_ns, doc=excluded.doc, "
				  "errors_total=errors_total+excluded.errors_total";
	char *doc = json_dumps(rep->qps, JSON_COMPACT);
	sqlite3_stmt *st;
	int r;

	if (!doc)
		return -ENOMEM;
	if (!(st = store_stmt(ing->store, sql))) {
		free(doc);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rep->time_ns); /* when the agent read it (a spooled report is late) */
	sqlite3_bind_text(st, 3, doc, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, json_integer_value(json_object_get(rep->qps, "entered_error")));
	r = store_step(st);
	free(doc);
	return r;
}

static int ingest_apply(struct store_job *sj, struct store *s)
{
	static const char agent_sql[] =
		"INSERT INTO agents(id, role, hostname, version, backend, boot_id, host_boot_id, seq, "
		"interval_ms, first_seen_ns, last_seen_ns, last_report_ns, reports, samples, "
		"ignored_values, spool_dropped, spool_queued, errors) "
		"VALUES(?,?,?,?,?,?,?,?,?,?,?,?,1,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
		"role=excluded.role, hostname=excluded.hostname, version=excluded.version, "
		"backend=excluded.backend, boot_id=excluded.boot_id, "
		"host_boot_id=excluded.host_boot_id, seq=excluded.seq, "
		"interval_ms=excluded.interval_ms, last_seen_ns=max(last_seen_ns, excluded.last_seen_ns), "
		"last_report_ns=excluded.last_report_ns, reports=reports+1, "
		"samples=samples+excluded.samples, ignored_values=ignored_values+excluded.ignored_values, "
		"spool_dropped=excluded.spool_dropped, spool_queued=excluded.spool_queued, "
		"errors=excluded.errors";
	static const char boot_sql[] =
		"INSERT INTO agent_boots(agent_id, boot_id, last_seq, first_seen_ns) VALUES(?,?,?,?) "
		"ON CONFLICT(agent_id, boot_id) DO UPDATE SET "
		"last_seq=max(last_seq, excluded.last_seq)";
	static const char dup_sql[] =
		"UPDATE agents SET duplicates = duplicates + 1, last_seen_ns = max(last_seen_ns, ?) WHERE id = ?";
	struct ingest_job *j = (struct ingest_job *)sj;
	struct ingest *ing = j->ing;
	const struct report *rep = j->rep;
	struct agent_state *as;
	struct work_value *wv = NULL;
	uint32_t wvcap = 0;
	int64_t now = tu_now_ns(), last_seq;
	/* a replay of another id's spool was made then, not now: the agent stays as it was */
	int64_t seen = rep->replay && rep->time_ns < now ? rep->time_ns : now;
	bool new_boot;
	struct buf blob;
	sqlite3_stmt *st;
	char *errors = NULL;
	int r;

	(void)s;
	j->res.seq = rep->seq;
	as = agent_get(ing, rep->agent_id, &r);
	if (!as)
		return r;
	if ((r = boot_last_seq(ing, rep, as, &last_seq)) < 0)
		return r;
	if (rep->seq <= last_seq) {
		j->res.duplicate = true;
		if (!(st = store_stmt(ing->store, dup_sql)))
			return -EIO;
		sqlite3_bind_int64(st, 1, seen);
		sqlite3_bind_text(st, 2, rep->agent_id, -1, SQLITE_STATIC);
		if ((r = store_step(st)) < 0)
			return r;
		return run_hooks(ing, rep, now, &j->res.commands);
	}
	new_boot = rep->host_boot_id && as->host_boot_id &&
		   strcmp(rep->host_boot_id, as->host_boot_id) != 0;

	{
		char *inv = json_dumps(json_object_get(rep->doc, "inventory"),
				       JSON_COMPACT | JSON_SORT_KEYS);

		if (!inv)
			return -ENOMEM;
		j->inv_hash = hash_fnv1a64(inv, strlen(inv), HASH_FNV_OFFSET);
		free(inv);
	}
	if (j->inv_hash != as->inv_hash && (r = write_inventory(ing, rep, now, &j->left_out, &j->left_out_dev)) < 0)
		return r;
	/* (such an inventory is written with each report: a line per agent a minute) */
	if ((j->left_out || j->left_out_dev) && ratelimit_due(&left_out_log, rep->agent_id, tu_mono_ns(), NULL))
		log_warning("ingest",
			    "agent '%s': %u ports and %u devices not stored: it has %d ports or %d devices "
			    "stored (those gone too), the most one agent may have",
			    rep->agent_id, j->left_out, j->left_out_dev, INGEST_MAX_AGENT_PORTS,
			    INGEST_MAX_AGENT_DEVICES);

	buf_init(&blob);
	for (uint32_t p = 0; p < rep->nports; p++) {
		r = ingest_port(j, p, new_boot, &blob, &wv, &wvcap);
		if (r < 0)
			break;
	}
	buf_fini(&blob);
	free(wv);
	if (r < 0)
		return r;

	if (j->left_out || j->left_out_dev || rep->probe_endpoint_refused) {
		/* with what the agent met, what rocefabd did not take: rocefabctl agents AGENT and
		 * /metrics show it */
		json_t *all = rep->errors ? json_copy(rep->errors) : json_array();
		char msg[300];

		if (j->left_out || j->left_out_dev) {
			snprintf(msg, sizeof(msg),
				 "%u ports and %u devices not stored: rocefabd keeps at most %d ports and %d "
				 "devices of one agent (those gone too, ports with their data); forget the agent "
				 "once stopped (rocefabctl forget) to start it anew",
				 j->left_out, j->left_out_dev, INGEST_MAX_AGENT_PORTS, INGEST_MAX_AGENT_DEVICES);
			json_array_append_new(all, json_pack("{s:s,s:s}", "code", "PORTS_NOT_STORED", "message", msg));
		}
		if (rep->probe_endpoint_refused) {
			snprintf(msg, sizeof(msg),
				 "probe endpoint '%s' not handed to the hosts that probe this one: give "
				 "probe.listen this host's own address in digits, not a name, link-local, "
				 "multicast or broadcast address (loopback only when the agent reaches rocefabd "
				 "over loopback too)",
				 rep->probe_endpoint_refused);
			json_array_append_new(all,
					      json_pack("{s:s,s:s}", "code", "PROBE_ENDPOINT_REFUSED", "message", msg));
		}
		errors = all ? json_dumps(all, JSON_COMPACT) : NULL;
		json_decref(all);
	} else if (rep->errors) {
		errors = json_dumps(rep->errors, JSON_COMPACT);
	}
	if (!(st = store_stmt(ing->store, agent_sql))) {
		free(errors);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, report_role_name(rep->role), -1, SQLITE_STATIC);
	store_bind_text_or_null(st, 3, rep->hostname);
	sqlite3_bind_text(st, 4, rep->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, rep->backend, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, rep->boot_id, -1, SQLITE_STATIC);
	store_bind_text_or_null(st, 7, rep->host_boot_id);
	sqlite3_bind_int64(st, 8, rep->seq);
	sqlite3_bind_int64(st, 9, rep->interval_ms);
	sqlite3_bind_int64(st, 10, now);
	sqlite3_bind_int64(st, 11, seen);
	sqlite3_bind_int64(st, 12, rep->time_ns);
	sqlite3_bind_int64(st, 13, j->res.samples);
	sqlite3_bind_int64(st, 14, rep->unknown_values);
	sqlite3_bind_int64(st, 15, rep->spool_dropped);
	sqlite3_bind_int64(st, 16, rep->spool_queued);
	store_bind_text_or_null(st, 17, errors);
	r = store_step(st);
	free(errors);
	if (r < 0)
		return r;
	if (rep->qps && (r = write_qps(ing, rep)) < 0)
		return r;
	if (!(st = store_stmt(ing->store, boot_sql)))
		return -EIO;
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rep->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, rep->seq);
	sqlite3_bind_int64(st, 4, now);
	if ((r = store_step(st)) < 0)
		return r;
	if (j->inv_hash != as->inv_hash) {
		static const char counts_sql[] =
			"UPDATE agents SET "
			"devices = (SELECT count(*) FROM devices d WHERE d.agent_id = ?1 AND d.present), "
			"ports = (SELECT count(*) FROM ports p WHERE p.agent_id = ?1 AND p.present), "
			"ports_up = (SELECT count(*) FROM ports p WHERE p.agent_id = ?1 AND p.present "
			"AND p.state = 'up') WHERE id = ?1";

		if (!(st = store_stmt(ing->store, counts_sql)))
			return -EIO;
		sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
		if ((r = store_step(st)) < 0)
			return r;
	}

	if ((r = run_hooks(ing, rep, now, &j->res.commands)) < 0)
		return r;

	/* Everything is written: the caches follow. */
	j->res.ignored = rep->unknown_values;
	pthread_rwlock_wrlock(&ing->lock);
	for (uint32_t i = 0; i < j->nnew_ports; i++) {
		if (hmap_put(&ing->ports, j->new_ports[i]->key, j->new_ports[i], NULL) < 0) {
			/* out of memory: the port reloads from the database next time */
			port_state_free(j->new_ports[i]);
			for (uint32_t k = 0; k < j->npend; k++)
				if (j->pend[k].ps == j->new_ports[i])
					j->pend[k].ps = NULL;
		}
	}
	j->nnew_ports = 0;
	for (uint32_t i = 0; i < j->npend; i++) {
		struct port_state *ps = j->pend[i].ps;

		if (!ps) {
			free(j->pend[i].c);
			free(j->pend[i].add);
			continue;
		}
		free(ps->c);
		ps->c = j->pend[i].c;
		ps->n = j->pend[i].n;
		ps->t_ns = j->pend[i].t_ns;
		ps->seen_mono = tu_mono_ns();
		if (j->pend[i].row != ROW_LATE &&
		    codec_chain_push(&ps->chain, j->pend[i].add_t, j->pend[i].add, j->pend[i].nadd,
				     j->pend[i].row == ROW_NEXT) < 0)
			codec_chain_reset(&ps->chain); /* the next row full */
		if (rollup_advance(ing, ps, &j->pend[i]) < 0) {
			/* out of memory: the open minute is rebuilt from the database next time */
			hmap_del(&ing->ports, ps->key);
			port_state_free(ps);
		}
		free(j->pend[i].add);
	}
	j->npend = 0;
	if (!as->boot_id || strcmp(as->boot_id, rep->boot_id) != 0) {
		free(as->boot_id);
		as->boot_id = strdup(rep->boot_id);
	}
	as->last_seq = rep->seq;
	if (rep->host_boot_id && (!as->host_boot_id || new_boot)) {
		free(as->host_boot_id);
		as->host_boot_id = strdup(rep->host_boot_id);
	}
	/* (an inventory with ports left out is written again with each report: which are left
	 * out is known only then) */
	as->inv_hash = j->left_out || j->left_out_dev ? 0 : j->inv_hash;
	pthread_rwlock_unlock(&ing->lock);
	return 0;
}

static void ingest_done(struct store_job *sj, int result)
{
	struct ingest_job *j = (struct ingest_job *)sj;
	struct ingest *ing = j->ing;
	int64_t sec = tu_mono_ns() / NSEC_PER_SEC;

	j->res.status = result;
	if (result < 0) {
		/* rolled back: the pending cache content must not be used, and the commands were
		 * not marked as sent */
		j->res.samples = j->res.baseline = 0;
		json_decref(j->res.commands);
		j->res.commands = NULL;
	}
	pthread_mutex_lock(&ing->stats_lock);
	if (result < 0) {
		ing->stats.failed++;
	} else if (j->res.duplicate) {
		ing->stats.duplicates++;
	} else {
		unsigned b = (unsigned)(sec % 16);

		ing->stats.reports++;
		ing->stats.samples += j->res.samples;
		ing->stats.baseline += j->res.baseline;
		ing->stats.ignored += j->res.ignored;
		if (ing->sec_of_bucket[b] != sec) {
			ing->sec_of_bucket[b] = sec;
			ing->sec_bucket[b] = 0;
		}
		ing->sec_bucket[b] += j->res.samples;
	}
	pthread_mutex_unlock(&ing->stats_lock);

	if (result >= 0 && !j->res.duplicate)
		rwrite_enqueue(ing->rw, &j->rw, j->rw_n);
	buf_fini(&j->rw);
	if (j->cb)
		j->cb(j->ctx, &j->res); /* takes res.commands */
	else
		json_decref(j->res.commands);
	for (uint32_t i = 0; i < j->npend; i++) {
		free(j->pend[i].c);
		free(j->pend[i].add);
	}
	free(j->pend);
	for (uint32_t i = 0; i < j->nnew_ports; i++)
		port_state_free(j->new_ports[i]);
	free(j->new_ports);
	report_free(j->rep);
	free(j);
}

int ingest_submit(struct ingest *ing, struct report *rep, ingest_cb cb, void *ctx)
{
	struct ingest_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->job.apply = ingest_apply;
	j->job.done = ingest_done;
	j->ing = ing;
	j->rep = rep;
	j->cb = cb;
	j->ctx = ctx;
	r = store_submit(ing->store, &j->job);
	if (r < 0)
		free(j); /* rep stays with the caller */
	return r;
}

/* --- set-up ------------------------------------------------------------------------------ */

struct init_job {
	struct store_job job;
	struct ingest *ing;
	int result;
	bool finished;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* Gives every registry counter a stable db id (names are the contract; registry order is not). */
static int init_apply(struct store_job *sj, struct store *s)
{
	static const char ins[] = "INSERT OR IGNORE INTO counters(name) VALUES(?)";
	static const char sel[] = "SELECT id, name FROM counters WHERE name = ?";
	struct init_job *ij = (struct init_job *)sj;
	struct ingest *ing = ij->ing;
	size_t n = reg_size(ing->reg);
	sqlite3_stmt *st;
	int rc, r;

	for (size_t i = 0; i < n; i++) {
		const char *name = reg_counter(ing->reg, (unsigned)i)->name;

		if (!(st = store_stmt(s, ins)))
			return -EIO;
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		if ((r = store_step(st)) < 0)
			return r;
		if (!(st = store_stmt(s, sel)))
			return -EIO;
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			ing->dbid[i] = (uint32_t)sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (rc != SQLITE_ROW)
			return store_errno(rc);
		if (ing->dbid[i] > ing->max_dbid)
			ing->max_dbid = ing->dbid[i];
	}
	if (ing->max_dbid > 65535)
		return -EOVERFLOW;
	ing->by_dbid = calloc(ing->max_dbid + 1u, sizeof(*ing->by_dbid));
	if (!ing->by_dbid)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ing->by_dbid[ing->dbid[i]] = (uint16_t)(i + 1);
	return 0;
}

static void init_done(struct store_job *sj, int result)
{
	struct init_job *ij = (struct init_job *)sj;

	pthread_mutex_lock(&ij->lock);
	ij->result = result;
	ij->finished = true;
	pthread_cond_signal(&ij->cond);
	pthread_mutex_unlock(&ij->lock);
}

int ingest_new(struct store *s, const struct reg *reg, struct ingest **ret, struct rf_err *e)
{
	struct ingest *ing = calloc(1, sizeof(*ing));
	struct init_job ij = { .job = { .apply = init_apply, .done = init_done } };
	int r;

	if (!ing)
		return -ENOMEM;
	ing->store = s;
	ing->reg = reg;
	ing->idle_ns = 120 * (int64_t)1000000000;
	ing->dbid = calloc(reg_size(reg) + 1, sizeof(*ing->dbid));
	ing->max_rate = calloc(reg_size(reg) + 1, sizeof(*ing->max_rate));
	pthread_rwlock_init(&ing->lock, NULL);
	pthread_mutex_init(&ing->stats_lock, NULL);
	hmap_init(&ing->ports);
	hmap_init(&ing->agents);
	if (!ing->dbid || !ing->max_rate || idguard_new(&ing->idguard) < 0) {
		ingest_free(ing);
		return -ENOMEM;
	}
	for (size_t i = 0; i < reg_size(reg); i++)
		ing->max_rate[i] = delta_max_rate(reg_counter(reg, (unsigned)i)->unit, 1);

	ij.ing = ing;
	pthread_mutex_init(&ij.lock, NULL);
	pthread_cond_init(&ij.cond, NULL);
	r = store_submit(s, &ij.job);
	if (r == 0) {
		pthread_mutex_lock(&ij.lock);
		while (!ij.finished)
			pthread_cond_wait(&ij.cond, &ij.lock);
		pthread_mutex_unlock(&ij.lock);
		r = ij.result;
	}
	pthread_cond_destroy(&ij.cond);
	pthread_mutex_destroy(&ij.lock);
	if (r < 0) {
		rf_err_set(e, r, "STORE_ERROR", store_path(s), "cannot register counter names");
		ingest_free(ing);
		return r;
	}
	store_set_rollback_hook(s, on_rollback, ing);
	*ret = ing;
	return 0;
}

void ingest_free(struct ingest *ing)
{
	if (!ing)
		return;
	if (ing->store)
		store_set_rollback_hook(ing->store, NULL, NULL);
	drop_caches_locked(ing);
	hmap_fini(&ing->ports);
	hmap_fini(&ing->agents);
	pthread_rwlock_destroy(&ing->lock);
	pthread_mutex_destroy(&ing->stats_lock);
	free(ing->dbid);
	free(ing->by_dbid);
	free(ing->max_rate);
	idguard_free(ing->idguard);
	free(ing);
}

struct idguard *ingest_idguard(struct ingest *ing)
{
	return ing->idguard;
}

/* --- forgetting an agent --------------------------------------------------------------------- */

/* Rows of samples or rollups a forgetting job deletes at most: an agent's data goes in steps
 * of its own writer jobs (a 64-port switch's 6 h of raw samples are 1.4 M rows, 2 s in one
 * job), so reports are stored between them. */
#define FORGET_STEP_ROWS 20000

struct forget_job {
	struct store_job job;
	struct ingest *ing;
	char *id;
	struct views_opts o; /* now_ns: the step's */
	int64_t now0, mono0; /* the request's time */
	int64_t ports, rows; /* forgotten */
	int64_t rows_before; /* by the steps before this one */
	bool more;	     /* a step deleted all it may: another follows */
	struct rf_err err;
	const struct ingest_forget_cb *cb;
	void *ctx;
};

static bool port_of_agent(const char *key, void *val, void *ctx)
{
	struct port_state *ps = val;

	(void)key;
	if (strcmp(ps->agent, ctx))
		return false;
	port_state_free(ps);
	return true;
}

/* " (N rows of its data went before)" when steps before deleted some, else "": for an error. */
static void went_before(const struct forget_job *j, char *buf, size_t len)
{
	buf[0] = '\0';
	if (j->rows)
		snprintf(buf, len, " (%lld rows of its data went before)", (long long)j->rows);
}

/* Deletes the agent's samples, then its rollups, FORGET_STEP_ROWS at a time, a step a job;
 * then, at the last, what names it.  Each step checks again that the agent may be forgotten:
 * one that reports again meanwhile keeps the rest. */
static int forget_apply(struct store_job *sj, struct store *s)
{
	static const char *const step[] = {
		"DELETE FROM samples WHERE (port_id, t_ns) IN (SELECT port_id, t_ns FROM samples WHERE port_id IN "
		"(SELECT id FROM ports WHERE agent_id = ?1) LIMIT ?2)",
		/* (res named: the key (res, port_id, t_ns), not a scan of every rollup) */
		"DELETE FROM rollups WHERE rowid IN (SELECT rowid FROM rollups WHERE res IN (60, -60, 3600, -3600) AND "
		"port_id IN (SELECT id FROM ports WHERE agent_id = ?1) LIMIT ?2)",
	};
	/* its data gone, what names it; the audit log (changes, alerts, the settings log) keeps
	 * what happened to it */
	static const char *const del[] = {
		"DELETE FROM total_offsets WHERE port_id IN (SELECT id FROM ports WHERE agent_id = ?1)",
		"DELETE FROM ports WHERE agent_id = ?1",
		"DELETE FROM devices WHERE agent_id = ?1",
		"DELETE FROM configs WHERE agent_id = ?1",
		"DELETE FROM qps WHERE agent_id = ?1",
		"DELETE FROM agent_boots WHERE agent_id = ?1",
		"DELETE FROM agents WHERE id = ?1",
	};
	static const char get_sql[] =
		"SELECT last_seen_ns, interval_ms, (SELECT count(*) FROM ports WHERE agent_id = ?1), (SELECT count(*) "
		"FROM changes WHERE agent_id = ?1 AND (state IN ('pending', 'sent') OR in_doubt = 1)) FROM agents "
		"WHERE id = ?1";
	struct forget_job *j = (struct forget_job *)sj;
	sqlite3_stmt *st = store_stmt(s, get_sql);
	int64_t seen, interval, open;
	char done[80] = "";
	int rc;

	j->more = false;
	if (!st)
		return -EIO;
	went_before(j, done, sizeof(done));
	sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		return rc == SQLITE_DONE ? rf_err_set(&j->err, -ENOENT, "UNKNOWN_AGENT", NULL, "no agent '%s'%s", j->id,
						      done)
					 : store_errno(rc);
	}
	seen = sqlite3_column_int64(st, 0);
	interval = sqlite3_column_int64(st, 1);
	j->ports = sqlite3_column_int64(st, 2);
	open = sqlite3_column_int64(st, 3);
	sqlite3_reset(st);
	if (strcmp(views_agent_status(&j->o, seen, interval), "stale"))
		return rf_err_set(&j->err, -EALREADY, "AGENT_ACTIVE", NULL,
				  "agent '%s' reported %.1f s ago: it is not gone (forgetting is for an agent gone for "
				  "good: stop it, and forget it once it is stale)%s",
				  j->id, (double)(j->o.now_ns - seen) / 1e9, done);
	if (open)
		return rf_err_set(&j->err, -EALREADY, "CHANGES_OPEN", NULL,
				  "agent '%s' has %lld configuration changes pending, sent or in doubt: settle them "
				  "first (rocefabctl changes --agent %s; rocefabctl settle)%s",
				  j->id, (long long)open, j->id, done);
	for (size_t i = 0, room = FORGET_STEP_ROWS; i < ARRAY_SIZE(step); i++) {
		int64_t n;

		if (!(st = store_stmt(s, step[i])))
			return -EIO;
		sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)room);
		if ((rc = store_step(st)) < 0)
			return rc;
		n = sqlite3_changes(store_writer_db(s));
		j->rows += n;
		if ((room -= (size_t)n) == 0) { /* (FORGET_STEP_ROWS a step in all) */
			j->more = true;
			return 0;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(del); i++) {
		if (!(st = store_stmt(s, del[i])))
			return -EIO;
		sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
		if ((rc = store_step(st)) < 0)
			return rc;
		j->rows += sqlite3_changes(store_writer_db(s));
	}
	/* its caches (the writer's; a failed commit drops every cache anyway) */
	pthread_rwlock_wrlock(&j->ing->lock);
	hmap_sweep(&j->ing->ports, port_of_agent, (void *)j->id);
	agent_state_free(hmap_del(&j->ing->agents, j->id));
	pthread_rwlock_unlock(&j->ing->lock);
	return 0;
}

/* The end of a forgetting: its answer to the caller, and the job freed. */
static void forget_end(struct forget_job *j, int r)
{
	json_t *doc = NULL;
	char done[80] = "";

	went_before(j, done, sizeof(done));
	if (r == 0 && !(doc = json_pack("{s:s,s:I,s:I}", "forgotten", j->id, "ports", (json_int_t)j->ports, "rows",
				       (json_int_t)j->rows)))
		r = -ENOMEM;
	if (r == -ECANCELED || r == -ESHUTDOWN)
		rf_err_set(&j->err, -EAGAIN, "SHUTTING_DOWN", NULL,
			   "rocefabd is stopping: agent '%s' is forgotten in part%s; forget it again once it is back",
			   j->id, done);
	else if (r < 0 && !j->err.code[0])
		rf_err_set(&j->err, r, r == -EAGAIN ? "BUSY" : "STORE_ERROR", NULL,
			   "agent '%s' could not be forgotten%s: %s; forget it again", j->id, done, strerror(-r));
	j->cb->done(j->ctx, r, doc, &j->err);
	free(j->id);
	free(j);
}

static void forget_done(struct store_job *sj, int result)
{
	struct forget_job *j = (struct forget_job *)sj;

	if (result < 0)
		j->rows = j->rows_before; /* (the step was rolled back) */
	if (result == 0 && j->more) {
		if (j->cb->go_on && !j->cb->go_on(j->ctx)) {
			result = -ECANCELED;
		} else {
			j->o.now_ns = j->now0 + (tu_mono_ns() - j->mono0); /* each step at its time */
			j->rows_before = j->rows;
			memset(&j->err, 0, sizeof(j->err));
			if ((result = store_submit_next(j->ing->store, &j->job)) == 0)
				return;
		}
	}
	forget_end(j, result);
}

int ingest_forget_agent(struct ingest *ing, const char *id, const struct views_opts *o,
			const struct ingest_forget_cb *cb, void *ctx, struct rf_err *e)
{
	struct forget_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j || !(j->id = strdup(id))) {
		free(j);
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	}
	*j = (struct forget_job){ .job = { .apply = forget_apply, .done = forget_done }, .ing = ing, .id = j->id,
				  .o = *o, .now0 = o->now_ns, .mono0 = tu_mono_ns(), .cb = cb, .ctx = ctx };
	if ((r = store_submit(ing->store, &j->job)) < 0) {
		free(j->id);
		free(j);
		return store_write_failed(r, "the agent could not be forgotten", e);
	}
	return 0;
}

uint32_t ingest_counter_dbid(const struct ingest *ing, unsigned reg_id)
{
	return reg_id < reg_size(ing->reg) ? ing->dbid[reg_id] : 0;
}

const struct reg_counter *ingest_counter_by_dbid(const struct ingest *ing, uint32_t dbid)
{
	if (!ing->by_dbid || dbid > ing->max_dbid || !ing->by_dbid[dbid])
		return NULL;
	return reg_counter(ing->reg, ing->by_dbid[dbid] - 1u);
}

const struct reg *ingest_registry(const struct ingest *ing)
{
	return ing->reg;
}

void ingest_get_stats(struct ingest *ing, struct ingest_stats *ret)
{
	ingest_get_stats_at(ing, tu_mono_ns(), ret);
}

void ingest_get_stats_at(struct ingest *ing, int64_t mono_ns, struct ingest_stats *ret)
{
	int64_t sec = mono_ns / NSEC_PER_SEC;
	uint64_t sum = 0;

	pthread_mutex_lock(&ing->stats_lock);
	*ret = ing->stats;
	/* the ten full seconds before the current one; none before the clock's zero (a machine
	 * booted less than 10 s ago: a negative second would index outside the buckets) */
	for (int64_t s = sec >= 10 ? sec - 10 : 0; s < sec; s++) {
		unsigned b = (unsigned)(s % 16);

		if (ing->sec_of_bucket[b] == s)
			sum += ing->sec_bucket[b];
	}
	pthread_mutex_unlock(&ing->stats_lock);
	ret->samples_per_s = (double)sum / 10.0;
}

/* --- open minutes of silent ports ----------------------------------------------------------- */

struct idle_job {
	struct store_job job;
	struct ingest *ing;
	int64_t idle_ns;
	unsigned flushed;
};

static int idle_apply(struct store_job *sj, struct store *s)
{
	struct idle_job *ij = (struct idle_job *)sj;
	struct ingest *ing = ij->ing;
	int64_t now = tu_mono_ns();
	size_t it = 0;
	void *v;
	int r = 0;

	(void)s;
	/* (the writer thread's own state: only ingest jobs, on this thread, change it) */
	while (r == 0 && hmap_next(&ing->ports, &it, NULL, &v)) {
		struct port_state *ps = v;

		if (!ps->acc.n || now - ps->seen_mono < ij->idle_ns)
			continue;
		if ((r = rollup_flush(ing, ps, &ps->acc)) == 0) {
			/* like an ingest job's cache, changed with the writes: a failed commit drops
			 * every cache (on_rollback), and the minute is rebuilt from the database */
			pthread_rwlock_wrlock(&ing->lock);
			rollup_reset(&ps->acc, 0);
			pthread_rwlock_unlock(&ing->lock);
			ij->flushed++;
		}
	}
	return r;
}

static void idle_done(struct store_job *sj, int result)
{
	struct idle_job *ij = (struct idle_job *)sj;

	if (result < 0)
		log_warning("ingest", "writing the open minutes of %s failed: %s",
			    ij->idle_ns ? "silent ports" : "every port at the stop", strerror(-result));
	else if (ij->flushed && !ij->idle_ns)
		log_info("ingest", "wrote the open minute of %u port%s", ij->flushed, ij->flushed == 1 ? "" : "s");
	else if (ij->flushed)
		log_debug("ingest", "wrote the open minute of %u silent ports", ij->flushed);
	free(ij);
}

void ingest_set_rwrite(struct ingest *ing, struct rwrite *rw)
{
	ing->rw = rw;
}

void ingest_set_idle(struct ingest *ing, int64_t idle_ns)
{
	ing->idle_ns = idle_ns;
}

struct compact_job {
	struct store_job job;
	struct ingest *ing;
};

static int compact_apply(struct store_job *sj, struct store *s)
{
	struct compact_job *cj = (struct compact_job *)sj;
	int r;

	(void)s;
	/* (the writer thread's own state, as idle_apply's) */
	r = compact_some(cj->ing, INGEST_COMPACT_PORTS);
	return r < 0 ? r : 0;
}

static void compact_done(struct store_job *sj, int result)
{
	if (result < 0)
		log_warning("ingest", "writing closed hours into their blocks failed: %s; trying "
				      "again", strerror(-result));
	free(sj);
}

int ingest_compact(void *ctx, int64_t now)
{
	struct ingest *ing = ctx;
	struct compact_job *cj;
	int r;

	(void)now;
	if (!__atomic_load_n(&ing->compact_due, __ATOMIC_RELAXED))
		return 0;
	if (!(cj = calloc(1, sizeof(*cj))))
		return -ENOMEM;
	cj->job.apply = compact_apply;
	cj->job.done = compact_done;
	cj->ing = ing;
	if ((r = store_submit(ing->store, &cj->job)) < 0)
		free(cj);
	return r;
}

/* The open minutes of the ports silent for idle_ns (0: of every port). */
static int flush_open(struct ingest *ing, int64_t idle_ns)
{
	struct idle_job *ij = calloc(1, sizeof(*ij));
	int r;

	if (!ij)
		return -ENOMEM;
	ij->job.apply = idle_apply;
	ij->job.done = idle_done;
	ij->ing = ing;
	ij->idle_ns = idle_ns;
	if ((r = store_submit(ing->store, &ij->job)) < 0)
		free(ij);
	return r;
}

int ingest_flush_idle(void *ctx, int64_t now)
{
	struct ingest *ing = ctx;

	(void)now;
	return flush_open(ing, ing->idle_ns);
}

int ingest_flush_open(struct ingest *ing)
{
	return flush_open(ing, 0);
}

/* --- /metrics ---------------------------------------------------------------------------- */

int ingest_render_metrics(struct ingest *ing, uint8_t prio_mask, struct buf *out)
{
	struct port_state **ports = NULL;
	size_t nports = 0, it = 0;
	void *v;

	pthread_rwlock_rdlock(&ing->lock);
	ports = malloc((ing->ports.len + 1) * sizeof(*ports));
	if (!ports) {
		pthread_rwlock_unlock(&ing->lock);
		return -ENOMEM;
	}
	while (hmap_next(&ing->ports, &it, NULL, &v))
		ports[nports++] = v;
	for (size_t c = 0; c < reg_size(ing->reg); c++) {
		const struct reg_counter *rc = reg_counter(ing->reg, (unsigned)c);
		bool counter = rc->kind == REG_KIND_COUNTER;
		bool header = false;

		for (size_t p = 0; p < nports; p++) {
			const struct port_state *ps = ports[p];

			for (uint32_t k = 0; k < ps->n; k++) {
				const struct cstate *cs = &ps->c[k];
				char prio[24] = "";

				if (cs->counter != c || !cs->scale)
					continue;
				if (cs->prio != REG_NO_PRIO &&
				    (cs->prio > 7 || !(prio_mask & (1u << cs->prio))))
					continue;
				if (!header) {
					buf_printf(out, "# HELP rocefab_port_%s%s %s\n# TYPE rocefab_port_%s%s %s\n",
						   rc->metric, counter ? "_total" : "", rc->help,
						   rc->metric, counter ? "_total" : "",
						   counter ? "counter" : "gauge");
					header = true;
				}
				if (cs->prio != REG_NO_PRIO)
					snprintf(prio, sizeof(prio), ",priority=\"%u\"", cs->prio);
				buf_printf(out, "rocefab_port_%s%s{host=\"%s\",device=\"%s\",port=\"%s\"%s} ",
					   rc->metric, counter ? "_total" : "", ps->agent, ps->device,
					   ps->port, prio);
				if (rc->metric_scale == 1.0)
					buf_printf(out, "%" PRIu64 "\n", counter ? cs->total : cs->raw);
				else
					buf_printf(out, "%.9g\n",
						   (double)(counter ? cs->total : cs->raw) * rc->metric_scale);
			}
		}
	}
	pthread_rwlock_unlock(&ing->lock);
	free(ports);
	return out->oom ? -ENOMEM : 0;
}
