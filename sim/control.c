/* The control API of rocefab-sim serve (schemas/sim-control.yaml): HTTP + JSON on loopback,
 * also called in-process by the virtual agents.  routes[] at the end lists the endpoints, each
 * with its handler; lib/router.h matches a request to one (404 for an unknown path, 405 for a
 * known path with another method).
 *
 * Changes use the scenario's field names and are all-or-nothing (sim/config.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/httpd.h"
#include "lib/router.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "sim/serve.h"
#include "sim/snapshot.h"

#define CTL_PATH_MAX (64 * 1024)

int simctl_init(struct simctl *c, struct sim *s, const char *scenario, double pace)
{
	*c = (struct simctl){ .s = s, .scenario = scenario, .pace = pace, .max_pace = 1000 };
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	c->epoch_ns = tu_now_ns();
	c->anchor_wall_ns = c->win_wall_ns = tu_mono_ns();
	c->pace_effective = pace;
	return 0;
}

void simctl_fini(struct simctl *c)
{
	sim_snapper_free(c->snapper);
	c->snapper = NULL;
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
}

int64_t simctl_time_ns(const struct simctl *c)
{
	return c->epoch_ns + sim_now(c->s) / 1000;
}

static int problem(json_t **doc, int status, const char *code, const char *pointer,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int problem(json_t **doc, int status, const char *code, const char *pointer,
		   const char *fmt, ...)
{
	struct rf_err e = { 0 };
	va_list ap;

	snprintf(e.code, sizeof(e.code), "%s", code);
	if (pointer)
		snprintf(e.where, sizeof(e.where), "%s", pointer);
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	*doc = httpd_problem(status, &e);
	return status;
}

static int from_err(json_t **doc, int r, const struct rf_err *e)
{
	int status = r == -ENOENT ? 404 : r == -ENOMEM ? 503 : 400;

	*doc = httpd_problem(status, e);
	return status;
}

static json_t *clock_json(const struct simctl *c)
{
	return json_pack("{s:I,s:I,s:I,s:f,s:f,s:b,s:b}", "fabric_time_ns",
			 (json_int_t)(sim_now(c->s) / 1000), "time_ns", (json_int_t)simctl_time_ns(c),
			 "epoch_ns", (json_int_t)c->epoch_ns, "pace", c->pace, "pace_effective",
			 c->pace_effective, "paused", c->paused, "keeping_up",
			 c->paused || c->pace_effective >= 0.95 * c->pace);
}

static const char *role(const struct sim *s, int dev)
{
	return sim_device_is_switch(s, dev) ? "switch" : "host";
}

static json_t *port_json(const struct sim *s, int dev, int port)
{
	int pd = -1, pp = -1;

	sim_port_peer(s, dev, port, &pd, &pp);
	return json_pack("{s:s,s:s,s:I,s:{s:s,s:s,s:s}}", "name", sim_port_name(s, dev, port),
			 "state", sim_port_up(s, dev, port) ? "up" : "down", "speed_mbps",
			 (json_int_t)(sim_port_rate_bps(s, dev, port) / 1000000), "peer", "device",
			 sim_device_name(s, pd), "port", sim_port_name(s, pd, pp), "role", role(s, pd));
}

static json_t *device_json(const struct sim *s, int dev, bool ports)
{
	json_t *o = json_pack("{s:s,s:s,s:i}", "name", sim_device_name(s, dev), "role", role(s, dev),
			      "nports", sim_port_count(s, dev));

	if (ports) {
		json_t *list = json_array();

		for (int p = 0; p < sim_port_count(s, dev); p++)
			json_array_append_new(list, port_json(s, dev, p));
		json_object_set_new(o, "ports", list);
	}
	return o;
}

static void counter_cb(void *ctx, const char *name, int prio, uint64_t value)
{
	char key[96];

	if (prio < 0)
		json_object_set_new(ctx, name, json_integer((json_int_t)value));
	else if (snprintf(key, sizeof(key), "%s_prio%d", name, prio) < (int)sizeof(key))
		json_object_set_new(ctx, key, json_integer((json_int_t)value));
}

static json_t *counters_json(const struct simctl *c, int dev)
{
	json_t *ports = json_object();

	for (int p = 0; p < sim_port_count(c->s, dev); p++) {
		json_t *v = json_object();

		sim_counters(c->s, dev, p, counter_cb, v);
		json_object_set_new(ports, sim_port_name(c->s, dev, p), v);
	}
	return json_pack("{s:s,s:I,s:I,s:o}", "device", sim_device_name(c->s, dev), "fabric_time_ns",
			 (json_int_t)(sim_now(c->s) / 1000), "time_ns", (json_int_t)simctl_time_ns(c),
			 "ports", ports);
}

/* The XOFF threshold a single ingress priority group reaches before it pauses its peer: the
 * static threshold, or alpha x the shared buffer when the rest of the buffer is empty.  ECN
 * thresholds must stay below it (facts file section 4.2). */
