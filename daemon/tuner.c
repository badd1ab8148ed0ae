/* The congestion-control tuner of rocefabd: see tuner.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cc/deadlock.h"
#include "daemon/changes.h"
#include "daemon/events.h"
#include "daemon/tuner.h"
#include "lib/log.h"
#include "lib/timeutil.h"
#include "lib/validate.h"
#include "lib/vec.h"

#define HISTORY_MAX 2000 /* proposals kept in the history (the audit log keeps every change) */
#define SNAP_MAX_PORTS 262144

/* A proposal whose change set is out, until every change of it settled. */
struct applying {
	uint64_t proposal;
	int64_t batch; /* -1 while it is being stored */
	char reason[1280]; /* its change set's reason: unique (it names the proposal), so that after
			   * a crash between storing the set and saving its batch the batch is
			   * found again (load_saved) */
};

struct tuner {
	struct store *store;
	struct events *events; /* proposals' news, or NULL */
	struct tuner_opts o;
	pthread_mutex_t lock;
	pthread_mutex_t policy_lock; /* a PUT's read, save and apply, and a pass's reload: one at a time */
	struct cc_tn *tn;
	/* the last decision held the harder steps (a fault: logged and published when it starts
	 * and ends), since when (wall clock, ns) */
	bool held;
	int64_t held_since_ns;
	struct cc_snap *acc; /* the detector's snapshots since the last decision, summed */
	struct applying *app;
	size_t napp, capapp;
	json_t *history; /* proposal id (text) -> record */
	json_t *order;	 /* ids in the order made */
	uint64_t last_id; /* the newest proposal record_pending looked at */
	unsigned prio;	  /* the lossless priority tuned: every pass reads and changes that queue's
			   * ECN; the lowest lossless one of the snapshots, but kept while its queues
			   * hold steps of the tuner's (cc_tn_queues_changed: their undos go there) */
	int lowest;	  /* the last snapshot's lowest lossless priority, -1 before one or none */
	int warned;	  /* the lowest lossless priority the log was told the tuner keeps from */
	bool prio_known;  /* prio is the saved state's or a snapshot's, not the default 3 */
	json_t *asked;	 /* proposal id (text) -> the operator who applied it */
	uint64_t runs, decisions, proposed, applied, failed, rejected;
	int64_t last_run_mono, last_run_ns, last_decision_ns;
	tuner_probe_fn probe; /* the pingmesh's tail latency, or NULL */
	void *probe_ctx;
	tuner_fault_fn fault; /* the detector's host faults, or NULL */
	void *fault_ctx;
	/* across restarts (meta key STATE_KEY): the state the previous process saved, until it is
	 * taken back (at the first decision with the fabric tracked and no change out), and the
	 * text last saved (saved again only when it changed) */
	enum { SAVED_UNREAD, SAVED_PENDING, SAVED_BACK } saved_st;
	json_t *restore;
	char *restore_raw; /* its text, kept aside if it is refused */
	char *saved;
	char policy_refused[640]; /* what was wrong with the saved policy: said once, not every pass */
	char saved_note[640];	  /* the same, for GET /api/v1/cc (under lock: a status waits for no
				   * database write) */
	bool mode_noted;	  /* the saved policy's mode over the configuration's: said once */
};

#define STATE_KEY "cc_state"
#define HISTORY_SAVED 100 /* proposals' records kept across a restart (the audit log has all) */

static void sync_policy(struct tuner *t, struct store_reader *rd);

/* What the previous process saved: its change sets still out (settled as if ours), the last
 * proposals' records, and the library's state, taken back at the first decision
 * (restore_saved).  Under t->lock or before the tuner is shared. */
static void load_saved(struct tuner *t, struct store_reader *rd)
{
	json_t *doc, *it;
	char *raw;
	size_t i;

	if (store_meta_text(rd, STATE_KEY, &raw) < 0)
		return; /* SAVED_UNREAD: again at the next pass, and nothing saved over it */
	t->saved_st = SAVED_PENDING;
	if (!raw)
		return; /* nothing saved: a first start */
	doc = json_loads(raw, 0, NULL);
	t->restore_raw = raw;
	/* the priority whose queues the saved steps changed (none saved: an older rocefabd's,
	 * which tuned the lowest lossless one, as the first snapshot gives it) */
	if (json_is_integer(json_object_get(doc, "prio")) && json_integer_value(json_object_get(doc, "prio")) >= 0 &&
	    json_integer_value(json_object_get(doc, "prio")) < CC_NPRIO) {
		t->prio = (unsigned)json_integer_value(json_object_get(doc, "prio"));
		t->prio_known = true;
	}
	json_array_foreach(json_object_get(doc, "out"), i, it) {
		json_t *id = json_object_get(it, "proposal"), *b = json_object_get(it, "batch");
		const char *why = json_string_value(json_object_get(it, "reason"));
		int64_t batch = json_is_integer(b) ? json_integer_value(b) : 0;
		struct rf_err e = { 0 };

		/* one being stored when the process ended: stored or not, as its reason says (the
		 * question failing, the saved state is read again at the next pass) */
		if (batch <= 0 && why && changes_batch_of_reason(rd, why, &batch, &e) < 0) {
			log_warning("tuner", "the change set of proposal %" JSON_INTEGER_FORMAT " could not be looked "
					     "for (the saved state is read again at the next pass): %s",
				    json_integer_value(id), e.msg);
			t->napp = 0;
			t->restore_raw = NULL;
			t->saved_st = SAVED_UNREAD;
			json_decref(doc);
			free(raw);
			return;
		}
		if (json_is_integer(id) && batch > 0 &&
		    vec_room((void **)&t->app, &t->capapp, t->napp, sizeof(*t->app)) == 0)
			t->app[t->napp++] = (struct applying){ .proposal = (uint64_t)json_integer_value(id),
							       .batch = batch };
	}
	json_array_foreach(json_object_get(doc, "history"), i, it) {
		json_t *id = json_object_get(it, "id");
		char key[24];

		if (!json_is_object(it) || !json_is_integer(id) || json_integer_value(id) < 1 ||
		    json_array_size(t->order) >= HISTORY_SAVED)
			continue;
		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
		if (json_object_get(t->history, key))
			continue;
		json_array_append_new(t->order, json_string(key));
		json_object_set(t->history, key, it);
	}
	/* the batches found again go with their records; what the previous process had waiting,
	 * or approved and never stored, is gone with it (said at once: it cannot be applied) */
	for (i = 0; i < t->napp; i++) {
		char key[24];
		json_t *rec;

		snprintf(key, sizeof(key), "%" PRIu64, t->app[i].proposal);
		if ((rec = json_object_get(t->history, key)) && !json_object_get(rec, "change_batch"))
			json_object_set_new(rec, "change_batch", json_integer(t->app[i].batch));
	}
	json_array_foreach(t->order, i, it) {
		json_t *rec = json_object_get(t->history, json_string_value(it));
		const char *st = json_string_value(json_object_get(rec, "state")) ?: "";

		if (!strcmp(st, "waiting") || (!strcmp(st, "approved") && !json_object_get(rec, "change_batch"))) {
			json_object_set_new(rec, "state", json_string("rejected"));
			json_object_set_new(rec, "error", json_string("rocefabd stopped before it was applied"));
		}
	}
	/* NULL when damaged: restore_saved says so and keeps the text aside */
	t->restore = json_is_object(doc) && json_integer_value(json_object_get(doc, "version")) == 1
			     ? json_incref(json_object_get(doc, "tuner"))
			     : NULL;
	json_decref(doc);
}

int tuner_new(struct store *s, const struct tuner_opts *o, struct tuner **ret)
{
	struct tuner *t = calloc(1, sizeof(*t));
	struct cc_tn_policy p = cc_tn_defaults;

	if (!t)
		return -ENOMEM;
	t->store = s;
	t->o = *o;
	t->prio = 3; /* until the saved state or the first snapshot says which */
	t->lowest = t->warned = -1;
	p.mode = o->mode;
	t->tn = cc_tn_new(&p);
	t->history = json_object();
	t->order = json_array();
	t->asked = json_object();
	if (!t->tn || !t->history || !t->order || !t->asked) {
		tuner_free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->policy_lock, NULL);
	/* the saved policy is in force from the start (GET answers it before the first pass) */
	{
		struct store_reader *rd = store_reader_get(s);

		if (rd) {
			sync_policy(t, rd);
			load_saved(t, rd);
			store_reader_put(s, rd);
		}
	}
	*ret = t;
	return 0;
}

