/* Handlers: switches, links and topology; device configuration (DCQCN, ECN, PFC) and changes.
 *
 * A PUT (or a bulk POST /api/v1/changes) is validated completely against the configuration
 * the target agents last reported (lib/validate.h) before anything is stored: a rejected
 * request changes nothing.  An accepted one becomes changes in state "pending" (the audit log)
 * and is answered 202 with them; the agents get them as commands with their next report. */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "daemon/changes.h"
#include "daemon/detector.h"
#include "daemon/topo.h"
#include "daemon/views.h"
#include "lib/jsonutil.h"
#include "lib/params.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

#define MAX_PATTERN 256 /* of a glob in a selection */

/* --- switches, links, topology ------------------------------------------------------------------- */

static int v_switches(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		      json_t **ret, struct rf_err *e)
{
	(void)req;
	return views_switches(rd, o, ret, e);
}

static int v_switch(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		    json_t **ret, struct rf_err *e)
{
	return views_switch(rd, o, req->match.params[0], ret, e);
}

static int v_links(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		   json_t **ret, struct rf_err *e)
{
	(void)req;
	return views_links(rd, o, ret, e);
}

static int v_topology(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		      json_t **ret, struct rf_err *e)
{
	(void)req;
	return views_topology(rd, o, ret, e);
}

int h_switches(struct api_req *req)
{
	return api_view(req, v_switches, false);
}

int h_switch(struct api_req *req)
{
	return api_view(req, v_switch, false);
}

int h_links(struct api_req *req)
{
	return api_view(req, v_links, false);
}

int h_topology(struct api_req *req)
{
	return api_view(req, v_topology, false);
}

int h_params(struct api_req *req)
{
	json_t *list = json_array();

	for (unsigned i = 0; i < dcqcn_nparams; i++) {
		const struct dcqcn_param *p = &dcqcn_params[i];
		json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "name", p->name, "node", p->node,
				      "unit", p->unit, "min", (json_int_t)p->min, "default",
				      (json_int_t)p->def, "help", p->help);

		json_object_set_new(o, "max", p->max == PARAM_LINE_RATE ? json_string("line rate")
									: json_integer(p->max));
		json_array_append_new(list, o);
	}
	return api_reply_json(req, 200,
			      json_pack("{s:o,s:[s,s,s,s],s:[s,s,s,s]}", "dcqcn", list, "ecn",
					"enabled", "kmin_bytes", "kmax_bytes", "pmax", "pfc", "enable",
					"xoff_bytes", "xon_bytes", "alpha_shift"));
}

/* --- one object ------------------------------------------------------------------------------- */

