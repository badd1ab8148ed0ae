/* Read-side views: see views.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/codec.h"
#include "daemon/delta.h"
#include "daemon/rollup.h"
#include "daemon/views.h"
#include "lib/jsonutil.h"
#include "lib/timeutil.h"

const char *views_agent_status(const struct views_opts *o, int64_t last_seen_ns, int64_t interval_ms)
{
	int64_t limit = o->stale_intervals * interval_ms * NSEC_PER_MSEC;

	return o->now_ns - last_seen_ns > limit ? "stale" : "ok";
}

#define AGENT_COLS                                                                                 \
	"id, role, hostname, version, backend, boot_id, host_boot_id, seq, interval_ms, "         \
	"first_seen_ns, last_seen_ns, last_report_ns, reports, samples, duplicates, "             \
	"ignored_values, spool_dropped, spool_queued, errors"

static json_t *agent_row(sqlite3_stmt *st, const void *ctx)
{
	const struct views_opts *o = ctx;
	json_t *a = json_object(), *errors = NULL;
	const char *err_text = (const char *)sqlite3_column_text(st, 18);

	if (!a)
		return NULL;
	js_set(a, "id", store_col_text(st, 0));
	js_set(a, "role", store_col_text(st, 1));
	js_set(a, "hostname", store_col_text(st, 2));
	js_set(a, "version", store_col_text(st, 3));
	js_set(a, "backend", store_col_text(st, 4));
	js_set(a, "boot_id", store_col_text(st, 5));
	js_set(a, "host_boot_id", store_col_text(st, 6));
	js_set(a, "seq", json_integer(sqlite3_column_int64(st, 7)));
	js_set(a, "interval_ms", json_integer(sqlite3_column_int64(st, 8)));
	js_set(a, "first_seen", store_time_json(sqlite3_column_int64(st, 9)));
	js_set(a, "last_seen", store_time_json(sqlite3_column_int64(st, 10)));
	js_set(a, "last_report", store_time_json(sqlite3_column_int64(st, 11)));
	js_set(a, "status", json_string(views_agent_status(o, sqlite3_column_int64(st, 10),
						     sqlite3_column_int64(st, 8))));
	js_set(a, "reports", json_integer(sqlite3_column_int64(st, 12)));
	js_set(a, "samples", json_integer(sqlite3_column_int64(st, 13)));
	js_set(a, "duplicates", json_integer(sqlite3_column_int64(st, 14)));
	js_set(a, "ignored_values", json_integer(sqlite3_column_int64(st, 15)));
	js_set(a, "spool", json_pack("{s:I,s:I}", "dropped_reports",
				     (json_int_t)sqlite3_column_int64(st, 16), "queued_reports",
				     (json_int_t)sqlite3_column_int64(st, 17)));
	if (err_text)
		errors = json_loads(err_text, 0, NULL);
	js_set(a, "errors", errors ? errors : json_array());
	return a;
}

int views_agents(struct store_reader *rd, const struct views_opts *o, const char *id,
		 json_t **ret, struct rf_err *e)
{
	static const char all_sql[] = "SELECT " AGENT_COLS " FROM agents ORDER BY id";
	static const char one_sql[] = "SELECT " AGENT_COLS " FROM agents WHERE id = ?";
	sqlite3_stmt *st = store_reader_stmt(rd, id ? one_sql : all_sql);
	int r;

	if (!id)
		return store_list(st, agent_row, o, ret, e);
	if (st)
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if ((r = store_one(st, agent_row, o, ret, e)) == -ENOENT)
		return rf_err_set(e, -ENOENT, "UNKNOWN_AGENT", NULL, "no agent '%s'", id);
	return r;
}

int views_agent_counts(struct store_reader *rd, const struct views_opts *o, int64_t *ret_total,
		       int64_t *ret_stale)
{
	static const char sql[] = "SELECT count(*), coalesce(sum(? - last_seen_ns > ? * interval_ms * 1000000), 0) FROM agents";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, o->now_ns);
	sqlite3_bind_int64(st, 2, o->stale_intervals);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret_total = sqlite3_column_int64(st, 0);
		*ret_stale = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : store_errno(rc);
}

#define HOST_SQL                                                                                   \
	"SELECT a.id, a.hostname, a.version, a.last_seen_ns, a.interval_ms, a.devices, a.ports, " \
	"a.ports_up FROM agents a WHERE a.role = 'host'"

static json_t *host_row(sqlite3_stmt *st, const void *ctx)
{
	const struct views_opts *o = ctx;

	return json_pack("{s:o,s:o,s:o,s:s,s:o,s:I,s:I,s:I}", "id", store_col_text(st, 0), "hostname",
			 store_col_text(st, 1), "agent_version", store_col_text(st, 2), "status",
			 views_agent_status(o, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)),
			 "last_seen", store_time_json(sqlite3_column_int64(st, 3)), "devices",
			 (json_int_t)sqlite3_column_int64(st, 5), "ports",
			 (json_int_t)sqlite3_column_int64(st, 6), "ports_up",
			 (json_int_t)sqlite3_column_int64(st, 7));
}

int views_hosts(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		struct rf_err *e)
{
	static const char sql[] = HOST_SQL " ORDER BY a.id";

	return store_list(store_reader_stmt(rd, sql), host_row, o, ret, e);
}

#define PORT_COLS                                                                                  \
	"p.key, p.agent_id, p.device, p.port, p.netdev, p.state, p.speed_mbps, p.mtu, "          \
	"p.link_layer, p.present, p.first_seen_ns, p.last_seen_ns, a.last_seen_ns, "              \
	"p.peer_system, p.peer_port, a.interval_ms"

static json_t *port_row(sqlite3_stmt *st, const void *ctx)
{
	const struct views_opts *o = ctx;
	bool present = sqlite3_column_int(st, 9);
	/* a present port is as recent as its agent's last report */
	int64_t seen = present ? sqlite3_column_int64(st, 12) : sqlite3_column_int64(st, 11);
	/* its agent silent: the state and the rest are as it last reported them, no gauge of now */
	bool stale = strcmp(views_agent_status(o, sqlite3_column_int64(st, 12), sqlite3_column_int64(st, 15)), "ok");

	/* the neighbour as the agent reported it (LLDP, or the simulator's topology) */
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:b,s:o,s:o,s:o}", "id",
			 store_col_text(st, 0), "host", store_col_text(st, 1), "device", store_col_text(st, 2),
			 "port", store_col_text(st, 3), "netdev", store_col_text(st, 4), "state",
			 store_col_text(st, 5), "stale", stale, "speed_mbps", store_col_int_or_null(st, 6), "mtu",
			 store_col_int_or_null(st, 7), "link_layer", store_col_text(st, 8), "present", present,
			 "first_seen", store_time_json(sqlite3_column_int64(st, 10)), "last_seen",
			 store_time_json(seen), "neighbor",
			 sqlite3_column_type(st, 13) == SQLITE_NULL || sqlite3_column_type(st, 14) == SQLITE_NULL
				 ? json_null()
				 : json_pack("{s:o,s:o}", "system", store_col_text(st, 13), "port",
					     store_col_text(st, 14)));
}

