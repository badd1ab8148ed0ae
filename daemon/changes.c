/* Configuration changes: see changes.h. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/changes.h"
#include "daemon/topo.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/params.h"
#include "lib/timeutil.h"
#include "lib/validate.h"

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
	/* (an operator's settlement stands: a late outcome is logged, not taken) */
	static const char upd[] = "UPDATE changes SET state = ?, error = ?, new = ?, updated_ns = ?, in_doubt = NULL "
				  "WHERE id = ? AND agent_id = ? AND state IN ('pending', 'sent', 'timed_out') AND "
				  "settled_by IS NULL";
	static const char settled[] = "SELECT settled_by, settled_applied FROM changes WHERE id = ? AND agent_id = ? "
				      "AND settled_by IS NOT NULL";
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
		if (sqlite3_changes(store_writer_db(s)) > 0) {
			log_info("changes", "change %lld on %s: %s", cid, rep->agent_id, outcome);
		} else if ((st = store_stmt(s, settled))) {
			/* (the agent stops sending it once this report is answered) */
			sqlite3_bind_int64(st, 1, cid);
			sqlite3_bind_text(st, 2, rep->agent_id, -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW)
				log_warning("changes", "change %lld on %s: the agent reports it %s, after %s settled it as %s: "
						       "kept as settled; its settings as reported say what it holds",
					    cid, rep->agent_id, outcome, (const char *)sqlite3_column_text(st, 0) ?: "?",
					    sqlite3_column_int64(st, 1) ? "applied" : "not applied");
			sqlite3_reset(st);
		}
	}
	return 0;
}

static const char timeout_error[] =
	"{\"code\":\"NO_ANSWER\",\"message\":\"the agent did not report an outcome before the "
	"deadline (is it running and reachable?)\"}";

/* A change sent but not answered when it timed out may have been applied all the same: the
 * agent applies a command that reaches it before the deadline by its own clock, and its
 * outcome goes with every report it makes after, until one is acknowledged.  Such a change is
 * in doubt (in_doubt 1) and counts in the checks of other changes to its object, as a sent one
 * does (lay_out), until a report the agent made after the deadline: an outcome in it settles
 * the change; none, from the boot of the agent it was sent to, says the command never reached
 * it (it refuses one that comes later); from another boot, it restarted and may have lost the
 * outcome — its settings, reported by the new boot, say what it holds.  (An agent that keeps
 * more outcomes unacknowledged than it can hold, or whose clock steps back, could still be
 * taken for one that never got the command.) */
static const char doubt_error[] =
	"{\"code\":\"NO_ANSWER\",\"message\":\"the agent did not report an outcome before the "
	"deadline (is it running and reachable?); it may have applied it all the same: until a report the "
	"agent makes after the deadline says, later changes to this object are checked as if it had (an agent "
	"gone for good: check the device, then rocefabctl settle)\"}";
static const char settled_error[] =
	"{\"code\":\"NO_ANSWER\",\"message\":\"the agent did not report an outcome before the "
	"deadline, nor in a report it made after it: not applied\"}";
static const char restarted_error[] =
	"{\"code\":\"NO_ANSWER\",\"message\":\"the agent restarted before it reported an outcome: "
	"whether it was applied shows in the settings it reports; no longer counted: check them and "
	"send it again if needed\"}";

/* The time-out of the changes still out past their deadline and the grace, at a report of
 * their agent (" AND agent_id = ?5") or by the pass for the silent ones: a sent one in doubt,
 * one held for others (after_ids) never sent, DEPENDS_ON_PENDING, any other NO_ANSWER.
 * time_out_stmt binds ?1-?4. */
#define TIME_OUT                                                                                            \
	"UPDATE changes SET state = 'timed_out', updated_ns = ?1, error = CASE WHEN sent_ns IS NOT NULL THEN ?3 " \
	"WHEN after_ids IS NOT NULL THEN json_object('code', 'DEPENDS_ON_PENDING', 'message', 'never sent: "   \
	"changes ' || (SELECT group_concat(value, ', ') FROM json_each(after_ids)) || ', which its check "      \
	"counted, were not all applied before its deadline') ELSE ?2 END, "                                      \
	"in_doubt = CASE WHEN sent_ns IS NOT NULL THEN 1 END "                                                   \
	"WHERE state IN ('pending', 'sent') AND deadline_ns + ?4 < ?1"

static sqlite3_stmt *time_out_stmt(struct store *s, const char *sql, int64_t now)
{
	sqlite3_stmt *st = store_stmt(s, sql);

	if (st) {
		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_text(st, 2, timeout_error, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, doubt_error, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, CHANGES_GRACE_NS);
	}
	return st;
}

/* A change c checked counting changes still out (after_ids) goes once every one is applied
 * (read back by its agent: one an operator settled fails it, fail_dependents). */
#define READY                                                                                               \
	"(c.after_ids IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(c.after_ids) j JOIN changes p ON p.id = " \
	"j.value WHERE p.state != 'applied' OR p.settled_by IS NOT NULL))"

/* The agent's pending changes one of whose counted changes failed or timed out fail too, not
 * sent: they were validated counting it (and those counting them, at the next round); one
 * counting a change in doubt waits for it to be settled — by its agent's report, or by an
 * operator, whose word, applied or not, is no read-back to send another change on (the agent
 * may come back holding something else: the change is sent again, checked against what it
 * reports).  The
 * queries here name state IN ('pending', 'sent') besides 'pending': with it the planner takes
 * an index of the agent's open changes even where sqlite_stat1 says an agent's rows are
 * mostly of one state (measured: a scan of 50,000 rows, 5 ms a report, without it). */
static int fail_dependents(struct store *s, const char *agent, int64_t now)
{
	static const char sel[] =
		"SELECT c.id, (SELECT p.id FROM json_each(c.after_ids) j JOIN changes p ON p.id = j.value "
		"  WHERE (p.state IN ('failed', 'timed_out') AND p.in_doubt IS NULL) OR p.settled_by IS NOT NULL "
		"  ORDER BY p.id LIMIT 1) AS dep "
		"FROM changes c "
		"WHERE c.agent_id = ? AND c.state IN ('pending', 'sent') AND c.state = 'pending' AND "
		"c.after_ids IS NOT NULL AND dep IS NOT NULL LIMIT 256";
	static const char upd[] = "UPDATE changes SET state = 'failed', error = ?, updated_ns = ? "
				  "WHERE id = ? AND state = 'pending'";

	for (int round = 0; round < 16; round++) {
		int64_t ids[256][2];
		size_t n = 0;
		sqlite3_stmt *st = store_stmt(s, sel);
		int rc, r;

		if (!st)
			return -EIO;
		sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
		while (n < ARRAY_SIZE(ids) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			ids[n][0] = sqlite3_column_int64(st, 0);
			ids[n++][1] = sqlite3_column_int64(st, 1);
		}
		sqlite3_reset(st);
		if (n < ARRAY_SIZE(ids) && rc != SQLITE_DONE)
			return store_errno(rc);
		if (!n)
			return 0;
		for (size_t i = 0; i < n; i++) {
			char err[300];

			snprintf(err, sizeof(err),
				 "{\"code\":\"DEPENDS_ON_FAILED\",\"message\":\"change %" PRId64 ", on its way when this "
				 "one was checked and counted in its check, failed, timed out or was settled by an "
				 "operator without its agent's word: this one was not sent (send it again: it is "
				 "checked against what the agent reports)\"}", ids[i][1]);
			if (!(st = store_stmt(s, upd)))
				return -EIO;
			sqlite3_bind_text(st, 1, err, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 2, now);
			sqlite3_bind_int64(st, 3, ids[i][0]);
			if ((r = store_step(st)) < 0)
				return r;
			log_info("changes", "change %" PRId64 " on %s: failed, as change %" PRId64 " did", ids[i][0],
				 agent, ids[i][1]);
		}
	}
	return 0;
}

