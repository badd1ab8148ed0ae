/* Unit tests of rocefabd's side of the congestion-control tuner (daemon/tuner.c) without HTTP:
 * what it believes is set comes from the configuration the agents report, through the store. */
#include <math.h>

#include "daemon/changes.h"
#include "daemon/tuner.h"
#include "tests/unit/daemon-fixture.h"

/* leaf0 with ports h0 and h1 toward hosts h0 and h1; ECN of queue 3 as given per port, and
 * (xoff above 0) priority 3 lossless with that XOFF threshold */
static void report_leaf_pfc(struct fixture *f, json_t *ecn_h0, json_t *ecn_h1, int64_t xoff)
{
	json_t *ports = json_array(), *ecn = json_array(), *pfc = json_array(), *extra;

	for (int p = 0; p < 2; p++) {
		char port[16];
		json_t *e = p ? ecn_h1 : ecn_h0;

		snprintf(port, sizeof(port), "h%d", p);
		json_array_append_new(ports, json_pack("{s:s,s:s,s:I,s:{s:s,s:s}}", "port", port, "state", "up",
						       "speed_mbps", (json_int_t)100000, "neighbor", "system", port,
						       "port", "nic0:1"));
		json_object_set_new(e, "device", json_string("leaf0"));
		json_object_set_new(e, "port", json_string(port));
		json_object_set_new(e, "queue", json_integer(3));
		json_object_set_new(e, "enabled", json_true());
		json_array_append_new(ecn, e);
		if (xoff > 0)
			json_array_append_new(pfc, json_pack("{s:s,s:s,s:i,s:s,s:I}", "device", "leaf0", "port", port,
							     "enable", 8, "mode", "static", "xoff_bytes",
							     (json_int_t)xoff));
	}
	extra = json_pack("{s:{s:o,s:o}}", "config", "ecn", ecn, "pfc", pfc);
	json_decref(fx_report(f, fx_doc(f, "leaf0", "switch", tu_now_ns(),
					json_pack("[{s:s,s:s,s:s,s:o}]", "name", "leaf0", "kind", "switch", "driver",
						  "sim", "ports", ports),
					extra)));
}

static void report_leaf(struct fixture *f, json_t *ecn_h0, json_t *ecn_h1)
{
	report_leaf_pfc(f, ecn_h0, ecn_h1, 0);
}

static void report_host(struct fixture *f, const char *host, json_t *dcqcn)
{
	json_object_set_new(dcqcn, "device", json_string("nic0"));
	json_object_set_new(dcqcn, "port", json_string("1"));
	json_decref(fx_report(f, fx_doc(f, host, "host", tu_now_ns(), fx_host_devices(host, "leaf0"),
					json_pack("{s:{s:[o]}}", "config", "dcqcn", dcqcn))));
}

/* The fast lane as the detector gives it to the tuner: the two links, nothing paused. */
static struct cc_snap *lane(int64_t t_us)
{
	struct cc_snap *s = cc_snap_new(1u << 3, t_us, 100);

	assert_non_null(s);
	cc_snap_node(s, "leaf0", CC_SWITCH);
	for (int h = 0; h < 2; h++) {
		char name[16];
		int x, y;

		snprintf(name, sizeof(name), "h%d", h);
		cc_snap_node(s, name, CC_HOST);
		x = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, name), "nic0:1");
		y = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, "leaf0"), name);
		assert_true(x >= 0 && y >= 0);
		assert_int_equal(cc_snap_link(s, (uint32_t)x, (uint32_t)y), 0);
	}
	for (uint32_t p = 0; p < s->nports; p++) {
		s->ports[p].lossless = 1u << 3;
		s->ports[p].speed_mbps = 100000;
		cc_snap_set(s, p, "prio_tx_bytes", 3, 1000);
		cc_snap_set(s, p, "pfc_rx_pause_duration_us", 3, 0);
	}
	cc_snap_finish(s);
	return s;
}

/* The member of outside_policy named node (and port), NULL when not listed. */
static json_t *outside(json_t *status, const char *node, const char *port)
{
	size_t i;
	json_t *x;

	json_array_foreach(json_object_get(json_object_get(status, "outside_policy"), "first"), i, x)
		if (!strcmp(json_string_value(json_object_get(x, "node")) ?: "", node) &&
		    (!port || !strcmp(json_string_value(json_object_get(x, "port")) ?: "", port)))
			return x;
	return NULL;
}

/* An agent reports a threshold below zero or past any integer (report_parse takes any number):
 * the tuner holds it to a defined range — a value outside its policy, which it lists and
 * moves no further — where the conversion to an unsigned one was undefined (UBSan's
 * float-cast-overflow, the SAN build: an abort; else a wrapped value: Kmin -1 read as 2^64 - 1,
 * "must be below kmax_bytes"). */