static void add_xoff_threshold(const struct sim *s, int dev, json_t *pfc)
{
	json_int_t thr;

	if (!sim_device_is_switch(s, dev))
		return;
	if (!strcmp(json_string_value(json_object_get(pfc, "threshold")) ?: "", "static")) {
		thr = json_integer_value(json_object_get(pfc, "xoff_bytes"));
	} else {
		int shift = (int)json_integer_value(json_object_get(pfc, "alpha_shift"));
		uint64_t shared = sim_switch_shared_bytes(s, dev);

		/* dynamic: threshold = alpha x free; alone in the buffer, used = alpha x (shared -
		 * used), so used = shared x alpha / (1 + alpha) */
		double alpha = shift >= 0 ? (double)(1u << shift) : 1.0 / (double)(1u << -shift);

		thr = (json_int_t)((double)shared * alpha / (1.0 + alpha));
	}
	json_object_set_new(pfc, "xoff_threshold_bytes", json_integer(thr));
}

static json_t *config_json(const struct simctl *c, int dev)
{
	const struct sim *s = c->s;
	json_t *ports = json_object(), *o;

	for (int p = 0; p < sim_port_count(s, dev); p++) {
		json_t *pc = json_object(), *pfc = sim_get_pfc(s, dev, p);

		add_xoff_threshold(s, dev, pfc);
		json_object_set_new(pc, "pfc", pfc);
		if (sim_device_is_switch(s, dev)) {
			json_t *q = json_array();

			for (int k = 0; k < 8; k++)
				json_array_append_new(q, sim_get_ecn(s, dev, p, k));
			json_object_set_new(pc, "ecn", q);
		}
		json_object_set_new(ports, sim_port_name(s, dev, p), pc);
	}
	o = json_pack("{s:s,s:s,s:o}", "device", sim_device_name(s, dev), "role", role(s, dev),
		      "ports", ports);
	if (!sim_device_is_switch(s, dev))
		json_object_set_new(o, "dcqcn", sim_get_dcqcn(s, dev));
	else
		json_object_set_new(o, "buffer", json_pack("{s:I}", "shared_bytes",
							   (json_int_t)sim_switch_shared_bytes(s, dev)));
	return o;
}

static int find_dev(const struct simctl *c, const char *name, json_t **doc, int *ret)
{
	*ret = sim_device_find(c->s, name);
	if (*ret < 0)
		return problem(doc, 404, "UNKNOWN_DEVICE", NULL, "the fabric has no device '%s'",
			       name);
	return 0;
}

static int find_port(const struct simctl *c, int dev, const char *name, json_t **doc, int *ret)
{
	*ret = sim_port_find(c->s, dev, name);
	if (*ret < 0)
		return problem(doc, 404, "UNKNOWN_PORT", NULL, "%s has no port '%s' (ports are named by their neighbour)",
			       sim_device_name(c->s, dev), name);
	return 0;
}

/* --- the endpoints: one handler each, params[] holding the pattern's {names} in order ---------- */

static int get_status(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	json_t *o = json_pack("{s:s,s:o,s:I,s:I,s:i}", "scenario", c->scenario, "clock",
			      clock_json(c), "events", (json_int_t)sim_events(c->s), "data_packets",
			      (json_int_t)sim_data_packets(c->s), "devices", sim_device_count(c->s));

	(void)params;
	(void)body;
	if (c->agents_status)
		json_object_set_new(o, "agents", c->agents_status(c->agents_ctx));
	*doc = o;
	return 200;
}

static int get_clock(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	(void)params;
	(void)body;
	*doc = clock_json(c);
	return 200;
}

