/* libFuzzer target: what rocefabd's REST API does with the values of a request (query strings
 * and bodies), on a real store (sqlite in a temporary directory) that holds a host's reports.
 *
 * The query strings are taken apart by libmicrohttpd, and the handlers (api/h_*.c) check their
 * values inline before calling the daemon's views; the handlers need a live MHD connection, so
 * this target does with each value what the handler does (the same calls, in the same order:
 * a change to a handler's checks must be made here too) and calls the same views:
 *   0  GET /ports/{key}/counters ?names ?from ?to ?step   (v_port_counters: tu_parse_time,
 *      tu_parse_duration, views_port_counters)
 *   1  GET /probes/matrix ?window ?op ?size ?paths        (tu_parse_duration, probe_op_valid,
 *      pingmesh_matrix)
 *   2  GET /probes/results ?from ?to ?limit ?op ?size ?src ?dst   (pingmesh_results)
 *   3  GET /changes ?agent ?kind ?state ?batch ?limit     (change_kind_parse, changes_list)
 *   4  GET /ports ?host ?device ?state, GET /hosts/{id}, GET /agents/{id}   (views_ports, ...)
 *   5  GET /alerts ?state                                 (alerts_list)
 *   6  PUT /probes/config: the JSON body                  (pingmesh_conf_apply)
 *   7  PUT .../dcqcn, .../ecn, .../pfc: a change's body against a port's configuration as its
 *      agent reported it (lib/validate.c, what changes.c calls for every target)
 *   8  GET /events with a Last-Event-ID header              (events_parse_id, events_since on a
 *      ring that has wrapped)
 * An input is the selector byte, a byte saying which values are present (bit i: value i), and
 * the values separated by NUL bytes (absent ones are skipped over, as "?a=&b" gives "" for a).
 *
 * Invariants: a refusal names a code; a view's document has "items" or what the endpoint
 * returns; an accepted pingmesh configuration reads back the same; a change that validates
 * validates again once normalized, to the same values; an event id that parses is one the ring
 * can resume from (never "stale" when read), and every id the ring wrote parses back to itself. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/alerts.h"
#include "daemon/changes.h"
#include "daemon/events.h"
#include "daemon/ingest.h"
#include "daemon/pingmesh.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "daemon/views.h"
#include "lib/log.h"
#include "lib/probeops.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "lib/validate.h"
#include "tests/fuzz/fuzz-tmpdir.h"

#define T0 ((int64_t)1764514195 * NSEC_PER_SEC)
#define NOW (T0 + 10 * NSEC_PER_SEC)
#define MAX_POINTS 10000 /* api/h_inventory.c */
#define NVALUES 8

static struct reg *reg;
static struct store *st;
static struct ingest *ing;
static struct pingmesh *pm;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
};

