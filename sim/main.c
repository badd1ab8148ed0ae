/* rocefab-sim: argument parsing and the run loop; the simulator is sim/sim.h. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileutil.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "sim/ctl.h"
#include "sim/serve.h"
#include "sim/sim.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rocefab-sim run SCENARIO [OPTIONS]\n"
		"       rocefab-sim serve SCENARIO [OPTIONS]   (see rocefab-sim serve --help)\n"
		"\n"
		"Simulates a RoCEv2 fabric packet by packet (PFC, ECN, DCQCN, go-back-N) and prints\n"
		"flow completion times, slowdowns, pauses, marks, drops and queue depths.  run -\n"
		"reads the scenario from standard input.\n"
		"\n"
		"  --seed N             random seed (overrides the scenario's)\n"
		"  --until DURATION     stop at this simulated time, e.g. 20ms (overrides until_us)\n"
		"  --json FILE          write the full results as JSON (- for standard output)\n"
		"  --no-timing          leave the wall-clock figures out of the JSON, so that the same\n"
		"                       scenario and seed give the same file byte for byte\n"
		"  --timeseries FILE    write CSV rows of queue, throughput, pause and mark counters\n"
		"  --every DURATION     the time series' period (default 10us)\n"
		"  --ports LIST         device:port,... for the time series (a switch port is named\n"
		"                       by its neighbour, e.g. leaf0:h3, spine1:leaf0; default: all)\n"
		"  --controller NAME    run a controller inside the simulation every interval of\n"
		"                       fabric time, on the counters the agents would report:\n"
		"                       detector (rocefab's deadlock and storm detector), pfcwd\n"
		"                       (a SONiC-style PFC watchdog, action drop) or tuner (rocefab's\n"
		"                       congestion-control tuner of ECN and DCQCN)\n"
		"  --interval DURATION  the controller's interval (default 100us)\n"
		"  --mitigate MODE      the detector's mitigation: off, advise or auto (default auto)\n"
		"  --restore DURATION   how long the detector's breaks last (default 3 intervals)\n"
		"  --delay DURATION     actuation delay of the controller's changes (default one\n"
		"                       interval, the tuner's a tenth of one; 0 applies them at once)\n"
		"  --baseline pfcwd     also run the SONiC-style watchdog on the same counters, recording\n"
		"                       what it would do (its timers scaled like the interval: SONiC's\n"
		"                       200 ms poll, detection and restoration = one interval)\n"
		"  --silent HOSTS       hosts whose counters the controller (detector, pfcwd or tuner)\n"
		"                       does not get (their agents silent, as a hung host's), comma-\n"
		"                       separated: their ports are in its snapshots without readings\n"
		"  --cc-mode MODE       the tuner's mode: off, advise (proposals only) or auto (default:\n"
		"                       the --policy file's mode, else auto)\n"
		"  --policy FILE        the tuner's policy (JSON, the fields of GET /api/v1/cc/policy)\n"
		"  --probes N           the tuner's pingmesh: each host probes N others per interval\n"
		"                       (10 writes of 64 B each, one after the other), the tuner\n"
		"                       reads the median of the runs' p99 (default 2; 0: no probes)\n"
		"  --force-step SPEC    force one tuner step, CLASS:KNOB=VALUE@TIME (e.g.\n"
		"                       tor_down:kmin_bytes=3000000@2ms; CLASS may be a host class\n"
		"                       of --policy): it must be judged and rolled back if it makes\n"
		"                       things worse\n"
		"  --quiet              no progress on standard error\n"
		"  -h, --help           this text\n"
		"\n"
		"Exit status: 0 done, 2 bad scenario or arguments, 1 other errors.\n"
		"Scenario format: schemas/scenario.schema.json; examples in sim/scenarios/.\n");
}

struct ts_port {
	int dev, port;
};

struct ts_row {
	uint64_t v[8];
};

static void ts_counter(void *ctx, const char *name, int prio, uint64_t value)
{
	static const char *const names[] = { "queue_depth_bytes",   "tx_bytes",
					     "rx_bytes",	    "pfc_tx_pause_frames",
					     "pfc_rx_pause_frames", "pfc_rx_pause_duration_us",
					     "ecn_marked_packets",  NULL };
	struct ts_row *r = ctx;

	(void)prio;
	for (int i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			r->v[i] += value;
}

static int ts_ports(struct sim *s, const char *list, struct ts_port **ret, int *ret_n)
{
	struct ts_port *v = NULL;
	int n = 0;

	if (!list) {
		for (int d = 0; d < sim_device_count(s); d++)
			for (int p = 0; p < sim_port_count(s, d); p++) {
				v = realloc(v, (size_t)(n + 1) * sizeof(*v));
				v[n++] = (struct ts_port){ d, p };
			}
	} else {
		char *copy = strdup(list), *save = NULL;

		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			char *colon = strchr(t, ':');
			int d, p;

			if (!colon) {
				fprintf(stderr, "rocefab-sim: --ports: '%s' is not device:port\n", t);
				free(copy);
				free(v);
				return -1;
			}
			*colon = '\0';
			d = sim_device_find(s, t);
			p = d >= 0 ? sim_port_find(s, d, colon + 1) : -1;
			if (p < 0) {
				fprintf(stderr, "rocefab-sim: --ports: no port %s:%s\n", t, colon + 1);
				free(copy);
				free(v);
				return -1;
			}
			v = realloc(v, (size_t)(n + 1) * sizeof(*v));
			v[n++] = (struct ts_port){ d, p };
		}
		free(copy);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static void print_human(json_t *doc)
{
	json_t *f = json_object_get(doc, "flows"), *sd = json_object_get(doc, "slowdown");
	json_t *run = json_object_get(doc, "run"), *tp = json_object_get(doc, "throughput");
	static const char *const buckets[] = { "all", "lt_100KB", "100KB_1MB", "ge_1MB" };
	double sim_us = json_number_value(json_object_get(doc, "sim_time_us"));
	double last_us = json_number_value(json_object_get(f, "last_completed_us"));

	printf("simulated %.3f ms: %lld of %lld flows completed, goodput %.2f Gb/s", sim_us / 1000,
	       (long long)json_integer_value(json_object_get(f, "completed")),
	       (long long)json_integer_value(json_object_get(f, "total")),
	       json_number_value(json_object_get(tp, "goodput_gbps")));
	/* --until past the last completion: the goodput over the run counts idle time */
	if (json_is_number(json_object_get(tp, "goodput_completed_gbps")) && last_us < sim_us * 0.99)
		printf(" (the last flow completed at %.3f ms: %.2f Gb/s until then)", last_us / 1000,
		       json_number_value(json_object_get(tp, "goodput_completed_gbps")));
	putchar('\n');
	printf("slowdown      %-10s %8s %8s %8s %8s\n", "bucket", "flows", "p50", "p95", "p99");
	for (int i = 0; i < 4; i++) {
		json_t *b = json_object_get(sd, buckets[i]);

		printf("              %-10s %8lld %8.2f %8.2f %8.2f\n", buckets[i],
		       (long long)json_integer_value(json_object_get(b, "n")),
		       json_number_value(json_object_get(b, "p50")),
		       json_number_value(json_object_get(b, "p95")),
		       json_number_value(json_object_get(b, "p99")));
	}
	printf("pfc           %lld pause frames, %.1f us paused\n",
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "pfc"), "tx_pause_frames")),
	       json_number_value(json_object_get(json_object_get(doc, "pfc"), "paused_us")));
	printf("ecn/cnp       %lld marks, %lld CNPs\n",
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "ecn"), "marked_packets")),
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "cnp"), "sent")));
	printf("drops         buffer %lld, link %lld; retransmitted %lld packets\n",
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "drops"), "buffer")),
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "drops"), "link")),
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "transport"), "retransmitted_packets")));
	printf("queues        p50 %lld B, p99 %lld B, max %lld B\n",
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "queues"), "p50_bytes")),
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "queues"), "p99_bytes")),
	       (long long)json_integer_value(json_object_get(json_object_get(doc, "queues"), "max_bytes")));
	if (json_object_get(run, "wall_s"))
		printf("run           %lld events, %lld data packets in %.2f s: %.0f events/s, %.0f packets/s, "
		       "peak RSS %lld KB\n",
		       (long long)json_integer_value(json_object_get(run, "events")),
		       (long long)json_integer_value(json_object_get(run, "data_packets")),
		       json_number_value(json_object_get(run, "wall_s")),
		       json_number_value(json_object_get(run, "events_per_s")),
		       json_number_value(json_object_get(run, "data_packets_per_s")),
		       (long long)json_integer_value(json_object_get(run, "peak_rss_kb")));
}

