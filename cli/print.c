/* rocefabctl's printers: see print.h. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/print.h"
#include "cli/table.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

/* The text of the integers a printer shows: each printer keeps its own and frees it on return,
 * so that any number of them can be in one table row or one line. */
struct strs {
	char **v;
	size_t n;
};

static void strs_fini(struct strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static const char *keep(struct strs *s, char *t);

/* A string from the server as it may reach a terminal: a copy (kept in s) with '?' for every
 * control character (C0, DEL, C1), so that what an agent reported cannot move the cursor,
 * rewrite earlier lines or set the clipboard; the string itself when it has none. */
static const char *printable(struct strs *s, const char *in)
{
	char *t;

	if (!in || str_is_printable(in))
		return in;
	if (!(t = strdup(in)))
		return NULL;
	str_make_printable(t);
	return keep(s, t);
}

/* o[k] as text: a string made printable, an integer in decimal (kept in s), a boolean as
 * yes/no; NULL when absent, of another type, or out of memory. */
static const char *str(struct strs *s, const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	char *t;

	if (json_is_string(v))
		return printable(s, json_string_value(v));
	if (json_is_boolean(v))
		return json_is_true(v) ? "yes" : "no";
	if (json_is_array(v)) /* (a table's cell: how many) */
		return asprintf(&t, "%zu", json_array_size(v)) < 0 ? NULL : keep(s, t);
	if (!json_is_integer(v))
		return NULL;
	if (asprintf(&t, "%lld", (long long)json_integer_value(v)) < 0)
		return NULL;
	return keep(s, t);
}

/* Text for a table's cell of at most max bytes (whole characters, "..." at the end when
 * cut), kept in s; v itself when it fits. */
#define CELL_MAX 72
static const char *cell_cut(struct strs *s, const char *v, size_t max)
{
	size_t n = str_utf8_prefix(v, max - 3);
	char *t;

	if (strlen(v) <= max)
		return v;
	if (asprintf(&t, "%.*s...", (int)n, v) < 0)
		return v;
	return keep(s, t) ?: v;
}

static const char *keep(struct strs *s, char *t)
{
	char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));

	if (!nv) {
		free(t);
		return NULL;
	}
	s->v = nv;
	s->v[s->n++] = t;
	return t;
}

void print_json(FILE *f, const json_t *doc)
{
	json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(16));
	fputc('\n', f);
}

/* GET /api/v1/version, beside rocefabctl's own. */
void print_version(FILE *f, const json_t *d)
{
	json_t *feat = json_object_get(d, "features"), *v;
	struct strs s = { 0 };
	const char *k, *sep = "";

	fprintf(f, "rocefabd:   %s (API %s)\n", str(&s, d, "version") ?: "?", str(&s, d, "api") ?: "?");
	fprintf(f, "rocefabctl: %s\n", ROCEFAB_VERSION);
	fprintf(f, "schemas:    report %s, store %s\n", str(&s, d, "report_schema") ?: "?",
		str(&s, d, "store_schema") ?: "?");
	fprintf(f, "counters:   %s in the registry\n", str(&s, d, "counters") ?: "?");
	fprintf(f, "features:  ");
	json_object_foreach(feat, k, v) {
		fprintf(f, "%s %s %s", sep, printable(&s, k) ?: "?",
			json_is_true(v) ? "on" : json_is_false(v) ? "off" : "?");
		sep = ",";
	}
	fprintf(f, "%s\n", sep[0] ? "" : " ?");
	strs_fini(&s);
}

/* A retention in seconds as the configuration takes it ("6h", "14d"). */
static const char *span(const json_t *seconds, char *buf, size_t len)
{
	return tu_format_duration((int64_t)llround(json_number_value(seconds) * 1e9), buf, len);
}

void print_health(FILE *f, const json_t *d)
{
	const json_t *st = json_object_get(d, "store"), *ag = json_object_get(d, "agents"),
		     *in = json_object_get(d, "ingest");
	struct strs s = { 0 };
	const json_t *w, *v;
	size_t i, k;

	fprintf(f, "status:       %s\n", str(&s, d, "status"));
	fprintf(f, "version:      %s\n", str(&s, d, "version"));
	fprintf(f, "uptime:       %.0f s\n", json_number_value(json_object_get(d, "uptime_s")));
	fprintf(f, "database:     %s (queue %s of %s)\n", str(&s, st, "path") ?: "-",
		str(&s, st, "queue_depth"), str(&s, st, "queue_max"));
	fprintf(f, "agents:       %s (%s stale)\n", str(&s, ag, "total"), str(&s, ag, "stale"));
	fprintf(f, "ingest:       %s reports, %s samples, %.0f samples/s\n", str(&s, in, "reports"),
		str(&s, in, "samples"), json_number_value(json_object_get(in, "samples_per_s")));
	if (json_object_get(st, "used_bytes")) {
		const json_t *ret = json_object_get(st, "retention_s");
		char used[32], max[32], raw[32], mins[32], hours[32];

		max[0] = '\0';
		if (json_is_integer(json_object_get(st, "max_bytes")))
			fmt_si(json_number_value(json_object_get(st, "max_bytes")), "B", max, sizeof(max));
		if (json_is_integer(json_object_get(st, "used_bytes"))) {
			fmt_si(json_number_value(json_object_get(st, "used_bytes")), "B", used, sizeof(used));
			fprintf(f, "storage:      %s in use%s%s", used, max[0] ? " of " : "", max);
		} else { /* null: not measured yet (the first seconds after the start) */
			fprintf(f, "storage:      not measured yet%s%s", max[0] ? ", budget " : "", max);
		}
		fprintf(f, "; kept: raw %s, minutes %s, hours %s\n",
			span(json_object_get(ret, "raw"), raw, sizeof(raw)),
			span(json_object_get(ret, "1m"), mins, sizeof(mins)),
			span(json_object_get(ret, "1h"), hours, sizeof(hours)));
	}
	json_array_foreach(json_object_get(d, "remote_write"), i, w) {
		const json_t *dr = json_object_get(w, "dropped_samples");

		fprintf(f, "remote-write: %s: %s sent, %s queued (%s bytes), %s retries, dropped %s "
			   "(queue full) %s (refused)%s%s\n",
			printable(&s, json_string_value(json_object_get(w, "url"))) ?: "-",
			str(&s, w, "sent_samples"), str(&s, w, "queued_samples"), str(&s, w, "queue_bytes"),
			str(&s, w, "retries"), str(&s, dr, "queue_full"), str(&s, dr, "rejected"),
			json_is_string(json_object_get(w, "last_error")) ? "; last error: " : "",
			json_is_string(json_object_get(w, "last_error"))
				? printable(&s, json_string_value(json_object_get(w, "last_error")))
				: "");
	}
	json_array_foreach(json_object_get(d, "warnings"), i, w) {
		const json_t *names = json_object_get(w, "tokens");

		fprintf(f, "warning:      %s: %s", str(&s, w, "code"), str(&s, w, "detail"));
		json_array_foreach(names, k, v)
			fprintf(f, "%s%s", k ? ", " : " (tokens: ",
				printable(&s, json_string_value(v)) ?: "");
		fputs(json_array_size(names) ? ")\n" : "\n", f);
	}
	strs_fini(&s);
}

/* A list's column: the header, and the member of each item it shows (in the item's
 * sub-object obj when not NULL). */
struct column {
	const char *header, *obj, *member;
};

/* The "items" of a list document as a table of columns (ended by a NULL header). */
/* items (an array of objects) in natural order of the strings at key, then key2 (h2 before h10):
 * a new array holding the same objects. */
static const char *sort_key, *sort_key2;

static const char *at_path(const json_t *o, const char *key)
{
	const char *dot = strchr(key, '.');
	char head[64];

	if (!dot)
		return json_string_value(json_object_get(o, key)) ?: "";
	snprintf(head, sizeof(head), "%.*s", (int)(dot - key), key);
	return json_string_value(json_object_get(json_object_get(o, head), dot + 1)) ?: "";
}

static int nat_items(const void *x, const void *y)
{
	const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
	int c = str_natcmp(at_path(a, sort_key), at_path(b, sort_key));

	return c || !sort_key2 ? c : str_natcmp(at_path(a, sort_key2), at_path(b, sort_key2));
}

