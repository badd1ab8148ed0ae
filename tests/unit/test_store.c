/* Unit tests of the store and ingest: schema migrations, tokens, and reports going through the
 * writer into counter series (deltas, rates, duplicates, wraps, resets, reboots, and state that
 * survives reopening the database). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/ingest.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "daemon/tokens.h"
#include "daemon/views.h"
#include "lib/timeutil.h"
#include "tests/unit/unit.h"

static char dir[64];
static char dbpath[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rocefab-unit-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(dbpath, sizeof(dbpath), "%s/t.db", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static int user_version(struct store *s)
{
	sqlite3_stmt *st = store_stmt(s, "PRAGMA user_version");
	int v;

	sqlite3_step(st);
	v = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return v;
}

static void test_migrations(void **state)
{
	struct store_conf c = { .path = dbpath };
	struct rf_err e = { 0 };
	struct store *s = NULL;
	char path[160];
	FILE *f;

	(void)state;
	unlink(dbpath);
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(user_version(s), STORE_SCHEMA_VERSION);
	assert_int_equal(store_exec(store_writer_db(s), "SELECT count(*) FROM samples", &e), 0);
	store_close(s);
	/* reopening does not migrate again and keeps data */
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(user_version(s), STORE_SCHEMA_VERSION);
	/* a database from a newer rocefabd is refused, not damaged */
	assert_int_equal(store_exec(store_writer_db(s), "PRAGMA user_version = 99", &e), 0);
	store_close(s);
	s = NULL;
	assert_int_equal(store_open(&c, false, &s, &e), -EPROTO);
	assert_string_equal(e.code, "STORE_TOO_NEW");
	assert_null(s);
	/* a file that is not a database */
	snprintf(path, sizeof(path), "%s/garbage.db", dir);
	f = fopen(path, "w");
	fputs("this is not an sqlite database, just text that is long enough to have a header....\n",
	      f);
	fclose(f);
	c.path = path;
	assert_true(store_open(&c, false, &s, &e) < 0);
	assert_true(strstr(e.where, "garbage.db") != NULL);
	unlink(dbpath);
}

/* dbpath made anew from an SQL dump in tests/data. */
static void db_from_dump(const char *dump)
{
	size_t len;
	sqlite3 *db;
	char *sql = calloc(1, 1 << 20);
	FILE *f = fopen(dump, "re");

	unlink(dbpath);
	assert_non_null(f);
	assert_non_null(sql);
	len = fread(sql, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(len > 0);
	assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	free(sql);
}

/* A schema-1 database (tests/data/store-v1.sql, written by rocefabd before migration 2)
 * opens, migrates, and keeps its data; the new columns are filled from the old tables. */
static void test_migration_from_v1(void **state)
{
	struct store_conf c = { .path = dbpath };
	struct rf_err e = { 0 };
	struct store *s;
	sqlite3_stmt *st;

	(void)state;
	db_from_dump("tests/data/store-v1.sql");
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(user_version(s), STORE_SCHEMA_VERSION);
	st = store_stmt(s, "SELECT id, devices, ports, ports_up, reports FROM agents ORDER BY id");
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "gpu-a1");
	assert_int_equal(sqlite3_column_int(st, 1), 2);
	assert_int_equal(sqlite3_column_int(st, 2), 2);
	assert_int_equal(sqlite3_column_int(st, 3), 2);
	assert_int_equal(sqlite3_column_int(st, 4), 1);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "stor-b1");
	assert_int_equal(sqlite3_column_int(st, 2), 1);
	sqlite3_reset(st);
	st = store_stmt(s, "SELECT count(*) FROM samples");
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 3);
	sqlite3_reset(st);
	store_close(s);
	unlink(dbpath);
}

/* A schema-4 database (tests/data/store-v4.sql): its probe results survive migration 5, which
 * puts op and size into their key, so one round's results of two ops no longer replace each
 * other. */
