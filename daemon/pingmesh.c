/* Pingmesh: see pingmesh.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/probeops.h"
#include "cc/localize.h"
#include "daemon/pingmesh.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/timeutil.h"

const struct pingmesh_conf pingmesh_defaults = {
	.enabled = true,
	.ops = { "write" },
	.nops = 1,
	.sizes = { 64 },
	.nsizes = 1,
	.count = 10,
	.paths = 2,
	.inter_tor = 2,
	.rotate_s = 30,
	.timeout_us = 1000,
};

static json_t *ops_json(const struct pingmesh_conf *c)
{
	json_t *a = json_array();

	for (unsigned i = 0; i < c->nops; i++)
		json_array_append_new(a, json_string(c->ops[i]));
	return a;
}

static json_t *sizes_json(const struct pingmesh_conf *c)
{
	json_t *a = json_array();

	for (unsigned i = 0; i < c->nsizes; i++)
		json_array_append_new(a, json_integer(c->sizes[i]));
	return a;
}

json_t *pingmesh_conf_json(const struct pingmesh_conf *c)
{
	return json_pack("{s:b,s:o,s:o,s:I,s:I,s:I,s:I,s:f}", "enabled", c->enabled, "ops", ops_json(c),
			 "sizes", sizes_json(c), "count", (json_int_t)c->count, "paths",
			 (json_int_t)c->paths, "inter_tor", (json_int_t)c->inter_tor, "rotate_s",
			 (json_int_t)c->rotate_s, "timeout_us", c->timeout_us);
}

static int bad(struct rf_err *e, const char *field, const char *msg)
{
	return rf_err_set(e, -EINVAL, "BAD_VALUE", field, "%s", msg);
}

/* "ops": a list of 1..PINGMESH_MAX_OPS distinct operations; "op": one (a shorthand). */
static int apply_ops(struct pingmesh_conf *c, const char *k, json_t *v, struct rf_err *e)
{
	bool list = !strcmp(k, "ops");
	size_t n = list ? json_array_size(v) : 1;

	if (list && (!json_is_array(v) || n < 1 || n > PINGMESH_MAX_OPS))
		return bad(e, "/ops", "a list of 1 to 4 operations (" PROBE_OPS_TEXT ")");
	for (size_t i = 0; i < n; i++) {
		json_t *o = list ? json_array_get(v, i) : v;

		if (!probe_op_valid(json_string_value(o)))
			return list ? rf_err_set(e, -EINVAL, "BAD_VALUE", "/ops", "item %zu: " PROBE_OPS_TEXT, i)
				    : bad(e, "/op", PROBE_OPS_TEXT);
		for (size_t q = 0; q < i; q++)
			if (!strcmp(c->ops[q], json_string_value(o)))
				return rf_err_set(e, -EINVAL, "BAD_VALUE", "/ops", "'%s' is listed twice",
						  json_string_value(o));
		snprintf(c->ops[i], sizeof(c->ops[i]), "%s", json_string_value(o));
	}
	c->nops = (unsigned)n;
	return 0;
}

/* "sizes": a list of 1..PINGMESH_MAX_SIZES distinct message sizes; "size": one. */
static int apply_sizes(struct pingmesh_conf *c, const char *k, json_t *v, struct rf_err *e)
{
	bool list = !strcmp(k, "sizes");
	size_t n = list ? json_array_size(v) : 1;

	if (list && (!json_is_array(v) || n < 1 || n > PINGMESH_MAX_SIZES))
		return bad(e, "/sizes", "a list of 1 to 4 message sizes, 8 to 65536 bytes");
	for (size_t i = 0; i < n; i++) {
		json_t *o = list ? json_array_get(v, i) : v;
		json_int_t sz = json_integer_value(o);

		if (!json_is_integer(o) || sz < PROBE_MIN_SIZE || sz > PROBE_MAX_SIZE)
			return list ? rf_err_set(e, -EINVAL, "BAD_VALUE", "/sizes", "item %zu: 8 to 65536 bytes", i)
				    : bad(e, "/size", "8 to 65536 bytes");
		for (size_t q = 0; q < i; q++)
			if (c->sizes[q] == (unsigned)sz)
				return rf_err_set(e, -EINVAL, "BAD_VALUE", "/sizes", "%lld is listed twice",
						  (long long)sz);
		c->sizes[i] = (unsigned)sz;
	}
	c->nsizes = (unsigned)n;
	return 0;
}