int changes_on_report(void *ctx, struct store *s, const struct report *rep, int64_t now,
		      json_t *cmds)
{
	static const char expire[] = TIME_OUT " AND agent_id = ?5";
	/* made after the deadline, the report has the outcome of those in doubt if they were
	 * applied (record_results took it): those left were not */
	static const char settle[] = "UPDATE changes SET in_doubt = NULL, updated_ns = ?2, error = CASE WHEN "
				     "sent_boot IS ?5 THEN ?1 ELSE ?6 END "
				     "WHERE agent_id = ?3 AND in_doubt = 1 AND deadline_ns < ?4";
	static const char open_sql[] =
		"SELECT c.id, c.kind, c.device, c.port, c.queue, c.params, c.deadline_ns, c.reason FROM changes c "
		"WHERE c.agent_id = ? AND c.state IN ('pending', 'sent') AND c.deadline_ns > ? AND " READY
		" ORDER BY c.id LIMIT 64";
	static const char sent_sql[] =
		"UPDATE changes SET state = 'sent', sent_ns = ?1, updated_ns = ?2, sent_boot = ?6 WHERE id IN (SELECT "
		"c.id FROM changes c WHERE c.agent_id = ?3 AND c.state IN ('pending', 'sent') AND c.state = 'pending' "
		"AND c.deadline_ns > ?4 AND c.id <= ?5 AND " READY ")";
	sqlite3_stmt *st;
	size_t nsent = 0;
	int64_t last = 0;
	int r, rc, n;

	(void)ctx;
	if ((rep->config && (r = store_config(s, rep, now)) < 0) ||
	    (rep->command_results && (r = record_results(s, rep, now)) < 0))
		return r;
	if (!(st = time_out_stmt(s, expire, now)))
		return -EIO;
	sqlite3_bind_text(st, 5, rep->agent_id, -1, SQLITE_STATIC);
	if ((r = store_step(st)) < 0)
		return r;
	if (!(st = store_stmt(s, settle)))
		return -EIO;
	sqlite3_bind_text(st, 1, settled_error, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	sqlite3_bind_text(st, 3, rep->agent_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, rep->time_ns);
	sqlite3_bind_text(st, 5, rep->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, restarted_error, -1, SQLITE_STATIC);
	if ((r = store_step(st)) < 0)
		return r;
	if ((n = sqlite3_changes(store_writer_db(s))) > 0)
		log_info("changes", "%s: %d change%s timed out in doubt settled by a report made after the deadline",
			 rep->agent_id, n, n == 1 ? "" : "s");
	if ((r = fail_dependents(s, rep->agent_id, now)) < 0)
		return r;
	if (rep->replay)
		return 0; /* its agent runs under another id now: nothing is sent to it */
	if (!(st = store_stmt(s, open_sql)))
		return -EIO;
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
		last = sqlite3_column_int64(st, 0);
		nsent++;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	if (nsent) {
		if (!(st = store_stmt(s, sent_sql)))
			return -EIO;
		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_int64(st, 2, now);
		sqlite3_bind_text(st, 3, rep->agent_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, now);
		sqlite3_bind_int64(st, 5, last); /* those beyond the 64 sent wait for the next answer */
		sqlite3_bind_text(st, 6, rep->boot_id, -1, SQLITE_STATIC);
		return store_step(st);
	}
	return 0;
}

/* --- sweeping ------------------------------------------------------------------------------------ */

static int sweep_apply(struct store_job *sj, struct store *s)
{
	sqlite3_stmt *st = time_out_stmt(s, TIME_OUT, tu_now_ns());

	(void)sj;
	return st ? store_step(st) : -EIO;
}

static void sweep_done(struct store_job *sj, int result)
{
	(void)result;
	free(sj);
}

int changes_sweep(void *ctx, int64_t now)
{
	struct store *s = ctx;
	struct store_job *j = calloc(1, sizeof(*j));
	int r;

	(void)now; /* the time-out uses the time the job runs at */
	if (!j)
		return -ENOMEM;
	j->apply = sweep_apply;
	j->done = sweep_done;
	r = store_submit(s, j);
	if (r < 0)
		free(j);
	return r;
}

/* --- an operator's word on a change in doubt ---------------------------------------------------- */

struct settle_job {
	struct store_job job;
	int64_t id, now;
	bool applied;
	const char *actor, *reason;
	struct rf_err err;
};

static int settle_apply(struct store_job *sj, struct store *s)
{
	static const char upd[] =
		"UPDATE changes SET in_doubt = NULL, updated_ns = ?2, state = CASE WHEN ?3 THEN 'applied' ELSE "
		"'timed_out' END, error = CASE WHEN ?3 THEN NULL ELSE json_object('code', 'NO_ANSWER', 'message', "
		"'the agent did not report an outcome before the deadline; settled by ' || ?4 || ': not applied') END, "
		"settled_by = ?4, settled_reason = ?5, settled_applied = ?3, settled_ns = ?2 WHERE id = ?1 AND in_doubt = 1";
	struct settle_job *j = (struct settle_job *)sj;
	sqlite3_stmt *st = store_stmt(s, "SELECT agent_id, state, in_doubt, settled_by FROM changes WHERE id = ?");
	char agent[256], state[32], by[100] = "";
	bool doubt;
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, j->id);
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return store_errno(rc);
		return rf_err_set(&j->err, -ENOENT, "UNKNOWN_CHANGE", NULL, "no change %lld", (long long)j->id);
	}
	snprintf(agent, sizeof(agent), "%s", (const char *)sqlite3_column_text(st, 0) ?: "");
	snprintf(state, sizeof(state), "%s", (const char *)sqlite3_column_text(st, 1) ?: "");
	doubt = sqlite3_column_int64(st, 2) == 1;
	if (sqlite3_column_type(st, 3) != SQLITE_NULL)
		snprintf(by, sizeof(by), "; settled by %s", (const char *)sqlite3_column_text(st, 3));
	sqlite3_reset(st);
	if (!doubt)
		return rf_err_set(&j->err, -EALREADY, "NOT_IN_DOUBT", NULL,
				  "change %lld is not in doubt (it is %s%s): only a change sent, timed out unanswered "
				  "and not settled by a report of its agent or an operator since can be settled",
				  (long long)j->id, state, by);
	if (!(st = store_stmt(s, upd)))
		return -EIO;
	sqlite3_bind_int64(st, 1, j->id);
	sqlite3_bind_int64(st, 2, j->now);
	sqlite3_bind_int(st, 3, j->applied);
	sqlite3_bind_text(st, 4, j->actor, -1, SQLITE_STATIC);
	store_bind_text_or_null(st, 5, j->reason);
	if ((rc = store_step(st)) < 0)
		return rc;
	/* those that counted it fail now, either way (an operator's word is no read-back) */
	return fail_dependents(s, agent, j->now);
}