static void test_migration_from_v4(void **state)
{
	static const char ins[] = "INSERT INTO probe_results(src, dst, op, size, label, t_ns, n, ok, lost) "
				  "VALUES('h1', 'h2', ?, ?, 0, 1700000000000000000, 10, 10, 0)";
	struct store_conf c = { .path = dbpath };
	struct rf_err e = { 0 };
	struct store *s;
	sqlite3_stmt *st;

	(void)state;
	db_from_dump("tests/data/store-v4.sql");
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(user_version(s), STORE_SCHEMA_VERSION);
	st = store_stmt(s, "SELECT src, dst, label, op, size, ok, lost, p50_us, path FROM probe_results "
			   "ORDER BY src, label");
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "h1");
	assert_int_equal(sqlite3_column_int(st, 2), 0);
	assert_string_equal((const char *)sqlite3_column_text(st, 3), "write");
	assert_int_equal(sqlite3_column_int(st, 4), 64);
	assert_true(sqlite3_column_double(st, 7) == 2.5);
	assert_string_equal((const char *)sqlite3_column_text(st, 8), "[\"h1-leaf0\",\"leaf0-h2\"]");
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 5), 9);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "h2");
	assert_int_equal(sqlite3_column_type(st, 7), SQLITE_NULL);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_reset(st);
	/* the same source, destination, path and time: another op, another size, both kept */
	st = store_stmt(s, ins);
	sqlite3_bind_text(st, 1, "read", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, 64);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, "write", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, 4096);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_reset(st);
	st = store_stmt(s, "SELECT count(*) FROM probe_results WHERE src = 'h1' AND label = 0");
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 3);
	sqlite3_reset(st);
	store_close(s);
	unlink(dbpath);
}

static void test_tokens(void **state)
{
	struct store_conf c = { .path = dbpath, .readers = 1 };
	char tok[TOKEN_LEN + 1], tok2[TOKEN_LEN + 1], name[65];
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct store *s;
	enum role role;

	(void)state;
	unlink(dbpath);
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(tokens_add(s, "ops", ROLE_OPERATOR, tok, &e), 0);
	assert_int_equal(strlen(tok), TOKEN_LEN);
	assert_memory_equal(tok, "rfb_", 4);
	assert_int_equal(tokens_add(s, "ops", ROLE_VIEWER, tok2, &e), -EEXIST);
	assert_string_equal(e.code, "TOKEN_EXISTS");
	assert_int_equal(tokens_add(s, "bad name", ROLE_VIEWER, tok2, &e), -EINVAL);
	/* only the hash is stored */
	{
		sqlite3_stmt *st = store_stmt(s, "SELECT hash FROM tokens WHERE name = 'ops'");

		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_null(strstr((const char *)sqlite3_column_text(st, 0), tok + 4));
		assert_int_equal(strlen((const char *)sqlite3_column_text(st, 0)), 64);
		sqlite3_reset(st);
	}
	rd = store_reader_get(s);
	assert_non_null(rd);
	assert_int_equal(tokens_check(rd, tok, &role, name), 0);
	assert_int_equal(role, ROLE_OPERATOR);
	assert_string_equal(name, "ops");
	tok[10] ^= 1;
	assert_int_equal(tokens_check(rd, tok, &role, name), -ENOENT);
	tok[10] ^= 1;
	assert_int_equal(tokens_check(rd, "short", &role, name), -ENOENT);
	assert_int_equal(tokens_revoke(s, "ops", &e), 0);
	assert_int_equal(tokens_check(rd, tok, &role, name), -ENOENT);
	assert_int_equal(tokens_revoke(s, "ops", &e), -ENOENT);
	/* the name is free again */
	assert_int_equal(tokens_add(s, "ops", ROLE_VIEWER, tok2, &e), 0);
	assert_int_equal(tokens_check(rd, tok2, &role, name), 0);
	assert_int_equal(role, ROLE_VIEWER);
	store_reader_put(s, rd);
	store_close(s);
	unlink(dbpath);
}

/* --- the writer queue --------------------------------------------------------------------- */

struct count_job {
	struct store_job job;
	int *applied, *done;
	bool fail;
};

static int count_apply(struct store_job *j, struct store *s)
{
	struct count_job *c = (struct count_job *)j;

	(void)s;
	(*c->applied)++;
	return c->fail ? -EINVAL : 0;
}