int pingmesh_conf_apply(struct pingmesh_conf *out, json_t *ch, struct rf_err *e)
{
	struct pingmesh_conf c = *out;
	const char *k;
	json_t *v;
	int r;

	if (!json_is_object(ch) || !json_object_size(ch))
		return rf_err_set(e, -EINVAL, "NO_CHANGE", NULL, "name at least one setting to change");
	if (json_object_get(ch, "op") && json_object_get(ch, "ops"))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/op", "give ops (a list) or op (one), not both");
	if (json_object_get(ch, "size") && json_object_get(ch, "sizes"))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/size", "give sizes (a list) or size (one), not both");
	json_object_foreach(ch, k, v) {
		json_int_t i = json_integer_value(v);

		if (!strcmp(k, "enabled")) {
			if (!json_is_boolean(v))
				return bad(e, "/enabled", "true or false");
			c.enabled = json_is_true(v);
		} else if (!strcmp(k, "op") || !strcmp(k, "ops")) {
			if ((r = apply_ops(&c, k, v, e)) < 0)
				return r;
		} else if (!strcmp(k, "size") || !strcmp(k, "sizes")) {
			if ((r = apply_sizes(&c, k, v, e)) < 0)
				return r;
		} else if (!strcmp(k, "count")) {
			if (!json_is_integer(v) || i < 1 || i > 1000)
				return bad(e, "/count", "1 to 1000 probes per target and round");
			c.count = (unsigned)i;
		} else if (!strcmp(k, "paths")) {
			if (!json_is_integer(v) || i < 1 || i > 16)
				return bad(e, "/paths", "1 to 16 paths (flow labels) per target");
			c.paths = (unsigned)i;
		} else if (!strcmp(k, "inter_tor")) {
			if (!json_is_integer(v) || i < 0 || i > 1024)
				return bad(e, "/inter_tor", "0 to 1024 hosts under other ToRs per round");
			c.inter_tor = (unsigned)i;
		} else if (!strcmp(k, "rotate_s")) {
			if (!json_is_integer(v) || i < 1 || i > 86400)
				return bad(e, "/rotate_s", "1 to 86400 seconds");
			c.rotate_s = (unsigned)i;
		} else if (!strcmp(k, "timeout_us")) {
			if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1e7)
				return bad(e, "/timeout_us", "more than 0 and at most 10 s");
			c.timeout_us = json_number_value(v);
		} else {
			return rf_err_set(e, -EINVAL, "UNKNOWN_FIELD", NULL,
					  "'%s' is not a pingmesh setting (enabled, ops, sizes, count, paths, "
					  "inter_tor, rotate_s, timeout_us)", k);
		}
	}
	*out = c;
	return 0;
}

static void conf_from_text(const char *text, struct pingmesh_conf *c)
{
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	struct rf_err e = { 0 };

	*c = pingmesh_defaults;
	if (doc && json_object_size(doc))
		pingmesh_conf_apply(c, doc, &e);
	json_decref(doc);
}

int pingmesh_conf_load(struct store_reader *rd, struct pingmesh_conf *ret)
{
	sqlite3_stmt *st = store_reader_stmt(rd, "SELECT value FROM meta WHERE key = 'pingmesh'");
	int rc;

	*ret = pingmesh_defaults;
	if (!st)
		return -ENOMEM;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		conf_from_text((const char *)sqlite3_column_text(st, 0), ret);
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_errno(rc);
}

