/* Unit tests of the store and ingest: schema migrations, tokens, and reports going through the
 * writer into counter series (deltas, rates, duplicates, wraps, resets, reboots, and state that
 * survives reopening the database). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/ingest.h"
#include "daemon/report.h"
#include "daemon/events.h"
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

static unsigned mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (unsigned)(st.st_mode & 07777);
}

/* The database is its owner's alone: created 0600, and its -wal and -shm files too, whatever
 * the umask (it was 0644 under the usual 022).  One that exists is not changed behind the
 * operator's back (a warning says so). */
static void test_file_modes(void **state)
{
	struct store_conf c = { .path = dbpath };
	struct rf_err e = { 0 };
	struct store *s = NULL;
	char wal[160], shm[160], old[160];
	mode_t um = umask(022);
	int fd;

	(void)state;
	unlink(dbpath);
	snprintf(wal, sizeof(wal), "%s-wal", dbpath);
	snprintf(shm, sizeof(shm), "%s-shm", dbpath);
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(store_exec(store_writer_db(s), "CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES(1)", &e), 0);
	assert_int_equal(mode_of(dbpath), 0600);
	assert_int_equal(mode_of(wal), 0600);
	assert_int_equal(mode_of(shm), 0600);
	store_close(s);
	unlink(dbpath);

	/* an existing database open to others: used, and left as it is */
	snprintf(old, sizeof(old), "%s/old.db", dir);
	fd = open(old, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(old, 0644), 0);
	c.path = old;
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(mode_of(old), 0644);
	store_close(s);
	umask(um);
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
	assert_int_equal(tokens_add(s, "ops", ROLE_OPERATOR, NULL, tok, &e), 0);
	assert_int_equal(strlen(tok), TOKEN_LEN);
	assert_memory_equal(tok, "rfb_", 4);
	assert_int_equal(tokens_add(s, "ops", ROLE_VIEWER, NULL, tok2, &e), -EEXIST);
	assert_string_equal(e.code, "TOKEN_EXISTS");
	assert_int_equal(tokens_add(s, "bad name", ROLE_VIEWER, NULL, tok2, &e), -EINVAL);
	/* the actors of rocefabd's own changes */
	assert_int_equal(tokens_add(s, "tuner", ROLE_OPERATOR, NULL, tok2, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_TOKEN_NAME");
	assert_int_equal(tokens_add(s, "detector", ROLE_OPERATOR, NULL, tok2, &e), -EINVAL);
	assert_int_equal(tokens_add(s, "Tuner", ROLE_OPERATOR, NULL, tok2, &e), -EINVAL);
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
	assert_int_equal(tokens_check(rd, tok, &role, name, NULL), 0);
	assert_int_equal(role, ROLE_OPERATOR);
	assert_string_equal(name, "ops");
	tok[10] ^= 1;
	assert_int_equal(tokens_check(rd, tok, &role, name, NULL), -ENOENT);
	tok[10] ^= 1;
	assert_int_equal(tokens_check(rd, "short", &role, name, NULL), -ENOENT);
	assert_int_equal(tokens_revoke(s, "ops", &e), 0);
	assert_int_equal(tokens_check(rd, tok, &role, name, NULL), -ENOENT);
	assert_int_equal(tokens_revoke(s, "ops", &e), -ENOENT);
	/* the name is free again */
	assert_int_equal(tokens_add(s, "ops", ROLE_VIEWER, NULL, tok2, &e), 0);
	assert_int_equal(tokens_check(rd, tok2, &role, name, NULL), 0);
	assert_int_equal(role, ROLE_VIEWER);
	store_reader_put(s, rd);
	store_close(s);
	unlink(dbpath);
}

/* The agent ids a token may report as: ids and glob patterns, checked and normalized. */
static void test_agent_patterns(void **state)
{
	char out[TOKEN_AGENTS_MAX + 1], long_list[TOKEN_AGENTS_MAX + 64];
	struct rf_err e = { 0 };

	(void)state;
	assert_int_equal(tokens_agents_parse("h7", out, &e), 0);
	assert_string_equal(out, "h7");
	assert_int_equal(tokens_agents_parse(" leaf* ,\tspine?, gpu-a1.rack_2 ", out, &e), 0);
	assert_string_equal(out, "leaf*,spine?,gpu-a1.rack_2");
	assert_int_equal(tokens_agents_parse("*", out, &e), 0);
	/* in place, as the command line does */
	snprintf(long_list, sizeof(long_list), "a , b");
	assert_int_equal(tokens_agents_parse(long_list, long_list, &e), 0);
	assert_string_equal(long_list, "a,b");

	/* what is refused: empty entries, characters outside ids and wildcards (no [classes] or
	 * escapes), a leading '.' or '-' (no id starts so), entries longer than an id */
	static const char *const bad[] = { "", " ", ",", "h1,", ",h1", "h1,,h2", "h 1", "h[12]", "h\\1",
					   "h/1", "h1;h2", "-h", ".h", "h\n", "é" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&e, 0, sizeof(e));
		snprintf(out, sizeof(out), "untouched");
		assert_int_equal(tokens_agents_parse(bad[i], out, &e), -EINVAL);
		assert_string_equal(e.code, "BAD_AGENT_PATTERN");
		assert_string_equal(out, "untouched");
	}
	memset(long_list, 'x', 65);
	long_list[65] = '\0';
	assert_int_equal(tokens_agents_parse(long_list, out, &e), -EINVAL);
	long_list[64] = '\0'; /* 64: as long as an id may be */
	assert_int_equal(tokens_agents_parse(long_list, out, &e), 0);
	/* the whole list: at most TOKEN_AGENTS_MAX */
	for (size_t i = 0; i + 2 < sizeof(long_list); i += 2)
		memcpy(long_list + i, "h,", 2);
	long_list[TOKEN_AGENTS_MAX + 1] = '\0'; /* "h,h,...h,h" of 1025 */
	assert_int_equal(tokens_agents_parse(long_list, out, &e), -E2BIG);
	assert_string_equal(e.code, "AGENTS_TOO_LONG");
	long_list[TOKEN_AGENTS_MAX - 1] = '\0';
	assert_int_equal(tokens_agents_parse(long_list, out, &e), 0);

	/* matching: whole ids, '*' any run (also none), '?' exactly one */
	assert_true(tokens_agent_allowed("h7", "h7"));
	assert_false(tokens_agent_allowed("h7", "h70"));
	assert_false(tokens_agent_allowed("h7", "h"));
	assert_false(tokens_agent_allowed("h7", "H7"));
	assert_true(tokens_agent_allowed("leaf*", "leaf"));
	assert_true(tokens_agent_allowed("leaf*", "leaf12"));
	assert_false(tokens_agent_allowed("leaf*", "spine0"));
	assert_false(tokens_agent_allowed("leaf*", "xleaf1"));
	assert_true(tokens_agent_allowed("h?", "h1"));
	assert_false(tokens_agent_allowed("h?", "h12"));
	assert_true(tokens_agent_allowed("h*,leaf*,spine*", "spine1"));
	assert_true(tokens_agent_allowed("h1,h2", "h2"));
	assert_false(tokens_agent_allowed("h1,h2", "h3"));
	assert_true(tokens_agent_allowed("*", "anything.at-all"));
	assert_true(tokens_agent_allowed("*-rack?.*", "gpu-rack3.dc1"));
	/* an id from a URL is just a string: its '*' or '[' match nothing special */
	assert_false(tokens_agent_allowed("h1", "h*"));
	assert_false(tokens_agent_allowed("h1", "h[1]"));
	assert_true(tokens_agent_allowed("h*", "h*"));
	/* unbound: any agent (until the next release) */
	assert_true(tokens_agent_allowed(NULL, "h1"));
	assert_true(tokens_agent_allowed("", "h1"));
}

/* Tokens of role agent keep their binding: added, checked, listed, rebound, and the unbound
 * ones named. */
static void test_token_bindings(void **state)
{
	struct store_conf c = { .path = dbpath, .readers = 1 };
	char tok[TOKEN_LEN + 1], tok2[TOKEN_LEN + 1], tok3[TOKEN_LEN + 1], name[65],
		agents[TOKEN_AGENTS_MAX + 1];
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *names = NULL;
	struct store *s;
	enum role role;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	unlink(dbpath);
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(tokens_add(s, "h7", ROLE_AGENT, "h7", tok, &e), 0);
	assert_int_equal(tokens_add(s, "fleet", ROLE_AGENT, "leaf* , spine*", tok2, &e), 0);
	assert_int_equal(tokens_add(s, "old", ROLE_AGENT, NULL, tok3, &e), 0);
	/* a binding is for agent tokens only, and is checked */
	assert_int_equal(tokens_add(s, "ops", ROLE_OPERATOR, "h7", tok3, &e), -EINVAL);
	assert_string_equal(e.code, "AGENTS_NEED_AGENT_ROLE");
	assert_int_equal(tokens_add(s, "admin", ROLE_ADMIN, "*", tok3, &e), -EINVAL);
	assert_int_equal(tokens_add(s, "bad", ROLE_AGENT, "h[1-3]", tok3, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_AGENT_PATTERN");
	assert_int_equal(tokens_add(s, "viewer", ROLE_VIEWER, NULL, tok3, &e), 0);

	rd = store_reader_get(s);
	assert_non_null(rd);
	assert_int_equal(tokens_check(rd, tok, &role, name, agents), 0);
	assert_int_equal(role, ROLE_AGENT);
	assert_string_equal(agents, "h7");
	assert_int_equal(tokens_check(rd, tok2, &role, name, agents), 0);
	assert_string_equal(agents, "leaf*,spine*"); /* stored normalized */
	assert_int_equal(tokens_check(rd, tok3, &role, name, agents), 0);
	assert_string_equal(agents, ""); /* not an agent token: none */
	assert_int_equal(tokens_unbound(rd, &names), 0);
	assert_int_equal(json_array_size(names), 1);
	assert_string_equal(json_string_value(json_array_get(names, 0)), "old");
	json_decref(names);

	/* the unbound token is bound in place; a revoked or non-agent token cannot be */
	assert_int_equal(tokens_bind(s, "old", "h1,h2", &e), 0);
	assert_int_equal(tokens_unbound(rd, &names), 0);
	assert_int_equal(json_array_size(names), 0);
	json_decref(names);
	assert_int_equal(tokens_bind(s, "viewer", "h1", &e), -ENOENT);
	assert_int_equal(tokens_bind(s, "nobody", "h1", &e), -ENOENT);
	assert_string_equal(e.code, "TOKEN_NOT_FOUND");
	assert_int_equal(tokens_bind(s, "old", "h1,", &e), -EINVAL);
	assert_int_equal(tokens_bind(s, "old", NULL, &e), -EINVAL);
	assert_int_equal(tokens_revoke(s, "h7", &e), 0);
	assert_int_equal(tokens_bind(s, "h7", "h8", &e), -ENOENT);
	/* an unbound agent token: made without one (the command line warns) */
	assert_int_equal(tokens_add(s, "legacy", ROLE_AGENT, NULL, tok3, &e), 0);
	assert_int_equal(tokens_check(rd, tok3, &role, name, agents), 0);
	assert_string_equal(agents, "");
	store_reader_put(s, rd);

	/* the list shows bindings, "(unbound)" for an agent token without one, "-" for others */
	f = open_memstream(&text, &len);
	assert_int_equal(tokens_print(s, f, &e), 0);
	fclose(f);
	assert_non_null(strstr(text, "AGENTS\n"));
	assert_non_null(strstr(text, "leaf*,spine*\n"));
	assert_non_null(strstr(text, "h1,h2\n"));
	assert_non_null(strstr(text, "(unbound)\n"));
	assert_non_null(strstr(text, "h7~revoked~")); /* keeps its binding in the record */
	free(text);
	store_close(s);
	unlink(dbpath);
}

/* A schema-5 database (tests/data/store-v5.sql: tokens made before agent bindings): its tokens
 * keep working after migration 6, the agent token unbound. */
static void test_migration_from_v5(void **state)
{
	struct store_conf c = { .path = dbpath, .readers = 1 };
	char name[65], agents[TOKEN_AGENTS_MAX + 1], tok[TOKEN_LEN + 1];
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *names = NULL;
	struct store *s;
	enum role role;

	(void)state;
	db_from_dump("tests/data/store-v5.sql");
	assert_int_equal(store_open(&c, false, &s, &e), 0);
	assert_int_equal(user_version(s), STORE_SCHEMA_VERSION);
	rd = store_reader_get(s);
	assert_non_null(rd);
	assert_int_equal(tokens_check(rd, "rfb_v5fleetAgentTokenMadeBeforeAgentBinding0001", &role, name,
				      agents),
			 0);
	assert_int_equal(role, ROLE_AGENT);
	assert_string_equal(name, "fleet");
	assert_string_equal(agents, "");
	assert_true(tokens_agent_allowed(agents, "anyone"));
	assert_int_equal(tokens_check(rd, "rfb_v5operatorTokenMadeBeforeAgentBinding000002", &role,
				      name, agents),
			 0);
	assert_int_equal(role, ROLE_OPERATOR);
	/* the revoked agent token is not named */
	assert_int_equal(tokens_unbound(rd, &names), 0);
	assert_int_equal(json_array_size(names), 1);
	assert_string_equal(json_string_value(json_array_get(names, 0)), "fleet");
	json_decref(names);
	assert_int_equal(tokens_bind(s, "fleet", "h*,leaf*,spine*", &e), 0);
	assert_int_equal(tokens_check(rd, "rfb_v5fleetAgentTokenMadeBeforeAgentBinding0001", &role, name,
				      agents),
			 0);
	assert_string_equal(agents, "h*,leaf*,spine*");
	assert_int_equal(tokens_add(s, "h1", ROLE_AGENT, "h1", tok, &e), 0);
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

/* --- the store's watch, and the event ring it feeds ---------------------------------------- */

struct seen {
	char table[16];
	int64_t rowid;
};

struct watch_log {
	struct seen v[4096];
	int n;
};

static void on_watch(void *ctx, const char *table, int64_t rowid)
{
	struct watch_log *w = ctx;

	snprintf(w->v[w->n].table, sizeof(w->v[0].table), "%s", table);
	w->v[w->n++].rowid = rowid;
}

struct sql_job {
	struct store_job job;
	const char *sql;
	int64_t note; /* a row of "alerts" to note, or 0 */
	int fail;
};

static int sql_apply(struct store_job *job, struct store *s)
{
	struct sql_job *j = (struct sql_job *)job;
	int r = store_exec(store_writer_db(s), j->sql, NULL);

	if (j->note)
		store_note_row(s, "alerts", j->note);
	return j->fail ? -EINVAL : r;
}

static void run_sql(struct store *s, const char *sql, int64_t note, int fail)
{
	struct sql_job j = { .job = { .apply = sql_apply }, .sql = sql, .note = note, .fail = fail };

	store_submit_wait(s, &j.job);
}

static void test_watch(void **state)
{
	static const char *const tables[] = { "changes", NULL };
	static struct watch_log w;
	struct store_conf c = { .path = dbpath };
	struct rf_err e = { 0 };
	struct store *s;
	char sql[4096];

	(void)state;
	unlink(dbpath);
	memset(&w, 0, sizeof(w));
	assert_int_equal(store_open(&c, true, &s, &e), 0);
	assert_int_equal(store_set_watch(s, tables, on_watch, &w), 0);
	/* a row inserted then updated twice in one transaction: reported once, after COMMIT */
	run_sql(s, "INSERT INTO changes(batch, created_ns, actor, agent_id, kind, device, port, params, "
		   "state, deadline_ns, updated_ns) VALUES(1, 1, 'a', 'h', 'ecn', 'd', 'p', '{}', 'pending', 9, 1);"
		   "UPDATE changes SET state = 'sent' WHERE id = 1; UPDATE changes SET state = 'applied' WHERE id = 1;",
		0, 0);
	assert_int_equal(w.n, 1);
	assert_string_equal(w.v[0].table, "changes");
	assert_int_equal(w.v[0].rowid, 1);
	/* alerts are not watched: written rows are not reported, noted ones are */
	run_sql(s, "INSERT INTO alerts(kind, subject, state, first_ns, last_ns) VALUES('tor', 'x', 'active', 1, 1);"
		   "UPDATE alerts SET last_ns = 2 WHERE id = 1", 0, 0);
	assert_int_equal(w.n, 1);
	run_sql(s, "UPDATE alerts SET state = 'cleared' WHERE id = 1", 1, 0);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.v[1].table, "alerts");
	assert_int_equal(w.v[1].rowid, 1);
	/* deleted rows are not news (retention) */
	run_sql(s, "DELETE FROM changes WHERE id = 1", 0, 0);
	assert_int_equal(w.n, 2);
	/* beyond 1,024 rows of one table in a transaction: one "many" (rowid 0) for that table only,
	 * the rows of another table still each reported */
	{
		int len = snprintf(sql, sizeof(sql), "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
						     "WHERE i < 1500) INSERT INTO changes(batch, created_ns, actor, agent_id, "
						     "kind, device, port, params, state, deadline_ns, updated_ns) SELECT 2, 1, "
						     "'a', 'h', 'ecn', 'd', 'p', '{}', 'pending', 9, 1 FROM n");

		assert_true(len > 0 && len < (int)sizeof(sql));
	}
	w.n = 0;
	run_sql(s, sql, 7, 0);
	assert_int_equal(w.n, 1 + 1); /* the noted alert came first, then "many changes" */
	assert_string_equal(w.v[0].table, "alerts");
	assert_string_equal(w.v[1].table, "changes");
	assert_int_equal(w.v[1].rowid, 0);
	store_close(s);
	unlink(dbpath);
}

static void test_events_ring(void **state)
{
	struct events *ev;
	struct buf out;
	uint64_t seq = 99, last = 0;
	char id[64];

	(void)state;
	assert_int_equal(events_new(16, &ev), 0);
	assert_int_equal(events_last(ev), 0);
	/* no event yet: the id of "nothing" resumes, and there is nothing to read */
	events_format_id(ev, 0, id, sizeof(id));
	assert_int_equal(events_parse_id(ev, id, &seq), 0);
	assert_int_equal(seq, 0);
	buf_init(&out);
	assert_int_equal(events_since(ev, 0, 1 << 20, &out, &last), 0);
	for (int i = 1; i <= 40; i++)
		assert_int_equal(events_publish(ev, "change", json_pack("{s:i}", "id", i)), (uint64_t)i);
	/* the ring keeps 25..40: resuming after 24 reads them all, after 23 is too late */
	events_format_id(ev, 24, id, sizeof(id));
	assert_int_equal(events_parse_id(ev, id, &seq), 0);
	assert_int_equal(events_since(ev, 24, 1 << 20, &out, &last), 1);
	assert_int_equal(last, 40);
	assert_non_null(strstr(out.data, "event: change\ndata: {\"id\":25}\n\n"));
	assert_null(strstr(out.data, "{\"id\":24}"));
	events_format_id(ev, 23, id, sizeof(id));
	assert_int_equal(events_parse_id(ev, id, &seq), -ESTALE);
	assert_int_equal(events_since(ev, 23, 1 << 20, &out, &last), -ESTALE);
	/* what a client may send: another run's ids, junk, numbers beyond */
	static const char *const bad[] = { "abc-3", "", "-", "1-1", "41", NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_equal(events_parse_id(ev, bad[i], &seq), -ESTALE);
	events_format_id(ev, 41, id, sizeof(id));
	assert_int_equal(events_parse_id(ev, id, &seq), -ESTALE);
	snprintf(id + strcspn(id, "-"), 8, "-+39");
	assert_int_equal(events_parse_id(ev, id, &seq), -ESTALE);
	/* a bounded read: at least one event, then as many as fit */
	buf_reset(&out);
	assert_int_equal(events_since(ev, 30, 1, &out, &last), 1);
	assert_int_equal(last, 31);
	buf_fini(&out);
	events_free(ev);
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

/* A report of h1 with these samples (a JSON array's items). */
static struct ingest_result submit_samples(struct ingest *ing, const struct reg *reg, int seq, const char *host_boot,
					   int64_t t, const char *samples)
{
	struct waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rf_err e = { 0 };
	struct report *r = NULL;
	char doc[4096];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":1,\"agent\":{\"id\":\"h1\",\"role\":\"host\",\"boot_id\":\"b1\","
		 "\"host_boot_id\":\"%s\",\"version\":\"t\",\"backend\":\"linux\"},\"seq\":%d,"
		 "\"time_ns\":%lld,\"interval_ms\":1000,\"inventory\":{\"devices\":[{\"name\":"
		 "\"mlx5_0\",\"kind\":\"rdma\",\"driver\":\"mlx5\",\"ports\":[{\"port\":\"1\","
		 "\"state\":\"up\"}]}]},\"samples\":[%s]}",
		 host_boot, seq, (long long)t, samples);
	assert_int_equal(report_parse(doc, strlen(doc), reg, &r, &e), 0);
	assert_int_equal(ingest_submit(ing, r, on_done, &w), 0);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.res;
}

#define NO_VALUE (~0ULL) /* submit: a source not in the report */

static struct ingest_result submit(struct ingest *ing, const struct reg *reg, int seq,
				   const char *host_boot, int64_t t, unsigned long long xmit_words,
				   unsigned long long oos, unsigned long long pause3)
{
	char samples[1024] = "";
	size_t n = 0;

	if (xmit_words != NO_VALUE)
		n += (size_t)snprintf(samples + n, sizeof(samples) - n,
				      "{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":\"ib_counters\",\"t_ns\":%lld,"
				      "\"values\":{\"port_xmit_data\":%llu}},",
				      (long long)t, xmit_words);
	snprintf(samples + n, sizeof(samples) - n,
		 "{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":\"hw_counters\",\"driver\":\"mlx5\",\"t_ns\":%lld,"
		 "\"values\":{\"out_of_sequence\":%llu}},{\"device\":\"mlx5_0\",\"port\":\"1\","
		 "\"source\":\"ethtool\",\"t_ns\":%lld,\"values\":{\"rx_prio3_pause\":%llu}}",
		 (long long)t, oos, (long long)t, pause3);
	return submit_samples(ing, reg, seq, host_boot, t, samples);
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

/* The value /metrics shows for the sample of h1:mlx5_0:1 whose line starts with metric; -1: none. */
static long long metric_value(struct ingest *ing, const char *metric)
{
	struct buf b;
	long long v = -1;
	const char *l;

	buf_init(&b);
	assert_int_equal(ingest_render_metrics(ing, 0xff, &b), 0);
	for (l = b.data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, metric, strlen(metric)) == 0 && l[strlen(metric)] == '{' &&
		    strstr(l, "port=\"1\"")) {
			v = strtoll(strchr(l, '}') + 1, NULL, 10);
			break;
		}
	buf_fini(&b);
	return v;
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

	/* /metrics counts across the reset and the wrap: 4 x (3500 + 100) bytes */
	assert_int_equal(metric_value(ing, "rocefab_port_roce_tx_bytes_total"), 14400);
	assert_int_equal(metric_value(ing, "rocefab_port_out_of_sequence_total"), 0x100000020LL);

	/* reopen everything: the state comes back from the database */
	close_all(s, ing, reg);
	open_all(&s, &ing, &reg);
	/* (a port not reported since the start is not in /metrics: its scale is not known) */
	assert_int_equal(metric_value(ing, "rocefab_port_roce_tx_bytes_total"), -1);
	res = submit(ing, reg, 4, "boot-A", T0 + 4 * NSEC_PER_SEC, 600, 0x21, 33);
	assert_int_equal(res.baseline, 0);
	/* and the totals go on from where they were, not from raw x scale (2400, 0x21: a
	 * Prometheus counter that went down, a false increase of its whole value) */
	assert_int_equal(metric_value(ing, "rocefab_port_roce_tx_bytes_total"), 14400 + 2000);
	assert_int_equal(metric_value(ing, "rocefab_port_out_of_sequence_total"), 0x100000021LL);
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

static int64_t count_rows(struct store *s, const char *sql)
{
	struct store_reader *rd = store_reader_get(s);
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int64_t n = -1;

	assert_non_null(st);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	store_reader_put(s, rd);
	return n;
}

/* A driver reload resets the port's counters together: a 32-bit counter that was above half
 * its range and went back is reset with them, not wrapped (it read as 268 million packets out
 * of sequence in a second); alone, the same step is a wrap. */
static void test_port_reset(void **state)
{
	struct ingest *ing;
	struct store *s;
	struct reg *reg;
	json_t *p;

	(void)state;
	unlink(dbpath);
	open_all(&s, &ing, &reg);
	assert_int_equal(submit(ing, reg, 1, "boot-A", T0, 5000, 0xF0000000u, 10).status, 0);
	/* port_xmit_data (64 bits) went back too: a reset of the port */
	assert_int_equal(submit(ing, reg, 2, "boot-A", T0 + NSEC_PER_SEC, 10, 5, 12).status, 0);
	p = last_point(s, ing, "out_of_sequence");
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 5);
	assert_true(has_flag(p, "reset"));
	json_decref(p);
	/* up high again, then near 0 while the 64-bit counters go on: a wrap */
	assert_int_equal(submit(ing, reg, 3, "boot-A", T0 + 2 * NSEC_PER_SEC, 20, 0xF0000000u, 14).status, 0);
	assert_int_equal(submit(ing, reg, 4, "boot-A", T0 + 3 * NSEC_PER_SEC, 30, 5, 16).status, 0);
	p = last_point(s, ing, "out_of_sequence");
	assert_int_equal(json_integer_value(json_object_get(p, "delta")), 0x10000005LL);
	assert_true(has_flag(p, "wrap"));
	json_decref(p);
	/* a gauge going down (a queue drained) is no reset of the port, and has no total to keep:
	 * no row written for it (each fall of every queue's depth was one) */
	{
		char smp[600];
		int64_t offsets = count_rows(s, "SELECT count(*) FROM total_offsets");

		for (int k = 0; k < 2; k++) {
			int64_t t = T0 + (5 + k) * NSEC_PER_SEC;

			snprintf(smp, sizeof(smp),
				 "{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":\"hw_counters\","
				 "\"driver\":\"mlx5\",\"t_ns\":%lld,\"values\":{\"out_of_sequence\":%u}},"
				 "{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":\"sim\",\"t_ns\":%lld,"
				 "\"values\":{\"queue_depth_bytes_prio3\":%u}}",
				 (long long)t, k ? 5u : 0xF0000000u, (long long)t, k ? 100u : 500000u);
			assert_int_equal(submit_samples(ing, reg, 5 + k, "boot-A", t, smp).status, 0);
		}
		p = last_point(s, ing, "out_of_sequence");
		assert_true(has_flag(p, "wrap"));
		json_decref(p);
		/* (the wrap's) */
		assert_int_equal(count_rows(s, "SELECT count(*) FROM total_offsets"), offsets + 0);
	}
	close_all(s, ing, reg);
	unlink(dbpath);
}

/* A counter whose source failed in the newest stored report (absent from its row) keeps its
 * total across a restart: it goes on when the counter comes back. */
static void test_total_of_a_counter_missing_at_restart(void **state)
{
	struct ingest *ing;
	struct store *s;
	struct reg *reg;

	(void)state;
	unlink(dbpath);
	open_all(&s, &ing, &reg);
	assert_int_equal(submit(ing, reg, 1, "boot-A", T0, 1000, 10, 10).status, 0);
	/* a reset: 4 x (1000 + 100) */
	assert_int_equal(submit(ing, reg, 2, "boot-A", T0 + NSEC_PER_SEC, 100, 20, 12).status, 0);
	assert_int_equal(metric_value(ing, "rocefab_port_roce_tx_bytes_total"), 4400);
	/* the RDMA counters could not be read */
	assert_int_equal(submit(ing, reg, 3, "boot-A", T0 + 2 * NSEC_PER_SEC, NO_VALUE, 30, 14).status, 0);
	assert_int_equal(metric_value(ing, "rocefab_port_roce_tx_bytes_total"), 4400);
	close_all(s, ing, reg);
	open_all(&s, &ing, &reg);
	assert_int_equal(submit(ing, reg, 4, "boot-A", T0 + 3 * NSEC_PER_SEC, 200, 40, 16).status, 0);
	/* 4400 + 4 x 100 (it was 800: raw x scale, a fall of the counter) */
	assert_int_equal(metric_value(ing, "rocefab_port_roce_tx_bytes_total"), 4800);
	close_all(s, ing, reg);
	unlink(dbpath);
}

/* A writer job that gives port h1:mlx5_0:1 extra samples and per-minute rollups (their blobs
 * are not read by forgetting). */
struct fill_job {
	struct store_job job;
	int samples, minutes;
};

static int fill_apply(struct store_job *sj, struct store *s)
{
	struct fill_job *j = (struct fill_job *)sj;
	sqlite3 *db = store_writer_db(s);
	char sql[400];

	snprintf(sql, sizeof(sql),
		 "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) INSERT INTO samples "
		 "SELECT (SELECT id FROM ports WHERE key = 'h1:mlx5_0:1'), %lld - i * 1000000000, 1, zeroblob(8) FROM k",
		 j->samples, (long long)T0);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	snprintf(sql, sizeof(sql),
		 "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) INSERT INTO rollups "
		 "SELECT 60, (SELECT id FROM ports WHERE key = 'h1:mlx5_0:1'), %lld - i * 60000000000, 1, zeroblob(8) "
		 "FROM k", j->minutes, (long long)T0);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	/* and a total that counted across a reset */
	return sqlite3_exec(db, "INSERT INTO total_offsets SELECT id, 1, 255, 7 FROM ports WHERE key = 'h1:mlx5_0:1'",
			    NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}


/* ingest_forget_agent's answer, waited for. */
struct forgot {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int r;
	json_t *doc;
	struct rf_err e;
};

static void forgot_done(void *ctx, int r, json_t *doc, const struct rf_err *e)
{
	struct forgot *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->r = r;
	w->doc = doc;
	w->e = *e;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static bool stop_now(void *ctx)
{
	(void)ctx;
	return false;
}

static int forget(struct ingest *ing, const char *id, const struct views_opts *o, json_t **doc, struct rf_err *e,
		  bool stopping)
{
	static const struct ingest_forget_cb cb = { .done = forgot_done }, stop = { .go_on = stop_now,
										   .done = forgot_done };
	struct forgot w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	int r = ingest_forget_agent(ing, id, o, stopping ? &stop : &cb, &w, e);

	if (r < 0)
		return r;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	*doc = w.doc;
	*e = w.e;
	return w.r;
}

/* Forgetting an agent deletes its data in steps of their own writer jobs (a big switch's in
 * one job stopped the writer for seconds); a live agent is not forgotten. */
static void test_forget(void **state)
{
	struct fill_job fill = { .job = { .apply = fill_apply }, .samples = 45000, .minutes = 21000 };
	struct views_opts o = { .now_ns = tu_now_ns(), .stale_intervals = 3 }; /* (last seen: when received) */
	struct store_stats before, after;
	struct rf_err e = { 0 };
	struct ingest *ing;
	struct store *s;
	struct reg *reg;
	json_t *doc = NULL;

	(void)state;
	unlink(dbpath);
	open_all(&s, &ing, &reg);
	assert_int_equal(submit(ing, reg, 1, "boot-A", T0, 1000, 0, 10).status, 0);
	assert_int_equal(store_submit_wait(s, &fill.job), 0);
	/* it reported a moment ago */
	assert_int_equal(forget(ing, "h1", &o, &doc, &e, false), -EALREADY);
	assert_string_equal(e.code, "AGENT_ACTIVE");
	assert_int_equal(count_rows(s, "SELECT count(*) FROM samples"), 45001);
	/* gone for good; rocefabd stopping after the first step: said, and the rest kept */
	o.now_ns += 3600 * NSEC_PER_SEC;
	assert_int_equal(forget(ing, "h1", &o, &doc, &e, true), -ECANCELED);
	assert_string_equal(e.code, "SHUTTING_DOWN");
	assert_non_null(strstr(e.msg, "forgotten in part (20000 rows of its data went before)"));
	assert_null(doc);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM samples"), 25001);
	/* forgotten again: the rest */
	store_get_stats(s, &before);
	assert_int_equal(forget(ing, "h1", &o, &doc, &e, false), 0);
	store_get_stats(s, &after);
	assert_int_equal(json_integer_value(json_object_get(doc, "ports")), 1);
	assert_true(json_integer_value(json_object_get(doc, "rows")) >= 25001 + 21000 + 3);
	json_decref(doc);
	/* 46,001 rows of data at most 20,000 a job: 3 jobs (the last with what names it) */
	assert_int_equal(after.jobs - before.jobs, 3);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM samples"), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM rollups"), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM ports"), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM total_offsets"), 0);
	assert_int_equal(count_rows(s, "SELECT count(*) FROM agents"), 0);
	doc = NULL;
	assert_int_equal(forget(ing, "h1", &o, &doc, &e, false), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_AGENT");
	assert_null(doc);
	close_all(s, ing, reg);
	unlink(dbpath);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrations),
		cmocka_unit_test(test_file_modes),
		cmocka_unit_test(test_migration_from_v1),
		cmocka_unit_test(test_migration_from_v4),
		cmocka_unit_test(test_migration_from_v5),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_agent_patterns),
		cmocka_unit_test(test_token_bindings),
		cmocka_unit_test(test_writer_queue),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_events_ring),
		cmocka_unit_test(test_ingest), cmocka_unit_test(test_port_reset),
		cmocka_unit_test(test_total_of_a_counter_missing_at_restart),
		cmocka_unit_test(test_forget),
	};

	return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
