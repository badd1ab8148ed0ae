/* Handlers: health, version, the counter registry, and /metrics. */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <zlib.h>

#include "api/internal.h"
#include "daemon/detector.h"
#include "daemon/idguard.h"
#include "daemon/pingmesh.h"
#include "daemon/report.h"
#include "daemon/retention.h"
#include "daemon/rwrite.h"
#include "daemon/store.h"
#include "daemon/tuner.h"
#include "daemon/views.h"
#include "lib/jsonutil.h"
#include "lib/timeutil.h"

/* What an operator should fix although rocefabd works: for now, agent tokens without a binding
 * (they may report as any agent until the next release).  Their names only to a caller that
 * may read (health needs no token). */
static json_t *health_warnings(struct api_req *req, struct store_reader *rd)
{
	json_t *warnings = json_array(), *names = NULL;
	size_t n;

	if (!rd || tokens_unbound(rd, &names) < 0 || !(n = json_array_size(names))) {
		json_decref(names);
		return warnings;
	}
	json_array_append_new(
		warnings,
		json_pack("{s:s,s:s,s:I}", "code", "UNBOUND_AGENT_TOKENS", "detail",
			  "agent tokens without an agent binding may report as any agent: bind them "
			  "(rocefabd token bind NAME --agent ID|PATTERN) or replace them before the "
			  "next release, which refuses them",
			  "count", (json_int_t)n));
	if (role_allows(req->role, ROLE_VIEWER))
		json_object_set(json_array_get(warnings, 0), "tokens", names);
	json_decref(names);
	return warnings;
}

/* A warning (code, detail from fmt) into warnings (NULL: none kept). */
static void __attribute__((format(printf, 3, 4)))
warn(json_t *warnings, const char *code, const char *fmt, ...)
{
	char detail[1200];
	va_list ap;

	if (!warnings)
		return;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	json_array_append_new(warnings, json_pack("{s:s,s:s}", "code", code, "detail", detail));
}

/* Each remote-write receiver's state, and its warnings: failing now, or drops in the last 10
 * minutes. */
static json_t *health_rwrite(struct rwrite *rw, json_t *warnings)
{
	json_t *arr = json_array();
	int64_t now = tu_now_ns();

	for (size_t i = 0; arr && i < rwrite_targets(rw); i++) {
		struct rwrite_stats rs;

		rwrite_get_stats(rw, i, &rs);
		json_array_append_new(
			arr, json_pack("{s:s,s:I,s:I,s:I,s:I,s:{s:I,s:I},s:o,s:s?}", "url", rs.url,
				       "sent_samples", (json_int_t)rs.sent, "queued_samples",
				       (json_int_t)rs.queue_samples, "queue_bytes",
				       (json_int_t)rs.queue_bytes, "retries", (json_int_t)rs.retries,
				       "dropped_samples", "queue_full", (json_int_t)rs.dropped_full,
				       "rejected", (json_int_t)rs.dropped_rejected, "last_success",
				       store_time_json(rs.last_success_ns), "last_error",
				       rs.last_error[0] ? rs.last_error : NULL));
		if (rs.failing_since_ns)
			warn(warnings, "REMOTE_WRITE_FAILING",
			     "remote-write to %s fails since %.0f s (%s); %llu samples wait in its queue "
			     "(remote_write.max_queue_bytes bounds it)",
			     rs.url, (double)(now - rs.failing_since_ns) / 1e9, rs.last_error,
			     (unsigned long long)rs.queue_samples);
		if (rs.last_rejected_ns && now - rs.last_rejected_ns < 600 * NSEC_PER_SEC)
			warn(warnings, "REMOTE_WRITE_REJECTED",
			     "%s refused samples in the last 10 minutes, dropped (%llu since the start; "
			     "its answer: %s)",
			     rs.url, (unsigned long long)rs.dropped_rejected, rs.last_rejection);
		if (rs.last_dropped_ns && now - rs.last_dropped_ns < 600 * NSEC_PER_SEC)
			warn(warnings, "REMOTE_WRITE_DROPPED",
			     "samples for %s did not fit remote_write.max_queue_bytes in the last 10 "
			     "minutes and were dropped (%llu since the start)",
			     rs.url, (unsigned long long)rs.dropped_full);
	}
	return arr;
}