struct conf_job {
	struct store_job job;
	char *text;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

/* The configuration as the writer thread last read it, for the plans: read again when it is
 * saved (on the writer thread too), at most a second old, and per store. */
static struct {
	const struct store *s;
	int64_t at;
	struct pingmesh_conf c;
} wconf;

static int conf_apply_job(struct store_job *sj, struct store *s)
{
	struct conf_job *j = (struct conf_job *)sj;
	sqlite3_stmt *st = store_stmt(s, "INSERT OR REPLACE INTO meta(key, value) VALUES('pingmesh', ?)");
	int rc;

	wconf.s = NULL;
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, j->text, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

static void conf_done_job(struct store_job *sj, int result)
{
	struct conf_job *j = (struct conf_job *)sj;

	pthread_mutex_lock(&j->lock);
	j->result = result;
	j->done = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

int pingmesh_conf_save(struct store *s, const struct pingmesh_conf *c)
{
	struct conf_job j = { .job = { .apply = conf_apply_job, .done = conf_done_job },
			      .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	json_t *doc = pingmesh_conf_json(c);
	int r;

	j.text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(doc);
	if (!j.text)
		return -ENOMEM;
	if ((r = store_submit(s, &j.job)) < 0) {
		free(j.text);
		return r;
	}
	pthread_mutex_lock(&j.lock);
	while (!j.done)
		pthread_cond_wait(&j.cond, &j.lock);
	pthread_mutex_unlock(&j.lock);
	free(j.text);
	return j.result;
}

/* --- planning (writer thread) ------------------------------------------------------------------- */

struct host_tor {
	char host[65], tor[65];
};

/* The hosts and their ToRs (from the ports' neighbours), re-read every few seconds. */
static struct {
	struct host_tor *v;
	size_t n;
	int64_t at;
} topo;

/* The hosts and their ToRs: each host's smallest LLDP neighbour (for the writer's planning and
 * the readers' matrix alike). */
#define HOST_TORS_SQL                                                                              \
	"SELECT p.agent_id, min(p.peer_system) FROM ports p JOIN agents a ON a.id = p.agent_id "  \
	"WHERE a.role = 'host' AND p.present AND p.peer_system IS NOT NULL "                      \
	"GROUP BY p.agent_id ORDER BY p.agent_id"

static void read_host_tors(sqlite3_stmt *st, struct host_tor **ret, size_t *ret_n)
{
	struct host_tor *v = NULL;
	size_t n = 0, cap = 0;

	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct host_tor *nv = realloc(v, nc * sizeof(*nv));

			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		snprintf(v[n].host, sizeof(v[n].host), "%s", (const char *)sqlite3_column_text(st, 0));
		snprintf(v[n].tor, sizeof(v[n].tor), "%s", (const char *)sqlite3_column_text(st, 1));
		n++;
	}
	sqlite3_reset(st);
	*ret = v;
	*ret_n = n;
}

static void add_unplaced_hosts(void);

static void refresh_topology(struct store *s, int64_t now)
{
	sqlite3_stmt *st;

	if (topo.at && now - topo.at < 5 * NSEC_PER_SEC)
		return;
	if (!(st = store_stmt(s, HOST_TORS_SQL)))
		return;
	free(topo.v);
	read_host_tors(st, &topo.v, &topo.n);
	add_unplaced_hosts();
	topo.at = now;
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Where the hosts' probe servers listen, as their agents said in their last report (writer
 * thread only).  Open addressing on the agent id; never shrinks: a host that stops reporting
 * keeps being probed, and that is how a dead host shows in the matrix. */
static struct {
	struct endpoint {
		char host[65], ep[65];
	} *v;
	size_t cap, n;
} eps;

static struct endpoint *ep_slot(const char *host)
{
	size_t i;

	if (!eps.cap)
		return NULL;
	for (i = (size_t)fnv(host, 0xcbf29ce484222325ULL) & (eps.cap - 1); eps.v[i].host[0];
	     i = (i + 1) & (eps.cap - 1))
		if (!strcmp(eps.v[i].host, host))
			return &eps.v[i];
	return &eps.v[i];
}

static void ep_set(const char *host, const char *ep)
{
	struct endpoint *e;

	if (eps.n * 2 >= eps.cap) {
		size_t oc = eps.cap, nc = oc ? oc * 2 : 256;
		struct endpoint *old = eps.v, *nv = calloc(nc, sizeof(*nv));

		if (!nv)
			return;
		eps.v = nv;
		eps.cap = nc;
		for (size_t i = 0; i < oc; i++)
			if (old[i].host[0])
				*ep_slot(old[i].host) = old[i];
		free(old);
	}
	e = ep_slot(host);
	if (!e->host[0]) {
		snprintf(e->host, sizeof(e->host), "%s", host);
		eps.n++;
	}
	snprintf(e->ep, sizeof(e->ep), "%s", ep);
}

static const char *ep_get(const char *host)
{
	struct endpoint *e = ep_slot(host);

	return e && e->host[0] ? e->ep : NULL;
}

static int host_tor_cmp(const void *a, const void *b)
{
	return strcmp(((const struct host_tor *)a)->host, ((const struct host_tor *)b)->host);
}

static int host_name_cmp(const void *name, const void *ht)
{
	return strcmp(name, ((const struct host_tor *)ht)->host);
}

/* Hosts whose ToR nobody told us (no LLDP) but whose probe servers we know still take part:
 * with an empty ToR, which is nobody's rack (they probe and are probed by the rotating sample,
 * not as rack-mates).  Sorted by name with the rest, so that the sample is stable. */
static void add_unplaced_hosts(void)
{
	struct host_tor *nv;
	size_t extra = 0, n = topo.n;

	for (size_t i = 0; i < eps.cap; i++)
		if (eps.v[i].host[0] && !bsearch(eps.v[i].host, topo.v, topo.n, sizeof(*topo.v), host_name_cmp))
			extra++;
	if (!extra || !(nv = realloc(topo.v, (topo.n + extra) * sizeof(*nv))))
		return;
	topo.v = nv;
	for (size_t i = 0; i < eps.cap; i++)
		if (eps.v[i].host[0] && !bsearch(eps.v[i].host, topo.v, topo.n, sizeof(*topo.v), host_name_cmp)) {
			snprintf(topo.v[n].host, sizeof(topo.v[n].host), "%s", eps.v[i].host);
			topo.v[n++].tor[0] = '\0';
		}
	topo.n = n;
	qsort(topo.v, topo.n, sizeof(*topo.v), host_tor_cmp);
}

/* Rack-mates: the same known ToR. */
static bool same_tor(const char *a, const char *b)
{
	return *a && !strcmp(a, b);
}

static json_t *plan_for(const char *agent, const struct pingmesh_conf *c, int64_t now)
{
	json_t *targets = json_array();
	const char *tor = NULL;
	size_t nother = 0;

	for (size_t i = 0; i < topo.n; i++)
		if (!strcmp(topo.v[i].host, agent))
			tor = topo.v[i].tor;
	if (c->enabled && tor) {
		for (size_t i = 0; i < topo.n; i++) {
			if (!strcmp(topo.v[i].host, agent))
				continue;
			if (same_tor(topo.v[i].tor, tor))
				json_array_append_new(targets, json_string(topo.v[i].host));
			else
				nother++;
		}
		/* a rotating sample of hosts under other ToRs (or none known): the same for a whole
		 * rotation */
		if (nother) {
			uint64_t round = (uint64_t)(now / ((int64_t)c->rotate_s * NSEC_PER_SEC));
			unsigned want = c->inter_tor < nother ? c->inter_tor : (unsigned)nother;
			size_t *picked = calloc(want + 1, sizeof(size_t)), npicked = 0;

			for (unsigned j = 0; picked && npicked < want && j < 64 * want; j++) {
				size_t k = (size_t)(mix(fnv(agent, 0xcbf29ce484222325ULL) ^ (round << 20) ^ j) % nother);
				size_t seen = 0, idx = 0;
				bool dup = false;

				for (size_t i = 0; i < topo.n; i++)
					if (strcmp(topo.v[i].host, agent) && !same_tor(topo.v[i].tor, tor) &&
					    seen++ == k)
						idx = i;
				for (size_t q = 0; q < npicked; q++)
					dup |= picked[q] == idx;
				if (!dup)
					picked[npicked++] = idx;
			}
			for (size_t q = 0; q < npicked; q++)
				json_array_append_new(targets, json_string(topo.v[picked[q]].host));
			free(picked);
		}
	}
	{
		/* real hosts probe where the targets' agents said they listen */
		json_t *ep = NULL, *t, *plan;
		size_t i;

		json_array_foreach(targets, i, t) {
			const char *where = ep_get(json_string_value(t));

			if (where) {
				if (!ep)
					ep = json_object();
				json_object_set_new(ep, json_string_value(t), json_string(where));
			}
		}
		plan = json_pack("{s:o,s:o,s:o,s:I,s:I,s:f}", "targets", targets, "ops", ops_json(c), "sizes",
				 sizes_json(c), "iterations", (json_int_t)c->count, "paths",
				 (json_int_t)c->paths, "timeout_us", c->timeout_us);
		if (ep)
			json_object_set_new(plan, "endpoints", ep);
		return plan;
	}
}

static int store_results(struct store *s, const struct report *rep)
{
	static const char sql[] =
		"INSERT OR REPLACE INTO probe_results(src, dst, label, t_ns, op, size, n, ok, lost, "
		"min_us, p50_us, p99_us, max_us, mean_us, path) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
	json_t *it;
	size_t i;
	int r;

	json_array_foreach(rep->probe_results, i, it) {
		sqlite3_stmt *st = store_stmt(s, sql);
		static const char *const nums[] = { "min_us", "p50_us", "p99_us", "max_us", "mean_us" };
		char *path = json_object_get(it, "path") ? json_dumps(json_object_get(it, "path"), JSON_COMPACT) : NULL;

		if (!st) {
			free(path);
			return -EIO;
		}
		sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, json_string_value(json_object_get(it, "target")), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, json_integer_value(json_object_get(it, "label")));
		sqlite3_bind_int64(st, 4, rep->time_ns);
		sqlite3_bind_text(st, 5, json_string_value(json_object_get(it, "op")), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, json_integer_value(json_object_get(it, "size")));
		sqlite3_bind_int64(st, 7, json_integer_value(json_object_get(it, "n")));
		sqlite3_bind_int64(st, 8, json_integer_value(json_object_get(it, "ok")));
		sqlite3_bind_int64(st, 9, json_integer_value(json_object_get(it, "lost")));
		for (int k = 0; k < 5; k++)
			if (json_is_number(json_object_get(it, nums[k])))
				sqlite3_bind_double(st, 10 + k, json_number_value(json_object_get(it, nums[k])));
		if (path)
			sqlite3_bind_text(st, 15, path, -1, SQLITE_TRANSIENT);
		free(path);
		if ((r = store_step(st)) < 0)
			return r;
	}
	return 0;
}

int pingmesh_on_report(struct store *s, const struct report *rep, int64_t now, json_t *commands)
{
	sqlite3_stmt *st;
	json_t *plan;
	char id[32], *text;
	int r;

	if (rep->probe_results && (r = store_results(s, rep)) < 0)
		return r;
	if (!rep->probe_plan || rep->role != REPORT_ROLE_HOST)
		return 0; /* not an agent that probes */
	if (rep->probe_endpoint && strcmp(ep_get(rep->agent_id) ?: "", rep->probe_endpoint))
		ep_set(rep->agent_id, rep->probe_endpoint);
	if (wconf.s != s || now - wconf.at > NSEC_PER_SEC || now < wconf.at) {
		wconf.c = pingmesh_defaults;
		if ((st = store_stmt(s, "SELECT value FROM meta WHERE key = 'pingmesh'"))) {
			if (sqlite3_step(st) == SQLITE_ROW)
				conf_from_text((const char *)sqlite3_column_text(st, 0), &wconf.c);
			sqlite3_reset(st);
		}
		wconf.s = s;
		wconf.at = now;
	}
	refresh_topology(s, now);
	plan = plan_for(rep->agent_id, &wconf.c, now);
	text = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS);
	snprintf(id, sizeof(id), "p%015" PRIx64, (text ? fnv(text, 0xcbf29ce484222325ULL) : 0) >> 4);
	free(text);
	if (strcmp(rep->probe_plan, id) != 0)
		json_array_append_new(commands, json_pack("{s:i,s:s,s:s,s:s,s:O,s:I}", "schema", 1, "id", id,
							  "target", rep->agent_id, "kind", "probe_plan",
							  "params", plan, "deadline_ns",
							  (json_int_t)(now + 60 * NSEC_PER_SEC)));
	json_decref(plan);
	return 0;
}

/* --- the matrix (readers) ------------------------------------------------------------------------ */

#define CELL_ROUNDS 64

/* One (src, dst, path) over the window: its rounds add up.  Latencies are the medians of the
 * rounds' p50 and p99 (a fault is there round after round; a burst of congestion is not), and
 * the largest round p99. */
struct cell {
	char src[65], dst[65];
	int64_t label, t;
	uint64_t n, ok, lost;
	double p50, p99, max;
	float r50[CELL_ROUNDS], r99[CELL_ROUNDS]; /* (floats: a cell per pair and path, 67k of them at 1,024 hosts) */
	unsigned rounds;
	json_t *path;
	uint64_t path_hash; /* of the text path was parsed from */
};

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static double median(float *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(float), cmp_f);
	return round((double)v[(n - 1) / 2] * 1000) / 1000; /* to the nanosecond, not float noise */
}