static void done_cb(void *ctx, const struct ingest_result *res)
{
	struct waiter *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->status = res->status;
	json_decref(res->commands);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Posts tests/data/reports/good/NAME as of time t, as its agent would. */
static void post(const char *name, int seq, int64_t t)
{
	struct waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rf_err e = { 0 };
	struct report *r = NULL;
	char path[128], *text;
	json_t *doc, *s;
	size_t len, i;

	snprintf(path, sizeof(path), "tests/data/reports/good/%s", name);
	text = str_slurp(path, &len);
	doc = text ? json_loadb(text, len, 0, NULL) : NULL;
	if (!doc)
		abort();
	free(text);
	json_object_set_new(doc, "seq", json_integer(seq));
	json_object_set_new(doc, "time_ns", json_integer(t));
	json_array_foreach(json_object_get(doc, "samples"), i, s)
		json_object_set_new(s, "t_ns", json_integer(t - 1000000 * (json_int_t)i));
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (report_parse(text, strlen(text), reg, &r, &e) < 0 || ingest_submit(ing, r, done_cb, &w) < 0) {
		fprintf(stderr, "%s: %s %s\n", name, e.code, e.msg);
		abort();
	}
	free(text);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	if (w.status)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct store_conf c = { .queue_max = 64, .batch_max = 8, .readers = 2 };
	struct pingmesh_opts po = { .window_ns = 30 * NSEC_PER_SEC };
	struct rf_err e = { 0 };
	char db[128];

	(void)argc;
	(void)argv;
	log_set_level(LOG_ERR);
	fuzz_dir_make("query");
	snprintf(db, sizeof(db), "%s/t.db", fuzz_dir);
	c.path = db;
	if (reg_load_builtin(&reg, &e) < 0 || store_open(&c, true, &st, &e) < 0 ||
	    ingest_new(st, reg, &ing, &e) < 0 || pingmesh_new(st, &po, &pm) < 0 ||
	    ingest_add_hook(ing, changes_on_report, NULL) < 0 ||
	    ingest_add_hook(ing, pingmesh_on_report, pm) < 0)
		abort();
	/* two hosts, three reports each: counters with deltas, configuration */
	for (int k = 0; k < 3; k++) {
		post("gpu-a1.json", k + 1, T0 + k * NSEC_PER_SEC);
		post("stor-b1.json", k + 1, T0 + k * NSEC_PER_SEC);
		post("switch-config-results.json", k + 1, T0 + k * NSEC_PER_SEC);
	}
	store_flush(st);
	return 0;
}

/* GET /ports/{key}/counters: v_port_counters (api/h_inventory.c) */
static int port_counters(struct store_reader *rd, const char *const *v, json_t **ret, struct rf_err *e)
{
	const struct views_opts o = { .now_ns = NOW, .stale_intervals = 3 };
	struct counter_query q = { .names = v[1], .max_points = MAX_POINTS };
	const char *from = v[2], *to = v[3], *step = v[4];

	q.to_ns = o.now_ns;
	if (to && tu_parse_time(to, o.now_ns, &q.to_ns) < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "to", "not a time");
	q.from_ns = q.to_ns - 5 * 60 * NSEC_PER_SEC;
	if (from && tu_parse_time(from, o.now_ns, &q.from_ns) < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "from", "not a time");
	q.to_newest = !from && !to;
	if (step && tu_parse_duration(step, &q.step_ns) < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "step", "not a duration");
	return views_port_counters(rd, ing, v[0] ? v[0] : "gpu-a1:mlx5_0:1", &q, ret, e);
}

/* ?op= and ?size= (api/h_probes.c op_size_args) */
static int op_size(const char *op, const char *sz, unsigned *size, struct rf_err *e)
{
	*size = 0;
	if (op && !probe_op_valid(op))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "op", "not an op");
	if (sz) {
		char *end;
		long v = strtol(sz, &end, 10);

		if (*end || end == sz || v < PROBE_MIN_SIZE || v > PROBE_MAX_SIZE)
			return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "size", "8 to 65536 bytes");
		*size = (unsigned)v;
	}
	return 0;
}

/* GET /probes/matrix: h_probes_matrix */
static int probes_matrix(struct store_reader *rd, const char *const *v, json_t **ret, struct rf_err *e)
{
	int64_t window = 30 * NSEC_PER_SEC;
	unsigned size;
	int r;

	if (v[0] && (tu_parse_duration(v[0], &window) < 0 || window < NSEC_PER_SEC ||
		     window > 86400 * NSEC_PER_SEC))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "window", "1s to 1d");
	bool paths = true;

	if ((r = op_size(v[1], v[2], &size, e)) < 0)
		return r;
	if (v[3] && strcmp(v[3], "true") && strcmp(v[3], "false"))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "paths", "true or false");
	if (v[3])
		paths = !strcmp(v[3], "true");
	return pingmesh_matrix(rd, NOW, window, v[1], size, paths, ret, e);
}