int h_health(struct api_req *req)
{
	const struct api_deps *d = api_deps(req);
	struct store_reader *rd = store_reader_get(d->store);
	struct store_stats ss;
	struct ingest_stats is;
	struct views_opts o;
	int64_t total = 0, stale = 0, now = tu_now_ns();
	json_t *doc, *warnings;
	bool db_ok, failing;

	o = api_views_opts(req);
	store_get_stats(d->store, &ss);
	failing = ss.failed_recent && now - ss.failed_last <= STORE_FAILED_WINDOW_NS;
	ingest_get_stats(d->ingest, &is);
	db_ok = rd && views_agent_counts(rd, &o, &total, &stale) == 0;
	warnings = health_warnings(req, db_ok ? rd : NULL);
	store_reader_put(d->store, rd);
	doc = json_pack("{s:s,s:s,s:f,s:{s:s,s:b,s:I,s:I},s:{s:I,s:I},s:{s:I,s:I,s:f}}", "status",
			!db_ok ? "unavailable"
			: failing || ss.queue_depth * 10 >= ss.queue_max * 9 ? "degraded" : "ok",
			"version", ROCEFAB_VERSION, "uptime_s",
			(double)((tu_now_ns() - d->started_ns) / NSEC_PER_MSEC) / 1e3, "store", "path",
			store_path(d->store), "ok", db_ok, "queue_depth",
			(json_int_t)ss.queue_depth, "queue_max", (json_int_t)ss.queue_max, "agents",
			"total", (json_int_t)total, "stale", (json_int_t)stale, "ingest", "reports",
			(json_int_t)is.reports, "samples", (json_int_t)is.samples, "samples_per_s",
			is.samples_per_s);
	/* where the database lives is for those who may read (health itself needs no token) */
	if (doc && !role_allows(req->role, ROLE_VIEWER))
		json_object_del(json_object_get(doc, "store"), "path");
	if (doc && d->retention) {
		struct retention_status rs;

		retention_get_status(d->retention, &rs);
		json_object_update_missing_new(
			json_object_get(doc, "store"),
			json_pack("{s:o,s:o,s:{s:f,s:f,s:f,s:f},s:{s:I,s:I,s:I,s:I}}", "used_bytes",
				  rs.used_bytes ? json_integer((json_int_t)rs.used_bytes) : json_null(), "max_bytes",
				  rs.max_bytes ? json_integer((json_int_t)rs.max_bytes) : json_null(),
				  "retention_s", "raw", rs.in_force_ns[RET_RAW] / 1e9, "1m",
				  rs.in_force_ns[RET_1M] / 1e9, "1h", rs.in_force_ns[RET_1H] / 1e9,
				  "probes", rs.in_force_ns[RET_PROBES] / 1e9, "pruned", "raw",
				  (json_int_t)rs.pruned[RET_RAW], "1m", (json_int_t)rs.pruned[RET_1M], "1h",
				  (json_int_t)rs.pruned[RET_1H], "probes", (json_int_t)rs.pruned[RET_PROBES]));
		if (rs.unmet && warnings)
			json_array_append_new(
				warnings,
				json_pack("{s:s,s:s}", "code", "STORE_BUDGET_UNMET", "detail",
					  "store.max_bytes cannot be met even with every retention at its "
					  "shortest: raise the budget"));
		if (rs.shortened && warnings)
			json_array_append_new(
				warnings,
				json_pack("{s:s,s:s}", "code", "STORE_BUDGET", "detail",
					  "store.max_bytes keeps data for less than the configured "
					  "retentions (store.retention_s in this answer): raise the budget "
					  "or shorten them"));
	}
	if (doc && d->rwrite)
		json_object_set_new(doc, "remote_write", health_rwrite(d->rwrite, warnings));
	if (doc && warnings) {
		/* agent ids two agents report as (their names to those who may read) */
		json_t *shared = idguard_shared(ingest_idguard(d->ingest), tu_mono_ns());

		if (json_array_size(shared)) {
			json_t *w = json_pack("{s:s,s:s,s:I}", "code", "AGENT_ID_SHARED", "detail",
					      "two agents report as one agent id (a cloned host keeps its host "
					      "name, the default agent.id): the second one's reports are refused; "
					      "give it its own agent.id",
					      "count", (json_int_t)json_array_size(shared));

			if (w && role_allows(req->role, ROLE_VIEWER))
				json_object_set(w, "agents", shared);
			json_array_append_new(warnings, w);
		}
		json_decref(shared);
	}
	if (failing && warnings) {
		json_t *t = store_time_json(ss.failed_since), *l = store_time_json(ss.failed_last);

		warn(warnings, "STORE_WRITE_FAILING",
		     "the database fails writes: %llu transactions failed since %s, the last at %s with '%s' (a "
		     "full disk? see the log): what they held is not stored; agents keep the reports refused "
		     "(503) spooled and send them again",
		     (unsigned long long)ss.failed_recent, json_string_value(t) ?: "?", json_string_value(l) ?: "?",
		     ss.failed_error);
		json_decref(t);
		json_decref(l);
	}
	if (db_ok && total > 0 && stale == total && warnings)
		json_array_append_new(
			warnings,
			json_pack("{s:s,s:s,s:I}", "code", "AGENTS_STALE", "detail",
				  "every agent is stale: none reported within agents.stale_after of its "
				  "intervals, so what is shown is old (are the agents running, and can they "
				  "reach this rocefabd with their tokens? their logs say why a report failed)",
				  "count", (json_int_t)total));
	if (doc && warnings)
		json_object_set_new(doc, "warnings", warnings);
	else
		json_decref(warnings);
	return api_reply_json(req, db_ok ? 200 : 503, doc);
}

