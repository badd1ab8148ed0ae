/* Storage: see store.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/store.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

struct stmt_cache {
	struct hmap map; /* sql text -> sqlite3_stmt */
};

struct store_reader {
	sqlite3 *db;
	struct stmt_cache cache;
	struct store_reader *next;
	bool nested; /* the writer's connection, inside a job's transaction (store_writer_reader) */
};

/* Rows of a transaction reported to the watcher: each (table, row) once, at most WATCH_MAX of a
 * table; beyond, one report for that table with rowid 0 ("many").  Tables: at most
 * WATCH_TABLES (watched and noted together). */
#define WATCH_MAX 1024
#define WATCH_TABLES 4
#define WATCH_SLOTS 8192 /* of the set that finds repeats: a power of two above all rows */

struct store {
	char *path;
	int lock_fd; /* DB.lock, flock()ed by the one rocefabd writing the database (-1: none) */
	bool failing; /* the last transaction failed (the writer's) */
	sqlite3 *wdb;
	struct stmt_cache wcache;
	struct store_reader wreader; /* store_writer_reader() */
	unsigned queue_max, batch_max, readers_max;

	pthread_mutex_t lock;
	pthread_cond_t cond_work; /* writer waits for jobs */
	pthread_cond_t cond_done; /* flushers wait for progress */
	struct store_job *head, *tail;
	unsigned depth, peak;
	uint64_t submitted, completed; /* job counts, for store_flush() */
	bool stopping, running;
	pthread_t writer;

	struct store_reader *free_readers;
	unsigned nfree_readers;

	void (*rollback_fn)(void *ctx);
	void *rollback_ctx;

	/* store_set_watch(), store_note_row(): rows of the open transaction, reported after
	 * COMMIT, each once (watch_seen: a hash set of indices into watched, 0 empty) */
	const char *const *watch_tables;
	void (*watch_fn)(void *ctx, const char *table, int64_t rowid);
	void *watch_ctx;
	struct watched { const char *table; int64_t rowid; } *watched;
	uint16_t *watch_seen;
	size_t nwatched;
	struct { const char *table; unsigned rows; bool many; } wtab[WATCH_TABLES]; /* per table */

	struct store_stats stats;
};

/* --- migrations ------------------------------------------------------------------------ */

