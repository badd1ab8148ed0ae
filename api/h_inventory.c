/* Handlers: agents, hosts, ports and counter series (read-only views of the store). */
#include <string.h>

#include "api/internal.h"
#include "daemon/views.h"
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
	struct counter_query q = { .names = api_arg(req, "names"), .max_points = MAX_POINTS };
	const char *from = api_arg(req, "from"), *to = api_arg(req, "to"),
		   *step = api_arg(req, "step");

	q.to_ns = o->now_ns;
	if (to && tu_parse_time(to, o->now_ns, &q.to_ns) < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "to",
				  "'%s' is not a time (RFC 3339, Unix seconds, 'now' or '-5m')", to);
	q.from_ns = q.to_ns - 5 * 60 * NSEC_PER_SEC;
	if (from && tu_parse_time(from, o->now_ns, &q.from_ns) < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "from",
				  "'%s' is not a time (RFC 3339, Unix seconds, 'now' or '-5m')", from);
	q.to_newest = !from && !to;
	if (step && tu_parse_duration(step, &q.step_ns) < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "step",
				  "'%s' is not a duration (such as 10s or 1m)", step);
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

int h_hosts(struct api_req *req)
{
	return api_view(req, v_hosts, true);
}

int h_host(struct api_req *req)
{
	return api_view(req, v_host, false);
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