void tuner_free(struct tuner *t)
{
	if (!t)
		return;
	cc_tn_free(t->tn);
	cc_snap_free(t->acc);
	free(t->app);
	json_decref(t->history);
	json_decref(t->order);
	json_decref(t->asked);
	json_decref(t->restore);
	free(t->restore_raw);
	free(t->saved);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->policy_lock);
	free(t);
}

void tuner_observe(void *ctx, const struct cc_snap *s)
{
	struct tuner *t = ctx;

	pthread_mutex_lock(&t->lock);
	if (!t->acc)
		t->acc = cc_snap_new(s->prios, s->t_us, 0);
	/* a fabric that grew beyond reason is summed no further (the next decision restarts) */
	if (t->acc && t->acc->nports < SNAP_MAX_PORTS && cc_snap_merge(t->acc, s) < 0) {
		cc_snap_free(t->acc);
		t->acc = NULL;
	}
	pthread_mutex_unlock(&t->lock);
}

/* --- what is configured ---------------------------------------------------------------------- */

static double num(json_t *o, const char *k, double def)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : def;
}

/* A count as its agent reported it (any number: report_parse takes reals), held to 0..max so
 * that a negative or huge one converts defined (a value outside the policy: the member has no
 * vote and no step moves it). */
static uint64_t reported_count(json_t *o, const char *k, double def, double max)
{
	double v = num(o, k, def);

	return v > 0 ? (uint64_t)fmin(v, max) : 0;
}

#define COUNT_MAX 4611686018427387904.0 /* 2^62: far above any range, and no sum of two wraps */

/* One object's configuration, values v of kind, into the tuner's beliefs: a switch queue's ECN,
 * a host's DCQCN (a NIC port's), a switch port's XOFF threshold on prio. */
static void track_one(struct tuner *t, const char *agent, const char *role, const char *kind, const char *port,
		      json_t *v, unsigned prio)
{
	if (!strcmp(kind, "ecn") && !strcmp(role, "switch")) {
		struct cc_tn_ecn e = { .kmin_bytes = reported_count(v, "kmin_bytes", 0, COUNT_MAX),
				       .kmax_bytes = reported_count(v, "kmax_bytes", 0, COUNT_MAX),
				       .pmax = num(v, "pmax", 0) };

		cc_tn_track_port(t->tn, agent, port, &e);
	} else if (!strcmp(kind, "dcqcn") && !strcmp(role, "host")) {
		struct cc_tn_dcqcn d = {
			.min_time_between_cnps_us = num(v, "min_time_between_cnps", 4),
			.rpg_time_reset_us = num(v, "rpg_time_reset", 300),
			.rpg_ai_rate_mbps = num(v, "rpg_ai_rate", 5),
			.rpg_hai_rate_mbps = num(v, "rpg_hai_rate", 50),
			.rpg_byte_reset = reported_count(v, "rpg_byte_reset", 32767, COUNT_MAX),
			.dce_tcp_g = (uint32_t)reported_count(v, "dce_tcp_g", 1019, UINT32_MAX),
		};

		cc_tn_track_host(t->tn, agent, &d);
	} else if (!strcmp(kind, "pfc") && !strcmp(role, "switch") && json_is_object(v)) {
		/* Kmax stays a control loop below XOFF where the priority is lossless */
		int64_t x = (json_integer_value(json_object_get(v, "enable")) >> prio) & 1 ? validate_pfc_xoff(v) : 0;

		cc_tn_track_xoff(t->tn, agent, port, x > 0 ? (uint64_t)x : 0);
	}
}

/* The objects someone other than the tuner has a change on its way to (pending, sent, or in
 * doubt), as they will be once it is applied (changes_expected: with every change on its way,
 * the tuner's too): the tuner sees an operator's value before its agent reports it, and
 * leaves that member be (a canary or rollout made or sent meanwhile would overwrite it). */
static void track_expected(struct tuner *t, struct store_reader *rd, unsigned prio)
{
	/* (each half through its partial index: changes_out, changes_doubt; an OR of the two
	 * conditions scanned the whole audit log) */
#define OTHERS_OPEN(cond)                                                                                    \
	"SELECT c.agent_id, a.role, c.kind, c.device, c.port FROM changes c JOIN agents a ON a.id = c.agent_id " \
	"WHERE " cond " AND c.actor <> 'tuner' AND c.actor NOT LIKE 'tuner (%' AND "                            \
	"(c.kind IN ('dcqcn', 'pfc') OR (c.kind = 'ecn' AND c.queue = ?1))"
	static const char sql[] = OTHERS_OPEN("c.state IN ('pending', 'sent')") " UNION " OTHERS_OPEN("c.in_doubt = 1");
#undef OTHERS_OPEN
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *objs = json_array(), *o;
	size_t i;

	if (!st || !objs) {
		json_decref(objs);
		return;
	}
	sqlite3_bind_int(st, 1, (int)prio);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(objs, json_pack("[s,s,s,s,s]", (const char *)sqlite3_column_text(st, 0) ?: "",
						      (const char *)sqlite3_column_text(st, 1) ?: "",
						      (const char *)sqlite3_column_text(st, 2) ?: "",
						      (const char *)sqlite3_column_text(st, 3) ?: "",
						      (const char *)sqlite3_column_text(st, 4) ?: ""));
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	json_array_foreach(objs, i, o) {
		const char *agent = json_string_value(json_array_get(o, 0)), *kind = json_string_value(json_array_get(o, 2));
		enum change_kind k;
		struct rf_err e = { 0 };
		json_t *v = NULL;

		if (change_kind_parse(kind, &k) < 0 ||
		    changes_expected(rd, agent, k, json_string_value(json_array_get(o, 3)),
				     json_string_value(json_array_get(o, 4)), k == CHANGE_ECN ? (int)prio : -2, &v, &e) < 0)
			continue;
		/* (none reported: nothing to lay the change over); a priority lossless as reported
		 * stays so for Kmax until it is reported otherwise (a deadlock break on its way is
		 * undone by its restore: the change path checks Kmax against either) */
		if (v && (k != CHANGE_PFC || (json_integer_value(json_object_get(v, "enable")) >> prio) & 1))
			track_one(t, agent, json_string_value(json_array_get(o, 1)), kind,
				  json_string_value(json_array_get(o, 4)), v, prio);
		json_decref(v);
	}
	json_decref(objs);
}

/* The ECN of every switch queue of prio and the DCQCN of every host, as last reported, and
 * each switch port's XOFF threshold; xoff_only: that alone (the tuner never changes PFC, so
 * what its agents reported is the newest even while a change of the tuner's is out).  Then
 * the objects others have changes on their way to, as they will be (track_expected). */
static void track(struct tuner *t, struct store_reader *rd, unsigned prio, bool xoff_only)
{
	/* a port's ECN before its PFC (kind in order): its XOFF threshold goes to a port tracked */
	static const char sql[] = "SELECT c.agent_id, a.role, c.kind, c.port, c.value FROM configs c "
				  "JOIN agents a ON a.id = c.agent_id WHERE (c.kind = 'ecn' AND c.queue = ?) "
				  "OR c.kind IN ('dcqcn', 'pfc') ORDER BY c.agent_id, c.device, c.port, c.kind";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);

	if (!st)
		return;
	sqlite3_bind_int(st, 1, (int)prio);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 2) ?: "";
		json_t *v;

		if (xoff_only && strcmp(kind, "pfc"))
			continue;
		v = json_loads((const char *)sqlite3_column_text(st, 4) ?: "", 0, NULL);
		track_one(t, (const char *)sqlite3_column_text(st, 0) ?: "", (const char *)sqlite3_column_text(st, 1) ?: "",
			  kind, (const char *)sqlite3_column_text(st, 3) ?: "", v, prio);
		json_decref(v);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	track_expected(t, rd, prio);
}

static void policy_in_force(struct tuner *t, const struct cc_tn_policy *p, const char *actor, const char *reason);

