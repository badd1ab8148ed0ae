/* Pingmesh, the reading side: the latency matrix of a window of results, the localization's
 * input and output, the results themselves, and the /metrics text.  See pingmesh.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/pingmesh-internal.h"
#include "daemon/pingmesh.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "lib/timeutil.h"

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
			uint64_t h = pt ? hash_str64(pt) : 0;

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
	sqlite3_stmt *st = store_reader_stmt(rd, PINGMESH_HOST_TORS_SQL);

	if (!st)
		return -ENOMEM;
	pingmesh_read_host_tors(st, ret, ret_n);
	return 0;
}

json_t *pingmesh_finding_json(const struct loc_finding *f)
{
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:s}", "kind", loc_kind_name(f->kind), "subject",
			 f->subject, "bad_results", (json_int_t)f->bad, "results", (json_int_t)f->total,
			 "bad_through_subject", (json_int_t)f->bad_through, "through_subject",
			 (json_int_t)f->through, "typical_p99_us", round(f->typical_p99_us * 1000) / 1000,
			 "evidence", f->evidence);
}

/* The links the ports' neighbours show, as "a-b" and "b-a" (keys malloc'd, in *ret_keys): a
 * probe path's link is taken only when the topology has it, since an agent may report any
 * names (a review: one host's reports raised an alert on a link that does not exist). */
static int load_links(struct store_reader *rd, struct hmap *links, char ***ret_keys, size_t *ret_n)
{
	sqlite3_stmt *st = store_reader_stmt(rd, "SELECT DISTINCT agent_id, peer_system FROM ports "
						 "WHERE present AND peer_system IS NOT NULL");
	char **keys = NULL;
	size_t n = 0, cap = 0;
	int rc, r = 0;

	if (!st)
		return -ENOMEM;
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *a = (const char *)sqlite3_column_text(st, 0), *b = (const char *)sqlite3_column_text(st, 1);

		for (int way = 0; way < 2 && r == 0; way++) {
			char *k = NULL;

			if (n == cap) {
				char **nk = realloc(keys, (cap = cap ? 2 * cap : 256) * sizeof(*nk));

				if (!nk) {
					r = -ENOMEM;
					break;
				}
				keys = nk;
			}
			if (asprintf(&k, "%s-%s", way ? b : a, way ? a : b) < 0) {
				r = -ENOMEM;
				break;
			}
			keys[n++] = k;
			if (hmap_put(links, k, k, NULL) < 0)
				r = -ENOMEM;
		}
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_reset(st);
	*ret_keys = keys;
	*ret_n = n;
	return r;
}

/* A link of the finding's subject is on path. */
static bool through_subject(const struct loc_finding *f, const json_t *path)
{
	const json_t *l;
	size_t k;

	json_array_foreach(path, k, l)
		if (loc_names_link(f, json_string_value(l)))
			return true;
	return false;
}

static bool through_any(const struct loc_finding *f, size_t nf, const json_t *path)
{
	for (size_t k = 0; k < nf; k++)
		if (through_subject(&f[k], path))
			return true;
	return false;
}

int pingmesh_analyze(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op,
		     unsigned size, bool with_paths, struct loc_finding *ret, size_t *ret_n, json_t **doc)
{
	struct cell *cells = NULL;
	struct host_tor *tors = NULL;
	struct loc_result *lr = NULL;
	struct hmap links;
	char **link_keys = NULL;
	size_t n = 0, ntors = 0, nlinks = 0;
	int r;

	hmap_init(&links);
	if ((r = load_cells(rd, now - window_ns, op, size, &cells, &n)) < 0 || (r = load_tors(rd, &tors, &ntors)) < 0 ||
	    (r = load_links(rd, &links, &link_keys, &nlinks)) < 0)
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
			if (x->npath < LOC_MAX_PATH && hmap_get(&links, json_string_value(l)))
				x->path[x->npath++] = json_string_value(l);
	}
	*ret_n = loc_analyze_all(lr, n, NULL, ret, LOC_MAX_FINDINGS);
	if (doc) {
		json_t *pairs = json_array(), *hosts = json_array(), *findings = json_array();

		for (size_t i = 0; i < ntors; i++)
			json_array_append_new(hosts, json_pack("{s:s,s:s}", "host", tors[i].host, "tor", tors[i].tor));
		for (size_t i = 0; i < n;) {
			/* one pair: its paths are consecutive */
			size_t j = i;
			uint64_t pn = 0, plost = 0;
			double p50 = 0, p99 = 0;
			bool pbad = false, through = false;
			json_t *paths = with_paths ? json_array() : NULL, *pair;

			for (; j < n && !strcmp(cells[j].src, cells[i].src) && !strcmp(cells[j].dst, cells[i].dst); j++) {
				pn += cells[j].n;
				plost += cells[j].lost;
				p50 = cells[j].p50 > p50 ? cells[j].p50 : p50;
				p99 = cells[j].p99 > p99 ? cells[j].p99 : p99;
				pbad |= lr[j].bad;
				through = through || through_any(ret, *ret_n, cells[j].path);
				if (paths)
					json_array_append_new(paths, json_pack("{s:I,s:I,s:I,s:f,s:f,s:b,s:f,s:O}", "label",
								       (json_int_t)cells[j].label, "n", (json_int_t)cells[j].n,
								       "lost", (json_int_t)cells[j].lost, "p50_us",
								       cells[j].p50, "p99_us", cells[j].p99, "bad", lr[j].bad,
								       "max_us", cells[j].max,
								       "path", cells[j].path ? cells[j].path : json_null()));
			}
			pair = json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:b}", "src", cells[i].src, "dst",
					 cells[i].dst, "n", (json_int_t)pn, "lost", (json_int_t)plost, "loss",
					 pn ? (double)plost / (double)pn : 0.0, "p50_us", p50, "p99_us", p99,
					 "bad", pbad);
			if (pair && paths)
				json_object_set_new(pair, "paths", paths);
			else if (pair && through)
				json_object_set_new(pair, "through", json_true());
			json_array_append_new(pairs, pair);
			i = j;
		}
		for (size_t k = 0; k < *ret_n && ret[0].kind != LOC_NONE; k++)
			json_array_append_new(findings, pingmesh_finding_json(&ret[k]));
		*doc = json_pack("{s:f,s:s,s:I,s:o,s:o,s:o,s:o}", "window_s", (double)window_ns / 1e9, "op", op,
				 "size", (json_int_t)size, "hosts", hosts, "pairs", pairs, "finding",
				 pingmesh_finding_json(&ret[0]), "findings", findings);
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		json_decref(cells[i].path);
	free(cells);
	free(tors);
	free(lr);
	hmap_fini(&links);
	for (size_t i = 0; i < nlinks; i++)
		free(link_keys[i]);
	free(link_keys);
	return r;
}