static int put_clock(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	json_t *pace = json_object_get(body, "pace"), *paused = json_object_get(body, "paused");
	json_t *advance = json_object_get(body, "advance_us");
	const char *k;
	json_t *v;

	(void)params;
	if (!json_is_object(body))
		return problem(doc, 400, "BAD_VALUE", "", "send {\"pace\": R, \"paused\": true|false}");
	json_object_foreach(body, k, v)
		if (strcmp(k, "pace") && strcmp(k, "paused") && strcmp(k, "advance_us"))
			return problem(doc, 400, "UNKNOWN_FIELD", "", "unknown field '%s'", k);
	if (advance && (!json_is_number(advance) || !(json_number_value(advance) > 0) ||
			json_number_value(advance) > 1e6))
		return problem(doc, 400, "BAD_VALUE", "/advance_us", "advance_us is fabric time in (0, 1000000] us");
	if (advance && !(paused ? json_is_true(paused) : c->paused))
		return problem(doc, 409, "NOT_PAUSED", "/advance_us",
			       "advance_us steps a paused fabric (send \"paused\": true with it)");
	if (pace && (!json_is_number(pace) || json_number_value(pace) <= 0 ||
		     json_number_value(pace) > 1000))
		return problem(doc, 400, "BAD_VALUE", "/pace",
			       "pace is fabric seconds per wall second, in (0, 1000]");
	if (pace && json_number_value(pace) > c->max_pace)
		return problem(doc, 400, "BAD_VALUE", "/pace",
			       "pace is at most %g while counters go to rocefabd (--agents, --sonic): fabric time, "
			       "their read time, would run ahead of the wall clock, and rocefabd refuses reports "
			       "more than a minute ahead of its own (CLOCK_AHEAD)", c->max_pace);
	if (paused && !json_is_boolean(paused))
		return problem(doc, 400, "BAD_VALUE", "/paused", "must be true or false");
	/* re-anchor so that the new pace applies from now */
	c->anchor_wall_ns = tu_mono_ns();
	c->anchor_fab_ps = sim_now(c->s);
	c->win_wall_ns = c->anchor_wall_ns;
	c->win_fab_ps = c->anchor_fab_ps;
	if (pace) {
		c->pace = json_number_value(pace);
		c->pace_effective = c->pace;
	}
	if (paused)
		c->paused = json_is_true(paused);
	if (advance) {
		/* one step, under the lock: no agent reads a counter in between */
		sim_run_until(c->s, sim_now(c->s) + (int64_t)(json_number_value(advance) * 1e6));
		c->anchor_fab_ps = c->win_fab_ps = sim_now(c->s);
	}
	pthread_cond_broadcast(&c->wake);
	*doc = clock_json(c);
	return 200;
}

/* The controllers' snapshot (sim/snapshot.h) over the interval since the mark, as its virtual
 * agents' counters give it, times mapped to Unix time like theirs: what rocefabd's detector
 * must see too (tests/system/test_detect_live.py compares them). */
static int post_snapshot_mark(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	(void)params;
	(void)body;
	sim_snapper_free(c->snapper);
	c->snapper = sim_snapper_new(c->s);
	if (!c->snapper)
		return problem(doc, 500, "NO_MEMORY", "", "out of memory");
	*doc = json_pack("{s:I}", "fabric_time_ns", (json_int_t)(sim_now(c->s) / 1000));
	return 200;
}

static int get_snapshot(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct cc_snap *snap;

	(void)params;
	(void)body;
	if (!c->snapper)
		return problem(doc, 409, "NO_MARK", "", "POST /v1/snapshot/mark first");
	snap = sim_snapper_take(c->snapper);
	if (!snap)
		return problem(doc, 500, "NO_MEMORY", "", "out of memory");
	snap->t_us += c->epoch_ns / 1000;
	*doc = cc_snap_json(snap);
	cc_snap_free(snap);
	return 200;
}

static int get_summary(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	(void)params;
	(void)body;
	*doc = sim_summary(c->s, true, 0);
	return 200;
}

static int get_devices(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	json_t *list = json_array();

	(void)params;
	(void)body;
	for (int d = 0; d < sim_device_count(c->s); d++)
		json_array_append_new(list, device_json(c->s, d, false));
	*doc = json_pack("{s:o}", "devices", list);
	return 200;
}

static int get_device(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	int dev, r;

	(void)body;
	if ((r = find_dev(c, params[0], doc, &dev)))
		return r;
	*doc = device_json(c->s, dev, true);
	return 200;
}