int h_version(struct api_req *req)
{
	const struct api_deps *d = api_deps(req);

	return api_reply_json(req, 200,
			      json_pack("{s:s,s:s,s:i,s:i,s:I,s:{s:b,s:b,s:b,s:b}}", "version",
					ROCEFAB_VERSION, "api", "v1", "report_schema", REPORT_SCHEMA,
					"store_schema", STORE_SCHEMA_VERSION, "counters",
					(json_int_t)reg_size(d->reg), "features", "detector",
					d->detector != NULL, "tuner", d->tuner != NULL, "events",
					api_sse_hub(req) != NULL, "dashboard", api_web(req) != NULL));
}

/* Who the caller is: the dashboard hides what its role may not do. */
int h_whoami(struct api_req *req)
{
	return api_reply_json(req, 200,
			      json_pack("{s:b,s:s?,s:s}", "authenticated", req->token_valid, "token",
					req->token_valid ? req->token_name : NULL, "role",
					role_name(req->role)));
}

int h_counters_registry(struct api_req *req)
{
	const struct api_deps *d = api_deps(req);
	json_t *doc = reg_document(d->reg);

	return api_reply_json(req, 200,
			      json_pack("{s:O,s:I}", "items", json_object_get(doc, "counters"),
					"count", (json_int_t)reg_size(d->reg)));
}

/* Whether the request takes gzip (Accept-Encoding names gzip, or *, without q=0). */
static bool accepts_gzip(struct api_req *req)
{
	const char *ae = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);

	for (const char *p = ae; p && *p;) {
		size_t n = strcspn(p, ",");
		char tok[64];
		const char *q;

		snprintf(tok, sizeof(tok), "%.*s", (int)(n < sizeof(tok) ? n : sizeof(tok) - 1), p);
		p += n + (p[n] == ',');
		for (char *t = tok; *t; t++)
			*t = (char)(*t == '\t' ? ' ' : *t);
		{
			char *name = tok + strspn(tok, " ");
			size_t nl = strcspn(name, " ;");

			if (!((nl == 4 && !strncasecmp(name, "gzip", 4)) || (nl == 1 && name[0] == '*')))
				continue;
			q = strstr(name, "q=");
			if (q && strtod(q + 2, NULL) <= 0)
				return false;
			return true;
		}
	}
	return false;
}