static void sync_policy(struct tuner *t, struct store_reader *rd)
{
	json_t *doc, *fixed = NULL, *mode;
	struct cc_tn_policy p = cc_tn_defaults;
	char err[300], note[640];
	int r;

	pthread_mutex_lock(&t->policy_lock);
	doc = store_meta_get(rd, "cc_policy");
	p.mode = t->o.mode;
	r = doc ? cc_tn_policy_from_json(doc, &p, err, sizeof(err)) : 0;
	if (r < 0 && (fixed = cc_tn_policy_repaired(doc)) && cc_tn_policy_from_json(fixed, &p, note, sizeof(note)) == 0) {
		r = 1; /* taken, repaired */
		snprintf(note, sizeof(note), "the saved policy is of an older rocefabd (%s): taken repaired (a loop_bytes "
					     "of 0 as the default, the hosts' ranges rounded inward to whole units, ranges "
					     "past what devices take held to them, a '[' left open in a hosts pattern "
					     "escaped)",
			 err);
		if (strcmp(note, t->policy_refused))
			log_notice("tuner", "%s", note);
		snprintf(t->policy_refused, sizeof(t->policy_refused), "%s", note);
	} else if (r < 0) {
		/* the defaults, but a saved mode stays: a tuner turned off must not start acting */
		mode = json_object_get(doc, "mode");
		if (json_is_string(mode))
			cc_tn_mode_parse(json_string_value(mode), &p.mode);
		snprintf(note, sizeof(note), "the saved policy is refused (%s): the defaults are in force, mode %s",
			 err, cc_tn_mode_name(p.mode));
		if (strcmp(note, t->policy_refused))
			log_warning("tuner", "%s", note);
		snprintf(t->policy_refused, sizeof(t->policy_refused), "%s", note);
	} else {
		t->policy_refused[0] = '\0';
	}
	/* the whole policy is saved by any PUT, its mode too: the configuration's cc.mode is then
	 * only the first start's (a repaired one's too) */
	if (doc && r >= 0 && p.mode != t->o.mode && !t->mode_noted) {
		log_notice("tuner",
			   "mode %s from the policy saved by PUT /api/v1/cc/policy, not the configuration's cc.mode "
			   "(%s): PUT the mode to change it",
			   cc_tn_mode_name(p.mode), cc_tn_mode_name(t->o.mode));
		t->mode_noted = true;
	}
	json_decref(doc);
	json_decref(fixed);
	pthread_mutex_lock(&t->lock);
	memcpy(t->saved_note, t->policy_refused, sizeof(t->saved_note));
	/* most passes: the one set already; else the start, or a database restored or edited */
	if (!cc_tn_policy_equal(cc_tn_get_policy(t->tn), &p))
		policy_in_force(t, &p, NULL, NULL);
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&t->policy_lock);
}

/* --- proposals through the change path ------------------------------------------------------- */

/* The REST object's value of a knob: integers but for pmax. */
static json_t *knob_value(enum cc_tn_knob k, double v)
{
	return k == CC_TN_PMAX ? json_real(v) : json_integer((json_int_t)llround(v));
}

/* The reason of a proposal's change set, as the audit log shows it (with the proposal's id:
 * the history's record and the change log name each other), and the operator's who asked for
 * it (who, why: NULL when none). */
static void change_reason(const struct cc_tn_proposal *p, const char *who, const char *why, char *buf, size_t len)
{
	snprintf(buf, len, "%s step %" PRIu64 " %s (proposal %" PRIu64 "): %s%s%s%s%s", p->cls_name, p->step,
		 p->phase == CC_TN_CANARY ? "canary" : p->phase == CC_TN_ROLLOUT ? "rollout" : "rollback", p->id,
		 p->reason, who && why ? "; asked by " : "", who && why ? who : "", who && why ? ": " : "",
		 who && why ? why : "");
}

/* One change set for a proposal's changes (they set one knob to one value).  0 and the batch,
 * or -errno with e. */
static int commit(struct tuner *t, struct store_reader *rd, const struct cc_tn_proposal *p, unsigned prio,
		  const char *actor, const char *reason, int64_t *ret_batch, struct rf_err *e)
{
	bool host = cc_tn_class_is_hosts(p->cls);
	enum change_kind kind = host ? CHANGE_DCQCN : CHANGE_ECN;
	json_t *params = json_object();
	struct change_set cs;
	int r;

	if (!params)
		return -ENOMEM;
	json_object_set_new(params, cc_tn_knob_name(p->knob), knob_value(p->knob, p->to));
	r = change_set_init(&cs, kind, !host, params);
	json_decref(params);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < p->nchanges; i++) {
		const struct cc_tn_change *c = &p->changes[i];
		json_t *entries = NULL, *entry;
		size_t k;

		/* a host: every NIC port it reported DCQCN of; a switch port (its snapshot name is
		 * the port's): that queue */
		r = host ? changes_lookup(rd, "host", kind, c->node, NULL, NULL, -2, &entries, e)
			 : changes_lookup(rd, "switch", kind, c->node, NULL, c->port, (int)prio, &entries, e);
		json_array_foreach(entries, k, entry)
			if (r == 0)
				r = change_set_add(rd, &cs, c->node, entry, e);
		json_decref(entries);
	}
	if (r == 0 && (r = change_set_check(&cs, true, e)) == 0)
		r = change_set_commit(t->store, &cs, actor, reason, tu_now_ns() + t->o.deadline_ns, ret_batch, e);
	change_set_fini(&cs);
	return r;
}

/* The entry of proposal id's change set out (or being stored), NULL: none (under t->lock). */
static struct applying *app_of(struct tuner *t, uint64_t id)
{
	for (size_t k = 0; k < t->napp; k++)
		if (t->app[k].proposal == id)
			return &t->app[k];
	return NULL;
}

/* The proposals' records (history) as they are now. */
static void record(struct tuner *t, const struct cc_tn_proposal *p)
{
	char key[24];
	json_t *rec, *old;

	snprintf(key, sizeof(key), "%" PRIu64, p->id);
	rec = cc_tn_proposal_json(p);
	if (!rec)
		return;
	old = json_object_get(t->history, key);
	if (old) {
		/* keep what only the daemon knows: the change batch, who decided, the outcome, the
		 * error (unless the tuner gives its own: a withdrawal, a rollback given up) */
		static const char *const keep[] = { "change_batch", "decided_by", "decision_reason", "outcome", "error",
						    "made_at", NULL };

		for (int i = 0; keep[i]; i++)
			if (json_object_get(old, keep[i]) && !json_object_get(rec, keep[i]))
				json_object_set(rec, keep[i], json_object_get(old, keep[i]));
		if (json_equal(old, rec)) { /* nothing new: no event (every pass refreshes) */
			json_decref(rec);
			return;
		}
		/* every way a proposal not yet sent is turned down: an operator's reject or rollback,
		 * the tuner turned off, new host classes (one whose change set is on its way is
		 * rolled back: not one turned down) */
		if (!app_of(t, p->id) &&
		    (!strcmp(json_string_value(json_object_get(old, "state")) ?: "", "waiting") ||
		     !strcmp(json_string_value(json_object_get(old, "state")) ?: "", "approved")) &&
		    !strcmp(json_string_value(json_object_get(rec, "state")) ?: "", "rejected"))
			t->rejected++;
	} else {
		char at[40];

		/* when, by rocefabd's clock (t_us is the counters': fabric time in the simulator) */
		json_object_set_new(rec, "made_at", json_string(tu_format_rfc3339(tu_now_ns(), at, sizeof(at))));
		json_array_append_new(t->order, json_string(key));
		t->proposed++;
		if (json_array_size(t->order) > HISTORY_MAX) {
			const char *oldest = json_string_value(json_array_get(t->order, 0));

			/* long settled: who asked for it goes with its record */
			json_object_del(t->asked, oldest);
			json_object_del(t->history, oldest);
			json_array_remove(t->order, 0);
		}
	}
	json_object_set_new(t->history, key, rec);
	if (t->events)
		events_publish(t->events, "proposal",
			       json_pack("{s:I,s:O?}", "id", (json_int_t)p->id, "state",
					 json_object_get(rec, "state")));
}

static void record_pending(struct tuner *t);
static bool open_record(json_t *rec);

/* Every record still open (waiting or approved) as its proposal is now, and every proposal
 * waiting or under way (under t->lock): a policy change or a pass may have decided some. */
static void refresh_open(struct tuner *t)
{
	for (size_t i = 0; i < json_array_size(t->order); i++) {
		const char *key = json_string_value(json_array_get(t->order, i));
		json_t *rec = json_object_get(t->history, key);
		struct cc_tn_proposal *pp;

		if (rec && open_record(rec) && (pp = cc_tn_find(t->tn, strtoull(key, NULL, 10))))
			record(t, pp);
	}
	record_pending(t);
}

/* Every proposal waiting or under way, recorded as it is now, and those done when made (a
 * step's completion: nothing to apply, never pending) (under t->lock). */
static void record_pending(struct tuner *t)
{
	size_t n, nnew;
	struct cc_tn_proposal **made = cc_tn_made_since(t->tn, t->last_id, &nnew), **v;

	/* the new ones first, in the order made (the history is oldest first) */
	for (size_t i = 0; i < nnew; i++) {
		record(t, made[i]);
		t->last_id = made[i]->id;
	}
	v = cc_tn_pending(t->tn, &n);
	for (size_t i = 0; v && i < n; i++)
		record(t, v[i]);
}

void tuner_set_events(struct tuner *t, struct events *ev)
{
	t->events = ev;
}