static void count_done(struct store_job *j, int result)
{
	struct count_job *c = (struct count_job *)j;

	(*c->done)++;
	assert_int_equal(result, c->fail ? -EINVAL : 0);
}

static void test_writer_queue(void **state)
{
	/* more jobs than a batch holds, and a full queue */
	struct store_conf c = { .path = dbpath, .queue_max = 40, .batch_max = 4 };
	struct count_job jobs[100];
	int applied = 0, done = 0, accepted = 0, refused = 0;
	struct store_stats st;
	struct rf_err e = { 0 };
	struct store *s;

	(void)state;
	unlink(dbpath);
	assert_int_equal(store_open(&c, true, &s, &e), 0);
	for (int i = 0; i < 100; i++) {
		jobs[i] = (struct count_job){ .job = { .apply = count_apply, .done = count_done },
					      .applied = &applied, .done = &done, .fail = i % 7 == 0 };
		if (store_submit(s, &jobs[i].job) == 0)
			accepted++;
		else
			refused++;
	}
	store_flush(s);
	assert_int_equal(done, accepted);
	assert_int_equal(applied, accepted);
	assert_int_equal(accepted + refused, 100);
	assert_int_equal(store_queue_depth(s), 0);
	store_get_stats(s, &st);
	assert_int_equal(st.jobs, (uint64_t)accepted);
	assert_true(st.queue_peak <= 40);
	/* the queue takes jobs again once drained */
	for (int i = 0; i < 40; i++)
		assert_int_equal(store_submit(s, &jobs[i].job), 0);
	store_flush(s);
	assert_int_equal(store_queue_depth(s), 0);
	store_close(s);
	unlink(dbpath);
}

/* --- ingest ------------------------------------------------------------------------------ */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct ingest_result res;
};

static void on_done(void *ctx, const struct ingest_result *res)
{
	struct waiter *w = ctx;

	json_decref(res->commands); /* the callback owns the commands for the agent */
	pthread_mutex_lock(&w->lock);
	w->res = *res;
	w->res.commands = NULL;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

#define T0 1764514195000000000LL

static struct ingest_result submit(struct ingest *ing, const struct reg *reg, int seq,
				   const char *host_boot, int64_t t, unsigned long long xmit_words,
				   unsigned long long oos, unsigned long long pause3)
{
	struct waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rf_err e = { 0 };
	struct report *r = NULL;
	char doc[2048];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":1,\"agent\":{\"id\":\"h1\",\"role\":\"host\",\"boot_id\":\"b1\","
		 "\"host_boot_id\":\"%s\",\"version\":\"t\",\"backend\":\"linux\"},\"seq\":%d,"
		 "\"time_ns\":%lld,\"interval_ms\":1000,\"inventory\":{\"devices\":[{\"name\":"
		 "\"mlx5_0\",\"kind\":\"rdma\",\"driver\":\"mlx5\",\"ports\":[{\"port\":\"1\","
		 "\"state\":\"up\"}]}]},\"samples\":[{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":"
		 "\"ib_counters\",\"t_ns\":%lld,\"values\":{\"port_xmit_data\":%llu}},{\"device\":"
		 "\"mlx5_0\",\"port\":\"1\",\"source\":\"hw_counters\",\"driver\":\"mlx5\",\"t_ns\":%lld,"
		 "\"values\":{\"out_of_sequence\":%llu}},{\"device\":\"mlx5_0\",\"port\":\"1\","
		 "\"source\":\"ethtool\",\"t_ns\":%lld,\"values\":{\"rx_prio3_pause\":%llu}}]}",
		 host_boot, seq, (long long)t, (long long)t, xmit_words, (long long)t, oos,
		 (long long)t, pause3);
	assert_int_equal(report_parse(doc, strlen(doc), reg, &r, &e), 0);
	assert_int_equal(ingest_submit(ing, r, on_done, &w), 0);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.res;
}