/* The window's rows, a cell per (src, dst, label).  They are read through the key's time order
 * and sorted: "+src" keeps the planner from walking the whole table in the pair index's order
 * instead (sqlite 3.40 prefers that for the ORDER BY; bench (g) shows the difference). */
static int load_cells(struct store_reader *rd, int64_t since, const char *op, unsigned size, struct cell **ret,
		      size_t *ret_n)
{
	static const char sql[] =
		"SELECT src, dst, label, t_ns, n, ok, lost, p50_us, p99_us, max_us, path FROM probe_results "
		"WHERE t_ns >= ? AND op = ? AND size = ? ORDER BY +src, dst, label, t_ns";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	struct cell *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_int64(st, 1, since);
	sqlite3_bind_text(st, 2, op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, size);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *src = (const char *)sqlite3_column_text(st, 0);
		const char *dst = (const char *)sqlite3_column_text(st, 1);
		int64_t label = sqlite3_column_int64(st, 2);
		struct cell *c = n ? &v[n - 1] : NULL;

		/* the window's rounds of one (src, dst, path) add up */
		if (!c || strcmp(c->src, src) || strcmp(c->dst, dst) || c->label != label) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct cell *nv = realloc(v, nc * sizeof(*nv));

				if (!nv)
					break;
				v = nv;
				cap = nc;
			}
			c = &v[n++];
			memset(c, 0, sizeof(*c));
			snprintf(c->src, sizeof(c->src), "%s", src);
			snprintf(c->dst, sizeof(c->dst), "%s", dst);
			c->label = label;
		}
		c->t = sqlite3_column_int64(st, 3);
		c->n += (uint64_t)sqlite3_column_int64(st, 4);
		c->ok += (uint64_t)sqlite3_column_int64(st, 5);
		c->lost += (uint64_t)sqlite3_column_int64(st, 6);
		if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
			/* the newest CELL_ROUNDS rounds */
			unsigned k = c->rounds < CELL_ROUNDS ? c->rounds : c->rounds % CELL_ROUNDS;

			c->r50[k] = (float)sqlite3_column_double(st, 7);
			c->r99[k] = (float)sqlite3_column_double(st, 8);
			c->rounds++;
		}
		if (sqlite3_column_double(st, 9) > c->max)
			c->max = sqlite3_column_double(st, 9);
		/* the newest round's path; parsed once per cell and whenever it changes (a round's
		 * path is usually its predecessor's) */
		{
			const char *pt = (const char *)sqlite3_column_text(st, 10);
			uint64_t h = pt ? fnv(pt, 0xcbf29ce484222325ULL) : 0;

			if (!c->path || h != c->path_hash) {
				json_decref(c->path);
				c->path = pt ? json_loads(pt, 0, NULL) : NULL;
				c->path_hash = h;
			}
		}
	}
	sqlite3_reset(st);
	for (size_t i = 0; i < n; i++) {
		unsigned r = v[i].rounds < CELL_ROUNDS ? v[i].rounds : CELL_ROUNDS;

		v[i].p50 = median(v[i].r50, r);
		v[i].p99 = median(v[i].r99, r);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static const char *tor_of(struct host_tor *ht, size_t n, const char *host)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ht[i].host, host))
			return ht[i].tor;
	return NULL;
}