static int get_counters(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	int dev, r;

	(void)body;
	if ((r = find_dev(c, params[0], doc, &dev)))
		return r;
	*doc = counters_json(c, dev);
	return 200;
}

static int get_config(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	int dev, r;

	(void)body;
	if ((r = find_dev(c, params[0], doc, &dev)))
		return r;
	*doc = config_json(c, dev);
	return 200;
}

static int put_dcqcn(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct rf_err e = { 0 };
	int dev, r;

	if ((r = find_dev(c, params[0], doc, &dev)))
		return r;
	if (sim_device_is_switch(c->s, dev))
		return problem(doc, 404, "NOT_A_HOST", NULL,
			       "%s is a switch: DCQCN runs on hosts' NICs", params[0]);
	if ((r = sim_set_dcqcn(c->s, dev, body, &e)) < 0)
		return from_err(doc, r, &e);
	*doc = sim_get_dcqcn(c->s, dev);
	return 200;
}

static int put_pfc(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct rf_err e = { 0 };
	int dev, port, r;

	if ((r = find_dev(c, params[0], doc, &dev)) || (r = find_port(c, dev, params[1], doc, &port)))
		return r;
	if (!json_is_object(body))
		return problem(doc, 400, "BAD_VALUE", "", "send a JSON object");
	if ((r = sim_set_pfc(c->s, dev, port, body, &e)) < 0)
		return from_err(doc, r, &e);
	*doc = sim_get_pfc(c->s, dev, port);
	add_xoff_threshold(c->s, dev, *doc);
	return 200;
}

static int put_ecn(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct rf_err e = { 0 };
	int dev, port, r;
	uint64_t q;

	if ((r = find_dev(c, params[0], doc, &dev)) || (r = find_port(c, dev, params[1], doc, &port)))
		return r;
	/* one spelling per queue, as rocefabd's API: 03 or +3 is no queue */
	if (str_parse_uint(params[2], 7, &q) < 0)
		return problem(doc, 404, "UNKNOWN_QUEUE", NULL, "queue '%s': queues are 0 to 7",
			       params[2]);
	if (!json_is_object(body))
		return problem(doc, 400, "BAD_VALUE", "", "send a JSON object");
	if ((r = sim_set_ecn(c->s, dev, port, (int)q, body, &e)) < 0)
		return from_err(doc, r, &e);
	*doc = sim_get_ecn(c->s, dev, port, (int)q);
	return 200;
}

static int get_faults(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	(void)params;
	(void)body;
	*doc = json_pack("{s:o}", "faults", sim_faults(c->s));
	return 200;
}

static int post_fault(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct rf_err e = { 0 };
	int id, r;

	(void)params;
	if (!json_is_object(body))
		return problem(doc, 400, "BAD_VALUE", "", "send a fault object");
	if ((r = sim_fault(c->s, body, &id, &e)) < 0)
		return from_err(doc, r, &e);
	*doc = json_pack("{s:i,s:I}", "id", id, "fabric_time_ns", (json_int_t)(sim_now(c->s) / 1000));
	return 201;
}

static int delete_fault(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct rf_err e = { 0 };
	uint64_t id;
	int r;

	(void)body;
	if (str_parse_uint(params[0], 1000000, &id) < 0)
		return problem(doc, 404, "UNKNOWN_FAULT", NULL, "no fault '%s'", params[0]);
	if ((r = sim_fault_clear(c->s, (int)id, &e)) < 0)
		return from_err(doc, r, &e);
	*doc = json_pack("{s:i,s:b}", "id", (int)id, "cleared", 1);
	return 200;
}

/* Probes in runs not collected yet, in all: each keeps a sample (8 bytes) per probe. */
#define PROBES_HELD_MAX (16u << 20)

