/* A rocefabd domain for unit tests: a store in a temporary directory, ingest with the hooks
 * rocefabd adds (changes, then the pingmesh), and reports posted through ingest as an agent's
 * would be.  Included by the daemon/ tests (test_alerts.c, test_changes.c, test_pingmesh.c). */
#ifndef ROCEFAB_DAEMON_FIXTURE_H
#define ROCEFAB_DAEMON_FIXTURE_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/changes.h"
#include "daemon/ingest.h"
#include "daemon/pingmesh.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/timeutil.h"
#include "tests/unit/unit.h"

struct fixture {
	char dir[64], db[128];
	struct reg *reg;
	struct store *st;
	struct ingest *ing;
	struct pingmesh *pm;
	int64_t seq;
};

static inline void fx_open(struct fixture *f)
{
	struct store_conf c = { .queue_max = 64, .batch_max = 8, .readers = 2 };
	struct pingmesh_opts po = { .window_ns = 30 * NSEC_PER_SEC, .metrics_pairs = true };
	struct rf_err e = { 0 };

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/rocefab-unit-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	c.path = f->db;
	assert_int_equal(reg_load_builtin(&f->reg, &e), 0);
	assert_int_equal(store_open(&c, true, &f->st, &e), 0);
	assert_int_equal(ingest_new(f->st, f->reg, &f->ing, &e), 0);
	assert_int_equal(pingmesh_new(f->st, &po, &f->pm), 0);
	assert_int_equal(ingest_add_hook(f->ing, changes_on_report, NULL), 0);
	assert_int_equal(ingest_add_hook(f->ing, pingmesh_on_report, f->pm), 0);
}

static inline void fx_close(struct fixture *f)
{
	char cmd[160];

	store_flush(f->st);
	ingest_free(f->ing);
	store_close(f->st);
	pingmesh_free(f->pm);
	reg_free(f->reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
}

struct fx_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
	json_t *commands;
};

static inline void fx_done(void *ctx, const struct ingest_result *res)
{
	struct fx_waiter *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->status = res->status;
	w->commands = res->commands; /* the callback owns them */
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Posts a report (steals doc) as an agent would and waits for its commit: the commands of the
 * answer (a new reference). */
/* replay: as POST ...?replay=true */
static inline json_t *fx_report_as(struct fixture *f, json_t *doc, bool replay)
{
	struct fx_waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rf_err e = { 0 };
	struct report *r = NULL;
	char *text = json_dumps(doc, JSON_COMPACT);

	json_decref(doc);
	assert_non_null(text);
	if (report_parse(text, strlen(text), f->reg, &r, &e) < 0)
		fail_msg("report_parse: %s %s at %s\n%s", e.code, e.msg, e.where, text);
	free(text);
	r->replay = replay;
	assert_int_equal(ingest_submit(f->ing, r, fx_done, &w), 0);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	assert_int_equal(w.status, 0);
	return w.commands;
}

static inline json_t *fx_report(struct fixture *f, json_t *doc)
{
	return fx_report_as(f, doc, false);
}

/* A report of agent id (role "host" or "switch") at time t: one port per entry of ports,
 * {"device", "port", "neighbor": {"system", "port"}}; extra members merged in (stolen). */
static inline json_t *fx_doc(struct fixture *f, const char *id, const char *role, int64_t t,
			     json_t *devices, json_t *extra)
{
	json_t *doc = json_pack("{s:i,s:{s:s,s:s,s:s,s:s,s:s},s:I,s:I,s:i,s:{s:o},s:[]}", "schema", 1, "agent",
				"id", id, "role", role, "boot_id", "b1", "version", "t", "backend", "sim", "seq",
				(json_int_t)++f->seq, "time_ns", (json_int_t)t, "interval_ms", 1000, "inventory",
				"devices", devices, "samples");

	if (extra) {
		json_object_update(doc, extra);
		json_decref(extra);
	}
	return doc;
}

/* A host's one RDMA port nic0:1 under ToR tor (its port toward the host: the host's name). */
static inline json_t *fx_host_devices(const char *host, const char *tor)
{
	return json_pack("[{s:s,s:s,s:s,s:[{s:s,s:s,s:I,s:{s:s,s:s}}]}]", "name", "nic0", "kind", "rdma",
			 "driver", "sim", "ports", "port", "1", "state", "up", "speed_mbps",
			 (json_int_t)100000, "neighbor", "system", tor, "port", host);
}

/* Reads one value of one row: SELECT ... */
static inline int64_t fx_int(struct fixture *f, const char *sql)
{
	struct store_reader *rd = store_reader_get(f->st);
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int64_t v = -1;

	assert_non_null(st);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	store_reader_put(f->st, rd);
	return v;
}

#endif
