/* Unit tests of rocefabctl (cli/): the command table, the requests it builds, the usage text,
 * the printers on fixed answers, and running a command over a scripted transport (no network).
 * The expected texts are what rocefabctl printed before the command table. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/print.h"
#include "tests/unit/unit.h"

/* JSON written with ' for ", so that the fixtures read as JSON. */
static json_t *J(const char *s)
{
	char *t = strdup(s);
	json_error_t je;
	json_t *doc;

	assert_non_null(t);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	doc = json_loads(t, 0, &je);
	if (!doc)
		fail_msg("bad fixture: %s: %s", je.text, t);
	free(t);
	return doc;
}

/* --- the table and the requests -------------------------------------------------------------- */

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

/* argv: the command and its positional arguments. */
static int build(const struct cli_opts *o, struct cli_request *r, struct rf_err *e, char **argv)
{
	int n = 0;

	while (argv[n])
		n++;
	rf_err_clear(e);
	return cli_request_build(argv[0], argv + 1, n - 1, o, r, e);
}

static void assert_request(const struct cli_request *r, const char *method, const char *path,
			   const char *body)
{
	assert_string_equal(r->method, method);
	assert_string_equal(r->path, path);
	if (!body) {
		assert_null(r->body);
	} else {
		json_t *want = J(body);

		if (!json_equal(r->body, want)) {
			char *got = json_dumps(r->body, JSON_COMPACT);

			fail_msg("body %s, not %s", got ? got : "(none)", body);
		}
		json_decref(want);
	}
}

static void test_lookup(void **state)
{
	static const char *const names[] = { "health", "version",  "agents",   "hosts",
					     "ports",  "counters", "registry", "switches",
					     "links",  "topology", "params",   "set",
					     "probes", "alerts",   "changes" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const struct cli_cmd *c = cli_cmd_find(names[i]);

		assert_non_null(c);
		assert_string_equal(c->name, names[i]);
		assert_non_null(c->build);
	}
	assert_null(cli_cmd_find("host"));
	assert_null(cli_cmd_find("HEALTH"));
	assert_null(cli_cmd_find(""));
	assert_null(cli_cmd_find("frobnicate"));
	/* what the special behaviours hang on */
	assert_ptr_equal(cli_cmd_find("hosts")->print, print_hosts);
	assert_ptr_equal(cli_cmd_find("hosts")->print_one, print_host);
	assert_ptr_equal(cli_cmd_find("ports")->print, print_ports);
	assert_ptr_equal(cli_cmd_find("topology")->print, print_topology);
	assert_true(cli_cmd_find("set")->flags & CLI_FOLLOW_BATCH);
	assert_true(cli_cmd_find("probes")->flags & CLI_WITH_ALERTS);
	assert_false(cli_cmd_find("alerts")->flags & (CLI_FOLLOW_BATCH | CLI_WITH_ALERTS));
}

static void test_build_get(void **state)
{
	struct cli_opts o = { 0 };
	struct cli_request r;
	struct rf_err e;

	(void)state;
	assert_int_equal(build(&o, &r, &e, ARGV("health")), 0);
	assert_request(&r, "GET", "/api/v1/health", NULL);
	assert_ptr_equal(r.print, print_health);
	cli_request_fini(&r);

	assert_int_equal(build(&o, &r, &e, ARGV("version")), 0);
	assert_request(&r, "GET", "/api/v1/version", NULL);
	assert_ptr_equal(r.print, print_version);
	cli_request_fini(&r);

	assert_int_equal(build(&o, &r, &e, ARGV("registry")), 0);
	assert_request(&r, "GET", "/api/v1/counters", NULL);

	assert_int_equal(build(&o, &r, &e, ARGV("hosts")), 0);
	assert_request(&r, "GET", "/api/v1/hosts", NULL);
	assert_ptr_equal(r.print, print_hosts);

	assert_int_equal(build(&o, &r, &e, ARGV("hosts", "gpu-a2")), 0);
	assert_request(&r, "GET", "/api/v1/hosts/gpu-a2", NULL);
	assert_ptr_equal(r.print, print_host);

	/* a name is one path segment whatever it holds */
	assert_int_equal(build(&o, &r, &e, ARGV("hosts", "gpu a2/../x?y=1&z#")), 0);
	assert_request(&r, "GET", "/api/v1/hosts/gpu%20a2%2F..%2Fx%3Fy%3D1%26z%23", NULL);

	assert_int_equal(build(&o, &r, &e, ARGV("switches", "leaf0")), 0);
	assert_request(&r, "GET", "/api/v1/switches/leaf0", NULL);
	assert_ptr_equal(r.print, print_switch);

	assert_int_equal(build(&o, &r, &e, ARGV("ports")), 0);
	assert_request(&r, "GET", "/api/v1/ports", NULL);
	o.host = "gpu-a2";
	o.state = "up";
	assert_int_equal(build(&o, &r, &e, ARGV("ports")), 0);
	assert_request(&r, "GET", "/api/v1/ports?host=gpu-a2&state=up", NULL);
	o.device = "mlx5 0";
	assert_int_equal(build(&o, &r, &e, ARGV("ports")), 0);
	assert_request(&r, "GET", "/api/v1/ports?host=gpu-a2&device=mlx5%200&state=up", NULL);

	o = (struct cli_opts){ 0 };
	assert_int_equal(build(&o, &r, &e, ARGV("links")), 0);
	assert_request(&r, "GET", "/api/v1/links", NULL);

	o = (struct cli_opts){ .state = "active" };
	assert_int_equal(build(&o, &r, &e, ARGV("alerts")), 0);
	assert_request(&r, "GET", "/api/v1/alerts?state=active", NULL);

	o = (struct cli_opts){ .window = "3s", .op = "read", .size = "65536" };
	assert_int_equal(build(&o, &r, &e, ARGV("probes")), 0);
	assert_request(&r, "GET", "/api/v1/probes/matrix?window=3s&op=read&size=65536", NULL);
	assert_ptr_equal(r.print, print_probes);

	o = (struct cli_opts){ 0 };
	assert_int_equal(build(&o, &r, &e, ARGV("forget", "gpu a9")), 0);
	assert_request(&r, "DELETE", "/api/v1/agents/gpu%20a9", NULL);
	assert_ptr_equal(r.print, print_forgotten);

	o = (struct cli_opts){ .state = "failed", .agent = "leaf0" };
	assert_int_equal(build(&o, &r, &e, ARGV("changes")), 0);
	assert_request(&r, "GET", "/api/v1/changes?state=failed&agent=leaf0", NULL);
	o = (struct cli_opts){ 0 }; /* the filters are the list's (refused with an ID) */
	assert_int_equal(build(&o, &r, &e, ARGV("changes", "7")), 0);
	assert_request(&r, "GET", "/api/v1/changes/7", NULL);
	assert_ptr_equal(r.print, print_changes);
}

static void test_build_counters(void **state)
{
	struct cli_opts o = { .from = "-5m" };
	struct cli_request r;
	struct rf_err e;

	(void)state;
	assert_int_equal(build(&o, &r, &e, ARGV("counters", "H:D:P", "name1", "name2")), 0);
	assert_request(&r, "GET", "/api/v1/ports/H:D:P/counters?names=name1,name2&from=-5m", NULL);
	assert_ptr_equal(r.print, print_counters);

	o = (struct cli_opts){ .from = "2026-01-01T00:00:00+01:00", .to = "now", .step = "10s" };
	assert_int_equal(build(&o, &r, &e, ARGV("counters", "gpu-a2:mlx5_0:1")), 0);
	assert_request(&r, "GET",
		       "/api/v1/ports/gpu-a2:mlx5_0:1/counters"
		       "?from=2026-01-01T00:00:00%2B01:00&to=now&step=10s",
		       NULL);

	o = (struct cli_opts){ 0 };
	assert_int_equal(build(&o, &r, &e, ARGV("counters", "h 1:d/1:1", "a b", "c")), 0);
	assert_request(&r, "GET", "/api/v1/ports/h%201:d%2F1:1/counters?names=a%20b,c", NULL);
}