static int ports_of(struct store_reader *rd, const struct views_opts *o, const struct port_filter *f,
		    json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT " PORT_COLS " FROM ports p JOIN agents a ON a.id = p.agent_id "
				  "WHERE (?1 IS NULL OR p.agent_id = ?1) AND (?2 IS NULL OR p.device = ?2) "
				  "AND (?3 IS NULL OR p.state = ?3) ORDER BY p.key COLLATE natsort";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);

	if (st) {
		store_bind_text_or_null(st, 1, f->host);
		store_bind_text_or_null(st, 2, f->device);
		store_bind_text_or_null(st, 3, f->state);
	}
	return store_rows(st, port_row, o, ret, e);
}

int views_ports(struct store_reader *rd, const struct views_opts *o, const struct port_filter *f,
		json_t **ret, struct rf_err *e)
{
	static const char *const states[] = { "up", "down", "init", "unknown", NULL };
	json_t *items;
	int r;

	if (f->state) {
		bool ok = false;

		for (int i = 0; states[i]; i++)
			ok |= strcmp(states[i], f->state) == 0;
		if (!ok)
			return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "state",
					  "state must be up, down, init or unknown, not '%s'", f->state);
	}
	if ((r = ports_of(rd, o, f, &items, e)) < 0)
		return r;
	*ret = store_list_doc(items);
	return *ret ? 0 : -ENOMEM;
}

int views_host(struct store_reader *rd, const struct views_opts *o, const char *id,
	       json_t **ret, struct rf_err *e)
{
	static const char host_sql[] = HOST_SQL " AND a.id = ?";
	static const char dev_sql[] = "SELECT name, kind, driver, fw_version, node_guid, present "
				      "FROM devices WHERE agent_id = ? ORDER BY name";
	struct port_filter f = { .host = id };
	sqlite3_stmt *st = store_reader_stmt(rd, host_sql);
	json_t *host = NULL, *devices = NULL, *ports = NULL, *agent = NULL;
	size_t i;
	int rc, r;

	if (!st)
		return -ENOMEM;
	store_reader_begin(rd);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if ((r = store_one(st, host_row, o, &host, e)) == -ENOENT)
		r = rf_err_set(e, -ENOENT, "UNKNOWN_HOST", NULL, "no host '%s'", id);
	if (r < 0)
		goto out;
	if ((r = ports_of(rd, o, &f, &ports, e)) < 0 || (r = views_agents(rd, o, id, &agent, e)) < 0)
		goto out;
	devices = json_array();
	st = store_reader_stmt(rd, dev_sql);
	if (!st || !devices) {
		r = -ENOMEM;
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		json_t *dp = json_array(), *port;
		json_t *d = json_pack("{s:o,s:o,s:o,s:o,s:o,s:b}", "name", store_col_text(st, 0), "kind",
				      store_col_text(st, 1), "driver", store_col_text(st, 2), "fw_version",
				      store_col_text(st, 3), "node_guid", store_col_text(st, 4), "present",
				      sqlite3_column_int(st, 5));

		json_array_foreach(ports, i, port)
			if (strcmp(json_string_value(json_object_get(port, "device")), name) == 0)
				json_array_append(dp, port);
		js_set(d, "ports", dp);
		json_array_append_new(devices, d);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		r = store_read_failed(st, rc, e);
		goto out;
	}
	js_set(host, "devices_detail", devices);
	devices = NULL;
	js_set(host, "agent", agent);
	agent = NULL;
	*ret = host;
	host = NULL;
	r = 0;
out:
	store_reader_end(rd);
	json_decref(host);
	json_decref(devices);
	json_decref(ports);
	json_decref(agent);
	return r;
}

static int port_id_of(struct store_reader *rd, const char *key, int64_t *ret, struct rf_err *e)
{
	static const char sql[] = "SELECT id FROM ports WHERE key = ?";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return rf_err_set(e, -ENOENT, "UNKNOWN_PORT", NULL,
				  "no port '%s' (port ids are HOST:DEVICE:PORT)", key);
	return rc == SQLITE_ROW ? 0 : store_read_failed(st, rc, e);
}

static json_t *flags_json(unsigned flags)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{ DELTA_RESET, "reset" },	  { DELTA_WRAP, "wrap" },
		{ DELTA_NEW_BOOT, "new_boot" },	  { DELTA_SATURATED, "saturated" },
		{ DELTA_CLOCK, "clock" },	  { DELTA_IMPLAUSIBLE, "implausible" },
	};
	json_t *a = json_array();

	if (!(flags & DELTA_VALID))
		json_array_append_new(a, json_string("baseline"));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit)
			json_array_append_new(a, json_string(names[i].name));
	return a;
}

struct latest_ctx {
	const struct ingest *ing;
	json_t *items;
	int64_t t_ns;
};