/* The newest point of a counter series. */
static json_t *last_point(struct store *s, struct ingest *ing, const char *name)
{
	struct counter_query q = { .names = name, .from_ns = T0 - NSEC_PER_SEC,
				   .to_ns = T0 + 100 * NSEC_PER_SEC, .max_points = 1000 };
	struct store_reader *rd = store_reader_get(s);
	struct rf_err e = { 0 };
	json_t *doc = NULL, *pts, *p;

	assert_int_equal(views_port_counters(rd, ing, "h1:mlx5_0:1", &q, &doc, &e), 0);
	store_reader_put(s, rd);
	pts = json_object_get(json_array_get(json_object_get(doc, "series"), 0), "points");
	p = json_incref(json_array_get(pts, json_array_size(pts) - 1));
	json_decref(doc);
	assert_non_null(p);
	return p;
}

static bool has_flag(json_t *p, const char *flag)
{
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(p, "flags"), i, f)
		if (strcmp(json_string_value(f), flag) == 0)
			return true;
	return false;
}

static void open_all(struct store **s, struct ingest **ing, struct reg **reg)
{
	struct store_conf c = { .path = dbpath, .queue_max = 16, .batch_max = 4, .readers = 2 };
	struct rf_err e = { 0 };

	assert_int_equal(reg_load_builtin(reg, &e), 0);
	assert_int_equal(store_open(&c, true, s, &e), 0);
	assert_int_equal(ingest_new(*s, *reg, ing, &e), 0);
}

static void close_all(struct store *s, struct ingest *ing, struct reg *reg)
{
	store_flush(s);
	ingest_free(ing);
	store_close(s);
	reg_free(reg);
}