/* The tuner's intervals with its harder steps held (a fault: the detector's or its own reading
 * of a host's pauses), as spans of consecutive ones: the first 5, each with what held it first
 * and, when that changed, last (the tuner's own reading of a host's pauses, then the
 * detector's name for the fault). */
static void print_holds(json_t *timeline)
{
	size_t i, n = 0, spans = 0;
	double from = 0, last = 0;
	const char *why = NULL, *then = NULL;
	json_t *v;

	json_array_foreach(timeline, i, v)
		n += json_is_string(json_object_get(v, "harder_held_for"));
	if (!n)
		return;
	printf("  harder steps held in %zu of %zu intervals\n", n, json_array_size(timeline));
	json_array_foreach(timeline, i, v) {
		const char *h = json_string_value(json_object_get(v, "harder_held_for"));
		double t = json_number_value(json_object_get(v, "t_us"));

		if (h && !why) {
			why = h;
			from = t;
		}
		if (h)
			then = h;
		if (why && (!h || i + 1 == json_array_size(timeline))) {
			if (spans++ < 5)
				printf("  %9.1f us  held to %.1f us: %s%s%s\n", from, h ? t : last, why,
				       strcmp(why, then) ? "; then " : "", strcmp(why, then) ? then : "");
			why = NULL;
		}
		last = t;
	}
	if (spans > 5)
		printf("  (%zu spans; the JSON's timeline has them all)\n", spans);
}

