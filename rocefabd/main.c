/* rocefabd: argument parsing only; see rocefabd.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "rocefabd/rocefabd.h"
#include "lib/log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rocefabd [OPTIONS]                 run the daemon\n"
		"       rocefabd [OPTIONS] token add NAME --role ROLE [--agent ID|PATTERN[,...]]\n"
		"       rocefabd [OPTIONS] token bind NAME --agent ID|PATTERN[,...] | token list |\n"
		"                          token revoke NAME\n"
		"\n"
		"The rocefab control-plane daemon: ingests agent reports, stores them in sqlite and\n"
		"serves the REST API (/api/v1), the web dashboard (/) and Prometheus /metrics.\n"
		"\n"
		"  -c, --config FILE      configuration file (key = value in [sections])\n"
		"  -l, --listen ADDR:PORT address of the API (api.listen)\n"
		"  -d, --db FILE          sqlite database (store.db)\n"
		"  -L, --log-level LEVEL  error, warning, notice, info, debug (daemon.log_level)\n"
		"  -o SECTION.KEY=VALUE   set any configuration key (repeatable)\n"
		"      --check-config     validate the configuration and exit\n"
		"      --dump-config      print the effective configuration and exit\n"
		"      --help-config      list every configuration key\n"
		"      --routes           list the REST endpoints (and the query parameters they take) and exit\n"
		"      --validate-report FILE...  check agent reports as ingest would, and exit\n"
		"  -V, --version          print the version and exit\n"
		"  -h, --help             this text\n"
		"\n"
		"Command-line options override the configuration file.  See rocefabd(8).\n");
}

struct reload_ctx {
	const char *config;
	const struct conf_overrides *ov;
};

/* SIGHUP: the file again, then the command line's overrides (which still win). */
static int reload_settings(void *ctx, struct rocefabd_settings *ret)
{
	const struct reload_ctx *rc = ctx;
	struct rf_err e = { 0 };
	char buf[600];

	memset(ret, 0, sizeof(*ret));
	if (conf_init(rocefabd_opts, ret, &e) < 0 ||
	    (rc->config && conf_load_file(rocefabd_opts, ret, rc->config, &e) < 0) ||
	    conf_apply_overrides(rocefabd_opts, ret, rc->ov, &e) < 0 || rocefabd_check(ret, &e) < 0) {
		log_error("daemon", "SIGHUP: the configuration is not reloaded, nothing changed: %s",
			  rf_err_str(&e, buf, sizeof(buf)));
		conf_fini(rocefabd_opts, ret);
		return -1;
	}
	/* TLS is not reloaded: what its files hold now (a rotation half done) refuses no reload,
	 * but is said */
	if (rocefabd_check_tls(ret, &e) < 0)
		log_warning("daemon", "SIGHUP: %s: the TLS files are read at the next start, which would refuse them",
			    rf_err_str(&e, buf, sizeof(buf)));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "db", required_argument, NULL, 'd' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "check-config", no_argument, NULL, 1 },
		{ "dump-config", no_argument, NULL, 2 },
		{ "help-config", no_argument, NULL, 3 },
		{ "routes", no_argument, NULL, 4 },
		{ "validate-report", no_argument, NULL, 5 },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rocefabd_settings s = { 0 };
	struct conf_overrides ov = { .n = 0 };
	const char *config = NULL;
	bool check = false, dump = false, validate = false;
	int c, status;

	log_init("rocefabd");
	/* "+": stop at the first non-option so that "token add NAME --role R" stays intact */
	while ((c = getopt_long(argc, argv, "+c:l:d:L:o:Vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'l':
			conf_override(&ov, "api.listen", optarg, "--listen");
			break;
		case 'd':
			conf_override(&ov, "store.db", optarg, "--db");
			break;
		case 'L':
			conf_override(&ov, "daemon.log_level", optarg, "--log-level");
			break;
		case 'o':
			if (conf_override(&ov, NULL, optarg, "-o") < 0) {
				fprintf(stderr, "rocefabd: too many -o options\n");
				return 2;
			}
			break;
		case 1:
			check = true;
			break;
		case 2:
			dump = true;
			break;
		case 3:
			printf("Configuration keys (section.key), settable in the file or with -o:\n");
			conf_help(rocefabd_opts, stdout);
			return 0;
		case 4:
			api_print_routes(stdout);
			return 0;
		case 5:
			validate = true;
			break;
		case 'V':
			printf("rocefabd %s\n", ROCEFAB_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (conf_load_all(rocefabd_opts, &s, config, &ov, "rocefabd") < 0)
		return 2;
	log_configure(s.log_level_idx, s.log_target);
	if (validate) {
		status = optind < argc ? rocefabd_validate_reports(&s, argc - optind, argv + optind) : 2;
		if (optind >= argc)
			fprintf(stderr, "rocefabd: --validate-report needs files\n");
	} else if (dump) {
		conf_dump(rocefabd_opts, &s, stdout);
		status = 0;
	} else if (check) {
		/* what the configuration file's syntax cannot say (rocefabd checks it again at start) */
		struct rf_err e = { 0 };
		char buf[400];

		if (rocefabd_check(&s, &e) < 0 || rocefabd_check_tls(&s, &e) < 0) {
			fprintf(stderr, "rocefabd: %s\n", rf_err_str(&e, buf, sizeof(buf)));
			status = 2;
		} else {
			if (rocefabd_check_db_dir(&s, &e) < 0)
				fprintf(stderr, "rocefabd: warning: %s: the start fails until it is there\n",
					rf_err_str(&e, buf, sizeof(buf)));
			printf("configuration OK\n");
			status = 0;
		}
	} else if (optind < argc && strcmp(argv[optind], "token") == 0) {
		status = rocefabd_token_cmd(&s, argc - optind - 1, argv + optind + 1);
	} else if (optind < argc) {
		fprintf(stderr, "rocefabd: unknown command '%s'\n", argv[optind]);
		usage(stderr);
		status = 2;
	} else {
		struct reload_ctx rc = { .config = config, .ov = &ov };

		status = rocefabd_run(&s, reload_settings, &rc);
	}
	conf_fini(rocefabd_opts, &s);
	return status;
}