/* text gzipped (RFC 1952), a new buffer; NULL when zlib fails. */
static char *gzip(const char *text, size_t len, size_t *ret_len)
{
	z_stream z = { 0 };
	uLong cap = compressBound((uLong)len) + 64;
	char *out = malloc(cap);

	if (!out || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)text;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*ret_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* The process metrics Prometheus' client libraries export (process_*), from /proc/self. */
static void process_metrics(struct buf *b)
{
	char stat[1024], *p;
	unsigned long utime = 0, stime = 0, vsize = 0;
	long rss = 0;
	unsigned long long start = 0;
	struct rlimit rl;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	int fds = 0;
	FILE *f = fopen("/proc/self/stat", "re");
	DIR *d;

	if (f) {
		size_t n = fread(stat, 1, sizeof(stat) - 1, f);

		stat[n] = '\0';
		fclose(f);
		/* after the command's ')': state ppid ... utime(14) stime(15) ... starttime(22)
		 * vsize(23) rss(24) */
		if ((p = strrchr(stat, ')')))
			sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %llu %lu %ld",
			       &utime, &stime, &start, &vsize, &rss);
	}
	if ((d = opendir("/proc/self/fd"))) {
		while (readdir(d))
			fds++;
		closedir(d);
		fds -= 3; /* ., .. and the directory itself */
	}
	buf_printf(b,
		   "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		   "# TYPE process_cpu_seconds_total counter\n"
		   "process_cpu_seconds_total %.2f\n"
		   "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		   "# TYPE process_resident_memory_bytes gauge\n"
		   "process_resident_memory_bytes %lld\n"
		   "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		   "# TYPE process_virtual_memory_bytes gauge\n"
		   "process_virtual_memory_bytes %lu\n"
		   "# HELP process_open_fds Number of open file descriptors.\n"
		   "# TYPE process_open_fds gauge\n"
		   "process_open_fds %d\n",
		   (double)(utime + stime) / (double)(tck > 0 ? tck : 100), (long long)rss * page, vsize,
		   fds > 0 ? fds : 0);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		buf_printf(b,
			   "# HELP process_max_fds Maximum number of open file descriptors.\n"
			   "# TYPE process_max_fds gauge\n"
			   "process_max_fds %llu\n",
			   (unsigned long long)rl.rlim_cur);
	{
		/* the start time: boot time plus the process's start in clock ticks */
		FILE *s = fopen("/proc/stat", "re");
		char line[256];
		unsigned long long btime = 0;

		while (s && fgets(line, sizeof(line), s))
			if (sscanf(line, "btime %llu", &btime) == 1)
				break;
		if (s)
			fclose(s);
		if (btime)
			buf_printf(b,
				   "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
				   "# TYPE process_start_time_seconds gauge\n"
				   "process_start_time_seconds %.2f\n",
				   (double)btime + (double)start / (double)(tck > 0 ? tck : 100));
	}
}

/* rocefab_remote_write_*, one snapshot of each receiver. */
static void metrics_rwrite(struct rwrite *rw, struct buf *b)
{
	static const struct {
		const char *name, *type, *labels, *help;
	} fam[] = {
		{ "sent_samples_total", "counter", "", "Samples the receiver accepted." },
		{ "dropped_samples_total", "counter", ",reason=\"queue_full\"",
		  "Samples dropped: the queue over remote_write.max_queue_bytes (queue_full) or "
		  "refused by the receiver with a 4xx (rejected)." },
		{ "dropped_samples_total", "", ",reason=\"rejected\"", NULL },
		{ "retries_total", "counter", "",
		  "Failed attempts that will be made again (network errors, 3xx, 5xx, 429)." },
		{ "queue_samples", "gauge", "", "Samples waiting for the receiver." },
		{ "queue_bytes", "gauge", "", "The queue's requests on disk." },
		{ "last_success_timestamp_seconds", "gauge", "",
		  "When the receiver last accepted a request (0: never)." },
	};
	size_t n = rwrite_targets(rw);
	struct rwrite_stats *st = calloc(n ? n : 1, sizeof(*st));
	char (*url)[2 * sizeof(st->url)] = calloc(n ? n : 1, sizeof(*url));

	if (!st || !url) {
		free(st);
		free(url);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		rwrite_get_stats(rw, i, &st[i]);
		for (const char *p = st[i].url; *p; p++) { /* (a label value's escapes) */
			if (*p == '"' || *p == '\\')
				url[i][k++] = '\\';
			url[i][k++] = *p;
		}
		url[i][k] = '\0';
	}
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		if (fam[f].help)
			buf_printf(b, "# HELP rocefab_remote_write_%s %s\n# TYPE rocefab_remote_write_%s %s\n",
				   fam[f].name, fam[f].help, fam[f].name, fam[f].type);
		for (size_t i = 0; i < n; i++) {
			const double v[] = { (double)st[i].sent, (double)st[i].dropped_full,
					     (double)st[i].dropped_rejected, (double)st[i].retries,
					     (double)st[i].queue_samples, (double)st[i].queue_bytes,
					     (double)st[i].last_success_ns / 1e9 };

			buf_printf(b, "rocefab_remote_write_%s{url=\"%s\"%s} %.15g\n", fam[f].name,
				   url[i], fam[f].labels, v[f]);
		}
	}
	free(st);
	free(url);
}

