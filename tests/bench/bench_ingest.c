/* Ingest benchmark: N agents post reports concurrently (libcurl multi, one kept-alive
 * connection per agent) to a running rocefabd; measures samples per second from the first send
 * to the last acknowledgement (each acknowledged only once committed), checks the stored count
 * through /api/v1/health, and measures raw sqlite insert speed of the same number of samples
 * (one row per sample, prepared statement, 10,000 rows per transaction, WAL) as the reference.
 *
 *   bench_ingest URL TOKEN_FILE REFERENCE_DB [--agents N] [--ports N] [--counters N] [--rounds N]
 *   bench_ingest URL TOKEN_FILE --pfc PID [--agents N] [--rounds N]
 *
 * With --pfc: the fast PFC lane instead.  Each agent (a host: one mlx5 port) posts its compact
 * PFC report (priority 3's pause counters, states and traffic, as rocefab-agent sends every
 * agent.pfc_interval) rounds times; prints fast reports per second and rocefabd's CPU time per
 * 1,000 of them (PID is rocefabd's), and the report's size: the lane's bytes per host.
 */
#include <sys/types.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sqlite3.h>

#include "lib/buf.h"
#include "lib/registry.h"
#include "lib/timeutil.h"

struct source {
	const char *group, *driver;
	char name[96];
};

struct agent_state {
	CURL *h;
	int round;
	struct buf resp;
	char url[256];
};

static size_t on_data(char *p, size_t s, size_t n, void *arg)
{
	buf_append(arg, p, s * n);
	return s * n;
}

/* The first n registry sources of distinct normalized counters that an mlx5 port offers. */
static int pick_sources(struct source *src, int n)
{
	struct reg *reg;
	struct rf_err e;
	json_t *doc, *c, *s;
	size_t i, k;
	int got = 0;

	if (reg_load_builtin(&reg, &e) < 0)
		return -1;
	doc = reg_document(reg);
	json_array_foreach(json_object_get(doc, "counters"), i, c) {
		json_array_foreach(json_object_get(c, "sources"), k, s) {
			const char *drv = json_string_value(json_object_get(s, "driver"));
			const char *name = json_string_value(json_object_get(s, "name"));
			const char *group = json_string_value(json_object_get(s, "group"));
			const char *pct = strstr(name, "%d");

			if (drv && strcmp(drv, "mlx5") != 0)
				continue;
			for (int prio = 0; prio < (pct ? 8 : 1) && got < n; prio++) {
				src[got].group = strdup(group);
				src[got].driver = drv ? "mlx5" : NULL;
				if (pct)
					snprintf(src[got].name, sizeof(src[got].name), "%.*s%d%s",
						 (int)(pct - name), name, prio, pct + 2);
				else
					snprintf(src[got].name, sizeof(src[got].name), "%s", name);
				got++;
			}
			break; /* one source per normalized counter */
		}
		if (got >= n)
			break;
	}
	/* the registry document stays alive while reg does; sources copied what they need */
	return got;
}

/* A fast PFC report of a host (what agent_build_pfc_report makes of an mlx5 port). */
static char *make_pfc_report(int agent, int round)
{
	static const char *const names[] = { "rx_prio3_pause", "rx_prio3_pause_duration", "rx_prio3_pause_transition",
					     "tx_prio3_pause", "tx_prio3_pause_duration", "rx_prio3_bytes",
					     "tx_prio3_bytes", "rx_prio3_packets", "tx_prio3_packets", NULL };
	int64_t t = 1764514195000000000LL + (int64_t)round * 200 * NSEC_PER_MSEC;
	json_t *values = json_object(), *doc;
	char id[32], boot[32], *text;

	snprintf(id, sizeof(id), "bench-%04d", agent);
	snprintf(boot, sizeof(boot), "bench-boot-%04d", agent);
	for (int i = 0; names[i]; i++)
		json_object_set_new(values, names[i], json_integer((json_int_t)round * (100000 + i * 7919) + agent));
	doc = json_pack("{s:i,s:{s:s,s:s,s:s,s:s,s:s},s:i,s:I,s:i,s:[{s:s,s:s,s:s,s:s,s:I,s:o}]}", "schema", 1,
			"agent", "id", id, "role", "host", "boot_id", boot, "version", "bench", "backend", "bench",
			"seq", round + 1, "time_ns", (json_int_t)t, "interval_ms", 200, "samples", "device", "mlx5_0",
			"port", "1", "source", "ethtool", "driver", "mlx5", "t_ns", (json_int_t)t, "values", values);
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return text;
}