/* Each entry moves the schema from version i to i+1.  Never edit a released entry: add one. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
	"CREATE TABLE agents("
	"  id TEXT PRIMARY KEY, role TEXT NOT NULL, hostname TEXT, version TEXT, backend TEXT,"
	"  boot_id TEXT NOT NULL, host_boot_id TEXT, seq INTEGER NOT NULL,"
	"  interval_ms INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,"
	"  last_seen_ns INTEGER NOT NULL, last_report_ns INTEGER NOT NULL,"
	"  reports INTEGER NOT NULL DEFAULT 0, samples INTEGER NOT NULL DEFAULT 0,"
	"  duplicates INTEGER NOT NULL DEFAULT 0, ignored_values INTEGER NOT NULL DEFAULT 0,"
	"  spool_dropped INTEGER NOT NULL DEFAULT 0, spool_queued INTEGER NOT NULL DEFAULT 0,"
	"  errors TEXT) WITHOUT ROWID;"
	"CREATE TABLE agent_boots(agent_id TEXT NOT NULL, boot_id TEXT NOT NULL,"
	"  last_seq INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,"
	"  PRIMARY KEY(agent_id, boot_id)) WITHOUT ROWID;"
	"CREATE TABLE devices(id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, name TEXT NOT NULL,"
	"  kind TEXT NOT NULL, driver TEXT, fw_version TEXT, node_guid TEXT,"
	"  present INTEGER NOT NULL DEFAULT 1, last_seen_ns INTEGER NOT NULL,"
	"  UNIQUE(agent_id, name));"
	"CREATE TABLE ports(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,"
	"  agent_id TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL, netdev TEXT,"
	"  state TEXT NOT NULL, speed_mbps INTEGER, mtu INTEGER, link_layer TEXT,"
	"  present INTEGER NOT NULL DEFAULT 1, first_seen_ns INTEGER NOT NULL,"
	"  last_seen_ns INTEGER NOT NULL);"
	"CREATE INDEX ports_agent ON ports(agent_id, device, port);"
	"CREATE TABLE counters(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	"CREATE TABLE samples(port_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
	"  n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(port_id, t_ns)) WITHOUT ROWID;"
	"CREATE TABLE tokens(name TEXT PRIMARY KEY, role TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
	"  created_ns INTEGER NOT NULL, revoked_ns INTEGER) WITHOUT ROWID;",
	/* 1 -> 2: device and port counts kept with the agent (written when an inventory changes,
	 * read by every host listing) */
	"ALTER TABLE agents ADD COLUMN devices INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agents ADD COLUMN ports INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agents ADD COLUMN ports_up INTEGER NOT NULL DEFAULT 0;"
	"UPDATE agents SET"
	"  devices = (SELECT count(*) FROM devices d WHERE d.agent_id = agents.id AND d.present),"
	"  ports = (SELECT count(*) FROM ports p WHERE p.agent_id = agents.id AND p.present),"
	"  ports_up = (SELECT count(*) FROM ports p WHERE p.agent_id = agents.id AND p.present"
	"              AND p.state = 'up');",
	/* 2 -> 3: neighbours of ports (links), device configuration as last reported, and the
	 * audit log of configuration changes (which doubles as the agents' command queue) */
	"ALTER TABLE ports ADD COLUMN peer_system TEXT;"
	"ALTER TABLE ports ADD COLUMN peer_port TEXT;"
	"CREATE INDEX ports_peer ON ports(peer_system, peer_port);"
	"CREATE TABLE configs(agent_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL,"
	"  port TEXT NOT NULL, queue INTEGER NOT NULL DEFAULT -1, value TEXT NOT NULL,"
	"  t_ns INTEGER NOT NULL, PRIMARY KEY(agent_id, kind, device, port, queue)) WITHOUT ROWID;"
	"CREATE TABLE changes(id INTEGER PRIMARY KEY AUTOINCREMENT, batch INTEGER NOT NULL,"
	"  created_ns INTEGER NOT NULL, actor TEXT NOT NULL, reason TEXT,"
	"  agent_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL,"
	"  queue INTEGER NOT NULL DEFAULT -1, params TEXT NOT NULL, old TEXT, new TEXT,"
	"  state TEXT NOT NULL, error TEXT, deadline_ns INTEGER NOT NULL, sent_ns INTEGER,"
	"  updated_ns INTEGER NOT NULL);"
	"CREATE INDEX changes_open ON changes(agent_id, state);"
	"CREATE INDEX changes_object ON changes(agent_id, kind, device, port, queue, id);"
	"CREATE INDEX changes_batch ON changes(batch);",
	/* 3 -> 4: pingmesh results and alerts */
	"CREATE TABLE probe_results(src TEXT NOT NULL, dst TEXT NOT NULL, label INTEGER NOT NULL,"
	"  t_ns INTEGER NOT NULL, op TEXT NOT NULL, size INTEGER NOT NULL, n INTEGER NOT NULL,"
	"  ok INTEGER NOT NULL, lost INTEGER NOT NULL, min_us REAL, p50_us REAL, p99_us REAL,"
	"  max_us REAL, mean_us REAL, path TEXT, PRIMARY KEY(src, dst, label, t_ns)) WITHOUT ROWID;"
	"CREATE INDEX probe_results_t ON probe_results(t_ns);"
	"CREATE TABLE alerts(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,"
	"  subject TEXT NOT NULL, state TEXT NOT NULL, first_ns INTEGER NOT NULL,"
	"  last_ns INTEGER NOT NULL, cleared_ns INTEGER, evidence TEXT);"
	"CREATE INDEX alerts_active ON alerts(state, kind, subject);",
	/* 4 -> 5: a round probes each target with several ops and sizes, so they are part of a
	 * result's key; and the key starts with the time: the matrix reads a window of the newest
	 * rounds and the pruning deletes the oldest, both contiguous (through an index on the
	 * time, every row of a window cost a second lookup); by pair through the index */
	"CREATE TABLE probe_results_5(src TEXT NOT NULL, dst TEXT NOT NULL, op TEXT NOT NULL,"
	"  size INTEGER NOT NULL, label INTEGER NOT NULL, t_ns INTEGER NOT NULL, n INTEGER NOT NULL,"
	"  ok INTEGER NOT NULL, lost INTEGER NOT NULL, min_us REAL, p50_us REAL, p99_us REAL,"
	"  max_us REAL, mean_us REAL, path TEXT,"
	"  PRIMARY KEY(t_ns, src, dst, op, size, label)) WITHOUT ROWID;"
	"INSERT INTO probe_results_5 SELECT src, dst, op, size, label, t_ns, n, ok, lost, min_us,"
	"  p50_us, p99_us, max_us, mean_us, path FROM probe_results;"
	"DROP TABLE probe_results;"
	"ALTER TABLE probe_results_5 RENAME TO probe_results;"
	"CREATE INDEX probe_results_pair ON probe_results(src, dst, t_ns);",
	/* 5 -> 6: an agent token names the agent ids it may report as (daemon/tokens.h); NULL:
	 * not bound, any agent (every token made before this version) */
	"ALTER TABLE tokens ADD COLUMN agents TEXT;",
	/* 6 -> 7: the PFC detector's alerts carry their evidence as JSON (details: ports in
	 * cycle order, victims, the suggested action, a cause they are attributed to) and can
	 * be acknowledged */
	"ALTER TABLE alerts ADD COLUMN details TEXT;"
	"ALTER TABLE alerts ADD COLUMN acked_ns INTEGER;"
	"ALTER TABLE alerts ADD COLUMN acked_by TEXT;",
	/* 7 -> 8: the QP table of each host as last reported, and how many of its QPs entered
	 * the error state, all reports added up */
	"CREATE TABLE qps(agent_id TEXT PRIMARY KEY, t_ns INTEGER NOT NULL, doc TEXT NOT NULL,"
	"  errors_total INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;",
	/* 8 -> 9: per-minute and per-hour rollups of every port's samples (daemon/rollup.h):
	 * res is the bucket's width in seconds (60, 3600), t_ns its start; n the entries.  A rowid
	 * table with a unique key, not WITHOUT ROWID: a row of a few kilobytes would not fit in an
	 * index b-tree's page (at most ~1,000 bytes of a 4 KiB page stay local) and every row
	 * would take an overflow page; measured by make bench: 4.7 KB on disk for a 2.1 KB row */
	"CREATE TABLE rollups(res INTEGER NOT NULL, port_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
	"  n INTEGER NOT NULL, data BLOB NOT NULL, UNIQUE(res, port_id, t_ns));",
	/* 9 -> 10: a change validated counting changes still out on its object goes only once
	 * they are applied, and fails when one of them does not (after_ids: their ids, a JSON
	 * array, or NULL; daemon/changes.h); the open changes of an object, without its history */
	"ALTER TABLE changes ADD COLUMN after_ids TEXT;"
	"CREATE INDEX changes_out ON changes(agent_id, device, port, kind, queue, id) "
	"  WHERE state IN ('pending', 'sent');",
	/* 10 -> 11: a sent change timed out without an outcome may have been applied all the
	 * same: in_doubt 1 until a report its agent made after the deadline (daemon/changes.c);
	 * sent_boot: the agent's boot it was first sent to.  Those timed out before, whose agent
	 * has made no report since the deadline, are in doubt from now (sent to its boot then). */
	"ALTER TABLE changes ADD COLUMN in_doubt INTEGER;"
	"ALTER TABLE changes ADD COLUMN sent_boot TEXT;"
	"UPDATE changes SET in_doubt = 1, sent_boot = (SELECT a.boot_id FROM agents a WHERE a.id = agent_id) "
	"  WHERE state = 'timed_out' AND sent_ns IS NOT NULL AND "
	"  deadline_ns >= (SELECT a.last_report_ns FROM agents a WHERE a.id = agent_id);"
	"CREATE INDEX changes_doubt ON changes(agent_id, device, port, kind, queue, id) WHERE in_doubt = 1;",
	/* 11 -> 12: the settings log: who changed a settings document through the API (the
	 * tuner's policy, the detector's and the pingmesh's configuration), when and why, with the
	 * document before (NULL: none saved) and after (store_meta_put_w) */
	"CREATE TABLE settings_log(id INTEGER PRIMARY KEY AUTOINCREMENT, t_ns INTEGER NOT NULL,"
	"  key TEXT NOT NULL, actor TEXT NOT NULL, reason TEXT, old TEXT, new TEXT NOT NULL);"
	"CREATE INDEX settings_log_key ON settings_log(key, id);",
	/* 12 -> 13: the mitigations operators asked for on an alert (alerts_mitigated): a JSON
	 * array of {by, at, reason, change}, oldest first; NULL: none.  A change in doubt an
	 * operator settled (changes_settle): who, why and what they said */
	"ALTER TABLE alerts ADD COLUMN mitigations TEXT;"
	"ALTER TABLE changes ADD COLUMN settled_by TEXT;"
	"ALTER TABLE changes ADD COLUMN settled_reason TEXT;"
	"ALTER TABLE changes ADD COLUMN settled_applied INTEGER;"
	"ALTER TABLE changes ADD COLUMN settled_ns INTEGER;",
	/* 13 -> 14: when a port's state last changed (as reported; NULL: not known), and whether
	 * it was ever up while rocefabd watched: a port that was up and is down raises a
	 * port_down alert (daemon/portwatch.h); one never up is unused, not a fault */
	"ALTER TABLE ports ADD COLUMN state_ns INTEGER;"
	"ALTER TABLE ports ADD COLUMN was_up INTEGER NOT NULL DEFAULT 0;"
	"UPDATE ports SET was_up = 1 WHERE state = 'up';",
	/* 14 -> 15: what a counter's /metrics _total is above raw x scale (the wraps and resets
	 * it has counted across), written with the sample row that changed it, so that the total
	 * goes on from where it was when rocefabd starts again (daemon/ingest.c); no row: 0 */
	"CREATE TABLE total_offsets(port_id INTEGER NOT NULL, counter INTEGER NOT NULL,"
	"  prio INTEGER NOT NULL, value INTEGER NOT NULL, PRIMARY KEY(port_id, counter, prio)) WITHOUT ROWID;",
};
_Static_assert(ARRAY_SIZE(migrations) == STORE_SCHEMA_VERSION,
	       "STORE_SCHEMA_VERSION is the number of migrations");

