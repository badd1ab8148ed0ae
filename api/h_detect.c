/* Handlers: the PFC deadlock and storm detector (status, configuration, the snapshot it reads)
 * and the alert actions (mitigate, acknowledge). */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "daemon/alerts.h"
#include "daemon/detector.h"
#include "lib/jsonutil.h"
#include "lib/timeutil.h"

static int no_detector(struct api_req *req)
{
	struct rf_err e = { 0 };

	rf_err_set(&e, -ENOENT, "NO_DETECTOR", NULL, "this rocefabd runs no PFC detector");
	return api_reply_problem(req, 404, &e);
}

int h_detector(struct api_req *req)
{
	struct detector *d = api_deps(req)->detector;

	if (!d)
		return no_detector(req);
	return api_reply_json(req, 200, detector_status(d));
}

int h_detector_config(struct api_req *req)
{
	struct detector *d = api_deps(req)->detector;
	struct rf_err e = { 0 };
	char *why = NULL;
	json_t *body;
	int r;

	if (!d)
		return no_detector(req);
	/* HEAD comes here too (the router gives it the GET route and its role) */
	if (strcmp(req->method, "PUT"))
		return api_reply_json(req, 200, detector_config(d));
	body = js_parse(req->body.data ? req->body.data : "", req->body.len, &e);
	if (!body)
		return api_reply_problem(req, 0, &e);
	r = api_take_reason(body, &why, &e) ?: detector_set_config(d, body, api_actor(req), why, &e);
	json_decref(body);
	free(why);
	if (r < 0)
		return api_reply_problem(req, 0, &e);
	return api_reply_json(req, 200, detector_config(d));
}

int h_detector_snapshot(struct api_req *req)
{
	struct detector *d = api_deps(req)->detector;
	struct rf_err e = { 0 };
	json_t *snap;

	const char *span = api_arg(req, "span");
	bool recent = span && !strcmp(span, "recent");

	if (span && !recent && strcmp(span, "last")) {
		rf_err_set(&e, -EINVAL, "BAD_PARAMETER", "span",
			   "span is last (the interval the detector last analysed) or recent (every interval it "
			   "analysed over the last 10 to 20 s, summed)");
		return api_reply_problem(req, 400, &e);
	}
	if (!d)
		return no_detector(req);
	snap = recent ? detector_recent(d) : detector_snapshot(d);
	if (!snap) {
		rf_err_set(&e, -ENOENT, "NO_SNAPSHOT", NULL,
			   recent ? "no interval analysed in the last 10 to 20 s: are the agents' fast PFC reports "
				    "coming (GET /api/v1/detector: lane)?"
				  : "no snapshot yet: the detector needs two fast PFC reports of a port");
		return api_reply_problem(req, 404, &e);
	}
	return api_reply_json(req, 200, snap);
}

/* The alert id of the path: a positive decimal integer. */
static int alert_id(struct api_req *req, int64_t *ret)
{
	struct rf_err e = { 0 };
	uint64_t v;

	if (api_uint_value(req->match.params[0], "id", 1, INT64_MAX, &v, &e) < 0) {
		api_reply_problem(req, 400, &e);
		return -1;
	}
	*ret = (int64_t)v;
	return 0;
}

int h_alert_mitigate(struct api_req *req)
{
	struct detector *d = api_deps(req)->detector;
	struct rf_err e = { 0 };
	json_t *out = NULL;
	char *why = NULL;
	int64_t id;
	int r;

	if (alert_id(req, &id) < 0 || api_reason_body(req, &why) < 0)
		return 0;
	if (!d) {
		free(why);
		return no_detector(req);
	}
	r = detector_mitigate(d, id, api_actor(req), why, &out, &e);
	free(why);
	if (r < 0)
		return api_reply_problem(req, e.err == -EALREADY ? 409 : e.err == -EPERM ? 409 : 0, &e);
	return api_reply_json(req, 202, out);
}

/* The alert id as it is now (GET, and the answer to an ack). */
static int reply_alert(struct api_req *req, int64_t id)
{
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *out = NULL;
	int r;

	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = alerts_get(rd, id, &out, &e);
	return api_finish(req, rd, r, out, &e, 200);
}

int h_alert(struct api_req *req)
{
	int64_t id;

	return alert_id(req, &id) < 0 ? 0 : reply_alert(req, id);
}

int h_alert_ack(struct api_req *req)
{
	struct rf_err e = { 0 };
	int64_t id;

	if (alert_id(req, &id) < 0 || api_no_body(req) < 0)
		return 0;
	if (alerts_ack(api_deps(req)->store, id, api_actor(req), tu_now_ns(), &e) < 0)
		return api_reply_problem(req, e.err == -EALREADY ? 409 : 0, &e);
	return reply_alert(req, id);
}
