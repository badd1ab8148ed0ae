/* Alerts: see alerts.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/alerts.h"
#include "lib/log.h"

#define KINDS_MAX 16

struct sync_job {
	struct store_job job;
	int64_t now;
	char *source;
	char *kinds[KINDS_MAX + 1];
	struct alert_finding *f;
	size_t n;
	char **strings; /* every copied string, to free */
	size_t nstrings;
};

static void sync_free(struct sync_job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nstrings; i++)
		free(j->strings[i]);
	free(j->strings);
	free(j->f);
	free(j);
}

static const char *keep(struct sync_job *j, const char *s, bool *oom)
{
	char *c = strdup(s ? s : "");

	if (!c) {
		*oom = true;
		return "";
	}
	j->strings[j->nstrings++] = c;
	return c;
}

static const struct alert_finding *finding_of(const struct sync_job *j, const char *kind, const char *subject)
{
	for (size_t i = 0; i < j->n; i++)
		if (!strcmp(j->f[i].kind, kind) && !strcmp(j->f[i].subject, subject))
			return &j->f[i];
	return NULL;
}

static bool is_kind(const struct sync_job *j, const char *kind)
{
	for (size_t i = 0; j->kinds[i]; i++)
		if (!strcmp(j->kinds[i], kind))
			return true;
	return false;
}

/* The rows reported to the store's watcher (store_note_row): an alert raised, cleared or
 * acknowledged; not the refresh of an active one's last_seen at every pass. */
const char ALERTS_TABLE[] = "alerts";

static int sync_apply(struct store_job *sj, struct store *s)
{
	static const char active_sql[] = "SELECT id, kind, subject FROM alerts WHERE state = 'active'";
	static const char clear_sql[] = "UPDATE alerts SET state = 'cleared', cleared_ns = ? WHERE id = ?";
	static const char fold_sql[] = "UPDATE alerts SET state = 'cleared', cleared_ns = ?1, evidence = ?3, "
				       "details = ?4 WHERE id = ?2";
	static const char update_sql[] = "UPDATE alerts SET last_ns = ?1, evidence = ?2, details = ?5 "
					 "WHERE state = 'active' AND kind = ?3 AND subject = ?4";
	static const char insert_sql[] = "INSERT INTO alerts(kind, subject, state, first_ns, last_ns, evidence, "
					 "details) VALUES(?,?,'active',?,?,?,?)";
	struct sync_job *j = (struct sync_job *)sj;
	struct over {
		int64_t id;
		const struct alert_finding *why; /* what explains it, or NULL: over */
	} *over = NULL;
	size_t nover = 0, cap = 0;
	sqlite3_stmt *st;
	int r = 0, rc;

	/* what is active of the source's kinds and no longer found, or folded into another, is over */
	if (!(st = store_stmt(s, active_sql)))
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 1);
		const char *subject = (const char *)sqlite3_column_text(st, 2);
		const struct alert_finding *f;

		if (!is_kind(j, kind) || ((f = finding_of(j, kind, subject)) && f->how != ALERT_FOLD))
			continue;
		if (nover == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct over *nv = realloc(over, nc * sizeof(*nv));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			over = nv;
			cap = nc;
		}
		over[nover++] = (struct over){ sqlite3_column_int64(st, 0), f };
	}
	sqlite3_reset(st);
	if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
		r = store_errno(rc);
	for (size_t i = 0; r == 0 && i < nover; i++) {
		if (!(st = store_stmt(s, over[i].why ? fold_sql : clear_sql))) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int64(st, 1, j->now);
		sqlite3_bind_int64(st, 2, over[i].id);
		if (over[i].why) {
			sqlite3_bind_text(st, 3, over[i].why->evidence, -1, SQLITE_STATIC);
			store_bind_text_or_null(st, 4, over[i].why->details);
		}
		if ((r = store_step(st)) == 0)
			store_note_row(s, ALERTS_TABLE, over[i].id);
	}
	free(over);
	if (r < 0)
		return r;
	for (size_t i = 0; i < j->n; i++) {
		const struct alert_finding *f = &j->f[i];

		if (f->how == ALERT_FOLD)
			continue;
		if (!(st = store_stmt(s, update_sql)))
			return -EIO;
		sqlite3_bind_int64(st, 1, f->last_ns ?: j->now);
		sqlite3_bind_text(st, 2, f->evidence, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, f->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, f->subject, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 5, f->details);
		if ((r = store_step(st)) < 0)
			return r;
		if (sqlite3_changes(store_writer_db(s)) > 0 || f->how == ALERT_KEEP)
			continue;
		if (!(st = store_stmt(s, insert_sql)))
			return -EIO;
		sqlite3_bind_text(st, 1, f->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, f->subject, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, j->now);
		sqlite3_bind_int64(st, 4, j->now);
		sqlite3_bind_text(st, 5, f->evidence, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 6, f->details);
		if ((r = store_step(st)) < 0)
			return r;
		store_note_row(s, ALERTS_TABLE, sqlite3_last_insert_rowid(store_writer_db(s)));
		log_notice(j->source, "alert: %s %s: %s", f->kind, f->subject, f->evidence);
	}
	return 0;
}