static void test_reported_values_out_of_range(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_ADVISE };
	struct tuner *t;
	struct fixture f;
	json_t *st, *x;

	(void)state;
	fx_open(&f);
	report_leaf(&f, json_pack("{s:f,s:f,s:f}", "kmin_bytes", -1.0, "kmax_bytes", 1e300, "pmax", 0.1),
		    json_pack("{s:I,s:I,s:f}", "kmin_bytes", (json_int_t)20000, "kmax_bytes", (json_int_t)400000,
			      "pmax", 0.1));
	report_host(&f, "h0", json_pack("{s:i,s:i,s:i,s:i,s:f,s:f}", "min_time_between_cnps", 4, "rpg_time_reset",
					300, "rpg_ai_rate", 5, "rpg_hai_rate", 50, "rpg_byte_reset", -5.0,
					"dce_tcp_g", 1e300));
	report_host(&f, "h1", json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}", "min_time_between_cnps", 4, "rpg_time_reset",
					300, "rpg_ai_rate", 5, "rpg_hai_rate", 50, "rpg_byte_reset", 32767,
					"dce_tcp_g", 1019));
	store_flush(f.st);
	assert_int_equal(tuner_new(f.st, &o, &t), 0);
	/* the first pass starts the clock, the second takes the saved state back (none), the
	 * third decides (a decision interval of 1 ns: every pass after the first) */
	for (int pass = 0; pass < 3; pass++) {
		struct cc_snap *s = lane(pass * 100);

		tuner_observe(t, s);
		cc_snap_free(s);
		assert_int_equal(tuner_run(t, tu_now_ns()), 0);
	}
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "decisions")), 1);
	x = outside(st, "leaf0", "h0");
	assert_non_null(x);
	assert_non_null(strstr(json_string_value(json_object_get(x, "why")), "below the policy's kmin_floor_bytes"));
	x = outside(st, "h0", NULL);
	assert_non_null(x);
	assert_non_null(strstr(json_string_value(json_object_get(x, "why")), "rpg_byte_reset"));
	assert_null(outside(st, "leaf0", "h1"));
	assert_null(outside(st, "h1", NULL));
	json_decref(st);
	tuner_free(t);
	fx_close(&f);
}

static json_t *ecn(void)
{
	return json_pack("{s:I,s:I,s:f}", "kmin_bytes", (json_int_t)20000, "kmax_bytes", (json_int_t)400000, "pmax",
			 0.5);
}

static json_t *dcqcn(void)
{
	return json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}", "min_time_between_cnps", 4, "rpg_time_reset", 300, "rpg_ai_rate",
			 5, "rpg_hai_rate", 50, "rpg_byte_reset", 32767, "dce_tcp_g", 1019);
}

static void pass(struct tuner *t, int64_t t_us)
{
	struct cc_snap *s = lane(t_us);

	tuner_observe(t, s);
	cc_snap_free(s);
	assert_int_equal(tuner_run(t, tu_now_ns()), 0);
}

/* An operator lowers a switch port's XOFF threshold while a change set of the tuner's is out
 * (its agent has not reported it applied): the tuner sees it at once, where it used to keep
 * every belief of the time before the set went out (an approved canary that the lowered XOFF
 * makes unsafe was sent; cc_tn_sendable checked it against the old threshold). */
static void test_xoff_tracked_while_a_change_is_out(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_ADVISE };
	json_t *st, *v, *p, *why;
	struct rf_err e = { 0 };
	struct tuner *t;
	struct fixture f;
	size_t i;
	int n;

	(void)state;
	fx_open(&f);
	report_leaf_pfc(&f, ecn(), ecn(), 2000000);
	report_host(&f, "h0", dcqcn());
	report_host(&f, "h1", dcqcn());
	store_flush(f.st);
	assert_int_equal(tuner_new(f.st, &o, &t), 0);
	/* a ceiling below the ports' Pmax: the tuner proposes the ToR downlinks back inside */
	v = json_pack("{s:f}", "pmax_ceiling", 0.3);
	assert_int_equal(tuner_set_policy(t, v, "ops", NULL, &e), 0);
	json_decref(v);
	/* (the tuner watches a few intervals before its first move) */
	for (n = 0, v = NULL; n < 20 && !json_array_size(v); n++) {
		json_decref(v);
		pass(t, n * 100);
		v = tuner_proposals(t, false);
	}
	p = NULL;
	json_array_foreach(v, i, st)
		if (!strcmp(json_string_value(json_object_get(st, "class")) ?: "", "tor_down"))
			p = st;
	assert_non_null(p);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "waiting");
	assert_int_equal(tuner_decide(t, (uint64_t)json_integer_value(json_object_get(p, "id")), true, "ops",
				      "repair", &st, &e),
			 0);
	json_decref(st);
	json_decref(v);
	pass(t, n * 100); /* the canary's change set goes out */
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 1);
	json_decref(st);
	/* as asked by the operator, for their reason after the tuner's */
	{
		struct changes_filter cf = { .queue = -2, .limit = 10 };
		struct store_reader *rd = store_reader_get(f.st);
		json_t *ch = NULL, *c0;
		const char *why0;

		assert_non_null(rd);
		assert_int_equal(changes_list(rd, &cf, &ch, &e), 0);
		store_reader_put(f.st, rd);
		assert_int_equal(json_array_size(json_object_get(ch, "items")), 1);
		c0 = json_array_get(json_object_get(ch, "items"), 0);
		assert_string_equal(json_string_value(json_object_get(c0, "actor")), "tuner (asked by ops)");
		why0 = json_string_value(json_object_get(c0, "reason"));
		assert_non_null(strstr(why0, "canary (proposal "));
		assert_string_equal(why0 + strlen(why0) - strlen("; asked by ops: repair"), "; asked by ops: repair");
		json_decref(ch);
	}
	/* the switch reports its XOFF lowered to within loop_bytes (150 KB) of Kmax, not the
	 * canary applied */
	report_leaf_pfc(&f, ecn(), ecn(), 500000);
	store_flush(f.st);
	pass(t, n * 100 + 100);
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 1);
	why = json_object_get(outside(st, "leaf0", "h0") ?: outside(st, "leaf0", "h1"), "why");
	assert_non_null(why);
	assert_non_null(strstr(json_string_value(why), "XOFF"));
	json_decref(st);
	tuner_free(t);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reported_values_out_of_range),
		cmocka_unit_test(test_xoff_tracked_while_a_change_is_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
