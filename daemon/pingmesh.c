/* Pingmesh, the planning side and the object: see pingmesh.h.  The plans are made on the
 * store's writer thread (pingmesh_on_report); the localization runs as a scheduler pass. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/alerts.h"
#include "daemon/pingmesh-internal.h"
#include "daemon/pingmesh.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/vec.h"
#include "lib/log.h"
#include "lib/probeops.h"
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

/* The settings of ch laid over c, each checked alone. */
static int conf_fields(struct pingmesh_conf *c, json_t *ch, struct rf_err *e)
{
	const char *k;
	json_t *v;
	int r;

	json_object_foreach(ch, k, v) {
		json_int_t i = json_integer_value(v);

		if (!strcmp(k, "enabled")) {
			if (!json_is_boolean(v))
				return bad(e, "/enabled", "true or false");
			c->enabled = json_is_true(v);
		} else if (!strcmp(k, "op") || !strcmp(k, "ops")) {
			if ((r = apply_ops(c, k, v, e)) < 0)
				return r;
		} else if (!strcmp(k, "size") || !strcmp(k, "sizes")) {
			if ((r = apply_sizes(c, k, v, e)) < 0)
				return r;
		} else if (!strcmp(k, "count")) {
			if (!json_is_integer(v) || i < 1 || i > 1000)
				return bad(e, "/count", "1 to 1000 probes per target and round");
			c->count = (unsigned)i;
		} else if (!strcmp(k, "paths")) {
			if (!json_is_integer(v) || i < 1 || i > 16)
				return bad(e, "/paths", "1 to 16 paths (flow labels) per target");
			c->paths = (unsigned)i;
		} else if (!strcmp(k, "inter_tor")) {
			if (!json_is_integer(v) || i < 0 || i > 1024)
				return bad(e, "/inter_tor", "0 to 1024 hosts under other ToRs per round");
			c->inter_tor = (unsigned)i;
		} else if (!strcmp(k, "rotate_s")) {
			if (!json_is_integer(v) || i < 1 || i > 86400)
				return bad(e, "/rotate_s", "1 to 86400 seconds");
			c->rotate_s = (unsigned)i;
		} else if (!strcmp(k, "timeout_us")) {
			if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1e7)
				return bad(e, "/timeout_us", "more than 0 and at most 10 s");
			c->timeout_us = json_number_value(v);
		} else {
			struct js_path path = { .len = 0 };

			js_path_push_key(&path, k);
			return rf_err_set(e, -EINVAL, "UNKNOWN_FIELD", js_path_str(&path),
					  "'%s' is not a pingmesh setting (enabled, ops, sizes, count, paths, "
					  "inter_tor, rotate_s, timeout_us)", k);
		}
	}
	return 0;
}

/* The largest size every op of c carries (each op goes at every size: ud fits in one MTU, udp in
 * 65000 bytes), and the op that limits it (NULL: none does). */
static unsigned size_limit(const struct pingmesh_conf *c, const char **ret_op)
{
	unsigned lim = PROBE_MAX_SIZE;

	*ret_op = NULL;
	for (unsigned i = 0; i < c->nops; i++) {
		enum probe_op op;

		if (probe_op_parse(c->ops[i], &op) == 0 && probe_op_max_size(op) < lim) {
			lim = probe_op_max_size(op);
			*ret_op = c->ops[i];
		}
	}
	return lim;
}