static void test_build_set(void **state)
{
	struct cli_opts o = { .reason = "r" };
	struct cli_request r;
	struct rf_err e;

	(void)state;
	assert_int_equal(
		build(&o, &r, &e,
		      ARGV("set", "ecn", "leaf0", "Eth1", "3", "kmin_bytes=100KB", "pmax=0.2")),
		0);
	assert_request(&r, "PUT", "/api/v1/switches/leaf0/ports/Eth1/queues/3/ecn",
		       "{'kmin_bytes': '100KB', 'pmax': 0.2, 'reason': 'r'}");
	assert_ptr_equal(r.print, print_changes);
	cli_request_fini(&r);
	assert_null(r.body);
	o = (struct cli_opts){ 0 };
	/* a JSON value for the tuner's policy (host_classes), a string elsewhere */
	assert_int_equal(build(&o, &r, &e,
			       ARGV("cc", "policy", "host_classes=[{\"name\": \"gpu\", \"hosts\": \"gpu-*\"}]",
				    "mode=auto")),
			 0);
	assert_request(&r, "PUT", "/api/v1/cc/policy",
		       "{'host_classes': [{'name': 'gpu', 'hosts': 'gpu-*'}], 'mode': 'auto'}");
	cli_request_fini(&r);
	/* the tuner's stop: "off" is a mode there, not a boolean (it went out as false) */
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "policy", "mode=off")), 0);
	assert_request(&r, "PUT", "/api/v1/cc/policy", "{'mode': 'off'}");
	cli_request_fini(&r);
	/* a number as typed: .5 is one (it went out as the string ".5") */
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "policy", "canary_share=.5", "pmax_floor=-.25")), 0);
	assert_request(&r, "PUT", "/api/v1/cc/policy", "{'canary_share': 0.5, 'pmax_floor': -0.25}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "policy", "host_classes=[{nope")), -EINVAL);
	assert_non_null(strstr(e.msg, "not JSON"));
	/* the detector's configuration, read and changed ("off" a mode there too) */
	assert_int_equal(build(&o, &r, &e, ARGV("detector", "config")), 0);
	assert_request(&r, "GET", "/api/v1/detector/config", NULL);
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("detector", "config", "storm_mode=off", "restore_ms=20")), 0);
	assert_request(&r, "PUT", "/api/v1/detector/config", "{'storm_mode': 'off', 'restore_ms': 20}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("detector", "nonsense")), -EINVAL);
	assert_non_null(strstr(e.msg, "detector takes nothing or config"));
	/* why an operator decides or changes the policy: the body's reason */
	o.reason = "maintenance";
	assert_int_equal(build(&o, &r, &e, ARGV("detector", "config", "deadlock_mode=auto")), 0);
	assert_request(&r, "PUT", "/api/v1/detector/config", "{'deadlock_mode': 'auto', 'reason': 'maintenance'}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "policy", "mode=advise")), 0);
	assert_request(&r, "PUT", "/api/v1/cc/policy", "{'mode': 'advise', 'reason': 'maintenance'}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "apply", "7")), 0);
	assert_request(&r, "POST", "/api/v1/cc/proposals/7/apply", "{'reason': 'maintenance'}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "reject", "7")), 0);
	assert_request(&r, "POST", "/api/v1/cc/proposals/7/reject", "{'reason': 'maintenance'}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "rollback")), 0);
	assert_request(&r, "POST", "/api/v1/cc/rollback", "{'reason': 'maintenance'}");
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("mitigate", "4")), 0);
	assert_request(&r, "POST", "/api/v1/alerts/4/mitigate", "{'reason': 'maintenance'}");
	cli_request_fini(&r);
	/* a change in doubt settled: the verdict and the reason (required) */
	assert_int_equal(build(&o, &r, &e, ARGV("settle", "12", "not-applied")), 0);
	assert_request(&r, "POST", "/api/v1/changes/12/settle", "{'applied': false, 'reason': 'maintenance'}");
	assert_ptr_equal(r.print, print_changes);
	cli_request_fini(&r);
	assert_int_equal(build(&o, &r, &e, ARGV("settle", "12", "applied")), 0);
	assert_request(&r, "POST", "/api/v1/changes/12/settle", "{'applied': true, 'reason': 'maintenance'}");
	cli_request_fini(&r);
	o.reason = NULL;
	assert_int_equal(build(&o, &r, &e, ARGV("cc", "rollback")), 0);
	assert_request(&r, "POST", "/api/v1/cc/rollback", NULL);
	cli_request_fini(&r);
	/* the lists' length; one batch's changes (a tuner proposal's change_batch) */
	o.limit = "500";
	o.batch = "17";
	assert_int_equal(build(&o, &r, &e, ARGV("changes")), 0);
	assert_request(&r, "GET", "/api/v1/changes?batch=17&limit=500", NULL);
	cli_request_fini(&r);
	o.batch = NULL;
	assert_int_equal(build(&o, &r, &e, ARGV("settings-log", "cc/policy")), 0);
	assert_request(&r, "GET", "/api/v1/settings/log?setting=cc%2Fpolicy&limit=500", NULL);
	assert_ptr_equal(r.print, print_settings_log);
	cli_request_fini(&r);
	o.limit = NULL;
	o.reason = "r";
	assert_int_equal(build(&o, &r, &e, ARGV("set", "dcqcn", "h1", "note=[maint]")), 0);
	assert_request(&r, "PUT", "/api/v1/hosts/h1/dcqcn", "{'note': '[maint]', 'reason': 'r'}");
	cli_request_fini(&r);

	o = (struct cli_opts){ 0 };
	assert_int_equal(build(&o, &r, &e, ARGV("set", "pfc", "leaf*", "Eth1", "enable=8")), 0);
	assert_request(&r, "POST", "/api/v1/changes",
		       "{'kind': 'pfc', 'select': {'switch': 'leaf*', 'port': 'Eth1'},"
		       " 'params': {'enable': 8}}");
	cli_request_fini(&r);

	/* the value's type: integers (also hex), numbers, booleans, anything else a string */
	assert_int_equal(
		build(&o, &r, &e,
		      ARGV("set", "pfc", "leaf0", "Eth1", "enable=0x18", "xoff_bytes=1.5MB",
			   "alpha_shift=-2", "a=on", "b=false", "c=1e3", "d=")),
		0);
	assert_request(&r, "PUT", "/api/v1/switches/leaf0/ports/Eth1/pfc",
		       "{'enable': 24, 'xoff_bytes': '1.5MB', 'alpha_shift': -2, 'a': true,"
		       " 'b': false, 'c': 1000.0, 'd': ''}");
	cli_request_fini(&r);

	/* a host port is DEVICE:PORT */
	assert_int_equal(build(&o, &r, &e, ARGV("set", "pfc", "h1", "mlx5_0:1", "enable=8")), 0);
	assert_request(&r, "PUT", "/api/v1/hosts/h1/ports/mlx5_0:1/pfc", "{'enable': 8}");
	cli_request_fini(&r);
	o.device = "mlx5_*";
	assert_int_equal(build(&o, &r, &e, ARGV("set", "pfc", "h*", "*:1", "enable=8")), 0);
	assert_request(
		&r, "POST", "/api/v1/changes",
		"{'kind': 'pfc', 'select': {'host': 'h*', 'port': '*:1', 'device': 'mlx5_*'},"
		" 'params': {'enable': 8}}");
	cli_request_fini(&r);

	o = (struct cli_opts){ .device = "mlx5_0", .port = "1", .reason = "tune" };
	assert_int_equal(build(&o, &r, &e, ARGV("set", "dcqcn", "h1", "rpg_ai_rate_mbps=5")), 0);
	assert_request(
		&r, "PUT", "/api/v1/hosts/h1/dcqcn",
		"{'rpg_ai_rate_mbps': 5, 'device': 'mlx5_0', 'port': '1', 'reason': 'tune'}");
	cli_request_fini(&r);
	/* with a pattern, --device and --port narrow the selection */
	assert_int_equal(build(&o, &r, &e, ARGV("set", "dcqcn", "h[0-3]", "rpg_ai_rate_mbps=5")),
			 0);
	assert_request(&r, "POST", "/api/v1/changes",
		       "{'kind': 'dcqcn', 'select': {'host': 'h[0-3]', 'device': 'mlx5_0',"
		       " 'port': '1'}, 'params': {'rpg_ai_rate_mbps': 5}, 'reason': 'tune'}");
	cli_request_fini(&r);

	/* a pattern may be allowed more objects than rocefabd's changes.max_targets */
	o = (struct cli_opts){ .max_targets = "500" };
	assert_int_equal(build(&o, &r, &e, ARGV("set", "ecn", "*", "*", "3", "pmax=1")), 0);
	assert_request(&r, "POST", "/api/v1/changes",
		       "{'kind': 'ecn', 'select': {'switch': '*', 'port': '*', 'queue': 3},"
		       " 'params': {'pmax': 1}, 'max_targets': 500}");
	cli_request_fini(&r);

	o = (struct cli_opts){ 0 };
	assert_int_equal(build(&o, &r, &e, ARGV("set", "ecn", "leaf?", "h0", "3", "pmax=1")), 0);
	assert_request(&r, "POST", "/api/v1/changes",
		       "{'kind': 'ecn', 'select': {'switch': 'leaf?', 'port': 'h0', 'queue': 3},"
		       " 'params': {'pmax': 1}}");
	cli_request_fini(&r);
	assert_int_equal(
		build(&o, &r, &e, ARGV("set", "ecn", "leaf 0", "Eth1/1", "3/..", "pmax=1")), 0);
	assert_request(&r, "PUT", "/api/v1/switches/leaf%200/ports/Eth1%2F1/queues/3%2F../ecn",
		       "{'pmax': 1}");
	cli_request_fini(&r);
}

static void assert_rejected(const struct cli_opts *o, char **argv, int err, const char *code,
			    const char *msg)
{
	struct cli_request r;
	struct rf_err e;

	memset(&r, 0x5a, sizeof(r));
	assert_int_equal(build(o, &r, &e, argv), err);
	assert_string_equal(e.code, code);
	assert_string_equal(e.msg, msg);
	for (size_t i = 0; i < sizeof(r); i++) /* untouched */
		assert_int_equal(((unsigned char *)&r)[i], 0x5a);
}

static void test_build_rejects(void **state)
{
	struct cli_opts o = { 0 };
	char *long_name = malloc(3000);

	(void)state;
	/* the usage errors, each said precisely: unknown command, too many or too few arguments */
	assert_rejected(&o, ARGV("frobnicate"), -EINVAL, "UNKNOWN_COMMAND",
			"unknown command 'frobnicate' (rocefabctl help lists the commands)");
	assert_rejected(&o, ARGV("health", "x"), -EINVAL, "USAGE",
			"health: too many arguments ('x' is one too many)");
	assert_rejected(&o, ARGV("hosts", "a", "b"), -EINVAL, "USAGE",
			"hosts: too many arguments ('b' is one too many)");
	assert_rejected(&o, ARGV("ports", "x"), -EINVAL, "USAGE",
			"ports: too many arguments ('x' is one too many)");
	assert_rejected(&o, ARGV("changes", "1", "2"), -EINVAL, "USAGE",
			"changes: too many arguments ('2' is one too many)");
	assert_rejected(&o, ARGV("counters"), -EINVAL, "USAGE", "counters: missing arguments");
	/* an id that is no number: a usage error here, not a 400 from the server (exit 2) */
	assert_rejected(&o, ARGV("changes", "abc"), -EINVAL, "USAGE",
			"changes ID: the id is a number from 1 up, not 'abc'");
	assert_rejected(&o, ARGV("ack", "0"), -EINVAL, "USAGE", "ack: the id is a number from 1 up, not '0'");
	assert_rejected(&o, ARGV("mitigate", "-1"), -EINVAL, "USAGE",
			"mitigate: the id is a number from 1 up, not '-1'");
	assert_rejected(&o, ARGV("cc", "reject", "7x"), -EINVAL, "USAGE",
			"cc reject: the id is a number from 1 up, not '7x'");
	assert_rejected(&o, ARGV("settle", "x", "applied"), -EINVAL, "USAGE",
			"settle: the id is a number from 1 up, not 'x'");
	assert_rejected(&o, ARGV("set", "ecn"), -EINVAL, "USAGE", "set: not enough arguments");
	/* what set itself refuses */
	assert_rejected(&o, ARGV("set", "qos", "leaf0", "x=1"), -EINVAL, "",
			"set dcqcn, set ecn or set pfc");
	assert_rejected(&o, ARGV("set", "ecn", "leaf0", "Eth1"), -EINVAL, "",
			"set ecn needs SWITCH PORT QUEUE");
	assert_rejected(&o, ARGV("set", "pfc", "leaf0"), -EINVAL, "", "set pfc needs NODE PORT");
	assert_rejected(&o, ARGV("set", "pfc", "h16", "enable=8"), -EINVAL, "USAGE",
			"set pfc needs NODE PORT before NAME=VALUE, not 'enable=8' (a host's PORT is DEVICE:PORT, e.g. "
			"nic0:1)");
	assert_rejected(&o, ARGV("set", "ecn", "leaf0", "h1", "kmin_bytes=5"), -EINVAL, "USAGE",
			"set ecn needs SWITCH PORT QUEUE before NAME=VALUE, not 'kmin_bytes=5'");
	assert_rejected(&o, ARGV("set", "ecn", "leaf0", "Eth1", "3"), -EINVAL, "",
			"name at least one NAME=VALUE to change (rocefabctl params)");
	assert_rejected(&o, ARGV("set", "dcqcn", "h1", "a=1", "kmin"), -EINVAL, "",
			"'kmin' is not NAME=VALUE");
	assert_rejected(&o, ARGV("set", "dcqcn", "h1", "=1"), -EINVAL, "",
			"'=1' is not NAME=VALUE");
	/* a NAME given twice: the last would have won without a word */
	assert_rejected(&o, ARGV("set", "dcqcn", "h1", "rpg_ai_rate=5", "rpg_ai_rate=50"), -EINVAL, "",
			"'rpg_ai_rate' is given twice");
	assert_rejected(&o, ARGV("cc", "policy", "mode=auto", "canary_share=0.25", "mode=off"), -EINVAL, "",
			"'mode' is given twice");
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "*", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not '*'");
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "3a", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not '3a'");
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "-2", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not '-2'");
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "8", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not '8'");
	/* one spelling per number: a queue of 03 or +3 is not queue 3, enable=010 is not octal 8 */
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "03", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not '03'");
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "+3", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not '+3'");
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", " 3", "pmax=1"), -EINVAL, "",
			"set ecn: QUEUE is a number from 0 to 7, not ' 3'");
	assert_rejected(&o, ARGV("set", "pfc", "leaf0", "Eth1", "enable=010"), -EINVAL, "",
			"'enable=010': write the number in decimal without a '+' or a leading zero, or in "
			"hex as 0x...");
	assert_rejected(&o, ARGV("set", "pfc", "leaf0", "Eth1", "enable=+8"), -EINVAL, "",
			"'enable=+8': write the number in decimal without a '+' or a leading zero, or in "
			"hex as 0x...");
	assert_rejected(&o, ARGV("set", "pfc", "leaf0", "Eth1", "xoff_bytes=99999999999999999999"),
			-ERANGE, "", "'xoff_bytes=99999999999999999999': the number is too large");
	o.max_targets = "0";
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "3", "pmax=1"), -EINVAL, "",
			"--max-targets is a number from 1 up, not '0'");
	o.max_targets = "0500";
	assert_rejected(&o, ARGV("set", "ecn", "leaf*", "h0", "3", "pmax=1"), -EINVAL, "",
			"--max-targets is a number from 1 up, not '0500'");
	o.max_targets = "500";
	assert_rejected(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), -EINVAL, "",
			"--max-targets is for a pattern (a change of many objects)");
	o.max_targets = NULL;
	/* an option the command does not read is refused, not ignored */
	o.all = true;
	assert_rejected(&o, ARGV("changes"), -EINVAL, "USAGE", "changes: --all is not one of its options");
	assert_rejected(&o, ARGV("cc", "history"), -EINVAL, "USAGE", "cc history: --all is for cc proposals");
	assert_rejected(&o, ARGV("cc"), -EINVAL, "USAGE", "cc status: --all is for cc proposals");
	assert_rejected(&o, ARGV("cc", "apply", "3"), -EINVAL, "USAGE", "cc apply: --all is for cc proposals");
	assert_rejected(&o, ARGV("cc", "bogus"), -EINVAL, "",
			"cc takes status, proposals [--all], history, policy [NAME=VALUE...], apply ID, reject ID or "
			"rollback");
	o.all = false;
	o.step = "10s";
	assert_rejected(&o, ARGV("probes"), -EINVAL, "USAGE", "probes: --step is not one of its options");
	o.step = NULL;
	o.window = "10s";
	assert_rejected(&o, ARGV("counters", "h:d:1"), -EINVAL, "USAGE",
			"counters: --window is not one of its options");
	o.window = NULL;
	o.wait_s = 30;
	assert_rejected(&o, ARGV("hosts"), -EINVAL, "USAGE", "hosts: --wait is not one of its options");
	o.wait_s = 0;
	o.reason = "why";
	assert_rejected(&o, ARGV("cc", "history"), -EINVAL, "USAGE",
			"cc history: --reason is for cc apply, reject, rollback and policy NAME=VALUE");
	assert_rejected(&o, ARGV("cc", "proposals"), -EINVAL, "USAGE",
			"cc proposals: --reason is for cc apply, reject, rollback and policy NAME=VALUE");
	assert_rejected(&o, ARGV("cc", "policy"), -EINVAL, "USAGE",
			"cc policy: --reason goes with NAME=VALUE (a change)");
	assert_rejected(&o, ARGV("detector", "config"), -EINVAL, "USAGE",
			"detector config: --reason goes with NAME=VALUE (a change)");
	assert_rejected(&o, ARGV("detector"), -EINVAL, "USAGE",
			"detector: --reason goes with detector config NAME=VALUE (a change)");
	assert_rejected(&o, ARGV("ack", "7"), -EINVAL, "USAGE", "ack: --reason is not one of its options");
	assert_rejected(&o, ARGV("settle", "12", "yes"), -EINVAL, "USAGE",
			"settle 12: say applied or not-applied, not 'yes'");
	o.reason = NULL;
	assert_rejected(&o, ARGV("settle", "12", "applied"), -EINVAL, "USAGE",
			"settle needs --reason TEXT: what was checked on the device, and by whom");
	o.reason = " ";
	assert_rejected(&o, ARGV("settle", "12", "applied"), -EINVAL, "USAGE",
			"settle needs --reason TEXT: what was checked on the device, and by whom");
	o.reason = "why";
	/* not text: refused, not sent without it (set) or said to be out of memory */
	o.reason = "\xff\xfe";
	assert_rejected(&o, ARGV("cc", "apply", "3"), -EINVAL, "USAGE", "--reason is not text (UTF-8)");
	assert_rejected(&o, ARGV("mitigate", "3"), -EINVAL, "USAGE", "--reason is not text (UTF-8)");
	assert_rejected(&o, ARGV("set", "pfc", "leaf0", "h5", "alpha_shift=3"), -EINVAL, "USAGE",
			"--reason is not text (UTF-8)");
	o.reason = NULL;
	assert_rejected(&o, ARGV("cc", "policy", "reason=x"), -EINVAL, "USAGE",
			"cc policy: reason is not a field (--reason TEXT)");
	assert_rejected(&o, ARGV("detector", "config", "reason=x"), -EINVAL, "USAGE",
			"detector config: reason is not a field (--reason TEXT)");
	assert_rejected(&o, ARGV("set", "dcqcn", "h1", "reason=x"), -EINVAL, "USAGE",
			"set dcqcn: reason is not a setting (--reason TEXT)");
	o.batch = "x";
	assert_rejected(&o, ARGV("changes"), -EINVAL, "USAGE", "--batch: the id is a number from 1 up, not 'x'");
	assert_rejected(&o, ARGV("changes", "7"), -EINVAL, "USAGE",
			"changes ID: --batch is for the list, not one change");
	assert_rejected(&o, ARGV("hosts"), -EINVAL, "USAGE", "hosts: --batch is not one of its options");
	o.batch = NULL;
	o.limit = "5";
	assert_rejected(&o, ARGV("changes", "7"), -EINVAL, "USAGE",
			"changes ID: --limit is for the list, not one change");
	assert_rejected(&o, ARGV("hosts"), -EINVAL, "USAGE", "hosts: --limit is not one of its options");
	o.limit = NULL;
	o.state = "failed";
	assert_rejected(&o, ARGV("changes", "7"), -EINVAL, "USAGE",
			"changes ID: --state is for the list, not one change");
	assert_rejected(&o, ARGV("ack", "7"), -EINVAL, "USAGE", "ack: --state is not one of its options");
	o.state = NULL;
	o.port = "1";
	assert_rejected(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), -EINVAL, "USAGE",
			"set ecn: --port is for set dcqcn (PORT is an argument here)");
	o.port = NULL;
	o.device = "mlx5_0";
	assert_rejected(&o, ARGV("set", "pfc", "leaf0", "h0", "enable=8"), -EINVAL, "USAGE",
			"set pfc: --device narrows a pattern (of SWITCH or PORT); one port is named whole");
	o.device = NULL;
	/* a request that does not fit is refused, not cut short */
	assert_non_null(long_name);
	memset(long_name, 'a', 2999);
	long_name[2999] = '\0';
	assert_rejected(&o, ARGV("hosts", long_name), -ENAMETOOLONG, "",
			"the arguments make a request longer than 2047 bytes");
	long_name[2034] = '\0'; /* "/api/v1/hosts/" and 2034 bytes: 2048 */
	assert_rejected(&o, ARGV("hosts", long_name), -ENAMETOOLONG, "",
			"the arguments make a request longer than 2047 bytes");
	{
		struct cli_request r;
		struct rf_err e;

		long_name[2033] = '\0'; /* 2047 bytes: the longest there is room for */
		assert_int_equal(build(&o, &r, &e, ARGV("hosts", long_name)), 0);
		assert_int_equal(strlen(r.path), 2047);
		cli_request_fini(&r);
	}
	memset(long_name, '/', 1000); /* 3000 bytes once escaped */
	long_name[1000] = '\0';
	assert_rejected(&o, ARGV("switches", long_name), -ENAMETOOLONG, "",
			"the arguments make a request longer than 2047 bytes");
	free(long_name);
}

