/* Unit tests of rocefabd's pingmesh: the plans it makes (rack-mates and a rotating sample of
 * other racks, the endpoints real hosts reported, a plan sent only when the agent runs another
 * one, the configuration's changes followed at once), the results stored and read back, and
 * the localization pass turning a dead host into an alert and /metrics, then clearing it. */
#include "daemon/alerts.h"
#include "lib/buf.h"
#include "lib/probeops.h"
#include "tests/unit/daemon-fixture.h"

static const char *const hosts[] = { "h0", "h1", "h2", "h3", "h4", "h5" };
#define NHOSTS 6

static const char *tor_of(int h)
{
	return h < 3 ? "leaf0" : "leaf1";
}

/* host h reports: its port under its ToR, the plan it runs (NULL: it does not probe), where
 * it answers, its results */
static json_t *host_report(struct fixture *f, int h, int64_t t, const char *plan, json_t *results)
{
	json_t *probes;
	char ep[32];

	if (!plan)
		return fx_report(f, fx_doc(f, hosts[h], "host", t, fx_host_devices(hosts[h], tor_of(h)), NULL));
	snprintf(ep, sizeof(ep), "10.0.0.%d:9770", h + 1);
	probes = json_pack("{s:s,s:s}", "plan", plan, "endpoint", ep);
	if (results)
		json_object_set_new(probes, "results", results);
	return fx_report(f, fx_doc(f, hosts[h], "host", t, fx_host_devices(hosts[h], tor_of(h)),
				    json_pack("{s:o}", "probes", probes)));
}

/* host h reports with its probe endpoint ep and no plan */
static json_t *host_report_at(struct fixture *f, int h, int64_t t, const char *ep)
{
	return fx_report(f, fx_doc(f, hosts[h], "host", t, fx_host_devices(hosts[h], tor_of(h)),
				    json_pack("{s:{s:s,s:s}}", "probes", "plan", "", "endpoint", ep)));
}

static json_t *plan_of(json_t *cmds)
{
	size_t i;
	json_t *c;

	json_array_foreach(cmds, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "kind")), "probe_plan"))
			return c;
	return NULL;
}

static bool has_target(json_t *plan, const char *host)
{
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(json_object_get(plan, "params"), "targets"), i, t)
		if (!strcmp(json_string_value(t), host))
			return true;
	return false;
}

static void test_plans(void **state)
{
	int64_t now = tu_now_ns();
	struct pingmesh_conf c = pingmesh_defaults;
	struct fixture f;
	json_t *cmds, *plan, *params;
	char id[64];

	(void)state;
	fx_open(&f);
	/* every host reports (the ports under their ToRs), then the others with their probe
	 * endpoints (the hosts and ToRs are read then, and again only a few seconds later) */
	for (int h = 0; h < NHOSTS; h++)
		json_decref(host_report(&f, h, now, NULL, NULL));
	for (int h = 1; h < NHOSTS; h++)
		json_decref(host_report(&f, h, now, "", NULL));
	cmds = host_report(&f, 0, now, "", NULL);
	plan = plan_of(cmds);
	assert_non_null(plan);
	params = json_object_get(plan, "params");
	/* rack-mates, and inter_tor (2) hosts of the other rack */
	assert_true(has_target(plan, "h1") && has_target(plan, "h2"));
	assert_false(has_target(plan, "h0"));
	assert_int_equal(json_array_size(json_object_get(params, "targets")), 2 + 2);
	assert_int_equal(json_integer_value(json_object_get(params, "iterations")), 10);
	assert_string_equal(json_string_value(json_array_get(json_object_get(params, "ops"), 0)), "write");
	/* where the targets said they answer */
	assert_string_equal(json_string_value(json_object_get(json_object_get(params, "endpoints"), "h1")),
			    "10.0.0.2:9770");
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(plan, "id")));
	json_decref(cmds);

	/* an agent that runs the plan gets no plan again */
	cmds = host_report(&f, 0, now, id, NULL);
	assert_null(plan_of(cmds));
	json_decref(cmds);

	/* a change of the configuration is followed at once: a new plan */
	c.count = 25;
	c.paths = 4;
	assert_int_equal(pingmesh_conf_save(f.pm, &c, NULL, NULL, NULL), 0);
	cmds = host_report(&f, 0, now, id, NULL);
	plan = plan_of(cmds);
	assert_non_null(plan);
	assert_string_not_equal(json_string_value(json_object_get(plan, "id")), id);
	params = json_object_get(plan, "params");
	assert_int_equal(json_integer_value(json_object_get(params, "iterations")), 25);
	assert_int_equal(json_integer_value(json_object_get(params, "paths")), 4);
	json_decref(cmds);

	/* disabled: a plan without targets */
	c.enabled = false;
	assert_int_equal(pingmesh_conf_save(f.pm, &c, NULL, NULL, NULL), 0);
	cmds = host_report(&f, 0, now, id, NULL);
	plan = plan_of(cmds);
	assert_non_null(plan);
	assert_int_equal(json_array_size(json_object_get(json_object_get(plan, "params"), "targets")), 0);
	json_decref(cmds);

	/* a switch that reports gets no plan */
	cmds = fx_report(&f, fx_doc(&f, "leaf0", "switch", now, json_array(),
				     json_pack("{s:{s:s}}", "probes", "plan", "")));
	assert_null(plan_of(cmds));
	json_decref(cmds);
	fx_close(&f);
}