int h_metrics(struct api_req *req)
{
	const struct api_deps *d = api_deps(req);
	struct store_reader *rd = store_reader_get(d->store);
	struct store_stats ss;
	struct ingest_stats is;
	struct views_opts o;
	int64_t total = 0, stale = 0;
	struct buf b;
	char *text;
	size_t len;

	o = api_views_opts(req);
	if (rd)
		views_agent_counts(rd, &o, &total, &stale);
	store_get_stats(d->store, &ss);
	ingest_get_stats(d->ingest, &is);
	buf_init(&b);
	buf_printf(&b,
		   "# HELP rocefab_build_info Version of rocefabd.\n"
		   "# TYPE rocefab_build_info gauge\n"
		   "rocefab_build_info{version=\"%s\"} 1\n"
		   "# HELP rocefab_start_time_seconds When rocefabd started (Unix time).\n"
		   "# TYPE rocefab_start_time_seconds gauge\n"
		   "rocefab_start_time_seconds %.3f\n",
		   ROCEFAB_VERSION, (double)d->started_ns / 1e9);
	buf_printf(&b,
		   "# HELP rocefab_ingest_reports_total Agent reports stored.\n"
		   "# TYPE rocefab_ingest_reports_total counter\n"
		   "rocefab_ingest_reports_total %llu\n"
		   "# HELP rocefab_ingest_duplicate_reports_total Agent reports received again "
		   "(already stored) and ignored.\n"
		   "# TYPE rocefab_ingest_duplicate_reports_total counter\n"
		   "rocefab_ingest_duplicate_reports_total %llu\n"
		   "# HELP rocefab_ingest_failed_reports_total Agent reports that validated but "
		   "could not be stored.\n"
		   "# TYPE rocefab_ingest_failed_reports_total counter\n"
		   "rocefab_ingest_failed_reports_total %llu\n"
		   "# HELP rocefab_ingest_samples_total Normalized counter values stored.\n"
		   "# TYPE rocefab_ingest_samples_total counter\n"
		   "rocefab_ingest_samples_total %llu\n"
		   "# HELP rocefab_ingest_baseline_samples_total Stored values without a delta "
		   "(first sample, implausible jump, clock not advancing).\n"
		   "# TYPE rocefab_ingest_baseline_samples_total counter\n"
		   "rocefab_ingest_baseline_samples_total %llu\n"
		   "# HELP rocefab_ingest_ignored_values_total Raw values whose names the counter "
		   "registry does not know.\n"
		   "# TYPE rocefab_ingest_ignored_values_total counter\n"
		   "rocefab_ingest_ignored_values_total %llu\n"
		   "# HELP rocefab_ingest_samples_per_second Values stored per second, averaged "
		   "over the last 10 s.\n"
		   "# TYPE rocefab_ingest_samples_per_second gauge\n"
		   "rocefab_ingest_samples_per_second %.1f\n",
		   (unsigned long long)is.reports, (unsigned long long)is.duplicates,
		   (unsigned long long)is.failed, (unsigned long long)is.samples,
		   (unsigned long long)is.baseline, (unsigned long long)is.ignored,
		   is.samples_per_s);
	buf_printf(&b,
		   "# HELP rocefab_store_queue_depth Jobs waiting for the database writer.\n"
		   "# TYPE rocefab_store_queue_depth gauge\n"
		   "rocefab_store_queue_depth %u\n"
		   "# HELP rocefab_store_queue_capacity Jobs the writer queue holds before "
		   "refusing reports (503).\n"
		   "# TYPE rocefab_store_queue_capacity gauge\n"
		   "rocefab_store_queue_capacity %u\n"
		   "# HELP rocefab_store_queue_peak Largest queue depth seen.\n"
		   "# TYPE rocefab_store_queue_peak gauge\n"
		   "rocefab_store_queue_peak %u\n"
		   "# HELP rocefab_store_commits_total Database transactions committed.\n"
		   "# TYPE rocefab_store_commits_total counter\n"
		   "rocefab_store_commits_total %llu\n"
		   "# HELP rocefab_store_failed_commits_total Database transactions that failed "
		   "to commit.\n"
		   "# TYPE rocefab_store_failed_commits_total counter\n"
		   "rocefab_store_failed_commits_total %llu\n"
		   "# HELP rocefab_store_commit_seconds_total Time spent committing.\n"
		   "# TYPE rocefab_store_commit_seconds_total counter\n"
		   "rocefab_store_commit_seconds_total %.6f\n",
		   ss.queue_depth, ss.queue_max, ss.queue_peak, (unsigned long long)ss.commits,
		   (unsigned long long)ss.failed_commits, ss.commit_seconds);
	if (d->retention) {
		static const char *const data[RET_N] = { "raw", "1m", "1h", "probes" };
		struct retention_status rs;

		retention_get_status(d->retention, &rs);
		buf_printf(&b,
			   "# HELP rocefab_store_bytes The database's pages in use (the file keeps its "
			   "largest size; freed pages are reused); none until the first retention pass, "
			   "seconds after the start.\n"
			   "# TYPE rocefab_store_bytes gauge\n");
		/* none until the first retention pass measured it (a 0 would read as an empty
		 * database) */
		if (rs.used_bytes)
			buf_printf(&b, "rocefab_store_bytes %llu\n", (unsigned long long)rs.used_bytes);
		buf_printf(&b,
			   "# HELP rocefab_store_budget_bytes store.max_bytes (0: none).\n"
			   "# TYPE rocefab_store_budget_bytes gauge\n"
			   "rocefab_store_budget_bytes %llu\n"
			   "# HELP rocefab_store_retention_seconds How long each kind of data is kept "
			   "now (the disk budget may keep it for less than configured).\n"
			   "# TYPE rocefab_store_retention_seconds gauge\n",
			   (unsigned long long)rs.max_bytes);
		for (int i = 0; i < RET_N; i++)
			buf_printf(&b, "rocefab_store_retention_seconds{data=\"%s\"} %.0f\n", data[i],
				   rs.in_force_ns[i] / 1e9);
		buf_printf(&b, "# HELP rocefab_store_pruned_rows_total Rows deleted by retention and "
			       "the budget.\n# TYPE rocefab_store_pruned_rows_total counter\n");
		for (int i = 0; i < RET_N; i++)
			buf_printf(&b, "rocefab_store_pruned_rows_total{data=\"%s\"} %llu\n", data[i],
				   (unsigned long long)rs.pruned[i]);
	}
	if (d->rwrite)
		metrics_rwrite(d->rwrite, &b);
	buf_printf(&b,
		   "# HELP rocefab_agents Agents known, by liveness.\n"
		   "# TYPE rocefab_agents gauge\n"
		   "rocefab_agents{status=\"ok\"} %lld\n"
		   "rocefab_agents{status=\"stale\"} %lld\n",
		   (long long)(total - stale), (long long)stale);
	if (rd) {
		views_agent_metrics(rd, &o, &b);
		views_port_metrics(rd, &o, &b);
		views_qp_metrics(rd, &o, &b);
	}
	store_reader_put(d->store, rd);
	api_render_metrics(req->api, &b);
	ingest_render_metrics(d->ingest, api_metrics_prio_mask(req), &b);
	pingmesh_render_metrics(d->pingmesh, &b);
	if (d->detector)
		detector_render_metrics(d->detector, &b);
	if (d->tuner)
		tuner_render_metrics(d->tuner, &b);
	process_metrics(&b);
	if (b.oom) {
		buf_fini(&b);
		return -ENOMEM;
	}
	text = buf_steal(&b, &len);
	if (accepts_gzip(req)) {
		/* a scrape of a large fabric is megabytes of text that compresses ~10x */
		size_t zlen;
		char *z = gzip(text, len, &zlen);

		if (z) {
			free(text);
			return api_reply_encoded(req, 200, "text/plain; version=0.0.4; charset=utf-8", "gzip", z, zlen);
		}
	}
	return api_reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}
