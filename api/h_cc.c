/* Handlers: the congestion-control tuner (status, policy, proposals and decisions, history,
 * rollback). */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "daemon/tuner.h"
#include "lib/jsonutil.h"

static int no_tuner(struct api_req *req)
{
	struct rf_err e = { 0 };

	rf_err_set(&e, -ENOENT, "NO_TUNER", NULL,
		   "this rocefabd runs no congestion-control tuner (cc.interval 0, or no fast lane)");
	return api_reply_problem(req, 404, &e);
}

int h_cc(struct api_req *req)
{
	struct tuner *t = api_deps(req)->tuner;

	if (!t)
		return no_tuner(req);
	return api_reply_json(req, 200, tuner_status(t));
}

int h_cc_policy(struct api_req *req)
{
	struct tuner *t = api_deps(req)->tuner;
	struct rf_err e = { 0 };
	char *why = NULL;
	json_t *body;
	int r;

	if (!t)
		return no_tuner(req);
	/* HEAD comes here too (the router gives it the GET route and its role) */
	if (strcmp(req->method, "PUT"))
		return api_reply_json(req, 200, tuner_policy(t));
	body = js_parse(req->body.data ? req->body.data : "", req->body.len, &e);
	if (!body)
		return api_reply_problem(req, 0, &e);
	r = api_take_reason(body, &why, &e) ?: tuner_set_policy(t, body, api_actor(req), why, &e);
	json_decref(body);
	free(why);
	if (r < 0)
		return api_reply_problem(req, 0, &e);
	return api_reply_json(req, 200, tuner_policy(t));
}

int h_cc_proposals(struct api_req *req)
{
	struct tuner *t = api_deps(req)->tuner;
	struct rf_err e = { 0 };
	bool all = false;

	if (!t)
		return no_tuner(req);
	if (api_bool_arg(req, "all", &all, &e) < 0)
		return api_reply_problem(req, 400, &e);
	return api_reply_json(req, 200, tuner_proposals(t, all));
}

static int decide(struct api_req *req, bool apply)
{
	struct tuner *t = api_deps(req)->tuner;
	struct rf_err e = { 0 };
	json_t *out = NULL;
	char *why;
	uint64_t id;
	int r;

	if (api_uint_value(req->match.params[0], "id", 1, INT64_MAX, &id, &e) < 0)
		return api_reply_problem(req, 400, &e);
	if (api_reason_body(req, &why) < 0)
		return 0;
	if (!t) {
		free(why);
		return no_tuner(req);
	}
	r = tuner_decide(t, id, apply, api_actor(req), why, &out, &e);
	free(why);
	if (r < 0)
		return api_reply_problem(req, e.err == -EALREADY || e.err == -EPERM || e.err == -ESTALE ? 409 : 0, &e);
	return api_reply_json(req, apply ? 202 : 200, out);
}

int h_cc_apply(struct api_req *req)
{
	return decide(req, true);
}

int h_cc_reject(struct api_req *req)
{
	return decide(req, false);
}

int h_cc_history(struct api_req *req)
{
	struct tuner *t = api_deps(req)->tuner;

	if (!t)
		return no_tuner(req);
	return api_reply_json(req, 200, tuner_history(t));
}

int h_cc_rollback(struct api_req *req)
{
	struct tuner *t = api_deps(req)->tuner;
	struct rf_err e = { 0 };
	json_t *out = NULL;
	char *why;
	int r;

	if (api_reason_body(req, &why) < 0)
		return 0;
	if (!t) {
		free(why);
		return no_tuner(req);
	}
	r = tuner_rollback(t, api_actor(req), why, &out, &e);
	free(why);
	if (r < 0)
		return api_reply_problem(req, e.err == -EBUSY ? 409 : 0, &e);
	return api_reply_json(req, 202, out);
}