/* Splits a request body into params and the reserved members (reason; device/port for DCQCN). */
static int split_body(struct api_req *req, json_t **ret_params, char **ret_reason, struct rf_err *e)
{
	json_error_t je;
	json_t *doc;
	int r;

	*ret_params = NULL;
	*ret_reason = NULL;
	doc = json_loadb(req->body.data ? req->body.data : "", req->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return rf_err_set(e, -EINVAL, "BAD_JSON", NULL, "the body is not JSON: line %d: %s",
				  je.line, je.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/", "send a JSON object of the settings to change");
	}
	if ((r = api_take_reason(doc, ret_reason, e)) < 0) {
		json_decref(doc);
		return r;
	}
	*ret_params = doc;
	return 0;
}

/* The set's targets reject it (e): a 400 with how many and the first of them. */
static int reply_rejected(struct api_req *req, const struct change_set *cs, const struct rf_err *e)
{
	return api_reply_problem_ext(req, 0, e, json_pack("{s:I,s:O}", "rejected_targets", (json_int_t)cs->nbad,
							  "errors", cs->rejections));
}

/* A PFC change that puts a priority the PFC detector holds out of lossless mode back into it:
 * the answer warns (the detector drops its hold, and in auto mode may act again). */
static json_t *hold_warnings(struct api_req *req, json_t *changes)
{
	struct detector *det = api_deps(req)->detector;
	json_t *out = json_array(), *c;
	size_t i;

	json_array_foreach(changes, i, c) {
		json_t *t = json_object_get(c, "target"), *w, *en = json_object_get(json_object_get(c, "new"), "enable");

		if (!det || strcmp(json_string_value(json_object_get(t, "kind")) ?: "", "pfc"))
			continue;
		if (!json_is_integer(en))
			en = json_object_get(json_object_get(c, "params"), "enable");
		if (!json_is_integer(en))
			continue;
		w = detector_hold_warnings(det, json_string_value(json_object_get(t, "agent")) ?: "",
					   !strcmp(json_string_value(json_object_get(t, "role")) ?: "", "switch"),
					   json_string_value(json_object_get(t, "device")),
					   json_string_value(json_object_get(t, "port")), json_integer_value(en));
		json_array_extend(out, w);
		json_decref(w);
	}
	return out;
}

/* Stores the set's changes and answers 202 with them (and warnings, when a change undoes a
 * hold of the detector). */
static int commit_and_reply(struct api_req *req, struct change_set *cs, const char *reason)
{
	struct changes_filter f = { .queue = -2, .limit = CHANGES_MAX_TARGETS };
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	int64_t batch = 0;
	int r;

	r = change_set_commit(api_deps(req)->store, cs, api_actor(req),
			      reason, tu_now_ns() + api_conf(req)->change_deadline_ns, &batch, &e);
	if (r == -EINVAL && cs->nbad) /* targets checked again as it was stored reject it: all or nothing */
		return reply_rejected(req, cs, &e);
	if (r < 0) /* many targets changed meanwhile, again and again (409), the store full or failing (503) */
		return api_reply_problem(req, r == -EALREADY ? 0 : 503, &e);
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	f.batch = batch;
	r = changes_list(rd, &f, &doc, &e);
	if (r == 0) {
		json_t *items = json_object_get(doc, "items");

		/* oldest first, as created */
		json_t *rev = json_array(), *warn;

		for (size_t i = json_array_size(items); i > 0; i--)
			json_array_append(rev, json_array_get(items, i - 1));
		warn = hold_warnings(req, rev);
		json_decref(doc);
		doc = json_pack("{s:I,s:I,s:o}", "batch", (json_int_t)batch, "count",
				(json_int_t)json_array_size(rev), "changes", rev);
		if (doc && json_array_size(warn))
			json_object_set(doc, "warnings", warn);
		json_decref(warn);
	}
	return api_finish(req, rd, r, doc, &e, 202);
}

/* The object's page: its values as last reported and its recent changes. */
static int object_reply(struct api_req *req, struct store_reader *rd, const char *agent,
			enum change_kind kind, json_t *entries)
{
	struct changes_filter f = { .agent = agent, .kind = change_kind_name(kind), .queue = -2, .limit = 20 };
	struct rf_err e = { 0 };
	json_t *changes = NULL, *doc;
	int r;

	if (json_array_size(entries) == 1) {
		json_t *one = json_array_get(entries, 0);

		f.device = json_string_value(json_object_get(one, "device"));
		f.port = json_string_value(json_object_get(one, "port"));
		if (json_object_get(one, "queue"))
			f.queue = (int)json_integer_value(json_object_get(one, "queue"));
	}
	r = changes_list(rd, &f, &changes, &e);
	if (r < 0) {
		json_decref(entries);
		return api_finish(req, rd, r, NULL, &e, 200);
	}
	doc = json_pack("{s:s,s:s,s:o,s:O}", "agent", agent, "kind", change_kind_name(kind),
			"items", entries, "changes", json_object_get(changes, "items"));
	json_decref(changes);
	return api_finish(req, rd, 0, doc, &e, 200);
}

/* GET or PUT of one object (or, for DCQCN, the host's RDMA ports). */
static int config_endpoint(struct api_req *req, const char *role, enum change_kind kind,
			   const char *device, const char *port, int queue)
{
	const char *agent = req->match.params[0];
	struct change_set cs = { 0 };
	struct store_reader *rd = NULL;
	struct rf_err e = { 0 };
	json_t *entries = NULL, *params = NULL, *it;
	char *reason = NULL;
	size_t i;
	int r, ret;

	if (!strcmp(req->method, "PUT") && (r = split_body(req, &params, &reason, &e)) < 0)
		return api_reply_problem(req, 0, &e);
	if (params && kind == CHANGE_DCQCN) {
		/* DCQCN is per RDMA port; the body may pick one, else every port of the host */
		json_t *dv = json_object_get(params, "device"), *pv = json_object_get(params, "port");

		if ((dv && !json_is_string(dv)) || (pv && !json_is_string(pv))) {
			r = rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", dv && !json_is_string(dv) ? "/device" : "/port",
				       "a device or port name is a string");
			goto fail;
		}
		device = json_string_value(dv); /* params' own: valid until they are removed below */
		port = json_string_value(pv);
	}
	if ((r = api_reader(req, &rd))) {
		ret = r < 0 ? r : 0;
		goto out;
	}
	if ((r = changes_lookup(rd, role, kind, agent, device, port, queue, &entries, &e)) < 0)
		goto fail;
	if (!params) {
		ret = object_reply(req, rd, agent, kind, entries); /* takes rd and entries */
		rd = NULL;
		entries = NULL;
		goto out;
	}
	/* PUT: validate against every target before storing anything */
	json_object_del(params, "device");
	json_object_del(params, "port");
	if ((r = change_set_init(&cs, kind, !strcmp(role, "switch"), params)) < 0)
		goto fail;
	json_array_foreach(entries, i, it)
		if ((r = change_set_add(rd, &cs, agent, it, &e)) < 0 || (r = change_set_check(&cs, false, &e)) < 0)
			goto fail;
	store_reader_put(api_deps(req)->store, rd);
	rd = NULL;
	ret = commit_and_reply(req, &cs, reason);
	goto out;
fail:
	ret = api_finish(req, rd, r, NULL, &e, 200);
	rd = NULL;
out:
	change_set_fini(&cs);
	json_decref(entries);
	json_decref(params);
	free(reason);
	return ret;
}