static void test_ingest(void **state)
{
	struct ingest *ing;
	struct store *s;
	struct reg *reg;
	struct ingest_result res;
	json_t *p;

	(void)state;
	unlink(dbpath);
	open_all(&s, &ing, &reg);

	res = submit(ing, reg, 1, "boot-A", T0, 1000, 0xFFFFFFF0u, 10);
	assert_int_equal(res.status, 0);
	assert_false(res.duplicate);
	assert_int_equal(res.samples, 3);
	assert_int_equal(res.baseline, 3);
	p = last_point(s, ing, "roce_tx_bytes");
	assert_true(json_is_null(json_object_get(p, "rate")));
	assert_true(has_flag(p, "baseline"));
	json_decref(p);

	/* one second later: 2500 words = 10000 bytes; out_of_sequence wraps at 32 bits */
	res = submit(ing, reg, 2, "boot-A", T0 + NSEC_PER_SEC, 3500, 0x10, 30);
	assert_int_equal(res.baseline, 0);
	p = last_point(s, ing, "roce_tx_bytes");
	assert_int_equal(json_integer_value(json_object_get(p, "raw")), 3500);
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 10000);
	assert_true(json_real_value(json_object_get(p, "rate")) == 10000.0);
	json_decref(p);
	p = last_point(s, ing, "out_of_sequence");
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 0x20);
	assert_true(has_flag(p, "wrap"));
	json_decref(p);
	p = last_point(s, ing, "pfc_rx_pause_frames");
	assert_true(json_real_value(json_object_get(p, "rate")) == 20.0);
	json_decref(p);

	/* the same report again: accepted, ignored */
	res = submit(ing, reg, 2, "boot-A", T0 + NSEC_PER_SEC, 999999, 0, 0);
	assert_int_equal(res.status, 0);
	assert_true(res.duplicate);
	assert_int_equal(res.samples, 0);
	p = last_point(s, ing, "roce_tx_bytes");
	assert_int_equal(json_integer_value(json_object_get(p, "raw")), 3500);
	json_decref(p);

	/* a counter reset (driver reload): delta is the new value, never negative */
	res = submit(ing, reg, 3, "boot-A", T0 + 2 * NSEC_PER_SEC, 100, 0x20, 31);
	p = last_point(s, ing, "roce_tx_bytes");
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 400);
	assert_true(has_flag(p, "reset"));
	json_decref(p);

	/* reopen everything: the state comes back from the database */
	close_all(s, ing, reg);
	open_all(&s, &ing, &reg);
	res = submit(ing, reg, 4, "boot-A", T0 + 4 * NSEC_PER_SEC, 600, 0x21, 33);
	assert_int_equal(res.baseline, 0);
	p = last_point(s, ing, "roce_tx_bytes");
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 2000);
	assert_true(json_real_value(json_object_get(p, "rate")) == 1000.0); /* over 2 s */
	json_decref(p);
	/* a duplicate is still recognized after the restart */
	res = submit(ing, reg, 4, "boot-A", T0 + 4 * NSEC_PER_SEC, 600, 0x21, 33);
	assert_true(res.duplicate);

	/* the host rebooted: counters restarted from 0 */
	res = submit(ing, reg, 5, "boot-B", T0 + 5 * NSEC_PER_SEC, 50, 1, 2);
	p = last_point(s, ing, "roce_tx_bytes");
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 200);
	assert_true(has_flag(p, "new_boot"));
	json_decref(p);

	/* with a step: buckets align to multiples of the step (T0 % 1000 s = 195 s, so one bucket
	 * holds everything); rate = sum(delta) / sum(dt) */
	{
		struct counter_query q = { .names = "roce_tx_bytes", .from_ns = T0,
					   .to_ns = T0 + 10 * NSEC_PER_SEC, .step_ns = 1000 * NSEC_PER_SEC,
					   .max_points = 100 };
		struct store_reader *rd = store_reader_get(s);
		struct rf_err e = { 0 };
		json_t *doc = NULL, *pt;

		assert_int_equal(views_port_counters(rd, ing, "h1:mlx5_0:1", &q, &doc, &e), 0);
		pt = json_array_get(json_object_get(json_array_get(json_object_get(doc, "series"), 0),
						    "points"),
				    0);
		assert_int_equal(json_integer_value(json_object_get(pt, "n")), 5);
		assert_int_equal(json_integer_value(json_object_get(pt, "delta")),
				 10000 + 400 + 2000 + 200);
		assert_true(json_real_value(json_object_get(pt, "rate")) == 12600.0 / 5);
		json_decref(doc);
		/* bad queries */
		q.names = "no_such_counter";
		assert_int_equal(views_port_counters(rd, ing, "h1:mlx5_0:1", &q, &doc, &e), -EINVAL);
		assert_string_equal(e.code, "UNKNOWN_COUNTER");
		q.names = NULL;
		assert_int_equal(views_port_counters(rd, ing, "h1:mlx5_0:9", &q, &doc, &e), -ENOENT);
		q.from_ns = q.to_ns;
		assert_int_equal(views_port_counters(rd, ing, "h1:mlx5_0:1", &q, &doc, &e), -EINVAL);
		/* a range longer than int64 (?from=-104166d&to=8999999999): too many points, not a
		 * signed overflow (UBSan; found by fuzz_query) */
		q.from_ns = T0 - (int64_t)104166 * 86400 * NSEC_PER_SEC;
		q.to_ns = (int64_t)8999999999 * NSEC_PER_SEC;
		q.step_ns = NSEC_PER_SEC;
		assert_int_equal(views_port_counters(rd, ing, "h1:mlx5_0:1", &q, &doc, &e), -EINVAL);
		assert_string_equal(e.code, "TOO_MANY_POINTS");
		store_reader_put(s, rd);
	}
	{
		struct ingest_stats st;

		ingest_get_stats(ing, &st);
		assert_int_equal(st.reports, 2); /* since the reopen */
		assert_int_equal(st.duplicates, 1);
		/* rocefabd started seconds after boot (a guest, a container host): CLOCK_MONOTONIC
		 * below 10 s once crashed /api/v1/health (a negative bucket index) */
		for (int64_t t = 0; t < 12 * NSEC_PER_SEC; t += NSEC_PER_SEC / 2) {
			ingest_get_stats_at(ing, t, &st);
			assert_int_equal(st.reports, 2);
			assert_true(st.samples_per_s >= 0);
		}
	}
	close_all(s, ing, reg);
	unlink(dbpath);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrations),
		cmocka_unit_test(test_migration_from_v1),
		cmocka_unit_test(test_migration_from_v4),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_writer_queue),
		cmocka_unit_test(test_ingest),
	};

	return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