/* GET /probes/results: h_probes_results */
static int probes_results(struct store_reader *rd, const char *const *v, json_t **ret, struct rf_err *e)
{
	int64_t t0 = NOW - 5 * 60 * NSEC_PER_SEC, t1 = NOW;
	long lim = 1000;
	unsigned size;
	int r;

	if ((v[0] && tu_parse_time(v[0], NOW, &t0) < 0) || (v[1] && tu_parse_time(v[1], NOW, &t1) < 0))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "from", "a time");
	if (v[2]) {
		char *end;

		lim = strtol(v[2], &end, 10);
		if (*end || lim < 1 || lim > 100000)
			return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "limit", "1 to 100000");
	}
	if ((r = op_size(v[3], v[4], &size, e)) < 0)
		return r;
	return pingmesh_results(rd, v[5], v[6], v[3], size, t0, t1, (unsigned)lim, ret, e);
}

/* GET /changes: h_changes (api/h_config.c) */
static int changes(struct store_reader *rd, const char *const *v, json_t **ret, struct rf_err *e)
{
	static const char *const states[] = { "pending", "sent", "applied", "failed", "timed_out", NULL };
	struct changes_filter f = { .agent = v[0], .kind = v[1], .state = v[2], .queue = -2, .limit = 100 };
	enum change_kind k;
	char *end;

	if (f.kind && change_kind_parse(f.kind, &k) < 0)
		return rf_err_set(e, -EINVAL, "BAD_QUERY", "kind", "dcqcn, ecn or pfc");
	if (f.state) {
		bool ok = false;

		for (int i = 0; states[i]; i++)
			ok |= !strcmp(states[i], f.state);
		if (!ok)
			return rf_err_set(e, -EINVAL, "BAD_QUERY", "state", "a state");
	}
	if (v[3] && ((f.batch = strtoll(v[3], &end, 10)) <= 0 || *end))
		return rf_err_set(e, -EINVAL, "BAD_QUERY", "batch", "a change id");
	if (v[4]) {
		long l = strtol(v[4], &end, 10);

		if (*end || l < 1 || l > CHANGES_MAX_TARGETS)
			return rf_err_set(e, -EINVAL, "BAD_QUERY", "limit", "1 to max");
		f.limit = (unsigned)l;
	}
	return changes_list(rd, &f, ret, e);
}

/* GET /ports (v_ports), /hosts/{id} (v_host), /agents/{id} (v_agent), /ports/{key} (v_port) */
static int inventory(struct store_reader *rd, const char *const *v, json_t **ret, struct rf_err *e)
{
	const struct views_opts o = { .now_ns = NOW, .stale_intervals = 3 };
	struct port_filter f = { .host = v[0], .device = v[1], .state = v[2] };
	json_t *doc = NULL;
	int r;

	if (v[3] && (r = views_host(rd, &o, v[3], &doc, e)) == 0)
		json_decref(doc);
	doc = NULL;
	if (v[4] && (r = views_agents(rd, &o, v[4], &doc, e)) == 0)
		json_decref(doc);
	doc = NULL;
	if (v[5] && (r = views_port(rd, &o, ing, v[5], &doc, e)) == 0)
		json_decref(doc);
	*e = (struct rf_err){ 0 };
	return views_ports(rd, &o, &f, ret, e);
}

static void pingmesh_config(const uint8_t *data, size_t size)
{
	struct pingmesh_conf c = pingmesh_defaults, again = pingmesh_defaults;
	struct rf_err e = { 0 };
	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL), *j1, *j2;

	if (!body)
		return; /* 400 BAD_JSON before */
	if (pingmesh_conf_apply(&c, body, &e) < 0) {
		if (!e.code[0])
			abort();
		json_decref(body);
		return;
	}
	j1 = pingmesh_conf_json(&c);
	if (pingmesh_conf_apply(&again, j1, &e) < 0)
		abort(); /* what GET returns, PUT takes */
	j2 = pingmesh_conf_json(&again);
	if (!json_equal(j1, j2))
		abort();
	json_decref(j1);
	json_decref(j2);
	json_decref(body);
}

/* What the store keeps of a configuration entry (daemon/changes.c store_config): the entry
 * without device, port and queue. */