static void print_controller(json_t *c)
{
	json_t *v;
	size_t i;

	printf("controller    %s every %.0f us", json_string_value(json_object_get(c, "kind")),
	       json_number_value(json_object_get(c, "interval_us")));
	if (!strcmp(json_string_value(json_object_get(c, "kind")), "tuner")) {
		json_t *f = json_object_get(c, "forced");

		/* the tuner has steps, not findings and actions */
		printf(", mode %s; %lld steps, %lld rolled back, %lld changes applied, %zu invariant violations\n",
		       json_string_value(json_object_get(c, "mode")),
		       (long long)json_integer_value(json_object_get(c, "steps")),
		       (long long)json_integer_value(json_object_get(c, "rolled_back")),
		       (long long)json_integer_value(json_object_get(c, "changes_applied")),
		       json_array_size(json_object_get(c, "violations")));
		if (f) {
			printf("  forced step %s %s = %.15g: ", json_string_value(json_object_get(f, "class")),
			       json_string_value(json_object_get(f, "knob")), json_number_value(json_object_get(f, "value")));
			if (json_object_get(f, "rollback_intervals"))
				printf("rolled back %.1f intervals after it was applied\n",
				       json_number_value(json_object_get(f, "rollback_intervals")));
			else if (json_object_get(f, "refused"))
				printf("refused: %s\n", json_string_value(json_object_get(f, "refused")));
			else
				printf("%s\n", json_object_get(f, "applied_us") ? "applied, not rolled back"
										: "never applied (the run ended first)");
		}
		print_holds(json_object_get(c, "timeline"));
		json_array_foreach(json_object_get(c, "violations"), i, v)
			if (i < 5) {
				const char *node = json_string_value(json_object_get(v, "node"));
				const char *port = json_string_value(json_object_get(v, "port"));

				printf("  %9.1f us  invariant %s%s%s%s%s\n", json_number_value(json_object_get(v, "t_us")),
				       json_string_value(json_object_get(v, "what")), node && *node ? " on " : "",
				       node ? node : "", port && *port ? ":" : "", port ? port : "");
			}
		return;
	}
	if (!strcmp(json_string_value(json_object_get(c, "kind")), "detector"))
		printf(", mitigation %s", json_string_value(json_object_get(c, "mitigate")));
	printf("; %zu findings, %zu actions", json_array_size(json_object_get(c, "findings")),
	       json_array_size(json_object_get(c, "actions")));
	if (json_is_string(json_object_get(c, "baseline")))
		printf("; baseline pfcwd: %zu actions", json_array_size(json_object_get(c, "baseline_actions")));
	printf("\n");
	json_array_foreach(json_object_get(c, "findings"), i, v)
		if (strcmp(json_string_value(json_object_get(v, "class")), "congestion"))
			printf("  %9.1f us  %-13s %s\n", json_number_value(json_object_get(v, "detected_us")),
			       json_string_value(json_object_get(v, "class")),
			       json_string_value(json_object_get(v, "summary")));
	json_array_foreach(json_object_get(c, "actions"), i, v)
		printf("  %9.1f us  action %s %s:%s priority %lld%s\n", json_number_value(json_object_get(v, "t_us")),
		       json_string_value(json_object_get(v, "op")), json_string_value(json_object_get(v, "node")),
		       json_string_value(json_object_get(v, "port")),
		       (long long)json_integer_value(json_object_get(v, "priority")),
		       json_is_false(json_object_get(v, "ok")) ? " (failed)" : "");
}