/* --- the usage ------------------------------------------------------------------------------- */

static const char usage_txt[] =
	"usage: rocefabctl [OPTIONS] COMMAND [ARGS]\n"
	"\n"
	"Commands:\n"
	"  health                       daemon and store health\n"
	"  version                      versions of rocefabd and its contracts\n"
	"  agents [AGENT]               agents, their liveness, spools and errors, or one agent\n"
	"                               with the errors of its last report\n"
	"  hosts [HOST]                 hosts, or one host with its devices and ports\n"
	"  ports [--host H] [--device D] [--state up|down|init|unknown]\n"
	"  qps HOST                     a host's QPs (RDMA netlink): totals by type and state,\n"
	"                               owning processes, QPs in error, per-QP counters\n"
	"  counters PORT [NAME...] [--priority P] [--from T] [--to T] [--step DUR]\n"
	"                               latest delta and rate of a port's counters (PORT is\n"
	"                               HOST:DEVICE:PORT; times: RFC 3339, Unix seconds, -5m)\n"
	"  registry                     the counters rocefab knows\n"
	"  switches [SWITCH]            switches, or one switch with its ports, neighbours,\n"
	"                               PFC and ECN settings\n"
	"  links                        links between ports, from the ports' neighbours\n"
	"  topology                     nodes and the links between them\n"
	"  params                       the settings that can be changed, units and ranges\n"
	"  set dcqcn HOST NAME=VALUE... [--device D --port P]\n"
	"  set ecn SWITCH PORT QUEUE NAME=VALUE...   (kmin_bytes, kmax_bytes, pmax, enabled)\n"
	"  set pfc SWITCH PORT NAME=VALUE...         (enable, xoff_bytes, xon_bytes, alpha_shift)\n"
	"  set pfc HOST DEVICE:PORT enable=MASK\n"
	"                               change settings (role operator); HOST, SWITCH and PORT\n"
	"                               may be glob patterns ('leaf*') to change many at once\n"
	"                               (up to --max-targets N; --device D narrows them);\n"
	"                               sizes take units (400KB); --reason TEXT goes to the\n"
	"                               audit log; --wait[=S] waits for the outcome (30 s);\n"
	"                               a change valid only after others on their way waits\n"
	"                               for them (pending (after ...))\n"
	"  probes [--window DUR] [--op OP] [--size BYTES]\n"
	"                               pingmesh: what the latency matrix points at, and its\n"
	"                               worst pairs (of the configuration's first op and size\n"
	"                               unless named)\n"
	"  alerts [ALERT] [--state active|cleared]\n"
	"                               faults named by the pingmesh localization (host, link,\n"
	"                               tor, fabric) and the PFC deadlock and storm detector\n"
	"                               (deadlock, pause_storm, slow_receiver, persistent,\n"
	"                               restore_failed), and ports that went down (port_down):\n"
	"                               active and cleared, newest first, unless --state says\n"
	"                               which; or one alert with its details (the storm's\n"
	"                               source, the port it pauses, its victims, the action)\n"
	"  ack ALERT                    acknowledge an alert (role operator)\n"
	"  mitigate ALERT [--reason TEXT]\n"
	"                               act on a PFC detector alert in advise mode: break the\n"
	"                               deadlock or isolate the storm's culprit through the\n"
	"                               audited change path (role operator)\n"
	"  detector\n"
	"  detector config [NAME=VALUE... [--reason TEXT]]\n"
	"                               the PFC detector: modes, fast lane, findings, holds;\n"
	"                               its configuration, or a change of it (role operator):\n"
	"                               deadlock_mode, storm_mode (off, advise, auto),\n"
	"                               restore_ms\n"
	"  cc [status|proposals [--all]|history]\n"
	"  cc policy [NAME=VALUE... [--reason TEXT]]\n"
	"  cc apply|reject PROPOSAL [--reason TEXT]\n"
	"  cc rollback [--reason TEXT]  the congestion-control tuner of ECN and DCQCN: its\n"
	"                               state, its proposals (apply or reject them in advise\n"
	"                               mode), every step's history, its policy\n"
	"                               (a VALUE may be JSON, e.g.\n"
	"                               host_classes='[{\"name\":\"gpu\",\"hosts\":\"gpu*\"}]'),\n"
	"                               undo every step; role operator to change the policy,\n"
	"                               apply, reject or roll back\n"
	"  changes [ID] [--state S] [--agent A] [--batch B] [--limit N]\n"
	"                               configuration changes and their outcome (audit log),\n"
	"                               newest first; --state pending, sent, applied, failed,\n"
	"                               timed_out, or in_doubt: the changes to settle;\n"
	"                               --batch B: one request's, or one tuner proposal's\n"
	"                               (cc history's BATCH)\n"
	"  forget AGENT                 forget an agent gone for good (a host retired): its\n"
	"                               ports, their samples and rollups; it must be stale,\n"
	"                               with no change to it open (role operator)\n"
	"  settle CHANGE applied|not-applied --reason TEXT\n"
	"                               an operator's word on a change in doubt whose agent\n"
	"                               cannot say (gone for good): the device holds it, or\n"
	"                               not (role operator)\n"
	"  settings-log [SETTING] [--limit N]\n"
	"                               who changed the tuner's policy, the detector's or the\n"
	"                               pingmesh's configuration (SETTING: cc/policy,\n"
	"                               detector/config, probes/config), when, why and which\n"
	"                               fields, newest first\n"
	"\n"
	"Options:\n"
	"  -s, --server URL       rocefabd URL (default $ROCEFAB_SERVER or http://127.0.0.1:9750)\n"
	"  -t, --token-file FILE  bearer token file (default $ROCEFAB_TOKEN_FILE; or the token\n"
	"                         itself in $ROCEFAB_TOKEN)\n"
	"      --cacert FILE      the CA that signed rocefabd's certificate (default\n"
	"                         $ROCEFAB_CACERT, $CURL_CA_BUNDLE, $SSL_CERT_FILE; else the\n"
	"                         system's)\n"
	"  -w, --watch SECONDS    run the command again every SECONDS until interrupted (a\n"
	"                         command that reads; one that changes things is refused)\n"
	"  -j, --json             print the REST JSON\n"
	"      --reason TEXT      why: for the audit log (set, mitigate, cc apply, reject,\n"
	"                         rollback; settle needs one) or the settings log (cc\n"
	"                         policy, detector config)\n"
	"      --wait[=SECONDS]   wait until every change is settled (set; default 30 s)\n"
	"      --max-targets N    let a pattern change up to N objects (set; default\n"
	"                         rocefabd's changes.max_targets, 256)\n"
	"      --all              cc proposals: the recent ones too, not only the open\n"
	"      --limit N          changes, settings-log: list up to N (default 100)\n"
	"  -V, --version          print the version and exit\n"
	"  -h, --help             this text; with a command, its usage (or: rocefabctl help\n"
	"                         COMMAND)\n"
	"-s, -t, --cacert and -j go with every command, -w with those that read; a command's\n"
	"own options are in its usage (rocefabctl --list-options COMMAND); any other is refused.\n";

static void test_usage(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	cli_usage(f);
	fclose(f);
	assert_string_equal(buf, usage_txt);
	free(buf);
}

/* rocefabctl help COMMAND: its synopsis lines and help, not the whole usage */
/* Each option a command takes (--list-options) is named in its usage, and --list-options of a
 * command that takes none prints nothing. */
static void test_usage_names_every_own_option(void **state)
{
	char *names = NULL, *opts, *usage;
	size_t len;
	FILE *f = open_memstream(&names, &len);

	(void)state;
	assert_non_null(f);
	cli_list_commands(f);
	fclose(f);
	for (char *save, *cmd = strtok_r(names, "\n", &save); cmd; cmd = strtok_r(NULL, "\n", &save)) {
		size_t ol, ul;
		FILE *fo = open_memstream(&opts, &ol), *fu = open_memstream(&usage, &ul);

		assert_non_null(fo);
		assert_non_null(fu);
		assert_int_equal(cli_list_options(fo, cmd), 0);
		assert_int_equal(cli_usage_cmd(fu, cmd), 0);
		fclose(fo);
		fclose(fu);
		for (char *s2, *o = strtok_r(opts, "\n", &s2); o; o = strtok_r(NULL, "\n", &s2))
			if (!strstr(usage, o))
				fail_msg("%s takes %s, which its usage does not name:\n%s", cmd, o, usage);
		free(opts);
		free(usage);
	}
	free(names);
	assert_int_equal(cli_list_options(stdout, "nope"), -ENOENT);
}

/* The one table of the commands' options: each, set as main() sets it (cli_opt_set), is seen
 * as given (a command that does not take it refuses it by its name); --wait takes a number of
 * seconds above 0, at most 86400, and 30 without one. */
static void test_opt_table(void **state)
{
	struct rf_err e;

	(void)state;
	for (size_t i = 0; i < CLI_NOPT_DEFS; i++) {
		const struct cli_opt_def *d = &cli_opt_defs[i];
		struct cli_opts o = { 0 };
		char want[64];

		/* every entry filled (the array is sized by CLI_NOPT_DEFS), in the order of the bits */
		assert_non_null(d->name);
		assert_int_equal(d->bit, 1u << i);
		assert_int_equal(cli_opt_set(&o, d, d->has_arg == required_argument ? "x" : NULL, &e), 0);
		snprintf(want, sizeof(want), "health: --%s is not one of its options", d->name);
		assert_rejected(&o, ARGV("health"), -EINVAL, "USAGE", want);
	}
	for (size_t i = 0; i < CLI_NOPT_DEFS; i++)
		if (cli_opt_defs[i].bit == CLI_OPT_WAIT) {
			static const char *const bad[] = { "0", "-1", "1e9", "5s", "" };
			struct cli_opts o = { 0 };

			assert_int_equal(cli_opt_set(&o, &cli_opt_defs[i], NULL, &e), 0);
			assert_true(o.wait_s == 30);
			assert_int_equal(cli_opt_set(&o, &cli_opt_defs[i], "2.5", &e), 0);
			assert_true(o.wait_s == 2.5);
			for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
				assert_int_equal(cli_opt_set(&o, &cli_opt_defs[i], bad[k], &e), -EINVAL);
				assert_non_null(strstr(e.msg, "is not a number of seconds"));
				assert_true(o.wait_s == 0);
			}
		}
}

static void test_usage_of_one_command(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(cli_usage_cmd(f, "qps"), 0);
	assert_int_equal(cli_usage_cmd(f, "frobnicate"), -ENOENT);
	fclose(f);
	assert_string_equal(buf, "usage: rocefabctl [OPTIONS] qps HOST\n"
				 "\n"
				 "  a host's QPs (RDMA netlink): totals by type and state,\n"
				 "  owning processes, QPs in error, per-QP counters\n"
				 "\n"
				 "(rocefabctl help lists every command and option)\n");
	free(buf);
}

/* --- the printers ---------------------------------------------------------------------------- */

/* What p prints for the document. */
static char *printed(print_fn *p, const char *fixture)
{
	json_t *doc = J(fixture);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	p(f, doc);
	fclose(f);
	json_decref(doc);
	return buf;
}

static void assert_printed(print_fn *p, const char *fixture, const char *want)
{
	char *got = printed(p, fixture);

	assert_string_equal(got, want);
	free(got);
}

static const char agents_json[] =
	"{'count': 2, 'items': ["
	" {'id': 'gpu-a2', 'role': 'host', 'status': 'ok', 'last_seen': '2026-01-01T00:00:01Z',"
	"  'seq': 41, 'reports': 40, 'samples': 4000,"
	"  'spool': {'queued_reports': 0, 'dropped_reports': 2}, 'version': '1.2.3', 'errors': []},"
	" {'id': 'leaf0', 'role': 'switch', 'status': 'stale', 'last_seen': null, 'seq': 7,"
	"  'reports': 7, 'samples': 700, 'version': '1.2.3',"
	"  'errors': [{'code': 'SONIC_UNREACHABLE', 'message': 'redis: connection refused'}]}]}";