int changes_settle(struct store *s, int64_t id, bool applied, const char *actor, const char *reason,
		   struct rf_err *e)
{
	struct settle_job j = { .job = { .apply = settle_apply },
				.id = id,
				.now = tu_now_ns(),
				.applied = applied,
				.actor = actor,
				.reason = reason };
	int r = store_submit_wait(s, &j.job);

	if (r < 0 && j.err.code[0]) {
		*e = j.err;
		return r;
	}
	if (r < 0)
		return store_write_failed(r, "the change could not be settled", e);
	log_notice("changes", "change %lld settled by %s: %s%s%s%s", (long long)id, actor,
		   applied ? "applied" : "not applied", reason ? " (reason \"" : "", reason ?: "", reason ? "\")" : "");
	return 0;
}

/* --- reading ------------------------------------------------------------------------------------- */

#define CHANGE_COLS                                                                                \
	"c.id, c.batch, c.created_ns, c.actor, c.reason, c.agent_id, c.kind, c.device, c.port, "  \
	"c.queue, c.params, c.old, c.new, c.state, c.error, c.deadline_ns, c.sent_ns, "            \
	"c.updated_ns, a.role, c.after_ids, c.in_doubt, c.settled_by, c.settled_reason, c.settled_applied, " \
	"c.settled_ns"

static json_t *change_row(sqlite3_stmt *st, const void *ctx)
{
	(void)ctx;
	json_t *after = col_json(st, 19), *o;
	json_t *target = json_pack("{s:o,s:o,s:o,s:o,s:o}", "kind", store_col_text(st, 6), "agent",
				   store_col_text(st, 5), "role", store_col_text(st, 18), "device",
				   store_col_text(st, 7), "port", store_col_text(st, 8));

	if (sqlite3_column_int64(st, 9) >= 0)
		json_object_set_new(target, "queue", json_integer(sqlite3_column_int64(st, 9)));
	o = json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id",
			 (json_int_t)sqlite3_column_int64(st, 0), "batch",
			 (json_int_t)sqlite3_column_int64(st, 1), "created",
			 store_time_json(sqlite3_column_int64(st, 2)), "actor", store_col_text(st, 3), "reason",
			 store_col_text(st, 4), "target", target, "params", col_json(st, 10), "old",
			 col_json(st, 11), "new", col_json(st, 12), "state", store_col_text(st, 13), "error",
			 col_json(st, 14), "deadline", store_time_json(sqlite3_column_int64(st, 15)), "sent",
			 store_time_json(sqlite3_column_type(st, 16) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 16)),
			 "updated", store_time_json(sqlite3_column_int64(st, 17)));
	/* the changes still out that its check counted: it goes once they are applied */
	json_object_set_new(o, "after", json_is_array(after) ? after : json_array());
	if (!json_is_array(after))
		json_decref(after);
	/* timed out unanswered, perhaps applied: counted in other changes' checks meanwhile */
	json_object_set_new(o, "in_doubt", json_boolean(sqlite3_column_int64(st, 20) == 1));
	/* an operator's word on it while it was in doubt */
	if (sqlite3_column_type(st, 21) != SQLITE_NULL)
		json_object_set_new(o, "settled",
				    json_pack("{s:o,s:o,s:o,s:b}", "by", store_col_text(st, 21), "at",
					      store_time_json(sqlite3_column_int64(st, 24)), "reason",
					      sqlite3_column_type(st, 22) == SQLITE_NULL ? json_null()
											 : store_col_text(st, 22),
					      "applied", sqlite3_column_int64(st, 23) == 1));
	return o;
}

int changes_list(struct store_reader *rd, const struct changes_filter *f, json_t **ret,
		 struct rf_err *e)
{
	/* (the changes in doubt through their partial index, not a scan of the whole log) */
#define LIST_SQL(index, doubt)                                                                       \
	"SELECT " CHANGE_COLS " FROM changes c " index "LEFT JOIN agents a ON a.id = c.agent_id "     \
	"WHERE " doubt "(?1 IS NULL OR c.agent_id = ?1) AND (?2 IS NULL OR c.kind = ?2) "             \
	"AND (?3 IS NULL OR c.state = ?3) AND (?4 = 0 OR c.batch = ?4) "                              \
	"AND (?5 IS NULL OR c.device = ?5) AND (?6 IS NULL OR c.port = ?6) "                          \
	"AND (?7 = -2 OR c.queue = ?7) ORDER BY c.id DESC LIMIT ?8"
	static const char sql[] = LIST_SQL("", ""),
			  doubt_sql[] = LIST_SQL("INDEXED BY changes_doubt ", "c.in_doubt = 1 AND ");
#undef LIST_SQL
	sqlite3_stmt *st = store_reader_stmt(rd, f->in_doubt ? doubt_sql : sql);

	if (!st)
		return -ENOMEM;
	store_bind_text_or_null(st, 1, f->agent);
	store_bind_text_or_null(st, 2, f->kind);
	store_bind_text_or_null(st, 3, f->state);
	sqlite3_bind_int64(st, 4, f->batch);
	store_bind_text_or_null(st, 5, f->device);
	store_bind_text_or_null(st, 6, f->port);
	sqlite3_bind_int64(st, 7, f->queue);
	return store_list_limited(st, 8, f->limit ? f->limit : 100, change_row, NULL, ret, e);
}

static json_t *open_row(sqlite3_stmt *st, const void *ctx)
{
	(void)ctx;
	return json_pack("{s:o,s:o}", "state", store_col_text(st, 0), "error", col_json(st, 1));
}

int changes_batch_state(struct store_reader *rd, int64_t batch, bool *open, bool *failed, char *err, size_t len,
			struct rf_err *e)
{
	/* one statement on the batch's index: a consistent answer at any size (asked state by
	 * state, a change could move between two questions) */
	static const char sql[] = "SELECT state, error FROM changes WHERE batch = ?1 AND state != 'applied' "
				  "ORDER BY state IN ('pending', 'sent') DESC, id LIMIT 1";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *row = NULL;
	const char *state, *msg;
	int r;

	*open = *failed = false;
	if (len)
		err[0] = '\0';
	if (st)
		sqlite3_bind_int64(st, 1, batch);
	if ((r = store_one(st, open_row, NULL, &row, e)) == -ENOENT)
		return 0; /* every change applied (or none: a batch whose rows are gone) */
	if (r < 0)
		return r;
	state = json_string_value(json_object_get(row, "state")) ?: "";
	*open = !strcmp(state, "pending") || !strcmp(state, "sent");
	*failed = !*open;
	msg = json_string_value(json_object_get(json_object_get(row, "error"), "message"));
	if (*failed && len)
		snprintf(err, len, "%s", msg ?: state);
	json_decref(row);
	return 0;
}

static json_t *batch_row(sqlite3_stmt *st, const void *ctx)
{
	(void)ctx;
	return json_integer(sqlite3_column_int64(st, 0));
}