/* The configuration: validated, unknown fields refused, a change keeps what it does not name. */
/* An endpoint no prober should be sent to (a name, a cloud's metadata address, multicast) is
 * left out of the plans, and the rest of the report is stored: the agent's errors say why (a
 * review: one agent's endpoint 169.254.169.254:80 went into every other host's plan). */
static void test_endpoints_refused(void **state)
{
	static const char *const bad[] = { "169.254.169.254:80", "metadata.internal:80", "239.1.1.1:9770",
					   "0.0.0.0:9770", "[fe80::1]:9770", "[::ffff:169.254.1.1]:80" };
	int64_t now = tu_now_ns();
	struct fixture f;
	json_t *cmds, *params;

	(void)state;
	fx_open(&f);
	for (int h = 0; h < NHOSTS; h++)
		json_decref(host_report(&f, h, now, NULL, NULL));
	for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
		struct store_reader *rd;
		sqlite3_stmt *st;

		json_decref(host_report_at(&f, 1, now, bad[k]));
		json_decref(host_report_at(&f, 2, now, "10.0.0.3:9770"));
		cmds = host_report(&f, 0, now, "", NULL);
		params = json_object_get(plan_of(cmds), "params");
		assert_non_null(params);
		assert_null(json_object_get(json_object_get(params, "endpoints"), "h1"));
		assert_string_equal(json_string_value(json_object_get(json_object_get(params, "endpoints"), "h2")),
				    "10.0.0.3:9770");
		json_decref(cmds);
		store_flush(f.st);
		rd = store_reader_get(f.st);
		st = store_reader_stmt(rd, "SELECT errors FROM agents WHERE id = 'h1'");
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_non_null(strstr((const char *)sqlite3_column_text(st, 0), "PROBE_ENDPOINT_REFUSED"));
		assert_non_null(strstr((const char *)sqlite3_column_text(st, 0), bad[k]));
		sqlite3_reset(st);
		store_reader_put(f.st, rd);
	}
	/* private and loopback addresses pass (these agents are not on the network: the fixture's
	 * reports come from no connection) */
	assert_true(probe_endpoint_address_ok("10.1.2.3", 8) && probe_endpoint_address_ok("[fd00::1]", 9) &&
		    probe_endpoint_address_ok("100.64.0.1", 10) && probe_endpoint_address_ok("127.0.0.5", 9));
	assert_true(probe_endpoint_is_loopback("127.0.0.5", 9) && probe_endpoint_is_loopback("[::1]", 5) &&
		    !probe_endpoint_is_loopback("10.0.0.1", 8));
	fx_close(&f);
}

static void test_conf(void **state)
{
	struct pingmesh_conf c = pingmesh_defaults;
	struct rf_err e = { 0 };
	json_t *j;

	(void)state;
	j = json_pack("{s:[s,s],s:[i,i],s:i}", "ops", "write", "read", "sizes", 64, 65536, "count", 20);
	assert_int_equal(pingmesh_conf_apply(&c, j, &e), 0);
	json_decref(j);
	assert_int_equal(c.nops, 2);
	assert_string_equal(c.ops[1], "read");
	assert_int_equal(c.sizes[1], 65536);
	assert_int_equal(c.count, 20);
	assert_int_equal(c.paths, pingmesh_defaults.paths);
	j = json_pack("{s:[s,s]}", "ops", "write", "write");
	assert_int_equal(pingmesh_conf_apply(&c, j, &e), -EINVAL);
	assert_string_equal(e.where, "/ops");
	json_decref(j);
	j = json_pack("{s:s}", "op", "rdma");
	assert_int_equal(pingmesh_conf_apply(&c, j, &e), -EINVAL);
	assert_non_null(strstr(e.msg, PROBE_OPS_TEXT));
	json_decref(j);
	j = json_pack("{s:i}", "size", 4);
	assert_int_equal(pingmesh_conf_apply(&c, j, &e), -EINVAL);
	json_decref(j);
	j = json_pack("{s:i}", "colour", 4);
	assert_int_equal(pingmesh_conf_apply(&c, j, &e), -EINVAL);
	assert_string_equal(e.code, "UNKNOWN_FIELD");
	json_decref(j);
	/* refused changes changed nothing */
	assert_int_equal(c.nops, 2);
	assert_int_equal(c.count, 20);
	j = pingmesh_conf_json(&c);
	assert_int_equal(json_array_size(json_object_get(j, "sizes")), 2);
	json_decref(j);
}