static double proc_cpu_s(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return -1;
	/* fields after ") ": state is 3rd; utime, stime are 14th and 15th */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static char *make_report(int agent, int round, int ports, const struct source *src, int nsrc)
{
	int64_t t = 1764514195000000000LL + (int64_t)round * NSEC_PER_SEC;
	json_t *devs = json_array(), *samples = json_array(), *doc;
	char id[32], boot[32];
	char *text;

	snprintf(id, sizeof(id), "bench-%04d", agent);
	snprintf(boot, sizeof(boot), "bench-boot-%04d", agent);
	for (int p = 0; p < ports; p++) {
		char dev[16];

		snprintf(dev, sizeof(dev), "mlx5_%d", p);
		json_array_append_new(devs, json_pack("{s:s,s:s,s:s,s:[{s:s,s:s,s:i}]}", "name", dev,
						      "kind", "rdma", "driver", "mlx5", "ports",
						      "port", "1", "state", "up", "speed_mbps", 400000));
		for (int i = 0; i < nsrc;) {
			const char *group = src[i].group;
			json_t *values = json_object();
			json_t *smp;

			for (; i < nsrc && strcmp(src[i].group, group) == 0; i++)
				json_object_set_new(values, src[i].name,
						    json_integer((json_int_t)round * (1000 + i * 7) + p));
			smp = json_pack("{s:s,s:s,s:s,s:I,s:o}", "device", dev, "port", "1", "source",
					group, "t_ns", (json_int_t)t, "values", values);
			json_object_set_new(smp, "driver", json_string("mlx5"));
			json_array_append_new(samples, smp);
		}
	}
	doc = json_pack("{s:i,s:{s:s,s:s,s:s,s:s,s:s},s:i,s:I,s:i,s:{s:o},s:o}", "schema", 1,
			"agent", "id", id, "role", "host", "boot_id", boot, "version", "bench",
			"backend", "bench", "seq", round + 1, "time_ns", (json_int_t)t, "interval_ms",
			1000, "inventory", "devices", devs, "samples", samples);
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return text;
}

static long long health_samples(const char *base)
{
	CURL *h = curl_easy_init();
	struct buf b;
	char url[300];
	long long n = -1;
	json_t *doc;

	buf_init(&b);
	snprintf(url, sizeof(url), "%s/api/v1/health", base);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(h) == CURLE_OK && (doc = json_loads(b.data, 0, NULL))) {
		n = json_integer_value(json_object_get(json_object_get(doc, "ingest"), "samples"));
		json_decref(doc);
	}
	curl_easy_cleanup(h);
	buf_fini(&b);
	return n;
}

/* Sends rounds [from, to) of every agent; returns retries (503s), or -1 on a hard failure. */
static const char *post_what = "report"; /* or "pfc" */

