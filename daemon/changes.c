/* Configuration changes: see changes.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/changes.h"
#include "daemon/pingmesh.h"
#include "lib/log.h"
#include "lib/timeutil.h"

static const char *const kind_names[] = { "dcqcn", "ecn", "pfc", NULL };
static const char *const command_kinds[] = { "set_dcqcn", "set_ecn", "set_pfc" };

const char *change_kind_name(enum change_kind k)
{
	return kind_names[k];
}

int change_kind_parse(const char *s, enum change_kind *ret)
{
	for (int i = 0; kind_names[i]; i++)
		if (s && !strcmp(s, kind_names[i])) {
			*ret = (enum change_kind)i;
			return 0;
		}
	return -EINVAL;
}

static json_t *col_json(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);
	json_t *v = s ? json_loads(s, 0, NULL) : NULL;

	return v ? v : json_null();
}

/* --- on every report ---------------------------------------------------------------------- */

static int store_config(struct store *s, const struct report *rep, int64_t now)
{
	static const char ins[] = "INSERT INTO configs(agent_id, kind, device, port, queue, value, t_ns) "
				  "VALUES(?,?,?,?,?,?,?) ON CONFLICT(agent_id, kind, device, port, queue) "
				  "DO UPDATE SET value=excluded.value, t_ns=excluded.t_ns";
	static const char gone[] = "DELETE FROM configs WHERE agent_id = ? AND t_ns < ?";
	sqlite3_stmt *st;
	int r;

	for (int k = 0; kind_names[k]; k++) {
		json_t *list = json_object_get(rep->config, kind_names[k]), *it;
		size_t i;

		json_array_foreach(list, i, it) {
			json_t *v = json_deep_copy(it);
			char *text;

			json_object_del(v, "device");
			json_object_del(v, "port");
			json_object_del(v, "queue");
			text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
			json_decref(v);
			if (!text || !(st = store_stmt(s, ins))) {
				free(text);
				return -ENOMEM;
			}
			sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, kind_names[k], -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, json_string_value(json_object_get(it, "device")), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 4, json_string_value(json_object_get(it, "port")), -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 5, json_object_get(it, "queue")
							  ? json_integer_value(json_object_get(it, "queue")) : -1);
			sqlite3_bind_text(st, 6, text, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 7, now);
			free(text);
			if ((r = store_step(st)) < 0)
				return r;
		}
	}
	/* the report has the whole configuration: what it does not list is gone */
	if (!(st = store_stmt(s, gone)))
		return -EIO;
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	return store_step(st);
}