static void test_print_agents(void **state)
{
	(void)state;
	assert_printed(
		print_agents, agents_json,
		"AGENT   ROLE    STATUS  LAST SEEN             SEQ  REPORTS  SAMPLES  SPOOLED"
		"  DROPPED  ERRORS  VERSION\n"
		"gpu-a2  host    ok      2026-01-01T00:00:01Z  41   40       4000     0      "
		"  2        0       1.2.3\n"
		"leaf0   switch  stale   -                     7    7        700      -      "
		"  -        1       1.2.3\n");
	/* no items: said, not a header alone */
	assert_printed(print_agents, "{'count': 0, 'items': []}", "no agents\n");
	assert_printed(print_alerts, "{'count': 0, 'items': []}", "no alerts\n");
	assert_printed(print_ports, "{'count': 0, 'items': []}", "no ports\n");
	assert_printed(print_links, "{'count': 0, 'up': 0, 'items': []}", "no links\n");
	/* one agent: the errors of its last report (its status stays ok while it reports) */
	assert_printed(print_agent,
		       "{'id': 'leaf0', 'role': 'switch', 'status': 'ok', 'backend': 'sonic', 'version': '1.2.3',"
		       " 'boot_id': 'b1', 'last_seen': '2026-01-01T00:00:01Z', 'last_report': '2026-01-01T00:00:01Z',"
		       " 'seq': 7, 'reports': 7, 'samples': 700, 'spool': {'queued_reports': 0, 'dropped_reports': 0},"
		       " 'errors': [{'code': 'SONIC_UNREACHABLE', 'message': 'redis: connection refused'},"
		       "            {'code': 'BAD_NAME', 'where': 'port', 'message': 'left out'}]}",
		       "agent:    leaf0 (switch, ok)\n"
		       "backend:  sonic, version 1.2.3\n"
		       "boot:     b1\n"
		       "seen:     2026-01-01T00:00:01Z (report 2026-01-01T00:00:01Z, seq 7)\n"
		       "reports:  7, 700 samples; spool 0 waiting, 0 dropped\n"
		       "errors in its last report:\n"
		       "  SONIC_UNREACHABLE: redis: connection refused\n"
		       "  BAD_NAME at port: left out\n");
	assert_printed(print_agent, "{'id': 'h1', 'errors': []}",
		       "agent:    h1 (?, ?)\nbackend:  -, version -\nboot:     -\nseen:     - (report -, seq -)\n"
		       "reports:  0, 0 samples; spool 0 waiting, 0 dropped\nerrors:   none in its last report\n");
}

static const char switch_json[] =
	"{'id': 'leaf0', 'status': 'ok', 'last_seen': '2026-01-01T00:00:01Z', 'port_list': ["
	" {'port': 'h0', 'state': 'up', 'speed_mbps': 400000,"
	"  'peer': {'system': 'h0', 'port': 'nic0'},"
	"  'pfc': {'enable': 24, 'xoff_threshold_bytes': 1600000},"
	"  'xoff_threshold': {'bytes': 1600000, 'from': 'reported'},"
	"  'ecn': [{'queue': 3, 'enabled': true, 'kmin_bytes': 100000, 'kmax_bytes': 400000,"
	"           'pmax': 0.2},"
	"          {'queue': 4, 'enabled': false, 'kmin_bytes': 5000, 'kmax_bytes': 1600000,"
	"           'pmax': 0.01},"
	"          {'queue': 0, 'enabled': true, 'kmin_bytes': 1, 'kmax_bytes': 2, 'pmax': 1},"
	"          {'queue': 40, 'enabled': true, 'kmin_bytes': 1, 'kmax_bytes': 2, 'pmax': 1}]},"
	" {'port': 'spine0', 'state': 'down', 'peer': null, 'pfc': {'enable': 0}, 'ecn': []},"
	" {'port': 'spine1', 'state': 'up', 'peer': null, 'pfc': {'enable': 8, 'mode': 'dynamic'},"
	"  'xoff_threshold': {'bytes': 1418467, 'from': 'computed'}, 'ecn': []}]}";

/* PFC priorities 3 and 4 from the mask, the ECN of those queues only, sizes with SI units; an
 * XOFF threshold computed from a dynamic one's alpha (SONiC) says so. */
static void test_print_switch(void **state)
{
	(void)state;
	assert_printed(print_switch, switch_json,
		       "switch:   leaf0 (ok)\n"
		       "seen:     2026-01-01T00:00:01Z\n"
		       "\n"
		       "PORT    STATE  SPEED     NEIGHBOUR  PFC PRIOS  XOFF THRESHOLD      "
		       "ECN (lossless queues)\n"
		       "h0      up     400 Gb/s  h0 nic0    3,4        1.6 MB              "
		       "q3 on 100 kB..400 kB p0.2; q4 off 5 kB..1.6 MB p0.01\n"
		       "spine0  down   -         -          -          -                   -\n"
		       "spine1  up     -         -          3          1.42 MB (computed)  -\n");
	/* ports in natural order, as the other lists (Ethernet12 came before Ethernet4) */
	assert_printed(print_switch,
		       "{'id': 's', 'status': 'ok', 'last_seen': 't', 'port_list': ["
		       " {'port': 'Ethernet12', 'state': 'up', 'peer': null, 'pfc': {'enable': 0}, 'ecn': []},"
		       " {'port': 'Ethernet4', 'state': 'up', 'peer': null, 'pfc': {'enable': 0}, 'ecn': []}]}",
		       "switch:   s (ok)\nseen:     t\n\n"
		       "PORT        STATE  SPEED  NEIGHBOUR  PFC PRIOS  XOFF THRESHOLD  ECN (lossless queues)\n"
		       "Ethernet4   up     -      -          -          -               -\n"
		       "Ethernet12  up     -      -          -          -               -\n");
	/* a stale switch: its ports' states as last reported, said so */
	assert_printed(print_switch,
		       "{'id': 's', 'status': 'stale', 'last_seen': 't', 'port_list': ["
		       " {'port': 'Ethernet0', 'state': 'up', 'stale': true, 'peer': null, 'pfc': {'enable': 0},"
		       "  'ecn': []}]}",
		       "switch:   s (stale)\nseen:     t\n\n"
		       "PORT       STATE       SPEED  NEIGHBOUR  PFC PRIOS  XOFF THRESHOLD  ECN (lossless queues)\n"
		       "Ethernet0  up (stale)  -      -          -          -               -\n");
}

static const char counters_json[] =
	"{'port': 'gpu-a2:mlx5_0:1', 'from': '2026-01-01T00:00:00Z', 'to': '2026-01-01T00:05:00Z',"
	" 'step_s': 10, 'series': ["
	" {'name': 'np_cnp_sent', 'unit': 'packets',"
	"  'points': [{'raw': 10, 'delta': 3, 'rate': 0.3}, {'raw': 5000, 'delta': 4990, 'rate': "
	"4990.5}]},"
	" {'name': 'pfc_rx_pause_frames', 'unit': 'frames', 'priority': 3,"
	"  'points': [{'raw': 1, 'delta': 0, 'rate': 0}]},"
	" {'name': 'tx_bytes', 'unit': 'bytes',"
	"  'points': [{'raw': 123456789012, 'delta': 6600000000, 'rate': 6.6e9}]},"
	" {'name': 'queue_depth_bytes', 'unit': 'bytes', 'points': [{'raw': 65536, 'value': "
	"65536}]},"
	" {'name': 'pause_us', 'unit': 'microseconds',"
	"  'points': [{'raw': 5, 'delta': 1500, 'rate': 150}]},"
	" {'name': 'empty', 'unit': 'packets', 'points': []},"
	" {'name': 'nounit', 'points': [{'raw': 1, 'delta': 1, 'rate': 1}]}]}";

/* The last point of each series: deltas and gauges with the unit's symbol, rates per second. */
static void test_print_counters(void **state)
{
	(void)state;
	assert_printed(
		print_counters, counters_json,
		"port gpu-a2:mlx5_0:1, 2026-01-01T00:00:00Z .. 2026-01-01T00:05:00Z\n"
		"\n"
		"COUNTER              PRIO  RAW           DELTA/VALUE  RATE                 POINTS\n"
		"np_cnp_sent          -     5000          4.99 k       4.99k packets/s      2\n"
		"pfc_rx_pause_frames  3     1             0            0 frames/s           1\n"
		"tx_bytes             -     123456789012  6.6 GB       6.6 GB/s             1\n"
		"queue_depth_bytes    -     65536         65.5 kB      -                    1\n"
		"pause_us             -     5             1.5 ms       0.015 % of the time  1\n"
		"empty                -     -             -            -                    0\n"
		"nounit               -     1             1            1 /s                 1\n");
	/* a window that starts before what its resolution keeps says so */
	assert_printed(print_counters,
		       "{'port': 'p', 'from': '2026-01-01T00:00:00Z', 'to': '2026-01-03T00:00:00Z', 'step_s': 1800,"
		       " 'resolution': '1m', 'kept_from': '2026-01-02T22:00:00Z', 'series': []}",
		       "port p, 2026-01-01T00:00:00Z .. 2026-01-03T00:00:00Z\n"
		       "(resolution 1m keeps data since 2026-01-02T22:00:00Z: points before it may be missing; a step "
		       "of whole hours reads the hourly rollups, kept longest)\n\n"
		       "no samples in the window (counters this port does not report, or a window without samples)\n");
	/* series without a point: said, not a table of dashes */
	assert_printed(print_counters,
		       "{'port': 'p', 'from': 'A', 'to': 'B',"
		       " 'series': [{'name': 'x', 'unit': 'packets', 'points': []}]}",
		       "port p, A .. B\n\n"
		       "no samples in the window (counters this port does not report, or a window without samples)\n");
}

static const char changes_json[] =
	"{'count': 3, 'items': ["
	" {'id': 3, 'state': 'applied', 'actor': 'ops', 'created': '2026-01-01T00:00:00Z',"
	"  'params': {'kmin_bytes': 100000, 'b': true},"
	"  'target': {'kind': 'ecn', 'agent': 'leaf0', 'role': 'switch', 'port': 'h0', 'queue': "
	"3}},"
	" {'id': 2, 'state': 'failed', 'actor': 'ops', 'created': '2026-01-01T00:00:00Z',"
	"  'params': {'enable': 8}, 'reason': 'INC-7\\u001b[2J',"
	"  'target': {'kind': 'pfc', 'agent': 'leaf0', 'role': 'switch', 'port': 'h1'},"
	"  'error': {'code': 'X', 'message': 'agent said no'}},"
	" {'id': 1, 'state': 'applied', 'actor': 'ops', 'created': '2026-01-01T00:00:00Z',"
	"  'params': {'rpg_ai_rate_mbps': 5},"
	"  'target': {'kind': 'dcqcn', 'agent': 'h1', 'role': 'host', 'device': 'nic0',"
	"             'port': '1'}}]}";