static json_t *sorted(const json_t *items, const char *key, const char *key2)
{
	size_t n = json_array_size(items), i;
	json_t **v = calloc(n + 1, sizeof(*v)), *out = json_array();

	if (!v || !out) {
		free(v);
		json_decref(out);
		return json_incref((json_t *)items);
	}
	for (i = 0; i < n; i++)
		v[i] = json_array_get(items, i);
	sort_key = key; /* (the CLI is one thread) */
	sort_key2 = key2;
	qsort(v, n, sizeof(*v), nat_items);
	for (i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	return out;
}

/* none: the line in place of an empty table */
static void print_items(FILE *f, const json_t *d, const struct column *cols, const char *none)
{
	const char *h[16], *row[16];
	struct strs s = { 0 };
	struct table *t;
	size_t i, n = 0;
	json_t *it, *items;

	while (cols[n].header && n < ARRAY_SIZE(h) - 1) {
		h[n] = cols[n].header;
		n++;
	}
	h[n] = NULL;
	t = table_new(h);
	items = sorted(json_object_get(d, "items"), cols[0].member, NULL);
	json_array_foreach(items, i, it) {
		for (size_t c = 0; c < n; c++)
			row[c] = str(&s, cols[c].obj ? json_object_get(it, cols[c].obj) : it, cols[c].member);
		table_row(t, row);
	}
	json_decref(items);
	table_print_or(t, f, none);
	table_free(t);
	strs_fini(&s);
}

void print_agents(FILE *f, const json_t *d)
{
	static const struct column cols[] = {
		{ "AGENT", NULL, "id" },	  { "ROLE", NULL, "role" },
		{ "STATUS", NULL, "status" },	  { "LAST SEEN", NULL, "last_seen" },
		{ "SEQ", NULL, "seq" },		  { "REPORTS", NULL, "reports" },
		{ "SAMPLES", NULL, "samples" },	  { "SPOOLED", "spool", "queued_reports" },
		{ "DROPPED", "spool", "dropped_reports" }, { "ERRORS", NULL, "errors" },
		{ "VERSION", NULL, "version" },		   { NULL, NULL, NULL },
	};

	print_items(f, d, cols, "no agents");
}

/* One agent: what it is, and the errors of its last report (a backend that cannot read its
 * device: the agent reports all the same, so its status stays ok). */
void print_agent(FILE *f, const json_t *d)
{
	struct strs s = { 0 };
	const json_t *sp = json_object_get(d, "spool");
	size_t i;
	json_t *e;

	fprintf(f, "agent:    %s (%s, %s)\n", str(&s, d, "id"), str(&s, d, "role") ?: "?", str(&s, d, "status") ?: "?");
	fprintf(f, "backend:  %s, version %s\n", str(&s, d, "backend") ?: "-", str(&s, d, "version") ?: "-");
	fprintf(f, "boot:     %s\n", str(&s, d, "boot_id") ?: "-");
	fprintf(f, "seen:     %s (report %s, seq %s)\n", str(&s, d, "last_seen") ?: "-", str(&s, d, "last_report") ?: "-",
		str(&s, d, "seq") ?: "-");
	fprintf(f, "reports:  %s, %s samples; spool %s waiting, %s dropped\n", str(&s, d, "reports") ?: "0",
		str(&s, d, "samples") ?: "0", str(&s, sp, "queued_reports") ?: "0", str(&s, sp, "dropped_reports") ?: "0");
	if (!json_array_size(json_object_get(d, "errors"))) {
		fprintf(f, "errors:   none in its last report\n");
	} else {
		fprintf(f, "errors in its last report:\n");
		json_array_foreach(json_object_get(d, "errors"), i, e)
			fprintf(f, "  %s%s%s: %s\n", str(&s, e, "code") ?: "?", str(&s, e, "where") ? " at " : "",
				str(&s, e, "where") ?: "", str(&s, e, "message") ?: "");
	}
	strs_fini(&s);
}

void print_forgotten(FILE *f, const json_t *d)
{
	struct strs s = { 0 };

	fprintf(f, "forgot agent %s: %s ports, %s rows deleted\n", str(&s, d, "forgotten") ?: "?",
		str(&s, d, "ports") ?: "0", str(&s, d, "rows") ?: "0");
	strs_fini(&s);
}

void print_hosts(FILE *f, const json_t *d)
{
	static const struct column cols[] = {
		{ "HOST", NULL, "id" },	      { "STATUS", NULL, "status" },
		{ "DEVICES", NULL, "devices" }, { "PORTS", NULL, "ports" },
		{ "UP", NULL, "ports_up" },   { "LAST SEEN", NULL, "last_seen" },
		{ NULL, NULL, NULL },
	};

	print_items(f, d, cols, "no hosts");
}

/* A port's or a link's state; its agent silent: as last reported, said so. */
static const char *port_state(struct strs *s, const json_t *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", str(s, p, "state") ?: "-",
		 json_is_true(json_object_get(p, "stale")) ? " (stale)" : "");
	return buf;
}

