/* Handlers: pingmesh (the latency matrix, results, configuration) and alerts. */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "lib/probeops.h"
#include "daemon/alerts.h"
#include "daemon/pingmesh.h"
#include "lib/timeutil.h"

/* ?op= and ?size=: one of the operations, 8 to 65536 bytes; absent: NULL and 0. */
static int op_size_args(struct api_req *req, const char **op, unsigned *size, struct rf_err *e)
{
	uint64_t v = 0;
	int r;

	*op = api_arg(req, "op");
	if (*op && !probe_op_valid(*op))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "op", "'%s': " PROBE_OPS_TEXT, *op);
	if ((r = api_uint_arg(req, "size", PROBE_MIN_SIZE, PROBE_MAX_SIZE, &v, e)) < 0)
		return r;
	*size = (unsigned)v;
	return 0;
}

int h_probes_matrix(struct api_req *req)
{
	const char *w = api_arg(req, "window"), *op;
	int64_t window = 30 * NSEC_PER_SEC;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	unsigned size;
	bool paths = true;
	int r;

	if ((r = api_duration_arg(req, "window", &window, &e)) < 0)
		return api_reply_problem(req, 0, &e);
	if (window < NSEC_PER_SEC || window > 86400 * NSEC_PER_SEC) {
		rf_err_set(&e, -EINVAL, "BAD_PARAMETER", "window", "'%s': a duration from 1s to 1d", w);
		return api_reply_problem(req, 0, &e);
	}
	if (op_size_args(req, &op, &size, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if ((r = api_bool_arg(req, "paths", &paths, &e)) < 0)
		return api_reply_problem(req, 0, &e);
	/* the last localization pass's matrix when it is the one asked for (it runs every few
	 * seconds over the same window): a large fabric's heatmap is then served at once */
	if (!paths) {
		char *text;
		size_t len;

		if (pingmesh_matrix_cached(api_deps(req)->pingmesh, op, size, window, tu_now_ns(), &text,
					   &len) == 0)
			return api_reply_text(req, 200, "application/json", text, len);
	}
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = pingmesh_matrix(rd, tu_now_ns(), window, op, size, paths, &doc, &e);
	if (r == 0)
		pingmesh_attribute(api_deps(req)->pingmesh, doc, window);
	return api_finish(req, rd, r, doc, &e, 200);
}

int h_probes_results(struct api_req *req)
{
	const char *op;
	int64_t now = tu_now_ns(), t0 = now - 5 * 60 * NSEC_PER_SEC, t1 = now;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	uint64_t lim = 1000;
	unsigned size;
	int r;

	if (api_time_arg(req, "from", now, &t0, &e) < 0 || api_time_arg(req, "to", now, &t1, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if (api_uint_arg(req, "limit", 1, 100000, &lim, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if (op_size_args(req, &op, &size, &e) < 0)
		return api_reply_problem(req, 0, &e);
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = pingmesh_results(rd, api_arg(req, "src"), api_arg(req, "dst"), op, size, t0, t1, (unsigned)lim, &doc,
			     &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

int h_probes_config(struct api_req *req)
{
	struct pingmesh_conf c;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	char *why = NULL;
	json_t *body;
	json_error_t je;
	int r;

	/* HEAD comes here too (the router gives it the GET route and its role); a PUT reads the
	 * configuration under the lock of its change (pingmesh_conf_change) */
	if (strcmp(req->method, "PUT")) {
		if ((r = api_reader(req, &rd)))
			return r < 0 ? r : 0;
		r = pingmesh_conf_load(rd, &c);
		store_reader_put(api_deps(req)->store, rd);
		if (r < 0) {
			rf_err_set(&e, -EAGAIN, "STORE_ERROR", NULL, "cannot read the pingmesh configuration (%s)",
				   strerror(-r));
			return api_reply_problem(req, 0, &e);
		}
		return api_reply_json(req, 200, pingmesh_conf_json(&c));
	}
	body = json_loadb(req->body.data ? req->body.data : "", req->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!body) {
		rf_err_set(&e, -EINVAL, "BAD_JSON", NULL, "the body is not JSON: %s", je.text);
		return api_reply_problem(req, 0, &e);
	}
	r = api_take_reason(body, &why, &e) ?: pingmesh_conf_change(api_deps(req)->pingmesh, body, api_actor(req), why,
								     &c, &e);
	json_decref(body);
	free(why);
	if (r < 0)
		return api_reply_problem(req, 0, &e);
	return api_reply_json(req, 200, pingmesh_conf_json(&c));
}

static int v_alerts(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		    json_t **ret, struct rf_err *e)
{
	(void)o;
	return alerts_list(rd, api_arg(req, "state"), ret, e);
}

int h_alerts(struct api_req *req)
{
	return api_view(req, v_alerts, false);
}