static void test_print_changes(void **state)
{
	(void)state;
	/* a list: the target as the kind names it, params with sorted keys, the error's message */
	assert_printed(print_changes, changes_json,
		       "ID  STATE    KIND   TARGET       PARAMS                          BY   "
		       "CREATED               ERROR             REASON\n"
		       "3   applied  ecn    leaf0 h0 q3  {\"b\":true,\"kmin_bytes\":100000}  ops  "
		       "2026-01-01T00:00:00Z\n"
		       "2   failed   pfc    leaf0 h1     {\"enable\":8}                    ops  "
		       "2026-01-01T00:00:00Z  X: agent said no  INC-7?[2J\n"
		       "1   applied  dcqcn  h1 nic0:1    {\"rpg_ai_rate_mbps\":5}          ops  "
		       "2026-01-01T00:00:00Z\n");
	/* a batch's answer has them as "changes"; one held for others names them */
	assert_printed(
		print_changes,
		"{'batch': 4, 'count': 1, 'changes': [{'id': 4, 'state': 'pending', 'after': [2, 3],"
		" 'target': {'kind': 'pfc', 'agent': 'sw', 'role': 'switch', 'port': 'p'}}]}",
		"ID  STATE                 KIND  TARGET  PARAMS  BY  CREATED  ERROR  REASON\n"
		"4   pending (after 2, 3)  pfc   sw p            -   -\n");
	/* one timed out unanswered, perhaps applied */
	assert_printed(
		print_changes,
		"{'batch': 5, 'count': 1, 'changes': [{'id': 5, 'state': 'timed_out', 'after': [], 'in_doubt': true,"
		" 'target': {'kind': 'pfc', 'agent': 'sw', 'role': 'switch', 'port': 'p'}}]}",
		"ID  STATE                 KIND  TARGET  PARAMS  BY  CREATED  ERROR  REASON\n"
		"5   timed_out (in doubt)  pfc   sw p            -   -\n");
	/* settled by an operator: said in the state; a long error and reason cut at whole
	 * characters (changes ID shows them whole) */
	assert_printed(
		print_changes,
		"{'count': 1, 'items': [{'id': 6, 'state': 'applied', 'settled': {'by': 'noc', 'applied': true},"
		" 'error': {'code': 'NO_ANSWER', 'message': 'the agent did not report an outcome before the deadline"
		" (is it running and reachable?)'}, 'reason': '\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
		"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
		"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
		"\\u00e9 INC-7',"
		" 'target': {'kind': 'pfc', 'agent': 'sw', 'role': 'switch', 'port': 'p'}}]}",
		"ID  STATE                     KIND  TARGET  PARAMS  BY  CREATED  ERROR"
		"                                                                     REASON\n"
		"6   applied (settled by noc)  pfc   sw p            -   -        NO_ANSWER: the agent did not report an "
		"outcome before the deadline (i...  "
		"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
		"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
		"...\n");
	/* a list cut at its limit says so */
	assert_printed(
		print_changes,
		"{'count': 1, 'truncated': true, 'items': [{'id': 5, 'state': 'applied',"
		" 'target': {'kind': 'pfc', 'agent': 'sw', 'role': 'switch', 'port': 'p'}}]}",
		"ID  STATE    KIND  TARGET  PARAMS  BY  CREATED  ERROR  REASON\n"
		"5   applied  pfc   sw p            -   -\n"
		"(the newest 1; --limit N for more)\n");
	/* the settings log: each field changed, from and to */
	assert_printed(print_settings_log,
		       "{'count': 2, 'truncated': false, 'items': ["
		       "{'id': 2, 'time': 'T2', 'setting': 'cc/policy', 'actor': 'ops', 'reason': 'night',"
		       " 'changed': {'mode': {'from': 'advise', 'to': 'auto'},"
		       " 'pmax_ceiling': {'from': 0.1, 'to': 0.3}}},"
		       "{'id': 1, 'time': 'T1', 'setting': 'detector/config', 'actor': 'x', 'reason': null,"
		       " 'changed': {'restore_ms': {'from': null, 'to': 20}}}]}",
		       "ID  TIME  SETTING          BY   REASON  CHANGED\n"
		       "2   T2    cc/policy        ops  night   mode \"advise\" -> \"auto\", pmax_ceiling 0.1 -> 0.3\n"
		       "1   T1    detector/config  x            restore_ms null -> 20\n");
	assert_printed(print_settings_log, "{'count': 0, 'truncated': false, 'items': []}", "no change of a setting\n");
	assert_printed(print_changes, "{'count': 0, 'items': []}", "no changes\n");
	/* one change: a field a line, whole (a real as the list shows it: 0.2, not
	 * 0.20000000000000001) */
	assert_printed(print_changes,
		       "{'id': 7, 'batch': 6, 'state': 'failed', 'in_doubt': false, 'actor': 'ops',"
		       " 'created': 'T0', 'sent': null, 'deadline': 'T9', 'updated': 'T1', 'reason': 'INC-7',"
		       " 'target': {'kind': 'ecn', 'agent': 'leaf0', 'role': 'switch', 'device': 'leaf0', 'port': 'h0',"
		       "            'queue': 3},"
		       " 'params': {'kmin_bytes': 1, 'pmax': 0.2}, 'old': {'kmin_bytes': 5, 'pmax': 0.1}, 'new': null,"
		       " 'after': [4, 5], 'error': {'code': 'DEPENDS_ON_FAILED', 'message': 'change 4 failed',"
		       " 'field': 'kmin_bytes'}}",
		       "change:    7 (batch 6): failed\n"
		       "target:    ecn leaf0 h0 q3\n"
		       "asked:     kmin_bytes=1 pmax=0.2\n"
		       "before:    kmin_bytes=5 pmax=0.1\n"
		       "read back: -\n"
		       "by:        ops at T0\n"
		       "reason:    INC-7\n"
		       "sent:      never; deadline T9; updated T1\n"
		       "after:     4, 5\n"
		       "error:     DEPENDS_ON_FAILED: change 4 failed (kmin_bytes)\n");
	/* settled by an operator; what a device read back made printable */
	assert_printed(print_changes,
		       "{'id': 8, 'batch': 8, 'state': 'timed_out', 'in_doubt': false, 'actor': 'ops', 'created': 'T0',"
		       " 'sent': 'T1', 'deadline': 'T9', 'updated': 'T2', 'reason': null, 'after': [], 'error': null,"
		       " 'target': {'kind': 'dcqcn', 'agent': 'h1', 'role': 'host', 'device': 'mlx5_0', 'port': '1'},"
		       " 'params': {'rpg_ai_rate': 5}, 'old': {'rpg_ai_rate': 4}, 'new': {'device': 'mlx5_0',"
		       " 'x\\u001b[2J': 'y', 'port': '1'},"
		       " 'settled': {'by': 'noc', 'at': 'T3', 'reason': 'gone', 'applied': false}}",
		       "change:    8 (batch 8): timed_out\n"
		       "target:    dcqcn h1 mlx5_0:1\n"
		       "asked:     rpg_ai_rate=5\n"
		       "before:    rpg_ai_rate=4\n"
		       "read back: x?[2J=\"y\"\n"
		       "by:        ops at T0\n"
		       "reason:    -\n"
		       "sent:      T1; deadline T9; updated T2\n"
		       "settled:   not applied by noc at T3: gone\n");
}

/* What an agent reported reaches the terminal without its control characters: an escape
 * sequence that would clear the screen, move up and erase a line, or set the clipboard (OSC
 * 52), C1 controls included, comes out with '?' for each control byte. */
static void test_print_controls(void **state)
{
	(void)state;
	assert_printed(
		print_changes,
		"{'count': 1, 'items': [{'id': 5, 'state': 'failed',"
		" 'target': {'kind': 'pfc', 'agent': 'sw', 'role': 'switch', 'port': 'p'},"
		" 'error': {'message': 'bad\\u001b[1A\\u001b[2K\\rok\\u001b]52;c;eA==\\u0007\\u0085!'}}]}",
		"ID  STATE   KIND  TARGET  PARAMS  BY  CREATED  ERROR                          REASON\n"
		"5   failed  pfc   sw p            -   -        bad?[1A?[2K?ok?]52;c;eA==??" "?!\n");
	assert_printed(print_agents,
		       "{'count': 1, 'items': [{'id': 'h1', 'role': 'host', 'status': 'ok',"
		       " 'version': 'v\\u001b[2J'}]}",
		       "AGENT  ROLE  STATUS  LAST SEEN  SEQ  REPORTS  SAMPLES  SPOOLED  DROPPED"
		       "  ERRORS  VERSION\n"
		       "h1     host  ok      -          -    -        -        -        -        -       v?[2J\n");
}

static const char host_json[] =
	"{'id': 'gpu-a2', 'status': 'ok', 'last_seen': '2026-01-01T00:00:01Z', 'devices_detail': ["
	" {'name': 'mlx5_0', 'kind': 'rdma', 'driver': 'mlx5', 'fw_version': '22.36.1010',"
	"  'present': true, 'ports': ["
	"  {'id': 'gpu-a2:mlx5_0:1', 'netdev': 'ens1f0np0', 'state': 'up', 'speed_mbps': 100000,"
	"   'mtu': 4200},"
	"  {'id': 'gpu-a2:mlx5_0:2', 'netdev': 'ens1f1np1', 'state': 'down', 'mtu': 1500}]},"
	" {'name': 'mlx5_1', 'kind': 'rdma', 'present': false, 'ports': []}]}";

static void test_print_host_and_ports(void **state)
{
	(void)state;
	assert_printed(print_host, host_json,
		       "host:     gpu-a2 (ok)\n"
		       "seen:     2026-01-01T00:00:01Z\n"
		       "\n"
		       "device mlx5_0  kind rdma  driver mlx5  firmware 22.36.1010\n"
		       "PORT             NETDEV     STATE  SPEED     MTU\n"
		       "gpu-a2:mlx5_0:1  ens1f0np0  up     100 Gb/s  4200\n"
		       "gpu-a2:mlx5_0:2  ens1f1np1  down   -         1500\n"
		       "\n"
		       "device mlx5_1  kind rdma  driver -  firmware -  (ABSENT)\n"
		       "no ports\n");
	/* a stale agent's port: its state as last reported, said so */
	assert_printed(print_ports,
		       "{'items': [{'id': 'h:d:1', 'netdev': 'eth0', 'state': 'up', 'stale': false,"
		       " 'speed_mbps': 25000, 'mtu': 9000},"
		       " {'id': 'h2:d:1', 'netdev': 'eth0', 'state': 'up', 'stale': true}]}",
		       "PORT    NETDEV  STATE       SPEED    MTU\n"
		       "h2:d:1  eth0    up (stale)  -        -\n"
		       "h:d:1   eth0    up          25 Gb/s  9000\n");
}

static const char matrix_json[] =
	"{'window_s': 30, 'op': 'write', 'size': 4096, 'hosts': ['h0', 'h1', 'h2'],"
	" 'finding': {'kind': 'link', 'subject': 'leaf1-spine0',"
	"             'evidence': '3 of 4 pairs via leaf1-spine0 lose'},"
	" 'pairs': ["
	" {'src': 'h0', 'dst': 'h1', 'n': 100, 'lost': 0, 'p50_us': 3.21, 'p99_us': 9.87,"
	"  'bad': false},"
	" {'src': 'h0', 'dst': 'h2', 'n': 100, 'lost': 5, 'loss': 0.05, 'p50_us': 3.0,"
	"  'p99_us': 50.0, 'bad': true},"
	" {'src': 'h1', 'dst': 'h2', 'n': 100, 'lost': 0, 'p50_us': 4.0, 'p99_us': 20.25,"
	"  'bad': false}]}";

static const char matrix_txt[] = "pingmesh over 30 s, write 4096 B: 3 pairs of 3 hosts\n"
				 "finding:  link leaf1-spine0\n"
				 "evidence: 3 of 4 pairs via leaf1-spine0 lose\n"
				 "\n"
				 "SRC  DST  PROBES  LOST  P50 US  P99 US  BAD\n"
				 "h0   h2   100     5     3.0     50.0    yes\n"
				 "h1   h2   100     0     4.0     20.2    no\n"
				 "h0   h1   100     0     3.2     9.9     no\n";

/* The worst pairs first: by loss, then by p99. */
static void test_print_probes(void **state)
{
	(void)state;
	assert_printed(print_probes, matrix_json, matrix_txt);
	/* a fabric-wide finding once ("fabric", not "fabric fabric"); none without a trailing
	 * space; no pairs said */
	assert_printed(print_probes,
		       "{'window_s': 10, 'op': 'write', 'size': 64, 'hosts': [], 'pairs': [],"
		       " 'finding': {'kind': 'fabric', 'subject': 'fabric', 'evidence': 'e'}}",
		       "pingmesh over 10 s, write 64 B: 0 pairs of 0 hosts\nfinding:  fabric\nevidence: e\n\n"
		       "no pair measured in the window\n");
	assert_printed(print_probes, "{'window_s': 10, 'op': 'write', 'size': 64, 'finding': {'kind': 'none'}}",
		       "pingmesh over 10 s, write 64 B: 0 pairs of 0 hosts\nfinding:  none\nevidence: \n\n"
		       "no pair measured in the window\n");
	/* (an empty subject, as rocefabd gives for none: no trailing space) and a pair whose every
	 * probe was lost: no latency, not 0.0 */
	assert_printed(print_probes,
		       "{'window_s': 5, 'op': 'write', 'size': 64, 'hosts': ['h0', 'h7'],"
		       " 'finding': {'kind': 'none', 'subject': '', 'evidence': 'e'},"
		       " 'pairs': [{'src': 'h0', 'dst': 'h7', 'n': 80, 'lost': 80, 'p50_us': 0, 'p99_us': 0,"
		       "            'bad': true}]}",
		       "pingmesh over 5 s, write 64 B: 1 pairs of 2 hosts\nfinding:  none\nevidence: e\n\n"
		       "SRC  DST  PROBES  LOST  P50 US  P99 US  BAD\n"
		       "h0   h7   80      80    -       -       yes\n");
	/* several faults apart: each with its evidence */
	assert_printed(print_probes,
		       "{'window_s': 10, 'op': 'write', 'size': 64, 'hosts': [], 'pairs': [],"
		       " 'finding': {'kind': 'link', 'subject': 'leaf1-spine0', 'evidence': 'e1'},"
		       " 'findings': [{'kind': 'link', 'subject': 'leaf1-spine0', 'evidence': 'e1'},"
		       "              {'kind': 'host', 'subject': 'h5', 'evidence': 'e2'}]}",
		       "pingmesh over 10 s, write 64 B: 0 pairs of 0 hosts\n"
		       "finding:  link leaf1-spine0\nevidence: e1\nfinding:  host h5\nevidence: e2\n\n"
		       "no pair measured in the window\n");
	/* one the PFC detector explains: said under it */
	assert_printed(print_probes,
		       "{'window_s': 10, 'op': 'write', 'size': 64, 'hosts': [], 'pairs': [],"
		       " 'findings': [{'kind': 'tor', 'subject': 'leaf0', 'evidence': 'e1',"
		       "               'attributed_to': {'kind': 'pause_storm', 'subject': 'h7 nic0:1 priority 3'}}]}",
		       "pingmesh over 10 s, write 64 B: 0 pairs of 0 hosts\n"
		       "finding:  tor leaf0\nevidence: e1\n"
		       "attributed to: pause_storm h7 nic0:1 priority 3 (the PFC detector's finding)\n\n"
		       "no pair measured in the window\n");
}

/* When each hold lifts: a storm's after its culprit stops; one that neither end reads now, once
 * readings show it stopped (an operator's trial: "lifts 40 ms after h5:nic0:1 stops pausing"
 * was printed while neither h5 nor the port reported) */
static void test_print_detector_holds(void **state)
{
	(void)state;
	assert_printed(print_detector,
		       "{'config': {'deadlock_mode': 'auto', 'storm_mode': 'auto', 'restore_ms': 40},"
		       " 'interval_ms': 200, 'last_run_ms': 0.5, 'stuck_queues': 0, 'holds': 2, 'findings': [],"
		       " 'lane': {'ports': 24, 'fresh_ports': 17, 'reports_per_s': 40, 'bytes_per_s': 9000,"
		       "   'newest_reading_us': 5000000},"
		       " 'held': [{'node': 'leaf1', 'port': 'h5', 'priority': 3, 'class': 'pause_storm', 'finding': 2,"
		       "   'state': 'in_force', 'since_us': 1, 'until_us': null,"
		       "   'culprit': {'node': 'h5', 'port': 'nic0:1'}},"
		       "  {'node': 'leaf0', 'port': 'h1', 'priority': 3, 'class': 'pause_storm', 'finding': 3,"
		       "   'state': 'in_force', 'since_us': 1, 'until_us': null, 'unread': true,"
		       "   'culprit': {'node': 'h1', 'port': 'nic0:1'}}]}",
		       "deadlocks auto, storms auto, restore 40 ms; every 200 ms (last run 0.5 ms)\n"
		       "fast PFC lane: 24 ports (17 with fresh readings), 40 reports/s, 9000 bytes/s; 0 queues stuck, "
		       "2 held out of lossless mode\n"
		       "  held: leaf1:h5 priority 3 lossy (pause_storm #2, in_force): lifts 40 ms after h5:nic0:1 "
		       "stops pausing\n"
		       "  held: leaf0:h1 priority 3 lossy (pause_storm #3, in_force): lifts once readings show "
		       "h1:nic0:1 stopped pausing (neither it nor this port reads pauses now)\n");
}