int store_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	default:
		return -EIO;
	}
}

int store_exec(sqlite3 *db, const char *sql, struct rf_err *e)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		int r = rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "%s",
				   msg ? msg : sqlite3_errstr(rc));

		sqlite3_free(msg);
		return r;
	}
	return 0;
}

static int migrate(sqlite3 *db, struct rf_err *e)
{
	sqlite3_stmt *st;
	int version, r;

	/* the change path's queries read JSON arrays (json_each, daemon/changes.c): an sqlite built
	 * without its JSON functions would fail them on every report */
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM json_each('[1]')", -1, &st, NULL) != SQLITE_OK)
		return rf_err_set(e, -EIO, "STORE_ERROR", NULL, "this sqlite (%s) has no JSON functions: %s",
				  sqlite3_libversion(), sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return rf_err_set(e, -EIO, "STORE_ERROR", NULL, "%s", sqlite3_errmsg(db));
	sqlite3_step(st);
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > (int)ARRAY_SIZE(migrations))
		return rf_err_set(e, -EPROTO, "STORE_TOO_NEW", NULL,
				  "database schema version %d is newer than this rocefabd (%d); "
				  "use a newer rocefabd",
				  version, (int)ARRAY_SIZE(migrations));
	/* (a new database is made by the same steps, said once: an operator's trial read the
	 * first "rocefabd token add" print 15 lines of migrations) */
	if (!version)
		log_info("store", "creating the database schema (version %d)", (int)ARRAY_SIZE(migrations));
	for (int v = version; v < (int)ARRAY_SIZE(migrations); v++) {
		char sql[64];

		if (version)
			log_info("store", "migrating database schema from version %d to %d", v, v + 1);
		if ((r = store_exec(db, "BEGIN IMMEDIATE", e)) < 0)
			return r;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if ((r = store_exec(db, migrations[v], e)) < 0 || (r = store_exec(db, sql, e)) < 0) {
			store_exec(db, "ROLLBACK", NULL);
			return r;
		}
		if ((r = store_exec(db, "COMMIT", e)) < 0)
			return r;
	}
	return 0;
}