int pingmesh_conf_apply(struct pingmesh_conf *out, json_t *ch, struct rf_err *e)
{
	struct pingmesh_conf c = *out;
	const char *op;
	unsigned lim;
	int r;

	if (!json_is_object(ch) || !json_object_size(ch))
		return rf_err_set(e, -EINVAL, "NO_CHANGE", NULL, "name at least one setting to change");
	if (json_object_get(ch, "op") && json_object_get(ch, "ops"))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/op", "give ops (a list) or op (one), not both");
	if (json_object_get(ch, "size") && json_object_get(ch, "sizes"))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/size", "give sizes (a list) or size (one), not both");
	if ((r = conf_fields(&c, ch, e)) < 0)
		return r;
	/* an op that cannot carry one of the sizes would fail every round on the hosts, read as
	 * loss: refused at the member the request set (the sizes, or else the ops) */
	lim = size_limit(&c, &op);
	for (unsigned z = 0; z < c.nsizes; z++)
		if (c.sizes[z] > lim)
			return rf_err_set(e, -EINVAL, "BAD_VALUE",
					  json_object_get(ch, "sizes") ? "/sizes"
					  : json_object_get(ch, "size") ? "/size"
					  : json_object_get(ch, "ops")  ? "/ops"
									: "/op",
					  "%s probes carry at most %u bytes%s, and every op is sent at every size: "
					  "%u is too large while %s is among the ops", op, lim,
					  !strcmp(op, "ud") ? " (a UD message fits in one MTU)" : "", c.sizes[z], op);
	*out = c;
	return 0;
}

/* A plan stored under looser rules made to fit them: the sizes its ops cannot carry dropped, or
 * when none is left, the ops that cannot carry the smallest (the defaults' when none is left
 * either), then again the sizes the ops left cannot carry.  What was dropped into buf; false
 * when it fitted. */
static bool conf_fit(struct pingmesh_conf *c, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int round = 0; round < 3; round++) {
		const char *op;
		unsigned lim = size_limit(c, &op), n = 0, smallest = PROBE_MAX_SIZE, k = 0;
		int w;

		for (unsigned z = 0; z < c->nsizes; z++) {
			n += c->sizes[z] <= lim;
			if (c->sizes[z] < smallest)
				smallest = c->sizes[z];
		}
		if (n == c->nsizes)
			break;
		if (n) { /* the sizes too large for the ops go */
			w = snprintf(buf + at, len - at, "%sthe sizes over %u bytes dropped (%s is among the ops)",
				     at ? "; " : "", lim, op);
			for (unsigned z = 0; z < c->nsizes; z++)
				if (c->sizes[z] <= lim)
					c->sizes[k++] = c->sizes[z];
			c->nsizes = k;
		} else { /* every size too large for some op: those ops go */
			w = snprintf(buf + at, len - at, "%sthe ops that cannot carry %u bytes dropped (%s among them)",
				     at ? "; " : "", smallest, op);
			for (unsigned i = 0; i < c->nops; i++) {
				enum probe_op o;

				if (probe_op_parse(c->ops[i], &o) < 0 || probe_op_max_size(o) >= smallest)
					memmove(c->ops[k++], c->ops[i], sizeof(c->ops[i]));
			}
			c->nops = k;
			if (!c->nops) {
				memcpy(c->ops, pingmesh_defaults.ops, sizeof(c->ops));
				c->nops = pingmesh_defaults.nops;
				if (w > 0 && (size_t)w < len - at)
					w += snprintf(buf + at + w, len - at - (size_t)w, ", the default ops put in");
			}
		}
		if (w > 0)
			at = at + (size_t)w < len ? at + (size_t)w : len - 1;
	}
	return buf[0] != '\0';
}

/* The stored configuration.  One this rocefabd refuses (saved by an older one whose rules were
 * looser) is made to fit (conf_fit), or if a field is refused, the defaults are in force but for
 * an "enabled": false: said once in the log. */
static void conf_from_text(const char *text, struct pingmesh_conf *c)
{
	static atomic_bool warned;
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	struct pingmesh_conf n = pingmesh_defaults;
	struct rf_err e = { 0 };
	char why[700];

	*c = pingmesh_defaults;
	if (!doc || !json_object_size(doc)) {
		json_decref(doc);
		return;
	}
	if (conf_fields(&n, doc, &e) < 0) {
		c->enabled = !json_is_false(json_object_get(doc, "enabled"));
		if (!atomic_exchange(&warned, true))
			log_warning("pingmesh", "the stored pingmesh configuration is refused (%s): the defaults are "
						"in force%s until it is set again (PUT /api/v1/probes/config)",
				    rf_err_str(&e, why, sizeof(why)), c->enabled ? "" : ", disabled as it was");
	} else {
		*c = n;
		if (conf_fit(c, why, sizeof(why)) && !atomic_exchange(&warned, true))
			log_warning("pingmesh",
				    "the stored pingmesh configuration does not fit this rocefabd's rules (every op "
				    "goes at every size): %s; its other settings are kept, until it is set again "
				    "(PUT /api/v1/probes/config)", why);
	}
	json_decref(doc);
}