static json_t *stored(json_t *entry)
{
	json_t *v = json_deep_copy(entry);

	json_object_del(v, "device");
	json_object_del(v, "port");
	json_object_del(v, "queue");
	return v;
}

static json_t *entry(json_t *values, json_int_t queue)
{
	json_t *o = json_is_object(values) ? json_deep_copy(values) : json_object();

	json_object_set_new(o, "device", json_string("d0"));
	json_object_set_new(o, "port", json_string("1"));
	if (queue >= 0)
		json_object_set_new(o, "queue", json_integer(queue));
	return o;
}

/* [kind, params, current, the port's PFC (ecn) or its ECN entries (pfc), n]: a change's body
 * against a port's configuration as an agent reported it.  That configuration passes
 * report_parse first, as it did to be stored (a value rocefabd never stores is no input), and
 * is taken back as changes.c target_fill() reads it. */
static void validate(const uint8_t *data, size_t size)
{
	static const char skel[] = "{\"schema\":1,\"agent\":{\"id\":\"h\",\"role\":\"switch\","
				   "\"boot_id\":\"b\",\"version\":\"v\",\"backend\":\"sim\"},\"seq\":1,"
				   "\"time_ns\":1764514195000000000,\"interval_ms\":1000,"
				   "\"inventory\":{\"devices\":[]},\"samples\":[]}";
	json_t *a = json_loadb((const char *)data, size, 0, NULL), *doc = json_loads(skel, 0, NULL);
	json_t *params = json_deep_copy(json_array_get(a, 1)), *cfg = json_pack("{s:[],s:[],s:[]}",
		"dcqcn", "ecn", "pfc");
	json_t *cur = NULL, *other = NULL, *copy, *it;
	json_int_t n = json_integer_value(json_array_get(a, 4));
	int kind = (int)(json_integer_value(json_array_get(a, 0)) & 3) % 3;
	struct rf_err e = { 0 };
	struct report *rep = NULL;
	char *text;
	size_t i;
	int r;

	if (!a || !params || !doc || !cfg)
		goto out;
	json_array_append_new(json_object_get(cfg, kind == 0 ? "dcqcn" : kind == 1 ? "ecn" : "pfc"),
			      entry(json_array_get(a, 2), kind == 1 ? (n & 7) : -1));
	if (kind == 1 && json_is_object(json_array_get(a, 3)))
		json_array_append_new(json_object_get(cfg, "pfc"), entry(json_array_get(a, 3), -1));
	if (kind == 2)
		json_array_foreach(json_array_get(a, 3), i, it)
			json_array_append_new(json_object_get(cfg, "ecn"),
					      entry(it, json_integer_value(json_object_get(it, "queue"))));
	json_object_set(doc, "config", cfg);
	text = json_dumps(doc, JSON_COMPACT);
	r = text ? report_parse(text, strlen(text), reg, &rep, &e) : -ENOMEM;
	free(text);
	if (r < 0)
		goto out; /* never stored */
	report_free(rep);
	cur = stored(json_array_get(json_object_get(cfg, kind == 0 ? "dcqcn" : kind == 1 ? "ecn" : "pfc"), 0));
	if (kind == 1 && json_array_size(json_object_get(cfg, "pfc")))
		other = stored(json_array_get(json_object_get(cfg, "pfc"), 0));
	if (kind == 2) {
		other = json_array();
		json_array_foreach(json_object_get(cfg, "ecn"), i, it) {
			json_t *v = stored(it);

			json_object_set(v, "queue", json_object_get(it, "queue"));
			json_array_append_new(other, v);
		}
	}
	e = (struct rf_err){ 0 };
#define RUN(p)                                                                                      \
	(kind == 0   ? validate_dcqcn(p, cur, n < 0 ? 0 : n, &e)                                    \
	 : kind == 1 ? validate_ecn(p, cur, other, (int)(n & 7), &e)                                 \
		     : validate_pfc(p, cur, other, n & 1, &e))
	r = RUN(params);
	if (r < 0) {
		if (!e.code[0])
			abort();
	} else {
		/* normalized ("400KB" is 409600 bytes): a fixed point */
		copy = json_deep_copy(params);
		if (RUN(copy) < 0 || !json_equal(copy, params))
			abort();
		json_decref(copy);
	}
#undef RUN
out:
	json_decref(cur);
	json_decref(other);
	json_decref(cfg);
	json_decref(doc);
	json_decref(params);
	json_decref(a);
}