static int latest_entry(const struct sample_entry *se, void *arg)
{
	struct latest_ctx *l = arg;
	const struct reg_counter *rc = ingest_counter_by_dbid(l->ing, se->counter);
	json_t *o;

	if (!rc)
		return 0;
	o = json_pack("{s:s,s:o,s:s,s:s,s:I}", "name", rc->name, "priority",
		      se->prio == REG_NO_PRIO ? json_null() : json_integer(se->prio), "unit",
		      rc->unit, "kind", reg_kind_name(rc->kind), "raw", (json_int_t)se->raw);
	if ((se->flags & DELTA_VALID) && se->dt_ns > 0) {
		js_set(o, "delta", json_integer((json_int_t)se->delta));
		js_set(o, "rate", json_real((double)se->delta * 1e9 / (double)se->dt_ns));
	} else {
		js_set(o, "delta", json_null());
		js_set(o, "rate", json_null());
	}
	js_set(o, "flags", flags_json(se->flags));
	json_array_append_new(l->items, o);
	return 0;
}

int views_port(struct store_reader *rd, const struct views_opts *o, const struct ingest *ing,
	       const char *key, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT " PORT_COLS " FROM ports p JOIN agents a ON a.id = p.agent_id "
				  "WHERE p.key = ?";
	struct latest_ctx l = { .ing = ing };
	sqlite3_stmt *st = store_reader_stmt(rd, sql), *rows;
	struct codec_chain chain;
	json_t *port = NULL;
	int64_t id;
	int r;

	if (!st)
		return -ENOMEM;
	store_reader_begin(rd);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if ((r = store_one(st, port_row, o, &port, e)) == -ENOENT)
		r = rf_err_set(e, -ENOENT, "UNKNOWN_PORT", NULL,
			       "no port '%s' (port ids are HOST:DEVICE:PORT)", key);
	if (r < 0 || (r = port_id_of(rd, key, &id, e)) < 0)
		goto out;
	st = store_reader_stmt(rd, INGEST_NEWEST_SQL);
	rows = store_reader_stmt(rd, INGEST_ROWS_SQL);
	l.items = json_array();
	if (!st || !rows || !l.items) {
		r = -ENOMEM;
		goto out;
	}
	codec_chain_init(&chain);
	/* (a corrupt newest row shows no counters) */
	r = ingest_read_newest(st, rows, id, &chain, &l.t_ns, latest_entry, &l);
	codec_chain_fini(&chain);
	if (r == -ENOMEM)
		goto out;
	if (r < 0)
		json_array_clear(l.items);
	js_set(port, "sampled_at", store_time_json(l.t_ns));
	js_set(port, "counters", l.items);
	l.items = NULL;
	*ret = port;
	port = NULL;
	r = 0;
out:
	store_reader_end(rd);
	json_decref(port);
	json_decref(l.items);
	return r;
}

/* --- counter series -------------------------------------------------------------------------- */

struct series {
	uint32_t dbid;
	uint8_t prio;
	const struct reg_counter *rc;
	json_t *points;
	/* the bucket being filled when a step is set */
	int64_t bucket;
	uint64_t b_delta;
	int64_t b_dt;
	uint64_t b_raw;
	double b_sum, b_min, b_max;   /* gauge: of the values */
	double b_rmin, b_rmax;	      /* counter: of the per-sample rates */
	unsigned b_n, b_valid;
};

struct series_ctx {
	const struct ingest *ing;
	const struct counter_query *q;
	bool *wanted; /* by db id */
	uint32_t max_dbid;
	struct series *s;
	size_t n, cap;
	int64_t t_ns;
	size_t points;
	int err;
};

static struct series *series_get(struct series_ctx *c, uint32_t dbid, uint8_t prio)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->s[i].dbid == dbid && c->s[i].prio == prio)
			return &c->s[i];
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 16;
		struct series *ns = realloc(c->s, nc * sizeof(*ns));

		if (!ns)
			return NULL;
		c->s = ns;
		c->cap = nc;
	}
	c->s[c->n] = (struct series){ .dbid = dbid, .prio = prio,
				      .rc = ingest_counter_by_dbid(c->ing, dbid),
				      .points = json_array(), .bucket = INT64_MIN };
	return c->s[c->n].points ? &c->s[c->n++] : NULL;
}

static void flush_bucket(struct series_ctx *c, struct series *s)
{
	json_t *p;
	double t = (double)s->bucket / 1e9;

	if (s->bucket == INT64_MIN || s->b_n == 0)
		return;
	if (s->rc->kind == REG_KIND_GAUGE) {
		p = json_pack("{s:f,s:f,s:f,s:f,s:I}", "t", t, "value", s->b_sum / s->b_n, "min",
			      s->b_min, "max", s->b_max, "n", (json_int_t)s->b_n);
	} else {
		p = json_pack("{s:f,s:I,s:I}", "t", t, "raw", (json_int_t)s->b_raw, "n",
			      (json_int_t)s->b_n);
		if (s->b_valid && s->b_dt > 0) {
			js_set(p, "delta", json_integer((json_int_t)s->b_delta));
			js_set(p, "rate", json_real((double)s->b_delta * 1e9 / (double)s->b_dt));
			js_set(p, "rate_min", json_real(s->b_rmin));
			js_set(p, "rate_max", json_real(s->b_rmax));
		} else {
			js_set(p, "delta", json_null());
			js_set(p, "rate", json_null());
		}
	}
	json_array_append_new(s->points, p);
	c->points++;
	s->b_n = s->b_valid = 0;
	s->b_delta = 0;
	s->b_dt = 0;
	s->b_sum = s->b_min = s->b_max = 0;
	s->b_rmin = s->b_rmax = 0;
}

/* The step bucket of t (a multiple of the step since the epoch; earlier times floor too). */
static int64_t step_bucket(const struct series_ctx *c)
{
	return rollup_bucket(c->t_ns, c->q->step_ns);
}

