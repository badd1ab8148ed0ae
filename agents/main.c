/* rocefab-agent: argument parsing only; see agents/agent.c. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "agents/agent.h"
#include "agents/backend.h"
#include "lib/log.h"

static void usage(FILE *f)
{
	char names[128];

	fprintf(f,
		"usage: rocefab-agent [OPTIONS]\n"
		"\n"
		"Reads RDMA, PFC and network counters of this host (or switch) and reports them to\n"
		"rocefabd every interval; spools reports on disk while rocefabd is unreachable.\n"
		"\n"
		"  -c, --config FILE      configuration file (key = value in [sections])\n"
		"  -s, --server URL       rocefabd URL (agent.server)\n"
		"  -t, --token-file FILE  file with the agent token (agent.token_file)\n"
		"  -i, --interval DUR     time between reports, e.g. 1s (agent.interval)\n"
		"      --id ID            agent id (agent.id; default: the host name)\n"
		"      --role ROLE        host or switch (agent.role)\n"
		"  -b, --backend NAME     where counters come from (agent.backend): %s\n"
		"      --sim URL          control API of rocefab-sim serve (sim.url)\n"
		"      --device NAME      the simulated host or switch to stand in for (sim.device)\n"
		"      --redis ADDRESS    a SONiC switch's redis: unix:PATH or HOST:PORT (sonic.redis)\n"
		"      --sysfs-root DIR   read a recorded tree instead of / (linux.sysfs_root)\n"
		"      --spool-dir DIR    spool directory (agent.spool_dir)\n"
		"  -L, --log-level LEVEL  error, warning, notice, info, debug (agent.log_level)\n"
		"  -o SECTION.KEY=VALUE   set any configuration key (repeatable)\n"
		"      --once             print one report as JSON on stdout and exit\n"
		"      --dump-config      print the effective configuration and exit\n"
		"      --help-config      list every configuration key\n"
		"  -V, --version          print the version and exit\n"
		"  -h, --help             this text\n"
		"\n"
		"Command-line options override the configuration file.  See rocefab-agent(8).\n",
		backend_names(names, sizeof(names)));
	fprintf(f, "\nBackends:\n");
	for (size_t i = 0; backend_list[i]; i++)
		fprintf(f, "  %-8s %s\n", backend_list[i]->name, backend_list[i]->summary);
}

/* A fleet of one: the agent reports until SIGTERM or SIGINT. */
static int run(const struct agent_settings *s, struct agent *a, struct rf_err *e)
{
	struct fleet *f = NULL;
	char *token = NULL, buf[700];
	sigset_t sigs;
	int r, sig;

	if ((r = agent_read_token(s->token_file, &token, e)) < 0) {
		agent_destroy(a);
		log_msg(LOG_ERR, "agent", e->code, "%s", rf_err_str(e, buf, sizeof(buf)));
		return 1;
	}
	{
		struct fleet_conf fc = { .server = s->server, .token = token, .token_file = s->token_file,
					 .ca_file = s->ca_file,
					 .client_cert = s->tls_cert, .client_key = s->tls_key,
					 .timeout_ns = s->timeout, .interval_ns = s->interval,
					 .jitter_pct = (int)s->jitter_pct, .threads = 1 };

		r = fleet_new(&fc, &f, e);
	}
	free(token);
	if (r < 0) {
		agent_destroy(a);
		log_msg(LOG_ERR, "agent", e->code, "%s", rf_err_str(e, buf, sizeof(buf)));
		return 2;
	}
	if ((r = fleet_add(f, a, e)) < 0) {
		agent_destroy(a);
		fleet_free(f);
		log_msg(LOG_ERR, "agent", e->code, "%s", rf_err_str(e, buf, sizeof(buf)));
		return 1;
	}
	if ((r = fleet_start(f, e)) < 0) {
		fleet_free(f);
		log_msg(LOG_ERR, "agent", e->code, "%s", rf_err_str(e, buf, sizeof(buf)));
		return 1;
	}
	log_info("agent", "agent %s reporting to %s every %.3gs (backend %s)", agent_id(a),
		 s->server, (double)s->interval / 1e9, s->backend);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	do
		sig = sigwaitinfo(&sigs, NULL);
	while (sig < 0 && errno == EINTR);
	{
		json_t *st = fleet_status(f);

		log_info("agent", "stopping; %" JSON_INTEGER_FORMAT " reports delivered, %" JSON_INTEGER_FORMAT
				  " refused, %" JSON_INTEGER_FORMAT " waiting in %s",
			 json_integer_value(json_object_get(st, "delivered")),
			 json_integer_value(json_object_get(st, "refused")),
			 json_integer_value(json_object_get(st, "waiting")), s->spool_dir);
		json_decref(st);
	}
	fleet_free(f);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "server", required_argument, NULL, 's' },
		{ "token-file", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "id", required_argument, NULL, 1 },
		{ "role", required_argument, NULL, 2 },
		{ "backend", required_argument, NULL, 'b' },
		{ "sysfs-root", required_argument, NULL, 3 },
		{ "spool-dir", required_argument, NULL, 4 },
		{ "log-level", required_argument, NULL, 'L' },
		{ "once", no_argument, NULL, 5 },
		{ "sim", required_argument, NULL, 8 },
		{ "device", required_argument, NULL, 9 },
		{ "redis", required_argument, NULL, 10 },
		{ "dump-config", no_argument, NULL, 6 },
		{ "help-config", no_argument, NULL, 7 },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct agent_settings s = { 0 };
	struct conf_overrides ov = { .n = 0 };
	const char *config = NULL;
	bool once = false, dump = false;
	struct agent *a = NULL;
	struct reg *reg = NULL;
	struct rf_err e = { 0 };
	char buf[700];
	sigset_t sigs;
	int c, status = 1;

	log_init("rocefab-agent");
	while ((c = getopt_long(argc, argv, "c:s:t:i:b:L:o:Vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 's':
			conf_override(&ov, "agent.server", optarg, "--server");
			break;
		case 't':
			conf_override(&ov, "agent.token_file", optarg, "--token-file");
			break;
		case 'i':
			conf_override(&ov, "agent.interval", optarg, "--interval");
			break;
		case 1:
			conf_override(&ov, "agent.id", optarg, "--id");
			break;
		case 2:
			conf_override(&ov, "agent.role", optarg, "--role");
			break;
		case 'b':
			conf_override(&ov, "agent.backend", optarg, "--backend");
			break;
		case 3:
			conf_override(&ov, "linux.sysfs_root", optarg, "--sysfs-root");
			break;
		case 4:
			conf_override(&ov, "agent.spool_dir", optarg, "--spool-dir");
			break;
		case 'L':
			conf_override(&ov, "agent.log_level", optarg, "--log-level");
			break;
		case 'o':
			if (conf_override(&ov, NULL, optarg, "-o") < 0) {
				fprintf(stderr, "rocefab-agent: too many -o options\n");
				return 2;
			}
			break;
		case 5:
			once = true;
			break;
		case 8:
			conf_override(&ov, "sim.url", optarg, "--sim");
			break;
		case 9:
			conf_override(&ov, "sim.device", optarg, "--device");
			break;
		case 10:
			conf_override(&ov, "sonic.redis", optarg, "--redis");
			break;
		case 6:
			dump = true;
			break;
		case 7:
			printf("Configuration keys (section.key), settable in the file or with -o:\n");
			conf_help(agent_opts, stdout);
			return 0;
		case 'V':
			printf("rocefab-agent %s\n", ROCEFAB_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rocefab-agent: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (conf_load_all(agent_opts, &s, config, &ov, "rocefab-agent") < 0)
		return 2;
	log_configure(s.log_level_idx, s.log_target);
	if (dump) {
		conf_dump(agent_opts, &s, stdout);
		conf_fini(agent_opts, &s);
		return 0;
	}
	/* signals go to agent_run's sigtimedwait; threads inherit the mask */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	if (agent_from_settings(&s, !once, &reg, &a, &e) < 0) {
		log_msg(LOG_ERR, "agent", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		status = e.err == -EINVAL || e.err == -ENOENT ? 2 : 1;
		goto out;
	}
	if (once) {
		json_t *doc;

		if (agent_build_report(a, &doc) == 0) {
			json_dumpf(doc, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(doc);
			status = 0;
		}
		agent_destroy(a);
		goto out;
	}
	status = run(&s, a, &e);
out:
	reg_free(reg);
	curl_global_cleanup();
	conf_fini(agent_opts, &s);
	return status;
}
