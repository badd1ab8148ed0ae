/* Storage: one sqlite database in WAL mode.
 *
 * Writes go through one writer thread fed by a bounded queue: it takes up to batch_max jobs at
 * a time and applies them in one transaction, each inside its own SAVEPOINT so that a job that
 * fails leaves the others alone; after COMMIT every job's done() is called with its result.
 * A job is acknowledged (done with 0) only once its transaction has committed, so whatever was
 * acknowledged survives a crash of the process.  Readers take their own connections from a pool.
 * The schema is versioned with PRAGMA user_version and migrated forward on open. */
#ifndef ROCEFAB_STORE_H
#define ROCEFAB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <sqlite3.h>

#include "lib/err.h"

#define STORE_SCHEMA_VERSION 15

struct store;

struct store_job {
	/* Runs on the writer thread inside a transaction.  Returns 0 or a negative errno; on
	 * failure the job's writes are rolled back. */
	int (*apply)(struct store_job *job, struct store *s);
	/* Runs on the writer thread after the transaction ended, with apply's result or the
	 * commit's error.  May free the job. */
	void (*done)(struct store_job *job, int result);
	struct store_job *next;
	int result;
};

struct store_conf {
	const char *path;
	unsigned queue_max; /* jobs waiting; store_submit() fails with -EAGAIN beyond */
	unsigned batch_max; /* jobs per transaction */
	bool sync_full;	    /* PRAGMA synchronous=FULL (survives power loss), else NORMAL */
	unsigned readers;   /* reader connections kept open */
};

/* Opens (creating if needed) and migrates the database.  With start_writer the writer thread
 * runs; without it (command-line tools) use store_writer_db() directly from one thread.  A new
 * database file is created 0600 (its -wal and -shm files get the same mode from sqlite); an
 * existing one that other users may read or write is warned about (STORE_FILE_MODE), not
 * changed.  The directory must exist. */
int store_open(const struct store_conf *c, bool start_writer, struct store **ret,
	       struct rf_err *e);
/* Drains the queue (every submitted job gets done), stops the writer, closes everything. */
void store_close(struct store *s);

/* Queues a job.  -EAGAIN when the queue is full, -ESHUTDOWN while closing. */
int store_submit(struct store *s, struct store_job *job);
/* The same from a job's done(), for the next of a chain of jobs (work cut in steps): past the
 * queue's bound, as the job before left its place (each chain holds one place at most).
 * -ESHUTDOWN while closing. */
int store_submit_next(struct store *s, struct store_job *job);
/* Queues a job and waits until it is done (committed or failed): its result, or
 * store_submit()'s error (then done() is not called).  job may live on the caller's stack; its
 * done() may be NULL.  Not on the writer thread. */
int store_submit_wait(struct store *s, struct store_job *job);
/* Blocks until every job submitted before the call is done. */
void store_flush(struct store *s);
unsigned store_queue_depth(struct store *s);
unsigned store_queue_max(const struct store *s);

/* Called on the writer thread when a COMMIT failed and every job of the batch was rolled back:
 * caches derived from the database must be dropped. */
void store_set_rollback_hook(struct store *s, void (*fn)(void *ctx), void *ctx);
/* Reports, on the writer thread after each COMMIT, every row inserted or updated in the named
 * tables (a NULL-terminated list that must outlive the store; rowid tables only; deletions are
 * not reported) and every row an apply() named with store_note_row(): fn(ctx, table, rowid),
 * each row once per transaction, or once rowid 0 for "many rows" of a table beyond 1024.  A
 * row written by a job whose SAVEPOINT was rolled back may be reported too.  Set it before the
 * first job is submitted; fn must be quick (it holds up the writer). */
int store_set_watch(struct store *s, const char *const *tables,
		    void (*fn)(void *ctx, const char *table, int64_t rowid), void *ctx);
/* In an apply(): report this row after COMMIT (for tables whose every write is not news, e.g.
 * alerts refreshed at every pass).  table: a string that lives as long as the store. */
void store_note_row(struct store *s, const char *table, int64_t rowid);

/* For apply() functions and tools: the writer connection and its statement cache.  The SQL
 * text is the cache key; the statement comes back reset and with bindings cleared. */
sqlite3 *store_writer_db(struct store *s);
sqlite3_stmt *store_stmt(struct store *s, const char *sql);

/* A reader connection (read-only); give it back with store_reader_put().  NULL on failure.
 * Statements on it are cached per connection like the writer's.  Wrap several statements that
 * must see one snapshot in store_reader_begin()/store_reader_end(). */
struct store_reader;
struct store_reader *store_reader_get(struct store *s);
void store_reader_put(struct store *s, struct store_reader *r);
sqlite3 *store_reader_db(struct store_reader *r);
sqlite3_stmt *store_reader_stmt(struct store_reader *r, const char *sql);
int store_reader_begin(struct store_reader *r);
void store_reader_end(struct store_reader *r);
/* For apply() functions: a reader of the writer's connection, which sees the job's
 * transaction, its writes included (begin/end do nothing); not to be put back. */
struct store_reader *store_writer_reader(struct store *s);