int changes_batch_of_reason(struct store_reader *rd, const char *reason, int64_t *batch, struct rf_err *e)
{
	static const char sql[] = "SELECT batch FROM changes WHERE reason = ?1 ORDER BY id DESC LIMIT 1";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *row = NULL;
	int r;

	*batch = 0;
	if (st)
		sqlite3_bind_text(st, 1, reason, -1, SQLITE_TRANSIENT);
	if ((r = store_one(st, batch_row, NULL, &row, e)) == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	*batch = json_integer_value(row);
	json_decref(row);
	return 0;
}

int changes_get(struct store_reader *rd, int64_t id, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT " CHANGE_COLS " FROM changes c LEFT JOIN agents a "
				  "ON a.id = c.agent_id WHERE c.id = ?";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int r;

	if (st)
		sqlite3_bind_int64(st, 1, id);
	if ((r = store_one(st, change_row, NULL, ret, e)) == -ENOENT)
		return rf_err_set(e, -ENOENT, "UNKNOWN_CHANGE", NULL, "no change %lld", (long long)id);
	return r;
}

static json_t *config_row(sqlite3_stmt *st, const void *ctx)
{
	json_t *o = json_pack("{s:o,s:o,s:o,s:o}", "device", store_col_text(st, 0), "port",
			      store_col_text(st, 1), "values", col_json(st, 3), "updated",
			      store_time_json(sqlite3_column_int64(st, 4)));

	(void)ctx;
	if (sqlite3_column_int64(st, 2) >= 0)
		json_object_set_new(o, "queue", json_integer(sqlite3_column_int64(st, 2)));
	return o;
}

int configs_get(struct store_reader *rd, const char *agent, enum change_kind kind,
		const char *device, const char *port, int queue, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT device, port, queue, value, t_ns FROM configs "
				  "WHERE agent_id = ?1 AND kind = ?2 AND (?3 IS NULL OR device = ?3) "
				  "AND (?4 IS NULL OR port = ?4) AND (?5 = -2 OR queue = ?5) "
				  "ORDER BY device, port, queue";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);

	if (st) {
		sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, kind_names[kind], -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 3, device);
		store_bind_text_or_null(st, 4, port);
		sqlite3_bind_int64(st, 5, queue);
	}
	return store_rows(st, config_row, NULL, ret, e);
}

/* --- the targets of a change: choosing and validating them ------------------------------------- */

int change_set_init(struct change_set *cs, enum change_kind kind, bool on_switch, json_t *params)
{
	*cs = (struct change_set){ .kind = kind, .on_switch = on_switch, .seen = -1 };
	cs->params = json_deep_copy(params);
	cs->rejections = json_array();
	if (!cs->params || !cs->rejections) {
		change_set_fini(cs);
		return -ENOMEM;
	}
	return 0;
}

static void target_fini(struct change_target *t)
{
	json_decref(t->current);
	json_decref(t->expect);
	json_decref(t->after);
	json_decref(t->pfc_now);
	json_decref(t->ecn_now);
	json_decref(t->port_pfc);
	json_decref(t->port_ecn);
}

void change_set_fini(struct change_set *cs)
{
	for (size_t i = 0; cs->t && i < cs->n; i++)
		target_fini(&cs->t[i]);
	free(cs->t);
	json_decref(cs->params);
	json_decref(cs->rejections);
	memset(cs, 0, sizeof(*cs));
}

/* values (a copy of an object's values as reported, of kind) with the changes still out on the
 * object laid over them, oldest first (queue -2: any), their ids added to *ids: pending
 * ones before their deadline (those past it are not sent), sent ones until their outcome (the
 * agent may have applied one after the deadline by rocefabd's clock), and those timed out in
 * doubt (doubt_error).  Two queries of partial indexes: the open changes, those in doubt. */
static int lay_out(struct store_reader *rd, const char *agent, enum change_kind kind, const char *device,
		   const char *port, int queue, json_t *values, json_t **ids, struct rf_err *e)
{
	static const char sql[] = "SELECT id, params FROM changes WHERE agent_id = ?1 AND device = ?3 AND "
				  "port = ?4 AND kind = ?2 AND (?5 = -2 OR queue = ?5) AND "
				  "state IN ('pending', 'sent') AND (state = 'sent' OR deadline_ns > ?6) "
				  "UNION ALL SELECT id, params FROM changes WHERE agent_id = ?1 AND device = ?3 AND "
				  "port = ?4 AND kind = ?2 AND (?5 = -2 OR queue = ?5) AND in_doubt = 1 ORDER BY 1";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, kind_names[kind], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, device, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, port, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, queue);
	sqlite3_bind_int64(st, 6, tu_now_ns());
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *params = col_json(st, 1);

		if (json_is_object(params)) {
			if (kind == CHANGE_PFC)
				validate_pfc_merge(values, params);
			else
				json_object_update(values, params);
			if (!*ids)
				*ids = json_array();
			json_array_append_new(*ids, json_integer(sqlite3_column_int64(st, 0)));
		}
		json_decref(params);
	}
	rc = rc == SQLITE_DONE ? 0 : store_read_failed(st, rc, e);
	sqlite3_reset(st);
	return rc;
}

/* One configuration entry of agent as reported (a copy, NULL when none). */
static int config_now(struct store_reader *rd, const char *agent, enum change_kind kind, const char *device,
		      const char *port, int queue, json_t **ret, struct rf_err *e)
{
	json_t *list = NULL;

	*ret = NULL;
	if (configs_get(rd, agent, kind, device, port, queue, &list, e) < 0)
		return -EIO;
	if (json_array_size(list) && !(*ret = json_deep_copy(json_object_get(json_array_get(list, 0), "values")))) {
		json_decref(list);
		return -ENOMEM;
	}
	json_decref(list);
	return 0;
}

int changes_expected(struct store_reader *rd, const char *agent, enum change_kind kind, const char *device,
		     const char *port, int queue, json_t **ret, struct rf_err *e)
{
	json_t *ids = NULL;
	int r;

	*ret = NULL;
	if ((r = store_reader_begin(rd)) < 0)
		return rf_err_set(e, r, "STORE_ERROR", NULL, "the store could not be read");
	if ((r = config_now(rd, agent, kind, device, port, queue, ret, e)) == 0 && *ret)
		r = lay_out(rd, agent, kind, device, port, queue, *ret, &ids, e);
	store_reader_end(rd);
	json_decref(ids);
	if (r < 0) {
		json_decref(*ret);
		*ret = NULL;
	}
	return r;
}

/* A target's values as reported and what its validation checks them against, in one snapshot
 * (the caller's read transaction): had a change still out been applied and read back between
 * the two reads, it would be counted in neither.  t names the object; gone (values: NULL) since
 * it was chosen, it is checked against values, what was reported then. */