static void test_print_detector_config(void **state)
{
	(void)state;
	assert_printed(print_detector, "{'deadlock_mode': 'advise', 'storm_mode': 'auto', 'restore_ms': 20}",
		       "deadlocks advise, storms auto, restore 20 ms\n");
}

/* An acknowledged alert with the operators' mitigations: who, when, the change, why (made
 * printable: an operator's text) */
static void test_print_alert(void **state)
{
	(void)state;
	assert_printed(print_alert,
		       "{'id': 7, 'kind': 'pause_storm', 'subject': 'leaf1:h5', 'state': 'active',"
		       " 'evidence': 'h5 nic0:1 priority 3', 'acked': {'by': 'ops', 'at': '2026-12-05T13:30:00Z'},"
		       " 'mitigations': [{'by': 'ops', 'at': '2026-12-05T13:29:00Z', 'change': 12},"
		       "   {'by': 'noc', 'at': '2026-12-05T13:31:00Z', 'change': 15, 'reason': 'INC-7 \\u001b[2J'}]}",
		       "alert 7 pause_storm leaf1:h5: h5 nic0:1 priority 3 (active)\n"
		       "acknowledged by ops at 2026-12-05T13:30:00Z\n"
		       "mitigated by ops at 2026-12-05T13:29:00Z: change 12\n"
		       "mitigated by noc at 2026-12-05T13:31:00Z: change 15 (INC-7 ?[2J)\n");
	/* one alert of the detector with its details: the storm's source, its victims, the action
	 * to take; an agent's names made printable */
	assert_printed(print_alert,
		       "{'id': 3, 'kind': 'pause_storm', 'subject': 'h7 nic0:1 priority 3', 'state': 'cleared',"
		       " 'evidence': 'pause storm from h\\u001b7', 'first_seen': 'T0', 'last_seen': 'T1',"
		       " 'cleared': 'T2',"
		       " 'acked': null, 'mitigations': [{'by': 'detector', 'op': 'lossless_off', 'at': 'T0', 'change': 4,"
		       "   'reason': 'pause_storm #2: isolating'},"
		       "  {'by': 'detector', 'op': 'restore', 'at': 'T3', 'change': 5, 'reason': 'lossless again'}],"
		       " 'details': {'ports': [{'node': 'leaf0', 'port': 'h7', 'paused_us': 1900, 'tx_bytes': 0,"
		       "   'queue_bytes': 5}], 'victims_total': 8, 'victims': [{'node': 'leaf0', 'port': 'spine0'},"
		       "   {'node': 'spine0', 'port': 'leaf0'}],"
		       "  'suggested': {'node': 'leaf0', 'port': 'h7', 'priority': 3, 'change': 'lossless_off'}}}",
		       "alert 3 pause_storm h7 nic0:1 priority 3: pause storm from h?7 (cleared)\n"
		       "seen T0 .. T1, cleared T2\n"
		       "ports:   leaf0 h7: paused 1900 us, sent 0 bytes, queue 5 bytes\n"
		       "victims: 8, paused behind it: leaf0 spine0, spine0 leaf0\n"
		       "suggested: leaf0 h7 priority 3: lossless_off\n" /* (cleared: no mitigate to do) */
		       "mitigated by detector at T0: change 4 (pause_storm #2: isolating)\n"
		       "restored by detector at T3: change 5 (lossless again)\n"); /* the detector's own */
	/* a slow receiver's source, which sends the pauses, and the switch port it pauses (a trial:
	 * only the source was printed, "paused 0 us") */
	assert_printed(print_alert,
		       "{'id': 6, 'kind': 'slow_receiver', 'subject': 'h5 nic0:1 priority 3', 'state': 'active',"
		       " 'evidence': 'e', 'details': {'ports': [{'node': 'h5', 'port': 'nic0:1', 'paused_us': 0,"
		       "   'tx_bytes': 7, 'queue_bytes': 0}], 'paused': {'node': 'leaf1', 'port': 'h5',"
		       "   'paused_us': 1900, 'tx_bytes': 1200, 'queue_bytes': 5}}}",
		       "alert 6 slow_receiver h5 nic0:1 priority 3: e (active)\n"
		       "source:  h5 nic0:1 (sends the pauses)\n"
		       "pauses:  leaf1 h5: paused 1900 us, sent 1200 bytes, queue 5 bytes\n");
	/* a storm whose source has no readings of its own, read from the switch port it pauses */
	assert_printed(print_alert,
		       "{'id': 7, 'kind': 'pause_storm', 'subject': 'h5 nic0:1 priority 3', 'state': 'active',"
		       " 'evidence': 'e', 'details': {'source_silent': true, 'ports': [{'node': 'h5', 'port': 'nic0:1',"
		       "   'paused_us': 0, 'tx_bytes': 0, 'queue_bytes': 0}], 'paused': {'node': 'leaf1', 'port': 'h5',"
		       "   'paused_us': 200000, 'tx_bytes': 0, 'queue_bytes': 5}}}",
		       "alert 7 pause_storm h5 nic0:1 priority 3: e (active)\n"
		       "source:  h5 nic0:1 (sends the pauses; no readings of its own: read from leaf1 h5; "
		       "check the host and its agent)\n"
		       "pauses:  leaf1 h5: paused 200000 us, sent 0 bytes, queue 5 bytes\n");
	/* a storm kept isolated with neither its source nor the port it paused telling (both agents
	 * gone): no counters are printed as if read */
	assert_printed(print_alert,
		       "{'id': 9, 'kind': 'pause_storm', 'subject': 'h5 nic0:1 priority 3', 'state': 'active',"
		       " 'evidence': 'e', 'details': {'source_silent': true, 'unread': true, 'ports': [{'node': 'h5',"
		       "   'port': 'nic0:1', 'paused_us': 0, 'tx_bytes': 0, 'queue_bytes': 0}],"
		       "   'paused': {'node': 'leaf1', 'port': 'h5', 'paused_us': 0, 'tx_bytes': 0,"
		       "   'queue_bytes': 0}}}",
		       "alert 9 pause_storm h5 nic0:1 priority 3: e (active)\n"
		       "source:  h5 nic0:1 (sends the pauses; no readings from it, nor pause counts from the port it "
		       "paused; check the host, its agent and the switch's agent)\n"
		       "pauses:  leaf1 h5: no pause readings (kept out of lossless mode while nothing read says the "
		       "storm is over)\n");
	/* active, not mitigated yet: how to */
	assert_printed(print_alert,
		       "{'id': 5, 'kind': 'pause_storm', 'subject': 's', 'state': 'active', 'evidence': 'e',"
		       " 'details': {'mitigated': false,"
		       "  'suggested': {'node': 'leaf0', 'port': 'h7', 'priority': 3, 'change': 'lossless_off'}}}",
		       "alert 5 pause_storm s: e (active)\n"
		       "suggested: leaf0 h7 priority 3: lossless_off (rocefabctl mitigate 5)\n");
	/* a pingmesh alert explained by a PFC finding */
	assert_printed(print_alert,
		       "{'id': 4, 'kind': 'tor', 'subject': 'leaf0', 'state': 'active', 'evidence': 'e',"
		       " 'details': {'attributed_to': {'kind': 'pause_storm', 'subject': 'h7 nic0:1 priority 3'}}}",
		       "alert 4 tor leaf0: e (active)\nattributed to: pause_storm h7 nic0:1 priority 3\n");
	/* one raised before the PFC finding came, which may add to it: it goes on */
	assert_printed(print_alert,
		       "{'id': 8, 'kind': 'link', 'subject': 'leaf1-spine0', 'state': 'active', 'evidence': 'e',"
		       " 'details': {'may_add': {'kind': 'pause_storm', 'subject': 'h28 nic0:1 priority 3'}}}",
		       "alert 8 link leaf1-spine0: e (active)\n"
		       "may add to it: pause_storm h28 nic0:1 priority 3 (the PFC detector's finding, found since)\n");
}

static void test_print_health(void **state)
{
	(void)state;
	assert_printed(print_health,
		       "{'status': 'ok', 'version': '1.2.3', 'uptime_s': 12.6,"
		       " 'store': {'path': '/var/lib/rocefab/db.sqlite', 'queue_depth': 0,"
		       "           'queue_max': 4096},"
		       " 'agents': {'total': 3, 'stale': 1},"
		       " 'ingest': {'reports': 120, 'samples': 45000, 'samples_per_s': 1234.56}}",
		       "status:       ok\n"
		       "version:      1.2.3\n"
		       "uptime:       13 s\n"
		       "database:     /var/lib/rocefab/db.sqlite (queue 0 of 4096)\n"
		       "agents:       3 (1 stale)\n"
		       "ingest:       120 reports, 45000 samples, 1235 samples/s\n");
	/* the store's use and retentions in units that say them (2 minutes were "0 h", a budget of
	 * 800 kB "0.8 MB") */
	assert_printed(print_health,
		       "{'status': 'ok', 'version': '1', 'uptime_s': 1, 'store': {'queue_depth': 0, 'queue_max': 1,"
		       " 'used_bytes': 1234567, 'max_bytes': 800000,"
		       " 'retention_s': {'raw': 120, '1m': 7200, '1h': 34560000}},"
		       " 'agents': {'total': 0, 'stale': 0}, 'ingest': {'reports': 0, 'samples': 0, 'samples_per_s': 0}}",
		       "status:       ok\nversion:      1\nuptime:       1 s\ndatabase:     - (queue 0 of 1)\n"
		       "agents:       0 (0 stale)\ningest:       0 reports, 0 samples, 0 samples/s\n"
		       "storage:      1.23 MB in use of 800 kB; kept: raw 2m, minutes 2h, hours 400d\n");
	/* before the first retention pass the size is not known: not a size of 0 */
	assert_printed(print_health,
		       "{'status': 'ok', 'version': '1', 'uptime_s': 1, 'store': {'queue_depth': 0, 'queue_max': 1,"
		       " 'used_bytes': null, 'max_bytes': null,"
		       " 'retention_s': {'raw': 120, '1m': 7200, '1h': 34560000}},"
		       " 'agents': {'total': 0, 'stale': 0}, 'ingest': {'reports': 0, 'samples': 0, 'samples_per_s': 0}}",
		       "status:       ok\nversion:      1\nuptime:       1 s\ndatabase:     - (queue 0 of 1)\n"
		       "agents:       0 (0 stale)\ningest:       0 reports, 0 samples, 0 samples/s\n"
		       "storage:      not measured yet; kept: raw 2m, minutes 2h, hours 400d\n");
}

/* Every command prints text: the version beside rocefabctl's, the topology's nodes and links,
 * the tuner's policy a field a line, a mitigation's change. */