static int run_main(int argc, char **argv);

int main(int argc, char **argv)
{
	log_init("rocefab-sim");
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return sim_serve_main(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("rocefab-sim %s\n", ROCEFAB_VERSION);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "run") != 0) {
		if (argc < 2)
			fprintf(stderr, "rocefab-sim: name a command: run or serve\n");
		else
			fprintf(stderr, "rocefab-sim: '%s' is not a command (run, serve)\n", argv[1]);
		usage(stderr);
		return 2;
	}
	return run_main(argc - 1, argv + 1);
}

/* A scenario from standard input (run -): read whole, 64 MiB at most; its relative paths (a
 * workload's CDF file) are the working directory's.  NULL with errno. */
static char *read_stdin(size_t *ret_len)
{
	size_t cap = 1 << 16, n = 0, got;
	char *buf = malloc(cap), *nb;

	while (buf && (got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
		n += got;
		if (n + 1 < cap)
			continue;
		if (cap >= (64u << 20)) {
			free(buf);
			errno = EFBIG;
			return NULL;
		}
		if (!(nb = realloc(buf, cap * 2))) {
			free(buf);
			return NULL;
		}
		buf = nb;
		cap *= 2;
	}
	if (buf && ferror(stdin)) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	if (buf) {
		buf[n] = '\0';
		*ret_len = n;
	}
	return buf;
}

/* The temporaries of the outputs while the run goes: a run stopped by a signal (^C) leaves
 * the earlier results, and no temporary beside them. */
static const char *volatile outs_tmp[2];

static void on_stop(int sig)
{
	for (int i = 0; i < 2; i++)
		if (outs_tmp[i])
			unlink(outs_tmp[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int run_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 1 },	 { "until", required_argument, NULL, 2 },
		{ "json", required_argument, NULL, 3 },	 { "timeseries", required_argument, NULL, 4 },
		{ "every", required_argument, NULL, 5 }, { "ports", required_argument, NULL, 6 },
		{ "no-timing", no_argument, NULL, 7 },	 { "quiet", no_argument, NULL, 8 },
		{ "controller", required_argument, NULL, 9 }, { "interval", required_argument, NULL, 10 },
		{ "mitigate", required_argument, NULL, 11 }, { "restore", required_argument, NULL, 12 },
		{ "delay", required_argument, NULL, 13 }, { "baseline", required_argument, NULL, 14 },
		{ "cc-mode", required_argument, NULL, 15 }, { "policy", required_argument, NULL, 16 },
		{ "force-step", required_argument, NULL, 17 }, { "probes", required_argument, NULL, 18 },
		{ "silent", required_argument, NULL, 19 },
		{ "help", no_argument, NULL, 'h' },	 { NULL, 0, NULL, 0 },
	};
	const char *json_out = NULL, *ts_out = NULL, *ports = NULL;
	int64_t seed = -1, until = -1, every = 10 * 1000000LL;
	bool timing = true, quiet = false;
	struct sim_ctl_opts co = { .delay_ps = -1, .mitigate = CC_DL_AUTO, .tune = { .mode = CC_TN_AUTO, .probe_peers = SIM_TUNE_PROBE_PEERS } };
	json_t *policy = NULL;
	bool cc_mode_given = false, probes_given = false, mitigate_given = false, every_given = false;
	struct sim_ctl *ctl = NULL;
	struct ts_port *tsp = NULL;
	struct rf_err e = { 0 };
	struct sim *s = NULL;
	struct file_out tso = { 0 }; /* --timeseries: its file, open from before the run */
	FILE *ts = NULL;
	char *text, *dir, buf[700];
	size_t len;
	int c, ntsp = 0, status = 1, fr;
	struct file_out jo = { 0 }; /* --json's file (not standard output), open from before the run */
	int64_t t0;
	json_t *doc;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int64_t ns;

		switch (c) {
		case 1: {
			char *end;

			errno = 0;
			seed = strtoll(optarg, &end, 10);
			if (!*optarg || *end || seed < 0 || errno) { /* (ERANGE: it saturated in silence) */
				fprintf(stderr, "rocefab-sim: --seed: '%s' is not a number from 0 to %lld\n", optarg,
					(long long)INT64_MAX);
				return 2;
			}
			break;
		}
		case 2:
		case 5:
			if (tu_parse_duration(optarg, &ns) < 0 || ns <= 0) {
				fprintf(stderr, "rocefab-sim: %s: '%s' is not a duration above 0 (such as 20ms)\n",
					c == 2 ? "--until" : "--every", optarg);
				return 2;
			}
			if (c == 2)
				until = ns * 1000;
			else
				every = ns * 1000;
			every_given |= c == 5;
			break;
		case 3:
			json_out = optarg;
			break;
		case 4:
			ts_out = optarg;
			break;
		case 6:
			ports = optarg;
			break;
		case 7:
			timing = false;
			break;
		case 8:
			quiet = true;
			break;
		case 9:
			if (!strcmp(optarg, "detector"))
				co.controller = SIM_CTL_DETECTOR;
			else if (!strcmp(optarg, "pfcwd"))
				co.controller = SIM_CTL_PFCWD;
			else if (!strcmp(optarg, "tuner"))
				co.controller = SIM_CTL_TUNER;
			else {
				fprintf(stderr, "rocefab-sim: --controller: '%s' is not detector, pfcwd or tuner\n",
					optarg);
				return 2;
			}
			break;
		case 10:
		case 12:
		case 13:
			if (tu_parse_duration(optarg, &ns) < 0 || ns < 0 || (c != 13 && ns == 0) ||
			    ns > INT64_MAX / 1000) {
				fprintf(stderr, "rocefab-sim: %s: '%s' is not a duration%s (such as 100us)\n",
					c == 10 ? "--interval" : c == 12 ? "--restore" : "--delay", optarg,
					c == 13 ? "" : " above 0");
				return 2;
			}
			*(c == 10 ? &co.interval_ps : c == 12 ? &co.restore_ps : &co.delay_ps) = ns * 1000;
			break;
		case 11:
			mitigate_given = true;
			if (cc_dl_mode_parse(optarg, &co.mitigate) < 0) {
				fprintf(stderr, "rocefab-sim: --mitigate: '%s' is not off, advise or auto\n", optarg);
				return 2;
			}
			break;
		case 14:
			if (strcmp(optarg, "pfcwd")) {
				fprintf(stderr, "rocefab-sim: --baseline: '%s' is not pfcwd\n", optarg);
				return 2;
			}
			co.baseline_pfcwd = true;
			break;
		case 15:
			cc_mode_given = co.tune.mode_given = true;
			if (cc_tn_mode_parse(optarg, &co.tune.mode) < 0) {
				fprintf(stderr, "rocefab-sim: --cc-mode: '%s' is not off, advise or auto\n", optarg);
				return 2;
			}
			break;
		case 16: {
			json_error_t je;

			json_decref(policy);
			if (!(policy = json_load_file(optarg, 0, &je))) {
				/* (a file it could not open has no line: jansson says line -1) */
				if (je.line < 0)
					fprintf(stderr, "rocefab-sim: --policy: %s\n", je.text);
				else
					fprintf(stderr, "rocefab-sim: --policy: %s: line %d: %s\n", optarg, je.line,
						je.text);
				return 2;
			}
			co.tune.policy = policy;
			break;
		}
		case 17:
			if (sim_tune_parse_force(optarg, &co.tune) < 0) {
				fprintf(stderr, "rocefab-sim: --force-step: '%s' is not CLASS:KNOB=VALUE@TIME "
						"(e.g. tor_down:kmin_bytes=3000000@2ms)\n", optarg);
				json_decref(policy);
				return 2;
			}
			break;
		case 18: {
			char *end;
			unsigned long n;

			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (!*optarg || *end || errno || n > 1024 || optarg[0] == '-') {
				fprintf(stderr, "rocefab-sim: --probes: '%s' is not a number of hosts, 0 to 1024\n",
					optarg);
				json_decref(policy);
				return 2;
			}
			co.tune.probe_peers = (unsigned)n;
			probes_given = true;
			break;
		}
		case 19:
			co.silent = optarg;
			break;
		case 'h':
			json_decref(policy);
			usage(stdout);
			return 0;
		default:
			json_decref(policy);
			usage(stderr);
			return 2;
		}
	}
	if (co.controller != SIM_CTL_TUNER && (policy || co.tune.force || cc_mode_given || probes_given)) {
		fprintf(stderr, "rocefab-sim: --cc-mode, --policy, --force-step and --probes need --controller tuner\n");
		json_decref(policy);
		return 2;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "rocefab-sim: run: %s\n",
			optind + 1 > argc ? "name a SCENARIO file"
					  : "one SCENARIO file, and options before or after it");
		usage(stderr);
		return 2;
	}
	if (!co.controller && (co.interval_ps || co.restore_ps || co.delay_ps >= 0 || co.baseline_pfcwd || mitigate_given)) {
		fprintf(stderr, "rocefab-sim: --interval, --restore, --delay, --baseline and --mitigate need --controller\n");
		return 2;
	}
	if (co.silent && co.controller == SIM_CTL_NONE) {
		fprintf(stderr, "rocefab-sim: --silent needs --controller detector, pfcwd or tuner\n");
		return 2;
	}
	if ((ports || every_given) && !ts_out) {
		fprintf(stderr, "rocefab-sim: --ports and --every need --timeseries\n");
		return 2;
	}
	optind--; /* argv[optind + 1] is the scenario below */
	text = strcmp(argv[optind + 1], "-") ? str_slurp(argv[optind + 1], &len) : read_stdin(&len);
	if (!text) {
		fprintf(stderr, "rocefab-sim: cannot read %s: %m\n",
			strcmp(argv[optind + 1], "-") ? argv[optind + 1] : "the scenario from standard input");
		return 2;
	}
	dir = strdup(argv[optind + 1]);
	if (sim_load(text, len, argv[optind + 1], dirname(dir), seed, until, &s, &e) < 0) {
		fprintf(stderr, "rocefab-sim: %s: %s\n", argv[optind + 1], rf_err_str(&e, buf, sizeof(buf)));
		free(text);
		free(dir);
		return e.err == -ENOMEM ? 1 : 2;
	}
	free(text);
	free(dir);
	if (sim_runs_forever(s)) {
		fprintf(stderr, "rocefab-sim: %s: its workloads loop until stopped: give until_us or "
				"--until, or use rocefab-sim serve\n", argv[optind + 1]);
		sim_free(s);
		return 2;
	}
	if (co.controller && sim_ctl_new(s, &co, &ctl, &e) < 0) {
		fprintf(stderr, "rocefab-sim: %s: %s\n", argv[optind + 1], rf_err_str(&e, buf, sizeof(buf)));
		status = e.err == -ENOMEM ? 1 : 2;
		goto out;
	}
	/* the outputs are opened before the run: a path that cannot be written, or a --ports
	 * that names no port, is said at once (exit 2), not after the whole run.  Each goes to a
	 * file beside it, renamed over it once written whole: a run that fails or is stopped, or
	 * a full disk, leaves an earlier result as it was (a FIFO or a device is written through,
	 * never replaced: lib/fileutil.h) */
	if (json_out && strcmp(json_out, "-") && (fr = file_out_open(&jo, json_out)) < 0) {
		fprintf(stderr, "rocefab-sim: cannot write %s: %s\n", json_out, strerror(-fr));
		status = 2;
		goto out;
	}
	if (ts_out) {
		if (ts_ports(s, ports, &tsp, &ntsp) < 0) {
			status = 2;
			goto out;
		}
		if ((fr = file_out_open(&tso, ts_out)) < 0) {
			fprintf(stderr, "rocefab-sim: cannot write %s: %s\n", ts_out, strerror(-fr));
			status = 2;
			goto out;
		}
		ts = tso.f;
		if (file_out_same(&jo, &tso)) { /* (the JSON, renamed last, would replace the CSV) */
			fprintf(stderr, "rocefab-sim: --json and --timeseries name one file: %s\n", ts_out);
			status = 2;
			goto out;
		}
		fprintf(ts, "time_us,device,port,queue_bytes,tx_bytes,rx_bytes,tx_pause_frames,"
			    "rx_pause_frames,paused_us,ecn_marked\n");
	}

	outs_tmp[0] = jo.tmp;
	outs_tmp[1] = tso.tmp;
	if (jo.tmp || tso.tmp) {
		signal(SIGINT, on_stop);
		signal(SIGTERM, on_stop);
		signal(SIGHUP, on_stop);
	}
	t0 = tu_mono_ns();
	{
		int64_t last_report = t0, next_ts = every;

		while (!sim_done(s)) {
			int64_t target = ts ? next_ts : sim_now(s) + 1000000000LL; /* 1 ms of fabric time */

			if (ctl && sim_ctl_next(ctl) < target)
				target = sim_ctl_next(ctl);
			if (sim_until(s) > 0 && target > sim_until(s))
				target = sim_until(s);
			sim_run_until(s, target);
			if (ctl && sim_now(s) >= sim_ctl_next(ctl) && sim_ctl_step(ctl) < 0) {
				fprintf(stderr, "rocefab-sim: out of memory\n");
				goto out;
			}
			if (ts && sim_now(s) >= next_ts) {
				for (int i = 0; i < ntsp; i++) {
					struct ts_row r = { { 0 } };

					sim_counters(s, tsp[i].dev, tsp[i].port, ts_counter, &r);
					fprintf(ts, "%.3f,%s,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
						(double)sim_now(s) / 1e6, sim_device_name(s, tsp[i].dev),
						sim_port_name(s, tsp[i].dev, tsp[i].port),
						(unsigned long long)r.v[0], (unsigned long long)r.v[1],
						(unsigned long long)r.v[2], (unsigned long long)r.v[3],
						(unsigned long long)r.v[4], (unsigned long long)r.v[5],
						(unsigned long long)r.v[6]);
				}
				next_ts += every;
			}
			if (!quiet && tu_mono_ns() - last_report > 2 * NSEC_PER_SEC) {
				double wall = (double)(tu_mono_ns() - t0) / 1e9;

				last_report = tu_mono_ns();
				fprintf(stderr, "rocefab-sim: t = %.3f ms (%.0f%%), %llu events, %.2f M packets/s\n",
					(double)sim_now(s) / 1e9, sim_progress(s) * 100,
					(unsigned long long)sim_events(s), (double)sim_data_packets(s) / wall / 1e6);
			}
		}
	}
	doc = sim_summary(s, timing, (double)(tu_mono_ns() - t0) / 1e9);
	if (ctl)
		json_object_set_new(doc, "controller", sim_ctl_json(ctl, timing));
	outs_tmp[0] = outs_tmp[1] = NULL; /* (committed or dropped below, not by a signal) */
	if (ts && (fr = file_out_commit(&tso)) < 0) {
		fprintf(stderr, "rocefab-sim: cannot write %s: %s\n", ts_out, strerror(-fr));
		json_decref(doc);
		goto out;
	}
	ts = NULL;
	if (json_out) {
		FILE *f = jo.f ? jo.f : stdout;

		json_dumpf(doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		fputc('\n', f);
		if (f != stdout && (fr = file_out_commit(&jo)) < 0) {
			fprintf(stderr, "rocefab-sim: cannot write %s: %s\n", json_out, strerror(-fr));
			json_decref(doc);
			goto out;
		}
		if (f == stdout && (fflush(stdout) != 0 || ferror(stdout))) {
			fprintf(stderr, "rocefab-sim: cannot write the JSON to standard output: %m\n");
			json_decref(doc);
			goto out;
		}
	}
	if (!json_out || strcmp(json_out, "-")) {
		print_human(doc);
		if (ctl)
			print_controller(json_object_get(doc, "controller"));
	}
	json_decref(doc);
	status = 0;
out:
	/* (the run failed: the earlier results stay) */
	outs_tmp[0] = outs_tmp[1] = NULL;
	file_out_abort(&tso);
	file_out_abort(&jo);
	free(tsp);
	sim_ctl_free(ctl);
	sim_free(s);
	json_decref(policy);
	return status;
}
