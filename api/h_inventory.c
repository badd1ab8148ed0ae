/* Handlers: agents, hosts, ports and counter series (read-only views of the store). */
#include <string.h>

#include "api/internal.h"
#include "daemon/ingest.h"
#include "daemon/retention.h"
#include "daemon/views.h"
#include "lib/log.h"
#include "lib/timeutil.h"

#define MAX_POINTS 10000

static int v_agents(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		    json_t **ret, struct rf_err *e)
{
	(void)req;
	return views_agents(rd, o, NULL, ret, e);
}

static int v_agent(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		   json_t **ret, struct rf_err *e)
{
	return views_agents(rd, o, req->match.params[0], ret, e);
}

static int v_hosts(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		   json_t **ret, struct rf_err *e)
{
	(void)req;
	return views_hosts(rd, o, ret, e);
}

static int v_host(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		  json_t **ret, struct rf_err *e)
{
	return views_host(rd, o, req->match.params[0], ret, e);
}

static int v_host_qps(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		      json_t **ret, struct rf_err *e)
{
	return views_host_qps(rd, o, req->match.params[0], ret, e);
}

static int v_ports(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		   json_t **ret, struct rf_err *e)
{
	struct port_filter f = { .host = api_arg(req, "host"),
				 .device = api_arg(req, "device"),
				 .state = api_arg(req, "state") };

	return views_ports(rd, o, &f, ret, e);
}

static int v_port(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
		  json_t **ret, struct rf_err *e)
{
	return views_port(rd, o, api_deps(req)->ingest, req->match.params[0], ret, e);
}

static int v_port_counters(struct api_req *req, struct store_reader *rd,
			   const struct views_opts *o, json_t **ret, struct rf_err *e)
{
	struct counter_query q = { .names = api_arg(req, "names"), .max_points = MAX_POINTS,
				   .resolution = VIEWS_RES_AUTO };
	const char *res = api_arg(req, "resolution");
	int has_from, has_to, r;
	uint64_t prio;

	if (res) {
		if (!strcmp(res, "raw"))
			q.resolution = 0;
		else if (!strcmp(res, "1m"))
			q.resolution = 60;
		else if (!strcmp(res, "1h"))
			q.resolution = 3600;
		else if (strcmp(res, "auto") != 0)
			return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "resolution",
					  "'%s': use auto, raw, 1m or 1h", res);
	}

	q.to_ns = o->now_ns;
	if ((has_to = api_time_arg(req, "to", o->now_ns, &q.to_ns, e)) < 0)
		return has_to;
	/* (rocefab's times start at the epoch) */
	q.from_ns = q.to_ns > 5 * 60 * NSEC_PER_SEC ? q.to_ns - 5 * 60 * NSEC_PER_SEC : 0;
	if ((has_from = api_time_arg(req, "from", o->now_ns, &q.from_ns, e)) < 0)
		return has_from;
	q.to_newest = !has_from && !has_to;
	q.to_rel = !has_to || tu_time_is_relative(api_arg(req, "to"));
	/* (from by default is to minus 5 minutes: relative as to is) */
	q.from_rel = has_from ? tu_time_is_relative(api_arg(req, "from")) : q.to_rel;
	if ((r = api_duration_arg(req, "step", &q.step_ns, e)) < 0)
		return r;
	if (r > 0 && q.step_ns == 0) /* (step=0s was taken as no step: every sample) */
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "step", "step must be at least 1ms");
	if ((r = api_uint_arg(req, "priority", 0, 7, &prio, e)) < 0)
		return r;
	if (r > 0) {
		q.one_priority = true;
		q.priority = (uint8_t)prio;
	}
	q.now_ns = o->now_ns;
	if (api_deps(req)->retention) {
		struct retention_status rs;

		retention_get_status(api_deps(req)->retention, &rs);
		q.kept_ns[0] = rs.in_force_ns[RET_RAW];
		q.kept_ns[1] = rs.in_force_ns[RET_1M];
		q.kept_ns[2] = rs.in_force_ns[RET_1H];
	}
	return views_port_counters(rd, api_deps(req)->ingest, req->match.params[0], &q, ret, e);
}

int h_agents(struct api_req *req)
{
	return api_view(req, v_agents, true);
}

int h_agent(struct api_req *req)
{
	return api_view(req, v_agent, false);
}

/* DELETE /api/v1/agents/{id}: an agent gone for good, forgotten (daemon/ingest.h), in steps
 * of writer jobs: the request waits suspended, not holding one of the API's threads. */
static bool forget_go_on(void *ctx)
{
	struct api_req *req = ctx;

	return !api_draining(req->api);
}

static void forget_answered(void *ctx, int r, json_t *doc, const struct rf_err *e)
{
	struct api_req *req = ctx;

	/* on the writer thread: nothing may touch req after api_resume() */
	req->async_err = r;
	req->async_doc = doc;
	if (r < 0)
		req->async_e = *e;
	req->async_done = true;
	api_resume(req);
}

int h_agent_forget(struct api_req *req)
{
	static const struct ingest_forget_cb cb = { .go_on = forget_go_on, .done = forget_answered };
	struct views_opts o = api_views_opts(req);
	struct rf_err e = { 0 };
	json_t *doc;

	if (req->async_done) {
		api_async_done(req);
		doc = req->async_doc;
		req->async_doc = NULL;
		if (req->async_err < 0)
			return api_reply_problem(req, 0, &req->async_e);
		log_notice("api", "agent %s forgotten by %s: %lld ports, %lld rows", req->match.params[0],
			   api_actor(req), (long long)json_integer_value(json_object_get(doc, "ports")),
			   (long long)json_integer_value(json_object_get(doc, "rows")));
		return api_reply_json(req, 200, doc);
	}
	if (!api_suspend(req)) {
		rf_err_set(&e, -EAGAIN, "SHUTTING_DOWN", NULL, "rocefabd is shutting down; forget it after the start");
		return api_reply_problem(req, 0, &e);
	}
	if (ingest_forget_agent(api_deps(req)->ingest, req->match.params[0], &o, &cb, req, &e) < 0) {
		req->async_err = e.err ? e.err : -EIO;
		req->async_e = e;
		req->async_done = true;
		api_resume(req);
	}
	return 0;
}

int h_hosts(struct api_req *req)
{
	return api_view(req, v_hosts, true);
}

int h_host(struct api_req *req)
{
	return api_view(req, v_host, false);
}

int h_host_qps(struct api_req *req)
{
	return api_view(req, v_host_qps, false);
}

int h_ports(struct api_req *req)
{
	return api_view(req, v_ports, false);
}

int h_port(struct api_req *req)
{
	return api_view(req, v_port, false);
}

int h_port_counters(struct api_req *req)
{
	return api_view(req, v_port_counters, false);
}