static void port_table(FILE *f, const json_t *unsorted)
{
	static const char *const h[] = { "PORT", "NETDEV", "STATE", "SPEED", "MTU", NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	json_t *ports = sorted(unsorted, json_object_get(json_array_get(unsorted, 0), "id") ? "id" : "port", NULL);
	size_t i;
	json_t *p;

	json_array_foreach(ports, i, p) {
		char speed[32] = "-";
		const json_t *sp = json_object_get(p, "speed_mbps");

		if (json_is_integer(sp))
			fmt_si((double)json_integer_value(sp) * 1e6, "b/s", speed, sizeof(speed));
		{
			char state[48];
			const char *row[] = { str(&s, p, "id"), str(&s, p, "netdev"),
					      port_state(&s, p, state, sizeof(state)), speed, str(&s, p, "mtu") };

			table_row(t, row);
		}
	}
	table_print_or(t, f, "no ports");
	table_free(t);
	json_decref(ports);
	strs_fini(&s);
}

void print_host(FILE *f, const json_t *d)
{
	struct strs s = { 0 };
	size_t i;
	json_t *dev;

	fprintf(f, "host:     %s (%s)\n", str(&s, d, "id"), str(&s, d, "status"));
	fprintf(f, "seen:     %s\n", str(&s, d, "last_seen"));
	json_array_foreach(json_object_get(d, "devices_detail"), i, dev) {
		fprintf(f, "\ndevice %s  kind %s  driver %s  firmware %s%s\n", str(&s, dev, "name"),
			str(&s, dev, "kind"), str(&s, dev, "driver") ?: "-",
			str(&s, dev, "fw_version") ?: "-",
			json_is_false(json_object_get(dev, "present")) ? "  (ABSENT)" : "");
		port_table(f, json_object_get(dev, "ports"));
	}
	strs_fini(&s);
}

void print_ports(FILE *f, const json_t *d)
{
	port_table(f, json_object_get(d, "items"));
}

void print_counters(FILE *f, const json_t *d)
{
	static const char *const h[] = { "COUNTER", "PRIO",   "RAW", "DELTA/VALUE",
					 "RATE",    "POINTS", NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	size_t i;
	json_t *ser;

	fprintf(f, "port %s, %s .. %s%s", str(&s, d, "port"), str(&s, d, "from"), str(&s, d, "to"),
		!strcmp(str(&s, d, "clock") ?: "", "fabric")
			? "\n(a simulated device: times are fabric time and rates per fabric second; the "
			  "simulator runs at its pace, e.g. 1/100 of the wall clock)"
			: "");
	if (str(&s, d, "kept_from")) {
		const char *res = str(&s, d, "resolution") ?: "?";

		fprintf(f, "\n(resolution %s keeps data since %s: points before it may be missing%s)", res,
			str(&s, d, "kept_from"),
			strcmp(res, "1h") ? "; a step of whole hours reads the hourly rollups, kept longest" : "");
	}
	fprintf(f, "\n\n");
	json_array_foreach(json_object_get(d, "series"), i, ser)
		if (json_array_size(json_object_get(ser, "points")))
			break;
	if (i == json_array_size(json_object_get(d, "series"))) { /* (none, or none with a point) */
		fprintf(f, "no samples in the window (counters this port does not report, or a window "
			   "without samples)\n");
		table_free(t);
		strs_fini(&s);
		return;
	}
	json_array_foreach(json_object_get(d, "series"), i, ser) {
		const json_t *pts = json_object_get(ser, "points");
		const json_t *last = json_array_get(pts, json_array_size(pts) - 1);
		const json_t *rate = json_object_get(last, "rate");
		char rbuf[40] = "-", unit[40], prio[8] = "-", dbuf[40] = "-", n[16];
		const char *u = str(&s, ser, "unit") ?: "";
		bool bytes = strcmp(u, "bytes") == 0;

		if (bytes)
			snprintf(unit, sizeof(unit), "B/s");
		else if (strcmp(u, "microseconds") == 0)
			snprintf(unit, sizeof(unit), "us/s"); /* (shown as a share, below) */
		else
			snprintf(unit, sizeof(unit), "%s/s", u);
		if (json_is_number(rate) && strcmp(u, "microseconds") == 0) /* time per second: a share */
			snprintf(rbuf, sizeof(rbuf), "%.3g %% of the time", json_number_value(rate) / 1e4);
		else if (json_is_number(rate))
			fmt_si(json_number_value(rate), unit, rbuf, sizeof(rbuf));
		if (json_is_number(json_object_get(last, "value"))) /* a gauge: its value */
			fmt_si(json_number_value(json_object_get(last, "value")), bytes ? "B" : "",
			       dbuf, sizeof(dbuf));
		if (json_is_integer(json_object_get(last, "delta")) && strcmp(u, "microseconds") == 0) {
			double us = (double)json_integer_value(json_object_get(last, "delta"));

			snprintf(dbuf, sizeof(dbuf), us >= 1e6 ? "%.3g s" : us >= 1e3 ? "%.3g ms" : "%.0f us",
				 us >= 1e6 ? us / 1e6 : us >= 1e3 ? us / 1e3 : us);
		} else if (json_is_integer(json_object_get(last, "delta"))) {
			fmt_si((double)json_integer_value(json_object_get(last, "delta")),
			       bytes ? "B" : "", dbuf, sizeof(dbuf));
		}
		if (json_is_integer(json_object_get(ser, "priority")))
			snprintf(prio, sizeof(prio), "%lld",
				 (long long)json_integer_value(json_object_get(ser, "priority")));
		snprintf(n, sizeof(n), "%zu", json_array_size(pts));
		{
			const char *row[] = {
				str(&s, ser, "name"), prio, str(&s, last, "raw"), dbuf, rbuf, n
			};

			table_row(t, row);
		}
	}
	table_print(t, f);
	table_free(t);
	strs_fini(&s);
}

void print_registry(FILE *f, const json_t *d)
{
	static const struct column cols[] = {
		{ "COUNTER", NULL, "name" }, { "SCOPE", NULL, "scope" }, { "UNIT", NULL, "unit" },
		{ "KIND", NULL, "kind" },    { NULL, NULL, NULL },
	};

	print_items(f, d, cols, "no counters");
}

void print_switches(FILE *f, const json_t *d)
{
	static const struct column cols[] = {
		{ "SWITCH", NULL, "id" },	{ "STATUS", NULL, "status" },
		{ "PORTS", NULL, "ports" },	{ "UP", NULL, "ports_up" },
		{ "BACKEND", NULL, "backend" }, { "LAST SEEN", NULL, "last_seen" },
		{ NULL, NULL, NULL },
	};

	print_items(f, d, cols, "no switches");
}

void print_switch(FILE *f, const json_t *d)
{
	static const char *const h[] = { "PORT",
					 "STATE",
					 "SPEED",
					 "NEIGHBOUR",
					 "PFC PRIOS",
					 "XOFF THRESHOLD",
					 "ECN (lossless queues)",
					 NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	size_t i;
	json_t *p;

	json_t *ports = sorted(json_object_get(d, "port_list"), "port", NULL); /* Ethernet4 before 12 */

	fprintf(f, "switch:   %s (%s)\n", str(&s, d, "id"), str(&s, d, "status"));
	fprintf(f, "seen:     %s\n\n", str(&s, d, "last_seen"));
	json_array_foreach(ports, i, p) {
		const json_t *pfc = json_object_get(p, "pfc"), *peer = json_object_get(p, "peer"),
			     *xoff = json_object_get(p, "xoff_threshold");
		char speed[32] = "-", nb[140] = "-", prios[32] = "", ecn[200] = "", thr[32] = "-";
		long long mask = json_integer_value(json_object_get(pfc, "enable"));
		size_t k;
		json_t *q;

		if (json_is_integer(json_object_get(p, "speed_mbps")))
			fmt_si((double)json_integer_value(json_object_get(p, "speed_mbps")) * 1e6,
			       "b/s", speed, sizeof(speed));
		if (json_is_object(peer)) /* (null when the port has no neighbour) */
			snprintf(nb, sizeof(nb), "%s %s", str(&s, peer, "system") ?: "?",
				 str(&s, peer, "port") ?: "?");
		for (int b = 0; b < 8; b++)
			if (mask & (1 << b))
				snprintf(prios + strlen(prios), sizeof(prios) - strlen(prios),
					 "%s%d", prios[0] ? "," : "", b);
		/* reported, static, or computed from a dynamic threshold (SONiC reports none) */
		if (json_is_integer(json_object_get(xoff, "bytes"))) {
			fmt_si((double)json_integer_value(json_object_get(xoff, "bytes")), "B", thr, sizeof(thr));
			if (!strcmp(str(&s, xoff, "from") ?: "", "computed"))
				snprintf(thr + strlen(thr), sizeof(thr) - strlen(thr), " (computed)");
		}
		json_array_foreach(json_object_get(p, "ecn"), k, q) {
			long long qi = json_integer_value(json_object_get(q, "queue"));
			char a[32], b[32];

			/* the 8 priorities; a queue number beyond them is not shifted (undefined)
			 */
			if (qi < 0 || qi > 7 || !(mask & (1 << qi)))
				continue;
			fmt_si((double)json_integer_value(json_object_get(q, "kmin_bytes")), "B", a,
			       sizeof(a));
			fmt_si((double)json_integer_value(json_object_get(q, "kmax_bytes")), "B", b,
			       sizeof(b));
			snprintf(ecn + strlen(ecn), sizeof(ecn) - strlen(ecn),
				 "%sq%lld %s %s..%s p%.2g", ecn[0] ? "; " : "", qi,
				 json_is_true(json_object_get(q, "enabled")) ? "on" : "off", a, b,
				 json_number_value(json_object_get(q, "pmax")));
		}
		{
			char state[48];
			const char *row[] = { str(&s, p, "port"),
					      port_state(&s, p, state, sizeof(state)),
					      speed,
					      nb,
					      prios[0] ? prios : "-",
					      thr,
					      ecn[0] ? ecn : "-" };

			table_row(t, row);
		}
	}
	json_decref(ports);
	table_print_or(t, f, "no ports");
	table_free(t);
	strs_fini(&s);
}

/* Links (GET /api/v1/links' items, the topology's links) as a table; the number up. */
static size_t links_table(FILE *f, const json_t *unsorted)
{
	static const char *const h[] = { "A", "PORT", "B", "PORT", "STATE", "SPEED", NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	json_t *links = sorted(unsorted, "a.node", "a.port");
	size_t i, up = 0;
	json_t *l;

	json_array_foreach(links, i, l) {
		const json_t *a = json_object_get(l, "a"), *b = json_object_get(l, "b");
		char speed[32] = "-";

		if (json_is_integer(json_object_get(l, "speed_mbps")))
			fmt_si((double)json_integer_value(json_object_get(l, "speed_mbps")) * 1e6,
			       "b/s", speed, sizeof(speed));
		{
			char state[48];
			const char *row[] = { str(&s, a, "node"), str(&s, a, "port"), str(&s, b, "node"),
					      str(&s, b, "port"), port_state(&s, l, state, sizeof(state)), speed };

			table_row(t, row);
		}
		up += !strcmp(str(&s, l, "state") ?: "", "up") && !json_is_true(json_object_get(l, "stale"));
	}
	table_print_or(t, f, "no links");
	table_free(t);
	json_decref(links);
	strs_fini(&s);
	return up;
}

void print_links(FILE *f, const json_t *d)
{
	struct strs s = { 0 };

	links_table(f, json_object_get(d, "items"));
	if (json_array_size(json_object_get(d, "items")))
		fprintf(f, "\n%s links, %s up\n", str(&s, d, "count") ?: "?", str(&s, d, "up") ?: "?");
	strs_fini(&s);
}

/* GET /api/v1/topology: the nodes, then the links between them. */
void print_topology(FILE *f, const json_t *d)
{
	static const struct column cols[] = {
		{ "NODE", NULL, "id" },	  { "ROLE", NULL, "role" },    { "STATUS", NULL, "status" },
		{ "PORTS", NULL, "ports" }, { "UP", NULL, "ports_up" }, { NULL, NULL, NULL },
	};
	const json_t *nodes = json_object_get(d, "nodes"), *links = json_object_get(d, "links");
	json_t *items = json_pack("{sO}", "items", nodes ? nodes : json_null());
	size_t up;

	print_items(f, items, cols, "no nodes");
	json_decref(items);
	fputc('\n', f);
	up = links_table(f, links);
	fprintf(f, "\n%zu node%s, %zu link%s, %zu up\n", json_array_size(nodes), json_array_size(nodes) == 1 ? "" : "s",
		json_array_size(links), json_array_size(links) == 1 ? "" : "s", up);
}

/* "RC 3, UD 1" from an object of names and counts. */
static void counts_line(FILE *f, const char *label, const json_t *o)
{
	const char *k;
	json_t *v;
	bool first = true;

	fprintf(f, "%s", label);
	json_object_foreach((json_t *)o, k, v) {
		char name[64];

		snprintf(name, sizeof(name), "%s", k);
		str_make_printable(name);
		fprintf(f, "%s%s %lld", first ? " " : ", ", name, (long long)json_integer_value(v));
		first = false;
	}
	fprintf(f, "%s\n", first ? " none" : "");
}

void print_qps(FILE *f, const json_t *d)
{
	static const char *const h[] = { "DEVICE", "PORT", "LQPN", "RQPN", "TYPE", "STATE", "PID", "PROCESS", "COUNTERS", NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	size_t i;
	json_t *q;

	fprintf(f, "%s: %s QPs as of %s, %s entered the error state in all\n", str(&s, d, "host"),
		str(&s, d, "total"), str(&s, d, "as_of"), str(&s, d, "errors_total"));
	counts_line(f, "by type: ", json_object_get(d, "by_type"));
	counts_line(f, "by state:", json_object_get(d, "by_state"));
	json_array_foreach(json_object_get(d, "items"), i, q) {
		char counters[256] = "", *at = counters;
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(q, "counters"), k, v) {
			int n = snprintf(at, sizeof(counters) - (size_t)(at - counters), "%s%s=%lld",
					 at == counters ? "" : " ", k, (long long)json_integer_value(v));

			if (n < 0 || (size_t)n >= sizeof(counters) - (size_t)(at - counters))
				break;
			at += n;
		}
		{
			const char *row[] = { str(&s, q, "device"), str(&s, q, "port"), str(&s, q, "lqpn"),
					      json_object_get(q, "rqpn") ? str(&s, q, "rqpn") : NULL,
					      str(&s, q, "type"), str(&s, q, "state"),
					      json_object_get(q, "pid") ? str(&s, q, "pid") : "kernel",
					      str(&s, q, "comm"), counters[0] ? counters : NULL };

			table_row(t, row);
		}
	}
	fprintf(f, "\n");
	table_print_or(t, f, "no QPs");
	if (json_is_true(json_object_get(d, "truncated")))
		fprintf(f, "(the %zu listed of %s: those in error first, then the busiest)\n",
			json_array_size(json_object_get(d, "items")), str(&s, d, "total"));
	if (json_object_get(json_object_get(d, "counters"), "note"))
		fprintf(f, "per-QP counters: %s\n", str(&s, json_object_get(d, "counters"), "note"));
	table_free(t);
	strs_fini(&s);
}

/* After the DCQCN table: the switch settings, which have no table of their own. */
static const char params_note[] =
	"\nECN (switch queues): enabled, kmin_bytes, kmax_bytes, pmax (0..1); Kmin < Kmax < the\n"
	"PFC XOFF threshold on lossless priorities.  PFC (ports): enable (priority bit mask),\n"
	"xoff_bytes and xon_bytes (static) or alpha_shift (dynamic, -8..8).  Sizes take units.\n";

void print_params(FILE *f, const json_t *d)
{
	static const char *const h[] = { "DCQCN PARAMETER", "UNIT",    "MIN", "MAX",
					 "DEFAULT",         "MEANING", NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(d, "dcqcn"), i, p) {
		const char *row[] = {
			str(&s, p, "name"), str(&s, p, "unit"),    str(&s, p, "min"),
			str(&s, p, "max"),  str(&s, p, "default"), str(&s, p, "help")
		};

		table_row(t, row);
	}
	table_print(t, f);
	table_free(t);
	strs_fini(&s);
	fputs(params_note, f);
}

/* The worst first: the higher loss, then the higher p99. */
static int cmp_pairs(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	double lx = json_number_value(json_object_get(x, "loss"));
	double ly = json_number_value(json_object_get(y, "loss"));
	double px = json_number_value(json_object_get(x, "p99_us"));
	double py = json_number_value(json_object_get(y, "p99_us"));

	if (lx != ly)
		return lx < ly ? 1 : -1;
	return (px < py) - (px > py);
}

void print_probes(FILE *f, const json_t *d)
{
	static const char *const h[] = { "SRC",    "DST",    "PROBES", "LOST",
					 "P50 US", "P99 US", "BAD",    NULL };
	const json_t *fi = json_object_get(d, "finding"), *pairs = json_object_get(d, "pairs");
	const json_t *all = json_object_get(d, "findings");
	size_t n = json_array_size(pairs), i;
	const json_t **v = calloc(n + 1, sizeof(*v));
	struct table *t = table_new(h);
	struct strs s = { 0 };

	fprintf(f, "pingmesh over %.0f s, %s %s B: %zu pairs of %zu hosts\n",
		json_number_value(json_object_get(d, "window_s")), str(&s, d, "op") ?: "?",
		str(&s, d, "size") ?: "?", n, json_array_size(json_object_get(d, "hosts")));
	/* every fault named (an older rocefabd: its one finding), each with its evidence */
	for (i = 0; i < (json_array_size(all) ?: 1); i++) {
		const json_t *x = json_array_size(all) ? json_array_get(all, i) : fi;
		/* (the subject unless none, or the kind again: "fabric", not "fabric fabric") */
		const char *kind = str(&s, x, "kind") ?: "?", *subj = str(&s, x, "subject");
		bool both = subj && *subj && strcmp(subj, kind);

		const json_t *at = json_object_get(x, "attributed_to");

		fprintf(f, "finding:  %s%s%s\n", kind, both ? " " : "", both ? subj : "");
		fprintf(f, "evidence: %s\n", str(&s, x, "evidence") ?: "");
		if (json_is_object(at))
			fprintf(f, "attributed to: %s %s (the PFC detector's finding)\n", str(&s, at, "kind") ?: "?",
				str(&s, at, "subject") ?: "?");
	}
	fputc('\n', f);
	for (i = 0; v && i < n; i++)
		v[i] = json_array_get(pairs, i);
	if (v)
		qsort(v, n, sizeof(*v), cmp_pairs);
	for (i = 0; v && i < n && i < 20; i++) {
		char p50[32], p99[32];

		json_int_t sent = json_integer_value(json_object_get(v[i], "n"));
		bool none = sent > 0 && json_integer_value(json_object_get(v[i], "lost")) >= sent;

		/* every probe lost: no latency (not 0.0, which reads as a perfect one) */
		snprintf(p50, sizeof(p50), none ? "-" : "%.1f", json_number_value(json_object_get(v[i], "p50_us")));
		snprintf(p99, sizeof(p99), none ? "-" : "%.1f", json_number_value(json_object_get(v[i], "p99_us")));
		{
			const char *row[] = { str(&s, v[i], "src"),
					      str(&s, v[i], "dst"),
					      str(&s, v[i], "n"),
					      str(&s, v[i], "lost"),
					      p50,
					      p99,
					      str(&s, v[i], "bad") };

			table_row(t, row);
		}
	}
	table_print_or(t, f, "no pair measured in the window");
	table_free(t);
	strs_fini(&s);
	free(v);
}

void print_cc_outside(FILE *f, const json_t *op)
{
	struct strs s = { 0 };
	const json_t *x;
	size_t i;

	if (json_integer_value(json_object_get(op, "members")) <= 0)
		return;
	fprintf(f, "  outside the policy (most of a class at one value is stepped back inside unless the tuner is off; "
		   "members set apart stay): %lld\n",
		(long long)json_integer_value(json_object_get(op, "members")));
	/* an agent's node and port names: made printable */
	json_array_foreach(json_object_get(op, "first"), i, x) {
		const char *port = str(&s, x, "port");

		fprintf(f, "    %s%s%s (%s): %s\n", str(&s, x, "node") ?: "?", port ? ":" : "", port ?: "",
			str(&s, x, "class") ?: "?", str(&s, x, "why") ?: "?");
	}
	/* (the API lists the first 16) */
	if (json_integer_value(json_object_get(op, "members")) > (json_int_t)json_array_size(json_object_get(op, "first")))
		fprintf(f, "    ... and %lld more\n",
			(long long)(json_integer_value(json_object_get(op, "members")) -
				    (json_int_t)json_array_size(json_object_get(op, "first"))));
	strs_fini(&s);
}

void print_alerts(FILE *f, const json_t *d)
{
	static const struct column cols[] = {
		{ "ID", NULL, "id" },		      { "STATE", NULL, "state" },
		{ "KIND", NULL, "kind" },	      { "SUBJECT", NULL, "subject" },
		{ "FIRST SEEN", NULL, "first_seen" }, { "LAST SEEN", NULL, "last_seen" },
		{ "EVIDENCE", NULL, "evidence" },     { NULL, NULL, NULL },
	};

	print_items(f, d, cols, "no alerts");
}

void print_alert(FILE *f, const json_t *a)
{
	const json_t *acked = json_object_get(a, "acked"), *det = json_object_get(a, "details"), *m, *q;
	struct strs s = { 0 };
	size_t i;

	/* (the subject and evidence name agents' nodes and ports: made printable) */
	fprintf(f, "alert %s %s %s: %s (%s)\n", str(&s, a, "id") ?: "?", str(&s, a, "kind") ?: "?",
		str(&s, a, "subject") ?: "?", str(&s, a, "evidence") ?: "", str(&s, a, "state") ?: "?");
	if (str(&s, a, "first_seen"))
		fprintf(f, "seen %s .. %s%s%s\n", str(&s, a, "first_seen"), str(&s, a, "last_seen") ?: "?",
			str(&s, a, "cleared") ? ", cleared " : "", str(&s, a, "cleared") ?: "");
	/* a detector finding: its queues (a storm's or slow receiver's: the source, which sends the
	 * pauses, and the switch port it pauses), the queues paused behind it, the suggested action */
	if (json_is_object(q = json_object_get(det, "paused"))) {
		bool silent = json_is_true(json_object_get(det, "source_silent"));
		bool unread = json_is_true(json_object_get(det, "unread"));

		json_array_foreach(json_object_get(det, "ports"), i, m)
			fprintf(f, "source:  %s %s (sends the pauses%s%s%s%s%s)\n", str(&s, m, "node") ?: "?",
				str(&s, m, "port") ?: "?",
				unread ? "; no readings from it, nor pause counts from the port it paused"
				       : silent ? "; no readings of its own: read from " : "",
				silent && !unread ? str(&s, q, "node") ?: "?" : "", silent && !unread ? " " : "",
				silent && !unread ? str(&s, q, "port") ?: "?" : "",
				unread ? "; check the host, its agent and the switch's agent"
				       : silent ? "; check the host and its agent" : "");
		if (unread)
			fprintf(f, "pauses:  %s %s: no pause readings (kept out of lossless mode while nothing read "
				   "says the storm is over)\n", str(&s, q, "node") ?: "?", str(&s, q, "port") ?: "?");
		else
			fprintf(f, "pauses:  %s %s: paused %s us, sent %s bytes, queue %s bytes\n",
				str(&s, q, "node") ?: "?", str(&s, q, "port") ?: "?", str(&s, q, "paused_us") ?: "?",
				str(&s, q, "tx_bytes") ?: "?", str(&s, q, "queue_bytes") ?: "?");
	} else {
		json_array_foreach(json_object_get(det, "ports"), i, q)
			fprintf(f, "%s %s %s: paused %s us, sent %s bytes, queue %s bytes\n",
				i ? "        " : "ports:  ", str(&s, q, "node") ?: "?", str(&s, q, "port") ?: "?", str(&s, q, "paused_us") ?: "?",
				str(&s, q, "tx_bytes") ?: "?", str(&s, q, "queue_bytes") ?: "?");
	}
	if (json_array_size(json_object_get(det, "victims"))) {
		fprintf(f, "victims: %s, paused behind it:", str(&s, det, "victims_total") ?: "?");
		json_array_foreach(json_object_get(det, "victims"), i, q)
			fprintf(f, "%s %s %s", i ? "," : "", str(&s, q, "node") ?: "?", str(&s, q, "port") ?: "?");
		fputc('\n', f);
	}
	if (json_is_object(q = json_object_get(det, "suggested"))) {
		/* (rocefabctl mitigate does it while the alert is active and not mitigated yet) */
		bool can = !strcmp(str(&s, a, "state") ?: "", "active") &&
			   !json_is_true(json_object_get(det, "mitigated"));

		fprintf(f, "suggested: %s %s priority %s: %s%s%s%s\n", str(&s, q, "node") ?: "?",
			str(&s, q, "port") ?: "?", str(&s, q, "priority") ?: "?", str(&s, q, "change") ?: "?",
			can ? " (rocefabctl mitigate " : "", can ? str(&s, a, "id") ?: "ID" : "", can ? ")" : "");
	}
	if (json_is_object(q = json_object_get(det, "attributed_to")))
		fprintf(f, "attributed to: %s %s\n", str(&s, q, "kind") ?: "?", str(&s, q, "subject") ?: "?");
	if (json_is_object(q = json_object_get(det, "may_add")))
		fprintf(f, "may add to it: %s %s (the PFC detector's finding, found since)\n",
			str(&s, q, "kind") ?: "?", str(&s, q, "subject") ?: "?");
	if (json_is_object(acked))
		fprintf(f, "acknowledged by %s at %s\n", str(&s, acked, "by") ?: "?", str(&s, acked, "at") ?: "?");
	/* the changes on the finding (an operator's name and reason: made printable) */
	json_array_foreach(json_object_get(a, "mitigations"), i, m) {
		fprintf(f, "%s by %s at %s: change %s",
			!strcmp(str(&s, m, "op") ?: "", "restore") ? "restored" : "mitigated", str(&s, m, "by") ?: "?",
			str(&s, m, "at") ?: "?", str(&s, m, "change") ?: "?");
		if (json_object_get(m, "reason"))
			fprintf(f, " (%s)", str(&s, m, "reason") ?: "?");
		fputc('\n', f);
	}
	strs_fini(&s);
}

/* POST /api/v1/alerts/ID/mitigate: the change queued, and what it does. */
void print_mitigation(FILE *f, const json_t *d)
{
	const json_t *a = json_object_get(d, "action");
	struct strs s = { 0 };
	const char *why = str(&s, a, "reason");

	fprintf(f, "alert %s: change %s queued: %s %s %s priority %s%s%s%s\n", str(&s, d, "alert") ?: "?",
		str(&s, d, "change") ?: "?", str(&s, a, "op") ?: "?", str(&s, a, "node") ?: "?",
		str(&s, a, "port") ?: "?", str(&s, a, "priority") ?: "?", why && why[0] ? " (" : "",
		why && why[0] ? why : "", why && why[0] ? ")" : "");
	fprintf(f, "(rocefabctl changes %s shows its outcome)\n", str(&s, d, "change") ?: "?");
	strs_fini(&s);
}

/* The detector's configuration, without a newline. */
static void print_dl_conf(FILE *f, const json_t *cfg)
{
	fprintf(f, "deadlocks %s, storms %s, restore %lld ms",
		json_string_value(json_object_get(cfg, "deadlock_mode")) ?: "?",
		json_string_value(json_object_get(cfg, "storm_mode")) ?: "?",
		(long long)json_integer_value(json_object_get(cfg, "restore_ms")));
}

void print_detector(FILE *f, const json_t *d)
{
	const json_t *cfg = json_object_get(d, "config"), *lane = json_object_get(d, "lane"), *x;
	size_t i;

	if (!cfg && json_object_get(d, "storm_mode")) { /* detector config: the configuration alone */
		print_dl_conf(f, d);
		fputc('\n', f);
		return;
	}
	print_dl_conf(f, cfg);
	fprintf(f, "; every %lld ms (last run %.1f ms)\n",
		(long long)json_integer_value(json_object_get(d, "interval_ms")),
		json_number_value(json_object_get(d, "last_run_ms")));
	fprintf(f, "fast PFC lane: %lld ports (%lld with fresh readings), %.0f reports/s, %.0f bytes/s; %lld queues "
		   "stuck, %lld held out of lossless mode\n",
		(long long)json_integer_value(json_object_get(lane, "ports")),
		(long long)json_integer_value(json_object_get(lane, "fresh_ports")),
		json_number_value(json_object_get(lane, "reports_per_s")),
		json_number_value(json_object_get(lane, "bytes_per_s")),
		(long long)json_integer_value(json_object_get(d, "stuck_queues")),
		(long long)json_integer_value(json_object_get(d, "holds")));
	json_array_foreach(json_object_get(d, "findings"), i, x)
		fprintf(f, "  %-13s %s%s\n", json_string_value(json_object_get(x, "class")) ?: "?",
			json_string_value(json_object_get(x, "summary")) ?: "",
			json_is_true(json_object_get(x, "mitigated")) ? " [mitigated]" : "");
	/* when each lifts, from the newest reading's time (fabric time in the simulator) */
	json_array_foreach(json_object_get(d, "held"), i, x) {
		const char *cls = json_string_value(json_object_get(x, "class")) ?: "?";
		const json_t *until = json_object_get(x, "until_us"), *c = json_object_get(x, "culprit");
		double left = (double)(json_integer_value(until) -
				       json_integer_value(json_object_get(lane, "newest_reading_us"))) / 1e6;

		fprintf(f, "  held: %s:%s priority %lld lossy (%s #%lld, %s): ",
			json_string_value(json_object_get(x, "node")) ?: "?",
			json_string_value(json_object_get(x, "port")) ?: "?",
			(long long)json_integer_value(json_object_get(x, "priority")), cls,
			(long long)json_integer_value(json_object_get(x, "finding")),
			json_string_value(json_object_get(x, "state")) ?: "?");
		if (json_is_integer(until) && !json_integer_value(json_object_get(lane, "newest_reading_us")))
			fprintf(f, "lifts once readings come again (holds move only with them)\n");
		else if (json_is_integer(until))
			fprintf(f, "lifts %s%.1f s\n", left > 0 ? "in " : "now, ", left > 0 ? left : 0.0);
		else if (c && json_is_true(json_object_get(x, "unread")))
			fprintf(f, "lifts once readings show %s:%s stopped pausing (neither it nor this port reads "
				   "pauses now)\n",
				json_string_value(json_object_get(c, "node")) ?: "?",
				json_string_value(json_object_get(c, "port")) ?: "?");
		else if (c)
			fprintf(f, "lifts %lld ms after %s:%s stops pausing\n",
				(long long)json_integer_value(json_object_get(cfg, "restore_ms")),
				json_string_value(json_object_get(c, "node")) ?: "?",
				json_string_value(json_object_get(c, "port")) ?: "?");
		else
			fprintf(f, "until an operator puts it back (fix the routing first)\n");
	}
}

/* A list the server cut at its limit (truncated) says so under its table. */
static void more_note(FILE *f, const json_t *d, size_t n)
{
	if (json_is_true(json_object_get(d, "truncated")))
		fprintf(f, "(the newest %zu; --limit N for more)\n", n);
}

/* A change's target as the set command names it: SWITCH PORT qQUEUE, SWITCH PORT, or HOST
 * DEVICE:PORT. */
static void change_target(struct strs *s, const json_t *tg, char *target, size_t len)
{
	const char *agent = str(s, tg, "agent") ?: "?", *port = str(s, tg, "port") ?: "?";

	if (json_object_get(tg, "queue"))
		snprintf(target, len, "%s %s q%s", agent, port, str(s, tg, "queue") ?: "?");
	else if (!strcmp(str(s, tg, "role") ?: "", "switch"))
		snprintf(target, len, "%s %s", agent, port);
	else
		snprintf(target, len, "%s %s:%s", agent, str(s, tg, "device") ?: "?", port);
}

/* "name=value ..." of an object of settings (15 digits: 0.3 as typed); "-" when null.  What an
 * agent read back also names the object (device, port, queue: the target's), left out. */
static const char *settings_text(struct strs *s, const json_t *o)
{
	struct buf b;
	const char *k, *out;
	json_t *v;

	if (!json_is_object(o))
		return "-";
	buf_init(&b);
	json_object_foreach((json_t *)o, k, v) {
		char *t;

		if (!strcmp(k, "device") || !strcmp(k, "port") || !strcmp(k, "queue"))
			continue;
		t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

		buf_printf(&b, "%s%s=%s", b.len ? " " : "", k, t ?: "?");
		free(t);
	}
	out = b.oom ? NULL : keep(s, buf_steal(&b, NULL));
	buf_fini(&b);
	return out ? printable(s, out) : "?";
}

/* GET /api/v1/changes/ID: one change, whole. */
static void print_change(FILE *f, const json_t *c)
{
	const json_t *tg = json_object_get(c, "target"), *er = json_object_get(c, "error"),
		     *st = json_object_get(c, "settled"), *id;
	struct strs s = { 0 };
	char target[200];
	size_t i;

	change_target(&s, tg, target, sizeof(target));
	fprintf(f, "change:    %s (batch %s): %s%s\n", str(&s, c, "id") ?: "?", str(&s, c, "batch") ?: "?",
		str(&s, c, "state") ?: "?", json_is_true(json_object_get(c, "in_doubt")) ? " (in doubt)" : "");
	fprintf(f, "target:    %s %s\n", str(&s, tg, "kind") ?: "?", target);
	fprintf(f, "asked:     %s\n", settings_text(&s, json_object_get(c, "params")));
	fprintf(f, "before:    %s\n", settings_text(&s, json_object_get(c, "old")));
	fprintf(f, "read back: %s\n", settings_text(&s, json_object_get(c, "new")));
	fprintf(f, "by:        %s at %s\n", str(&s, c, "actor") ?: "?", str(&s, c, "created") ?: "?");
	fprintf(f, "reason:    %s\n", str(&s, c, "reason") ?: "-");
	fprintf(f, "sent:      %s; deadline %s; updated %s\n",
		str(&s, c, "sent") ?: !strcmp(str(&s, c, "state") ?: "", "pending") ? "not yet" : "never",
		str(&s, c, "deadline") ?: "?", str(&s, c, "updated") ?: "?");
	if (json_array_size(json_object_get(c, "after"))) {
		fprintf(f, "after:    ");
		json_array_foreach(json_object_get(c, "after"), i, id)
			fprintf(f, "%s %" JSON_INTEGER_FORMAT, i ? "," : "", json_integer_value(id));
		fputc('\n', f);
	}
	if (json_is_object(er))
		fprintf(f, "error:     %s: %s%s%s%s\n", str(&s, er, "code") ?: "?", str(&s, er, "message") ?: "",
			str(&s, er, "field") ? " (" : "", str(&s, er, "field") ?: "", str(&s, er, "field") ? ")" : "");
	if (json_is_object(st))
		fprintf(f, "settled:   %s by %s at %s: %s\n",
			json_is_true(json_object_get(st, "applied")) ? "applied" : "not applied",
			str(&s, st, "by") ?: "?", str(&s, st, "at") ?: "?", str(&s, st, "reason") ?: "-");
	strs_fini(&s);
}

void print_warnings(FILE *f, const json_t *d)
{
	struct strs s = { 0 };
	const json_t *w;
	size_t i;

	/* (a server's text, naming agents' nodes and ports: made printable) */
	json_array_foreach(json_object_get(d, "warnings"), i, w)
		fprintf(f, "rocefabctl: warning: %s [%s]\n", str(&s, w, "detail") ?: "?", str(&s, w, "code") ?: "?");
	strs_fini(&s);
}

void print_changes(FILE *f, const json_t *d)
{
	/* the reason last: a controller's is long */
	static const char *const h[] = { "ID", "STATE",	  "KIND",  "TARGET", "PARAMS",
					 "BY", "CREATED", "ERROR", "REASON", NULL };
	const json_t *items = json_object_get(d, "items") ?: json_object_get(d, "changes");
	struct strs s = { 0 };
	struct table *t;
	size_t i;
	json_t *c;

	if (!items) {
		print_change(f, d);
		return;
	}
	t = table_new(h);
	json_array_foreach(items, i, c) {
		const json_t *tg = json_object_get(c, "target");
		/* (15 digits: 0.3 as it was typed, not 0.29999999999999999) */
		char target[200], *params = json_dumps(json_object_get(c, "params"),
						       JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
		const char *err = str(&s, json_object_get(c, "error"), "message");
		const char *code = str(&s, json_object_get(c, "error"), "code");
		const char *state = str(&s, c, "state") ?: "";
		const json_t *after = json_object_get(c, "after");
		char *both;

		/* a change held until those its check counted are applied: which */
		if (!strcmp(state, "pending") && json_array_size(after)) {
			struct buf b;
			size_t k;
			json_t *id;

			buf_init(&b);
			buf_puts(&b, "pending (after");
			json_array_foreach(after, k, id)
				buf_printf(&b, "%s %" JSON_INTEGER_FORMAT, k ? "," : "", json_integer_value(id));
			buf_puts(&b, ")");
			state = (b.oom ? NULL : keep(&s, buf_steal(&b, NULL))) ?: state;
			buf_fini(&b);
		} else if (json_is_true(json_object_get(c, "in_doubt"))) {
			state = "timed_out (in doubt)";
		} else if (json_is_object(json_object_get(c, "settled")) &&
			   asprintf(&both, "%s (settled by %s)", state,
				    str(&s, json_object_get(c, "settled"), "by") ?: "?") >= 0) {
			/* an operator's word, not the agent's read-back */
			state = keep(&s, both) ?: state;
		}
		if (code && err && asprintf(&both, "%s: %s", code, err) >= 0)
			err = keep(&s, both) ?: err;

		change_target(&s, tg, target, sizeof(target));
		{
			/* (the error and the reason cut: changes ID shows them whole) */
			const char *row[] = { str(&s, c, "id"),      state,
					      str(&s, tg, "kind"),   target,
					      params ? params : "",  str(&s, c, "actor"),
					      str(&s, c, "created"), cell_cut(&s, err ? err : "", CELL_MAX),
					      cell_cut(&s, str(&s, c, "reason") ?: "", CELL_MAX) };

			table_row(t, row);
		}
		free(params);
	}
	table_print_or(t, f, "no changes");
	more_note(f, d, json_array_size(items));
	table_free(t);
	strs_fini(&s);
}

void print_settings_log(FILE *f, const json_t *d)
{
	/* the reason before what changed: a list of host classes makes a wide column */
	static const char *const h[] = { "ID", "TIME", "SETTING", "BY", "REASON", "CHANGED", NULL };
	const json_t *items = json_object_get(d, "items");
	struct strs s = { 0 };
	struct table *t;
	size_t i;
	json_t *it;

	t = table_new(h);
	json_array_foreach(items, i, it) {
		struct buf b;
		const char *k;
		json_t *ch;

		/* FIELD FROM -> TO, ... (15 digits: 0.1 as typed) */
		buf_init(&b);
		json_object_foreach(json_object_get(it, "changed"), k, ch) {
			char *from = json_dumps(json_object_get(ch, "from"),
						JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
			char *to = json_dumps(json_object_get(ch, "to"),
					      JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

			buf_printf(&b, "%s%s %s -> %s", b.len ? ", " : "", k, from ?: "?", to ?: "?");
			free(from);
			free(to);
		}
		{
			const char *changed = b.oom ? NULL : keep(&s, buf_steal(&b, NULL));
			const char *row[] = { str(&s, it, "id"), str(&s, it, "time"), str(&s, it, "setting"),
					      str(&s, it, "actor"), str(&s, it, "reason") ?: "", changed ?: "" };

			table_row(t, row);
		}
		buf_fini(&b);
	}
	table_print_or(t, f, "no change of a setting");
	more_note(f, d, json_array_size(items));
	table_free(t);
	strs_fini(&s);
}

/* The tuner's signals of its last decision interval (GET /api/v1/cc "signals"). */
static void print_cc_signals(FILE *f, const json_t *g)
{
	const char *k;
	json_t *x, *v;

	if (!json_is_number(json_object_get(g, "pause_share"))) /* none before the first interval */
		return;
	fprintf(f, "  signals of the last interval: ports paused %.3f %% of the time; per host %.1f %% of capacity "
		   "sent, %.2f CNPs, %.2f retransmissions; %.2f drops per port",
		json_number_value(json_object_get(g, "pause_share")) * 100,
		json_number_value(json_object_get(g, "host_util")) * 100,
		json_number_value(json_object_get(g, "cnp_per_host")),
		json_number_value(json_object_get(g, "retransmits_per_host")),
		json_number_value(json_object_get(g, "drops_per_port")));
	if (json_is_number(v = json_object_get(g, "probe_p99_us")))
		fprintf(f, "; probes' p99 %.1f us", json_number_value(v));
	/* (the tuner does not take retransmissions and drops at egress for a step's harm then) */
	if ((v = json_object_get(g, "link_errors")) && json_number_value(v) > 0)
		fprintf(f, "; links: %.0f errors in the fabric (frames lost, carrier changes)", json_number_value(v));
	fputc('\n', f);
	json_object_foreach((json_t *)g, k, x)
		if (json_object_get(x, "queue_delay_p90_us"))
			fprintf(f, "    %-9s queue delay p90 %.1f us, %.1f %% marked, %.1f %% utilized\n", k,
				json_number_value(json_object_get(x, "queue_delay_p90_us")),
				json_number_value(json_object_get(x, "marked_share")) * 100,
				json_number_value(json_object_get(x, "utilization")) * 100);
	json_object_foreach(json_object_get(g, "host_classes"), k, x)
		fprintf(f, "    %-9s paused %.3f %%, its ToR ports' queue delay p90 %.1f us, %.1f %% sent, %.2f CNPs "
			   "per host\n",
			k, json_number_value(json_object_get(x, "pause_share")) * 100,
			json_number_value(json_object_get(x, "tor_queue_delay_p90_us")),
			json_number_value(json_object_get(x, "host_util")) * 100,
			json_number_value(json_object_get(x, "cnp_per_host")));
}

/* " (400 kB)" after a byte count (a name ending in _bytes) of 1000 or more; "" otherwise. */
static const char *size_note(const char *name, const json_t *v, char *buf, size_t len)
{
	size_t n = strlen(name);
	char size[32];

	if (n <= 6 || strcmp(name + n - 6, "_bytes") || !json_is_number(v) || json_number_value(v) < 1000)
		return "";
	fmt_si(json_number_value(v), "B", size, sizeof(size));
	snprintf(buf, len, " (%s)", size);
	return buf;
}

/* GET /api/v1/cc/policy: a field a line, by name as cc policy NAME=VALUE takes it, in the
 * policy's order (its knobs' ranges side by side; the mode first, the host classes last), byte
 * counts with their size. */
static void print_cc_policy(FILE *f, const json_t *d)
{
	static const char *const h[] = { "NAME", "VALUE", NULL };
	struct table *t = table_new(h);
	struct strs s = { 0 };
	size_t i;
	const char *k;
	json_t *v, *hc;

	{
		const char *row[] = { "mode", str(&s, d, "mode") ?: "?" };

		table_row(t, row);
	}
	json_object_foreach((json_t *)d, k, v) {
		char val[64], size[40];

		if (!strcmp(k, "mode") || !strcmp(k, "host_classes"))
			continue;
		snprintf(val, sizeof(val), "%.15g%s", json_number_value(v), size_note(k, v, size, sizeof(size)));
		if (!json_is_number(v)) { /* (a string, or what a later rocefabd may add: as JSON) */
			char *j = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

			snprintf(val, sizeof(val), "%s", json_is_string(v) ? json_string_value(v) : j ? j : "?");
			free(j);
		}
		{
			const char *row[] = { k, val };

			table_row(t, row);
		}
	}
	hc = json_object_get(d, "host_classes");
	if (!json_array_size(hc)) {
		const char *row[] = { "host_classes", "none (every host is of the class hosts)" };

		table_row(t, row);
	}
	json_array_foreach(hc, i, v) {
		char *cls = NULL;
		const char *row[] = { i ? "" : "host_classes",
				      asprintf(&cls, "%s: %s", str(&s, v, "name") ?: "?", str(&s, v, "hosts") ?: "?") < 0
					      ? "?"
					      : keep(&s, cls) };

		table_row(t, row);
	}
	table_print(t, f);
	table_free(t);
	strs_fini(&s);
}

/* GET /api/v1/cc's set_apart: the members inside the policy not at their class's setting. */
static void print_cc_set_apart(FILE *f, const json_t *sa)
{
	long long n = (long long)json_integer_value(json_object_get(sa, "members"));
	struct strs s = { 0 };
	const json_t *x;
	size_t i;

	if (n <= 0)
		return;
	fprintf(f, "  set apart (inside the policy, not at their class's setting; steps leave them as they are): "
		   "%lld\n", n);
	/* an agent's node and port names: made printable */
	json_array_foreach(json_object_get(sa, "first"), i, x) {
		const char *port = str(&s, x, "port"), *knob = str(&s, x, "knob") ?: "?";
		char size[40], csize[40];

		fprintf(f, "    %s%s%s (%s): %s=%.15g%s, the class's %.15g%s\n", str(&s, x, "node") ?: "?",
			port ? ":" : "", port ?: "", str(&s, x, "class") ?: "?", knob,
			json_number_value(json_object_get(x, "value")),
			size_note(knob, json_object_get(x, "value"), size, sizeof(size)),
			json_number_value(json_object_get(x, "class_value")),
			size_note(knob, json_object_get(x, "class_value"), csize, sizeof(csize)));
	}
	if (json_integer_value(json_object_get(sa, "knobs")) > (json_int_t)json_array_size(json_object_get(sa, "first")))
		fprintf(f, "    (the first %zu of %lld listed)\n", json_array_size(json_object_get(sa, "first")),
			(long long)json_integer_value(json_object_get(sa, "knobs")));
	strs_fini(&s);
}

/* rocefabctl cc ...: the tuner's status, a list of proposals, one proposal, or the policy. */
void print_cc(FILE *f, const json_t *d)
{
	static const char *const h[] = { "ID", "MADE", "STEP", "PHASE", "STATE", "CLASS", "KNOB", "FROM", "TO",
					 "N", "OUTCOME", "BATCH", "BY", "REASON", NULL };
	struct strs s = { 0 };
	bool any_made = false;
	struct table *t;
	size_t i;
	json_t *p, *x;
	const char *k;

	if (json_is_object(d) && json_object_get(d, "signals")) { /* the status */
		json_t *prio = json_object_get(d, "priority"), *low = json_object_get(d, "lowest_lossless");
		char ps[40] = "", every[32];

		if (json_is_integer(prio))
			snprintf(ps, sizeof(ps), ", priority %lld", (long long)json_integer_value(prio));
		tu_format_duration(json_integer_value(json_object_get(d, "interval_ms")) * 1000000, every,
				   sizeof(every));
		fprintf(f, "mode %s, %s%s; a decision every %s, %lld so far; %lld steps proposed (%lld rolled back), "
			   "%lld proposals, %lld change sets in flight\n",
			json_string_value(json_object_get(d, "mode")) ?: "?",
			json_string_value(json_object_get(d, "state")) ?: "?", ps, every,
			(long long)json_integer_value(json_object_get(d, "decisions")),
			(long long)json_integer_value(json_object_get(d, "steps")),
			(long long)json_integer_value(json_object_get(d, "rolled_back")),
			(long long)json_integer_value(json_object_get(d, "proposals_made")),
			(long long)json_integer_value(json_object_get(d, "changes_in_flight")));
		json_object_foreach(json_object_get(d, "settings"), k, x) {
			const char *kk;
			json_t *v;

			fprintf(f, "  %-9s", printable(&s, k) ?: "?");
			json_object_foreach(x, kk, v) {
				char size[40];

				/* bytes whole, not 3e+06, as cc policy and set take them; their size beside */
				fprintf(f, " %s=%.15g%s", printable(&s, kk) ?: "?", json_number_value(v),
					size_note(kk, v, size, sizeof(size)));
			}
			fputc('\n', f);
		}
		if (json_is_integer(prio) && json_is_integer(low) && json_integer_value(low) != json_integer_value(prio))
			fprintf(f, "  priority %lld is the lowest lossless one: the tuner moves to it once its steps on "
				   "priority %lld are undone (rocefabctl cc rollback)\n",
				(long long)json_integer_value(low), (long long)json_integer_value(prio));
		if (json_is_true(json_object_get(d, "restoring")))
			fprintf(f, "  restoring: the state saved before this start, if any, comes back at the first "
				   "decision once the agents reported (a step under way then rolls back; the counts of "
				   "steps and rollbacks come back with it)\n");
		print_cc_signals(f, json_object_get(d, "signals"));
		/* an operator's pattern, an agent's node and port names: made printable */
		json_array_foreach(json_object_get(d, "empty_host_classes"), i, x)
			fprintf(f, "  host class %s: no host matches %s\n", str(&s, x, "name") ?: "?",
				str(&s, x, "hosts") ?: "?");
		if (json_is_string(json_object_get(d, "harder_held_for"))) {
			fprintf(f, "  no harder step while the fabric has a fault (%s): its pauses are not "
				   "congestion control's to fix\n",
				str(&s, d, "harder_held_for") ?: "");
			if (json_is_string(json_object_get(d, "harder_held_since")))
				fprintf(f, "    held since %s\n", str(&s, d, "harder_held_since"));
		}
		if (json_is_true(json_object_get(d, "host_classes_pending")))
			fprintf(f, "  new host classes wait until no step of a host class is applied in part\n");
		json_array_foreach(json_object_get(d, "steps_in_progress"), i, x) {
			const char *st = json_string_value(json_object_get(x, "state")) ?: "?";
			bool back = !strcmp(st, "rollback"); /* from -> to are the step's: it goes back */
			double from = json_number_value(json_object_get(x, "from")),
			       to = json_number_value(json_object_get(x, "to"));

			fprintf(f, "  step %lld %s", (long long)json_integer_value(json_object_get(x, "id")),
				back ? "rolling back" : st);
			if (json_is_integer(p = json_object_get(x, "proposal")))
				fprintf(f, " (proposal %lld)", (long long)json_integer_value(p));
			fprintf(f, ": %s %s %.15g -> %.15g%s\n", json_string_value(json_object_get(x, "class")) ?: "?",
				json_string_value(json_object_get(x, "knob")) ?: "?", back ? to : from, back ? from : to,
				json_is_true(json_object_get(x, "forced")) ? " (forced)" : "");
		}
		print_cc_outside(f, json_object_get(d, "outside_policy"));
		print_cc_set_apart(f, json_object_get(d, "set_apart"));
		json_array_foreach(json_object_get(d, "holds"), i, x) {
			const char *dir = json_string_value(json_object_get(x, "direction"));

			long long n = (long long)json_integer_value(json_object_get(x, "intervals"));

			fprintf(f, "  held back for %lld interval%s: %s %s%s%s%s\n", n, n == 1 ? "" : "s",
				json_string_value(json_object_get(x, "class")) ?: "?",
				json_string_value(json_object_get(x, "knob")) ?: "?", dir ? " " : "", dir ?: "",
				json_is_true(json_object_get(x, "unless_pausing")) ? " (unless ports pause)" : "");
		}
		json_array_foreach(json_object_get(d, "relax_to"), i, x)
			fprintf(f, "  %s %s goes back toward %.15g (its value before the moves against pauses) once "
				"ports are quiet (%lld intervals so far)\n",
				json_string_value(json_object_get(x, "class")) ?: "?",
				json_string_value(json_object_get(x, "knob")) ?: "?",
				json_number_value(json_object_get(x, "value")),
				(long long)json_integer_value(json_object_get(d, "quiet_intervals")));
		if (json_is_string(json_object_get(d, "saved_policy")))
			fprintf(f, "  %s\n", str(&s, d, "saved_policy") ?: "");
		strs_fini(&s);
		return;
	}
	if (!json_is_array(d) && !json_object_get(d, "phase")) { /* the policy, or else as it is */
		if (json_is_string(json_object_get(d, "mode")))
			print_cc_policy(f, d);
		else
			print_json(f, d);
		return;
	}
	if (json_is_array(d) && !json_array_size(d)) { /* no proposal waiting, nothing to undo */
		fprintf(f, "none\n");
		return;
	}
	t = table_new(h);
	for (i = 0; json_is_array(d) ? i < json_array_size(d) : i < 1; i++) {
		char from[32], to[32], n[16], made[32] = "-", batch[24] = "";

		p = json_is_array(d) ? json_array_get(d, i) : (json_t *)d;
		/* when rocefabd made it, by its clock (to the second); a record of before it kept
		 * that: the end of the decision interval it was made in, by the counters' clock */
		if (json_is_string(json_object_get(p, "made_at")) &&
		    strlen(json_string_value(json_object_get(p, "made_at"))) >= 19) {
			snprintf(made, sizeof(made), "%.19sZ", json_string_value(json_object_get(p, "made_at")));
		} else if (json_integer_value(json_object_get(p, "t_us")) > 0) {
			time_t sec = (time_t)(json_integer_value(json_object_get(p, "t_us")) / 1000000);
			struct tm tm;

			if (gmtime_r(&sec, &tm) && strftime(made, sizeof(made), "%Y-%m-%dT%H:%M:%SZ*", &tm))
				any_made = true;
		}
		/* its changes in the audit log: rocefabctl changes --batch B */
		if (json_integer_value(json_object_get(p, "change_batch")) > 0)
			snprintf(batch, sizeof(batch), "%lld",
				 (long long)json_integer_value(json_object_get(p, "change_batch")));
		snprintf(from, sizeof(from), "%.15g", json_number_value(json_object_get(p, "from")));
		snprintf(to, sizeof(to), "%.15g", json_number_value(json_object_get(p, "to")));
		/* nchanges: the list is capped (64), the count is not */
		snprintf(n, sizeof(n), "%lld", json_is_integer(json_object_get(p, "nchanges"))
						       ? (long long)json_integer_value(json_object_get(p, "nchanges"))
						       : (long long)json_array_size(json_object_get(p, "changes")));
		{
			/* why it failed or was turned down first (the tuner turned off, the policy
			 * changed while it waited), then the evidence it was made on */
			const char *err = str(&s, p, "error"), *why = str(&s, p, "reason") ?: "";
			const char *said = str(&s, p, "decision_reason");
			char *both = NULL;
			const char *reason;

			/* and the operator's own reason before it */
			if (said && asprintf(&both, "%s: %s; made for: %s", str(&s, p, "decided_by") ?: "operator",
					     said, why) >= 0)
				why = keep(&s, both) ?: why;
			both = NULL;
			reason = err && asprintf(&both, "%s; %s%s", err, said ? "" : "made for: ", why) >= 0
					 ? keep(&s, both)
					 : why;
			/* turned down by the tuner itself, not an operator's reject (the policy or a
			 * member changed while it waited): said in its state */
			const char *state = err && !strncmp(err, "withdrawn: ", 11) ? "withdrawn" : str(&s, p, "state");
			const char *row[] = { str(&s, p, "id"), made, str(&s, p, "step"), str(&s, p, "phase"),
					      state, str(&s, p, "class"), str(&s, p, "knob"),
					      from,		   to,			n,
					      str(&s, p, "outcome") ?: "", batch,
					      str(&s, p, "decided_by") ?: "", reason };

			table_row(t, row);
		}
	}
	table_print(t, f);
	/* (MADE is rocefabd's clock, as the changes' CREATED is) */
	if (any_made)
		fputs("MADE*: a record saved before rocefabd kept when it made it: the end of its decision "
		      "interval, by the counters' clock (fabric time in a simulation)\n",
		      f);
	table_free(t);
	strs_fini(&s);
}
