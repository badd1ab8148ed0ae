/* rocefab-sim serve: runs a scenario paced against the wall clock, serves the control API and
 * optionally runs one virtual agent per simulated device (the agent library's fleet, with the
 * sim backend called in-process), until SIGTERM or SIGINT.
 *
 * Pacing: fabric time advances at `pace` fabric seconds per wall second.  The loop runs events
 * in short slices and releases the lock between them so that the control API and the agents
 * get in; when the simulator cannot keep up, it drops the backlog instead of bursting and the
 * effective pace (reported by GET /v1/clock and in the progress lines) is lower. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agents/agent.h"
#include "agents/backend.h"
#include "agents/sim.h"
#include "lib/httpd.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "sim/serve.h"

#define DEFAULT_PACE 0.01 /* 10 ms of fabric time per second: the demo fabric keeps up */
#define SLICE_NS (2 * NSEC_PER_MSEC)
#define STEP_PS (20 * INT64_C(1000000)) /* 20 us of fabric time per sim_run_until() */

static atomic_uint waiters;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rocefab-sim serve SCENARIO [OPTIONS]\n"
		"\n"
		"Runs the fabric of SCENARIO paced against the wall clock until stopped (SIGTERM or\n"
		"Ctrl-C), with a control API (devices, counters, configuration, faults, summary) and,\n"
		"with --agents, one virtual agent per simulated host and switch reporting to rocefabd.\n"
		"\n"
		"  --control ADDR:PORT  control API address (default 127.0.0.1:9760; port 0: any)\n"
		"  --pace R             fabric seconds per wall second (default %g; the scenario's\n"
		"                       \"serve\": {\"pace\": R} otherwise)\n"
		"  --agents URL         rocefabd to report to (virtual agents on)\n"
		"  --token-file FILE    agent token for rocefabd (role agent), bound to the devices'\n"
		"                       names: --agent 'h*,leaf*,spine*' for a leaf-spine\n"
		"  --interval DUR       report interval of the virtual agents (default 1s)\n"
		"  --pfc-interval DUR   their fast PFC reports' interval, wall time (default 200ms; 0:\n"
		"                       none)\n"
		"  --spool-dir DIR      where undelivered reports wait (default\n"
		"                       /var/tmp/rocefab-sim/spool; one directory per device)\n"
		"  --skip-agents LIST   devices without a virtual agent (real agents with --backend sim\n"
		"                       stand in for them), comma-separated\n"
		"  --sonic SWITCH=REDIS publish SWITCH in SONiC's layout into the redis at REDIS\n"
		"                       (unix:PATH or HOST:PORT; its databases 0, 2 and 4 are emptied\n"
		"                       first) and apply its CONFIG_DB to the switch; the switch gets\n"
		"                       no virtual agent (rocefab-agent --backend sonic stands in).\n"
		"                       Repeatable, one redis per switch\n"
		"  --sonic-interval DUR how often the SONiC-shaped switches are written and their\n"
		"                       CONFIG_DB applied (default 250ms)\n"
		"  --agent-threads N    delivery threads of the virtual agents (default: one per 32\n"
		"                       agents, 4 to 64; each waits for rocefabd to commit a report)\n"
		"  --seed N             random seed (overrides the scenario's)\n"
		"  --quiet              no progress lines on standard error\n"
		"  -h, --help           this text\n"
		"\n"
		"Exit status: 0 stopped by a signal, 2 bad scenario or arguments, 1 other errors.\n"
		"Control API: schemas/sim-control.yaml.\n",
		DEFAULT_PACE);
}

static int ctl_call(void *ctx, const char *method, const char *path, json_t *body,
		    json_t **ret_doc)
{
	struct simctl *c = ctx;
	int r;

	atomic_fetch_add(&waiters, 1);
	r = simctl_call(c, method, path, body, ret_doc);
	atomic_fetch_sub(&waiters, 1);
	return r;
}