static json_t *rec_of(struct tuner *t, uint64_t id)
{
	char key[24];

	snprintf(key, sizeof(key), "%" PRIu64, id);
	return json_object_get(t->history, key);
}

/* The proposals waiting for an operator now, at most one per class (under t->lock). */
static size_t waiting_ids(struct tuner *t, uint64_t ids[CC_TN_NCLASSES])
{
	size_t n, nwait = 0;
	struct cc_tn_proposal **v = cc_tn_pending(t->tn, &n);

	for (size_t i = 0; v && i < n; i++)
		if (v[i]->state == CC_TN_WAITING && nwait < CC_TN_NCLASSES)
			ids[nwait++] = v[i]->id;
	return nwait;
}

/* The approved proposals whose change sets are not out (at most max), each marked so for the
 * library (cc_tn_not_sent) (under t->lock). */
static size_t unsent_ids(struct tuner *t, uint64_t *ids, size_t max)
{
	size_t n, k = 0;
	struct cc_tn_proposal **v = cc_tn_pending(t->tn, &n);

	/* a rollback stays approved as the tuner goes off (it is sent): not this request's */
	for (size_t i = 0; v && i < n && k < max; i++)
		if (v[i]->state == CC_TN_APPROVED && v[i]->phase != CC_TN_ROLLBACK && !app_of(t, v[i]->id) &&
		    cc_tn_not_sent(t->tn, v[i]->id) == 0)
			ids[k++] = v[i]->id;
	return k;
}

/* A proposal an operator decided (applied or rejected it, asked for a rollback, or switched
 * the mode) for reason (NULL: none given): recorded with them as decided_by and the reason as
 * decision_reason, and one approved goes out as asked by them (its change batch's actor, the
 * reason after the tuner's); its record (under t->lock). */
static json_t *decided(struct tuner *t, const struct cc_tn_proposal *pp, const char *actor, const char *reason)
{
	json_t *rec;
	char key[24];

	record(t, pp);
	rec = rec_of(t, pp->id);
	json_object_set_new(rec, "decided_by", json_string(actor));
	if (reason && *reason)
		json_object_set_new(rec, "decision_reason", json_string(reason));
	if (pp->state == CC_TN_APPROVED) {
		snprintf(key, sizeof(key), "%" PRIu64, pp->id);
		json_object_set_new(t->asked, key, json_string(actor));
	}
	return rec;
}

/* Those of ids (waiting before) that an operator's request decided (for reason, NULL: none
 * given): a rollback rejects them, a PUT of the policy approves or rejects them (actor NULL: no
 * operator's, the policy saved in the database changed); why: the error of one rejected (NULL:
 * none) (under t->lock). */
static void decided_by(struct tuner *t, const uint64_t *ids, size_t n, const char *actor, const char *reason,
		       const char *why)
{
	for (size_t i = 0; i < n; i++) {
		struct cc_tn_proposal *pp = cc_tn_find(t->tn, ids[i]);
		json_t *rec;

		if (!pp || pp->state == CC_TN_WAITING)
			continue;
		if (actor) {
			rec = decided(t, pp, actor, reason);
		} else {
			record(t, pp);
			rec = rec_of(t, pp->id);
		}
		/* the library's own reason first (a canary withdrawn as the mode went to auto) */
		if (rec && why && pp->state == CC_TN_REJECTED && !pp->error[0])
			json_object_set_new(rec, "error", json_string(why));
	}
}

/* The rollbacks made since proposal `newest` (those of a request: the tuner turned off, an
 * operator's rollback): recorded as asked by the actor for reason, each into *ret when ret is
 * not NULL (under t->lock). */
static void rollbacks_asked(struct tuner *t, uint64_t newest, const char *actor, const char *reason, json_t *ret)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_made_since(t->tn, newest, &n);

	/* (every rollback the request made, whatever its state: one with nothing to send, its
	 * members kept by the policy, is applied as made) */
	for (size_t i = 0; i < n; i++)
		if (v[i]->phase == CC_TN_ROLLBACK) {
			json_t *rec = decided(t, v[i], actor, reason);

			if (ret)
				json_array_append_new(ret, json_deep_copy(rec));
		}
}

/* The id of the newest proposal made so far, 0 when none (under t->lock). */
static uint64_t newest_id(struct tuner *t)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_made_since(t->tn, 0, &n);

	return n ? v[n - 1]->id : 0;
}

/* The hold of the harder steps as the tuner has it now (under t->lock): its start and end logged
 * and published (GET /api/v1/cc changed: harder_held_for, harder_held_since), at a decision or
 * at a change of mode (off holds nothing; back on, the last decision's fault holds again). */
static void hold_update(struct tuner *t, int64_t now)
{
	const char *why = cc_tn_harder_held(t->tn);

	if (!t->held == !why)
		return;
	t->held = why != NULL;
	t->held_since_ns = now;
	if (why)
		log_notice("tuner", "no harder step while the fabric has a fault: %s", why);
	else if (cc_tn_get_policy(t->tn)->mode == CC_TN_OFF)
		log_notice("tuner", "no hold of the harder steps: the tuner is off");
	else
		log_notice("tuner", "harder steps may start again: the fault is over");
	if (t->events) {
		json_t *ev = json_pack("{s:i,s:b}", "id", 0, "harder_held", t->held);

		/* (what held them first: GET /api/v1/cc says what holds them now) */
		if (ev && why)
			json_object_set_new(ev, "harder_held_for", json_string(why));
		events_publish(t->events, "cc", ev);
	}
}

/* Policy p in force (under t->lock), as asked by actor for reason (actor NULL: the policy saved
 * in the database, not the one in force: the start, a database restored or edited).  A change of mode may reject
 * the canaries waiting for an operator, approve them or roll steps back; any other change
 * withdraws them (made under the policy before): the history says so, by whom and why. */
static void policy_in_force(struct tuner *t, const struct cc_tn_policy *p, const char *actor, const char *reason)
{
	uint64_t waiting[CC_TN_NCLASSES], newest = newest_id(t);
	size_t nwait = waiting_ids(t, waiting);

	/* turned off: the approved proposals not sent yet (none of their changes is out) are
	 * rejected like the waiting ones, with nothing to roll back */
	if (p->mode == CC_TN_OFF && cc_tn_get_policy(t->tn)->mode != CC_TN_OFF)
		nwait += unsent_ids(t, waiting + nwait, CC_TN_NCLASSES - nwait);
	cc_tn_set_policy(t->tn, p);
	hold_update(t, tu_now_ns());
	/* turned off as its change set was being stored or sent: rolled back (mode_changed) */
	for (size_t i = 0; i < t->napp; i++) {
		struct cc_tn_proposal *pp = cc_tn_find(t->tn, t->app[i].proposal);
		json_t *rec;

		if (!pp || pp->state != CC_TN_REJECTED)
			continue;
		/* by whoever turned it off, as the rest of what the stop undid (before: no one, an
		 * operator's trial) */
		rec = actor ? decided(t, pp, actor, reason) : (record(t, pp), rec_of(t, pp->id));
		if (rec && !json_object_get(rec, "error"))
			json_object_set_new(rec, "error", json_string("the tuner was turned off as its changes were on "
								      "their way: they are rolled back"));
	}
	refresh_open(t);
	decided_by(t, waiting, nwait, actor, reason,
		   p->mode == CC_TN_OFF ? (actor ? "the tuner was turned off"
						 : "the tuner was turned off (the policy saved in the database)")
		   : actor ? "withdrawn: the policy changed while it waited (made again under the new one if still "
			     "called for)"
			   : "withdrawn: the policy saved in the database changed while it waited");
	if (actor)
		rollbacks_asked(t, newest, actor, reason, NULL);
}

/* Under lock: the decision interval starts again, after a change set applied: the next
 * decision reads only the fast lane's intervals that came after it (and its probes), so that
 * the first interval a canary is judged on is its own.  Before, that one was the decision
 * interval the changes went out in, mostly from before them (a trial: a canary rolled back
 * 0.6 s after it was applied, at a decision every second). */
static void restart_interval(struct tuner *t)
{
	double drop;

	cc_snap_free(t->acc);
	t->acc = NULL;
	t->last_run_mono = tu_mono_ns();
	if (t->probe)
		t->probe(t->probe_ctx, &drop);
}