/* What the step bucket of a series takes from one rollup entry (or one sample made one). */
static void bucket_add(struct series_ctx *c, struct series *s, const struct rollup_entry *re)
{
	int64_t b = step_bucket(c);

	if (b != s->bucket) {
		flush_bucket(c, s);
		s->bucket = b;
	}
	if (!re->n)
		return;
	s->b_n += re->n;
	s->b_raw = re->last; /* rows and samples come oldest first */
	if (s->rc->kind == REG_KIND_GAUGE) {
		if (s->b_n == re->n || re->min < s->b_min)
			s->b_min = re->min;
		if (s->b_n == re->n || re->max > s->b_max)
			s->b_max = re->max;
		s->b_sum += re->sum;
	} else if (re->n_valid) {
		if (!s->b_valid || re->min < s->b_rmin)
			s->b_rmin = re->min;
		if (!s->b_valid || re->max > s->b_rmax)
			s->b_rmax = re->max;
		s->b_valid += re->n_valid;
		s->b_delta += re->delta;
		s->b_dt = s->b_dt > INT64_MAX - re->dt_ns ? INT64_MAX : s->b_dt + re->dt_ns;
	}
}

static int series_entry(const struct sample_entry *se, void *arg)
{
	struct series_ctx *c = arg;
	struct series *s;

	if (se->counter > c->max_dbid || !c->wanted[se->counter])
		return 0;
	s = series_get(c, se->counter, se->prio);
	if (!s)
		return -ENOMEM;
	if (!s->rc)
		return 0;
	if (c->q->step_ns > 0) {
		/* one sample is a rollup of one: both resolutions add up the same way */
		struct rollup_entry one;

		rollup_entry_of_sample(&one, se, c->t_ns, s->rc->kind == REG_KIND_GAUGE);
		bucket_add(c, s, &one);
		return 0;
	}
	{
		double t = (double)c->t_ns / 1e9;
		json_t *p;

		if (s->rc->kind == REG_KIND_GAUGE) {
			p = json_pack("{s:f,s:f}", "t", t, "value", (double)se->raw);
		} else {
			p = json_pack("{s:f,s:I}", "t", t, "raw", (json_int_t)se->raw);
			if ((se->flags & DELTA_VALID) && se->dt_ns > 0) {
				js_set(p, "delta", json_integer((json_int_t)se->delta));
				js_set(p, "rate",
				       json_real((double)se->delta * 1e9 / (double)se->dt_ns));
			} else {
				js_set(p, "delta", json_null());
				js_set(p, "rate", json_null());
			}
			if ((se->flags & ~DELTA_VALID) || !(se->flags & DELTA_VALID))
				js_set(p, "flags", flags_json(se->flags));
		}
		json_array_append_new(s->points, p);
		c->points++;
	}
	return 0;
}

/* The position of name in a comma-separated list (blanks around entries ignored); past the end
 * when absent. */
static size_t name_rank(const char *list, const char *name)
{
	size_t rank = 0, n = strlen(name);

	for (const char *p = list; *p; rank++) {
		size_t len = strcspn(p, ",");
		const char *a = p, *b = p + len;

		while (a < b && *a == ' ')
			a++;
		while (b > a && b[-1] == ' ')
			b--;
		if ((size_t)(b - a) == n && !strncmp(a, name, n))
			return rank;
		p += len + (p[len] == ',');
	}
	return SIZE_MAX;
}

static int by_rank(const void *x, const void *y, void *names)
{
	json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
	size_t ra = name_rank(names, json_string_value(json_object_get(a, "name")));
	size_t rb = name_rank(names, json_string_value(json_object_get(b, "name")));

	if (ra != rb)
		return ra < rb ? -1 : 1;
	/* then by priority (per-port first), as the series came */
	return (int)(json_integer_value(json_object_get(a, "priority")) - json_integer_value(json_object_get(b, "priority")));
}

/* Reorders series (in place) by the position of their names in names. */
static void sort_by_names(json_t *series, const char *names)
{
	size_t n = json_array_size(series);
	json_t **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(series, i));
	qsort_r(v, n, sizeof(*v), by_rank, (void *)names);
	json_array_clear(series);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(series, v[i]);
	free(v);
}

/* The raw samples of [from, to] into the series, oldest first. */
static int raw_points(struct store_reader *rd, struct series_ctx *c, int64_t port_id, int64_t from,
		      int64_t to, struct rf_err *e)
{
	static const char sql[] = "SELECT t_ns, data FROM samples WHERE port_id = ? AND t_ns >= ? "
				  "AND t_ns <= ? ORDER BY t_ns";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	struct codec_chain chain;
	int rc, r = 0;

	if (!st)
		return -ENOMEM;
	/* from the minute's start: a row may follow the ones before it (daemon/codec.h) */
	sqlite3_bind_int64(st, 1, port_id);
	sqlite3_bind_int64(st, 2, rollup_bucket(from, ROLLUP_1M_NS));
	sqlite3_bind_int64(st, 3, to);
	codec_chain_init(&chain);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(st, 0);

		c->t_ns = t;
		r = codec_decode_row(&chain, t, sqlite3_column_blob(st, 1),
				     (size_t)sqlite3_column_bytes(st, 1),
				     t < from ? ingest_skip_entry : series_entry, c);
		if (r == -ENOMEM)
			break;
		r = 0; /* a corrupt row is skipped, not fatal for the whole series */
	}
	codec_chain_fini(&chain);
	sqlite3_reset(st);
	if (r < 0)
		return r;
	return rc == SQLITE_DONE ? 0 : store_read_failed(st, rc, e);
}

/* The points of a window from the rollups of width res (seconds): the raw samples from before
 * the port's first minute written (a database older than the rollups), their rows, then
 * (*raw_from) where the raw samples take over: after the last minute written, which every
 * hour's row holds too (the open minute is only in memory and in the raw samples). */