static int http_handler(void *ctx, const struct httpd_req *r, json_t **ret_doc)
{
	return ctl_call(ctx, r->method, r->path, r->body, ret_doc);
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* The device named by the first len bytes of name (a member of a list): its index, or -1. */
static int device_named(const struct sim *s, const char *name, size_t len)
{
	char buf[128];

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return sim_device_find(s, buf);
}

struct serve_opts {
	const char *control, *agents, *token_file, *spool_dir, *skip;
	char *sonic[SONIC_PUB_MAX];
	size_t nsonic;
	int64_t sonic_interval;
	double pace;
	int64_t interval, pfc_interval, seed;
	unsigned threads;
	bool quiet;
};

/* The virtual agents' counter registry (the fast PFC lane maps names through it). */
static struct reg *agents_reg;

static int start_agents(struct simctl *c, const struct serve_opts *o, struct fleet **ret,
			struct rf_err *e)
{
	struct fleet *f = NULL;
	char *token = NULL;
	int r, n = 0;

	unsigned threads = o->threads;

	if ((r = agent_read_token(o->token_file, &token, e)) < 0)
		return r;
	if (o->pfc_interval > 0 && !agents_reg && (r = reg_load_builtin(&agents_reg, e)) < 0) {
		free(token);
		return r;
	}
	if (!threads) {
		/* a delivery thread spends most of its time waiting for rocefabd's commit */
		threads = (unsigned)sim_device_count(c->s) / 32;
		threads = threads < 4 ? 4 : threads > 64 ? 64 : threads;
	}
	{
		struct fleet_conf fc = { .server = o->agents, .token = token, .token_file = o->token_file,
					 .timeout_ns = 10 * NSEC_PER_SEC, .interval_ns = o->interval,
					 .jitter_pct = 5, .threads = threads, .spread = true };

		r = fleet_new(&fc, &f, e);
	}
	free(token);
	if (r < 0)
		return r;
	for (int d = 0; d < sim_device_count(c->s); d++) {
		const char *name = sim_device_name(c->s, d);
		struct sim_settings ss = { .device = (char *)name, .call = ctl_call, .ctx = c };
		struct backend_env env = { .settings = &ss, .reg = agents_reg };
		struct backend *b = NULL;
		struct agent *a = NULL;
		char spool[4200];

		bool sonic = false;

		for (size_t k = 0; k < o->nsonic; k++)
			sonic |= !strncmp(o->sonic[k], name, strlen(name)) && o->sonic[k][strlen(name)] == '=';
		if (in_list(o->skip, name) || sonic)
			continue;
		if (str_fmt(spool, sizeof(spool), "%s/%s", o->spool_dir, name) < 0) {
			r = rf_err_set(e, -ENAMETOOLONG, "BAD_SPOOL_DIR", o->spool_dir, "path too long");
			goto fail;
		}
		if ((r = backend_new("sim", &env, &b, e)) < 0)
			goto fail;
		{
			struct agent_conf ac = { .id = name,
						 .role = sim_device_is_switch(c->s, d) ? AGENT_SWITCH : AGENT_HOST,
						 .backend_name = "sim", .backend = b, .spool_dir = spool,
						 .spool_max = 16u << 20, .interval_ns = o->interval,
						 .pfc_interval_ns = o->pfc_interval };

			if ((r = agent_create(&ac, &a, e)) < 0)
				goto fail;
		}
		if ((r = fleet_add(f, a, e)) < 0) {
			agent_destroy(a);
			goto fail;
		}
		n++;
	}
	if ((r = fleet_start(f, e)) < 0)
		goto fail;
	log_info("sim", "%d virtual agents reporting to %s every %.3gs", n, o->agents,
		 (double)o->interval / 1e9);
	*ret = f;
	return 0;
fail:
	fleet_free(f);
	return r;
}

static json_t *agents_status(void *ctx)
{
	return fleet_status(ctx);
}

/* With c->lock held: runs events up to the paced target for at most one slice.  Returns true
 * when the fabric caught up with the wall clock. */
static bool run_slice(struct simctl *c)
{
	int64_t start = tu_mono_ns(), now = start;
	int64_t target = c->anchor_fab_ps + (int64_t)((double)(now - c->anchor_wall_ns) * c->pace * 1000.0);
	struct sim *s = c->s;

	while (sim_now(s) < target && now - start < SLICE_NS) {
		int64_t step = sim_now(s) + STEP_PS;

		sim_run_until(s, step < target ? step : target);
		now = tu_mono_ns();
	}
	if (sim_now(s) >= target)
		return true;
	/* more than 200 ms of wall time behind: drop the backlog instead of bursting */
	if ((double)(target - sim_now(s)) > 0.2e12 * c->pace) {
		c->anchor_wall_ns = now;
		c->anchor_fab_ps = sim_now(s);
		c->behind_windows++;
	}
	return false;
}

static void progress(struct simctl *c, struct fleet *f, bool quiet)
{
	int64_t now = tu_mono_ns();

	if (now - c->win_wall_ns < NSEC_PER_SEC)
		return;
	c->pace_effective = (double)(sim_now(c->s) - c->win_fab_ps) / 1000.0 /
			    (double)(now - c->win_wall_ns);
	if (c->paused)
		c->pace_effective = 0;
	c->win_wall_ns = now;
	c->win_fab_ps = sim_now(c->s);
	(void)f;
	if (!quiet && (c->win_fab_ps / 1000) % 1 == 0) {
		static int64_t last;

		if (now - last >= 10 * NSEC_PER_SEC) {
			last = now;
			fprintf(stderr,
				"rocefab-sim: fabric time %.3f ms, pace %.4g (asked %.4g)%s, %" PRIu64
				" events%s%s\n",
				(double)sim_now(c->s) / 1e9, c->pace_effective, c->pace,
				c->paused ? ", paused" : "", sim_events(c->s),
				f ? ", agents: " : "", f ? "reporting" : "");
		}
	}
}

static int serve(struct simctl *c, const struct serve_opts *o)
{
	struct httpd *h = NULL;
	struct fleet *f = NULL;
	struct sonic_pub *pub = NULL;
	struct rf_err e = { 0 };
	char buf[700];
	sigset_t sigs;
	int status = 0;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	{
		struct httpd_conf hc = { .listen = o->control, .what = "--control",
					 .max_body = 1u << 20, .threads = 2, .handler = http_handler,
					 .ctx = c };

		if (httpd_start(&hc, &h, &e) < 0) {
			fprintf(stderr, "rocefab-sim: %s\n", rf_err_str(&e, buf, sizeof(buf)));
			return 1;
		}
	}
	if (o->nsonic && sonic_pub_start(c, o->sonic, o->nsonic, o->sonic_interval, &pub, &e) < 0) {
		fprintf(stderr, "rocefab-sim: --sonic: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		httpd_stop(h);
		return e.err == -EINVAL ? 2 : 1;
	}
	if (o->agents && start_agents(c, o, &f, &e) < 0) {
		sonic_pub_stop(pub);
		fprintf(stderr, "rocefab-sim: virtual agents: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		httpd_stop(h);
		return e.err == -EINVAL || e.err == -ENOENT ? 2 : 1;
	}
	if (f) {
		pthread_mutex_lock(&c->lock);
		c->agents_status = agents_status;
		c->agents_ctx = f;
		pthread_mutex_unlock(&c->lock);
	}
	{
		int hosts = 0, sw = 0;

		for (int d = 0; d < sim_device_count(c->s); d++)
			sim_device_is_switch(c->s, d) ? sw++ : hosts++;
		printf("rocefab-sim: serving %s: %d hosts, %d switches; control API http://%.*s:%u/v1/; "
		       "pace %g\n",
		       c->scenario, hosts, sw, (int)(strrchr(o->control, ':') - o->control),
		       o->control, httpd_port(h), c->pace);
		fflush(stdout);
	}
	pthread_mutex_lock(&c->lock);
	c->anchor_wall_ns = c->win_wall_ns = tu_mono_ns();
	c->anchor_fab_ps = c->win_fab_ps = sim_now(c->s);
	pthread_mutex_unlock(&c->lock);
	for (;;) {
		struct timespec zero = { 0, 0 }, nap = { 0, 2 * 1000 * 1000 };
		bool caught_up = true;
		int sig;

		pthread_mutex_lock(&c->lock);
		if (!c->paused)
			caught_up = run_slice(c);
		progress(c, f, o->quiet);
		pthread_mutex_unlock(&c->lock);
		/* let the control API and the agents in */
		for (int i = 0; i < 1000 && atomic_load(&waiters); i++)
			sched_yield();
		sig = sigtimedwait(&sigs, NULL, caught_up ? &nap : &zero);
		if (sig == SIGTERM || sig == SIGINT)
			break;
	}
	log_info("sim", "stopping at fabric time %.3f ms", (double)sim_now(c->s) / 1e9);
	httpd_stop(h);
	sonic_pub_stop(pub);
	c->agents_status = NULL;
	fleet_free(f); /* undelivered reports stay in the spool */
	reg_free(agents_reg);
	agents_reg = NULL;
	return status;
}

int sim_serve_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "control", required_argument, NULL, 1 },    { "pace", required_argument, NULL, 2 },
		{ "agents", required_argument, NULL, 3 },     { "token-file", required_argument, NULL, 4 },
		{ "interval", required_argument, NULL, 5 },   { "spool-dir", required_argument, NULL, 6 },
		{ "skip-agents", required_argument, NULL, 7 }, { "agent-threads", required_argument, NULL, 8 },
		{ "seed", required_argument, NULL, 9 },	      { "quiet", no_argument, NULL, 10 },
		{ "pfc-interval", required_argument, NULL, 11 },
		{ "sonic", required_argument, NULL, 12 },     { "sonic-interval", required_argument, NULL, 13 },
		{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
	};
	struct serve_opts o = { .control = "127.0.0.1:9760", .pace = -1, .interval = NSEC_PER_SEC,
				.pfc_interval = 200 * NSEC_PER_MSEC, .sonic_interval = 250 * NSEC_PER_MSEC,
				.spool_dir = "/var/tmp/rocefab-sim/spool", .threads = 0, .seed = -1 };
	struct simctl c;
	struct sim *s = NULL;
	struct rf_err e = { 0 };
	char *text, *dir, *end, buf[700];
	size_t len;
	int opt, status;
	sigset_t sigs;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 1:
			o.control = optarg;
			break;
		case 2:
			o.pace = strtod(optarg, &end);
			if (*end || !(o.pace > 0 && o.pace <= 1000)) {
				fprintf(stderr, "rocefab-sim: --pace: '%s' is not in (0, 1000]\n", optarg);
				return 2;
			}
			break;
		case 3:
			o.agents = optarg;
			break;
		case 4:
			o.token_file = optarg;
			break;
		case 5:
			if (tu_parse_duration(optarg, &o.interval) < 0 || o.interval < 10 * NSEC_PER_MSEC) {
				fprintf(stderr, "rocefab-sim: --interval: '%s' is not a duration >= 10ms\n", optarg);
				return 2;
			}
			break;
		case 6:
			o.spool_dir = optarg;
			break;
		case 11:
			if (tu_parse_duration(optarg, &o.pfc_interval) < 0 ||
			    (o.pfc_interval && o.pfc_interval < 10 * NSEC_PER_MSEC)) {
				fprintf(stderr, "rocefab-sim: --pfc-interval: '%s' is not 0 or a duration >= 10ms\n",
					optarg);
				return 2;
			}
			break;
		case 7:
			o.skip = optarg;
			break;
		case 12:
			if (o.nsonic == SONIC_PUB_MAX) {
				fprintf(stderr, "rocefab-sim: --sonic: at most %d switches\n", SONIC_PUB_MAX);
				return 2;
			}
			o.sonic[o.nsonic++] = optarg;
			break;
		case 13:
			if (tu_parse_duration(optarg, &o.sonic_interval) < 0 || o.sonic_interval < 10 * NSEC_PER_MSEC) {
				fprintf(stderr, "rocefab-sim: --sonic-interval: '%s' is not a duration >= 10ms\n", optarg);
				return 2;
			}
			break;
		case 8:
			o.threads = (unsigned)strtoul(optarg, &end, 10);
			if (*end || o.threads < 1 || o.threads > 64) {
				fprintf(stderr, "rocefab-sim: --agent-threads: 1 to 64\n");
				return 2;
			}
			break;
		case 9:
			o.seed = strtoll(optarg, &end, 10);
			if (*end || o.seed < 0) {
				fprintf(stderr, "rocefab-sim: --seed: '%s' is not a number >= 0\n", optarg);
				return 2;
			}
			break;
		case 10:
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (o.agents && !o.token_file) {
		fprintf(stderr, "rocefab-sim: --agents needs --token-file (an agent token of rocefabd)\n");
		return 2;
	}
	text = str_slurp(argv[optind], &len);
	if (!text) {
		fprintf(stderr, "rocefab-sim: cannot read %s: %m\n", argv[optind]);
		return 2;
	}
	dir = strdup(argv[optind]);
	if (sim_load(text, len, argv[optind], dirname(dir), o.seed, -1, &s, &e) < 0) {
		fprintf(stderr, "rocefab-sim: %s: %s\n", argv[optind], rf_err_str(&e, buf, sizeof(buf)));
		free(text);
		free(dir);
		return e.err == -ENOMEM ? 1 : 2;
	}
	free(text);
	free(dir);
	/* the devices named: each of the fabric (a name that is not was ignored, or tried only
	 * after a connection to redis) */
	for (const char *p = o.skip; p && *p;) {
		size_t nl = strcspn(p, ",");

		if (device_named(s, p, nl) < 0) {
			fprintf(stderr, "rocefab-sim: --skip-agents: no device %.*s in %s\n", (int)nl, p, argv[optind]);
			sim_free(s);
			return 2;
		}
		p = p[nl] ? p + nl + 1 : NULL;
	}
	for (size_t k = 0; k < o.nsonic; k++) {
		size_t nl = strcspn(o.sonic[k], "=");
		int d = device_named(s, o.sonic[k], nl);

		if (d < 0 || !sim_device_is_switch(s, d)) {
			fprintf(stderr, "rocefab-sim: --sonic: no switch %.*s in %s\n", (int)nl, o.sonic[k],
				argv[optind]);
			sim_free(s);
			return 2;
		}
	}
	if (o.pace < 0)
		o.pace = sim_serve_pace(s) > 0 ? sim_serve_pace(s) : DEFAULT_PACE;
	if ((o.agents || o.nsonic) && o.pace > 1) {
		fprintf(stderr, "rocefab-sim: a pace of %g with --agents or --sonic: fabric time, the counters' "
				"read time, would run ahead of the wall clock, and rocefabd refuses reports more "
				"than a minute ahead of its own (CLOCK_AHEAD); at most 1\n", o.pace);
		sim_free(s);
		return 2;
	}
	sim_keep_running(s);
	/* the switches clear their periodic queue watermarks once per fast-lane reading (fabric
	 * time), as SONiC does every telemetry interval */
	sim_watermark_period(s, (int64_t)((double)(o.pfc_interval > 0 ? o.pfc_interval : o.interval) * o.pace * 1000.0));
	/* signals are waited for by the pacing loop; threads inherit the mask */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	simctl_init(&c, s, argv[optind], o.pace);
	if (o.agents || o.nsonic)
		c.max_pace = 1;
	status = serve(&c, &o);
	simctl_fini(&c);
	sim_free(s);
	curl_global_cleanup();
	return status;
}