/* GET /events: a Last-Event-ID against a ring of 16 that has wrapped (events 1..40 published,
 * 25..40 kept).  An input starting with '@' stands for this run's epoch and a '-' (the fuzzer
 * could not guess it: it is the time the ring was made). */
static void last_event_id(const uint8_t *data, size_t size)
{
	static struct events *ev;
	static char epoch[32];
	char *id = malloc(size + sizeof(epoch) + 1);
	struct buf out;
	uint64_t seq = 0, last = 0;
	int r;

	if (!id)
		return;
	if (!ev) {
		if (events_new(16, &ev) < 0)
			abort();
		for (int i = 0; i < 40; i++)
			events_publish(ev, "change", json_pack("{s:i}", "id", i));
		buf_init(&out);
		if (events_since(ev, 39, 4096, &out, &last) != 1 || strncmp(out.data, "id: ", 4))
			abort();
		snprintf(epoch, sizeof(epoch), "%.*s", (int)strcspn(out.data + 4, "-") + 1, out.data + 4);
		buf_fini(&out);
	}
	if (size && data[0] == '@') {
		size_t n = strlen(epoch);

		memcpy(id, epoch, n);
		memcpy(id + n, data + 1, size - 1);
		id[n + size - 1] = '\0';
	} else {
		memcpy(id, data, size);
		id[size] = '\0';
	}
	buf_init(&out);
	if (events_parse_id(ev, id, &seq) == 0) {
		if (seq < 24 || seq > 40)
			abort();
		r = events_since(ev, seq, 1 << 20, &out, &last);
		if (r < 0 || (r == 1) != (seq < 40) || (r == 1 && last != 40))
			abort();
		/* what the ring wrote for the next event is an id that parses back to it */
		if (r == 1) {
			char *p = strstr(out.data, "id: "), *nl = p ? strchr(p, '\n') : NULL;
			uint64_t back = 0;

			if (!p || !nl)
				abort();
			*nl = '\0';
			if (events_parse_id(ev, p + 4, &back) < 0 || back != seq + 1)
				abort();
		}
	}
	buf_fini(&out);
	free(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int (*const views[])(struct store_reader *, const char *const *, json_t **, struct rf_err *) = {
		port_counters, probes_matrix, probes_results, changes, inventory,
	};
	const char *v[NVALUES] = { 0 };
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	char *text;
	size_t off = 0;
	int sel, r;

	if (size < 2)
		return 0;
	sel = data[0] % 9;
	if (sel == 8) {
		last_event_id(data + 2, size - 2);
		return 0;
	}
	if (sel == 6) {
		pingmesh_config(data + 2, size - 2);
		return 0;
	}
	if (sel == 7) {
		validate(data + 2, size - 2);
		return 0;
	}
	text = malloc(size - 1);
	if (!text)
		return 0;
	memcpy(text, data + 2, size - 2);
	text[size - 2] = '\0';
	for (int i = 0; i < NVALUES; i++) {
		const char *val = off <= size - 2 ? text + off : "";

		if (off <= size - 2)
			off += strlen(val) + 1;
		if (data[1] & (1u << i))
			v[i] = val;
	}
	rd = store_reader_get(st);
	if (!rd)
		abort();
	r = sel == 5 ? alerts_list(rd, v[0], &doc, &e) : views[sel](rd, v, &doc, &e);
	store_reader_put(st, rd);
	if (r < 0) {
		if (!e.code[0] && r != -ENOMEM)
			abort(); /* a refusal names a code (the API's problem document) */
	} else if (!json_is_object(doc)) {
		abort();
	}
	json_decref(doc);
	free(text);
	return 0;
}