static int rollup_points(struct store_reader *rd, struct series_ctx *c, int64_t port_id, int res,
			 int64_t *raw_from, struct rf_err *e)
{
	/* the buckets' own rows, and the blocks that hold closed hours (days) of them */
	static const char rows_sql[] = "SELECT res, t_ns, data FROM rollups WHERE port_id = ?2 AND "
				       "((res = ?1 AND t_ns >= ?3 AND t_ns <= ?4) OR "
				       "(res = -?1 AND t_ns >= ?5 AND t_ns <= ?4)) ORDER BY t_ns";
	static const char written_sql[] = "SELECT max(t_ns) FROM rollups WHERE res = 60 AND port_id = ?";
	static const char first_sql[] = "SELECT res, t_ns, data FROM rollups WHERE res IN (60, -60) "
					"AND port_id = ? ORDER BY t_ns LIMIT 1";
	sqlite3_stmt *st = store_reader_stmt(rd, first_sql);
	struct rollup row;
	int64_t from, first = 0;
	int rc, r = 0;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_int64(st, 1, port_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_int(st, 0) < 0) {
		/* a block: its first bucket (the block starts at its hour) */
		struct rollup *slots;
		size_t n;

		if (rollup_block_decode(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
					sqlite3_column_int64(st, 1), ROLLUP_1M_NS, &slots, &n) == 0) {
			first = n ? slots[0].t_ns : sqlite3_column_int64(st, 1);
			for (size_t i = 0; i < n; i++)
				rollup_fini(&slots[i]);
			free(slots);
		} else {
			first = sqlite3_column_int64(st, 1);
		}
	} else if (rc == SQLITE_ROW) {
		first = sqlite3_column_int64(st, 1);
	}
	if (rc == SQLITE_ROW && first > c->q->from_ns) {
		sqlite3_reset(st);
		if ((r = raw_points(rd, c, port_id, c->q->from_ns,
				    first - 1 < c->q->to_ns ? first - 1 : c->q->to_ns, e)) < 0)
			return r;
	} else {
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return store_read_failed(st, rc, e);
	}
	if (!(st = store_reader_stmt(rd, rows_sql)))
		return -ENOMEM;
	rollup_init(&row, 0);
	from = rollup_bucket(c->q->from_ns, res * NSEC_PER_SEC);
	sqlite3_bind_int(st, 1, res);
	sqlite3_bind_int64(st, 2, port_id);
	sqlite3_bind_int64(st, 3, from);
	sqlite3_bind_int64(st, 4, c->q->to_ns);
	sqlite3_bind_int64(st, 5, rollup_bucket(from, res == 60 ? ROLLUP_1H_NS : ROLLUP_1D_NS));
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rollup *slots = &row;
		size_t nslots = 1;
		int64_t t = sqlite3_column_int64(st, 1);

		if (sqlite3_column_int(st, 0) < 0) {
			r = rollup_block_decode(sqlite3_column_blob(st, 2),
						(size_t)sqlite3_column_bytes(st, 2), t,
						res * NSEC_PER_SEC, &slots, &nslots);
		} else {
			row.t_ns = t;
			r = rollup_decode(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
					  &row);
		}
		if (r == -EBADMSG) {
			r = 0;
			continue; /* a corrupt row is skipped, as a corrupt sample row is */
		}
		if (r < 0)
			break;
		for (size_t k = 0; r == 0 && k < nslots; k++) {
			const struct rollup *b = &slots[k];

			if (b->t_ns < from || b->t_ns > c->q->to_ns)
				continue; /* a block's buckets outside the window */
			c->t_ns = b->t_ns;
			for (size_t i = 0; i < b->n; i++) {
				struct series *s;

				if (b->e[i].counter > c->max_dbid || !c->wanted[b->e[i].counter])
					continue;
				if (!(s = series_get(c, b->e[i].counter, b->e[i].prio))) {
					r = -ENOMEM;
					break;
				}
				if (s->rc)
					bucket_add(c, s, &b->e[i]);
			}
		}
		if (slots != &row) {
			for (size_t k = 0; k < nslots; k++)
				rollup_fini(&slots[k]);
			free(slots);
		}
	}
	sqlite3_reset(st);
	rollup_fini(&row);
	if (r < 0)
		return r;
	if (rc != SQLITE_DONE)
		return store_read_failed(st, rc, e);
	if (!(st = store_reader_stmt(rd, written_sql)))
		return -ENOMEM;
	sqlite3_bind_int64(st, 1, port_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
	    sqlite3_column_int64(st, 0) + ROLLUP_1M_NS > *raw_from)
		*raw_from = sqlite3_column_int64(st, 0) + ROLLUP_1M_NS;
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_read_failed(st, rc, e);
}

/* A range of that length at q's step gives at most max_points points per series. */
static int points_fit(const struct counter_query *q, uint64_t range, struct rf_err *e)
{
	if (q->step_ns > 0 && range / (uint64_t)q->step_ns > q->max_points)
		return rf_err_set(e, -EINVAL, "TOO_MANY_POINTS", "step",
				  "that range and step give more than %u points per series; use a larger step",
				  q->max_points);
	return 0;
}