static int load_tors(struct store_reader *rd, struct host_tor **ret, size_t *ret_n)
{
	sqlite3_stmt *st = store_reader_stmt(rd, HOST_TORS_SQL);

	if (!st)
		return -ENOMEM;
	read_host_tors(st, ret, ret_n);
	return 0;
}

static json_t *finding_json(const struct loc_finding *f)
{
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:s}", "kind", loc_kind_name(f->kind), "subject",
			 f->subject, "bad_results", (json_int_t)f->bad, "results", (json_int_t)f->total,
			 "bad_through_subject", (json_int_t)f->bad_through, "through_subject",
			 (json_int_t)f->through, "typical_p99_us", round(f->typical_p99_us * 1000) / 1000,
			 "evidence", f->evidence);
}

/* Loads the window of one op and size, localizes; fills *ret_finding and, when doc is not
 * NULL, the matrix. */
static int analyze(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op, unsigned size,
		   struct loc_finding *ret_finding, json_t **doc)
{
	struct cell *cells = NULL;
	struct host_tor *tors = NULL;
	struct loc_result *lr = NULL;
	size_t n = 0, ntors = 0;
	int r;

	if ((r = load_cells(rd, now - window_ns, op, size, &cells, &n)) < 0 || (r = load_tors(rd, &tors, &ntors)) < 0)
		goto out;
	lr = calloc(n + 1, sizeof(*lr));
	if (!lr) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct loc_result *x = &lr[i];
		json_t *l;
		size_t k;