/* Change sets out: when every change of one settled, the tuner hears how it went. */
static void settle(struct tuner *t, struct store_reader *rd)
{
	for (size_t i = 0; i < t->napp;) {
		struct rf_err e = { 0 };
		bool open, failed, ok;
		char msg[300];
		const char *err;

		/* open while any change of it is pending or sent; failed when one failed or timed out
		 * (one confirmed after its deadline may be applied: the tuner rolls its step back on
		 * every member anyway) */
		if (changes_batch_state(rd, t->app[i].batch, &open, &failed, msg, sizeof(msg), &e) < 0 || open) {
			i++;
			continue;
		}
		ok = !failed;
		err = failed ? msg : NULL;
		pthread_mutex_lock(&t->lock);
		cc_tn_applied(t->tn, t->app[i].proposal, ok ? CC_TN_OUT_APPLIED : CC_TN_OUT_FAILED);
		if (cc_tn_find(t->tn, t->app[i].proposal))
			record(t, cc_tn_find(t->tn, t->app[i].proposal));
		record_pending(t); /* a failure proposes a rollback: recorded before it is sent */
		{
			json_t *rec = rec_of(t, t->app[i].proposal);

			if (rec) {
				/* one of the previous process's: its record has no proposal behind it */
				if (!cc_tn_find(t->tn, t->app[i].proposal))
					json_object_set_new(rec, "state", json_string(ok ? "applied" : "failed"));
				json_object_set_new(rec, "outcome", json_string(ok ? "applied" : "failed"));
				if (err)
					json_object_set_new(rec, "error", json_string(err));
			}
		}
		ok ? t->applied++ : t->failed++;
		if (ok)
			restart_interval(t);
		pthread_mutex_unlock(&t->lock);
		if (!ok)
			log_warning("tuner", "proposal %" PRIu64 " (change batch %lld) failed: %s", t->app[i].proposal,
				    (long long)t->app[i].batch, err ?: "no detail");
		pthread_mutex_lock(&t->lock);
		t->app[i] = t->app[--t->napp];
		pthread_mutex_unlock(&t->lock);
	}
}

static int save_state(struct tuner *t);

/* Approved proposals not sent yet go out, oldest first, each as one change set: a canary
 * checked again first (cc_tn_sendable: a member or the policy may have changed since it was
 * approved).  One whose targets kept changing waits for the next pass, and so do those after
 * it of its class and knob (in order: an operator's undos of steps on one knob must land
 * newest first); the others go on (another class's rollback among them). */