/* A failed transaction counts for this long (GET /api/v1/health warns meanwhile): on a full
 * disk, one that needs no new page still commits, between those that fail. */
#define STORE_FAILED_WINDOW_NS (30 * NSEC_PER_SEC)

struct store_stats {
	uint64_t commits, jobs, failed_jobs, failed_commits;
	/* transactions (BEGIN or COMMIT) that failed, none more than STORE_FAILED_WINDOW_NS after
	 * the one before: how many, the first and the last (wall clock ns), the last one's error */
	uint64_t failed_recent;
	int64_t failed_since, failed_last;
	char failed_error[512];
	double commit_seconds; /* total time in COMMIT */
	unsigned queue_depth, queue_max, queue_peak;
};
void store_get_stats(struct store *s, struct store_stats *ret);
const char *store_path(const struct store *s);

/* Runs sql (no results) on db; returns 0 or -EIO with e filled. */
int store_exec(sqlite3 *db, const char *sql, struct rf_err *e);
/* Maps an sqlite result code to a negative errno. */
int store_errno(int rc);

/* Between rows and JSON, for the read-side views: a text column (null when NULL), an integer
 * column (null when NULL), a time in ns as RFC 3339 (null when not set, <= 0); and binding a
 * text that may be NULL. */
json_t *store_col_text(sqlite3_stmt *st, int i);
json_t *store_col_int_or_null(sqlite3_stmt *st, int i);
json_t *store_time_json(int64_t ns);
void store_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
/* Steps a statement once (a write, or a row that is not read) and resets it: 0 or -errno. */
int store_step(sqlite3_stmt *st);

/* The meta table's settings documents (PUT /api/v1/.../config): the JSON saved under key (a new
 * reference; NULL when none or unreadable), and saving one (a writer job, waited for: 0 or
 * -errno).  Not on the writer thread. */
json_t *store_meta_get(struct store_reader *rd, const char *key);
/* The text saved under key: 0 and *ret (NULL: nothing saved), or -EIO / -ENOMEM when it could
 * not be read (a caller that must not save over what it could not read tells them apart). */
int store_meta_text(struct store_reader *rd, const char *key, char **ret);
int store_meta_put(struct store *s, const char *key, const json_t *doc);
/* The same with the document as JSON text already (not checked here). */
int store_meta_put_text(struct store *s, const char *key, const char *text);
/* The same as asked by actor through the API, for reason (NULL: none given): a row of the
 * settings log (who, when, why, the document before and after) in the same transaction,
 * unless the document is the same.  The document before is the one saved, read in that
 * transaction, else `was`, the one in force (NULL: none).
 * store_meta_put_w: the same on the writer thread inside a job that writes more, the documents
 * as text (store_meta_text_of: compact, keys sorted; by NULL, or by->actor NULL: no row). */
struct store_by {
	const char *actor, *reason;
	char *old; /* the text of the document in force before, NULL: none (used when none is saved) */
};
int store_meta_put_by(struct store *s, const char *key, const json_t *doc, const json_t *was, const char *actor,
		      const char *reason);
int store_meta_put_w(struct store *s, const char *key, const char *text, const struct store_by *by);
char *store_meta_text_of(const json_t *doc);

/* Lists: a query's rows as JSON.  row() makes one row's object (a new reference). */
typedef json_t *(*store_row_fn)(sqlite3_stmt *st, const void *ctx);
/* Steps st (bound, or NULL: -ENOMEM) to its end and resets it: a new array of the rows in
 * *ret_items, or -errno with e filled (STORE_ERROR) when a step failed. */
int store_rows(sqlite3_stmt *st, store_row_fn row, const void *ctx, json_t **ret_items,
	       struct rf_err *e);
/* The same as the REST API's list document {"items": [...], "count": N}. */
int store_list(sqlite3_stmt *st, store_row_fn row, const void *ctx, json_t **ret, struct rf_err *e);
/* The same for a query that ends "LIMIT ?N" (limit_param: N): at most limit rows, and
 * "truncated" true when there were more (one row more is asked for). */
int store_list_limited(sqlite3_stmt *st, int limit_param, unsigned limit, store_row_fn row, const void *ctx,
		       json_t **ret, struct rf_err *e);
/* The first row of st (bound, or NULL: -ENOMEM) as row() makes it, in *ret: 0, -ENOENT when
 * there is none (e untouched: the caller says what is unknown), or a failed read.  Resets st. */
int store_one(sqlite3_stmt *st, store_row_fn row, const void *ctx, json_t **ret, struct rf_err *e);
/* {"items": items, "count": N} (a new reference; steals items; NULL for NULL). */
json_t *store_list_doc(json_t *items);
/* A failed step of a read: -errno with e filled (STORE_ERROR and sqlite's message). */
int store_read_failed(sqlite3_stmt *st, int rc, struct rf_err *e);
/* e for a write that failed with -errno r ("what: the error"): BUSY when the writer's queue is
 * full (-EAGAIN: try again), else STORE_ERROR; returns r. */
int store_write_failed(int r, const char *what, struct rf_err *e);

#endif