		x->src = cells[i].src;
		x->dst = cells[i].dst;
		x->src_tor = tor_of(tors, ntors, x->src);
		x->dst_tor = tor_of(tors, ntors, x->dst);
		x->n = cells[i].n;
		x->lost = cells[i].lost;
		x->p99_us = cells[i].p99;
		json_array_foreach(cells[i].path, k, l)
			if (x->npath < LOC_MAX_PATH)
				x->path[x->npath++] = json_string_value(l);
	}
	loc_analyze(lr, n, NULL, ret_finding);
	if (doc) {
		json_t *pairs = json_array(), *hosts = json_array();

		for (size_t i = 0; i < ntors; i++)
			json_array_append_new(hosts, json_pack("{s:s,s:s}", "host", tors[i].host, "tor", tors[i].tor));
		for (size_t i = 0; i < n;) {
			/* one pair: its paths are consecutive */
			size_t j = i;
			uint64_t pn = 0, plost = 0;
			double p50 = 0, p99 = 0;
			bool pbad = false;
			json_t *paths = json_array();

			for (; j < n && !strcmp(cells[j].src, cells[i].src) && !strcmp(cells[j].dst, cells[i].dst); j++) {
				pn += cells[j].n;
				plost += cells[j].lost;
				p50 = cells[j].p50 > p50 ? cells[j].p50 : p50;
				p99 = cells[j].p99 > p99 ? cells[j].p99 : p99;
				pbad |= lr[j].bad;
				json_array_append_new(paths, json_pack("{s:I,s:I,s:I,s:f,s:f,s:b,s:f,s:O}", "label",
								       (json_int_t)cells[j].label, "n", (json_int_t)cells[j].n,
								       "lost", (json_int_t)cells[j].lost, "p50_us",
								       cells[j].p50, "p99_us", cells[j].p99, "bad", lr[j].bad,
								       "max_us", cells[j].max,
								       "path", cells[j].path ? cells[j].path : json_null()));
			}
			json_array_append_new(pairs, json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:b,s:o}", "src",
							       cells[i].src, "dst", cells[i].dst, "n", (json_int_t)pn,
							       "lost", (json_int_t)plost, "loss", pn ? (double)plost / (double)pn : 0.0,
							       "p50_us", p50, "p99_us", p99, "bad", pbad, "paths", paths));
			i = j;
		}
		*doc = json_pack("{s:f,s:s,s:I,s:o,s:o,s:o}", "window_s", (double)window_ns / 1e9, "op", op,
				 "size", (json_int_t)size, "hosts", hosts, "pairs", pairs, "finding",
				 finding_json(ret_finding));
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		json_decref(cells[i].path);
	free(cells);
	free(tors);
	free(lr);
	return r;
}

int pingmesh_matrix(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op,
		    unsigned size, json_t **ret, struct rf_err *e)
{
	struct pingmesh_conf c;
	struct loc_finding f;
	int r;

	if (!op || !size) {
		if ((r = pingmesh_conf_load(rd, &c)) < 0)
			return rf_err_set(e, r, "STORE_ERROR", NULL, "cannot read the pingmesh configuration");
		op = op ?: c.ops[0];
		size = size ?: c.sizes[0];
	}
	if ((r = analyze(rd, now, window_ns, op, size, &f, ret)) < 0)
		return rf_err_set(e, r, "STORE_ERROR", NULL, "cannot read the probe results");
	return 0;
}

int pingmesh_results(struct store_reader *rd, const char *src, const char *dst, const char *op,
		     unsigned size, int64_t from, int64_t to, unsigned limit, json_t **ret,
		     struct rf_err *e)
{
#define RESULTS_SQL(where)                                                                                 \
	"SELECT src, dst, label, t_ns, op, size, n, ok, lost, min_us, p50_us, p99_us, max_us, mean_us, "   \
	"path FROM probe_results WHERE " where " AND t_ns >= ?3 AND t_ns <= ?4 AND (?6 IS NULL OR op = ?6) " \
	"AND (?7 IS NULL OR size = ?7) ORDER BY t_ns DESC LIMIT ?5"
	/* a pair, or a source, through the index by pair; otherwise newest first by the key
	 * (an "?1 IS NULL OR src = ?1" would keep the planner off the index) */
	static const char by_pair[] = RESULTS_SQL("src = ?1 AND dst = ?2");
	static const char by_src[] = RESULTS_SQL("src = ?1 AND (?2 IS NULL OR dst = ?2)");
	static const char by_time[] = RESULTS_SQL("(?2 IS NULL OR dst = ?2)");
#undef RESULTS_SQL
	sqlite3_stmt *st = store_reader_stmt(rd, src && dst ? by_pair : src ? by_src : by_time);
	json_t *items = json_array();
	int rc;

