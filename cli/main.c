/* rocefabctl: command-line client of the rocefab REST API.  Every command fetches one REST
 * resource; -j prints it as JSON, otherwise as an aligned table. */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cli/client.h"
#include "cli/table.h"
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
		"\n"
		"Options:\n"
		"  -s, --server URL       rocefabd URL (default $ROCEFAB_SERVER or http://127.0.0.1:9750)\n"
		"  -t, --token-file FILE  bearer token file (default $ROCEFAB_TOKEN_FILE; or the token\n"
		"                         itself in $ROCEFAB_TOKEN)\n"
		"  -j, --json             print the REST JSON\n"
		"  -V, --version          print the version and exit\n"
		"  -h, --help             this text\n");
}

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	static char buf[8][64];
	static int i;

	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		i = (i + 1) % 8;
		snprintf(buf[i], sizeof(buf[i]), "%lld", (long long)json_integer_value(v));
		return buf[i];
	}
	if (json_is_boolean(v))
		return json_is_true(v) ? "yes" : "no";
	return NULL;
}

static void print_health(json_t *d)
{
	json_t *st = json_object_get(d, "store"), *ag = json_object_get(d, "agents"),
	       *in = json_object_get(d, "ingest");

	printf("status:       %s\n", str(d, "status"));
	printf("version:      %s\n", str(d, "version"));
	printf("uptime:       %.0f s\n", json_number_value(json_object_get(d, "uptime_s")));
	printf("database:     %s (queue %s of %s)\n", str(st, "path"), str(st, "queue_depth"),
	       str(st, "queue_max"));
	printf("agents:       %s (%s stale)\n", str(ag, "total"), str(ag, "stale"));
	printf("ingest:       %s reports, %s samples, %.0f samples/s\n", str(in, "reports"),
	       str(in, "samples"), json_number_value(json_object_get(in, "samples_per_s")));
}