int h_host_dcqcn(struct api_req *req)
{
	return config_endpoint(req, "host", CHANGE_DCQCN, NULL, NULL, -2);
}

int h_host_pfc(struct api_req *req)
{
	/* a host port is DEVICE:PORT (nic0:1) */
	char buf[API_PARAM_MAX + 1], *colon;
	struct rf_err e = { 0 };

	snprintf(buf, sizeof(buf), "%s", req->match.params[1]);
	colon = strchr(buf, ':');
	if (!colon) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_PORT", NULL,
			   "a host port is DEVICE:PORT, for example nic0:1 or mlx5_0:1");
		return api_reply_problem(req, 0, &e);
	}
	*colon = '\0';
	/* the RDMA port number as the agent reports it: one spelling (nic0:01 is not nic0:1) */
	if (api_uint_value(colon + 1, "port", 0, UINT64_MAX, &(uint64_t){ 0 }, &e) < 0)
		return api_reply_problem(req, 0, &e);
	return config_endpoint(req, "host", CHANGE_PFC, buf, colon + 1, -2);
}

int h_switch_pfc(struct api_req *req)
{
	return config_endpoint(req, "switch", CHANGE_PFC, NULL, req->match.params[1], -2);
}

int h_switch_ecn(struct api_req *req)
{
	struct rf_err e = { 0 };
	uint64_t q;

	if (api_uint_value(req->match.params[2], "q", 0, UINT64_MAX, &q, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if (q > 7) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_QUEUE", NULL, "queue '%s': queues are 0 to 7",
			   req->match.params[2]);
		return api_reply_problem(req, 0, &e);
	}
	return config_endpoint(req, "switch", CHANGE_ECN, NULL, req->match.params[1], (int)q);
}

/* --- changes --------------------------------------------------------------------------------------- */