/* --- statement caches ------------------------------------------------------------------ */

static void cache_fini(struct stmt_cache *c)
{
	size_t it = 0;
	void *v;

	while (hmap_next(&c->map, &it, NULL, &v))
		sqlite3_finalize(v);
	hmap_fini(&c->map);
}

static sqlite3_stmt *cache_get(struct stmt_cache *c, sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = hmap_get(&c->map, sql);

	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		log_error("store", "cannot prepare statement: %s (%s)", sqlite3_errmsg(db), sql);
		return NULL;
	}
	/* sqlite keeps the SQL text alive as long as the statement */
	if (hmap_put(&c->map, sqlite3_sql(st), st, NULL) < 0) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

sqlite3_stmt *store_stmt(struct store *s, const char *sql)
{
	return cache_get(&s->wcache, s->wdb, sql);
}

sqlite3 *store_writer_db(struct store *s)
{
	return s->wdb;
}

/* --- connections ----------------------------------------------------------------------- */

/* The database holds the tokens' hashes, the audit log and the fabric's layout: it is its
 * owner's alone.  A new one is created 0600 before sqlite opens it (sqlite gives its -wal and
 * -shm files the database file's mode).  An existing one that group or others may read is
 * left as it is, with a warning: changing an operator's file mode behind their back is not
 * this program's call. */
static int create_private(const char *path, struct rf_err *e)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	int fd;

	if (!strcmp(path, ":memory:") || !strncmp(path, "file:", 5))
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EEXIST)
		return rf_err_set(e, -errno, "STORE_UNAVAILABLE", path, "cannot create the database: %s",
				  strerror(errno));
	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
		char name[PATH_MAX];
		struct stat st;

		if (snprintf(name, sizeof(name), "%s%s", path, suffixes[i]) >= (int)sizeof(name) ||
		    stat(name, &st) < 0 || !(st.st_mode & 066))
			continue;
		log_msg(LOG_WARNING, "store", "STORE_FILE_MODE",
			"%s is open to other users (mode %04o), and stays so: chmod 600 %s", name,
			(unsigned)(st.st_mode & 07777), name);
	}
	return 0;
}


/* The collation "natsort": str_natcmp, then bytes (a total order: "h01" and "h1" differ). */
static int natural_collation(void *ctx, int la, const void *a, int lb, const void *b)
{
	int c = str_natcmp_n(a, (size_t)la, b, (size_t)lb);

	(void)ctx;
	if (c)
		return c;
	c = memcmp(a, b, (size_t)(la < lb ? la : lb));
	return c ? c : (la > lb) - (la < lb);
}

static int open_db(const char *path, bool readonly, bool sync_full, sqlite3 **ret,
		   struct rf_err *e)
{
	int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
		    SQLITE_OPEN_NOMUTEX;
	sqlite3 *db = NULL;
	int rc, r;

	if (!readonly && (r = create_private(path, e)) < 0)
		return r;
	rc = sqlite3_open_v2(path, &db, flags, NULL);
	if (rc != SQLITE_OK) {
		r = rf_err_set(e, store_errno(rc), "STORE_UNAVAILABLE", path, "cannot open database: %s",
			       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return r;
	}
	sqlite3_busy_timeout(db, 10000);
	sqlite3_extended_result_codes(db, 1);
	/* lists for people in natural order (h2 before h10, Ethernet8 before Ethernet12): ORDER BY
	 * x COLLATE natsort ("natural" is a keyword); no index or view uses it: any sqlite3 reads the file */
	sqlite3_create_collation(db, "natsort", SQLITE_UTF8, NULL, natural_collation);
	if (!readonly) {
		if ((r = store_exec(db, "PRAGMA page_size=16384", e)) < 0 ||
		    (r = store_exec(db, "PRAGMA journal_mode=WAL", e)) < 0 ||
		    (r = store_exec(db, sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
				    e)) < 0 ||
		    (r = store_exec(db, "PRAGMA foreign_keys=ON", e)) < 0) {
			sqlite3_close(db);
			rf_err_prefix_where(e, path);
			return r;
		}
	} else if ((r = store_exec(db, "PRAGMA query_only=1", e)) < 0) {
		sqlite3_close(db);
		return r;
	}
	*ret = db;
	return 0;
}

struct store_reader *store_reader_get(struct store *s)
{
	struct store_reader *r;
	struct rf_err e;

