/* rocefab-probe: the probe engine as a standalone tool, perftest-like. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/probe/probe.h"
#include "lib/log.h"
#include "lib/timeutil.h"

static volatile int stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rocefab-probe server [-d DEV] [--port P] [--listen ADDR] [-x GID_INDEX] [--once]\n"
		"       rocefab-probe client HOST [-d DEV] [--port P] -t OP [-s SIZE] [-n ITERS] [-j]\n"
		"       rocefab-probe compare HOST [-d DEV] [--port P] [-s SIZE] [-n ITERS] [-j]\n"
		"\n"
		"Measures latency between two hosts with real RDMA operations, one at a time, like\n"
		"perftest's *_lat tools, and prints n, lost, min, p50, mean, stdev, p99, p99.9 and max in\n"
		"microseconds with the errors by kind.  The server checks the data that arrived.\n"
		"\n"
		"  -t, --op OP          write, read, send, cas, faa, ud (RDMA), udp, tcp (kernel sockets)\n"
		"  -s, --size BYTES     message size, 8 to 65536 (default 64; atomics are 8)\n"
		"  -n, --iters N        probes (default 1000)\n"
		"  -d, --device DEV     RDMA device (default: the first)\n"
		"  -x, --gid-index N    GID index (default: the first RoCE v2 IPv4 GID)\n"
		"      --paths K        RC: K queue pairs with different flow labels (ECMP paths)\n"
		"      --pingpong       write: perftest's ib_write_lat method; both sides write and poll\n"
		"                       their memory, figures are half round trips (inline, 1 in 16 signaled)\n"
		"      --port P         control port (default %d)\n"
		"      --listen ADDR    server: ADDRESS:PORT to listen on (default 0.0.0.0:PORT)\n"
		"      --timeout DUR    per probe and per control message (default 2s)\n"
		"      --once           server: serve one session and exit\n"
		"  -j, --json           client, compare: JSON\n"
		"  -h, --help           this text\n"
		"\n"
		"compare runs the same ping (RDMA SEND, and TCP) at the same size and prints the two side\n"
		"by side with the CPU time per operation.\n"
		"Exit status: 0 ok; 1 probes failed or the data did not check out; 2 usage or setup error.\n",
		PROBE_DEFAULT_PORT);
}

static void print_text(const struct probe_result *r, const char *host)
{
	const struct probe_stats *st = &r->st;

	printf("%s %s %u B to %s: %llu probes, %llu ok, %llu lost, %llu data errors%s\n",
	       probe_op_is_verbs(r->op) ? r->device : "kernel", probe_op_name(r->op), r->size, host,
	       (unsigned long long)st->n, (unsigned long long)st->ok, (unsigned long long)st->lost,
	       (unsigned long long)st->data_errors, r->verified ? ", data verified" : "");
	printf(" %-8s %-8s %-8s %-8s %-8s %-8s %-8s %-10s\n", "min", "p50", "mean", "stdev", "p99",
	       "p99.9", "max", "cpu/op");
	printf(" %-8.2f %-8.2f %-8.2f %-8.2f %-8.2f %-8.2f %-8.2f %-10.2f  (us, clock %s)\n", st->min,
	       st->p50, st->mean, st->stdev, st->p99, st->p999, st->max, st->cpu_us_per_op, r->clock);
	for (int i = 0; i < PE_NERRS; i++)
		if (st->errors[i])
			printf(" errors: %s %llu\n", probe_err_name((enum probe_err)i),
			       (unsigned long long)st->errors[i]);
	if (r->verify_detail[0])
		printf(" check: %s\n", r->verify_detail);
	if (r->pingpong)
		printf(" ping-pong: figures are half round trips, as ib_write_lat's%s\n",
		       r->inline_data ? "; writes inline" : "");
	for (unsigned p = 0; r->per_path && p < r->paths; p++)
		printf(" path %u (flow label %u): %llu ok, p50 %.2f, p99 %.2f us\n", p, p + 1,
		       (unsigned long long)r->per_path[p].ok, r->per_path[p].p50, r->per_path[p].p99);
}

static bool result_ok(const struct probe_result *r)
{
	return r->st.ok == r->st.n && !r->st.data_errors && r->verified;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' }, { "op", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },   { "iters", required_argument, NULL, 'n' },
		{ "gid-index", required_argument, NULL, 'x' }, { "json", no_argument, NULL, 'j' },
		{ "port", required_argument, NULL, 1 },	    { "listen", required_argument, NULL, 2 },
		{ "timeout", required_argument, NULL, 3 },  { "once", no_argument, NULL, 4 },
		{ "paths", required_argument, NULL, 5 },    { "help", no_argument, NULL, 'h' },
		{ "pingpong", no_argument, NULL, 6 },
		{ NULL, 0, NULL, 0 },
	};
	struct probe_client_conf cc = { .size = 64, .iters = 1000, .gid_index = -1,
					.timeout_ns = 2 * NSEC_PER_SEC, .op = PROBE_NOPS, .paths = 1 };
	const char *listen = NULL, *cmd;
	char listen_buf[80], buf[700];
	bool json = false, once = false;
	struct rf_err e = { 0 };
	int opt, status = 0;

	log_init("rocefab-probe");
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("rocefab-probe %s\n", ROCEFAB_VERSION);
		return 0;
	}
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt_long(argc, argv, "d:t:s:n:x:jh", longopts, NULL)) != -1) {
		char *end;

		switch (opt) {
		case 'd':
			cc.device = optarg;
			break;
		case 't':
			if (probe_op_parse(optarg, &cc.op) < 0) {
				fprintf(stderr, "rocefab-probe: -t: '%s' is not one of write, read, send, cas, faa, ud, udp, tcp\n", optarg);
				return 2;
			}
			break;
		case 's':
			cc.size = (unsigned)strtoul(optarg, &end, 10);
			if (*end || cc.size < PROBE_MIN_SIZE || cc.size > PROBE_MAX_SIZE) {
				fprintf(stderr, "rocefab-probe: -s: %d to %d bytes\n", PROBE_MIN_SIZE, PROBE_MAX_SIZE);
				return 2;
			}
			break;
		case 'n':
			cc.iters = (unsigned)strtoul(optarg, &end, 10);
			if (*end || cc.iters < 1 || cc.iters > PROBE_MAX_ITERS) {
				fprintf(stderr, "rocefab-probe: -n: 1 to %d\n", PROBE_MAX_ITERS);
				return 2;
			}
			break;
		case 'x':
			cc.gid_index = atoi(optarg);
			break;
		case 'j':
			json = true;
			break;
		case 1:
			cc.port = (unsigned)strtoul(optarg, &end, 10);
			if (*end || !cc.port || cc.port > 65535) {
				fprintf(stderr, "rocefab-probe: --port: 1 to 65535\n");
				return 2;
			}
			break;
		case 2:
			listen = optarg;
			break;
		case 3:
			if (tu_parse_duration(optarg, &cc.timeout_ns) < 0 || cc.timeout_ns < NSEC_PER_MSEC) {
				fprintf(stderr, "rocefab-probe: --timeout: a duration such as 2s\n");
				return 2;
			}
			break;
		case 4:
			once = true;
			break;
		case 5:
			cc.paths = (unsigned)strtoul(optarg, &end, 10);
			if (*end || cc.paths < 1 || cc.paths > 16) {
				fprintf(stderr, "rocefab-probe: --paths: 1 to 16\n");
				return 2;
			}
			break;
		case 6:
			cc.pingpong = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(cmd, "server")) {
		struct probe_server_conf sc = { .device = cc.device, .gid_index = cc.gid_index, .once = once,
						.timeout_ns = cc.timeout_ns };
		struct sigaction sa = { .sa_handler = on_signal };

		if (optind != argc) {
			usage(stderr);
			return 2;
		}
		if (!listen) {
			snprintf(listen_buf, sizeof(listen_buf), "0.0.0.0:%u", cc.port ? cc.port : PROBE_DEFAULT_PORT);
			listen = listen_buf;
		}
		sc.listen = listen;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		if (probe_server_run(&sc, &stopping, &e) < 0) {
			fprintf(stderr, "rocefab-probe: %s\n", rf_err_str(&e, buf, sizeof(buf)));
			return 2;
		}
		return 0;
	}
	if ((strcmp(cmd, "client") && strcmp(cmd, "compare")) || optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	cc.host = argv[optind];
	if (!strcmp(cmd, "client")) {
		struct probe_result r;

		if (cc.op == PROBE_NOPS) {
			fprintf(stderr, "rocefab-probe: client needs -t OP\n");
			return 2;
		}
		if (probe_client_run(&cc, &r, &e) < 0) {
			fprintf(stderr, "rocefab-probe: %s\n", rf_err_str(&e, buf, sizeof(buf)));
			return 2;
		}
		if (json) {
			json_t *o = probe_result_json(&r);

			json_object_set_new(o, "peer", json_string(cc.host));
			json_dumpf(o, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(o);
		} else {
			print_text(&r, cc.host);
		}
		status = result_ok(&r) ? 0 : 1;
		probe_result_fini(&r);
		return status;
	}
	/* compare: the same ping over RDMA SEND and over TCP */
	{
		struct probe_result rv, rt;
		enum probe_op ops[2] = { PROBE_SEND, PROBE_TCP };
		struct probe_result *res[2] = { &rv, &rt };

		for (int i = 0; i < 2; i++) {
			cc.op = ops[i];
			if (probe_client_run(&cc, res[i], &e) < 0) {
				fprintf(stderr, "rocefab-probe: %s: %s\n", probe_op_name(ops[i]),
					rf_err_str(&e, buf, sizeof(buf)));
				if (i == 1)
					probe_result_fini(&rv);
				return 2;
			}
		}
		if (json) {
			json_t *o = json_pack("{s:s,s:o,s:o}", "peer", cc.host, "verbs_send",
					      probe_result_json(&rv), "tcp", probe_result_json(&rt));

			json_dumpf(o, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(o);
		} else {
			printf("%u B to %s, %u each:        %10s %10s %10s %10s %12s\n", cc.size, cc.host, cc.iters,
			       "p50 us", "p99 us", "p99.9 us", "max us", "cpu us/op");
			for (int i = 0; i < 2; i++)
				printf("  %-28s %10.2f %10.2f %10.2f %10.2f %12.2f\n",
				       i ? "TCP (kernel)" : "RDMA SEND (verbs)", res[i]->st.p50, res[i]->st.p99,
				       res[i]->st.p999, res[i]->st.max, res[i]->st.cpu_us_per_op);
		}
		status = result_ok(&rv) && result_ok(&rt) ? 0 : 1;
		probe_result_fini(&rv);
		probe_result_fini(&rt);
	}
	return status;
}