	if (!st)
		return -ENOMEM;
	store_bind_text_or_null(st, 1, src);
	store_bind_text_or_null(st, 2, dst);
	sqlite3_bind_int64(st, 3, from);
	sqlite3_bind_int64(st, 4, to);
	sqlite3_bind_int64(st, 5, limit);
	store_bind_text_or_null(st, 6, op);
	if (size)
		sqlite3_bind_int64(st, 7, size);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char tbuf[40];
		json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:I,s:I,s:I,s:I}", "src",
				      (const char *)sqlite3_column_text(st, 0), "dst",
				      (const char *)sqlite3_column_text(st, 1), "label",
				      (json_int_t)sqlite3_column_int64(st, 2), "time",
				      tu_format_rfc3339(sqlite3_column_int64(st, 3), tbuf, sizeof(tbuf)), "op",
				      (const char *)sqlite3_column_text(st, 4), "size",
				      (json_int_t)sqlite3_column_int64(st, 5), "n",
				      (json_int_t)sqlite3_column_int64(st, 6), "ok",
				      (json_int_t)sqlite3_column_int64(st, 7), "lost",
				      (json_int_t)sqlite3_column_int64(st, 8));
		static const char *const nums[] = { "min_us", "p50_us", "p99_us", "max_us", "mean_us" };

		for (int k = 0; k < 5; k++)
			json_object_set_new(o, nums[k], sqlite3_column_type(st, 9 + k) == SQLITE_NULL
								? json_null()
								: json_real(sqlite3_column_double(st, 9 + k)));
		json_object_set_new(o, "path", sqlite3_column_type(st, 14) == SQLITE_NULL
						       ? json_null()
						       : json_loads((const char *)sqlite3_column_text(st, 14), 0, NULL));
		json_array_append_new(items, o);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(items);
		return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "cannot read the probe results");
	}
	*ret = json_pack("{s:o,s:I}", "items", items, "count", (json_int_t)json_array_size(items));
	return 0;
}

/* --- alerts ---------------------------------------------------------------------------------------- */

struct alert_job {
	struct store_job job;
	struct loc_finding f;
	int64_t now;
};

static int alert_apply(struct store_job *sj, struct store *s)
{
	struct alert_job *j = (struct alert_job *)sj;
	const char *kind = loc_kind_name(j->f.kind);
	sqlite3_stmt *st;
	int r;

	/* whatever is not the current finding is over */
	if (!(st = store_stmt(s, "UPDATE alerts SET state = 'cleared', cleared_ns = ?1 WHERE state = 'active' "
				 "AND NOT (kind = ?2 AND subject = ?3)")))
		return -EIO;
	sqlite3_bind_int64(st, 1, j->now);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, j->f.subject, -1, SQLITE_STATIC);
	if ((r = store_step(st)) < 0 || j->f.kind == LOC_NONE)
		return r;
	if (!(st = store_stmt(s, "UPDATE alerts SET last_ns = ?1, evidence = ?2 WHERE state = 'active' AND kind = ?3 "
				 "AND subject = ?4")))
		return -EIO;
	sqlite3_bind_int64(st, 1, j->now);
	sqlite3_bind_text(st, 2, j->f.evidence, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, j->f.subject, -1, SQLITE_STATIC);
	if ((r = store_step(st)) < 0)
		return r;
	if (sqlite3_changes(store_writer_db(s)) > 0)
		return 0;
	if (!(st = store_stmt(s, "INSERT INTO alerts(kind, subject, state, first_ns, last_ns, evidence) "
				 "VALUES(?,?,'active',?,?,?)")))
		return -EIO;
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, j->f.subject, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, j->now);
	sqlite3_bind_int64(st, 4, j->now);
	sqlite3_bind_text(st, 5, j->f.evidence, -1, SQLITE_STATIC);
	if ((r = store_step(st)) == 0)
		log_notice("pingmesh", "alert: %s %s: %s", kind, j->f.subject, j->f.evidence);
	return r;
}

static void alert_done(struct store_job *sj, int result)
{
	(void)result;
	free(sj);
}

/* --- /metrics: the matrix of the last alerts update ---------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	char *text;
} prom = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A label value as the exposition format wants it: backslash, quote and newline escaped. */
static void label_value(struct buf *b, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			buf_printf(b, "\\%c", *v);
		else if (*v == '\n')
			buf_puts(b, "\\n");
		else
			buf_append(b, v, 1);
	}
}

static void render_pairs(struct buf *b, json_t *pairs, const char *name, const char *help,
			 const char *key, double scale)
{
	size_t i;
	json_t *p;

	buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	json_array_foreach(pairs, i, p) {
		/* no latency where nothing came back (a dead host): its loss says it */
		if (strcmp(key, "loss") && json_integer_value(json_object_get(p, "lost")) >=
						   json_integer_value(json_object_get(p, "n")))
			continue;
		buf_printf(b, "%s{src=\"", name);
		label_value(b, json_string_value(json_object_get(p, "src")));
		buf_puts(b, "\",dst=\"");
		label_value(b, json_string_value(json_object_get(p, "dst")));
		buf_printf(b, "\"} %.9g\n", json_number_value(json_object_get(p, key)) * scale);
	}
}