static int target_fill(struct store_reader *rd, const struct change_set *cs, struct change_target *t,
		       json_t *values, struct rf_err *e)
{
	const char *agent = t->agent;
	json_t *now = NULL;
	int r;

	if ((r = config_now(rd, agent, cs->kind, t->device, t->port, t->queue, &now, e)) < 0)
		return r;
	t->current = now ? now : json_incref(values);
	if (!(t->expect = json_is_object(t->current) ? json_deep_copy(t->current) : json_object()))
		return -ENOMEM;
	if ((r = lay_out(rd, agent, cs->kind, t->device, t->port, t->queue, t->expect, &t->after, e)) < 0)
		return r;
	if (cs->kind == CHANGE_DCQCN)
		views_port_speed(rd, agent, t->device, t->port, &t->line_mbps);
	if (cs->kind == CHANGE_ECN) {
		sqlite3_stmt *st = store_reader_stmt(rd, "SELECT backend FROM agents WHERE id = ?");

		if (!st)
			return -ENOMEM;
		sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
		t->pmax_percent = sqlite3_step(st) == SQLITE_ROW &&
				  !strcmp((const char *)sqlite3_column_text(st, 0) ?: "", "sonic");
		sqlite3_reset(st);
		if ((r = config_now(rd, agent, CHANGE_PFC, t->device, t->port, -2, &t->pfc_now, e)) < 0)
			return r;
		if (t->pfc_now) {
			if (!(t->port_pfc = json_deep_copy(t->pfc_now)))
				return -ENOMEM;
			if ((r = lay_out(rd, agent, CHANGE_PFC, t->device, t->port, -2, t->port_pfc, &t->after, e)) < 0)
				return r;
			/* a priority lossless as reported or as expected keeps Kmax below XOFF: a
			 * deadlock break on its way is undone by its restore, which a Kmax above XOFF
			 * would have refused */
			json_object_set_new(t->port_pfc, "enable",
					    json_integer(json_integer_value(json_object_get(t->port_pfc, "enable")) |
							 json_integer_value(json_object_get(t->pfc_now, "enable"))));
		}
	}
	if (cs->kind == CHANGE_PFC && cs->on_switch) {
		json_t *list = NULL, *it;
		size_t i;

		if (configs_get(rd, agent, CHANGE_ECN, t->device, t->port, -2, &list, e) < 0)
			return -EIO;
		t->port_ecn = json_array();
		t->ecn_now = json_array();
		json_array_foreach(list, i, it) {
			json_t *v = json_deep_copy(json_object_get(it, "values"));

			json_object_set(v, "queue", json_object_get(it, "queue"));
			if (!v || json_array_append_new(t->ecn_now, json_deep_copy(v)) < 0 ||
			    (r = lay_out(rd, agent, CHANGE_ECN, t->device, t->port,
					 (int)json_integer_value(json_object_get(it, "queue")), v, &t->after, e)) < 0) {
				json_decref(v);
				json_decref(list);
				return r < 0 ? r : -ENOMEM;
			}
			json_array_append_new(t->port_ecn, v);
		}
		json_decref(list);
	}
	return 0;
}

/* Validates (and normalizes) params for one target: against its values as expected, or as
 * reported (now). */
static int target_validate(const struct change_set *cs, const struct change_target *t, json_t *params, bool now,
			   struct rf_err *e)
{
	int r = -EINVAL;

	switch (cs->kind) {
	case CHANGE_DCQCN:
		r = validate_dcqcn(params, now ? t->current : t->expect, t->line_mbps, e);
		break;
	case CHANGE_ECN:
		r = validate_ecn(params, now ? t->current : t->expect, now ? t->pfc_now : t->port_pfc, t->queue, e);
		if (r == 0 && t->pmax_percent && json_is_number(json_object_get(params, "pmax"))) {
			/* what the switch takes, before it is sent: its agent would refuse it */
			double pmax = json_number_value(json_object_get(params, "pmax"));

			if (!pmax_whole_percent(pmax))
				r = e ? rf_err_set(e, -EINVAL, "BAD_VALUE", "pmax",
						   "a SONiC switch takes Pmax in whole percent (its WRED profile's "
						   "green_drop_probability): %g is %.4g %%", pmax, pmax * 100.0)
				      : -EINVAL;
		}
		break;
	case CHANGE_PFC:
		r = validate_pfc(params, now ? t->current : t->expect, now ? t->ecn_now : t->port_ecn, cs->on_switch, e);
		break;
	}
	if (r < 0 && e && !now && t->after && !strcmp(e->code, "BAD_THRESHOLD_ORDER")) {
		size_t n = strlen(e->msg), k = json_array_size(t->after), i;
		json_int_t newest = 0;
		json_t *id;

		json_array_foreach(t->after, i, id)
			if (json_integer_value(id) > newest)
				newest = json_integer_value(id);
		snprintf(e->msg + n, sizeof(e->msg) - n, " (counted with the %zu change%s still on the way to it or its "
			 "port; the newest: change %" JSON_INTEGER_FORMAT ")", k, k == 1 ? "" : "s", newest);
	}
	return r;
}

/* In t's snapshot, the newest change: one stored after it may be one t's check did not count
 * (create_apply checks t again then). */
static int target_seen(struct store_reader *rd, struct change_target *t, struct rf_err *e)
{
	sqlite3_stmt *st = store_reader_stmt(rd, "SELECT coalesce(max(id), 0) FROM changes");
	int rc = st ? sqlite3_step(st) : SQLITE_NOMEM;
	int r;

	if (!st)
		return -ENOMEM;
	if (rc == SQLITE_ROW)
		t->seen = sqlite3_column_int64(st, 0);
	r = rc == SQLITE_ROW ? 0 : store_read_failed(st, rc, e);
	sqlite3_reset(st);
	return r;
}

/* Validates the set's values against t as filled: 0, -EINVAL with ve (a rejection), or
 * -ENOMEM.  Fine as reported too, t waits for none of the changes still out (after dropped: a
 * deadlock break behind an unrelated ECN change would). */
static int target_check(const struct change_set *cs, struct change_target *t, struct rf_err *ve)
{
	json_t *p = json_deep_copy(cs->params);
	int r;

	if (!p)
		return -ENOMEM;
	if ((r = target_validate(cs, t, p, false, ve)) == 0 && t->after) {
		json_t *p2 = json_deep_copy(cs->params);

		if (!p2) {
			json_decref(p);
			return -ENOMEM;
		}
		if (target_validate(cs, t, p2, true, NULL) == 0) {
			json_decref(t->after);
			t->after = NULL;
		}
		json_decref(p2);
	}
	json_decref(p);
	return r < 0 ? -EINVAL : 0;
}

/* t (named) read in one snapshot of rd: the newest change then and what its check needs;
 * values (stolen): what t held when it was chosen, for one gone since.  Read again (at
 * commit), what t read before is let go. */
static int target_read(struct store_reader *rd, const struct change_set *cs, struct change_target *t,
		       json_t *values, struct rf_err *e)
{
	int r;

	target_fini(t);
	t->current = t->expect = t->after = t->pfc_now = t->ecn_now = t->port_pfc = t->port_ecn = NULL;
	if ((r = store_reader_begin(rd)) < 0) {
		json_decref(values);
		return rf_err_set(e, r, "STORE_ERROR", NULL, "the store could not be read");
	}
	if ((r = target_seen(rd, t, e)) == 0)
		r = target_fill(rd, cs, t, values, e);
	store_reader_end(rd);
	json_decref(values);
	return r;
}

/* Counts t's rejection (ve) in the set: the first CHANGES_REJECTIONS_MAX detailed. */
static void reject(struct change_set *cs, const struct change_target *t, const struct rf_err *ve)
{
	if (cs->nbad++ < CHANGES_REJECTIONS_MAX) {
		json_t *tj = json_pack("{s:s,s:s,s:s}", "agent", t->agent, "device", t->device, "port", t->port);

		if (t->queue >= 0)
			json_object_set_new(tj, "queue", json_integer(t->queue));
		json_array_append_new(cs->rejections, json_pack("{s:o,s:s,s:s,s:s}", "target", tj, "code", ve->code,
								"detail", ve->msg, "pointer", ve->where));
	}
	if (cs->nbad == 1)
		cs->first = *ve;
}