int views_port_counters(struct store_reader *rd, const struct ingest *ing, const char *key,
			const struct counter_query *q, json_t **ret, struct rf_err *e)
{
	static const char count_sql[] = "SELECT count(*) FROM samples WHERE port_id = ? AND "
					"t_ns >= ? AND t_ns <= ?";
	const struct reg *reg = ingest_registry(ing);
	struct counter_query lq = *q;
	struct series_ctx c = { .ing = ing, .q = &lq };
	int res;      /* the rollup (its width in seconds) the points come from; 0: raw */
	int64_t raw_from;
	uint64_t range;
	json_t *series = NULL, *doc = NULL;
	sqlite3_stmt *st;
	int64_t id, rows = 0;
	char from_text[40], to_text[40];
	bool fabric = false;
	int r;

	q = &lq;
	if (q->from_ns >= q->to_ns)
		return rf_err_set(e, -EINVAL, "BAD_TIME_RANGE", "from",
				  "'from' must be before 'to'");
	/* the range's length, which can exceed int64 (from -290 years to 2255) */
	range = (uint64_t)q->to_ns - (uint64_t)q->from_ns;
	if (q->step_ns < 0 || (q->step_ns > 0 && q->step_ns < NSEC_PER_MSEC))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "step", "step must be at least 1ms");
	if ((r = points_fit(q, range, e)) < 0)
		return r;
	if (q->resolution == VIEWS_RES_AUTO)
		res = q->step_ns <= 0			   ? 0
		      : q->step_ns % ROLLUP_1H_NS == 0 ? 3600
		      : q->step_ns % ROLLUP_1M_NS == 0 ? 60
						       : 0;
	else if (q->resolution > 0 &&
		 (q->step_ns <= 0 || q->step_ns % (q->resolution * NSEC_PER_SEC) != 0))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", "resolution",
				  "resolution=%s needs a step that is a multiple of it",
				  q->resolution == 60 ? "1m" : "1h");
	else
		res = q->resolution;
	for (size_t i = 0; i < reg_size(reg); i++) {
		uint32_t id2 = ingest_counter_dbid(ing, (unsigned)i);

		if (id2 > c.max_dbid)
			c.max_dbid = id2;
	}
	c.wanted = calloc(c.max_dbid + 1u, sizeof(*c.wanted));
	if (!c.wanted)
		return -ENOMEM;
	if (!q->names || !*q->names) {
		for (size_t i = 0; i < reg_size(reg); i++)
			c.wanted[ingest_counter_dbid(ing, (unsigned)i)] = true;
	} else {
		char *names = strdup(q->names), *save = NULL;

		if (!names) {
			r = -ENOMEM;
			goto out;
		}
		for (char *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
			const struct reg_counter *rc2;

			while (*n == ' ')
				n++;
			rc2 = reg_find(reg, n);
			if (!rc2) {
				r = rf_err_set(e, -EINVAL, "UNKNOWN_COUNTER", "names",
					       "no counter named '%s' (GET /api/v1/counters lists them)", n);
				free(names);
				goto out;
			}
			c.wanted[ingest_counter_dbid(ing, rc2->id)] = true;
		}
		free(names);
	}
	store_reader_begin(rd);
	if ((r = port_id_of(rd, key, &id, e)) < 0)
		goto out_end;
	{
		/* a simulated device's read times are fabric time: the times and rates say so */
		sqlite3_stmt *bk = store_reader_stmt(rd, "SELECT a.backend FROM ports p JOIN agents a "
							 "ON a.id = p.agent_id WHERE p.id = ?");

		if (bk) {
			sqlite3_bind_int64(bk, 1, id);
			fabric = sqlite3_step(bk) == SQLITE_ROW &&
				 !strcmp((const char *)sqlite3_column_text(bk, 0) ?: "", "sim");
			sqlite3_reset(bk);
		}
	}
	if (q->to_newest || (fabric && (q->from_rel || q->to_rel))) {
		/* no explicit window: the one that ends with the port's newest sample (a simulated
		 * fabric's read times are fabric time, which runs behind the wall clock; a silent
		 * agent's last data stays visible).  On a simulated device, times relative to now
		 * ("-10s") count back from its newest sample too: by the wall clock they would name
		 * a window the fabric has not reached, empty */
		sqlite3_stmt *mx = store_reader_stmt(rd, "SELECT max(t_ns) FROM samples WHERE port_id = ?");

		if (mx) {
			sqlite3_bind_int64(mx, 1, id);
			if (sqlite3_step(mx) == SQLITE_ROW && sqlite3_column_type(mx, 0) != SQLITE_NULL &&
			    sqlite3_column_int64(mx, 0) < q->now_ns) {
				int64_t newest = sqlite3_column_int64(mx, 0), span = lq.to_ns - lq.from_ns;

				if (q->to_newest && newest < lq.to_ns) {
					lq.to_ns = newest;
					lq.from_ns = lq.to_ns - span;
				} else if (!q->to_newest) {
					if (q->to_rel)
						lq.to_ns -= q->now_ns - newest;
					if (q->from_rel)
						lq.from_ns -= q->now_ns - newest;
				}
			}
			sqlite3_reset(mx);
		}
		if (lq.from_ns >= lq.to_ns) { /* ('-1m' to an absolute time just past the newest) */
			r = rf_err_set(e, -EINVAL, "BAD_TIME_RANGE", "from",
				       "'from' must be before 'to' (a simulated device: times relative to now "
				       "count back from its newest sample)");
			goto out_end;
		}
		/* the window moved (one end only: wider): its points counted again */
		range = (uint64_t)lq.to_ns - (uint64_t)lq.from_ns;
		if ((r = points_fit(q, range, e)) < 0)
			goto out_end;
	}
	if (q->step_ns == 0) {
		st = store_reader_stmt(rd, count_sql);
		if (!st) {
			r = -ENOMEM;
			goto out_end;
		}
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, q->from_ns);
		sqlite3_bind_int64(st, 3, q->to_ns);
		if (sqlite3_step(st) == SQLITE_ROW)
			rows = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (rows > (int64_t)q->max_points) {
			uint64_t step = range / q->max_points + 1;

			r = rf_err_set(e, -EINVAL, "TOO_MANY_POINTS", "step",
				       "%lld samples in that range, more than %u; add step=%llus or "
				       "more, or narrow the range",
				       (long long)rows, q->max_points,
				       (unsigned long long)((step + NSEC_PER_SEC - 1) / NSEC_PER_SEC));
			goto out_end;
		}
	}
	if (q->step_ns > 0) {
		/* whole buckets, whichever resolution: the window snaps out to the step's edges */
		lq.from_ns = rollup_bucket(lq.from_ns, q->step_ns);
		if (lq.to_ns <= INT64_MAX - q->step_ns)
			lq.to_ns = rollup_bucket(lq.to_ns, q->step_ns) + q->step_ns - 1;
	}
	raw_from = q->from_ns;
	if (res && (r = rollup_points(rd, &c, id, res, &raw_from, e)) < 0)
		goto out_end;
	if ((r = raw_points(rd, &c, id, raw_from, q->to_ns, e)) < 0)
		goto out_end;
	series = json_array();
	for (size_t i = 0; i < c.n; i++) {
		struct series *s = &c.s[i];
		json_t *js;

		if (!s->rc)
			continue;
		if (q->one_priority && s->prio != REG_NO_PRIO && s->prio != q->priority)
			continue;
		flush_bucket(&c, s);
		js = json_pack("{s:s,s:o,s:s,s:s,s:s,s:O}", "name", s->rc->name, "priority",
			       s->prio == REG_NO_PRIO ? json_null() : json_integer(s->prio), "unit",
			       s->rc->unit, "kind", reg_kind_name(s->rc->kind), "scope",
			       reg_scope_name(s->rc->scope), "points", s->points);
		json_array_append_new(series, js);
	}
	/* in the order the names were asked in */
	if (q->names && *q->names)
		sort_by_names(series, q->names);
	/* a query's bounds are times, the epoch included (store_time_json() shows 0 as none) */
	doc = json_pack("{s:s,s:s,s:s,s:o,s:o}", "port", key, "from",
			tu_format_rfc3339(q->from_ns, from_text, sizeof(from_text)), "to",
			tu_format_rfc3339(q->to_ns, to_text, sizeof(to_text)), "step_s",
			q->step_ns ? json_real((double)q->step_ns / 1e9) : json_null(), "series",
			series);
	if (doc) {
		json_object_set_new(doc, "clock", json_string(fabric ? "fabric" : "wall"));
		json_object_set_new(doc, "resolution",
				    json_string(res == 3600 ? "1h" : res == 60 ? "1m" : "raw"));
	}
	if (doc) {
		/* data older than its resolution keeps is gone: a client that shows an empty start
		 * of its window can say why (a step of 30m over 48 h reads minutes, kept 14 days by
		 * default; a step of 1h would read hours) */
		int64_t kept = q->kept_ns[res == 3600 ? 2 : res == 60 ? 1 : 0], start = q->now_ns - kept;
		char text[40];

		if (kept > 0 && q->now_ns > kept && q->from_ns < start)
			json_object_set_new(doc, "kept_from",
					    json_string(tu_format_rfc3339(start, text, sizeof(text))));
	}
	series = NULL;
	*ret = doc;
	r = doc ? 0 : -ENOMEM;
