/* rocefabctl: command-line client of the rocefab REST API.  Every command fetches one REST
 * resource; -j prints it as JSON, otherwise as an aligned table. */
#include <errno.h>
#include <getopt.h>
#include <time.h>
#include <unistd.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cli/print.h"
#include "lib/httpc.h"
#include "lib/strutil.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rocefabctl [OPTIONS] COMMAND [ARGS]\n"
		"\n"
		"Commands:\n"
		"  health                       daemon and store health\n"
		"  version                      versions of rocefabd and its contracts\n"
		"  agents                       agents, their liveness and spools\n"
		"  hosts [HOST]                 hosts, or one host with its devices and ports\n"
		"  ports [--host H] [--device D] [--state up|down|init|unknown]\n"
		"  counters PORT [NAME...] [--from T] [--to T] [--step DUR]\n"
		"                               latest delta and rate of a port's counters (PORT is\n"
		"                               HOST:DEVICE:PORT; times: RFC 3339, Unix seconds, -5m)\n"
		"  registry                     the counters rocefab knows\n"
		"  switches [SWITCH]            switches, or one switch with its ports, neighbours,\n"
		"                               PFC and ECN settings\n"
		"  links                        links between ports, from the ports' neighbours\n"
		"  topology                     nodes and links (JSON)\n"
		"  params                       the settings that can be changed, units and ranges\n"
		"  set dcqcn HOST NAME=VALUE... [--device D --port P]\n"
		"  set ecn SWITCH PORT QUEUE NAME=VALUE...   (kmin_bytes, kmax_bytes, pmax, enabled)\n"
		"  set pfc SWITCH PORT NAME=VALUE...         (enable, xoff_bytes, xon_bytes, alpha_shift)\n"
		"  set pfc HOST DEVICE:PORT enable=MASK\n"
		"                               change settings (role operator); HOST, SWITCH and PORT\n"
		"                               may be glob patterns ('leaf*') to change many at once;\n"
		"                               sizes take units (400KB); --reason TEXT goes to the\n"
		"                               audit log; --wait waits for the outcome\n"
		"  probes [--window DUR] [--op OP] [--size BYTES]\n"
		"                               pingmesh: what the latency matrix points at, and its\n"
		"                               worst pairs (of the configuration's first op and size\n"
		"                               unless named)\n"
		"  alerts [--state active|cleared]  faults named by the pingmesh localization\n"
		"  changes [ID] [--state S] [--agent A]\n"
		"                               configuration changes and their outcome (audit log)\n"
		"\n"
		"Options:\n"
		"  -s, --server URL       rocefabd URL (default $ROCEFAB_SERVER or http://127.0.0.1:9750)\n"
		"  -t, --token-file FILE  bearer token file (default $ROCEFAB_TOKEN_FILE; or the token\n"
		"                         itself in $ROCEFAB_TOKEN)\n"
		"  -j, --json             print the REST JSON\n"
		"      --reason TEXT      why (set)\n"
		"      --wait[=SECONDS]   wait until every change is settled (set; default 30 s)\n"
		"  -V, --version          print the version and exit\n"
		"  -h, --help             this text\n");
}

/* NAME=VALUE: integers, numbers, true/false; anything else stays a string (sizes: "400KB"). */
static int parse_assign(const char *a, json_t *params)
{
	const char *eq = strchr(a, '=');
	char name[96], *end;
	const char *v;
	long long ll;
	double d;

	if (!eq || eq == a || (size_t)(eq - a) >= sizeof(name))
		return -1;
	memcpy(name, a, (size_t)(eq - a));
	name[eq - a] = '\0';
	v = eq + 1;
	errno = 0;
	ll = strtoll(v, &end, 0);
	if (*v && !*end && !errno) {
		json_object_set_new(params, name, json_integer(ll));
		return 0;
	}
	d = strtod(v, &end);
	if (*v && !*end) {
		json_object_set_new(params, name, json_real(d));
		return 0;
	}
	if (!strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "false") || !strcmp(v, "off")) {
		json_object_set_new(params, name, json_boolean(!strcmp(v, "true") || !strcmp(v, "on")));
		return 0;
	}
	json_object_set_new(params, name, json_string(v));
	return 0;
}

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* httpc_json() that names the server, not the whole URL, when the server cannot be reached:
 * rocefabctl's message since its first version ("http://h:9750: Couldn't connect ..."). */