static long run_rounds(const char *base, const char *token, char ***bodies, int agents, int from,
		       int to)
{
	CURLM *m = curl_multi_init();
	struct agent_state *st = calloc((size_t)agents, sizeof(*st));
	struct curl_slist *hdr = NULL;
	char auth[128];
	int running = 0, done = 0;
	long retries = 0;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	hdr = curl_slist_append(hdr, auth);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "Expect:");
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)agents);
	for (int a = 0; a < agents; a++) {
		st[a].h = curl_easy_init();
		st[a].round = from;
		buf_init(&st[a].resp);
		snprintf(st[a].url, sizeof(st[a].url), "%s/api/v1/agents/bench-%04d/%s", base, a, post_what);
		curl_easy_setopt(st[a].h, CURLOPT_URL, st[a].url);
		curl_easy_setopt(st[a].h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(st[a].h, CURLOPT_POSTFIELDS, bodies[a][from]);
		curl_easy_setopt(st[a].h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(st[a].h, CURLOPT_WRITEDATA, &st[a].resp);
		curl_easy_setopt(st[a].h, CURLOPT_PRIVATE, &st[a]);
		curl_easy_setopt(st[a].h, CURLOPT_TIMEOUT, 60L);
		curl_multi_add_handle(m, st[a].h);
	}
	while (done < agents) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct agent_state *s;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
			curl_multi_remove_handle(m, msg->easy_handle);
			if (msg->data.result != CURLE_OK || (code != 200 && code != 503)) {
				fprintf(stderr, "bench_ingest: %s: curl %d, HTTP %ld: %s\n", s->url,
					msg->data.result, code, s->resp.data ? s->resp.data : "");
				retries = -1;
				goto out;
			}
			buf_reset(&s->resp);
			if (code == 503)
				retries++;
			else
				s->round++;
			if (s->round >= to) {
				done++;
				continue;
			}
			curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, bodies[s - st][s->round]);
			curl_multi_add_handle(m, s->h);
		}
		if (done < agents)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
out:
	for (int a = 0; a < agents; a++) {
		curl_multi_remove_handle(m, st[a].h);
		curl_easy_cleanup(st[a].h);
		buf_fini(&st[a].resp);
	}
	free(st);
	curl_slist_free_all(hdr);
	curl_multi_cleanup(m);
	return retries;
}