static void apply_approved(struct tuner *t, struct store_reader *rd, unsigned prio)
{
	bool held[CC_TN_NCLASSES][CC_TN_NKNOBS] = { { false } };

	for (;;) {
		struct cc_tn_proposal **v, *p = NULL, copy;
		struct rf_err e = { 0 };
		const char *actor = "tuner", *who = NULL, *why = NULL;
		char actor_buf[200], reason[sizeof(t->app->reason)];
		struct applying *a;
		int64_t batch = 0;
		uint64_t id;
		size_t n;
		int r;

		pthread_mutex_lock(&t->lock);
		v = cc_tn_pending(t->tn, &n);
		for (size_t i = 0; v && i < n && !p; i++)
			if (v[i]->state == CC_TN_APPROVED && !app_of(t, v[i]->id) && !held[v[i]->cls][v[i]->knob])
				p = v[i];
		if (p && cc_tn_sendable(t->tn, p->id) == -ESTALE) {
			record(t, p);
			log_notice("tuner", "proposal %" PRIu64 " not sent: %s", p->id, p->error);
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		if (p) {
			char key[24];

			snprintf(key, sizeof(key), "%" PRIu64, p->id);
			who = json_string_value(json_object_get(t->asked, key));
			why = json_string_value(json_object_get(rec_of(t, p->id), "decision_reason"));
			if (who) {
				snprintf(actor_buf, sizeof(actor_buf), "tuner (asked by %s)", who);
				actor = actor_buf;
			}
		}
		if (!p || (p->nchanges && vec_room((void **)&t->app, &t->capapp, t->napp, sizeof(*t->app)) < 0)) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
		if (!p->nchanges) {
			if (p->left_out)
				log_notice("tuner", "proposal %" PRIu64 " has nothing left to send: %s", p->id, p->error);
			cc_tn_applied(t->tn, p->id, CC_TN_OUT_APPLIED);
			record(t, p);
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		/* committed outside the lock, from a copy (it waits for the writer; the library's
		 * proposals are borrowed until the next call into it, which a request may make) */
		copy = *p;
		copy.evidence = NULL; /* (not the copy's) */
		copy.changes = malloc(p->nchanges * sizeof(*p->changes));
		if (!copy.changes) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
		memcpy(copy.changes, p->changes, p->nchanges * sizeof(*p->changes));
		id = p->id;
		t->app[t->napp] = (struct applying){ .proposal = id, .batch = -1 };
		change_reason(p, who, why, t->app[t->napp].reason, sizeof(t->app[t->napp].reason));
		snprintf(reason, sizeof(reason), "%s", t->app[t->napp++].reason);
		pthread_mutex_unlock(&t->lock);
		/* the step under way and this set's reason saved first: a crash after the set is
		 * stored, before its batch is saved, leaves a state whose next start finds the batch
		 * and rolls the step back (before, it found the step waiting, and its changes went
		 * out with no step to undo them); not saved, not stored: the next pass tries again */
		if (save_state(t) < 0) {
			pthread_mutex_lock(&t->lock);
			if ((a = app_of(t, id)))
				*a = t->app[--t->napp];
			pthread_mutex_unlock(&t->lock);
			free(copy.changes);
			log_warning("tuner", "proposal %" PRIu64 " waits for the next pass: the tuner's state could not "
					     "be saved", id);
			return;
		}
		r = commit(t, rd, &copy, prio, actor, reason, &batch, &e);
		free(copy.changes);
		pthread_mutex_lock(&t->lock);
		if ((a = app_of(t, id)) && r == 0)
			a->batch = batch;
		else if (a)
			*a = t->app[--t->napp];
		if (r == -EALREADY) {
			/* its targets kept changing while it was checked: nothing stored, a try at the
			 * next pass (not at once: each try is up to CHANGES_CLASH_TRIES writer jobs) */
			log_notice("tuner", "proposal %" PRIu64 " waits for the next pass: %s", id, e.msg);
			held[copy.cls][copy.knob] = true;
		} else if (r < 0) {
			char buf[600];
			json_t *rec = rec_of(t, id);

			rf_err_str(&e, buf, sizeof(buf));
			if (rec) {
				json_object_set_new(rec, "outcome", json_string("failed"));
				json_object_set_new(rec, "error", json_string(buf));
			}
			t->failed++;
			log_warning("tuner", "proposal %" PRIu64 " could not be queued: %s", id, buf);
			/* nothing stored, nothing sent (the writer's job is undone as a whole): a
			 * canary or rollout is rolled back on its step's earlier members only */
			cc_tn_applied(t->tn, id, CC_TN_OUT_NOT_SENT);
			if ((p = cc_tn_find(t->tn, id)))
				record(t, p);
			record_pending(t);
		} else {
			json_t *rec = rec_of(t, id);

			if (rec)
				json_object_set_new(rec, "change_batch", json_integer(batch));
			log_notice("tuner", "change batch %lld: proposal %" PRIu64 " (%s)", (long long)batch, id,
				   copy.reason);
		}
		pthread_mutex_unlock(&t->lock);
	}
}

static int lowest_prio(uint8_t prios)
{
	for (int p = 0; p < CC_NPRIO; p++)
		if (prios & (1u << p))
			return p;
	return -1;
}

/* Under t->lock, a snapshot's lowest lossless priority (-1: none lossless, the one tuned is
 * kept): the one tuned from now on, unless the queues of the one tuned hold steps of the
 * tuner's (their undos belong there: an operator's rollback lets the tuner move, and no new
 * step of a switch class starts meanwhile; GET /api/v1/cc says so), or the saved state, which
 * may hold some, is not back yet. */
static void follow_prio(struct tuner *t, int lowest)
{
	t->lowest = lowest;
	if (lowest < 0 || (t->prio_known && ((unsigned)lowest == t->prio || t->saved_st != SAVED_BACK)))
		return;
	if (t->prio_known && cc_tn_queues_changed(t->tn)) {
		if (t->warned != lowest)
			log_warning("tuner", "priority %d is the lowest lossless one now: the tuner keeps to priority %u, "
					     "whose queues hold its steps, and starts no new step of a switch class until "
					     "they are rolled back (POST /api/v1/cc/rollback)",
				    lowest, t->prio);
		t->warned = lowest;
		return;
	}
	if (t->prio_known)
		log_notice("tuner", "tuning priority %d (the lowest lossless one) instead of %u", lowest, t->prio);
	t->prio = (unsigned)lowest;
	t->prio_known = true;
	t->warned = -1;
}

/* Under t->lock, the fabric tracked and no change out: the saved state taken back.  Returns a
 * refused state's text and why (to keep aside: the caller saves it outside the lock), or
 * NULL. */
static char *restore_saved(struct tuner *t, char *why, size_t len)
{
	uint64_t max_id = 0, max_step = 0;
	char *refused = NULL;
	const char *key;
	json_t *rec;
	int n = 0;

	/* ids go on above every proposal and step the history names, whatever else is refused */
	json_object_foreach(t->history, key, rec) {
		uint64_t id = (uint64_t)json_integer_value(json_object_get(rec, "id")),
			 step = (uint64_t)json_integer_value(json_object_get(rec, "step"));

		max_id = id > max_id ? id : max_id;
		max_step = step > max_step ? step : max_step;
	}
	cc_tn_ids_at_least(t->tn, max_id + 1, max_step + 1);
	if (t->restore_raw) {
		n = t->restore ? cc_tn_state_load(t->tn, t->restore, why, len) : -EINVAL;
		if (!t->restore)
			snprintf(why, len, "not a state this version reads");
		if (n < 0) {
			if (n != -EINVAL && n != -EBUSY)
				snprintf(why, len, "%s", strerror(-n));
			log_warning("tuner", "the saved tuner state is refused (%s; kept as meta key " STATE_KEY
					     "_refused): steps completed before this start cannot be rolled back by "
					     "the tuner (the audit log has them)",
				    why);
			refused = t->restore_raw;
			t->restore_raw = NULL;
		} else {
			if (n > 0)
				log_warning("tuner",
					    "%d step%s under way when rocefabd stopped: rolled back (members the "
					    "policy refuses back are kept: the tuner's history says so)",
					    n, n == 1 ? " was" : "s were");
			if (why[0])
				log_warning("tuner", "%s", why);
		}
	}
	json_decref(t->restore);
	t->restore = NULL;
	free(t->restore_raw);
	t->restore_raw = NULL;
	t->saved_st = SAVED_BACK;
	record_pending(t);
	return refused;
}

/* Saves what a restart needs when it changed: the library's state, the change sets out and
 * the last HISTORY_SAVED records.  Nothing before the saved state was taken back.  0, or
 * -errno when it could not be saved. */
static int save_state(struct tuner *t)
{
	json_t *doc, *out = json_array(), *hist = json_array();
	size_t n;
	char *text = NULL;
	bool same;
	int r = 0;

	pthread_mutex_lock(&t->lock);
	if (t->saved_st != SAVED_BACK) {
		pthread_mutex_unlock(&t->lock);
		json_decref(out);
		json_decref(hist);
		return 0;
	}
	for (size_t k = 0; out && k < t->napp; k++)
		if (t->app[k].batch > 0)
			json_array_append_new(out, json_pack("{s:I,s:I}", "proposal", (json_int_t)t->app[k].proposal,
							     "batch", (json_int_t)t->app[k].batch));
		else /* being stored: its reason finds its batch after a crash */
			json_array_append_new(out, json_pack("{s:I,s:s}", "proposal", (json_int_t)t->app[k].proposal,
							     "reason", t->app[k].reason));
	n = json_array_size(t->order);
	for (size_t i = n > HISTORY_SAVED ? n - HISTORY_SAVED : 0; hist && i < n; i++)
		json_array_append(hist, json_object_get(t->history, json_string_value(json_array_get(t->order, i))));
	doc = json_pack("{s:i,s:i,s:o,s:o,s:o}", "version", 1, "prio", (int)t->prio, "tuner",
			cc_tn_state_json(t->tn), "out", out, "history", hist);
	/* the text under the lock: the records are the live ones */
	if (doc)
		text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(doc);
	same = text && t->saved && !strcmp(text, t->saved);
	pthread_mutex_unlock(&t->lock);
	if (!text)
		return -ENOMEM;
	if (!same && (r = store_meta_put_text(t->store, STATE_KEY, text)) == 0) {
		pthread_mutex_lock(&t->lock);
		free(t->saved);
		t->saved = text;
		text = NULL;
		pthread_mutex_unlock(&t->lock);
	}
	free(text);
	return r;
}

int tuner_run(void *ctx, int64_t now)
{
	struct tuner *t = ctx;
	struct store_reader *rd;
	struct cc_snap *snap = NULL;
	int64_t mono = tu_mono_ns();
	unsigned prio;
	char why[200], *refused = NULL;
	int r = 0;

	/* the pass runs more often than the decision interval: outcomes of changes and an
	 * operator's decisions are acted on within a pass, the decision once an interval */
	if (!(rd = store_reader_get(t->store)))
		return -EAGAIN;
	sync_policy(t, rd);
	settle(t, rd);
	pthread_mutex_lock(&t->lock);
	t->runs++;
	if (t->last_run_mono && mono - t->last_run_mono >= t->o.interval_ns * 9 / 10) {
		snap = t->acc;
		t->acc = NULL;
	}
	if (!t->last_run_mono || snap)
		t->last_run_mono = mono;
	if (t->saved_st == SAVED_UNREAD)
		load_saved(t, rd);
	if (snap)
		follow_prio(t, lowest_prio(snap->prios));
	prio = t->prio;
	/* what is set now, unless a change of the tuner's is still out (its agents have not
	 * reported it yet: the tuner's own belief is the newer); the XOFF thresholds always (an
	 * operator's lowered one stops a canary before it is sent: cc_tn_sendable) */
	track(t, rd, prio, t->napp > 0);
	if (t->saved_st != SAVED_BACK && snap) {
		/* the previous process's state first; no decision in the same interval */
		double drop;

		if (t->saved_st == SAVED_PENDING && !t->napp)
			refused = restore_saved(t, why, sizeof(why));
		if (t->probe) /* this interval's probes go with it: the next decision's are its own */
			t->probe(t->probe_ctx, &drop);
		cc_snap_free(snap);
		snap = NULL;
	}
	if (snap && snap->nports && snap->interval_us > 0) {
		/* each switch port's XOFF threshold is its own (track) */
		struct cc_tn_input in = { .snap = snap,
					  .prio = prio,
					  .xoff_bytes = 0,
					  .probe_p99_us = -1,
					  .hold_switch = t->lowest >= 0 && (unsigned)t->lowest != prio };
		double p99;
		char fault[CC_DL_FAULT_LEN];

		/* the probes of this interval: a safety signal (a step after which they got much
		 * slower is rolled back) */
		if (t->probe && t->probe(t->probe_ctx, &p99) == 0 && p99 >= 0)
			in.probe_p99_us = p99;
		/* a fault the detector names: no harder step (an operator's trial: a slow
		 * receiver took the spines' Kmin to the floor, step after step kept as "a harder
		 * move against pauses needs no gain to show", where ECN could not help) */
		if (t->fault && t->fault(t->fault_ctx, prio, fault, sizeof(fault)))
			in.fault = fault;
		cc_snap_finish(snap);
		r = cc_tn_run(t->tn, &in);
		t->decisions++;
		t->last_decision_ns = now;
		hold_update(t, now);
		refresh_open(t); /* new host classes in force may have rejected a waiting canary */
	}
	t->last_run_ns = now;
	pthread_mutex_unlock(&t->lock);
	cc_snap_free(snap);
	if (refused) {
		json_t *aside = json_pack("{s:s,s:s}", "why", why, "text", refused);

		if (!aside || store_meta_put(t->store, STATE_KEY "_refused", aside) < 0)
			log_warning("tuner", "the refused tuner state could not be kept aside");
		json_decref(aside);
		free(refused);
	}
	if (r >= 0) {
		apply_approved(t, rd, prio);
		save_state(t);
		r = 0;
	}
	store_reader_put(t->store, rd);
	return r;
}

/* --- the API's side ---------------------------------------------------------------------------- */

json_t *tuner_policy(struct tuner *t)
{
	json_t *o;

	pthread_mutex_lock(&t->lock);
	o = cc_tn_policy_json(cc_tn_get_policy(t->tn));
	pthread_mutex_unlock(&t->lock);
	return o;
}


/* Under policy_lock: the change merged, saved, in force; *was the policy before, *ret the new
 * one. */
static int set_policy_locked(struct tuner *t, json_t *changes, const char *actor, const char *reason,
			     struct cc_tn_policy *was, struct cc_tn_policy *ret, struct rf_err *e)
{
	struct cc_tn_policy p;
	char err[300];
	json_t *doc, *before;
	int r;

	pthread_mutex_lock(&t->lock);
	p = *was = *cc_tn_get_policy(t->tn);
	pthread_mutex_unlock(&t->lock);
	if (cc_tn_policy_from_json(changes, &p, err, sizeof(err)) < 0) {
		/* "/FIELD: what is wrong": the pointer, then the detail; an unknown field's name may
		 * hold ": " itself (the library's fields do not) */
		static const char *const unknown[] = { ": unknown policy field",
						       ": unknown field (a class has name and hosts)" };
		size_t n = strlen(err), nu = 0;
		char ptr[256] = ""; /* a JSON pointer, as the library's (255 bytes at most) */
		bool unk = false;
		const char *sep;

		for (size_t u = 0; u < ARRAY_SIZE(unknown) && !unk; u++) {
			nu = strlen(unknown[u]);
			unk = n > nu && !strcmp(err + n - nu, unknown[u]);
		}
		sep = err[0] != '/' ? NULL : unk ? err + n - nu : strstr(err, ": ");
		if (sep)
			snprintf(ptr, sizeof(ptr), "%.*s", (int)(sep - err), err);
		return rf_err_set(e, -EINVAL, unk ? "UNKNOWN_FIELD" : "BAD_VALUE", sep ? ptr : NULL, "%s",
				  sep ? sep + 2 : err);
	}
	/* one under which no switch port could have a Kmax would freeze every switch class: asked
	 * of a change to what decides it, whatever the mode (turned off in the same request, it
	 * passed, and the next one turning the tuner on was refused naming the mode), or of the
	 * tuner turned on (a policy that no longer fits since the XOFFs were lowered may still be
	 * changed while it runs, turned off above all) */
	if (p.loop_bytes != was->loop_bytes || p.kmin_floor_bytes != was->kmin_floor_bytes ||
	    (p.mode != CC_TN_OFF && was->mode == CC_TN_OFF)) {
		bool turned_on = p.loop_bytes == was->loop_bytes && p.kmin_floor_bytes == was->kmin_floor_bytes;

		pthread_mutex_lock(&t->lock);
		r = cc_tn_policy_fits(t->tn, &p, err, sizeof(err)) ? -EINVAL : 0;
		pthread_mutex_unlock(&t->lock);
		if (r < 0)
			return rf_err_set(e, r, "BAD_VALUE",
					  p.loop_bytes != was->loop_bytes ? "/loop_bytes"
					  : !turned_on			  ? "/kmin_floor_bytes"
									  : "/mode",
					  "%s%s", turned_on ? "cannot turn the tuner on: " : "",
					  err + strlen("loop_bytes: "));
	}
	doc = cc_tn_policy_json(&p);
	before = cc_tn_policy_json(was);
	r = doc && before ? store_meta_put_by(t->store, "cc_policy", doc, before, actor, reason) : -ENOMEM;
	json_decref(doc);
	json_decref(before);
	if (r == -ENOMEM)
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	if (r < 0)
		return store_write_failed(r, "the policy could not be saved", e);
	pthread_mutex_lock(&t->lock);
	policy_in_force(t, &p, actor, reason);
	t->mode_noted = true; /* its mode is the one just asked for, not the configuration's */
	/* the one in force saved over a stored one refused or repaired: nothing of that left to
	 * say (before, GET /api/v1/cc said it until the next pass read the store again) */
	t->policy_refused[0] = '\0';
	t->saved_note[0] = '\0';
	pthread_mutex_unlock(&t->lock);
	*ret = p;
	return 0;
}

/* "FIELD FROM -> TO" of every field of the policy that differs, comma separated ("nothing
 * changed" when none; cut short at len, ending "..."). */
static void policy_diff(const struct cc_tn_policy *a, const struct cc_tn_policy *b, char *buf, size_t len)
{
	json_t *ja = cc_tn_policy_json(a), *jb = cc_tn_policy_json(b), *vb;
	const char *k;
	size_t off = 0;

	buf[0] = '\0';
	json_object_foreach(jb, k, vb) {
		json_t *va = json_object_get(ja, k);
		char *sa, *sb;

		if (va && json_equal(va, vb))
			continue;
		/* 0.1, not 0.10000000000000001 */
		sa = va ? json_dumps(va, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
		sb = json_dumps(vb, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s %s -> %s", off ? ", " : "", k, sa ?: "?",
						sb ?: "?");
		free(sa);
		free(sb);
	}
	if (!off)
		snprintf(buf, len, "nothing changed");
	else if (off >= len && len > 4)
		memcpy(buf + len - 4, "...", 4); /* cut short, and said */
	json_decref(ja);
	json_decref(jb);
}

int tuner_set_policy(struct tuner *t, json_t *changes, const char *actor, const char *reason, struct rf_err *e)
{
	struct cc_tn_policy was, p = cc_tn_defaults;
	char diff[1900]; /* the log line's room (2,048 bytes) less its head */
	bool replaced;	 /* the saved one was refused or repaired: this PUT writes the one in force */
	int r;

	if (!json_is_object(changes))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/", "the policy is a JSON object of the fields to change");
	pthread_mutex_lock(&t->policy_lock);
	replaced = t->policy_refused[0] != '\0';
	r = set_policy_locked(t, changes, actor, reason, &was, &p, e);
	pthread_mutex_unlock(&t->policy_lock);
	if (r == 0) {
		bool same;

		/* the record of who changed what (the policy is saved, not its history) */
		policy_diff(&was, &p, diff, sizeof(diff) - (reason ? strlen(reason) + 12 : 0)); /* (at most 512) */
		same = !strcmp(diff, "nothing changed") && !replaced; /* (a PUT of {}, or of the values in force) */
		log_msg(same ? LOG_INFO : LOG_NOTICE, "tuner", NULL, "policy %s by %s%s%s%s%s%s%s",
			same ? "saved as it was" : "changed", actor, reason ? " (reason \"" : "", reason ?: "",
			reason ? "\")" : "", same ? "" : ": ", same ? "" : diff,
			replaced ? " (the one in force saved over the stored one that was refused or repaired)" : "");
	}
	return r;
}

static bool open_record(json_t *rec)
{
	const char *st = json_string_value(json_object_get(rec, "state")) ?: "";

	return !strcmp(st, "waiting") || !strcmp(st, "approved");
}

json_t *tuner_proposals(struct tuner *t, bool all)
{
	json_t *out = json_array();

	pthread_mutex_lock(&t->lock);
	for (size_t i = json_array_size(t->order); out && i-- > 0;) {
		json_t *rec = json_object_get(t->history, json_string_value(json_array_get(t->order, i)));

		/* copies: the pass edits the records (outcome, change batch) while the reply is written */
		if (rec && (all || open_record(rec)))
			json_array_append_new(out, json_deep_copy(rec));
	}
	pthread_mutex_unlock(&t->lock);
	return out;
}

int tuner_decide(struct tuner *t, uint64_t id, bool apply, const char *actor, const char *reason, json_t **ret,
		 struct rf_err *e)
{
	struct store_reader *rd = apply ? store_reader_get(t->store) : NULL;
	struct cc_tn_proposal *p;
	char state[96] = "no longer kept";
	json_t *rec;
	int r;

	pthread_mutex_lock(&t->lock);
	/* an operator's change on its way to a member since the last pass counts now: the
	 * proposal is withdrawn at once (409), not approved and then withdrawn at the next pass */
	if (rd && t->prio_known)
		track_expected(t, rd, t->prio);
	r = cc_tn_decide(t->tn, id, apply);
	p = cc_tn_find(t->tn, id);
	rec = rec_of(t, id);
	if (rec && json_is_string(json_object_get(rec, "state")))
		snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(rec, "state")));
	/* withdrawn (the policy or a member changed while it waited): said so, as rocefabctl's
	 * listing does, and by whom — the operator whose policy change did it, or the tuner
	 * (before: "by the tuner" for an operator's policy change too, an operator's trial) */
	if (rec && !strcmp(state, "rejected") &&
	    !strncmp(json_string_value(json_object_get(rec, "error")) ?: "", "withdrawn: ", 11)) {
		const char *by = json_string_value(json_object_get(rec, "decided_by"));

		if (by)
			snprintf(state, sizeof(state), "withdrawn: %.40s changed the policy", by);
		else
			snprintf(state, sizeof(state), "withdrawn by the tuner");
	}
	if (r == 0 && p)
		*ret = json_deep_copy(decided(t, p, actor, reason));
	if (r == -ESTALE && p) {
		record(t, p); /* withdrawn: rejected, with why */
		rf_err_set(e, r, "WITHDRAWN", NULL, "proposal %" PRIu64 " was withdrawn, not applied: %s", id, p->error);
	}
	pthread_mutex_unlock(&t->lock);
	if (rd)
		store_reader_put(t->store, rd);
	if (r == -ESTALE)
		return r;
	/* one the library no longer keeps, still in the history: not waiting any more */
	if (r == -ENOENT && strcmp(state, "no longer kept"))
		r = -EALREADY;
	if (r == -ENOENT)
		return rf_err_set(e, r, "NO_SUCH_PROPOSAL", NULL, "no proposal %" PRIu64 " (GET /api/v1/cc/proposals)",
				  id);
	if (r == -EALREADY)
		return rf_err_set(e, r, "NOT_WAITING", NULL, "proposal %" PRIu64 " is not waiting for a decision (%s)", id,
				  state);
	if (r == -EPERM)
		return rf_err_set(e, r, "TUNER_OFF", NULL,
				  "the tuner is off: nothing is applied (PUT /api/v1/cc/policy {\"mode\": ...} first)");
	if (r < 0)
		return rf_err_set(e, r, "NO_MEMORY", NULL, "out of memory");
	log_info("tuner", "proposal %" PRIu64 " %s by %s", id, apply ? "approved" : "rejected", actor);
	return 0;
}

json_t *tuner_history(struct tuner *t)
{
	json_t *out = json_array();

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; out && i < json_array_size(t->order); i++) {
		json_t *rec = json_object_get(t->history, json_string_value(json_array_get(t->order, i)));

		if (rec)
			json_array_append_new(out, json_deep_copy(rec));
	}
	pthread_mutex_unlock(&t->lock);
	return out;
}