static int record_results(struct store *s, const struct report *rep, int64_t now)
{
	static const char upd[] = "UPDATE changes SET state = ?, error = ?, new = ?, updated_ns = ? "
				  "WHERE id = ? AND agent_id = ? AND state IN ('pending', 'sent', 'timed_out')";
	json_t *it;
	size_t i;
	int r;

	json_array_foreach(rep->command_results, i, it) {
		const char *id = json_string_value(json_object_get(it, "id"));
		const char *outcome = json_string_value(json_object_get(it, "outcome"));
		json_t *err = json_object_get(it, "error"), *vals = json_object_get(it, "values");
		char *err_text = err ? json_dumps(err, JSON_COMPACT) : NULL;
		char *val_text = json_is_object(vals) ? json_dumps(vals, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		sqlite3_stmt *st;
		char *end;
		long long cid;

		/* commands are "c<change id>"; anything else is not ours */
		if (!id || id[0] != 'c' || (cid = strtoll(id + 1, &end, 10)) <= 0 || *end) {
			free(err_text);
			free(val_text);
			continue;
		}
		if (!(st = store_stmt(s, upd))) {
			free(err_text);
			free(val_text);
			return -EIO;
		}
		sqlite3_bind_text(st, 1, outcome, -1, SQLITE_STATIC);
		if (err_text)
			sqlite3_bind_text(st, 2, err_text, -1, SQLITE_TRANSIENT);
		if (val_text)
			sqlite3_bind_text(st, 3, val_text, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 4, now);
		sqlite3_bind_int64(st, 5, cid);
		sqlite3_bind_text(st, 6, rep->agent_id, -1, SQLITE_STATIC);
		r = store_step(st);
		free(err_text);
		free(val_text);
		if (r < 0)
			return r;
		if (sqlite3_changes(store_writer_db(s)) > 0)
			log_info("changes", "change %lld on %s: %s", cid, rep->agent_id, outcome);
	}
	return 0;
}

static const char timeout_error[] =
	"{\"code\":\"NO_ANSWER\",\"message\":\"the agent did not report an outcome before the "
	"deadline (is it running and reachable?)\"}";

int changes_on_report(struct store *s, const struct report *rep, int64_t now, json_t **ret_commands)
{
	static const char expire[] =
		"UPDATE changes SET state = 'timed_out', error = ?, updated_ns = ? "
		"WHERE agent_id = ? AND state IN ('pending', 'sent') AND deadline_ns + ? < ?";
	static const char open_sql[] =
		"SELECT id, kind, device, port, queue, params, deadline_ns, reason FROM changes "
		"WHERE agent_id = ? AND state IN ('pending', 'sent') AND deadline_ns > ? ORDER BY id LIMIT 64";
	static const char sent_sql[] =
		"UPDATE changes SET state = 'sent', sent_ns = ?, updated_ns = ? "
		"WHERE agent_id = ? AND state = 'pending' AND deadline_ns > ?";
	json_t *cmds = json_array();
	sqlite3_stmt *st;
	int r, rc;

	*ret_commands = NULL;
	if (!cmds)
		return -ENOMEM;
	if ((rep->config && (r = store_config(s, rep, now)) < 0) ||
	    (rep->command_results && (r = record_results(s, rep, now)) < 0))
		goto fail;
	if (!(st = store_stmt(s, expire))) {
		r = -EIO;
		goto fail;
	}
	sqlite3_bind_text(st, 1, timeout_error, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	sqlite3_bind_text(st, 3, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, CHANGES_GRACE_NS);
	sqlite3_bind_int64(st, 5, now);
	if ((r = store_step(st)) < 0)
		goto fail;
	if (!(st = store_stmt(s, open_sql))) {
		r = -EIO;
		goto fail;
	}
	sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		enum change_kind k = CHANGE_DCQCN;
		json_t *params = col_json(st, 5), *cmd;
		char id[32];

		change_kind_parse((const char *)sqlite3_column_text(st, 1), &k);
		if (!json_is_object(params)) {
			json_decref(params);
			params = json_object();
		}
		json_object_set_new(params, "device", store_col_text(st, 2));
		json_object_set_new(params, "port", store_col_text(st, 3));
		if (k == CHANGE_ECN)
			json_object_set_new(params, "queue", json_integer(sqlite3_column_int64(st, 4)));
		snprintf(id, sizeof(id), "c%lld", (long long)sqlite3_column_int64(st, 0));
		cmd = json_pack("{s:i,s:s,s:s,s:s,s:o,s:I}", "schema", 1, "id", id, "target",
				rep->agent_id, "kind", command_kinds[k], "params", params, "deadline_ns",
				(json_int_t)sqlite3_column_int64(st, 6));
		if (sqlite3_column_type(st, 7) != SQLITE_NULL)
			json_object_set_new(cmd, "reason", store_col_text(st, 7));
		json_array_append_new(cmds, cmd);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		r = store_errno(rc);
		goto fail;
	}
	if (json_array_size(cmds)) {
		if (!(st = store_stmt(s, sent_sql))) {
			r = -EIO;
			goto fail;
		}
		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_int64(st, 2, now);
		sqlite3_bind_text(st, 3, rep->agent_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, now);
		if ((r = store_step(st)) < 0)
			goto fail;
	}
	/* pingmesh: the agent's probe results, and its plan when it runs another */
	if ((r = pingmesh_on_report(s, rep, now, cmds)) < 0)
		goto fail;
	*ret_commands = cmds;
	return 0;
fail:
	json_decref(cmds);
	return r;
}

/* --- creating changes ------------------------------------------------------------------------ */

struct create_job {
	struct store_job job;
	struct change_spec *specs;
	size_t n;
	char *actor, *reason;
	int64_t deadline_ns, batch;
	changes_cb cb;
	void *ctx;
};

static int create_apply(struct store_job *sj, struct store *s)
{
	static const char ins[] =
		"INSERT INTO changes(batch, created_ns, actor, reason, agent_id, kind, device, port, "
		"queue, params, old, state, deadline_ns, updated_ns) "
		"VALUES(?,?,?,?,?,?,?,?,?,?,?,'pending',?,?)";
	static const char fix_batch[] = "UPDATE changes SET batch = ? WHERE batch = 0";
	struct create_job *j = (struct create_job *)sj;
	int64_t now = tu_now_ns();
	sqlite3_stmt *st;
	int r;

	for (size_t i = 0; i < j->n; i++) {
		const struct change_spec *c = &j->specs[i];
		char *params = json_dumps(c->params, JSON_COMPACT | JSON_SORT_KEYS);
		char *old = c->old ? json_dumps(c->old, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

		if (!params || !(st = store_stmt(s, ins))) {
			free(params);
			free(old);
			return -ENOMEM;
		}
		sqlite3_bind_int64(st, 1, j->batch);
		sqlite3_bind_int64(st, 2, now);
		sqlite3_bind_text(st, 3, j->actor, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 4, j->reason);
		sqlite3_bind_text(st, 5, c->agent, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, kind_names[c->kind], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, c->device, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 8, c->port, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 9, c->queue);
		sqlite3_bind_text(st, 10, params, -1, SQLITE_TRANSIENT);
		if (old)
			sqlite3_bind_text(st, 11, old, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 12, j->deadline_ns);
		sqlite3_bind_int64(st, 13, now);
		r = store_step(st);
		free(params);
		free(old);
		if (r < 0)
			return r;
		if (i == 0)
			j->batch = sqlite3_last_insert_rowid(store_writer_db(s));
	}
	/* the first change got batch 0 before its id was known */
	if (!(st = store_stmt(s, fix_batch)))
		return -EIO;
	sqlite3_bind_int64(st, 1, j->batch);
	return store_step(st);
}

static void create_done(struct store_job *sj, int result)
{
	struct create_job *j = (struct create_job *)sj;

	if (j->cb)
		j->cb(j->ctx, result, result < 0 ? 0 : j->batch);
	change_specs_free(j->specs, j->n);
	free(j->actor);
	free(j->reason);
	free(j);
}

void change_specs_free(struct change_spec *specs, size_t n)
{
	for (size_t i = 0; specs && i < n; i++) {
		json_decref(specs[i].params);
		json_decref(specs[i].old);
	}
	free(specs);
}

int changes_submit(struct store *s, struct change_spec *specs, size_t n, const char *actor,
		   const char *reason, int64_t deadline_ns, changes_cb cb, void *ctx)
{
	struct create_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->job.apply = create_apply;
	j->job.done = create_done;
	j->actor = strdup(actor && *actor ? actor : "anonymous");
	j->reason = reason ? strdup(reason) : NULL;
	j->deadline_ns = deadline_ns;
	j->cb = cb;
	j->ctx = ctx;
	/* the job owns the specs once queued; they are read on the writer thread only */
	j->specs = specs;
	j->n = n;
	r = store_submit(s, &j->job);
	if (r < 0) {
		free(j->actor);
		free(j->reason);
		free(j);
		return r; /* the specs stay with the caller */
	}
	return 0;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
	int64_t batch;
};

static void wake(void *ctx, int result, int64_t batch)
{
	struct waiter *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->result = result;
	w->batch = batch;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int changes_create(struct store *s, struct change_spec *specs, size_t n, const char *actor,
		   const char *reason, int64_t deadline_ns, int64_t *ret_batch)
{
	struct waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	int r = changes_submit(s, specs, n, actor, reason, deadline_ns, wake, &w);

	if (r < 0) {
		change_specs_free(specs, n);
		return r;
	}
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	*ret_batch = w.batch;
	return w.result;
}

/* --- sweeping ------------------------------------------------------------------------------------ */

static int sweep_apply(struct store_job *sj, struct store *s)
{
	static const char sql[] =
		"UPDATE changes SET state = 'timed_out', error = ?, updated_ns = ? "
		"WHERE state IN ('pending', 'sent') AND deadline_ns + ? < ?";
	int64_t now = tu_now_ns();
	sqlite3_stmt *st = store_stmt(s, sql);

	(void)sj;
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, timeout_error, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	sqlite3_bind_int64(st, 3, CHANGES_GRACE_NS);
	sqlite3_bind_int64(st, 4, now);
	return store_step(st);
}

static void sweep_done(struct store_job *sj, int result)
{
	(void)result;
	free(sj);
}

int changes_sweep(struct store *s)
{
	struct store_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->apply = sweep_apply;
	j->done = sweep_done;
	r = store_submit(s, j);
	if (r < 0)
		free(j);
	return r;
}

/* --- reading ------------------------------------------------------------------------------------- */

#define CHANGE_COLS                                                                                \
	"c.id, c.batch, c.created_ns, c.actor, c.reason, c.agent_id, c.kind, c.device, c.port, "  \
	"c.queue, c.params, c.old, c.new, c.state, c.error, c.deadline_ns, c.sent_ns, "            \
	"c.updated_ns, a.role"

static json_t *change_row(sqlite3_stmt *st)
{
	json_t *target = json_pack("{s:o,s:o,s:o,s:o,s:o}", "kind", store_col_text(st, 6), "agent",
				   store_col_text(st, 5), "role", store_col_text(st, 18), "device",
				   store_col_text(st, 7), "port", store_col_text(st, 8));

	if (sqlite3_column_int64(st, 9) >= 0)
		json_object_set_new(target, "queue", json_integer(sqlite3_column_int64(st, 9)));
	return json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id",
			 (json_int_t)sqlite3_column_int64(st, 0), "batch",
			 (json_int_t)sqlite3_column_int64(st, 1), "created",
			 store_time_json(sqlite3_column_int64(st, 2)), "actor", store_col_text(st, 3), "reason",
			 store_col_text(st, 4), "target", target, "params", col_json(st, 10), "old",
			 col_json(st, 11), "new", col_json(st, 12), "state", store_col_text(st, 13), "error",
			 col_json(st, 14), "deadline", store_time_json(sqlite3_column_int64(st, 15)), "sent",
			 store_time_json(sqlite3_column_type(st, 16) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 16)),
			 "updated", store_time_json(sqlite3_column_int64(st, 17)));
}

int changes_list(struct store_reader *rd, const struct changes_filter *f, json_t **ret,
		 struct rf_err *e)
{
	static const char sql[] =
		"SELECT " CHANGE_COLS " FROM changes c LEFT JOIN agents a ON a.id = c.agent_id "
		"WHERE (?1 IS NULL OR c.agent_id = ?1) AND (?2 IS NULL OR c.kind = ?2) "
		"AND (?3 IS NULL OR c.state = ?3) AND (?4 = 0 OR c.batch = ?4) "
		"AND (?5 IS NULL OR c.device = ?5) AND (?6 IS NULL OR c.port = ?6) "
		"AND (?7 = -2 OR c.queue = ?7) ORDER BY c.id DESC LIMIT ?8";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *items = json_array();
	int rc;

	if (!st || !items) {
		json_decref(items);
		return -ENOMEM;
	}
	store_bind_text_or_null(st, 1, f->agent);
	store_bind_text_or_null(st, 2, f->kind);
	store_bind_text_or_null(st, 3, f->state);
	sqlite3_bind_int64(st, 4, f->batch);
	store_bind_text_or_null(st, 5, f->device);
	store_bind_text_or_null(st, 6, f->port);
	sqlite3_bind_int64(st, 7, f->queue);
	sqlite3_bind_int64(st, 8, f->limit ? f->limit : 100);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(items, change_row(st));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(items);
		return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "database read failed");
	}
	*ret = json_pack("{s:o,s:I}", "items", items, "count", (json_int_t)json_array_size(items));
	return *ret ? 0 : -ENOMEM;
}