static double raw_sqlite(const char *path, long long rows)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t t0, t1;

	unlink(path);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return 0;
	sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 "CREATE TABLE s(port INTEGER, counter INTEGER, t INTEGER, v INTEGER,"
			 " PRIMARY KEY(port, counter, t)) WITHOUT ROWID;",
		     NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO s VALUES(?,?,?,?)", -1, &st, NULL);
	t0 = tu_mono_ns();
	for (long long i = 0; i < rows; i++) {
		if (i % 10000 == 0)
			sqlite3_exec(db, i ? "COMMIT; BEGIN" : "BEGIN", NULL, NULL, NULL);
		sqlite3_bind_int64(st, 1, (i / 60) % 1600);
		sqlite3_bind_int64(st, 2, i % 60);
		sqlite3_bind_int64(st, 3, i / 96000);
		sqlite3_bind_int64(st, 4, i * 3);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	t1 = tu_mono_ns();
	sqlite3_finalize(st);
	sqlite3_close(db);
	unlink(path);
	return (double)rows / ((double)(t1 - t0) / 1e9);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "agents", required_argument, NULL, 'a' }, { "ports", required_argument, NULL, 'p' },
		{ "counters", required_argument, NULL, 'c' }, { "rounds", required_argument, NULL, 'r' },
		{ "pfc", required_argument, NULL, 'P' }, { NULL, 0, NULL, 0 },
	};
	int agents = 200, ports = 8, counters = 60, rounds = 10, o;
	long pfc_pid = 0;
	struct source src[256];
	char token[128] = "", ***bodies;
	long long before, after, expected;
	double secs, rate, ref;
	int64_t t0;
	long retries;
	FILE *f;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'a')
			agents = atoi(optarg);
		else if (o == 'p')
			ports = atoi(optarg);
		else if (o == 'c')
			counters = atoi(optarg);
		else if (o == 'r')
			rounds = atoi(optarg);
		else if (o == 'P')
			pfc_pid = atol(optarg);
		else
			return 2;
	}
	if (pfc_pid > 0 && argc - optind == 2) {
		/* the fast PFC lane: fast reports, no storage */
		FILE *tf = fopen(argv[optind + 1], "r");
		double c0, c1, secs_pfc;
		size_t bytes = 0;
		int64_t t_start;

		if (!tf || !fgets(token, sizeof(token), tf)) {
			fprintf(stderr, "bench_ingest: cannot read %s\n", argv[optind + 1]);
			return 1;
		}
		fclose(tf);
		token[strcspn(token, "\n")] = '\0';
		post_what = "pfc";
		curl_global_init(CURL_GLOBAL_DEFAULT);
		bodies = calloc((size_t)agents, sizeof(*bodies));
		for (int a = 0; a < agents; a++) {
			bodies[a] = calloc((size_t)rounds + 1, sizeof(**bodies));
			for (int r = 0; r <= rounds; r++)
				bodies[a][r] = make_pfc_report(a, r);
		}
		bytes = strlen(bodies[0][1]);
		if (run_rounds(argv[optind], token, bodies, agents, 0, 1) < 0)
			return 1;
		c0 = proc_cpu_s(pfc_pid);
		t_start = tu_mono_ns();
		if (run_rounds(argv[optind], token, bodies, agents, 1, rounds + 1) < 0)
			return 1;
		secs_pfc = (double)(tu_mono_ns() - t_start) / 1e9;
		c1 = proc_cpu_s(pfc_pid);
		printf("fast lane    %d hosts x %d fast PFC reports of %zu B: %.0f reports/s into rocefabd (kept in memory)\n",
		       agents, rounds, bytes, (double)agents * rounds / secs_pfc);
		printf("             rocefabd CPU %.2f ms per 1,000 reports: %.0f%% of one core for a 1,104-agent fabric's "
		       "5,520/s; a host sends %.0f B/s at 200 ms\n",
		       (c1 - c0) * 1e6 / ((double)agents * rounds), (c1 - c0) / ((double)agents * rounds) * 5520 * 100,
		       (double)bytes * 5);
		return 0;
	}
	if (argc - optind != 3 || counters > 256) {
		fprintf(stderr, "usage: bench_ingest URL TOKEN_FILE REFERENCE_DB [--agents N] "
				"[--ports N] [--counters N<=256] [--rounds N]\n");
		return 2;
	}
	f = fopen(argv[optind + 1], "r");
	if (!f || !fgets(token, sizeof(token), f)) {
		fprintf(stderr, "bench_ingest: cannot read %s\n", argv[optind + 1]);
		return 1;
	}
	fclose(f);
	token[strcspn(token, "\n")] = '\0';
	if (pick_sources(src, counters) != counters) {
		fprintf(stderr, "bench_ingest: the registry has fewer than %d mlx5 counters\n", counters);
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	bodies = calloc((size_t)agents, sizeof(*bodies));
	for (int a = 0; a < agents; a++) {
		bodies[a] = calloc((size_t)rounds + 1, sizeof(**bodies));
		for (int r = 0; r <= rounds; r++)
			bodies[a][r] = make_report(a, r, ports, src, counters);
	}
	/* round 0 creates the inventory and the first baselines: not timed */
	if (run_rounds(argv[optind], token, bodies, agents, 0, 1) < 0)
		return 1;
	before = health_samples(argv[optind]);
	t0 = tu_mono_ns();
	retries = run_rounds(argv[optind], token, bodies, agents, 1, rounds + 1);
	secs = (double)(tu_mono_ns() - t0) / 1e9;
	if (retries < 0)
		return 1;
	after = health_samples(argv[optind]);
	expected = (long long)agents * rounds * ports * counters;
	rate = (double)expected / secs;
	ref = raw_sqlite(argv[optind + 2], expected);
	printf("ingest       %d agents x %d ports x %d counters, %d rounds: %lld samples in %.2f s\n",
	       agents, ports, counters, rounds, expected, secs);
	printf("             = %.0f samples/s through HTTP to committed rows (%ld retries on 503)\n",
	       rate, retries);
	printf("             stored %lld samples (expected %lld): %s\n", after - before, expected,
	       after - before == expected ? "exact" : "MISMATCH");
	printf("reference    raw sqlite insert, one row per sample: %.0f rows/s\n", ref);
	printf("ratio        %.2f of raw sqlite; target >= 250000 samples/s: %s\n", rate / ref,
	       rate >= 250000 ? "met" : "NOT MET");
	return after - before == expected ? 0 : 1;
}