static void sync_done(struct store_job *sj, int result)
{
	struct sync_job *j = (struct sync_job *)sj;

	if (result < 0)
		log_warning(j->source, "the alerts could not be updated: %s", strerror(-result));
	sync_free(j);
}

int alerts_sync(struct store *s, const char *source, const char *const *kinds,
		const struct alert_finding *f, size_t n, int64_t now)
{
	struct sync_job *j = calloc(1, sizeof(*j));
	size_t nkinds = 0;
	bool oom = false;
	int r;

	while (kinds && kinds[nkinds])
		nkinds++;
	if (!j)
		return -ENOMEM;
	if (!nkinds || nkinds > KINDS_MAX) {
		free(j);
		return -EINVAL;
	}
	j->strings = calloc(1 + nkinds + 4 * n, sizeof(*j->strings));
	j->f = calloc(n + 1, sizeof(*j->f));
	if (!j->strings || !j->f) {
		sync_free(j);
		return -ENOMEM;
	}
	j->source = (char *)keep(j, source, &oom);
	for (size_t i = 0; i < nkinds; i++)
		j->kinds[i] = (char *)keep(j, kinds[i], &oom);
	for (size_t i = 0; i < n; i++) {
		j->f[i].kind = keep(j, f[i].kind, &oom);
		j->f[i].subject = keep(j, f[i].subject, &oom);
		j->f[i].evidence = keep(j, f[i].evidence, &oom);
		j->f[i].details = f[i].details ? keep(j, f[i].details, &oom) : NULL;
		j->f[i].how = f[i].how;
		j->f[i].last_ns = f[i].last_ns;
	}
	j->n = n;
	j->now = now;
	j->job.apply = sync_apply;
	j->job.done = sync_done;
	if (oom) {
		sync_free(j);
		return -ENOMEM;
	}
	if ((r = store_submit(s, &j->job)) < 0)
		sync_free(j);
	return r;
}

#define ALERT_COLS                                                                                           \
	"id, kind, subject, state, first_ns, last_ns, cleared_ns, evidence, details, acked_ns, acked_by, " \
	"mitigations"