#define CONF_SQL "SELECT value FROM meta WHERE key = 'pingmesh'"

/* The stored configuration (CONF_SQL on a reader or the writer), or the defaults. */
static int conf_read(sqlite3_stmt *st, struct pingmesh_conf *ret)
{
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

int pingmesh_conf_load(struct store_reader *rd, struct pingmesh_conf *ret)
{
	return conf_read(store_reader_stmt(rd, CONF_SQL), ret);
}

/* --- the object ------------------------------------------------------------------------------- */

/* Where a host's probe server listens, as its agent said in its last report. */
struct endpoint {
	char host[65], ep[65];
};

struct pingmesh {
	struct store *store;
	struct pingmesh_opts o;

	/* writer thread only: the configuration as last read (again when saved, at most a second
	 * old), the hosts and their ToRs (re-read every few seconds), and the hosts' probe
	 * endpoints (shrinks only when a host is forgotten, DELETE /api/v1/agents/{id}: a host that
	 * stops reporting keeps being probed, and that is how a dead host shows in the matrix) */
	struct pingmesh_conf wconf;
	int64_t wconf_at;
	bool wconf_valid;
	struct host_tor *hosts;
	size_t nhosts;
	int64_t hosts_at;
	struct hmap endpoints; /* host -> struct endpoint */

	/* the /metrics text of the last localization, and its matrix (pairs only) */
	pthread_mutex_t prom_lock;
	char *prom;
	char *matrix;
	size_t matrix_len;
	int64_t matrix_at;
	char matrix_op[16];
	unsigned matrix_size;
	int64_t matrix_wanted; /* until then someone looks at the heatmap: keep its matrix */
	pingmesh_explain_fn explain;
	void *explain_ctx;

	/* the primary op and size's p99 per pair (src, dst) reported since pingmesh_take_tail()
	 * last took them, the latest per pair (a report sent twice counts once, a pair probed more
	 * often weighs the same); the writer thread adds, the tuner's pass takes; at most TAIL_MAX
	 * pairs */
	pthread_mutex_t tail_lock;
	struct hmap tail; /* "src\x1fdst" -> struct tail_pair */
	pthread_mutex_t conf_lock; /* a change of the configuration: read, merge and save, one at a time */
	bool tail_wanted; /* someone took it once: before that (no tuner), nothing is kept */
};

#define TAIL_MAX 65536

struct tail_pair {
	double p99_us;
	char key[];
};

void pingmesh_set_explainer(struct pingmesh *pm, pingmesh_explain_fn fn, void *ctx)
{
	pm->explain = fn;
	pm->explain_ctx = ctx;
}

int pingmesh_new(struct store *s, const struct pingmesh_opts *o, struct pingmesh **ret)
{
	struct pingmesh *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return -ENOMEM;
	pm->store = s;
	pm->o = *o;
	if (pm->o.window_ns <= 0)
		pm->o.window_ns = PINGMESH_WINDOW_NS;
	hmap_init(&pm->endpoints);
	pthread_mutex_init(&pm->prom_lock, NULL);
	pthread_mutex_init(&pm->tail_lock, NULL);
	pthread_mutex_init(&pm->conf_lock, NULL);
	hmap_init(&pm->tail);
	*ret = pm;
	return 0;
}

void pingmesh_free(struct pingmesh *pm)
{
	size_t it = 0;
	void *v;

	if (!pm)
		return;
	while (hmap_next(&pm->endpoints, &it, NULL, &v))
		free(v);
	hmap_fini(&pm->endpoints);
	free(pm->hosts);
	pthread_mutex_destroy(&pm->prom_lock);
	pthread_mutex_destroy(&pm->tail_lock);
	pthread_mutex_destroy(&pm->conf_lock);
	it = 0;
	while (hmap_next(&pm->tail, &it, NULL, &v))
		free(v);
	hmap_fini(&pm->tail);
	free(pm->prom);
	free(pm->matrix);
	free(pm);
}

struct conf_job {
	struct store_job job;
	struct pingmesh *pm;
	char *text;
	struct store_by by;
};

static int conf_apply_job(struct store_job *sj, struct store *s)
{
	struct conf_job *j = (struct conf_job *)sj;

	j->pm->wconf_valid = false; /* the plans read it again (this runs on the writer thread) */
	return store_meta_put_w(s, "pingmesh", j->text, &j->by);
}

int pingmesh_conf_save(struct pingmesh *pm, const struct pingmesh_conf *c, const struct pingmesh_conf *was,
		       const char *actor, const char *reason)
{
	struct conf_job j = { .job = { .apply = conf_apply_job },
			      .pm = pm,
			      .by = { .actor = actor, .reason = reason } };
	json_t *doc = pingmesh_conf_json(c), *before = was ? pingmesh_conf_json(was) : NULL;
	int r = -ENOMEM;

	j.text = store_meta_text_of(doc);
	j.by.old = store_meta_text_of(before);
	if (j.text && (!was || j.by.old))
		r = store_submit_wait(pm->store, &j.job);
	json_decref(doc);
	json_decref(before);
	free(j.text);
	free(j.by.old);
	return r;
}

int pingmesh_conf_change(struct pingmesh *pm, json_t *changes, const char *actor, const char *reason,
			 struct pingmesh_conf *ret, struct rf_err *e)
{
	struct pingmesh_conf c, was;
	struct store_reader *rd;
	int r;

	/* one at a time: two merged into the same configuration, the second saved would undo the
	 * first (and the settings log show both) */
	pthread_mutex_lock(&pm->conf_lock);
	if (!(rd = store_reader_get(pm->store))) {
		r = rf_err_set(e, -EAGAIN, "BUSY", NULL, "no database connection free; retry");
		goto out;
	}
	r = pingmesh_conf_load(rd, &c);
	store_reader_put(pm->store, rd);
	if (r < 0) {
		r = rf_err_set(e, -EAGAIN, "STORE_ERROR", NULL, "cannot read the pingmesh configuration (%s)",
			       strerror(-r));
		goto out;
	}
	was = c;
	if ((r = pingmesh_conf_apply(&c, changes, e)) < 0)
		goto out;
	if ((r = pingmesh_conf_save(pm, &c, &was, actor, reason)) < 0) {
		r = rf_err_set(e, -EAGAIN, "STORE_UNAVAILABLE", NULL,
			       "the configuration could not be stored (%s); nothing changed", strerror(-r));
		goto out;
	}
	*ret = c;
	log_notice("pingmesh", "configuration changed by %s%s%s%s (GET /api/v1/settings/log)", actor ?: "?",
		   reason ? " (reason \"" : "", reason ?: "", reason ? "\")" : "");
out:
	pthread_mutex_unlock(&pm->conf_lock);
	return r;
}

/* --- planning (writer thread) ------------------------------------------------------------------- */

void pingmesh_read_host_tors(sqlite3_stmt *st, struct host_tor **ret, size_t *ret_n)
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

static const char *endpoint_of(const struct pingmesh *pm, const char *host)
{
	const struct endpoint *e = hmap_get(&pm->endpoints, host);

	return e ? e->ep : NULL;
}

static void endpoint_set(struct pingmesh *pm, const char *host, const char *ep)
{
	struct endpoint *e = hmap_get(&pm->endpoints, host);

	if (!e) {
		if (!(e = calloc(1, sizeof(*e))))
			return;
		snprintf(e->host, sizeof(e->host), "%s", host);
		if (hmap_put(&pm->endpoints, e->host, e, NULL) < 0) {
			free(e);
			return;
		}
	}
	snprintf(e->ep, sizeof(e->ep), "%s", ep);
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
static void add_unplaced_hosts(struct pingmesh *pm)
{
	struct host_tor *nv;
	size_t extra = 0, n = pm->nhosts, it = 0;
	const char *host;

	while (hmap_next(&pm->endpoints, &it, &host, NULL))
		if (!bsearch(host, pm->hosts, pm->nhosts, sizeof(*pm->hosts), host_name_cmp))
			extra++;
	if (!extra || !(nv = realloc(pm->hosts, (pm->nhosts + extra) * sizeof(*nv))))
		return;
	pm->hosts = nv;
	it = 0;
	while (hmap_next(&pm->endpoints, &it, &host, NULL))
		if (!bsearch(host, pm->hosts, pm->nhosts, sizeof(*pm->hosts), host_name_cmp)) {
			snprintf(pm->hosts[n].host, sizeof(pm->hosts[n].host), "%s", host);
			pm->hosts[n++].tor[0] = '\0';
		}
	pm->nhosts = n;
	qsort(pm->hosts, pm->nhosts, sizeof(*pm->hosts), host_tor_cmp);
}

/* hmap_sweep: an endpoint whose host is no agent any more (forgotten) */
static bool endpoint_forgotten(const char *host, void *val, void *ctx)
{
	sqlite3_stmt *st = ctx;
	bool gone;

	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	gone = sqlite3_step(st) == SQLITE_DONE;
	sqlite3_reset(st);
	if (gone)
		free(val);
	return gone;
}

static void refresh_hosts(struct pingmesh *pm, struct store *s, int64_t now)
{
	sqlite3_stmt *st;

	if (pm->hosts_at && now - pm->hosts_at < 5 * NSEC_PER_SEC)
		return;
	if ((st = store_stmt(s, "SELECT 1 FROM agents WHERE id = ?")))
		hmap_sweep(&pm->endpoints, endpoint_forgotten, st);
	if (!(st = store_stmt(s, PINGMESH_HOST_TORS_SQL)))
		return;
	free(pm->hosts);
	pingmesh_read_host_tors(st, &pm->hosts, &pm->nhosts);
	add_unplaced_hosts(pm);
	pm->hosts_at = now;
}

static void refresh_conf(struct pingmesh *pm, struct store *s, int64_t now)
{
	if (pm->wconf_valid && now - pm->wconf_at <= NSEC_PER_SEC && now >= pm->wconf_at)
		return;
	conf_read(store_stmt(s, CONF_SQL), &pm->wconf); /* on failure: the defaults, this time */
	pm->wconf_valid = true;
	pm->wconf_at = now;
}

/* Rack-mates: the same known ToR. */
static bool same_tor(const char *a, const char *b)
{
	return *a && !strcmp(a, b);
}

static json_t *plan_for(const struct pingmesh *pm, const char *agent, const struct pingmesh_conf *c,
			int64_t now)
{
	const struct host_tor *hosts = pm->hosts;
	size_t nhosts = pm->nhosts;
	json_t *targets = json_array();
	const char *tor = NULL;
	size_t nother = 0;

	for (size_t i = 0; i < nhosts; i++)
		if (!strcmp(hosts[i].host, agent))
			tor = hosts[i].tor;
	if (c->enabled && tor) {
		for (size_t i = 0; i < nhosts; i++) {
			if (!strcmp(hosts[i].host, agent))
				continue;
			if (same_tor(hosts[i].tor, tor))
				json_array_append_new(targets, json_string(hosts[i].host));
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
				size_t k = (size_t)(hash_mix64(hash_str64(agent) ^ (round << 20) ^ j) % nother);
				size_t seen = 0, idx = 0;
				bool dup = false;

				for (size_t i = 0; i < nhosts; i++)
					if (strcmp(hosts[i].host, agent) && !same_tor(hosts[i].tor, tor) &&
					    seen++ == k)
						idx = i;
				for (size_t q = 0; q < npicked; q++)
					dup |= picked[q] == idx;
				if (!dup)
					picked[npicked++] = idx;
			}
			for (size_t q = 0; q < npicked; q++)
				json_array_append_new(targets, json_string(hosts[picked[q]].host));
			free(picked);
		}
	}
	{
		/* real hosts probe where the targets' agents said they listen */
		json_t *ep = NULL, *t, *plan;
		size_t i;

		json_array_foreach(targets, i, t) {
			const char *where = endpoint_of(pm, json_string_value(t));

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

/* Keeps the report's p99 per pair of the primary op and size for pingmesh_take_tail(); a pair
 * whose probes were all lost counts as the probe timeout. */
static void tail_add(struct pingmesh *pm, const struct report *rep)
{
	const struct pingmesh_conf *c = &pm->wconf;
	json_t *it;
	size_t i;

	pthread_mutex_lock(&pm->tail_lock);
	if (!pm->tail_wanted) {
		pthread_mutex_unlock(&pm->tail_lock);
		return;
	}
	json_array_foreach(rep->probe_results, i, it) {
		const char *dst = json_string_value(json_object_get(it, "target"));
		json_t *p99 = json_object_get(it, "p99_us");
		struct tail_pair *tp;
		char key[256];
		double v;

		if (!dst || json_integer_value(json_object_get(it, "size")) != (json_int_t)c->sizes[0] ||
		    strcmp(json_string_value(json_object_get(it, "op")) ?: "", c->ops[0]))
			continue;
		if (json_integer_value(json_object_get(it, "ok")) > 0 && json_is_number(p99))
			v = json_number_value(p99);
		else if (json_integer_value(json_object_get(it, "lost")) > 0)
			v = c->timeout_us; /* nothing came back in time */
		else
			continue;
		if ((size_t)snprintf(key, sizeof(key), "%s\x1f%s", rep->agent_id, dst) >= sizeof(key))
			continue;
		if ((tp = hmap_get(&pm->tail, key))) {
			tp->p99_us = v;
			continue;
		}
		if (pm->tail.len >= TAIL_MAX || !(tp = malloc(sizeof(*tp) + strlen(key) + 1)))
			continue; /* a signal lost, nothing else */
		strcpy(tp->key, key);
		tp->p99_us = v;
		if (hmap_put(&pm->tail, tp->key, tp, NULL) < 0)
			free(tp);
	}
	pthread_mutex_unlock(&pm->tail_lock);
}

int pingmesh_take_tail(struct pingmesh *pm, double *p99_us, size_t *n)
{
	double *v;
	size_t k = 0, it = 0, had;
	void *val;

	pthread_mutex_lock(&pm->tail_lock);
	pm->tail_wanted = true;
	had = pm->tail.len;
	v = had ? malloc(had * sizeof(*v)) : NULL;
	while (hmap_next(&pm->tail, &it, NULL, &val)) {
		if (v)
			v[k++] = ((struct tail_pair *)val)->p99_us;
		free(val);
	}
	hmap_fini(&pm->tail);
	hmap_init(&pm->tail);
	pthread_mutex_unlock(&pm->tail_lock);
	if (!k) {
		free(v);
		return had ? -ENOMEM : -ENOENT;
	}
	qsort(v, k, sizeof(*v), vec_cmp_double);
	*p99_us = vec_median(v, k);
	if (n)
		*n = k;
	free(v);
	return 0;
}

int pingmesh_on_report(void *ctx, struct store *s, const struct report *rep, int64_t now,
		       json_t *commands)
{
	struct pingmesh *pm = ctx;
	json_t *plan;
	char id[32], *text;
	int r;

	if (rep->probe_results && (r = store_results(s, rep)) < 0)
		return r;
	if (!rep->probe_plan || rep->role != REPORT_ROLE_HOST || rep->replay)
		return 0; /* not an agent that probes (a replay's runs under another id now) */
	if (rep->probe_endpoint && strcmp(endpoint_of(pm, rep->agent_id) ?: "", rep->probe_endpoint))
		endpoint_set(pm, rep->agent_id, rep->probe_endpoint);
	refresh_conf(pm, s, now);
	if (rep->probe_results)
		tail_add(pm, rep);
	refresh_hosts(pm, s, now);
	plan = plan_for(pm, rep->agent_id, &pm->wconf, now);
	text = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS);
	snprintf(id, sizeof(id), "p%015" PRIx64, (text ? hash_str64(text) : 0) >> 4);
	free(text);
	if (strcmp(rep->probe_plan, id) != 0)
		json_array_append_new(commands, json_pack("{s:i,s:s,s:s,s:s,s:O,s:I}", "schema", 1, "id", id,
							  "target", rep->agent_id, "kind", "probe_plan",
							  "params", plan, "deadline_ns",
							  (json_int_t)(now + 60 * NSEC_PER_SEC)));
	json_decref(plan);
	return 0;
}

/* --- the localization pass ------------------------------------------------------------------------ */

/* The alert kinds the pingmesh owns (cc/localize.h's kinds but "none"). */
static const char *const alert_kinds[] = { "host", "link", "tor", "fabric", NULL };

/* How long after a request of the heatmap's matrix the localization pass keeps it ready. */
#define HEATMAP_WANTED_NS (60 * NSEC_PER_SEC)

/* The PFC detector's finding that explains a localization's (kind, subject) over the window and
 * two passes, as {"kind", "subject"} (a new reference; its subject in cause, its alert kind in
 * *ckind), or NULL.  Two passes: a probe lost is known at its timeout, and its result reaches
 * rocefabd with its host's next report (an operator's trial: a storm's victim was raised as a
 * root cause of its own 11 s after the storm ended). */
static json_t *explained(struct pingmesh *pm, const char *kind, const char *subject, int64_t window_ns,
			 char *cause, size_t len, const char **ckind)
{
	if (!pm->explain || !kind || !subject ||
	    !pm->explain(pm->explain_ctx, kind, subject, window_ns + 2 * PINGMESH_PASS_NS, cause, len, ckind))
		return NULL;
	return json_pack("{s:s,s:s}", "kind", *ckind, "subject", cause);
}

/* The matrix document's finding k says what explains it (and "finding" too, the first). */
static void mark_attributed(json_t *doc, size_t k, json_t *at)
{
	json_object_set(json_array_get(json_object_get(doc, "findings"), k), "attributed_to", at);
	if (k == 0)
		json_object_set(json_object_get(doc, "finding"), "attributed_to", at);
}

void pingmesh_attribute(struct pingmesh *pm, json_t *doc, int64_t window_ns)
{
	json_t *fk;
	size_t k;

	if (!pm)
		return;
	json_array_foreach(json_object_get(doc, "findings"), k, fk) {
		char cause[512];
		const char *ckind;
		json_t *at = explained(pm, json_string_value(json_object_get(fk, "kind")),
				       json_string_value(json_object_get(fk, "subject")), window_ns, cause,
				       sizeof(cause), &ckind);

		if (at)
			mark_attributed(doc, k, at);
		json_decref(at);
	}
}

int pingmesh_localize(void *ctx, int64_t now)
{
	struct pingmesh *pm = ctx;
	struct store_reader *rd = store_reader_get(pm->store);
	struct pingmesh_conf c;
	struct loc_finding f[LOC_MAX_FINDINGS];
	struct alert_finding af[LOC_MAX_FINDINGS];
	char *details[LOC_MAX_FINDINGS] = { 0 }, evidence[LOC_MAX_FINDINGS][sizeof(f[0].evidence) + 600];
	size_t nf = 0, na = 0;
	json_t *doc = NULL;
	char *text;
	bool wanted;
	int r;

	if (!rd)
		return -EAGAIN;
	pthread_mutex_lock(&pm->prom_lock);
	wanted = now < pm->matrix_wanted;
	pthread_mutex_unlock(&pm->prom_lock);
	/* the primary op and size; the matrix of pairs (no paths) for the pairs in /metrics and
	 * for the heatmap when someone looked at it in the last minute */
	if ((r = pingmesh_conf_load(rd, &c)) == 0)
		r = pingmesh_analyze(rd, now, pm->o.window_ns, c.ops[0], c.sizes[0], false, f, &nf,
				     pm->o.metrics_pairs || wanted ? &doc : NULL);
	store_reader_put(pm->store, rd);
	if (r < 0)
		return r;
	for (size_t k = 0; k < nf && f[0].kind != LOC_NONE; k++) {
		char cause[512];
		const char *ckind = NULL;
		json_t *at;

		af[na] = (struct alert_finding){ .kind = loc_kind_name(f[k].kind), .subject = f[k].subject,
						 .evidence = f[k].evidence };
		/* what the PFC detector names explains it: attributed, not a second root cause */
		if ((at = explained(pm, loc_kind_name(f[k].kind), f[k].subject, pm->o.window_ns, cause, sizeof(cause),
				    &ckind))) {
			bool same = f[k].kind == LOC_HOST && !strncmp(cause, f[k].subject, strlen(f[k].subject)) &&
				    cause[strlen(f[k].subject)] == ' ';
			/* (the machine-readable link: attributed_to when folded, may_add when kept) */
			json_t *d = json_pack("{s:O}", same ? "attributed_to" : "may_add", at);
			const char *what = !strcmp(ckind, "pause_storm")   ? "pause storm"
					   : !strcmp(ckind, "slow_receiver") ? "slow receiver"
					   : !strcmp(ckind, "persistent")    ? "persistent deadlock"
									     : "deadlock";

			/* one fault, one alert: the detector's.  The host its finding comes from is the
			 * same fault (an alert the pingmesh raised for it first is folded into the
			 * detector's); what else it explains raises none, but an alert raised before
			 * goes on, saying the PFC finding may add to it (an operator's trial: a lossy
			 * link's alert was cleared as "not a root cause" once a storm under another
			 * ToR spread to it) */
			if (same)
				snprintf(evidence[na], sizeof(evidence[na]),
					 "%s; the PFC detector names it too: the %s of %s", f[k].evidence, what, cause);
			else
				snprintf(evidence[na], sizeof(evidence[na]), "%s; the %s of %s may add to it",
					 f[k].evidence, what, cause);
			af[na].how = same ? ALERT_FOLD : ALERT_KEEP;
			details[na] = d ? json_dumps(d, JSON_COMPACT) : NULL;
			af[na].evidence = evidence[na];
			af[na].details = details[na];
			/* and in the matrix the dashboard draws: the finding says so there too */
			if (doc)
				mark_attributed(doc, k, at);
			json_decref(at);
			json_decref(d);
		}
		na++;
	}
	/* what /metrics and GET /probes/matrix?paths=false show until the next pass */
	text = pingmesh_metrics_text(pm->o.metrics_pairs ? doc : NULL, f, nf, pm->o.window_ns);
	{
		char at[40];
		char *m = NULL;

		if (doc) { /* for /metrics or the heatmap: kept for the heatmap either way */
			json_object_set_new(doc, "as_of", json_string(tu_format_rfc3339(now, at, sizeof(at))));
			m = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(16));
		}
		pthread_mutex_lock(&pm->prom_lock);
		if (text) {
			free(pm->prom);
			pm->prom = text;
		}
		if (m) {
			free(pm->matrix);
			pm->matrix = m;
			pm->matrix_len = strlen(m);
			pm->matrix_at = now;
			snprintf(pm->matrix_op, sizeof(pm->matrix_op), "%s", c.ops[0]);
			pm->matrix_size = c.sizes[0];
		}
		pthread_mutex_unlock(&pm->prom_lock);
	}
	json_decref(doc);
	r = alerts_sync(pm->store, "pingmesh", alert_kinds, af, na, now);
	for (size_t k = 0; k < na; k++)
		free(details[k]);
	return r;
}

int pingmesh_matrix_cached(struct pingmesh *pm, const char *op, unsigned size, int64_t window_ns,
			   int64_t now, char **ret, size_t *ret_len)
{
	int r = -ENOENT;

	if (!pm || window_ns != pm->o.window_ns)
		return -ENOENT;
	pthread_mutex_lock(&pm->prom_lock);
	pm->matrix_wanted = now + HEATMAP_WANTED_NS;
	if (pm->matrix && now - pm->matrix_at <= 2 * PINGMESH_PASS_NS && (!op || !strcmp(op, pm->matrix_op)) &&
	    (!size || size == pm->matrix_size)) {
		*ret = malloc(pm->matrix_len + 1);
		if (*ret) {
			memcpy(*ret, pm->matrix, pm->matrix_len + 1);
			*ret_len = pm->matrix_len;
			r = 0;
		} else {
			r = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&pm->prom_lock);
	return r;
}

void pingmesh_render_metrics(struct pingmesh *pm, struct buf *out)
{
	pthread_mutex_lock(&pm->prom_lock);
	if (pm->prom)
		buf_puts(out, pm->prom);
	pthread_mutex_unlock(&pm->prom_lock);
}
