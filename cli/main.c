/* rocefabctl: command-line client of the rocefab REST API.  Every command fetches one REST
 * resource (or changes one); -j prints it as JSON, otherwise as text.  main() parses the
 * global options and runs the command of cli/commands.c over lib/httpc. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cli/commands.h"
#include "lib/httpc.h"
#include "lib/tokenfile.h"

/* httpc_json() that names the server, not the whole URL, when the server cannot be reached:
 * rocefabctl's message since its first version ("http://h:9750: Couldn't connect ..."). */
static int send_json(void *ctx, const char *method, const char *path, json_t *body, json_t **ret,
		     struct rf_err *e)
{
	struct httpc *h = ctx;
	long status;
	int r = httpc_json(h, method, path, body, ret, &status, e);

	if (r == -EHOSTUNREACH)
		snprintf(e->where, sizeof(e->where), "%s", httpc_base(h));
	return r;
}

/* The token of --token-file (lib/tokenfile.h: refused when others may read or write the file,
 * a warning when its group may); NULL after saying why. */
static char *read_token(const char *path)
{
	struct rf_err e = { 0 }, w = { 0 };
	char *token = NULL, buf[700];
	bool warned;

	if (tokenfile_read(path, &token, &warned, &w, &e) < 0) {
		fprintf(stderr, "rocefabctl: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		return NULL;
	}
	if (warned)
		fprintf(stderr, "rocefabctl: warning: %s\n", rf_err_str(&w, buf, sizeof(buf)));
	return token;
}

int main(int argc, char **argv)
{
	/* the options every command takes; those of the commands follow from cli_opt_defs */
	enum { OPT_LIST_COMMANDS = 1, OPT_LIST_OPTIONS, OPT_CACERT, OPT_CMD = 256 };
	static const struct option global[] = {
		{ "server", required_argument, NULL, 's' },
		{ "token-file", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "list-commands", no_argument, NULL, OPT_LIST_COMMANDS },
		{ "list-options", required_argument, NULL, OPT_LIST_OPTIONS },
		{ "cacert", required_argument, NULL, OPT_CACERT },
		{ "watch", required_argument, NULL, 'w' },
	};
	struct option longopts[ARRAY_SIZE(global) + CLI_NOPT_DEFS + 1] = { 0 };
	const char *server = getenv("ROCEFAB_SERVER"), *token_file = getenv("ROCEFAB_TOKEN_FILE");
	/* the CA to trust: --cacert, else what curl users set */
	const char *cacert = getenv("ROCEFAB_CACERT") ?: getenv("CURL_CA_BUNDLE") ?: getenv("SSL_CERT_FILE");
	struct cli_request req = { 0 };
	struct cli_opts o = { 0 };
	struct rf_err e = { 0 };
	struct httpc *h = NULL;
	char *token = NULL, buf[700];
	int opt, rc = 1;
	bool help = false;
	double watch = 0;

	memcpy(longopts, global, sizeof(global));
	for (size_t i = 0; i < CLI_NOPT_DEFS; i++)
		longopts[ARRAY_SIZE(global) + i] = (struct option){ cli_opt_defs[i].name, cli_opt_defs[i].has_arg, NULL,
								    OPT_CMD + (int)i };
	opterr = 0; /* said here, without the program's path, with what to do */
	while ((opt = getopt_long(argc, argv, ":s:t:jVhw:", longopts, NULL)) != -1) {
		if (opt >= OPT_CMD && opt < OPT_CMD + (int)CLI_NOPT_DEFS) {
			if (cli_opt_set(&o, &cli_opt_defs[opt - OPT_CMD], optarg, &e) < 0) {
				fprintf(stderr, "rocefabctl: %s\n", e.msg);
				return 2;
			}
			continue;
		}
		switch (opt) {
		case 's':
			server = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'V':
			printf("rocefabctl %s\n", ROCEFAB_VERSION);
			return 0;
		case 'h':
			help = true; /* the command's usage when a command is named */
			break;
		case OPT_LIST_COMMANDS:
			cli_list_commands(stdout);
			return 0;
		case OPT_LIST_OPTIONS:
			if (cli_list_options(stdout, optarg) < 0) {
				fprintf(stderr, "rocefabctl: --list-options: unknown command '%s'\n", optarg);
				return 2;
			}
			return 0;
		case OPT_CACERT:
			cacert = optarg;
			break;
		case 'w': {
			char *end;

			watch = strtod(optarg, &end);
			if (*end || !(watch >= 0.1 && watch <= 86400)) {
				fprintf(stderr, "rocefabctl: --watch: '%s' is not a number of seconds from 0.1 to 86400\n",
					optarg);
				return 2;
			}
			break;
		}
		case ':':
			fprintf(stderr, "rocefabctl: %s needs a value (rocefabctl help lists the options)\n",
				argv[optind - 1]);
			return 2;
		default: {
			/* (a negative number is read as options: "cc apply -1") */
			const char *arg = argv[optind - 1], *eq = strchr(arg, '=');

			if (!strncmp(arg, "--", 2) && eq && optopt) {
				fprintf(stderr, "rocefabctl: %.*s takes no value (rocefabctl help lists the options)\n",
					(int)(eq - arg), arg);
				return 2;
			}
			if (!strncmp(arg, "--", 2))
				fprintf(stderr, "rocefabctl: unknown (or ambiguous) option '%s'", arg);
			else if (optopt > 0 && optopt < 256 && isprint(optopt))
				fprintf(stderr, "rocefabctl: unknown option '-%c'", optopt);
			else
				fprintf(stderr, "rocefabctl: unknown option '%s'", arg);
			fprintf(stderr, "; an argument that starts with '-' goes after '--' (rocefabctl help lists the "
					"options)\n");
			return 2;
		}
		}
	}
	if (optind < argc && !strcmp(argv[optind], "help")) {
		/* rocefabctl help [COMMAND] */
		if (optind + 1 < argc) {
			if (cli_usage_cmd(stdout, argv[optind + 1]) < 0) {
				fprintf(stderr, "rocefabctl: unknown command '%s' (rocefabctl help lists the commands)\n",
					argv[optind + 1]);
				return 2;
			}
			return 0;
		}
		cli_usage(stdout);
		return 0;
	}
	if (help) {
		if (optind < argc && cli_usage_cmd(stdout, argv[optind]) == 0)
			return 0;
		cli_usage(stdout);
		return 0;
	}
	if (optind >= argc) {
		fprintf(stderr, "rocefabctl: no command (rocefabctl help lists them)\n");
		return 2;
	}
	if ((rc = cli_request_build(argv[optind], argv + optind + 1, argc - optind - 1, &o, &req,
				    &e)) < 0) {
		fprintf(stderr, "rocefabctl: %s\n", e.msg[0] ? e.msg : strerror(-rc));
		if (!strcmp(e.code, "USAGE"))
			cli_usage_cmd(stderr, argv[optind]);
		return 2;
	}
	if (watch && strcmp(req.method, "GET")) {
		/* again and again is for reading: a rollback every few seconds is the tuner disabled */
		fprintf(stderr, "rocefabctl: --watch repeats only commands that read; this one changes things (%s %s)\n",
			req.method, req.path);
		cli_request_fini(&req);
		return 2;
	}
	if (token_file && *token_file) {
		token = read_token(token_file);
		if (!token) {
			cli_request_fini(&req);
			return 1;
		}
	} else if (getenv("ROCEFAB_TOKEN")) {
		token = strdup(getenv("ROCEFAB_TOKEN"));
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (httpc_new(&(struct httpc_conf){ .base = server ? server : "http://127.0.0.1:9750",
					    .what = "--server",
					    .token = token,
					    .ca_file = cacert,
					    .user_agent = "rocefabctl/" ROCEFAB_VERSION,
					    .timeout_ns = (req.cmd->timeout_s ? req.cmd->timeout_s : 30) *
							  INT64_C(1000000000),
					    .connect_timeout_ns = 30 * INT64_C(1000000000) },
		      &h, &e) < 0) {
		fprintf(stderr, "rocefabctl: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		rc = !strcmp(e.code, "BAD_SERVER_URL") ? 2 : 1; /* (--server as typed: a usage error) */
	} else if (!watch) {
		rc = cli_run(&req, &o, &(struct cli_transport){ .json = send_json, .ctx = h },
			     stdout, stderr);
	} else {
		/* like watch(1): the screen cleared on a terminal, a time line, the command again
		 * every interval until SIGINT (whose default action ends it).  With -j, the JSON
		 * documents one after the other, nothing between them (jq reads such a stream).  A
		 * first try that fails ends it: the same command would fail the same way for ever
		 * (a later one goes on: rocefabd restarting) */
		bool tty = isatty(STDOUT_FILENO) && !o.json;

		for (bool first = true;; first = false) {
			struct timespec nap = { .tv_sec = (time_t)watch,
						.tv_nsec = (long)((watch - (double)(time_t)watch) * 1e9) };
			char when[64];
			time_t now = time(NULL);

			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
			if (!o.json)
				printf("%severy %gs: rocefabctl %s    %s\n\n", tty ? "\033[H\033[2J" : "", watch,
				       argv[optind], when);
			rc = cli_run(&req, &o, &(struct cli_transport){ .json = send_json, .ctx = h }, stdout,
				     stderr);
			if (rc && first) {
				fflush(stdout);
				break;
			}
			if (!tty && !o.json)
				printf("\n");
			fflush(stdout);
			while (nanosleep(&nap, &nap) < 0 && errno == EINTR)
				;
		}
	}
	httpc_free(h);
	curl_global_cleanup();
	cli_request_fini(&req);
	free(token);
	return rc;
}