/* The finding, and with a matrix document its pairs, as Prometheus text. */
static char *render_matrix(json_t *doc, const struct loc_finding *f, int64_t window_ns)
{
	json_t *pairs = json_object_get(doc, "pairs");
	char help[200];
	struct buf b;

	buf_init(&b);
	if (doc) {
		snprintf(help, sizeof(help), "Pingmesh, last %.0f s: the median of the rounds' p50 latency "
			 "per source and destination host (its worst path).", (double)window_ns / 1e9);
		render_pairs(&b, pairs, "rocefab_probe_p50_seconds", help, "p50_us", 1e-6);
		snprintf(help, sizeof(help), "Pingmesh, last %.0f s: the median of the rounds' p99 latency "
			 "per source and destination host (its worst path).", (double)window_ns / 1e9);
		render_pairs(&b, pairs, "rocefab_probe_p99_seconds", help, "p99_us", 1e-6);
		snprintf(help, sizeof(help), "Pingmesh, last %.0f s: probes lost of probes sent, per source "
			 "and destination host.", (double)window_ns / 1e9);
		render_pairs(&b, pairs, "rocefab_probe_loss_ratio", help, "loss", 1);
	}
	buf_puts(&b, "# HELP rocefab_pingmesh_finding What the localization of the probe matrix names "
		     "(kind none, host, link, tor or fabric; 1 for the current finding).\n"
		     "# TYPE rocefab_pingmesh_finding gauge\nrocefab_pingmesh_finding{kind=\"");
	label_value(&b, loc_kind_name(f->kind));
	buf_puts(&b, "\",subject=\"");
	label_value(&b, f->subject);
	buf_puts(&b, "\"} 1\n");
	if (b.oom) {
		buf_fini(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

void pingmesh_render_metrics(struct buf *out)
{
	pthread_mutex_lock(&prom.lock);
	if (prom.text)
		buf_puts(out, prom.text);
	pthread_mutex_unlock(&prom.lock);
}

int pingmesh_alerts_update(struct store *s, int64_t now, int64_t window_ns, bool pairs)
{
	struct store_reader *rd = store_reader_get(s);
	struct pingmesh_conf c;
	struct alert_job *j;
	json_t *doc = NULL;
	int r;

	if (!rd)
		return -EAGAIN;
	j = calloc(1, sizeof(*j));
	if (!j) {
		store_reader_put(s, rd);
		return -ENOMEM;
	}
	/* the primary op and size; the matrix document only for the pairs in /metrics */
	if ((r = pingmesh_conf_load(rd, &c)) == 0)
		r = analyze(rd, now, window_ns, c.ops[0], c.sizes[0], &j->f, pairs ? &doc : NULL);
	store_reader_put(s, rd);
	if (r < 0) {
		free(j);
		return r;
	}
	{
		/* what /metrics shows until the next update */
		char *text = render_matrix(doc, &j->f, window_ns);

		json_decref(doc);
		if (text) {
			pthread_mutex_lock(&prom.lock);
			free(prom.text);
			prom.text = text;
			pthread_mutex_unlock(&prom.lock);
		}
	}
	j->now = now;
	j->job.apply = alert_apply;
	j->job.done = alert_done;
	if ((r = store_submit(s, &j->job)) < 0)
		free(j);
	return r;
}

int pingmesh_alerts(struct store_reader *rd, const char *state, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT id, kind, subject, state, first_ns, last_ns, cleared_ns, evidence "
				  "FROM alerts WHERE (?1 IS NULL OR state = ?1) ORDER BY id DESC LIMIT 200";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *items = json_array();
	int rc;

	if (!st)
		return -ENOMEM;
	store_bind_text_or_null(st, 1, state);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char a[40], b[40], c[40];

		json_array_append_new(
			items, json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:o,s:s}", "id", (json_int_t)sqlite3_column_int64(st, 0),
					 "kind", (const char *)sqlite3_column_text(st, 1), "subject",
					 (const char *)sqlite3_column_text(st, 2), "state",
					 (const char *)sqlite3_column_text(st, 3), "first_seen",
					 tu_format_rfc3339(sqlite3_column_int64(st, 4), a, sizeof(a)), "last_seen",
					 tu_format_rfc3339(sqlite3_column_int64(st, 5), b, sizeof(b)), "cleared",
					 sqlite3_column_type(st, 6) == SQLITE_NULL
						 ? json_null()
						 : json_string(tu_format_rfc3339(sqlite3_column_int64(st, 6), c, sizeof(c))),
					 "evidence", (const char *)sqlite3_column_text(st, 7) ?: ""));
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(items);
		return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "cannot read the alerts");
	}
	*ret = json_pack("{s:o,s:I}", "items", items, "count", (json_int_t)json_array_size(items));
	return 0;
}