int tuner_rollback(struct tuner *t, const char *actor, const char *reason, json_t **ret, struct rf_err *e)
{
	size_t nwait;
	uint64_t newest, waiting[CC_TN_NCLASSES]; /* a step at a time per class */
	int r;

	pthread_mutex_lock(&t->lock);
	/* the proposals this call makes: those made after the newest one now */
	newest = newest_id(t);
	nwait = waiting_ids(t, waiting);
	/* the steps of before the start are not known until the saved state is back */
	r = t->saved_st != SAVED_BACK ? -EAGAIN : cc_tn_rollback_all(t->tn);
	/* canaries that waited for an operator: rejected by this one (those rejected before an
	 * ENOMEM cut the rollback short too), in the answer before the rollbacks */
	decided_by(t, waiting, nwait, actor, reason, NULL);
	if (r >= 0) {
		*ret = json_array();
		for (size_t i = 0; i < nwait; i++) {
			struct cc_tn_proposal *pp = cc_tn_find(t->tn, waiting[i]);
			json_t *rec = rec_of(t, waiting[i]);

			if (pp && pp->state == CC_TN_REJECTED && rec)
				json_array_append_new(*ret, json_deep_copy(rec));
		}
		nwait = json_array_size(*ret);
		rollbacks_asked(t, newest, actor, reason, *ret);
	}
	pthread_mutex_unlock(&t->lock);
	if (r == -EBUSY)
		return rf_err_set(e, r, "STEP_IN_PROGRESS", NULL,
				  "a step is under way: it finishes or rolls back by itself; ask again after it (in auto "
				  "the next may start at once: set the mode to advise first, which lets it finish and "
				  "starts none, or off, which rolls it back)");
	if (r == -EAGAIN)
		return rf_err_set(e, -EBUSY, "STATE_RESTORING", NULL,
				  "the tuner has not taken back the steps of before this start yet (at its first "
				  "decision, once the agents reported): ask again after it");
	if (r < 0)
		return rf_err_set(e, r, "NO_MEMORY", NULL, "out of memory");
	log_notice("tuner", "rollback of %d steps asked by %s%s%s%s (%zu waiting canaries rejected)", r, actor,
		   reason ? " (reason \"" : "", reason ?: "", reason ? "\")" : "", nwait);
	return 0;
}