int change_set_add(struct store_reader *rd, struct change_set *cs, const char *agent, json_t *entry,
		   struct rf_err *e)
{
	struct change_target *t;
	struct rf_err ve = { 0 };
	int r;

	if (cs->n == CHANGES_MAX_TARGETS)
		return rf_err_set(e, -E2BIG, "TOO_MANY_TARGETS", "/select",
				  "the selection matches more than %d objects", CHANGES_MAX_TARGETS);
	if (cs->n == cs->cap) {
		size_t nc = cs->cap ? cs->cap * 2 : 64;
		struct change_target *nt = realloc(cs->t, nc * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		cs->t = nt;
		cs->cap = nc;
	}
	t = &cs->t[cs->n++];
	memset(t, 0, sizeof(*t));
	snprintf(t->agent, sizeof(t->agent), "%s", agent);
	snprintf(t->device, sizeof(t->device), "%s", json_string_value(json_object_get(entry, "device")) ?: "");
	snprintf(t->port, sizeof(t->port), "%s", json_string_value(json_object_get(entry, "port")) ?: "");
	t->queue = json_object_get(entry, "queue") ? (int)json_integer_value(json_object_get(entry, "queue")) : -1;
	if ((r = target_read(rd, cs, t, json_incref(json_object_get(entry, "values")), e)) < 0)
		return r;
	if (cs->seen < 0 || t->seen < cs->seen)
		cs->seen = t->seen;
	if ((r = target_check(cs, t, &ve)) == -ENOMEM)
		return r;
	if (r < 0)
		reject(cs, t, &ve);
	return 0;
}

int changes_select(struct store_reader *rd, struct change_set *cs, const struct change_select *sel,
		   struct rf_err *e)
{
	static const char sql[] = "SELECT c.agent_id, a.role, c.device, c.port, c.queue, c.value "
				  "FROM configs c JOIN agents a ON a.id = c.agent_id "
				  "WHERE c.kind = ? ORDER BY c.agent_id, c.device, c.port, c.queue";
	const char *role = cs->on_switch ? "switch" : "host";
	size_t max = sel->max_targets && sel->max_targets < CHANGES_MAX_TARGETS ? sel->max_targets
									    : CHANGES_MAX_TARGETS;
	json_t *todo, *entry;
	sqlite3_stmt *st;
	int r = 0, rc;
	size_t i;