int changes_get(struct store_reader *rd, int64_t id, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT " CHANGE_COLS " FROM changes c LEFT JOIN agents a "
				  "ON a.id = c.agent_id WHERE c.id = ?";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	*ret = rc == SQLITE_ROW ? change_row(st) : NULL;
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return rf_err_set(e, -ENOENT, "UNKNOWN_CHANGE", NULL, "no change %lld", (long long)id);
	return rc == SQLITE_ROW ? 0 : rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "database read failed");
}

int configs_get(struct store_reader *rd, const char *agent, enum change_kind kind,
		const char *device, const char *port, int queue, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT device, port, queue, value, t_ns FROM configs "
				  "WHERE agent_id = ?1 AND kind = ?2 AND (?3 IS NULL OR device = ?3) "
				  "AND (?4 IS NULL OR port = ?4) AND (?5 = -2 OR queue = ?5) "
				  "ORDER BY device, port, queue";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *items = json_array();
	int rc;

	if (!st || !items) {
		json_decref(items);
		return -ENOMEM;
	}
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, kind_names[kind], -1, SQLITE_STATIC);
	store_bind_text_or_null(st, 3, device);
	store_bind_text_or_null(st, 4, port);
	sqlite3_bind_int64(st, 5, queue);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_pack("{s:o,s:o,s:o,s:o}", "device", store_col_text(st, 0), "port",
				      store_col_text(st, 1), "values", col_json(st, 3), "updated",
				      store_time_json(sqlite3_column_int64(st, 4)));

		if (sqlite3_column_int64(st, 2) >= 0)
			json_object_set_new(o, "queue", json_integer(sqlite3_column_int64(st, 2)));
		json_array_append_new(items, o);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(items);
		return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "database read failed");
	}
	*ret = items;
	return 0;
}