/* One round of host h: every target over 2 paths; to or from the dead host everything is
 * lost. */
static json_t *round_results(int h, int dead)
{
	json_t *res = json_array();

	for (int d = 0; d < NHOSTS; d++)
		for (int label = 0; label < 2 && d != h; label++) {
			bool lost = h == dead || d == dead;

			json_array_append_new(res, json_pack("{s:s,s:i,s:s,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f}", "target",
							     hosts[d], "label", label, "op", "write", "size", 64, "n",
							     10, "ok", lost ? 0 : 10, "lost", lost ? 10 : 0, "min_us",
							     4.0, "p50_us", 5.0 + d * 0.1, "p99_us", 7.0, "max_us", 8.0));
			if (lost) {
				json_t *it = json_array_get(res, json_array_size(res) - 1);

				json_object_del(it, "min_us");
				json_object_del(it, "p50_us");
				json_object_del(it, "p99_us");
				json_object_del(it, "max_us");
			}
		}
	return res;
}

static json_t *matrix(struct fixture *f, int64_t now)
{
	struct store_reader *rd = store_reader_get(f->st);
	struct rf_err e = { 0 };
	json_t *doc = NULL;

	assert_int_equal(pingmesh_matrix(rd, now, 30 * NSEC_PER_SEC, NULL, 0, true, &doc, &e), 0);
	store_reader_put(f->st, rd);
	return doc;
}

static char *metrics(struct fixture *f)
{
	struct buf b;

	buf_init(&b);
	pingmesh_render_metrics(f->pm, &b);
	return buf_steal(&b, NULL);
}

static void test_results_and_localization(void **state)
{
	int64_t now = tu_now_ns();
	struct fixture f;
	json_t *doc, *fd;
	char *text;

	(void)state;
	fx_open(&f);
	text = metrics(&f);
	assert_true(!text || !*text); /* nothing before the first pass */
	free(text);
	/* the hosts under their ToRs; then two rounds, h4 dead */
	for (int h = 0; h < NHOSTS; h++)
		json_decref(host_report(&f, h, now - 3 * NSEC_PER_SEC, NULL, NULL));
	for (int r = 0; r < 2; r++)
		for (int h = 0; h < NHOSTS; h++)
			json_decref(host_report(&f, h, now - (2 - r) * NSEC_PER_SEC, "", round_results(h, 4)));
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM probe_results"), 2 * NHOSTS * (NHOSTS - 1) * 2);

	doc = matrix(&f, now);
	assert_string_equal(json_string_value(json_object_get(doc, "op")), "write");
	assert_int_equal(json_array_size(json_object_get(doc, "pairs")), NHOSTS * (NHOSTS - 1));
	assert_int_equal(json_array_size(json_object_get(doc, "hosts")), NHOSTS);
	fd = json_object_get(doc, "finding");
	assert_string_equal(json_string_value(json_object_get(fd, "kind")), "host");
	assert_string_equal(json_string_value(json_object_get(fd, "subject")), "h4");
	json_decref(doc);

	/* the pass: an alert, and /metrics */
	assert_int_equal(pingmesh_localize(f.pm, now), 0);
	store_flush(f.st);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE state = 'active' AND kind = 'host' "
				    "AND subject = 'h4'"), 1);
	text = metrics(&f);
	assert_non_null(strstr(text, "rocefab_pingmesh_finding{kind=\"host\",subject=\"h4\"} 1\n"));
	assert_non_null(strstr(text, "rocefab_probe_loss_ratio{src=\"h0\",dst=\"h4\"} 1\n"));
	assert_non_null(strstr(text, "rocefab_probe_p50_seconds{src=\"h0\",dst=\"h1\"} 5.1e-06\n"));
	assert_null(strstr(text, "rocefab_probe_p50_seconds{src=\"h0\",dst=\"h4\"}")); /* nothing came back */
	free(text);

	/* the results one by one, newest first, filtered */
	{
		struct store_reader *rd = store_reader_get(f.st);
		struct rf_err e = { 0 };

		assert_int_equal(pingmesh_results(rd, "h0", "h4", "write", 64, now - 60 * NSEC_PER_SEC, now, 3,
						  &doc, &e), 0);
		store_reader_put(f.st, rd);
		assert_int_equal(json_integer_value(json_object_get(doc, "count")), 3);
		assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "items"), 0), "lost")), 10);
		assert_true(json_is_null(json_object_get(json_array_get(json_object_get(doc, "items"), 0), "p99_us")));
		json_decref(doc);
	}

	/* h4 is back: every result good in the window that the pass reads, the alert clears */
	for (int h = 0; h < NHOSTS; h++)
		json_decref(host_report(&f, h, now + 40 * NSEC_PER_SEC, "", round_results(h, -1)));
	assert_int_equal(pingmesh_localize(f.pm, now + 41 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE state = 'active'"), 0);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE state = 'cleared' AND subject = 'h4'"), 1);
	text = metrics(&f);
	assert_non_null(strstr(text, "rocefab_pingmesh_finding{kind=\"none\",subject=\"\"} 1\n"));
	free(text);
	/* then every host silent: no result in the window, which is no sign of health (it said
	 * kind "none", all well, with nothing probed) */
	assert_int_equal(pingmesh_localize(f.pm, now + 200 * NSEC_PER_SEC), 0);
	text = metrics(&f);
	assert_non_null(strstr(text, "# TYPE rocefab_pingmesh_finding gauge\n"));
	assert_null(strstr(text, "rocefab_pingmesh_finding{"));
	free(text);
	fx_close(&f);
}