static int request(struct httpc *h, const char *method, const char *path, json_t *body,
		   json_t **ret, struct rf_err *e)
{
	long status;
	int r = httpc_json(h, method, path, body, ret, &status, e);

	if (r == -EHOSTUNREACH)
		snprintf(e->where, sizeof(e->where), "%s", httpc_base(h));
	return r;
}

static char *read_token(const char *path)
{
	char buf[256];
	FILE *f = fopen(path, "re");

	if (!f) {
		fprintf(stderr, "rocefabctl: cannot read token file %s: %m\n", path);
		return NULL;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, " \r\n")] = '\0';
	return strdup(buf);
}

/* Appends "&key=value" (URL-encoded) to q. */
static void add_arg(char *q, size_t len, const char *key, const char *value)
{
	char enc[512];
	size_t n = strlen(q);

	if (!value)
		return;
	httpc_escape(value, enc, sizeof(enc));
	snprintf(q + n, len - n, "%c%s=%s", strchr(q, '?') ? '&' : '?', key, enc);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' }, { "token-file", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },	    { "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },	    { "host", required_argument, NULL, 1 },
		{ "device", required_argument, NULL, 2 },   { "state", required_argument, NULL, 3 },
		{ "from", required_argument, NULL, 4 },	    { "to", required_argument, NULL, 5 },
		{ "step", required_argument, NULL, 6 },	    { "reason", required_argument, NULL, 7 },
		{ "wait", optional_argument, NULL, 8 },	    { "agent", required_argument, NULL, 9 },
		{ "port", required_argument, NULL, 10 },    { "window", required_argument, NULL, 6 },
		{ "op", required_argument, NULL, 11 },	    { "size", required_argument, NULL, 12 },
		{ NULL, 0, NULL, 0 },
	};
	const char *reason = NULL, *agent = NULL, *port_opt = NULL, *method = "GET", *op = NULL, *size = NULL;
	double wait_s = 0;
	json_t *body = NULL;
	const char *server = getenv("ROCEFAB_SERVER"), *token_file = getenv("ROCEFAB_TOKEN_FILE");
	const char *host = NULL, *device = NULL, *state = NULL, *from = NULL, *to = NULL,
		   *step = NULL, *cmd;
	char *token = NULL, path[2048], buf[700];
	print_fn *print = NULL;
	struct httpc *c = NULL;
	struct rf_err e = { 0 };
	bool json_out = false;
	json_t *doc = NULL;
	int opt, rc = 1;

	while ((opt = getopt_long(argc, argv, "s:t:jVh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			server = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'j':
			json_out = true;
			break;
		case 'V':
			printf("rocefabctl %s\n", ROCEFAB_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 1:
			host = optarg;
			break;
		case 2:
			device = optarg;
			break;
		case 3:
			state = optarg;
			break;
		case 4:
			from = optarg;
			break;
		case 5:
			to = optarg;
			break;
		case 6:
			step = optarg;
			break;
		case 7:
			reason = optarg;
			break;
		case 8:
			wait_s = optarg ? atof(optarg) : 30;
			if (wait_s <= 0) {
				fprintf(stderr, "rocefabctl: --wait: a number of seconds > 0\n");
				return 2;
			}
			break;
		case 9:
			agent = optarg;
			break;
		case 10:
			port_opt = optarg;
			break;
		case 11:
			op = optarg;
			break;
		case 12:
			size = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind++];
	if (strcmp(cmd, "health") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/health");
		print = print_health;
	} else if (strcmp(cmd, "version") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/version");
	} else if (strcmp(cmd, "agents") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/agents");
		print = print_agents;
	} else if (strcmp(cmd, "hosts") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/hosts");
		print = print_hosts;
	} else if (strcmp(cmd, "hosts") == 0 && optind + 1 == argc) {
		char enc[512];

		httpc_escape(argv[optind], enc, sizeof(enc));
		snprintf(path, sizeof(path), "/api/v1/hosts/%s", enc);
		print = print_host;
	} else if (strcmp(cmd, "ports") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/ports");
		add_arg(path, sizeof(path), "host", host);
		add_arg(path, sizeof(path), "device", device);
		add_arg(path, sizeof(path), "state", state);
		print = NULL;
	} else if (strcmp(cmd, "counters") == 0 && optind < argc) {
		char enc[512], names[1024] = "";

		httpc_escape(argv[optind++], enc, sizeof(enc));
		snprintf(path, sizeof(path), "/api/v1/ports/%s/counters", enc);
		for (; optind < argc; optind++) {
			size_t n = strlen(names);

			snprintf(names + n, sizeof(names) - n, "%s%s", n ? "," : "", argv[optind]);
		}
		add_arg(path, sizeof(path), "names", names[0] ? names : NULL);
		add_arg(path, sizeof(path), "from", from);
		add_arg(path, sizeof(path), "to", to);
		add_arg(path, sizeof(path), "step", step);
		print = print_counters;
	} else if (strcmp(cmd, "registry") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/counters");
		print = print_registry;
	} else if (strcmp(cmd, "switches") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/switches");
		print = print_switches;
	} else if (strcmp(cmd, "switches") == 0 && optind + 1 == argc) {
		char enc[512];

		httpc_escape(argv[optind], enc, sizeof(enc));
		snprintf(path, sizeof(path), "/api/v1/switches/%s", enc);
		print = print_switch;
	} else if (strcmp(cmd, "links") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/links");
		print = print_links;
	} else if (strcmp(cmd, "topology") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/topology");
	} else if (strcmp(cmd, "params") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/params");
		print = print_params;
	} else if (strcmp(cmd, "probes") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/probes/matrix");
		add_arg(path, sizeof(path), "window", step);
		add_arg(path, sizeof(path), "op", op);
		add_arg(path, sizeof(path), "size", size);
		print = print_probes;
	} else if (strcmp(cmd, "alerts") == 0 && optind == argc) {
		snprintf(path, sizeof(path), "/api/v1/alerts");
		add_arg(path, sizeof(path), "state", state);
		print = print_alerts;
	} else if (strcmp(cmd, "changes") == 0 && optind + 1 >= argc) {
		if (optind < argc) {
			char enc[64];

			httpc_escape(argv[optind], enc, sizeof(enc));
			snprintf(path, sizeof(path), "/api/v1/changes/%s", enc);
		} else {
			snprintf(path, sizeof(path), "/api/v1/changes");
			add_arg(path, sizeof(path), "state", state);
			add_arg(path, sizeof(path), "agent", agent);
		}
		print = print_changes;
	} else if (strcmp(cmd, "set") == 0 && optind + 2 <= argc) {
		const char *what = argv[optind++], *node = argv[optind++], *sport = NULL, *queue = NULL;
		bool bulk = is_glob(node);
		char e1[256], e2[256];

		if (strcmp(what, "dcqcn") && strcmp(what, "ecn") && strcmp(what, "pfc")) {
			fprintf(stderr, "rocefabctl: set dcqcn, set ecn or set pfc\n");
			return 2;
		}
		if (strcmp(what, "dcqcn") && optind < argc)
			sport = argv[optind++];
		if (!strcmp(what, "ecn") && optind < argc)
			queue = argv[optind++];
		if ((strcmp(what, "dcqcn") && !sport) || (!strcmp(what, "ecn") && !queue)) {
			fprintf(stderr, "rocefabctl: set %s needs %s\n", what,
				!strcmp(what, "ecn") ? "SWITCH PORT QUEUE" : "NODE PORT");
			return 2;
		}
		bulk |= sport && is_glob(sport);
		body = json_object();
		for (; optind < argc; optind++) {
			if (parse_assign(argv[optind], body) < 0) {
				fprintf(stderr, "rocefabctl: '%s' is not NAME=VALUE\n", argv[optind]);
				json_decref(body);
				return 2;
			}
		}
		if (!json_object_size(body)) {
			fprintf(stderr, "rocefabctl: name at least one NAME=VALUE to change (rocefabctl params)\n");
			json_decref(body);
			return 2;
		}
		method = "PUT";
		if (bulk) {
			json_t *sel = json_object(), *doc2;
			bool on_host = !strcmp(what, "dcqcn") || (sport && strchr(sport, ':'));

			json_object_set_new(sel, on_host ? "host" : "switch", json_string(node));
			if (sport)
				json_object_set_new(sel, "port", json_string(sport));
			if (queue)
				json_object_set_new(sel, "queue", json_integer(atoi(queue)));
			if (device)
				json_object_set_new(sel, "device", json_string(device));
			doc2 = json_pack("{s:s,s:o,s:o}", "kind", what, "select", sel, "params", body);
			body = doc2;
			method = "POST";
			snprintf(path, sizeof(path), "/api/v1/changes");
		} else if (!strcmp(what, "dcqcn")) {
			httpc_escape(node, e1, sizeof(e1));
			snprintf(path, sizeof(path), "/api/v1/hosts/%s/dcqcn", e1);
			if (device)
				json_object_set_new(body, "device", json_string(device));
			if (port_opt)
				json_object_set_new(body, "port", json_string(port_opt));
		} else if (!strcmp(what, "ecn")) {
			httpc_escape(node, e1, sizeof(e1));
			httpc_escape(sport, e2, sizeof(e2));
			snprintf(path, sizeof(path), "/api/v1/switches/%s/ports/%s/queues/%s/ecn", e1, e2, queue);
		} else {
			httpc_escape(node, e1, sizeof(e1));
			httpc_escape(sport, e2, sizeof(e2));
			snprintf(path, sizeof(path), "/api/v1/%s/%s/ports/%s/pfc",
				 strchr(sport, ':') ? "hosts" : "switches", e1, e2);
		}
		if (reason)
			json_object_set_new(body, "reason", json_string(reason));
		print = print_changes;
	} else {
		fprintf(stderr, "rocefabctl: unknown command or wrong arguments: %s\n", cmd);
		usage(stderr);
		return 2;
	}

	if (token_file && *token_file) {
		token = read_token(token_file);
		if (!token)
			return 1;
	} else if (getenv("ROCEFAB_TOKEN")) {
		token = strdup(getenv("ROCEFAB_TOKEN"));
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (httpc_new(&(struct httpc_conf){ .base = server ? server : "http://127.0.0.1:9750",
					    .what = "--server",
					    .token = token,
					    .user_agent = "rocefabctl/" ROCEFAB_VERSION,
					    .timeout_ns = 30 * INT64_C(1000000000) },
		      &c, &e) < 0 ||
	    request(c, method, path, body, &doc, &e) < 0) {
		fprintf(stderr, "rocefabctl: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	if (body && wait_s > 0) {
		/* follow the batch until every change is settled */
		json_int_t batch = json_integer_value(json_object_get(doc, "batch"));
		struct timespec ts = { 0, 250 * 1000 * 1000 };
		double waited = 0;

		for (;;) {
			json_t *now = NULL, *it;
			size_t i, open = 0;

			snprintf(path, sizeof(path), "/api/v1/changes?batch=%lld&limit=10000", (long long)batch);
			if (request(c, "GET", path, NULL, &now, &e) < 0) {
				fprintf(stderr, "rocefabctl: %s\n", rf_err_str(&e, buf, sizeof(buf)));
				goto out;
			}
			json_array_foreach(json_object_get(now, "items"), i, it) {
				const char *st = json_string_value(json_object_get(it, "state"));

				open += !strcmp(st, "pending") || !strcmp(st, "sent");
			}
			json_decref(doc);
			doc = now;
			if (!open || waited >= wait_s)
				break;
			nanosleep(&ts, NULL);
			waited += 0.25;
		}
		{
			json_t *it;
			size_t i;

			rc = 0;
			json_array_foreach(json_object_get(doc, "items"), i, it)
				if (strcmp(json_string_value(json_object_get(it, "state")), "applied"))
					rc = 3;
		}
		if (json_out) {
			print_json(stdout, doc);
		} else {
			print_changes(stdout, doc);
		}
		if (rc)
			fprintf(stderr, "rocefabctl: not every change was applied (see ERROR)\n");
		goto out;
	}
	if (json_out || (!print && strcmp(cmd, "ports") != 0)) {
		print_json(stdout, doc);
	} else if (strcmp(cmd, "ports") == 0) {
		print_ports(stdout, doc);
	} else {
		print(stdout, doc);
	}
	if (!json_out && strcmp(cmd, "probes") == 0) {
		/* the matrix alone is half the answer: show what it raised */
		json_t *al = NULL;

		if (request(c, "GET", "/api/v1/alerts?state=active", NULL, &al, &e) < 0) {
			fprintf(stderr, "rocefabctl: alerts: %s\n", rf_err_str(&e, buf, sizeof(buf)));
			goto out;
		}
		printf("\nactive alerts: %zu\n", json_array_size(json_object_get(al, "items")));
		if (json_array_size(json_object_get(al, "items")))
			print_alerts(stdout, al);
		json_decref(al);
	}
	rc = 0;
out:
	json_decref(doc);
	json_decref(body);
	httpc_free(c);
	curl_global_cleanup();
	free(token);
	return rc;
}