/* {"probes": [{src, dst, size, label, count, timeout_us}, ...]} -> {"ids": [...]} */
static int post_probes(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	struct sim *s = c->s;
	struct rf_err e = { 0 };
	json_t *list = json_object_get(body, "probes"), *it, *ids = json_array();
	size_t i;

	(void)params;
	if (!json_is_array(list) || !json_array_size(list) || json_array_size(list) > 4096) {
		json_decref(ids);
		return problem(doc, 400, "BAD_VALUE", "/probes", "send {\"probes\": [1 to 4096 probe runs]}");
	}
	/* every run checked before any starts: a request refused starts nothing (runs it left
	 * behind, never collected, filled the 65,536 once; an attacker's review) */
	{
		uint64_t probes = 0, held;
		uint32_t room;

		json_array_foreach(list, i, it) {
			int src = sim_device_find(s, json_string_value(json_object_get(it, "src")) ?: "");
			int dst = sim_device_find(s, json_string_value(json_object_get(it, "dst")) ?: "");
			json_t *size = json_object_get(it, "size"), *label = json_object_get(it, "label");
			json_t *count = json_object_get(it, "count"), *tmo = json_object_get(it, "timeout_us");

			if (src < 0 || dst < 0) {
				json_decref(ids);
				return problem(doc, 404, "UNKNOWN_HOST", NULL, "probe %zu: no such host", i);
			}
			if (src == dst) {
				json_decref(ids);
				return problem(doc, 400, "BAD_VALUE", NULL, "probe %zu: a host does not probe itself",
					       i);
			}
			if ((size && (!json_is_integer(size) || json_integer_value(size) < 1 ||
				      json_integer_value(size) > 1 << 20)) ||
			    (label && (!json_is_integer(label) || json_integer_value(label) < 0 ||
				       json_integer_value(label) > 65535)) ||
			    (count && (!json_is_integer(count) || json_integer_value(count) < 1 ||
				       json_integer_value(count) > 100000)) ||
			    (tmo && (!json_is_number(tmo) || !(json_number_value(tmo) > 0) ||
				     json_number_value(tmo) > 60e6))) {
				json_decref(ids);
				return problem(doc, 400, "BAD_VALUE", NULL,
					       "probe %zu: size 1 B to 1 MiB, label 0 to 65535, count 1 to 100000, "
					       "timeout_us above 0 and at most 60 s", i);
			}
			probes += count ? (uint64_t)json_integer_value(count) : 1;
		}
		sim_probe_room(s, &room, &held);
		if (json_array_size(list) > room || held + probes > PROBES_HELD_MAX) {
			json_decref(ids);
			return problem(doc, 503, "TOO_MANY_PROBES", NULL,
				       "%zu runs of %llu probes do not fit: %llu probes in runs not collected yet "
				       "(at most %u runs and %llu probes): collect them (GET /v1/probes/IDS)",
				       json_array_size(list), (unsigned long long)probes, (unsigned long long)held,
				       65536u, (unsigned long long)PROBES_HELD_MAX);
		}
	}
	json_array_foreach(list, i, it) {
		int src = sim_device_find(s, json_string_value(json_object_get(it, "src")) ?: "");
		int dst = sim_device_find(s, json_string_value(json_object_get(it, "dst")) ?: "");
		json_int_t size = json_object_get(it, "size") ? json_integer_value(json_object_get(it, "size")) : 64;
		json_int_t label = json_integer_value(json_object_get(it, "label"));
		json_int_t count = json_object_get(it, "count") ? json_integer_value(json_object_get(it, "count")) : 1;
		double tmo = json_object_get(it, "timeout_us") ? json_number_value(json_object_get(it, "timeout_us")) : 1000;
		int id;

		id = sim_probe_start(s, src, dst, (uint32_t)size, (uint32_t)label, (uint32_t)count,
				     (int64_t)(tmo * 1e6), &e);
		if (id < 0) {
			json_decref(ids);
			return from_err(doc, id, &e);
		}
		json_array_append_new(ids, json_integer(id));
	}
	*doc = json_pack("{s:o}", "ids", ids);
	return 201;
}

/* GET /v1/probes/1,2,3: the runs' results; done ones are collected (freed).  Empty items are
 * skipped and each id is read as atoi() reads it, as when the list was cut with strtok(). */
static int get_probes(struct simctl *c, const char *const *params, json_t *body, json_t **doc)
{
	json_t *out = json_array();

	(void)body;
	for (const char *t = params[0] + strspn(params[0], ","); *t; t += strspn(t, ",")) {
		int id = atoi(t);
		json_t *res = sim_probe_result(c->s, id);

		json_array_append_new(out, res ? res : json_pack("{s:i,s:b}", "id", id, "unknown", 1));
		t += strcspn(t, ",");
	}
	*doc = json_pack("{s:o}", "results", out);
	return 200;
}