static json_t *alert_row(sqlite3_stmt *st, const void *ctx)
{
	const char *details = (const char *)sqlite3_column_text(st, 8);
	json_t *o;

	(void)ctx;
	o = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:s}", "id", (json_int_t)sqlite3_column_int64(st, 0),
		      "kind", store_col_text(st, 1), "subject", store_col_text(st, 2), "state",
		      store_col_text(st, 3), "first_seen", store_time_json(sqlite3_column_int64(st, 4)),
		      "last_seen", store_time_json(sqlite3_column_int64(st, 5)), "cleared",
		      store_time_json(sqlite3_column_type(st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 6)),
		      "evidence", (const char *)sqlite3_column_text(st, 7) ?: "");
	if (!o)
		return NULL;
	if (details) {
		json_t *d = json_loads(details, 0, NULL);

		if (json_is_object(d))
			json_object_set_new(o, "details", d);
		else
			json_decref(d);
	}
	json_object_set_new(o, "acked",
			    sqlite3_column_type(st, 9) == SQLITE_NULL
				    ? json_null()
				    : json_pack("{s:o,s:o}", "by", store_col_text(st, 10), "at",
						store_time_json(sqlite3_column_int64(st, 9))));
	{
		const char *m = (const char *)sqlite3_column_text(st, 11);
		json_t *a = m ? json_loads(m, 0, NULL) : NULL;

		json_object_set_new(o, "mitigations", json_is_array(a) ? a : json_array());
		if (a && !json_is_array(a))
			json_decref(a);
	}
	return o;
}

int alerts_list(struct store_reader *rd, const char *state, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT " ALERT_COLS " FROM alerts WHERE (?1 IS NULL OR state = ?1) "
				  "ORDER BY id DESC LIMIT ?2";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);

	if (state && strcmp(state, "active") && strcmp(state, "cleared"))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "state", "state is active or cleared, not '%s'", state);
	if (st) {
		store_bind_text_or_null(st, 1, state);
		sqlite3_bind_int64(st, 2, ALERTS_LIST_MAX);
	}
	return store_list(st, alert_row, NULL, ret, e);
}

int alerts_get(struct store_reader *rd, int64_t id, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT " ALERT_COLS " FROM alerts WHERE id = ?";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *list = NULL;
	int r;

	if (st)
		sqlite3_bind_int64(st, 1, id);
	if ((r = store_list(st, alert_row, NULL, &list, e)) < 0)
		return r;
	if (!json_array_size(json_object_get(list, "items"))) {
		json_decref(list);
		return rf_err_set(e, -ENOENT, "NO_SUCH_ALERT", NULL, "no alert %lld", (long long)id);
	}
	*ret = json_incref(json_array_get(json_object_get(list, "items"), 0));
	json_decref(list);
	return 0;
}

struct ack_job {
	struct store_job job;
	int64_t id, now;
	const char *actor;
	struct rf_err err;
};

static int ack_apply(struct store_job *sj, struct store *s)
{
	struct ack_job *j = (struct ack_job *)sj;
	sqlite3_stmt *st =
		store_stmt(s, "UPDATE alerts SET acked_ns = ?, acked_by = ? WHERE id = ? AND acked_ns IS NULL");
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, j->now);
	sqlite3_bind_text(st, 2, j->actor, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, j->id);
	if ((r = store_step(st)) < 0)
		return r;
	if (sqlite3_changes(store_writer_db(s)) > 0) {
		store_note_row(s, ALERTS_TABLE, j->id);
		return 0;
	}
	/* acknowledged already: the first acknowledgement stands (the same caller again: done) */
	if (!(st = store_stmt(s, "SELECT acked_by, acked_ns FROM alerts WHERE id = ?")))
		return -EIO;
	sqlite3_bind_int64(st, 1, j->id);
	if ((r = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		return r == SQLITE_DONE ? -ENOENT : store_errno(r);
	}
	if (strcmp((const char *)sqlite3_column_text(st, 0) ?: "", j->actor)) {
		json_t *t = store_time_json(sqlite3_column_int64(st, 1));

		rf_err_set(&j->err, -EALREADY, "ALREADY_ACKED", NULL, "alert %lld was acknowledged by %s at %s",
			   (long long)j->id, (const char *)sqlite3_column_text(st, 0) ?: "?",
			   json_string_value(t) ?: "?");
		json_decref(t);
	}
	sqlite3_reset(st);
	return j->err.err;
}

struct mitigated_job {
	struct store_job job;
	int64_t id, now;
	const char *kind, *subject;
	const struct alert_action *a;
};