void tuner_set_probe_source(struct tuner *t, tuner_probe_fn fn, void *ctx)
{
	pthread_mutex_lock(&t->lock);
	t->probe = fn;
	t->probe_ctx = ctx;
	pthread_mutex_unlock(&t->lock);
}

void tuner_set_fault_source(struct tuner *t, tuner_fault_fn fn, void *ctx)
{
	pthread_mutex_lock(&t->lock);
	t->fault = fn;
	t->fault_ctx = ctx;
	pthread_mutex_unlock(&t->lock);
}

json_t *tuner_status(struct tuner *t)
{
	json_t *o;

	pthread_mutex_lock(&t->lock);
	o = cc_tn_json(t->tn);
	if (o && t->saved_note[0])
		json_object_set_new(o, "saved_policy", json_string(t->saved_note));
	if (o) {
		/* until the saved state is back (the first decision once the agents reported), the
		 * steps of before the start are not known: a step under way then may still be out */
		json_object_set_new(o, "restoring", json_boolean(t->saved_st != SAVED_BACK));
		json_object_set_new(o, "interval_ms", json_integer(t->o.interval_ns / NSEC_PER_MSEC));
		json_object_set_new(o, "decisions", json_integer((json_int_t)t->decisions));
		json_object_set_new(o, "proposals_made", json_integer((json_int_t)t->proposed));
		json_object_set_new(o, "changes_in_flight", json_integer((json_int_t)t->napp));
		json_object_set_new(o, "priority", json_integer(t->prio));
		json_object_set_new(o, "lowest_lossless", t->lowest >= 0 ? json_integer(t->lowest) : json_null());
		json_object_set_new(o, "last_decision", store_time_json(t->last_decision_ns));
		if (t->held && cc_tn_harder_held(t->tn))
			json_object_set_new(o, "harder_held_since", store_time_json(t->held_since_ns));
	}
	pthread_mutex_unlock(&t->lock);
	return o;
}

void tuner_render_metrics(struct tuner *t, struct buf *out)
{
	uint64_t steps, rb;
	const struct cc_tn_policy *p;
	size_t waiting = 0, n;
	struct cc_tn_proposal **v;

	pthread_mutex_lock(&t->lock);
	steps = cc_tn_steps(t->tn, &rb);
	p = cc_tn_get_policy(t->tn);
	v = cc_tn_pending(t->tn, &n);
	for (size_t i = 0; v && i < n; i++)
		waiting += v[i]->state == CC_TN_WAITING;
	buf_printf(out, "# HELP rocefab_cc_mode The congestion-control tuner's mode (1 for the one in force).\n"
			"# TYPE rocefab_cc_mode gauge\n");
	for (int m = CC_TN_OFF; m <= CC_TN_AUTO; m++)
		buf_printf(out, "rocefab_cc_mode{mode=\"%s\"} %d\n", cc_tn_mode_name((enum cc_tn_mode)m), (int)p->mode == m);
	buf_printf(out, "# HELP rocefab_cc_decisions_total Decision intervals the tuner ran.\n"
			"# TYPE rocefab_cc_decisions_total counter\nrocefab_cc_decisions_total %" PRIu64 "\n",
		   t->decisions);
	/* counted since the tuner first ran, across restarts: not shown before the saved state is
	 * back (at the first decision), or Prometheus would see 0 and then the count, a false
	 * increase of all of it */
	if (t->saved_st == SAVED_BACK) {
		buf_printf(out, "# HELP rocefab_cc_steps_total Steps the tuner proposed (canaries), applied or not.\n"
				"# TYPE rocefab_cc_steps_total counter\nrocefab_cc_steps_total %" PRIu64 "\n",
			   steps);
		buf_printf(out, "# HELP rocefab_cc_rollbacks_total Steps rolled back (automatically or asked).\n"
				"# TYPE rocefab_cc_rollbacks_total counter\nrocefab_cc_rollbacks_total %" PRIu64 "\n",
			   rb);
	}
	buf_printf(out, "# HELP rocefab_cc_proposals_total Proposals by outcome.\n"
			"# TYPE rocefab_cc_proposals_total counter\n"
			"rocefab_cc_proposals_total{outcome=\"applied\"} %" PRIu64 "\n"
			"rocefab_cc_proposals_total{outcome=\"failed\"} %" PRIu64 "\n"
			"rocefab_cc_proposals_total{outcome=\"rejected\"} %" PRIu64 "\n",
		   t->applied, t->failed, t->rejected);
	buf_printf(out, "# HELP rocefab_cc_proposals_waiting Proposals waiting for an operator (advise mode).\n"
			"# TYPE rocefab_cc_proposals_waiting gauge\nrocefab_cc_proposals_waiting %zu\n",
		   waiting);
	buf_printf(out, "# HELP rocefab_cc_changes_in_flight Change sets of the tuner not settled yet.\n"
			"# TYPE rocefab_cc_changes_in_flight gauge\nrocefab_cc_changes_in_flight %zu\n",
		   t->napp);
	buf_printf(out, "# HELP rocefab_cc_harder_held 1 while no harder step starts: the fabric has a fault "
			"no congestion control cures (GET /api/v1/cc harder_held_for).\n"
			"# TYPE rocefab_cc_harder_held gauge\nrocefab_cc_harder_held %d\n",
		   cc_tn_harder_held(t->tn) != NULL);
	pthread_mutex_unlock(&t->lock);
}