static void print_agents(json_t *d)
{
	static const char *const h[] = { "AGENT", "ROLE",    "STATUS", "LAST SEEN", "SEQ",
					  "REPORTS", "SAMPLES", "SPOOLED", "DROPPED",   "VERSION",
					  NULL };
	struct table *t = table_new(h);
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(d, "items"), i, a) {
		json_t *sp = json_object_get(a, "spool");
		const char *row[] = { str(a, "id"),	 str(a, "role"),
				      str(a, "status"),	 str(a, "last_seen"),
				      str(a, "seq"),	 str(a, "reports"),
				      str(a, "samples"), str(sp, "queued_reports"),
				      str(sp, "dropped_reports"), str(a, "version") };

		table_row(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

static void print_hosts(json_t *d)
{
	static const char *const h[] = { "HOST", "STATUS", "DEVICES", "PORTS", "UP", "LAST SEEN",
					  NULL };
	struct table *t = table_new(h);
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(d, "items"), i, a) {
		const char *row[] = { str(a, "id"),	str(a, "status"),   str(a, "devices"),
				      str(a, "ports"),	str(a, "ports_up"), str(a, "last_seen") };

		table_row(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

static void port_table(json_t *ports)
{
	static const char *const h[] = { "PORT", "NETDEV", "STATE", "SPEED", "MTU", NULL };
	struct table *t = table_new(h);
	size_t i;
	json_t *p;

	json_array_foreach(ports, i, p) {
		char speed[32] = "-";
		json_t *sp = json_object_get(p, "speed_mbps");
		const char *row[5];

		if (json_is_integer(sp))
			fmt_si((double)json_integer_value(sp) * 1e6, "b/s", speed, sizeof(speed));
		row[0] = str(p, "id");
		row[1] = str(p, "netdev");
		row[2] = str(p, "state");
		row[3] = speed;
		row[4] = str(p, "mtu");
		table_row(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

static void print_host(json_t *d)
{
	size_t i;
	json_t *dev;

	printf("host:     %s (%s)\n", str(d, "id"), str(d, "status"));
	printf("seen:     %s\n", str(d, "last_seen"));
	json_array_foreach(json_object_get(d, "devices_detail"), i, dev) {
		printf("\ndevice %s  kind %s  driver %s  firmware %s%s\n", str(dev, "name"),
		       str(dev, "kind"), str(dev, "driver") ?: "-", str(dev, "fw_version") ?: "-",
		       json_is_false(json_object_get(dev, "present")) ? "  (ABSENT)" : "");
		port_table(json_object_get(dev, "ports"));
	}
}

static void print_counters(json_t *d)
{
	static const char *const h[] = { "COUNTER", "PRIO", "RAW", "DELTA", "RATE", "POINTS",
					  NULL };
	struct table *t = table_new(h);
	size_t i;
	json_t *s;

	printf("port %s, %s .. %s\n\n", str(d, "port"), str(d, "from"), str(d, "to"));
	json_array_foreach(json_object_get(d, "series"), i, s) {
		json_t *pts = json_object_get(s, "points");
		json_t *last = json_array_get(pts, json_array_size(pts) - 1);
		json_t *rate = json_object_get(last, "rate");
		char rbuf[40] = "-", unit[40], prio[8] = "-", dbuf[40] = "-", n[16];
		const char *u = str(s, "unit");

		snprintf(unit, sizeof(unit), "%s/s",
			 strcmp(u, "bytes") == 0 ? "B" : strcmp(u, "microseconds") == 0 ? "us" : u);
		if (json_is_number(rate))
			fmt_si(json_number_value(rate), unit, rbuf, sizeof(rbuf));
		if (json_is_integer(json_object_get(last, "delta")))
			fmt_si((double)json_integer_value(json_object_get(last, "delta")),
			       strcmp(u, "bytes") == 0 ? "B" : "", dbuf, sizeof(dbuf));
		if (json_is_integer(json_object_get(s, "priority")))
			snprintf(prio, sizeof(prio), "%lld",
				 (long long)json_integer_value(json_object_get(s, "priority")));
		snprintf(n, sizeof(n), "%zu", json_array_size(pts));
		{
			const char *row[] = { str(s, "name"), prio, str(last, "raw"), dbuf, rbuf, n };

			table_row(t, row);
		}
	}
	table_print(t, stdout);
	table_free(t);
}

static void print_registry(json_t *d)
{
	static const char *const h[] = { "COUNTER", "SCOPE", "UNIT", "KIND", NULL };
	struct table *t = table_new(h);
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(d, "items"), i, c) {
		const char *row[] = { str(c, "name"), str(c, "scope"), str(c, "unit"), str(c, "kind") };

		table_row(t, row);
	}
	table_print(t, stdout);
	table_free(t);
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
	client_escape(value, enc, sizeof(enc));
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
		{ "step", required_argument, NULL, 6 },	    { NULL, 0, NULL, 0 },
	};
	const char *server = getenv("ROCEFAB_SERVER"), *token_file = getenv("ROCEFAB_TOKEN_FILE");
	const char *host = NULL, *device = NULL, *state = NULL, *from = NULL, *to = NULL,
		   *step = NULL, *cmd;
	char *token = NULL, path[2048], buf[700];
	void (*print)(json_t *) = NULL;
	struct client *c = NULL;
	struct rf_err e = { 0 };
	bool json_out = false;
	json_t *doc = NULL;
	long status = 0;
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

		client_escape(argv[optind], enc, sizeof(enc));
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

		client_escape(argv[optind++], enc, sizeof(enc));
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
	if (client_new(server ? server : "http://127.0.0.1:9750", token, &c, &e) < 0 ||
	    client_get(c, path, &doc, &status, &e) < 0) {
		fprintf(stderr, "rocefabctl: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	if (json_out || (!print && strcmp(cmd, "ports") != 0)) {
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(16));
		fputc('\n', stdout);
	} else if (strcmp(cmd, "ports") == 0) {
		port_table(json_object_get(doc, "items"));
	} else {
		print(doc);
	}
	rc = 0;
out:
	json_decref(doc);
	client_free(c);
	curl_global_cleanup();
	free(token);
	return rc;
}