static void test_print_text_not_json(void **state)
{
	(void)state;
	assert_printed(print_version,
		       "{'version': '1.0.0', 'api': 'v1', 'report_schema': 1, 'store_schema': 14, 'counters': 100,"
		       " 'features': {'detector': true, 'tuner': false, 'events': true, 'dashboard': false}}",
		       "rocefabd:   1.0.0 (API v1)\n"
		       "rocefabctl: " ROCEFAB_VERSION "\n"
		       "schemas:    report 1, store 14\n"
		       "counters:   100 in the registry\n"
		       "features:   detector on, tuner off, events on, dashboard off\n");
	assert_printed(print_topology,
		       "{'nodes': [{'id': 'leaf0', 'role': 'switch', 'status': 'ok', 'ports': 2, 'ports_up': 1},"
		       "           {'id': 'h10', 'role': 'host', 'status': 'stale', 'ports': 1, 'ports_up': 0},"
		       "           {'id': 'h9', 'role': 'host', 'status': 'ok', 'ports': 1, 'ports_up': 1}],"
		       " 'links': [{'a': {'node': 'leaf0', 'port': 'h9'}, 'b': {'node': 'h9', 'port': 'nic0:1'},"
		       "            'state': 'up', 'speed_mbps': 100000},"
		       "           {'a': {'node': 'leaf0', 'port': 'h10'}, 'b': {'node': 'h10', 'port': 'nic0:1'},"
		       "            'state': 'down', 'stale': true, 'speed_mbps': null},"
		       "           {'a': {'node': 'leaf0', 'port': 'h11'}, 'b': {'node': 'h11', 'port': 'nic0:1'},"
		       "            'state': 'up', 'stale': true, 'speed_mbps': null}]}",
		       "NODE   ROLE    STATUS  PORTS  UP\n"
		       "h9     host    ok      1      1\n"
		       "h10    host    stale   1      0\n"
		       "leaf0  switch  ok      2      1\n"
		       "\n"
		       "A      PORT  B    PORT    STATE         SPEED\n"
		       "leaf0  h9    h9   nic0:1  up            100 Gb/s\n"
		       "leaf0  h10   h10  nic0:1  down (stale)  -\n"
		       "leaf0  h11   h11  nic0:1  up (stale)    -\n"
		       "\n"
		       "3 nodes, 3 links, 1 up\n"); /* (a stale one is up only as last reported) */
	assert_printed(print_topology, "{'nodes': [], 'links': []}", "no nodes\n\nno links\n\n0 nodes, 0 links, 0 up\n");
	/* the mode first, the host classes last, the rest in the policy's order; sizes said */
	assert_printed(print_cc,
		       "{'pmax_floor': 0.01, 'mode': 'auto', 'kmax_ceiling_bytes': 16000000, 'canary_share': 0.5,"
		       " 'loop_bytes': 150,"
		       " 'host_classes': [{'name': 'gpu', 'hosts': 'gpu*'}, {'name': 's', 'hosts': 's?'}]}",
		       "NAME                VALUE\n"
		       "mode                auto\n"
		       "pmax_floor          0.01\n"
		       "kmax_ceiling_bytes  16000000 (16 MB)\n"
		       "canary_share        0.5\n"
		       "loop_bytes          150\n"
		       "host_classes        gpu: gpu*\n"
		       "                    s: s?\n");
	assert_printed(print_cc, "{'mode': 'off', 'host_classes': []}",
		       "NAME          VALUE\n"
		       "mode          off\n"
		       "host_classes  none (every host is of the class hosts)\n");
	assert_printed(print_mitigation,
		       "{'alert': 3, 'change': 12, 'action': {'id': 1, 'finding': 2, 'class': 'pause_storm',"
		       " 'op': 'lossless_off', 'node': 'leaf1', 'port': 'h5', 'priority': 3, 'reason': 'isolate h5'}}",
		       "alert 3: change 12 queued: lossless_off leaf1 h5 priority 3 (isolate h5)\n"
		       "(rocefabctl changes 12 shows its outcome)\n");
	/* members absent, null or of another type (a rocefabd of another version): "?", no
	 * "(null)", no crash */
	assert_printed(print_version, "{'features': {'tuner': 1}}",
		       "rocefabd:   ? (API ?)\n"
		       "rocefabctl: " ROCEFAB_VERSION "\n"
		       "schemas:    report ?, store ?\n"
		       "counters:   ? in the registry\n"
		       "features:   tuner ?\n");
	assert_printed(print_version, "{}",
		       "rocefabd:   ? (API ?)\nrocefabctl: " ROCEFAB_VERSION "\nschemas:    report ?, store ?\n"
		       "counters:   ? in the registry\nfeatures:   ?\n");
	assert_printed(print_changes, "{'target': null, 'params': 3}",
		       "change:    ? (batch ?): ?\n"
		       "target:    ? ? ?:?\n"
		       "asked:     -\n"
		       "before:    -\n"
		       "read back: -\n"
		       "by:        ? at ?\n"
		       "reason:    -\n"
		       "sent:      never; deadline ?; updated ?\n");
	assert_printed(print_mitigation, "{'action': null}",
		       "alert ?: change ? queued: ? ? ? priority ?\n(rocefabctl changes ? shows its outcome)\n");
	assert_printed(print_links, "{'items': [{'a': null, 'state': 'up'}]}",
		       "A  PORT  B  PORT  STATE  SPEED\n-  -     -  -     up     -\n\n? links, ? up\n");
	/* a policy field that is not a number: as JSON; an answer that is no policy: as it is */
	assert_printed(print_cc, "{'mode': 'auto', 'surprise': true, 'later': {'a': 1}}",
		       "NAME          VALUE\nmode          auto\nsurprise      true\nlater         {\"a\":1}\n"
		       "host_classes  none (every host is of the class hosts)\n");
	assert_printed(print_cc, "{'x': 1}", "{\n  \"x\": 1\n}\n");
}

static void test_print_cc(void **state)
{
	(void)state;
	assert_printed(print_cc,
		       "{'mode': 'advise', 'state': 'stepping', 'interval_ms': 10000, 'decisions': 7, 'steps': 2,"
		       " 'rolled_back': 1, 'proposals_made': 5, 'changes_in_flight': 0, 'signals': {},"
		       " 'settings': {'tor_down': {'kmin_bytes': 400000}},"
		       " 'steps_in_progress': [{'id': 2, 'state': 'waiting', 'class': 'tor_down',"
		       "   'knob': 'kmin_bytes', 'from': 400000, 'to': 200000, 'proposal': 5}]}",
		       "mode advise, stepping; a decision every 10s, 7 so far; 2 steps proposed (1 rolled back), "
		       "5 proposals, "
		       "0 change sets in flight\n"
		       "  tor_down  kmin_bytes=400000 (400 kB)\n"
		       "  step 2 waiting (proposal 5): tor_down kmin_bytes 400000 -> 200000\n");
	/* the signals (links that lost frames); a step going back shows where to; host classes waiting */
	assert_printed(print_cc,
		       "{'mode': 'auto', 'state': 'stepping', 'interval_ms': 10000, 'decisions': 8, 'steps': 3,"
		       " 'rolled_back': 1, 'proposals_made': 7, 'changes_in_flight': 1, 'settings': {},"
		       " 'signals': {'pause_share': 0.0007, 'host_util': 0.52, 'retransmits_per_host': 0.5,"
		       "   'drops_per_port': 0, 'cnp_per_host': 9.25, 'probe_p99_us': 8.42, 'link_errors': 37,"
		       "   'tor_down': {'queue_delay_p90_us': 45.5, 'utilization': 0.5, 'marked_share': 0.139},"
		       "   'host_classes': {'gpu': {'pause_share': 0.001, 'tor_queue_delay_p90_us': 40,"
		       "     'host_util': 0.6, 'cnp_per_host': 12}}},"
		       " 'host_classes_pending': true, 'restoring': true,"
		       " 'empty_host_classes': [{'name': 'storage', 'hosts': 'st-\\u001b[2J*'}],"
		       " 'steps_in_progress': [{'id': 3, 'state': 'rollback', 'class': 'hosts', 'forced': true,"
		       "   'knob': 'min_time_between_cnps', 'from': 4, 'to': 2, 'proposal': 7}]}",
		       "mode auto, stepping; a decision every 10s, 8 so far; 3 steps proposed (1 rolled back), "
		       "7 proposals, "
		       "1 change sets in flight\n"
		       "  restoring: the state saved before this start, if any, comes back at the first decision "
		       "once the agents reported (a step under way then rolls back; the counts of steps and "
		       "rollbacks come back with it)\n"
		       "  signals of the last interval: ports paused 0.070 % of the time; per host 52.0 % of capacity "
		       "sent, 9.25 CNPs, 0.50 retransmissions; 0.00 drops per port; probes' p99 8.4 us; "
		       "links: 37 errors in the fabric (frames lost, carrier changes)\n"
		       "    tor_down  queue delay p90 45.5 us, 13.9 % marked, 50.0 % utilized\n"
		       "    gpu       paused 0.100 %, its ToR ports' queue delay p90 40.0 us, 60.0 % sent, 12.00 CNPs "
		       "per host\n"
		       "  host class storage: no host matches st-?[2J*\n" /* no escape reaches the terminal */
		       "  new host classes wait until no step of a host class is applied in part\n"
		       "  step 3 rolling back (proposal 7): hosts min_time_between_cnps 2 -> 4 (forced)\n");
	/* a move held from every rule for 4 intervals and, unless ports pause, for 12 */
	assert_printed(print_cc,
		       "{'mode': 'auto', 'state': 'idle', 'interval_ms': 10000, 'decisions': 9, 'steps': 1,"
		       " 'rolled_back': 1, 'proposals_made': 2, 'changes_in_flight': 0, 'signals': {}, 'settings': {},"
		       " 'priority': 0, 'lowest_lossless': 4, 'harder_held_for': 'slow_receiver h24',"
		       " 'harder_held_since': '2026-12-07T16:02:03.250Z',"
		       " 'holds': [{'class': 'tor_down', 'knob': 'kmax_bytes', 'direction': 'down', 'intervals': 4},"
		       "   {'class': 'tor_down', 'knob': 'kmax_bytes', 'direction': 'down', 'intervals': 12,"
		       "    'unless_pausing': true}, {'class': 'hosts', 'knob': 'soften', 'intervals': 1}],"
		       " 'relax_to': [{'class': 'tor_up', 'knob': 'pmax', 'value': 0.2}], 'quiet_intervals': 3}",
		       "mode auto, idle, priority 0; a decision every 10s, 9 so far; 1 steps proposed (1 rolled back), "
		       "2 proposals, 0 change sets in flight\n"
		       "  priority 4 is the lowest lossless one: the tuner moves to it once its steps on priority 0 are "
		       "undone (rocefabctl cc rollback)\n"
		       "  no harder step while the fabric has a fault (slow_receiver h24): its pauses are not "
		       "congestion control's to fix\n"
		       "    held since 2026-12-07T16:02:03.250Z\n"
		       "  held back for 4 intervals: tor_down kmax_bytes down\n"
		       "  held back for 12 intervals: tor_down kmax_bytes down (unless ports pause)\n"
		       "  held back for 1 interval: hosts soften\n"
		       "  tor_up pmax goes back toward 0.2 (its value before the moves against pauses) once ports are "
		       "quiet (3 intervals so far)\n");
	assert_printed(print_cc,
		       "[{'id': 3, 'step': 2, 'phase': 'canary', 'state': 'waiting', 'class': 'tor_down',"
		       "  'knob': 'kmin_bytes', 'from': 400000, 'to': 200000, 'changes': [{}, {}],"
		       "  't_us': 1764973267500000, 'reason': 'deep queues'}]",
		       "ID  MADE                   STEP  PHASE   STATE    CLASS     KNOB        FROM    TO      N  "
		       "OUTCOME  BATCH  BY  REASON\n"
		       "3   2025-12-05T22:21:07Z*  2     canary  waiting  tor_down  kmin_bytes  400000  200000  2  "
		       "                    deep queues\n"
		       "MADE*: a record saved before rocefabd kept when it made it: the end of its decision interval, by the "
		       "counters' clock (fabric time in a simulation)\n");
	/* made_at: rocefabd's clock, to the second (t_us is fabric time in a simulation) */
	assert_printed(print_cc,
		       "[{'id': 3, 'step': 2, 'phase': 'canary', 'state': 'waiting', 'class': 'tor_down',"
		       "  'knob': 'kmin_bytes', 'from': 400000, 'to': 200000, 'changes': [{}, {}],"
		       "  't_us': 1764973267500000, 'made_at': '2026-12-06T14:38:22.990450Z', 'reason': 'deep queues'}]",
		       "ID  MADE                  STEP  PHASE   STATE    CLASS     KNOB        FROM    TO      N  "
		       "OUTCOME  BATCH  BY  REASON\n"
		       "3   2026-12-06T14:38:22Z  2     canary  waiting  tor_down  kmin_bytes  400000  200000  2  "
		       "                    deep queues\n");
	/* the history: who decided, and why one was turned down before the evidence */
	assert_printed(print_cc,
		       "[{'id': 3, 'step': 2, 'phase': 'canary', 'state': 'rejected', 'class': 'tor_down',"
		       "  'knob': 'kmin_bytes', 'from': 400000, 'to': 200000, 'changes': [{}], 'decided_by': 'ops',"
		       "  'error': 'the tuner was turned off', 'reason': 'deep queues'},"
		       " {'id': 4, 'step': 3, 'phase': 'rollback', 'state': 'applied', 'class': 'hosts',"
		       "  'knob': 'rpg_ai_rate', 'from': 10, 'to': 5, 'changes': [{}], 'outcome': 'applied',"
		       "  'change_batch': 17, 'decided_by': 'ops', 'reason': 'the tuner was turned off'}]",
		       "ID  MADE  STEP  PHASE     STATE     CLASS     KNOB         FROM    TO      N  OUTCOME  BATCH  "
		       "BY   REASON\n"
		       "3   -     2     canary    rejected  tor_down  kmin_bytes   400000  200000  1                  "
		       "ops  the tuner was turned off; made for: deep queues\n"
		       "4   -     3     rollback  applied   hosts     rpg_ai_rate  10      5       1  applied  17     "
		       "ops  "
		       "the tuner was turned off\n");
	/* withdrawn by the tuner (the policy changed while it waited), not an operator's reject */
	assert_printed(print_cc,
		       "[{'id': 5, 'step': 4, 'phase': 'canary', 'state': 'rejected', 'class': 'tor_up',"
		       "  'knob': 'kmin_bytes', 'from': 4, 'to': 2, 'changes': [{}], 'decided_by': 'ops',"
		       "  'decision_reason': 'night', 'error': 'withdrawn: the policy changed while it waited',"
		       "  'reason': 'deep'}]",
		       "ID  MADE  STEP  PHASE   STATE      CLASS   KNOB        FROM  TO  N  OUTCOME  BATCH  BY   "
		       "REASON\n"
		       "5   -     4     canary  withdrawn  tor_up  kmin_bytes  4     2   1                  ops  "
		       "withdrawn: the policy changed while it waited; ops: night; made for: deep\n");
}

/* --- running a command over a scripted transport --------------------------------------------- */

/* One request the test expects, and the answer (JSON with ') or the error it gets. */
struct exchange {
	const char *method, *path, *answer;
	int err;
	const char *code, *msg;
};

struct fake {
	const struct exchange *x;
	size_t n, next;
};

static int fake_json(void *ctx, const char *method, const char *path, json_t *body, json_t **ret,
		     struct rf_err *e)
{
	struct fake *f = ctx;
	const struct exchange *x;

	if (f->next >= f->n)
		fail_msg("unexpected request %s %s", method, path);
	x = &f->x[f->next++];
	assert_string_equal(method, x->method);
	assert_string_equal(path, x->path);
	assert_int_equal(body != NULL, !strcmp(method, "PUT") || !strcmp(method, "POST"));
	if (x->err)
		return rf_err_set(e, x->err, x->code, NULL, "%s", x->msg);
	*ret = J(x->answer);
	return 0;
}

struct run {
	int rc;
	char *out, *err;
};

/* Builds argv with the options o and runs it over the exchanges, which must all happen. */
static struct run run(const struct cli_opts *o, char **argv, const struct exchange *x, size_t n)
{
	struct fake f = { .x = x, .n = n };
	struct cli_transport t = { .json = fake_json, .ctx = &f };
	struct run r = { 0 };
	struct cli_request req;
	struct rf_err e;
	size_t lo, le;
	FILE *out = open_memstream(&r.out, &lo), *err = open_memstream(&r.err, &le);