out_end:
	store_reader_end(rd);
out:
	for (size_t i = 0; i < c.n; i++)
		json_decref(c.s[i].points);
	free(c.s);
	free(c.wanted);
	json_decref(series);
	return r;
}

int views_agent_metrics(struct store_reader *rd, const struct views_opts *o, struct buf *out)
{
	static const char sql[] = "SELECT id, role, last_seen_ns, interval_ms, "
				  "CASE WHEN json_valid(errors) AND json_type(errors) = 'array' "
				  "THEN json_array_length(errors) ELSE 0 END FROM agents ORDER BY id";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -ENOMEM;
	buf_printf(out, "# HELP rocefab_agent_up 1 while the agent reports on time, 0 once it missed "
			"agents.stale_after intervals (stale).\n"
			"# TYPE rocefab_agent_up gauge\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		buf_printf(out, "rocefab_agent_up{agent=\"%s\",role=\"%s\"} %d\n",
			   (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
			   strcmp(views_agent_status(o, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)),
				  "ok") == 0);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	buf_printf(out, "# HELP rocefab_agent_last_report_age_seconds Time since the agent's last "
			"report was received.\n"
			"# TYPE rocefab_agent_last_report_age_seconds gauge\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		buf_printf(out, "rocefab_agent_last_report_age_seconds{agent=\"%s\",role=\"%s\"} %.3f\n",
			   (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
			   (double)(o->now_ns - sqlite3_column_int64(st, 2)) / 1e9);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	buf_printf(out, "# HELP rocefab_agent_collection_errors Errors in the agent's last report: what it could "
			"not read (a SONiC switch's redis down, garbage in sysfs, ...; rocefabctl agents AGENT names "
			"them); none for a stale agent.\n"
			"# TYPE rocefab_agent_collection_errors gauge\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (!strcmp(views_agent_status(o, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)), "ok"))
			buf_printf(out, "rocefab_agent_collection_errors{agent=\"%s\",role=\"%s\"} %lld\n",
				   (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
				   (long long)sqlite3_column_int64(st, 4));
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

int views_port_metrics(struct store_reader *rd, const struct views_opts *o, struct buf *out)
{
	static const char sql[] = "SELECT p.agent_id, p.device, p.port, p.state, a.last_seen_ns, a.interval_ms "
				  "FROM ports p JOIN agents a ON a.id = p.agent_id "
				  "WHERE p.present AND p.state IN ('up', 'down', 'init') ORDER BY p.key";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -ENOMEM;
	/* (not a rocefab_port_* name: those are the stored counters, remote-written alike) */
	buf_printf(out, "# HELP rocefab_link_up 1 while the port's link is up, 0 while it is down (or "
			"initializing), as its agent last reported; none for a port of a stale agent.\n"
			"# TYPE rocefab_link_up gauge\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		/* a stale agent's ports are no gauge of now (rocefab_agent_up says it is gone) */
		if (strcmp(views_agent_status(o, sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5)), "ok"))
			continue;
		buf_printf(out, "rocefab_link_up{host=\"%s\",device=\"%s\",port=\"%s\"} %d\n",
			   (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
			   (const char *)sqlite3_column_text(st, 2),
			   !strcmp((const char *)sqlite3_column_text(st, 3), "up"));
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

/* --- QPs ------------------------------------------------------------------------------------ */

int views_host_qps(struct store_reader *rd, const struct views_opts *o, const char *host,
		   json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT q.t_ns, q.doc, q.errors_total, a.role FROM agents a "
				  "LEFT JOIN qps q ON q.agent_id = a.id WHERE a.id = ?";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *doc;
	int rc;

	(void)o;
	*ret = NULL;
	if (!st)
		return -ENOMEM;
	sqlite3_bind_text(st, 1, host, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return store_errno(rc);
		return rf_err_set(e, -ENOENT, "UNKNOWN_HOST", NULL, "no host '%s'", host);
	}
	if (strcmp((const char *)sqlite3_column_text(st, 3), "host")) {
		sqlite3_reset(st);
		return rf_err_set(e, -ENOENT, "UNKNOWN_HOST", NULL, "'%s' is a switch: QPs are on hosts", host);
	}
	if (sqlite3_column_type(st, 1) == SQLITE_NULL) {
		sqlite3_reset(st);
		return rf_err_set(e, -ENOENT, "NO_QPS", NULL,
				  "'%s' has not reported a QP table (no RDMA device, or its agent does not read them)",
				  host);
	}
	doc = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
	if (!doc) {
		sqlite3_reset(st);
		return -ENOMEM;
	}
	json_object_set_new(doc, "host", json_string(host));
	json_object_set_new(doc, "as_of", store_time_json(sqlite3_column_int64(st, 0)));
	json_object_set_new(doc, "errors_total", json_integer(sqlite3_column_int64(st, 2)));
	sqlite3_reset(st);
	*ret = doc;
	return 0;
}

/* A name the agent gave (a QP type or state) as a label value: only plain ones. */
static bool plain_label(const char *s)
{
	if (!*s || strlen(s) > 32)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

int views_qp_metrics(struct store_reader *rd, const struct views_opts *o, struct buf *out)
{
	static const char sql[] = "SELECT q.agent_id, q.doc, q.errors_total, a.last_seen_ns, a.interval_ms "
				  "FROM qps q LEFT JOIN agents a ON a.id = q.agent_id ORDER BY q.agent_id";
	static const char *const by[] = { "by_type", "by_state" };
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -ENOMEM;
	for (int k = 0; k < 2; k++) {
		buf_printf(out, k == 0 ? "# HELP rocefab_host_qps QPs of the host by type (RDMA netlink).\n"
					 "# TYPE rocefab_host_qps gauge\n"
				       : "# HELP rocefab_host_qps_by_state QPs of the host by state.\n"
					 "# TYPE rocefab_host_qps_by_state gauge\n");
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			json_t *doc, *v;
			const char *name;

			/* a stale host's QPs are no gauge of now (its errors counter stays) */
			if (strcmp(views_agent_status(o, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)), "ok"))
				continue;
			doc = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);

			json_object_foreach(json_object_get(doc, by[k]), name, v)
				if (plain_label(name))
					buf_printf(out, "%s{host=\"%s\",%s=\"%s\"} %lld\n",
						   k == 0 ? "rocefab_host_qps" : "rocefab_host_qps_by_state",
						   (const char *)sqlite3_column_text(st, 0), k == 0 ? "type" : "state", name,
						   (long long)json_integer_value(v));
			json_decref(doc);
		}
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return store_errno(rc);
	}
	buf_printf(out, "# HELP rocefab_host_qp_errors_total QPs of the host that entered the error state.\n"
			"# TYPE rocefab_host_qp_errors_total counter\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		buf_printf(out, "rocefab_host_qp_errors_total{host=\"%s\"} %lld\n",
			   (const char *)sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 2));
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

/* --- the settings log ------------------------------------------------------------------------ */

/* The settings documents that are logged: their REST name (the path under /api/v1) and key. */
static const struct {
	const char *name, *key;
} settings[] = {
	{ "cc/policy", "cc_policy" },
	{ "detector/config", "detector" },
	{ "probes/config", "pingmesh" },
};

const char *views_setting_key(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(settings); i++)
		if (!strcmp(settings[i].name, name))
			return settings[i].key;
	return NULL;
}

/* {"FIELD": {"from", "to"}} of the top-level members whose values differ (null: absent). */
static json_t *settings_changed(json_t *from, json_t *to)
{
	json_t *out = json_object(), *v;
	const char *k;

	json_object_foreach(to, k, v)
		if (!json_equal(json_object_get(from, k), v))
			json_object_set_new(out, k, json_pack("{s:O?,s:O}", "from", json_object_get(from, k), "to", v));
	json_object_foreach(from, k, v)
		if (!json_object_get(to, k))
			json_object_set_new(out, k, json_pack("{s:O,s:n}", "from", v, "to"));
	return out;
}

static json_t *settings_row(sqlite3_stmt *st, const void *ctx)
{
	const char *key = (const char *)sqlite3_column_text(st, 2), *name = key;
	json_t *from = NULL, *to, *o;

	(void)ctx;
	for (size_t i = 0; i < ARRAY_SIZE(settings); i++)
		if (!strcmp(settings[i].key, key))
			name = settings[i].name;
	if (sqlite3_column_type(st, 5) != SQLITE_NULL)
		from = json_loads((const char *)sqlite3_column_text(st, 5), 0, NULL);
	to = json_loads((const char *)sqlite3_column_text(st, 6), 0, NULL);
	o = json_pack("{s:I,s:o,s:s,s:o,s:o,s:o}", "id", (json_int_t)sqlite3_column_int64(st, 0), "time",
		      store_time_json(sqlite3_column_int64(st, 1)), "setting", name, "actor", store_col_text(st, 3),
		      "reason", store_col_text(st, 4), "changed", settings_changed(from, to));
	json_decref(from);
	json_decref(to);
	return o;
}

int views_settings_log(struct store_reader *rd, const char *key, unsigned limit, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT id, t_ns, key, actor, reason, old, new FROM settings_log "
				  "WHERE ?1 IS NULL OR key = ?1 ORDER BY id DESC LIMIT ?2";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);

	if (st)
		store_bind_text_or_null(st, 1, key);
	return store_list_limited(st, 2, limit, settings_row, NULL, ret, e);
}