/* The tuner's tail signal: the latest p99 per pair of the primary op and size since the last
 * take, a pair whose probes were all lost counting as the timeout, the median over pairs; a
 * report sent twice counts once; each take starts afresh. */
static void test_tail(void **state)
{
	int64_t now = tu_now_ns();
	struct fixture f;
	double p99 = -1;
	size_t n = 0;

	(void)state;
	fx_open(&f);
	for (int h = 0; h < NHOSTS; h++)
		json_decref(host_report(&f, h, now - 4 * NSEC_PER_SEC, NULL, NULL));
	/* before anyone takes it, nothing is kept */
	json_decref(host_report(&f, 0, now - 3 * NSEC_PER_SEC, "", round_results(0, 4)));
	assert_int_equal(pingmesh_take_tail(f.pm, &p99, &n), -ENOENT);
	for (int h = 0; h < NHOSTS; h++) {
		json_t *res = round_results(h, 4), *it;
		size_t i;

		/* p99 10 + h us from host h; other ops and sizes are not the primary ones */
		json_array_foreach(res, i, it)
			if (json_object_get(it, "p99_us"))
				json_object_set_new(it, "p99_us", json_real(10 + h));
		json_array_append_new(res, json_pack("{s:s,s:i,s:s,s:i,s:i,s:i,s:i,s:f}", "target", hosts[(h + 1) % NHOSTS],
						     "label", 0, "op", "read", "size", 64, "n", 10, "ok", 10, "lost", 0,
						     "p99_us", 9999.0));
		json_array_append_new(res, json_pack("{s:s,s:i,s:s,s:i,s:i,s:i,s:i,s:f}", "target", hosts[(h + 1) % NHOSTS],
						     "label", 0, "op", "write", "size", 4096, "n", 10, "ok", 10, "lost", 0,
						     "p99_us", 9999.0));
		json_decref(host_report(&f, h, now - 2 * NSEC_PER_SEC, "", json_deep_copy(res)));
		if (h == 0) /* sent again */
			json_decref(host_report(&f, h, now - 2 * NSEC_PER_SEC, "", json_deep_copy(res)));
		json_decref(res);
	}
	/* 30 pairs: 10 with h4 (lost: the 1000 us timeout), 4 each at 10, 11, 12, 13 and 15 us */
	assert_int_equal(pingmesh_take_tail(f.pm, &p99, &n), 0);
	assert_int_equal(n, NHOSTS * (NHOSTS - 1));
	assert_true(p99 == 13.0);
	assert_int_equal(pingmesh_take_tail(f.pm, &p99, &n), -ENOENT);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_endpoints_refused),
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_results_and_localization),
		cmocka_unit_test(test_tail),
	};

	return cmocka_run_group_tests_name("pingmesh", tests, NULL, NULL);
}