	assert_non_null(out);
	assert_non_null(err);
	assert_int_equal(build(o, &req, &e, argv), 0);
	r.rc = cli_run(&req, o, &t, out, err);
	fclose(out);
	fclose(err);
	cli_request_fini(&req);
	assert_int_equal(f.next, n);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void test_run_json_and_errors(void **state)
{
	static const struct exchange version[] = {
		{ .method = "GET",
		  .path = "/api/v1/version",
		  .answer = "{'api': 'v1', 'ratio': 0.1234567890123456}" },
	};
	static const struct exchange health_404[] = {
		{ .method = "GET",
		  .path = "/api/v1/hosts/nobody",
		  .err = -EPROTO,
		  .code = "UNKNOWN_HOST",
		  .msg = "404 no host 'nobody'" },
	};
	struct cli_opts o = { 0 };
	struct run r;

	(void)state;
	/* -j: the JSON, with reals to 16 digits */
	o.json = true;
	r = run(&o, ARGV("version"), version, ARRAY_SIZE(version));
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "{\n  \"api\": \"v1\",\n  \"ratio\": 0.1234567890123456\n}\n");
	assert_string_equal(r.err, "");
	run_free(&r);
	o.json = false;

	r = run(&o, ARGV("hosts", "nobody"), health_404, ARRAY_SIZE(health_404));
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "rocefabctl: 404 no host 'nobody' [UNKNOWN_HOST]\n");
	run_free(&r);
}

/* A policy changed: the answer, then the members the new policy leaves outside (none: nothing
 * more; the status unreadable: said, exit 1). */
static void test_run_cc_policy_shows_outside(void **state)
{
	static const char status_outside[] =
		"{'mode': 'advise', 'outside_policy': {'members': 48, 'first': ["
		"{'node': 'leaf0', 'port': 'h0', 'class': 'tor_down', 'why': 'kmax_bytes 400000: above the policy'},"
		"{'node': 'h\\u001b1', 'class': 'hosts', 'why': 'rpg_ai_rate 5: below the policy'}]}}";
	static const struct exchange outside[] = {
		{ .method = "PUT", .path = "/api/v1/cc/policy", .answer = "{'mode': 'advise', 'pmax_ceiling': 0.3}" },
		{ .method = "GET", .path = "/api/v1/cc", .answer = status_outside },
	};
	static const struct exchange inside[] = {
		{ .method = "PUT", .path = "/api/v1/cc/policy", .answer = "{'mode': 'advise', 'pmax_ceiling': 0.3}" },
		{ .method = "GET", .path = "/api/v1/cc", .answer = "{'outside_policy': {'members': 0, 'first': []}}" },
	};
	static const struct exchange gone[] = {
		{ .method = "PUT", .path = "/api/v1/cc/policy", .answer = "{'mode': 'advise', 'pmax_ceiling': 0.3}" },
		{ .method = "GET", .path = "/api/v1/cc", .err = -EHOSTUNREACH, .code = "SERVER_UNREACHABLE", .msg = "gone" },
	};
	struct cli_opts o = { 0 };
	struct run r, r0;
	const char *tail;

	(void)state;
	r0 = run(&o, ARGV("cc", "policy", "pmax_ceiling=0.3"), inside, ARRAY_SIZE(inside));
	assert_int_equal(r0.rc, 0);
	r = run(&o, ARGV("cc", "policy", "pmax_ceiling=0.3"), outside, ARRAY_SIZE(outside));
	assert_int_equal(r.rc, 0);
	/* the answer as without members outside, then them */
	assert_int_equal(strncmp(r.out, r0.out, strlen(r0.out)), 0);
	tail = r.out + strlen(r0.out);
	assert_string_equal(tail, "\n"
				  "  outside the policy (most of a class at one value is stepped back inside unless the "
				  "tuner is off; members set apart stay): 48\n"
				  "    leaf0:h0 (tor_down): kmax_bytes 400000: above the policy\n"
				  "    h?1 (hosts): rpg_ai_rate 5: below the policy\n"
				  "    ... and 46 more\n");
	run_free(&r);
	run_free(&r0);
	r = run(&o, ARGV("cc", "policy", "pmax_ceiling=0.3"), gone, ARRAY_SIZE(gone));
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "cc: gone"));
	run_free(&r);
	/* --json: the answer alone */
	o.json = true;
	r = run(&o, ARGV("cc", "policy", "pmax_ceiling=0.3"), inside, 1);
	assert_int_equal(r.rc, 0);
	run_free(&r);
}

static void test_run_probes_shows_alerts(void **state)
{
	static const struct exchange with_alert[] = {
		{ .method = "GET",
		  .path = "/api/v1/probes/matrix?window=3s",
		  .answer = matrix_json },
		{ .method = "GET",
		  .path = "/api/v1/alerts?state=active",
		  .answer = "{'items': [{'id': 4, 'state': 'active', 'kind': 'lossy_link',"
			    " 'subject': 'leaf1-spine0', 'first_seen': 'a', 'last_seen': 'b',"
			    " 'evidence': 'loss 5%'}]}" },
	};
	static const struct exchange none[] = {
		{ .method = "GET", .path = "/api/v1/probes/matrix", .answer = matrix_json },
		{ .method = "GET",
		  .path = "/api/v1/alerts?state=active",
		  .answer = "{'items': []}" },
	};
	static const struct exchange alerts_fail[] = {
		{ .method = "GET", .path = "/api/v1/probes/matrix", .answer = matrix_json },
		{ .method = "GET",
		  .path = "/api/v1/alerts?state=active",
		  .err = -EHOSTUNREACH,
		  .code = "SERVER_UNREACHABLE",
		  .msg = "gone" },
	};
	static const struct exchange json_only[] = {
		{ .method = "GET", .path = "/api/v1/probes/matrix", .answer = "{'pairs': []}" },
	};
	struct cli_opts o = { .window = "3s" };
	char want[1024];
	struct run r;

	(void)state;
	r = run(&o, ARGV("probes"), with_alert, ARRAY_SIZE(with_alert));
	assert_int_equal(r.rc, 0);
	snprintf(want, sizeof(want), "%s%s", matrix_txt,
		 "\n"
		 "active alerts: 1\n"
		 "ID  STATE   KIND        SUBJECT       FIRST SEEN  LAST SEEN  EVIDENCE\n"
		 "4   active  lossy_link  leaf1-spine0  a           b          loss 5%\n");
	assert_string_equal(r.out, want);
	run_free(&r);

	o = (struct cli_opts){ 0 };
	r = run(&o, ARGV("probes"), none, ARRAY_SIZE(none));
	assert_int_equal(r.rc, 0);
	snprintf(want, sizeof(want), "%s\nactive alerts: 0\n", matrix_txt);
	assert_string_equal(r.out, want);
	run_free(&r);

	/* the matrix is printed; the alerts' failure is the exit status */
	r = run(&o, ARGV("probes"), alerts_fail, ARRAY_SIZE(alerts_fail));
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, matrix_txt);
	assert_string_equal(r.err, "rocefabctl: alerts: gone [SERVER_UNREACHABLE]\n");
	run_free(&r);

	/* -j: the matrix's JSON only */
	o.json = true;
	r = run(&o, ARGV("probes"), json_only, ARRAY_SIZE(json_only));
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "{\n  \"pairs\": []\n}\n");
	run_free(&r);
}

#define CHANGE(id, st)                                                                             \
	"{'id': " #id ", 'state': '" st "', 'actor': 'ops', 'created': 't', 'params': {},"         \
	" 'target': {'kind': 'ecn', 'agent': 'leaf0', 'role': 'switch', 'port': 'h0',"             \
	" 'queue': 3}}"

static void test_run_set_wait(void **state)
{
	static const struct exchange applied[] = {
		{ .method = "PUT",
		  .path = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn",
		  .answer = "{'batch': 12, 'count': 1, 'changes': [" CHANGE(12, "pending") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=12&limit=10000",
		  .answer = "{'items': [" CHANGE(12, "sent") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=12&limit=10000",
		  .answer = "{'items': [" CHANGE(12, "applied") "]}" },
	};
	static const struct exchange failed[] = {
		{ .method = "POST",
		  .path = "/api/v1/changes",
		  .answer = "{'batch': 5, 'count': 2, 'changes': [" CHANGE(5, "pending") "," CHANGE(
			  6, "pending") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=5&limit=10000",
		  .answer = "{'items': [" CHANGE(5, "applied") "," CHANGE(6, "failed") "]}" },
	};
	static const struct exchange stuck[] = {
		{ .method = "PUT",
		  .path = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn",
		  .answer = "{'batch': 12, 'count': 1, 'changes': [" CHANGE(12, "pending") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=12&limit=10000",
		  .answer = "{'items': [" CHANGE(12, "pending") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=12&limit=10000",
		  .answer = "{'items': [" CHANGE(12, "sent") "]}" },
	};
	static const struct exchange doubt[] = {
		{ .method = "PUT",
		  .path = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn",
		  .answer = "{'batch': 12, 'count': 1, 'changes': [" CHANGE(12, "pending") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=12&limit=10000",
		  .answer = "{'items': [{'id': 12, 'state': 'timed_out', 'in_doubt': true, 'params': {},"
			    " 'target': {'kind': 'ecn', 'agent': 'leaf0', 'role': 'switch', 'port': 'h0', 'queue': 3}}]}" },
	};
	static const struct exchange poll_fails[] = {
		{ .method = "PUT",
		  .path = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn",
		  .answer = "{'batch': 12, 'count': 1, 'changes': [" CHANGE(12, "pending") "]}" },
		{ .method = "GET",
		  .path = "/api/v1/changes?batch=12&limit=10000",
		  .err = -EPROTO,
		  .code = "MISSING_TOKEN",
		  .msg = "401 no token" },
	};
	static const struct exchange no_wait[] = {
		{ .method = "PUT",
		  .path = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn",
		  .answer = "{'batch': 12, 'count': 1, 'changes': [" CHANGE(12, "pending") "]}" },
	};
	static const char head[] = "ID  STATE    KIND  TARGET       PARAMS  BY   CREATED  ERROR  REASON\n";
	struct cli_opts o = { .wait_s = 5 };
	char want[512];
	struct run r;

	(void)state;
	r = run(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), applied, ARRAY_SIZE(applied));
	assert_int_equal(r.rc, 0);
	snprintf(want, sizeof(want), "%s%s", head,
		 "12  applied  ecn   leaf0 h0 q3  {}      ops  t\n");
	assert_string_equal(r.out, want);
	assert_string_equal(r.err, "");
	run_free(&r);

	/* not every change applied: exit 3 */
	r = run(&o, ARGV("set", "ecn", "leaf*", "h0", "3", "pmax=1"), failed, ARRAY_SIZE(failed));
	assert_int_equal(r.rc, 3);
	snprintf(want, sizeof(want), "%s%s%s", head,
		 "5   applied  ecn   leaf0 h0 q3  {}      ops  t\n",
		 "6   failed   ecn   leaf0 h0 q3  {}      ops  t\n");
	assert_string_equal(r.out, want);
	assert_string_equal(r.err, "rocefabctl: not every change was applied (see ERROR)\n");
	run_free(&r);

	/* timed out, perhaps applied: exit 3, said so */
	o.json = true;
	r = run(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), doubt, ARRAY_SIZE(doubt));
	assert_int_equal(r.rc, 3);
	assert_string_equal(r.err, "rocefabctl: 1 change timed out unanswered and may have been applied all the same "
				   "(in doubt until its agent reports again, or an operator who checked the device settles it: "
				   "rocefabctl settle); see rocefabctl changes\n"
				   "rocefabctl: not every change was applied (see ERROR)\n");
	run_free(&r);
	o.json = false;

	/* still open when the time is up: exit 3 (two polls 0.25 s apart cover 0.25 s) */
	o.wait_s = 0.25;
	o.json = true;
	r = run(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), stuck, ARRAY_SIZE(stuck));
	assert_int_equal(r.rc, 3);
	assert_non_null(strstr(r.out, "\"state\": \"sent\""));
	assert_string_equal(r.err, "rocefabctl: 1 change still pending or sent when the wait ended (a change held "
				   "for others shows them: pending (after ...)); see rocefabctl changes\n");
	run_free(&r);

	o.json = false;
	r = run(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), poll_fails,
		ARRAY_SIZE(poll_fails));
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "");
	/* and how to give one */
	assert_string_equal(r.err, "rocefabctl: 401 no token [MISSING_TOKEN]\n"
				   "rocefabctl: give a token with --token-file FILE, $ROCEFAB_TOKEN_FILE or "
				   "$ROCEFAB_TOKEN (rocefabd token add NAME --role viewer makes one)\n");
	run_free(&r);

	/* without --wait: the batch as accepted */
	o.wait_s = 0;
	r = run(&o, ARGV("set", "ecn", "leaf0", "h0", "3", "pmax=1"), no_wait, ARRAY_SIZE(no_wait));
	assert_int_equal(r.rc, 0);
	snprintf(want, sizeof(want), "%s%s", head,
		 "12  pending  ecn   leaf0 h0 q3  {}      ops  t\n");
	assert_string_equal(r.out, want);
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_build_get),
		cmocka_unit_test(test_build_counters),
		cmocka_unit_test(test_build_set),
		cmocka_unit_test(test_build_rejects),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_usage_names_every_own_option),
		cmocka_unit_test(test_usage_of_one_command),
		cmocka_unit_test(test_print_agents),
		cmocka_unit_test(test_print_switch),
		cmocka_unit_test(test_print_counters),
		cmocka_unit_test(test_print_changes),
		cmocka_unit_test(test_print_controls),
		cmocka_unit_test(test_print_host_and_ports),
		cmocka_unit_test(test_print_probes),
		cmocka_unit_test(test_print_detector_holds),
		cmocka_unit_test(test_print_detector_config),
		cmocka_unit_test(test_print_alert),
		cmocka_unit_test(test_print_health),
		cmocka_unit_test(test_print_cc),
		cmocka_unit_test(test_print_text_not_json),
		cmocka_unit_test(test_run_json_and_errors),
		cmocka_unit_test(test_run_cc_policy_shows_outside),
		cmocka_unit_test(test_run_probes_shows_alerts),
		cmocka_unit_test(test_run_set_wait),
		cmocka_unit_test(test_opt_table),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