static int mitigated_apply(struct store_job *sj, struct store *s)
{
	struct mitigated_job *j = (struct mitigated_job *)sj;
	sqlite3_stmt *st;
	json_t *list = NULL, *m;
	char *text;
	int r;

	if (!j->id) { /* the newest of its kind and subject */
		/* (every state named: the index on state, kind and subject serves it) */
		if (!(st = store_stmt(s, "SELECT max(id) FROM alerts WHERE state IN ('active', 'cleared') "
					 "AND kind = ? AND subject = ?")))
			return -EIO;
		sqlite3_bind_text(st, 1, j->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, j->subject, -1, SQLITE_STATIC);
		r = sqlite3_step(st);
		j->id = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
		sqlite3_reset(st);
		if (r != SQLITE_ROW)
			return store_errno(r);
		if (!j->id)
			return -ENOENT;
	}
	if (!(st = store_stmt(s, "SELECT mitigations FROM alerts WHERE id = ?")))
		return -EIO;
	sqlite3_bind_int64(st, 1, j->id);
	if ((r = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		return r == SQLITE_DONE ? -ENOENT : store_errno(r);
	}
	/* (json_is_array is a macro that names its argument twice) */
	if (sqlite3_column_type(st, 0) != SQLITE_NULL)
		list = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
	if (sqlite3_column_type(st, 0) != SQLITE_NULL && !json_is_array(list))
		log_warning("alerts", "alert %lld: its mitigations were unreadable: a new list starts", (long long)j->id);
	sqlite3_reset(st);
	if (!json_is_array(list)) { /* none yet (or unreadable) */
		json_decref(list);
		list = json_array();
	}
	m = json_pack("{s:s,s:s,s:o,s:I}", "by", j->a->by, "op", j->a->op, "at", store_time_json(j->now), "change",
		      (json_int_t)j->a->change);
	if (m && j->a->reason)
		json_object_set_new(m, "reason", json_string(j->a->reason));
	if (!list || !m || json_array_append_new(list, m) < 0) {
		json_decref(list);
		return -ENOMEM;
	}
	while (json_array_size(list) > ALERT_MITIGATIONS_MAX)
		json_array_remove(list, 0);
	text = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	if (!text)
		return -ENOMEM;
	st = store_stmt(s, "UPDATE alerts SET mitigations = ? WHERE id = ?");
	if (!st) {
		free(text);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, j->id);
	r = store_step(st);
	free(text);
	if (r < 0)
		return r;
	store_note_row(s, ALERTS_TABLE, j->id);
	return 0;
}

int alerts_mitigated(struct store *s, int64_t id, const char *kind, const char *subject,
		     const struct alert_action *a, int64_t now, struct rf_err *e)
{
	struct mitigated_job j = { .job = { .apply = mitigated_apply },
				   .id = id,
				   .now = now,
				   .kind = kind ?: "",
				   .subject = subject ?: "",
				   .a = a };
	int r = store_submit_wait(s, &j.job);

	if (r == -ENOENT && id)
		return rf_err_set(e, -ENOENT, "NO_SUCH_ALERT", NULL, "no alert %lld", (long long)id);
	if (r == -ENOENT)
		return rf_err_set(e, -ENOENT, "NO_SUCH_ALERT", NULL, "no %s alert on %s", j.kind, j.subject);
	if (r < 0)
		return store_write_failed(r, "the mitigation could not be recorded on the alert", e);
	return 0;
}

int alerts_ack(struct store *s, int64_t id, const char *actor, int64_t now, struct rf_err *e)
{
	struct ack_job j = { .job = { .apply = ack_apply }, .id = id, .now = now, .actor = actor };
	int r = store_submit_wait(s, &j.job);

	if (r == -ENOENT)
		return rf_err_set(e, -ENOENT, "NO_SUCH_ALERT", NULL, "no alert %lld", (long long)id);
	if (r < 0 && j.err.code[0]) {
		*e = j.err;
		return r;
	}
	if (r < 0)
		return store_write_failed(r, "cannot acknowledge", e);
	return 0;
}