int h_changes(struct api_req *req)
{
	struct changes_filter f = { .agent = api_arg(req, "agent"), .kind = api_arg(req, "kind"),
				    .state = api_arg(req, "state"), .queue = -2, .limit = 100 };
	/* in_doubt: no state of its own (timed out, perhaps applied: what an operator may have to settle) */
	static const char *const states[] = { "pending", "sent", "applied", "failed", "timed_out", "in_doubt", NULL };
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	enum change_kind k;
	uint64_t batch = 0, limit = f.limit;
	int r;

	if (f.kind && change_kind_parse(f.kind, &k) < 0) {
		rf_err_set(&e, -EINVAL, "BAD_PARAMETER", "kind", "kind is dcqcn, ecn or pfc");
		return api_reply_problem(req, 0, &e);
	}
	if (f.state) {
		bool ok = false;

		for (int i = 0; states[i]; i++)
			ok |= !strcmp(states[i], f.state);
		if (!ok) {
			rf_err_set(&e, -EINVAL, "BAD_PARAMETER", "state",
				   "state is pending, sent, applied, failed, timed_out or in_doubt");
			return api_reply_problem(req, 0, &e);
		}
		if ((f.in_doubt = !strcmp(f.state, "in_doubt")))
			f.state = NULL;
	}
	/* batch: a change id */
	if (api_uint_arg(req, "batch", 1, INT64_MAX, &batch, &e) < 0 ||
	    api_uint_arg(req, "limit", 1, CHANGES_MAX_TARGETS, &limit, &e) < 0)
		return api_reply_problem(req, 0, &e);
	f.batch = (int64_t)batch;
	f.limit = (unsigned)limit;
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = changes_list(rd, &f, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

/* GET /api/v1/settings/log[?setting=cc/policy&limit=N] */
int h_settings_log(struct api_req *req)
{
	const char *name = api_arg(req, "setting"), *key = NULL;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	uint64_t limit = 100;
	int r;

	if (name && !(key = views_setting_key(name))) {
		rf_err_set(&e, -EINVAL, "BAD_PARAMETER", "setting",
			   "no setting '%s': cc/policy, detector/config or probes/config", name);
		return api_reply_problem(req, 0, &e);
	}
	if (api_uint_arg(req, "limit", 1, 1000, &limit, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = views_settings_log(rd, key, (unsigned)limit, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

int h_change(struct api_req *req)
{
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	uint64_t id;
	int r;

	if (api_uint_value(req->match.params[0], "id", 0, UINT64_MAX, &id, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if (id == 0 || id > INT64_MAX) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_CHANGE", NULL, "no change '%s'", req->match.params[0]);
		return api_reply_problem(req, 0, &e);
	}
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = changes_get(rd, (int64_t)id, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

/* {"applied": true|false, "reason": "why"}: an operator's word on a change in doubt (its
 * agent gone for good): the reason is required, as for any override of the record. */
int h_change_settle(struct api_req *req)
{
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *body, *applied, *doc = NULL;
	char *why = NULL;
	uint64_t id;
	int r;

	if (api_uint_value(req->match.params[0], "id", 1, INT64_MAX, &id, &e) < 0)
		return api_reply_problem(req, 400, &e);
	if (!(body = js_parse(req->body.data ? req->body.data : "", req->body.len, &e)))
		return api_reply_problem(req, 0, &e);
	applied = json_incref(json_object_get(body, "applied"));
	json_object_del(body, "applied");
	if (!json_is_object(body))
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/", "send {\"applied\": true or false, \"reason\": \"why\"}");
	else if (api_take_reason(body, &why, &e) == 0 && api_no_other_member(body, "applied and reason", &e) == 0) {
		if (!why || !why[strspn(why, " ")])
			rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/reason",
				   "a reason is required (not blank): what was checked on the device, and by whom");
		else if (!json_is_boolean(applied))
			rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/applied",
				   applied ? "applied is true or false"
					   : "applied is required: true (the device holds the change) or false "
					     "(it does not)");
		else
			changes_settle(api_deps(req)->store, (int64_t)id, json_is_true(applied), api_actor(req), why,
				       &e);
	}
	json_decref(applied);
	json_decref(body);
	free(why);
	if (e.err)
		return api_reply_problem(req, e.err == -EALREADY ? 409 : 0, &e);
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = changes_get(rd, (int64_t)id, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

/* The bulk request's selection: switch or host, port, device (globs) and, for ECN, queue. */
static int parse_select(json_t *sel, enum change_kind kind, struct change_select *ret, bool *on_switch,
			struct rf_err *e)
{
	const char *k, *role = NULL;
	json_t *v;

	*ret = (struct change_select){ .queue = -2 };
	json_object_foreach(sel, k, v) {
		if (!strcmp(k, "queue") && kind == CHANGE_ECN && json_is_integer(v)) {
			if (json_integer_value(v) < 0 || json_integer_value(v) > 7)
				return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/select/queue",
						  "queues are 0 to 7");
			ret->queue = (int)json_integer_value(v);
			continue;
		}
		if (!json_is_string(v) ||
		    (strcmp(k, "switch") && strcmp(k, "host") && strcmp(k, "port") && strcmp(k, "device")))
			return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/select",
					  "select has switch or host, port, device (glob patterns) and, for ecn, queue");
		if (strlen(json_string_value(v)) > MAX_PATTERN)
			return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/select",
					  "a pattern is at most %d characters", MAX_PATTERN);
		if (str_glob_open_bracket(json_string_value(v)))
			return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/select",
					  "select %s: the pattern '%s' has a '[' without its ']' (\\[ for the "
					  "character itself)", k, json_string_value(v));
		if (!strcmp(k, "switch") || !strcmp(k, "host")) {
			if (role)
				return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/select",
						  "select switches or hosts, not both");
			role = k;
			ret->node = json_string_value(v);
		} else if (!strcmp(k, "port")) {
			ret->port = json_string_value(v);
		} else {
			ret->device = json_string_value(v);
		}
	}
	*on_switch = role ? !strcmp(role, "switch") : kind != CHANGE_DCQCN;
	return 0;
}

/* "all" and "max_targets" of a bulk request into the selection: the daemon's
 * changes.max_targets unless the request raises (or lowers) it. */
static int parse_guard(struct api_req *req, json_t *doc, struct change_select *csel, struct rf_err *e)
{
	json_t *all = json_object_get(doc, "all"), *max = json_object_get(doc, "max_targets");

	if (all && !json_is_boolean(all))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/all", "all is true or false");
	csel->all = json_is_true(all);
	if (csel->all && (csel->node || csel->device || csel->port || csel->queue != -2))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/all",
				  "\"all\": true stands for an empty selection; drop it or the patterns");
	if (max && (!json_is_integer(max) || json_integer_value(max) < 1 ||
		    json_integer_value(max) > CHANGES_MAX_TARGETS))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/max_targets",
				  "max_targets is an integer from 1 to %d", CHANGES_MAX_TARGETS);
	csel->max_targets = max ? (size_t)json_integer_value(max) : api_conf(req)->change_max_targets;
	return 0;
}

/* POST /api/v1/changes: {"kind", "select": {...}, "params": {...}, "reason", "all",
 * "max_targets"} */
int h_changes_bulk(struct api_req *req)
{
	static const char *const keys[] = { "kind", "select", "params", "reason", "all", "max_targets", NULL };
	json_t *doc = NULL, *sel, *params;
	struct store_reader *rd = NULL;
	char *why = NULL;
	struct change_set cs = { 0 };
	struct change_select csel;
	struct rf_err e = { 0 };
	enum change_kind kind;
	bool on_switch = false;
	json_error_t je;
	const char *k;
	json_t *v;
	int r;

	doc = json_loadb(req->body.data ? req->body.data : "", req->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		rf_err_set(&e, -EINVAL, "BAD_JSON", NULL, "the body is not JSON: line %d: %s", je.line, je.text);
		return api_reply_problem(req, 0, &e);
	}
	r = -EINVAL;
	if (!json_is_object(doc)) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/", "send {\"kind\", \"select\", \"params\", \"reason\"}");
		goto out;
	}
	json_object_foreach(doc, k, v) {
		bool ok = false;

		for (int i = 0; keys[i]; i++)
			ok |= !strcmp(k, keys[i]);
		if (!ok) {
			rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/",
				   "unknown member '%s' (kind, select, params, reason, all, max_targets)", k);
			goto out;
		}
	}
	sel = json_object_get(doc, "select");
	params = json_object_get(doc, "params");
	if (change_kind_parse(json_string_value(json_object_get(doc, "kind")), &kind) < 0) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/kind", "kind is dcqcn, ecn or pfc");
		goto out;
	}
	if (!json_is_object(sel) || !json_is_object(params)) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", !json_is_object(sel) ? "/select" : "/params",
			   "select and params are objects");
		goto out;
	}
	if ((r = api_take_reason(doc, &why, &e)) < 0 || (r = parse_select(sel, kind, &csel, &on_switch, &e)) < 0 ||
	    (r = parse_guard(req, doc, &csel, &e)) < 0 ||
	    (r = change_set_init(&cs, kind, on_switch, params)) < 0)
		goto out;
	if ((r = api_reader(req, &rd))) {
		change_set_fini(&cs);
		json_decref(doc);
		free(why);
		return r < 0 ? r : 0;
	}
	if ((r = changes_select(rd, &cs, &csel, &e)) == -ERANGE) {
		/* more targets than the limit: how many, and the limit */
		json_t *extra = json_pack("{s:I,s:I}", "targets", (json_int_t)cs.matched, "max_targets",
					  (json_int_t)(csel.max_targets ? csel.max_targets : CHANGES_MAX_TARGETS));

		store_reader_put(api_deps(req)->store, rd);
		change_set_fini(&cs);
		json_decref(doc);
		free(why);
		return api_reply_problem_ext(req, 0, &e, extra);
	}
	if (r < 0)
		goto out;
	store_reader_put(api_deps(req)->store, rd);
	rd = NULL;
	if (change_set_check(&cs, true, &e) < 0) {
		/* all or nothing: one bad target rejects the whole request */
		r = reply_rejected(req, &cs, &e);
		change_set_fini(&cs);
		json_decref(doc);
		free(why);
		return r;
	}
	r = commit_and_reply(req, &cs, why);
	change_set_fini(&cs);
	json_decref(doc);
	free(why);
	return r;
out:
	change_set_fini(&cs);
	json_decref(doc);
	free(why);
	return api_finish(req, rd, r, NULL, &e, 200);
}