struct ctl_route {
	struct route_pattern rp; /* first: lib/router.h reads the table through it */
	int (*fn)(struct simctl *c, const char *const *params, json_t *body, json_t **doc);
};

static const struct ctl_route routes[] = {
	/* scenario, clock, pace, run figures, agents */
	{ { "GET", "/v1/status" }, get_status },
	/* pace and pause ({"pace": R, "paused": b}) */
	{ { "GET", "/v1/clock" }, get_clock },
	{ { "PUT", "/v1/clock" }, put_clock },
	/* the run's results so far */
	{ { "GET", "/v1/summary" }, get_summary },
	{ { "POST", "/v1/snapshot/mark" }, post_snapshot_mark },
	{ { "GET", "/v1/snapshot" }, get_snapshot },
	/* hosts and switches; one with its ports, peers, link states and speeds */
	{ { "GET", "/v1/devices" }, get_devices },
	{ { "GET", "/v1/devices/{dev}" }, get_device },
	/* every port's counters (registry "sim" names) */
	{ { "GET", "/v1/devices/{dev}/counters" }, get_counters },
	/* DCQCN (hosts), PFC per port, ECN per queue; and changes to them */
	{ { "GET", "/v1/devices/{dev}/config" }, get_config },
	{ { "PUT", "/v1/devices/{dev}/dcqcn" }, put_dcqcn },
	{ { "PUT", "/v1/devices/{dev}/ports/{port}/pfc" }, put_pfc },
	{ { "PUT", "/v1/devices/{dev}/ports/{port}/queues/{q}/ecn" }, put_ecn },
	/* list, inject (the scenario's fault objects), clear */
	{ { "GET", "/v1/faults" }, get_faults },
	{ { "POST", "/v1/faults" }, post_fault },
	{ { "DELETE", "/v1/faults/{id}" }, delete_fault },
	/* latency probes between hosts (pingmesh): start runs, collect results (ID,ID,...) */
	{ { "POST", "/v1/probes" }, post_probes },
	{ { "GET", "/v1/probes/{ids}" }, get_probes },
	{ { NULL, NULL }, NULL },
};

/* The path with empty segments dropped ("//v1/status/" is "/v1/status"): the control API
 * always read paths that way.  NULL when out of memory. */
static char *clean_path(const char *path)
{
	char *out = malloc(strlen(path) + 2), *o = out;

	if (!out)
		return NULL;
	for (const char *p = path; *p;) {
		if (*p == '/') {
			p++;
			continue;
		}
		*o++ = '/';
		while (*p && *p != '/')
			*o++ = *p++;
	}
	*o = '\0';
	return out;
}

int simctl_call(struct simctl *c, const char *method, const char *path, json_t *body,
		json_t **ret_doc)
{
	struct route_match m;
	char *clean;
	int r, status;

	*ret_doc = NULL;
	/* a path may be long: GET /v1/probes/ID,ID,... names a round's runs */
	if (strnlen(path, CTL_PATH_MAX) >= CTL_PATH_MAX)
		return problem(ret_doc, 404, "NOT_FOUND", NULL, "path too long (64 KiB at most)");
	clean = clean_path(path);
	if (!clean)
		return problem(ret_doc, 503, "NO_MEMORY", NULL, "out of memory");
	if (strncmp(clean, "/v1/", 4) != 0) {
		free(clean);
		return problem(ret_doc, 404, "NOT_FOUND", NULL,
			       "no such resource: the control API lives under /v1/");
	}
	/* no limit on a parameter's length: the path's is enough */
	r = router_match(routes, sizeof(routes[0]), method, clean, 0, &m);
	if (r == 0) {
		pthread_mutex_lock(&c->lock);
		status = routes[m.index].fn(c, m.params, body, ret_doc);
		pthread_mutex_unlock(&c->lock);
	} else if (r == -EOPNOTSUPP) {
		status = problem(ret_doc, 405, "METHOD_NOT_ALLOWED", NULL,
				 "%s is not allowed here; use %s", method, m.allow);
	} else if (r == -ENOMEM) {
		status = problem(ret_doc, 503, "NO_MEMORY", NULL, "out of memory");
	} else {
		status = problem(ret_doc, 404, "NOT_FOUND", NULL, "no such resource: see GET /v1/status");
	}
	router_match_fini(&m);
	free(clean);
	return status;
}