	pthread_mutex_lock(&s->lock);
	r = s->free_readers;
	if (r) {
		s->free_readers = r->next;
		s->nfree_readers--;
	}
	pthread_mutex_unlock(&s->lock);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	hmap_init(&r->cache.map);
	if (open_db(s->path, true, false, &r->db, &e) < 0) {
		char buf[512];

		log_error("store", "cannot open a reader connection: %s", rf_err_str(&e, buf, sizeof(buf)));
		free(r);
		return NULL;
	}
	return r;
}

static void reader_free(struct store_reader *r)
{
	cache_fini(&r->cache);
	sqlite3_close(r->db);
	free(r);
}

void store_reader_put(struct store *s, struct store_reader *r)
{
	if (!r || r->nested) /* nested: the writer's (store_writer_reader) */
		return;
	if (!sqlite3_get_autocommit(r->db))
		store_exec(r->db, "ROLLBACK", NULL);
	pthread_mutex_lock(&s->lock);
	if (s->nfree_readers < s->readers_max) {
		r->next = s->free_readers;
		s->free_readers = r;
		s->nfree_readers++;
		r = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (r)
		reader_free(r);
}

sqlite3 *store_reader_db(struct store_reader *r)
{
	return r->db;
}

sqlite3_stmt *store_reader_stmt(struct store_reader *r, const char *sql)
{
	return cache_get(&r->cache, r->db, sql);
}

int store_reader_begin(struct store_reader *r)
{
	return r->nested ? 0 : store_exec(r->db, "BEGIN", NULL);
}

void store_reader_end(struct store_reader *r)
{
	if (!r->nested)
		store_exec(r->db, "COMMIT", NULL);
}

struct store_reader *store_writer_reader(struct store *s)
{
	s->wreader.db = s->wdb;
	return &s->wreader;
}

/* --- the writer ------------------------------------------------------------------------ */

static void watch_reset(struct store *s)
{
	if (s->nwatched)
		memset(s->watch_seen, 0, WATCH_SLOTS * sizeof(*s->watch_seen));
	s->nwatched = 0;
	memset(s->wtab, 0, sizeof(s->wtab));
}

/* table: one of the watched names, or a static string of store_note_row()'s caller. */
static void watch_add(struct store *s, const char *table, int64_t rowid)
{
	uint32_t h = (uint32_t)(((uint64_t)rowid * 0x9E3779B97F4A7C15ull) >> 40) ^ hmap_hash(table);
	unsigned t;

	if (!s->watch_fn)
		return;
	for (uint32_t i = h & (WATCH_SLOTS - 1);; i = (i + 1) & (WATCH_SLOTS - 1)) {
		uint16_t k = s->watch_seen[i];

		if (!k)
			break;
		if (s->watched[k - 1].rowid == rowid && !strcmp(s->watched[k - 1].table, table))
			return; /* already there */
	}
	for (t = 0; t < WATCH_TABLES && s->wtab[t].table && strcmp(s->wtab[t].table, table); t++)
		;
	if (t == WATCH_TABLES)
		return; /* more tables than ever watched: not reported */
	s->wtab[t].table = table;
	if (s->wtab[t].many)
		return;
	if (s->wtab[t].rows == WATCH_MAX || s->nwatched == WATCH_TABLES * WATCH_MAX) {
		s->wtab[t].many = true;
		return;
	}
	s->wtab[t].rows++;
	s->watched[s->nwatched] = (struct watched){ table, rowid };
	for (uint32_t i = h & (WATCH_SLOTS - 1);; i = (i + 1) & (WATCH_SLOTS - 1))
		if (!s->watch_seen[i]) {
			s->watch_seen[i] = (uint16_t)++s->nwatched;
			break;
		}
}

/* Deleted rows are not reported: what goes is history pruned (retention), not news.  sqlite
 * calls this for rowid tables only: the hot ones (samples, probe results, agents) are WITHOUT
 * ROWID, so ingest does not pay for it. */
static void on_update(void *arg, int op, const char *db, const char *table, sqlite3_int64 rowid)
{
	struct store *s = arg;

	(void)db;
	if (op == SQLITE_DELETE)
		return;
	for (unsigned t = 0; s->watch_tables[t]; t++)
		if (strcmp(table, s->watch_tables[t]) == 0) {
			watch_add(s, s->watch_tables[t], rowid);
			return;
		}
}

void store_note_row(struct store *s, const char *table, int64_t rowid)
{
	watch_add(s, table, rowid);
}

static void watch_flush(struct store *s)
{
	if (!s->watch_fn)
		return;
	for (size_t i = 0; i < s->nwatched; i++) {
		bool many = false;

		for (unsigned t = 0; t < WATCH_TABLES && s->wtab[t].table; t++)
			many = many || (s->wtab[t].many && !strcmp(s->wtab[t].table, s->watched[i].table));
		if (!many)
			s->watch_fn(s->watch_ctx, s->watched[i].table, s->watched[i].rowid);
	}
	for (unsigned t = 0; t < WATCH_TABLES && s->wtab[t].table; t++)
		if (s->wtab[t].many)
			s->watch_fn(s->watch_ctx, s->wtab[t].table, 0);
}

int store_set_watch(struct store *s, const char *const *tables,
		    void (*fn)(void *ctx, const char *table, int64_t rowid), void *ctx)
{
	if (!s->watched && !(s->watched = calloc(WATCH_TABLES * WATCH_MAX, sizeof(*s->watched))))
		return -ENOMEM;
	if (!s->watch_seen && !(s->watch_seen = calloc(WATCH_SLOTS, sizeof(*s->watch_seen))))
		return -ENOMEM;
	s->watch_tables = tables;
	s->watch_fn = fn;
	s->watch_ctx = ctx;
	sqlite3_update_hook(s->wdb, fn && tables && tables[0] ? on_update : NULL, s);
	return 0;
}

/* A transaction that failed: for GET /api/v1/health (STORE_WRITE_FAILING). */
static void failing(struct store *s, const struct rf_err *e)
{
	int64_t now = tu_now_ns();

	pthread_mutex_lock(&s->lock);
	if (!s->stats.failed_recent || now - s->stats.failed_last > STORE_FAILED_WINDOW_NS) {
		s->stats.failed_recent = 0;
		s->stats.failed_since = now;
	}
	s->stats.failed_recent++;
	s->stats.failed_last = now;
	snprintf(s->stats.failed_error, sizeof(s->stats.failed_error), "%s", e->msg);
	s->failing = true;
	pthread_mutex_unlock(&s->lock);
}

static void run_batch(struct store *s, struct store_job *batch)
{
	struct rf_err e;
	int64_t t0;
	int r;

	r = store_exec(s->wdb, "BEGIN IMMEDIATE", &e);
	if (r < 0) {
		log_msg(LOG_ERR, "store", "STORE_UNAVAILABLE", "cannot begin a transaction: %s",
			e.msg);
		failing(s, &e);
		for (struct store_job *j = batch; j; j = j->next)
			j->result = r;
		goto done;
	}
	for (struct store_job *j = batch; j; j = j->next) {
		store_exec(s->wdb, "SAVEPOINT job", NULL);
		j->result = j->apply(j, s);
		if (j->result < 0) {
			store_exec(s->wdb, "ROLLBACK TO job", NULL);
			s->stats.failed_jobs++;
		}
		store_exec(s->wdb, "RELEASE job", NULL);
	}
	t0 = tu_mono_ns();
	r = store_exec(s->wdb, "COMMIT", &e);
	s->stats.commit_seconds += (double)(tu_mono_ns() - t0) / 1e9;
	if (r < 0) {
		log_msg(LOG_ERR, "store", "STORE_COMMIT_FAILED", "commit failed, %s", e.msg);
		store_exec(s->wdb, "ROLLBACK", NULL);
		s->stats.failed_commits++;
		failing(s, &e);
		for (struct store_job *j = batch; j; j = j->next)
			if (j->result >= 0)
				j->result = r;
		if (s->rollback_fn)
			s->rollback_fn(s->rollback_ctx);
	} else {
		s->stats.commits++;
		if (s->failing) { /* (the writer's own flag: only it writes it) */
			log_notice("store", "a commit worked again after failed ones");
			s->failing = false;
		}
		watch_flush(s);
	}
done:
	watch_reset(s);
	while (batch) {
		struct store_job *next = batch->next;

		s->stats.jobs++;
		batch->next = NULL;
		batch->done(batch, batch->result);
		batch = next;
	}
}

static void *writer_main(void *arg)
{
	struct store *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct store_job *batch, *last;
		unsigned n = 1;

		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->cond_work, &s->lock);
		if (!s->head && s->stopping)
			break;
		batch = last = s->head;
		while (last->next && n < s->batch_max) {
			last = last->next;
			n++;
		}
		s->head = last->next;
		if (!s->head)
			s->tail = NULL;
		last->next = NULL;
		s->depth -= n;
		pthread_mutex_unlock(&s->lock);

		run_batch(s, batch);

		pthread_mutex_lock(&s->lock);
		s->completed += n;
		pthread_cond_broadcast(&s->cond_done);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int submit(struct store *s, struct store_job *job, bool bounded)
{
	pthread_mutex_lock(&s->lock);
	if (s->stopping || !s->running) {
		pthread_mutex_unlock(&s->lock);
		return -ESHUTDOWN;
	}
	if (bounded && s->depth >= s->queue_max) {
		pthread_mutex_unlock(&s->lock);
		return -EAGAIN;
	}
	job->next = NULL;
	if (s->tail)
		s->tail->next = job;
	else
		s->head = job;
	s->tail = job;
	s->depth++;
	if (s->depth > s->peak)
		s->peak = s->depth;
	s->submitted++;
	pthread_cond_signal(&s->cond_work);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int store_submit(struct store *s, struct store_job *job)
{
	return submit(s, job, true);
}

int store_submit_next(struct store *s, struct store_job *job)
{
	return submit(s, job, false);
}

void store_flush(struct store *s)
{
	pthread_mutex_lock(&s->lock);
	{
		uint64_t target = s->submitted;

		while (s->running && s->completed < target)
			pthread_cond_wait(&s->cond_done, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}

unsigned store_queue_depth(struct store *s)
{
	unsigned d;

	pthread_mutex_lock(&s->lock);
	d = s->depth;
	pthread_mutex_unlock(&s->lock);
	return d;
}

unsigned store_queue_max(const struct store *s)
{
	return s->queue_max;
}

void store_set_rollback_hook(struct store *s, void (*fn)(void *ctx), void *ctx)
{
	s->rollback_fn = fn;
	s->rollback_ctx = ctx;
}

void store_get_stats(struct store *s, struct store_stats *ret)
{
	pthread_mutex_lock(&s->lock);
	*ret = s->stats;
	ret->queue_depth = s->depth;
	ret->queue_max = s->queue_max;
	ret->queue_peak = s->peak;
	pthread_mutex_unlock(&s->lock);
}

const char *store_path(const struct store *s)
{
	return s->path;
}

static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;

static void sqlite_global_config(void)
{
	/* Allocation statistics take a global mutex on every malloc: with several reader
	 * threads that mutex is the bottleneck, and nothing here reads the statistics. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* One writer per database: a second rocefabd on it would run its own passes (retention,
 * detector, tuner, the changes' deadlines) over the same data.  DB.lock, a file of its own (a
 * descriptor of the database file closed by us would drop sqlite's POSIX locks on it), holds
 * the writer's pid for the message.  The lock goes with the process, however it ends. */
static int lock_db(struct store *s, struct rf_err *e)
{
	char *lp = NULL, pid[32], old[32] = "";
	ssize_t n;

	if (asprintf(&lp, "%s.lock", s->path) < 0)
		return -ENOMEM;
	s->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lock_fd < 0) {
		int r = -errno;

		rf_err_set(e, r, "STORE_ERROR", NULL, "cannot open %s: %s", lp, strerror(-r));
		free(lp);
		return r;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (r != -EBUSY) { /* (ENOLCK on some network file systems: no other rocefabd) */
			rf_err_set(e, r, "STORE_ERROR", NULL, "cannot lock %s: %s", lp, strerror(-r));
			free(lp);
			return r;
		}
		if ((n = pread(s->lock_fd, old, sizeof(old) - 1, 0)) > 0)
			old[strcspn(old, "\n")] = '\0';
		rf_err_set(e, r, "STORE_IN_USE", NULL,
			   "%s is in use by another rocefabd%s%s%s (one rocefabd per database; its lock: %s)",
			   s->path, old[0] ? " (pid " : "", old, old[0] ? ")" : "", lp);
		free(lp);
		return r;
	}
	free(lp);
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(s->lock_fd, 0) < 0 || pwrite(s->lock_fd, pid, (size_t)n, 0) != n)
		log_warning("store", "cannot write the pid into the database's lock: %m");
	return 0;
}

int store_open(const struct store_conf *c, bool start_writer, struct store **ret,
	       struct rf_err *e)
{
	struct store *s = calloc(1, sizeof(*s));
	int r;

	pthread_once(&sqlite_once, sqlite_global_config);
	if (!s)
		return -ENOMEM;
	s->path = strdup(c->path);
	s->lock_fd = -1;
	s->queue_max = c->queue_max ? c->queue_max : 1024;
	s->batch_max = c->batch_max ? c->batch_max : 64;
	s->readers_max = c->readers ? c->readers : 4;
	hmap_init(&s->wcache.map);
	hmap_init(&s->wreader.cache.map);
	s->wreader.nested = true;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond_work, NULL);
	pthread_cond_init(&s->cond_done, NULL);
	if (!s->path) {
		r = -ENOMEM;
		goto fail;
	}
	if (start_writer && (r = lock_db(s, e)) < 0)
		goto fail;
	if ((r = open_db(c->path, false, c->sync_full, &s->wdb, e)) < 0)
		goto fail;
	if ((r = migrate(s->wdb, e)) < 0) {
		rf_err_prefix_where(e, c->path);
		goto fail;
	}
	if (start_writer) {
		s->running = true;
		if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
			s->running = false;
			r = rf_err_set(e, -EAGAIN, "STORE_UNAVAILABLE", NULL,
				       "cannot start the writer thread");
			goto fail;
		}
	}
	*ret = s;
	return 0;
fail:
	store_close(s);
	return r;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	if (s->running) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_broadcast(&s->cond_work);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->writer, NULL);
		s->running = false;
	}
	while (s->free_readers) {
		struct store_reader *r = s->free_readers;

		s->free_readers = r->next;
		reader_free(r);
	}
	cache_fini(&s->wcache);
	cache_fini(&s->wreader.cache);
	if (s->wdb) {
		/* Fold the WAL back into the database file so a copy of the .db alone is whole. */
		sqlite3_wal_checkpoint_v2(s->wdb, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
		sqlite3_close(s->wdb);
	}
	if (s->lock_fd >= 0) /* (after the database: its writes are done) */
		close(s->lock_fd);
	pthread_cond_destroy(&s->cond_done);
	pthread_cond_destroy(&s->cond_work);
	pthread_mutex_destroy(&s->lock);
	free(s->watched);
	free(s->watch_seen);
	free(s->path);
	free(s);
}

json_t *store_col_text(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);