int pingmesh_matrix(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op,
		    unsigned size, bool paths, json_t **ret, struct rf_err *e)
{
	struct pingmesh_conf c;
	struct loc_finding f[LOC_MAX_FINDINGS];
	size_t nf;
	int r;

	if (!op || !size) {
		if ((r = pingmesh_conf_load(rd, &c)) < 0)
			return rf_err_set(e, r, "STORE_ERROR", NULL, "cannot read the pingmesh configuration");
		op = op ?: c.ops[0];
		size = size ?: c.sizes[0];
	}
	if ((r = pingmesh_analyze(rd, now, window_ns, op, size, paths, f, &nf, ret)) < 0)
		return rf_err_set(e, r, "STORE_ERROR", NULL, "cannot read the probe results");
	return 0;
}

static json_t *result_row(sqlite3_stmt *st, const void *ctx)
{
	static const char *const nums[] = { "min_us", "p50_us", "p99_us", "max_us", "mean_us" };
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

	(void)ctx;
	for (int k = 0; k < 5; k++)
		json_object_set_new(o, nums[k], sqlite3_column_type(st, 9 + k) == SQLITE_NULL
							? json_null()
							: json_real(sqlite3_column_double(st, 9 + k)));
	json_object_set_new(o, "path", sqlite3_column_type(st, 14) == SQLITE_NULL
					       ? json_null()
					       : json_loads((const char *)sqlite3_column_text(st, 14), 0, NULL));
	return o;
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
	return store_list(st, result_row, NULL, ret, e);
}

/* --- /metrics ------------------------------------------------------------------------------------- */

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

/* The findings, and with a matrix document its pairs, as Prometheus text. */
char *pingmesh_metrics_text(json_t *doc, const struct loc_finding *f, size_t nf, int64_t window_ns)
{
	json_t *pairs = json_object_get(doc, "pairs");
	char help[200];
	struct buf b;

	buf_init(&b);
	if (doc) {
		snprintf(help, sizeof(help), "Pingmesh, last %.0f s: per source and destination host, the "
			 "median over the rounds of the p50 latency of its worst path.", (double)window_ns / 1e9);
		render_pairs(&b, pairs, "rocefab_probe_p50_seconds", help, "p50_us", 1e-6);
		snprintf(help, sizeof(help), "Pingmesh, last %.0f s: per source and destination host, the "
			 "median over the rounds of the p99 latency of its worst path.", (double)window_ns / 1e9);
		render_pairs(&b, pairs, "rocefab_probe_p99_seconds", help, "p99_us", 1e-6);
		snprintf(help, sizeof(help), "Pingmesh, last %.0f s: probes lost of probes sent, per source "
			 "and destination host.", (double)window_ns / 1e9);
		render_pairs(&b, pairs, "rocefab_probe_loss_ratio", help, "loss", 1);
	}
	buf_puts(&b, "# HELP rocefab_pingmesh_finding What the localization of the probe matrix names "
		     "(kind none, host, link, tor or fabric; 1 for each current finding, several faults "
		     "apart at once; none while the window holds no result).\n"
		     "# TYPE rocefab_pingmesh_finding gauge\n");
	/* no result (the hosts silent, the pingmesh off) is no evidence of health: no finding */
	for (size_t k = 0; k < nf && f[0].total; k++) {
		buf_puts(&b, "rocefab_pingmesh_finding{kind=\"");
		label_value(&b, loc_kind_name(f[k].kind));
		buf_puts(&b, "\",subject=\"");
		label_value(&b, f[k].subject);
		buf_puts(&b, "\"} 1\n");
	}
	if (b.oom) {
		buf_fini(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}