	if ((cs->kind == CHANGE_DCQCN && cs->on_switch) || (cs->kind == CHANGE_ECN && !cs->on_switch))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/select", "%s is set on %s",
				  change_kind_name(cs->kind), cs->kind == CHANGE_DCQCN ? "hosts" : "switches");
	if (!sel->node && !sel->device && !sel->port && sel->queue == -2 && !sel->all)
		return rf_err_set(e, -EINVAL, "EMPTY_SELECTION", "/select",
				  "an empty selection is every %s setting of every %s: name a %s, port, "
				  "device%s, or say \"all\": true",
				  change_kind_name(cs->kind), role, role, cs->kind == CHANGE_ECN ? " or queue" : "");
	if (!(todo = json_array()) || !(st = store_reader_stmt(rd, sql))) {
		json_decref(todo);
		return -ENOMEM;
	}
	sqlite3_bind_text(st, 1, change_kind_name(cs->kind), -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *agent = (const char *)sqlite3_column_text(st, 0);
		const char *arole = (const char *)sqlite3_column_text(st, 1);
		const char *dev = (const char *)sqlite3_column_text(st, 2);
		const char *port = (const char *)sqlite3_column_text(st, 3);
		const char *vtext = (const char *)sqlite3_column_text(st, 5);
		char hostport[140];

		if (strcmp(arole, role) || (sel->node && fnmatch(sel->node, agent, 0)) ||
		    (sel->device && fnmatch(sel->device, dev, 0)) ||
		    (sel->queue != -2 && sqlite3_column_int64(st, 4) != sel->queue))
			continue;
		/* a host port matches as PORT or DEVICE:PORT */
		snprintf(hostport, sizeof(hostport), "%s:%s", dev, port);
		if (sel->port && fnmatch(sel->port, cs->on_switch ? port : hostport, 0) &&
		    fnmatch(sel->port, port, 0))
			continue;
		if (++cs->matched > max)
			continue; /* over the limit: the rest are only counted */
		entry = json_pack("{s:s,s:s,s:o}", "device", dev, "port", port, "values",
				  json_loads(vtext ? vtext : "{}", 0, NULL) ?: json_object());
		if (!entry) {
			r = -ENOMEM;
			break;
		}
		if (cs->kind == CHANGE_ECN)
			json_object_set_new(entry, "queue", json_integer(sqlite3_column_int64(st, 4)));
		json_object_set_new(entry, "agent", json_string(agent));
		if (json_array_append_new(todo, entry) < 0) {
			r = -ENOMEM;
			break;
		}
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_read_failed(st, rc, e);
	sqlite3_reset(st);
	/* each target in a read transaction of its own (change_set_add): not inside this one */
	json_array_foreach(todo, i, entry)
		if (r == 0)
			r = change_set_add(rd, cs, json_string_value(json_object_get(entry, "agent")), entry, e);
	json_decref(todo);
	if (r == 0 && !cs->n)
		r = rf_err_set(e, -ENOENT, "NO_TARGETS", "/select",
			       "the selection matches no %s with %s settings reported", role,
			       change_kind_name(cs->kind));
	if (r == 0 && cs->matched > max)
		r = rf_err_set(e, -ERANGE, "TOO_MANY_TARGETS", "/select",
			       "the selection matches %zu %s objects, more than the limit of %zu: narrow "
			       "it, or raise \"max_targets\" (at most %d); nothing was changed",
			       cs->matched, change_kind_name(cs->kind), max, CHANGES_MAX_TARGETS);
	return r;
}

int changes_lookup(struct store_reader *rd, const char *role, enum change_kind kind, const char *agent,
		   const char *device, const char *port, int queue, json_t **ret, struct rf_err *e)
{
	const char *arole = NULL;
	int r = views_agent_role(rd, agent, &arole);

	*ret = NULL;
	if (r == -ENOENT || (r == 0 && strcmp(arole, role)))
		return rf_err_set(e, -ENOENT, !strcmp(role, "switch") ? "UNKNOWN_SWITCH" : "UNKNOWN_HOST",
				  NULL, "no %s '%s'", role, agent);
	if (r < 0)
		return r;
	if (port) {
		int64_t speed;

		if (views_port_speed(rd, agent, device, port, &speed) == -ENOENT)
			return rf_err_set(e, -ENOENT, "UNKNOWN_PORT", NULL, "%s has no port '%s%s%s'", agent,
					  device ? device : "", device ? ":" : "", port);
	}
	if ((r = configs_get(rd, agent, kind, device, port, queue, ret, e)) < 0)
		return r;
	if (!json_array_size(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		if (kind == CHANGE_ECN)
			return rf_err_set(e, -ENOENT, "UNKNOWN_QUEUE", NULL,
					  "%s port %s has no queue %d with ECN settings reported", agent, port, queue);
		if (device && !port) { /* a device it does not have: name those it has (a port given was
					* found above: its device is there, its settings not reported) */
			json_t *all = NULL, *it;
			const char *last = "";
			char have[200] = "";
			size_t i, n = 0;

			/* (a device's ports one after the other: each device once) */
			if (configs_get(rd, agent, kind, NULL, port, queue, &all, e) == 0)
				json_array_foreach(all, i, it) {
					const char *d = json_string_value(json_object_get(it, "device")) ?: "?";

					if (strcmp(d, last) && n + strlen(d) + 3 < sizeof(have))
						n += (size_t)snprintf(have + n, sizeof(have) - n, "%s%s", n ? ", " : "",
								      d);
					last = d;
				}
			json_decref(all);
			if (n)
				return rf_err_set(e, -ENOENT, "UNKNOWN_DEVICE", NULL,
						  "%s has no device '%s' with %s settings (it reports them for %s)",
						  agent, device, change_kind_name(kind), have);
		}
		return rf_err_set(e, -ENOENT, "NO_CONFIGURATION", NULL,
				  "%s has reported no %s configuration%s%s (its agent cannot read it, or "
				  "has not reported yet)", agent, change_kind_name(kind), port ? " for port " : "",
				  port ? port : "");
	}
	return 0;
}

int change_set_check(const struct change_set *cs, bool summary, struct rf_err *e)
{
	if (!cs->nbad)
		return 0;
	if (!summary) {
		if (e)
			*e = cs->first;
		return -EINVAL;
	}
	return rf_err_set(e, -EINVAL, cs->first.code, cs->first.where,
			  "%zu of %zu targets reject the change; nothing was changed. First: %s", cs->nbad,
			  cs->n, cs->first.msg);
}

/* t, to which change t->clash was stored since it was read, read (on rd) and checked again:
 * a rejection counted in the set, saying so.  0, or -errno with e. */
static int target_again(struct store_reader *rd, struct change_set *cs, struct change_target *t, struct rf_err *e)
{
	struct rf_err ve = { 0 };
	int r;

	if ((r = target_read(rd, cs, t, json_incref(t->current), e)) < 0)
		return r;
	if ((r = target_check(cs, t, &ve)) == -ENOMEM)
		return r;
	if (r < 0) {
		size_t n = strlen(ve.msg);

		if (t->clash_gone)
			snprintf(ve.msg + n, sizeof(ve.msg) - n, "; checked again as it was stored: change %" PRId64
				 ", which it counted, was settled meanwhile without its agent's read-back", t->clash);
		else
			snprintf(ve.msg + n, sizeof(ve.msg) - n, "; checked again as it was stored, counting change %" PRId64
				 " (by %s), stored meanwhile", t->clash, t->clash_by);
		reject(cs, t, &ve);
	}
	t->clash = 0;
	t->clash_gone = false;
	return 0;
}

/* Every change of a set, in one transaction; the first change's id is the batch's. */
struct create_job {
	struct store_job job;
	struct change_set *cs;
	const char *params; /* the values, normalized, as stored and sent */
	const char *actor, *reason;
	int64_t deadline_ns, batch;
	struct rf_err err; /* why a target checked again rejects it, or why it could not be */
};

/* Whether a change of kind to queue q of t's port is one t's validation counts (lay_out): of
 * an ECN queue, its own ECN and the port's PFC; of a switch port's PFC, the port's PFC and its
 * queues' ECN; else its own kind. */
static bool counts(const struct change_set *cs, const struct change_target *t, enum change_kind kind, int q)
{
	if (cs->kind == CHANGE_ECN)
		return kind == CHANGE_PFC || (kind == CHANGE_ECN && q == t->queue);
	if (cs->kind == CHANGE_PFC && cs->on_switch)
		return kind == CHANGE_PFC || kind == CHANGE_ECN;
	return kind == cs->kind;
}

/* "agent\x1fdevice\x1fport" (a new string), or NULL. */
static char *port_key(const char *agent, const char *device, const char *port)
{
	char *k;

	return asprintf(&k, "%s\x1f%s\x1f%s", agent, device, port) < 0 ? NULL : k;
}

/* The set's targets by port: heads (index + 1) in a map, chained through next[]. */
struct target_index {
	struct hmap map;
	char **keys;
	size_t *next;
	size_t n;
};

static void target_index_fini(struct target_index *x)
{
	for (size_t i = 0; x->keys && i < x->n; i++)
		free(x->keys[i]);
	free(x->keys);
	free(x->next);
	hmap_fini(&x->map);
}

static int target_index_init(struct target_index *x, const struct change_set *cs)
{
	hmap_init(&x->map);
	x->n = cs->n;
	x->keys = calloc(cs->n, sizeof(*x->keys));
	x->next = calloc(cs->n, sizeof(*x->next));
	if (!x->keys || !x->next)
		return -ENOMEM;
	for (size_t i = 0; i < cs->n; i++) {
		const struct change_target *t = &cs->t[i];
		void *head = NULL;

		if (!(x->keys[i] = port_key(t->agent, t->device, t->port)))
			return -ENOMEM;
		if ((head = hmap_get(&x->map, x->keys[i])))
			x->next[i] = (size_t)(uintptr_t)head;
		if (hmap_put(&x->map, x->keys[i], (void *)(uintptr_t)(i + 1), NULL) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* On the writer, before the set's changes are stored: the targets to which a change their
 * check counts was stored after they were read (their seen) get its id (clash) — two changes
 * checked side by side could break together what neither breaks alone (Kmax raised above an
 * XOFF lowered at the same moment).  Up to CHANGES_RECHECK_MAX of them are read and checked
 * again here, in the writer's transaction, where nothing else can be stored meanwhile; more
 * would hold the writer up (each is a few queries): -ESTALE, and change_set_commit reads them
 * on a reader and tries again.  The ids stored since the set's first target was read are few:
 * one query.  0, -EINVAL with the set's rejections (j->err), -EALREADY (refuse_changed), or
 * another -errno. */
static int create_recheck(struct create_job *j, struct store *s)
{
	static const char sql[] = "SELECT id, actor, agent_id, kind, device, port, queue FROM changes "
				  "WHERE id > ?1 ORDER BY id";
	static const char gone_sql[] = "SELECT p.id FROM json_each(?1) j JOIN changes p ON p.id = j.value WHERE "
				       "p.settled_by IS NOT NULL OR (p.state IN ('failed', 'timed_out') AND "
				       "p.in_doubt IS NULL) LIMIT 1";
	struct change_set *cs = j->cs;
	sqlite3_stmt *st = store_stmt(s, sql);
	struct store_reader *rd = store_writer_reader(s);
	struct target_index x;
	size_t nagain = 0;
	int rc, r;

	if (!st)
		return -EIO;
	if ((r = target_index_init(&x, cs)) < 0) {
		target_index_fini(&x);
		return r;
	}
	sqlite3_bind_int64(st, 1, cs->seen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *agent = (const char *)sqlite3_column_text(st, 2);
		const char *dev = (const char *)sqlite3_column_text(st, 4);
		const char *port = (const char *)sqlite3_column_text(st, 5);
		int64_t id = sqlite3_column_int64(st, 0);
		enum change_kind kind;
		char *key;
		size_t i;

		if (!agent || !dev || !port || change_kind_parse((const char *)sqlite3_column_text(st, 3), &kind) < 0)
			continue;
		if (!(key = port_key(agent, dev, port))) {
			rc = SQLITE_NOMEM;
			break;
		}
		i = (size_t)(uintptr_t)hmap_get(&x.map, key);
		free(key);
		for (; i; i = x.next[i - 1]) {
			struct change_target *t = &cs->t[i - 1];

			if (id <= t->seen || !counts(cs, t, kind, (int)sqlite3_column_int64(st, 6)))
				continue;
			if (!t->clash) {
				t->clash = id;
				snprintf(t->clash_by, sizeof(t->clash_by), "%s",
					 (const char *)sqlite3_column_text(st, 1) ?: "");
				nagain++;
			}
			/* the detector's mask is made from the priorities it read */
			if (cs->refuse_changed && kind == CHANGE_PFC) {
				rf_err_set(&j->err, -EALREADY, "CHANGED_MEANWHILE", NULL,
					   "change %" PRId64 " (by %s) to %s %s%s%s was stored while this one was made "
					   "from what was read before; nothing was changed: make it again from what is "
					   "there now", id, (const char *)sqlite3_column_text(st, 1) ?: "", t->agent,
					   cs->on_switch ? "port" : t->device, cs->on_switch ? " " : ":", t->port);
				sqlite3_reset(st);
				target_index_fini(&x);
				return -EALREADY;
			}
		}
	}
	sqlite3_reset(st);
	target_index_fini(&x);
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	/* a change its check counted, settled since (no update is a new row): it is no longer out,
	 * and one that counts it would wait for it for ever, or fail (fail_dependents ran) */
	for (size_t i = 0; i < cs->n; i++) {
		struct change_target *t = &cs->t[i];
		char *ids;

		if (t->clash || !json_array_size(t->after))
			continue;
		if (!(st = store_stmt(s, gone_sql)) || !(ids = json_dumps(t->after, JSON_COMPACT)))
			return st ? -ENOMEM : -EIO;
		sqlite3_bind_text(st, 1, ids, -1, free);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			t->clash = sqlite3_column_int64(st, 0);
			t->clash_gone = true;
			nagain++;
		}
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return store_errno(rc);
	}
	if (nagain > changes_seam.recheck_max)
		return -ESTALE;
	for (size_t i = 0; nagain && i < cs->n; i++)
		if (cs->t[i].clash && (r = target_again(rd, cs, &cs->t[i], &j->err)) < 0)
			return r;
	return cs->nbad ? change_set_check(cs, true, &j->err) : 0;
}

static int create_apply(struct store_job *sj, struct store *s)
{
	static const char ins[] =
		"INSERT INTO changes(batch, created_ns, actor, reason, agent_id, kind, device, port, "
		"queue, params, old, state, deadline_ns, updated_ns, after_ids) "
		"VALUES(?,?,?,?,?,?,?,?,?,?,?,'pending',?,?,?)";
	static const char fix_batch[] = "UPDATE changes SET batch = ? WHERE batch = 0";
	struct create_job *j = (struct create_job *)sj;
	int64_t now = tu_now_ns();
	sqlite3_stmt *st;
	int r;

	if ((r = create_recheck(j, s)) < 0)
		return r;
	for (size_t i = 0; i < j->cs->n; i++) {
		const struct change_target *t = &j->cs->t[i];
		char *old = t->current ? json_dumps(t->current, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		char *after = t->after ? json_dumps(t->after, JSON_COMPACT) : NULL;

		if (!(st = store_stmt(s, ins))) {
			free(old);
			free(after);
			return -EIO;
		}
		sqlite3_bind_int64(st, 1, j->batch);
		sqlite3_bind_int64(st, 2, now);
		sqlite3_bind_text(st, 3, j->actor, -1, SQLITE_STATIC);
		store_bind_text_or_null(st, 4, j->reason);
		sqlite3_bind_text(st, 5, t->agent, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, kind_names[j->cs->kind], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, t->device, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 8, t->port, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 9, t->queue);
		sqlite3_bind_text(st, 10, j->params, -1, SQLITE_STATIC);
		if (old)
			sqlite3_bind_text(st, 11, old, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 12, j->deadline_ns);
		sqlite3_bind_int64(st, 13, now);
		if (after)
			sqlite3_bind_text(st, 14, after, -1, SQLITE_TRANSIENT);
		r = store_step(st);
		free(old);
		free(after);
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

struct changes_seam changes_seam = { .recheck_max = CHANGES_RECHECK_MAX };

int change_set_commit(struct store *s, struct change_set *cs, const char *actor, const char *reason,
		      int64_t deadline_ns, int64_t *ret_batch, struct rf_err *e)
{
	struct create_job j = { .job = { .apply = create_apply }, .cs = cs,
				.actor = actor && *actor ? actor : "anonymous", .reason = reason,
				.deadline_ns = deadline_ns };
	char *text;
	json_t *p;
	int r;

	*ret_batch = 0;
	if (cs->nbad)
		return change_set_check(cs, true, e);
	if (!cs->n)
		return rf_err_set(e, -EINVAL, "NO_TARGETS", "/select", "the change has no target");
	/* the values as stored and sent: normalized (sizes in bytes), once, with the first target */
	if (!(p = json_deep_copy(cs->params)))
		return rf_err_set(e, -ENOMEM, "STORE_ERROR", NULL, "out of memory; nothing was changed");
	target_validate(cs, &cs->t[0], p, false, NULL);
	text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(p);
	if (!text)
		return rf_err_set(e, -ENOMEM, "STORE_ERROR", NULL, "out of memory; nothing was changed");
	j.params = text;
	for (int tries = 0;; tries++) {
		struct store_reader *rd;

		memset(&j.err, 0, sizeof(j.err));
		if (changes_seam.before_try)
			changes_seam.before_try(changes_seam.arg);
		if ((r = store_submit_wait(s, &j.job)) != -ESTALE)
			break;
		/* too many targets changed meanwhile to read again on the writer: read them here */
		if (tries + 1 == CHANGES_CLASH_TRIES) {
			rf_err_set(&j.err, -EALREADY, "CHANGED_MEANWHILE", NULL,
				   "on each of %d tries, more than %zu of its targets got another change while this one "
				   "was checked; nothing was changed: send it again (or narrow the selection)",
				   CHANGES_CLASH_TRIES, changes_seam.recheck_max);
			r = -EALREADY;
			break;
		}
		if (!(rd = store_reader_get(s))) {
			r = rf_err_set(&j.err, -EIO, "STORE_ERROR", NULL, "the store could not be read");
			break;
		}
		for (size_t i = 0; r == -ESTALE && i < cs->n; i++)
			if (cs->t[i].clash && (r = target_again(rd, cs, &cs->t[i], &j.err)) == 0)
				r = -ESTALE;
		store_reader_put(s, rd);
		if (r == -ESTALE && cs->nbad)
			r = change_set_check(cs, true, &j.err);
		if (r != -ESTALE)
			break;
	}
	if (r == 0)
		*ret_batch = j.batch;
	free(text);
	if (r < 0 && j.err.code[0]) {
		if (e)
			*e = j.err;
	} else if (r < 0) {
		rf_err_set(e, r, r == -EAGAIN ? "QUEUE_FULL" : "STORE_ERROR", NULL,
			   "the change could not be stored (%s); nothing was changed", strerror(-r));
	}
	return r;
}