	return s ? json_string(s) : json_null();
}

json_t *store_col_int_or_null(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null()
							 : json_integer(sqlite3_column_int64(st, i));
}

json_t *store_time_json(int64_t ns)
{
	char buf[40];

	if (ns <= 0)
		return json_null();
	return json_string(tu_format_rfc3339(ns, buf, sizeof(buf)));
}

void store_bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

int store_step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : store_errno(rc);
}

int store_read_failed(sqlite3_stmt *st, int rc, struct rf_err *e)
{
	return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "database read failed: %s",
			  sqlite3_errmsg(sqlite3_db_handle(st)));
}

int store_write_failed(int r, const char *what, struct rf_err *e)
{
	return rf_err_set(e, r, r == -EAGAIN ? "BUSY" : "STORE_ERROR", NULL, "%s: %s", what, strerror(-r));
}

json_t *store_list_doc(json_t *items)
{
	return items ? json_pack("{s:o,s:I}", "items", items, "count", (json_int_t)json_array_size(items))
		     : NULL;
}

int store_rows(sqlite3_stmt *st, store_row_fn row, const void *ctx, json_t **ret_items,
	       struct rf_err *e)
{
	json_t *items = json_array();
	int rc;

	if (!st || !items) {
		json_decref(items);
		if (st)
			sqlite3_reset(st);
		return -ENOMEM;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(items, row(st, ctx));
	if (rc != SQLITE_DONE) {
		rc = store_read_failed(st, rc, e);
		sqlite3_reset(st);
		json_decref(items);
		return rc;
	}
	sqlite3_reset(st);
	*ret_items = items;
	return 0;
}

int store_one(sqlite3_stmt *st, store_row_fn row, const void *ctx, json_t **ret, struct rf_err *e)
{
	int rc, r = 0;

	*ret = NULL;
	if (!st)
		return -ENOMEM;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		r = (*ret = row(st, ctx)) ? 0 : -ENOMEM;
	else
		r = rc == SQLITE_DONE ? -ENOENT : store_read_failed(st, rc, e);
	sqlite3_reset(st);
	return r;
}

int store_list(sqlite3_stmt *st, store_row_fn row, const void *ctx, json_t **ret, struct rf_err *e)
{
	json_t *items;
	int r = store_rows(st, row, ctx, &items, e);

	if (r < 0)
		return r;
	*ret = store_list_doc(items);
	return *ret ? 0 : -ENOMEM;
}

int store_list_limited(sqlite3_stmt *st, int limit_param, unsigned limit, store_row_fn row, const void *ctx,
		       json_t **ret, struct rf_err *e)
{
	json_t *items;
	bool more;
	int r;

	if (st)
		sqlite3_bind_int64(st, limit_param, (sqlite3_int64)limit + 1);
	if ((r = store_rows(st, row, ctx, &items, e)) < 0)
		return r;
	if ((more = json_array_size(items) > limit))
		json_array_remove(items, limit);
	*ret = store_list_doc(items);
	if (*ret && json_object_set_new(*ret, "truncated", json_boolean(more)) < 0) {
		json_decref(*ret);
		*ret = NULL;
	}
	return *ret ? 0 : -ENOMEM;
}

/* store_submit_wait(): the caller's job inside one that wakes the caller. */
struct waited {
	struct store_job job;
	struct store_job *inner;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

static int waited_apply(struct store_job *sj, struct store *s)
{
	struct waited *w = (struct waited *)sj;

	return w->inner->apply(w->inner, s);
}

static void waited_done(struct store_job *sj, int result)
{
	struct waited *w = (struct waited *)sj;

	if (w->inner->done)
		w->inner->done(w->inner, result);
	pthread_mutex_lock(&w->lock);
	w->result = result;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock); /* the last touch: the waiter's stack may go now */
}

int store_submit_wait(struct store *s, struct store_job *job)
{
	struct waited w = { .job = { .apply = waited_apply, .done = waited_done }, .inner = job,
			    .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	int r = store_submit(s, &w.job);

	if (r < 0)
		return r;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.result;
}

int store_meta_text(struct store_reader *rd, const char *key, char **ret)
{
	sqlite3_stmt *st = store_reader_stmt(rd, "SELECT value FROM meta WHERE key = ?");
	int rc;

	*ret = NULL;
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && !(*ret = strdup((const char *)sqlite3_column_text(st, 0) ?: "")))
		rc = SQLITE_NOMEM;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

json_t *store_meta_get(struct store_reader *rd, const char *key)
{
	char *text;
	json_t *doc = NULL;

	if (store_meta_text(rd, key, &text) == 0 && text)
		doc = json_loads(text, 0, NULL);
	free(text);
	return doc;
}

int store_meta_put_w(struct store *s, const char *key, const char *text, const struct store_by *by)
{
	sqlite3_stmt *st;
	int r;

	/* the document before: as saved (read in this transaction: what a concurrent save left),
	 * else the caller's (the one in force, never saved) */
	if (by && by->actor) {
		st = store_stmt(s, "INSERT INTO settings_log(t_ns, key, actor, reason, old, new) "
				   "SELECT ?1, ?2, ?3, ?4, old, ?6 FROM (SELECT coalesce((SELECT value FROM meta "
				   "WHERE key = ?2), ?5) AS old) WHERE old IS NULL OR old != ?6");
		if (!st)
			return -EIO;
		sqlite3_bind_int64(st, 1, tu_now_ns());
		sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, by->actor, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 4, by->reason && *by->reason ? by->reason : NULL);
		store_bind_text_or_null(st, 5, by->old);
		sqlite3_bind_text(st, 6, text, -1, SQLITE_STATIC);
		if ((r = store_step(st)) < 0)
			return r;
	}
	st = store_stmt(s, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)");
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	return store_step(st);
}

struct meta_job {
	struct store_job job;
	const char *key;
	char *text;
	const struct store_by *by;
};

static int meta_put_apply(struct store_job *sj, struct store *s)
{
	struct meta_job *j = (struct meta_job *)sj;

	return store_meta_put_w(s, j->key, j->text, j->by);
}

int store_meta_put_text(struct store *s, const char *key, const char *text)
{
	struct meta_job j = { .job = { .apply = meta_put_apply }, .key = key, .text = (char *)text };

	return store_submit_wait(s, &j.job);
}

char *store_meta_text_of(const json_t *doc)
{
	return doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

int store_meta_put_by(struct store *s, const char *key, const json_t *doc, const json_t *was, const char *actor,
		      const char *reason)
{
	struct store_by by = { .actor = actor, .reason = reason, .old = store_meta_text_of(was) };
	struct meta_job j = { .job = { .apply = meta_put_apply }, .key = key, .by = &by };
	int r = -ENOMEM;

	if ((j.text = store_meta_text_of(doc)) && (!was || by.old))
		r = store_submit_wait(s, &j.job);
	free(j.text);
	free(by.old);
	return r;
}

int store_meta_put(struct store *s, const char *key, const json_t *doc)
{
	return store_meta_put_by(s, key, doc, NULL, NULL, NULL);
}
