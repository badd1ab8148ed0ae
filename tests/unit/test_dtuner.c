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

/* The fast lane as the detector gives it to the tuner: the two links, nothing paused,
 * priority prio lossless. */
static struct cc_snap *lane_at(int64_t t_us, unsigned prio)
{
	struct cc_snap *s = cc_snap_new((uint8_t)(1u << prio), t_us, 100);

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
		s->ports[p].lossless = (uint8_t)(1u << prio);
		s->ports[p].speed_mbps = 100000;
		cc_snap_set(s, p, "prio_tx_bytes", prio, 1000);
		cc_snap_set(s, p, "pfc_rx_pause_duration_us", prio, 0);
	}
	cc_snap_finish(s);
	return s;
}

static struct cc_snap *lane(int64_t t_us)
{
	return lane_at(t_us, 3);
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

static void pass_at(struct tuner *t, int64_t t_us, unsigned prio)
{
	struct cc_snap *s = lane_at(t_us, prio);

	tuner_observe(t, s);
	cc_snap_free(s);
	assert_int_equal(tuner_run(t, tu_now_ns()), 0);
}

static void pass(struct tuner *t, int64_t t_us)
{
	pass_at(t, t_us, 3);
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

/* leaf0 of report_leaf_pfc with priority `lossless` lossless (XOFF 2 MB) and ECN on queues 3
 * and 4 of both ports, Pmax pmax[port][queue - 3]: its agent applies the commands it was sent
 * last (cmds, stolen; NULL: none) to pmax and reports so.  The commands of the answer. */
static json_t *leaf_agent(struct fixture *f, unsigned lossless, double pmax[2][2], json_t *cmds)
{
	json_t *ports = json_array(), *ecn = json_array(), *pfc = json_array(), *extra, *c, *results = json_array();
	size_t i;

	json_array_foreach(cmds, i, c) {
		json_t *pa = json_object_get(c, "params");
		int port = !strcmp(json_string_value(json_object_get(pa, "port")) ?: "", "h1");
		int q = (int)json_integer_value(json_object_get(pa, "queue"));

		assert_true(q == 3 || q == 4);
		assert_non_null(json_object_get(pa, "pmax"));
		pmax[port][q - 3] = json_number_value(json_object_get(pa, "pmax"));
		json_array_append_new(results, json_pack("{s:O,s:s}", "id", json_object_get(c, "id"), "outcome",
							 "applied"));
	}
	json_decref(cmds);
	for (int p = 0; p < 2; p++) {
		char port[16];

		snprintf(port, sizeof(port), "h%d", p);
		json_array_append_new(ports, json_pack("{s:s,s:s,s:I,s:{s:s,s:s}}", "port", port, "state", "up",
						       "speed_mbps", (json_int_t)100000, "neighbor", "system", port,
						       "port", "nic0:1"));
		for (int q = 3; q <= 4; q++)
			json_array_append_new(ecn, json_pack("{s:s,s:s,s:i,s:b,s:I,s:I,s:f}", "device", "leaf0", "port",
							     port, "queue", q, "enabled", 1, "kmin_bytes",
							     (json_int_t)20000, "kmax_bytes", (json_int_t)400000, "pmax",
							     pmax[p][q - 3]));
		json_array_append_new(pfc, json_pack("{s:s,s:s,s:i,s:s,s:I}", "device", "leaf0", "port", port, "enable",
						     1 << lossless, "mode", "static", "xoff_bytes", (json_int_t)2000000));
	}
	extra = json_pack("{s:{s:o,s:o},s:o}", "config", "ecn", ecn, "pfc", pfc, "command_results", results);
	c = fx_report(f, fx_doc(f, "leaf0", "switch", tu_now_ns(),
				json_pack("[{s:s,s:s,s:s,s:o}]", "name", "leaf0", "kind", "switch", "driver", "sim",
					  "ports", ports),
				extra));
	store_flush(f->st);
	return c;
}

/* leaf_agent's leaf0 (priority 3 lossless), hosts h0 and h1, and a tuner whose policy's
 * pmax_ceiling of 0.3 puts both of leaf0's ports outside (it steps them back inside). */
static struct tuner *repair_tuner(struct fixture *f, const struct tuner_opts *o, double pmax[2][2])
{
	json_t *v = json_pack("{s:f}", "pmax_ceiling", 0.3);
	struct rf_err e = { 0 };
	struct tuner *t;

	fx_open(f);
	json_decref(leaf_agent(f, 3, pmax, NULL));
	report_host(f, "h0", dcqcn());
	report_host(f, "h1", dcqcn());
	store_flush(f->st);
	assert_int_equal(tuner_new(f->st, o, &t), 0);
	assert_int_equal(tuner_set_policy(t, v, "ops", NULL, &e), 0);
	json_decref(v);
	return t;
}

/* The tuner's priority, and the lowest lossless one it saw last (-1: null). */
static void assert_prio(struct tuner *t, int prio, int lowest)
{
	json_t *st = tuner_status(t), *low;

	assert_int_equal(json_integer_value(json_object_get(st, "priority")), prio);
	low = json_object_get(st, "lowest_lossless");
	assert_int_equal(json_is_null(low) ? -1 : json_integer_value(low), lowest);
	json_decref(st);
}

/* Every change stored is of queue 3: (how many). */
static size_t changes_on_queue_3(struct fixture *f)
{
	struct changes_filter cf = { .queue = -2, .limit = 100 };
	struct store_reader *rd = store_reader_get(f->st);
	struct rf_err e = { 0 };
	json_t *ch = NULL, *c;
	size_t i, n;

	assert_non_null(rd);
	assert_int_equal(changes_list(rd, &cf, &ch, &e), 0);
	store_reader_put(f->st, rd);
	json_array_foreach(json_object_get(ch, "items"), i, c)
		assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "target"), "queue")), 3);
	n = json_array_size(json_object_get(ch, "items"));
	json_decref(ch);
	return n;
}

/* Priority 4 becomes the lowest lossless one while the tuner's step on priority 3 is under way:
 * the step goes on, and is undone, on the queue of priority 3, across a restart (the saved
 * state names the priority), and the tuner moves to priority 4 once nothing of its is left
 * there.  Before, every pass tuned the lowest lossless priority of its snapshot: the canary
 * made for queue 3, and the undo of a step applied there, went to queue 4. */
static void test_priority_kept_while_its_queues_hold_steps(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_ADVISE };
	double pmax[2][2] = { { 0.5, 0.5 }, { 0.5, 0.5 } };
	json_t *v, *p, *st, *cmds;
	struct rf_err e = { 0 };
	struct tuner *t;
	struct fixture f;
	int64_t at = 0;
	size_t i;
	int n;

	(void)state;
	t = repair_tuner(&f, &o, pmax);
	assert_prio(t, 3, -1);
	for (n = 0, v = NULL, p = NULL; n < 20 && !p; n++) {
		json_decref(v);
		pass(t, at += 100);
		v = tuner_proposals(t, false);
		json_array_foreach(v, i, st)
			if (!strcmp(json_string_value(json_object_get(st, "class")) ?: "", "tor_down"))
				p = st;
	}
	assert_non_null(p);
	assert_prio(t, 3, 3);
	/* the waiting canary was made for queue 3: the tuner stays there */
	json_decref(leaf_agent(&f, 4, pmax, NULL));
	pass_at(t, at += 100, 4);
	assert_prio(t, 3, 4);
	assert_int_equal(tuner_decide(t, (uint64_t)json_integer_value(json_object_get(p, "id")), true, "ops", NULL,
				      &st, &e),
			 0);
	json_decref(st);
	json_decref(v);
	pass_at(t, at += 100, 4); /* the canary goes out */
	assert_int_equal(changes_on_queue_3(&f), 1);
	cmds = leaf_agent(&f, 4, pmax, NULL);
	assert_int_equal(json_array_size(cmds), 1);
	json_decref(leaf_agent(&f, 4, pmax, cmds)); /* applied: one port at Pmax 0.3 on queue 3 */
	assert_true(pmax[0][0] == 0.3 || pmax[1][0] == 0.3);
	pass_at(t, at += 100, 4);
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 0);
	assert_int_equal(json_array_size(json_object_get(st, "steps_in_progress")), 1);
	json_decref(st);
	assert_prio(t, 3, 4);
	/* a restart: the step under way is rolled back, on queue 3 (the saved state's priority;
	 * the policy widened first, or Pmax 0.5 would be no value to go back to) */
	v = json_pack("{s:f}", "pmax_ceiling", 1.0);
	assert_int_equal(tuner_set_policy(t, v, "ops", NULL, &e), 0);
	json_decref(v);
	tuner_free(t);
	assert_int_equal(tuner_new(f.st, &o, &t), 0);
	for (n = 0; n < 4 && changes_on_queue_3(&f) < 2; n++)
		pass_at(t, at += 100, 4);
	assert_int_equal(changes_on_queue_3(&f), 2);
	assert_prio(t, 3, 4);
	cmds = leaf_agent(&f, 4, pmax, NULL);
	assert_int_equal(json_array_size(cmds), 1);
	json_decref(leaf_agent(&f, 4, pmax, cmds));
	assert_true(pmax[0][0] == 0.5 && pmax[1][0] == 0.5 && pmax[0][1] == 0.5 && pmax[1][1] == 0.5);
	/* the rollback's outcome starts the decision interval again (what this pass read came
	 * before it: no decision), the next decision ends the step; nothing of the tuner's left
	 * on queue 3: priority 4 from the one after on */
	pass_at(t, at += 100, 4);
	assert_prio(t, 3, 4);
	pass_at(t, at += 100, 4);
	assert_prio(t, 3, 4);
	pass_at(t, at += 100, 4);
	assert_prio(t, 4, 4);
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 0);
	assert_int_equal(json_array_size(json_object_get(st, "steps_in_progress")), 0);
	json_decref(st);
	tuner_free(t);
	fx_close(&f);
}

/* The tor_down proposal of a phase (canary, rollout) in the tuner's list, NULL: none (borrowed
 * from v). */
static json_t *proposal_of(json_t *v, const char *phase)
{
	size_t i;
	json_t *p;

	json_array_foreach(v, i, p)
		if (!strcmp(json_string_value(json_object_get(p, "class")) ?: "", "tor_down") &&
		    !strcmp(json_string_value(json_object_get(p, "phase")) ?: "", phase))
			return p;
	return NULL;
}

/* Passes until the tuner proposes its canary of tor_down (at most 20): the proposals (to
 * decref) and that one in *ret. */
static json_t *first_canary(struct tuner *t, int64_t *at, json_t **ret)
{
	json_t *v = NULL;

	for (int n = 0; n < 20 && !proposal_of(v, "canary"); n++) {
		json_decref(v);
		pass(t, *at += 100);
		v = tuner_proposals(t, false);
	}
	*ret = proposal_of(v, "canary");
	assert_non_null(*ret);
	return v;
}

/* The tor_down canary approved by an operator, sent at the next pass, and applied by leaf0's
 * agent (its Pmax in pmax). */
static void canary_applied(struct tuner *t, struct fixture *f, int64_t *at, double pmax[2][2])
{
	struct rf_err e = { 0 };
	json_t *v, *p, *st, *cmds;

	v = first_canary(t, at, &p);
	assert_int_equal(tuner_decide(t, (uint64_t)json_integer_value(json_object_get(p, "id")), true, "ops", NULL,
				      &st, &e),
			 0);
	json_decref(st);
	json_decref(v);
	pass(t, *at += 100); /* the canary goes out */
	cmds = leaf_agent(f, 3, pmax, NULL);
	assert_int_equal(json_array_size(cmds), 1);
	json_decref(leaf_agent(f, 3, pmax, cmds));
}

/* An operator's change of a switch queue's Pmax, stored, not yet applied. */
static void operator_sets_pmax(struct fixture *f, const char *port, double pmax)
{
	json_t *params = json_pack("{s:f}", "pmax", pmax), *entries = NULL, *entry;
	struct store_reader *rd = store_reader_get(f->st);
	struct rf_err e = { 0 };
	struct change_set cs;
	int64_t batch = 0;
	size_t i;

	assert_non_null(rd);
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	json_decref(params);
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_ECN, "leaf0", NULL, port, 3, &entries, &e), 0);
	json_array_foreach(entries, i, entry)
		assert_int_equal(change_set_add(rd, &cs, "leaf0", entry, &e), 0);
	json_decref(entries);
	assert_int_equal(change_set_check(&cs, true, &e), 0);
	assert_int_equal(change_set_commit(f->st, &cs, "ops", "by hand", tu_now_ns() + 60 * NSEC_PER_SEC, &batch, &e),
			 0);
	change_set_fini(&cs);
	store_reader_put(f->st, rd);
	store_flush(f->st);
}

/* An operator sets a port by hand while the tuner's canary is judged: the tuner sees the
 * change on its way (before the agent reports it), and its rollout leaves that port be.
 * Before, the tuner believed what the agents had reported, and the rollout overwrote the
 * operator's value. */
static void test_rollout_leaves_out_what_an_operator_set(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_ADVISE };
	double pmax[2][2] = { { 0.5, 0.5 }, { 0.5, 0.5 } };
	struct changes_filter cf = { .queue = -2, .limit = 100 };
	json_t *v, *st, *ch = NULL;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct tuner *t;
	struct fixture f;
	int64_t at = 0;
	int n;

	(void)state;
	t = repair_tuner(&f, &o, pmax);
	canary_applied(t, &f, &at, pmax);
	cf.port = pmax[0][0] == 0.3 ? "h1" : "h0"; /* the port the canary left */
	/* the operator sets that port to 0.2 (inside the policy); its agent has not applied it */
	operator_sets_pmax(&f, cf.port, 0.2);
	/* the canary is judged, the step completes */
	for (n = 0, st = NULL; n < 40 && (!st || json_array_size(json_object_get(st, "steps_in_progress"))); n++) {
		json_decref(st);
		pass(t, at += 100);
		st = tuner_status(t);
	}
	assert_int_equal(json_array_size(json_object_get(st, "steps_in_progress")), 0);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 0);
	json_decref(st);
	v = tuner_history(t);
	assert_non_null(proposal_of(v, "rollout"));
	json_decref(v);
	/* nothing of the tuner's went to that port: the operator's change is the only one there */
	rd = store_reader_get(f.st);
	assert_non_null(rd);
	assert_int_equal(changes_list(rd, &cf, &ch, &e), 0);
	store_reader_put(f.st, rd);
	assert_int_equal(json_array_size(json_object_get(ch, "items")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(ch, "items"), 0), "actor")),
			    "ops");
	json_decref(ch);
	tuner_free(t);
	fx_close(&f);
}

static json_int_t decisions(struct tuner *t)
{
	json_t *st = tuner_status(t);
	json_int_t n = json_integer_value(json_object_get(st, "decisions"));

	json_decref(st);
	return n;
}

/* A canary applied: the fast-lane interval read before the tuner heard of it is not judged as
 * the canary's (no decision on it), and the canary is judged on canary_intervals decisions
 * after.  Before, the decision interval the changes went out in counted as the canary's first
 * (a trial: rolled back 0.6 s after it was applied, at a decision every second). */
static void test_a_canary_is_judged_on_intervals_after_it(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_ADVISE };
	double pmax[2][2] = { { 0.5, 0.5 }, { 0.5, 0.5 } };
	struct tuner *t;
	struct fixture f;
	int64_t at = 0;
	json_int_t n0;
	json_t *v;

	(void)state;
	t = repair_tuner(&f, &o, pmax);
	canary_applied(t, &f, &at, pmax);
	n0 = decisions(t);
	pass(t, at += 100); /* applied, heard of after this interval was read: not judged on it */
	assert_int_equal(decisions(t), n0);
	for (int k = 1; k <= 3; k++) {
		v = tuner_proposals(t, false);
		assert_null(proposal_of(v, "rollout"));
		json_decref(v);
		pass(t, at += 100);
		assert_int_equal(decisions(t), n0 + k);
	}
	v = tuner_proposals(t, false); /* judged on its 3 intervals: the rest of the class next */
	assert_non_null(proposal_of(v, "rollout"));
	json_decref(v);
	tuner_free(t);
	fx_close(&f);
}

/* The tuner turned off while a canary's change set is out (auto: sent, its agent has not
 * applied it): the canary is rolled back, and its record says by whom and why.  Before, it had
 * the error but no one behind it (an operator's trial: "rollout rejected", no decided_by). */
static void test_off_while_a_canary_is_out_says_who(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_AUTO };
	double pmax[2][2] = { { 0.5, 0.5 }, { 0.5, 0.5 } };
	json_t *v, *h = NULL, *st;
	struct rf_err e = { 0 };
	struct tuner *t;
	struct fixture f;
	int64_t at = 0;
	size_t i;

	(void)state;
	t = repair_tuner(&f, &o, pmax);
	for (int n = 0; n < 20; n++) {
		pass(t, at += 100);
		st = tuner_status(t);
		i = (size_t)json_integer_value(json_object_get(st, "changes_in_flight"));
		json_decref(st);
		if (i)
			break;
	}
	assert_int_equal(i, 1); /* the canary's set out, not applied */
	v = json_pack("{s:s}", "mode", "off");
	assert_int_equal(tuner_set_policy(t, v, "ops", "stop", &e), 0);
	json_decref(v);
	v = tuner_history(t);
	json_array_foreach(v, i, st)
		if (!strcmp(json_string_value(json_object_get(st, "phase")) ?: "", "canary"))
			h = st;
	assert_non_null(h);
	assert_string_equal(json_string_value(json_object_get(h, "state")), "rejected");
	assert_string_equal(json_string_value(json_object_get(h, "decided_by")), "ops");
	assert_string_equal(json_string_value(json_object_get(h, "decision_reason")), "stop");
	assert_non_null(strstr(json_string_value(json_object_get(h, "error")), "turned off as its changes were on"));
	json_decref(v);
	tuner_free(t);
	fx_close(&f);
}

/* changes_seam's call before each try to store a set: an operator's PFC change to both of
 * leaf0's ports (the setting they have) is stored first, which an ECN change set clashes with. */
struct clash {
	struct fixture *f;
	int calls;
};

static void operator_touches_pfc(void *arg)
{
	struct clash *c = arg;
	json_t *params = json_pack("{s:i}", "enable", 8), *entries = NULL, *entry;
	struct store_reader *rd = store_reader_get(c->f->st);
	struct rf_err e = { 0 };
	struct change_set cs;
	int64_t batch = 0;
	size_t i;

	c->calls++;
	changes_seam.before_try = NULL; /* (its own set is stored without a call) */
	assert_non_null(rd);
	assert_int_equal(change_set_init(&cs, CHANGE_PFC, true, params), 0);
	json_decref(params);
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_PFC, "leaf0", NULL, NULL, -2, &entries, &e), 0);
	json_array_foreach(entries, i, entry)
		assert_int_equal(change_set_add(rd, &cs, "leaf0", entry, &e), 0);
	json_decref(entries);
	assert_int_equal(change_set_commit(c->f->st, &cs, "ops", "by hand", tu_now_ns() + 60 * NSEC_PER_SEC, &batch,
					   &e),
			 0);
	change_set_fini(&cs);
	store_reader_put(c->f->st, rd);
	changes_seam.before_try = operator_touches_pfc;
}

/* The changes in the audit log of that actor. */
static size_t changes_by(struct fixture *f, const char *actor)
{
	struct changes_filter cf = { .queue = -2, .limit = 100 };
	struct store_reader *rd = store_reader_get(f->st);
	struct rf_err e = { 0 };
	json_t *ch = NULL, *c;
	size_t i, n = 0;

	assert_non_null(rd);
	assert_int_equal(changes_list(rd, &cf, &ch, &e), 0);
	store_reader_put(f->st, rd);
	json_array_foreach(json_object_get(ch, "items"), i, c)
		n += !strncmp(json_string_value(json_object_get(c, "actor")) ?: "", actor, strlen(actor));
	json_decref(ch);
	return n;
}

/* No step in progress and no change of the tuner's out. */
static bool idle_tuner(struct tuner *t)
{
	json_t *st = tuner_status(t);
	bool idle = !json_array_size(json_object_get(st, "steps_in_progress")) &&
		    !json_integer_value(json_object_get(st, "changes_in_flight"));

	json_decref(st);
	return idle;
}

/* A repair (Pmax 0.5, outside the policy's ceiling of 0.3, stepped to 0.3) undone by an
 * operator: 0.5 is refused by the policy, so the undo sends nothing.  It is in the answer as
 * decided by the operator and applied, says why, and counts as no rollback; before, it was
 * "approved", then applied with no change and counted (an operator's trial). */
static void test_an_operator_undo_the_policy_refuses_sends_nothing(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_AUTO };
	double pmax[2][2] = { { 0.5, 0.5 }, { 0.5, 0.5 } };
	struct rf_err e = { 0 };
	json_t *st, *ret = NULL, *rb;
	struct tuner *t;
	struct fixture f;
	int64_t at = 0;
	size_t before;
	int n;

	(void)state;
	t = repair_tuner(&f, &o, pmax);
	/* auto: the repair's canary and rollout applied by leaf0's agent until the step is done */
	for (n = 0; n < 60 && !(pmax[0][0] == 0.3 && pmax[1][0] == 0.3 && idle_tuner(t)); n++) {
		pass(t, at += 100);
		json_decref(leaf_agent(&f, 3, pmax, leaf_agent(&f, 3, pmax, NULL)));
	}
	assert_true(pmax[0][0] == 0.3 && pmax[1][0] == 0.3);
	before = changes_by(&f, "tuner");
	st = tuner_status(t);
	n = (int)json_integer_value(json_object_get(st, "rolled_back"));
	json_decref(st);
	assert_int_equal(tuner_rollback(t, "ops", "undo it all", &ret, &e), 0);
	rb = json_array_get(ret, json_array_size(ret) - 1);
	assert_non_null(rb);
	assert_string_equal(json_string_value(json_object_get(rb, "phase")), "rollback");
	assert_string_equal(json_string_value(json_object_get(rb, "state")), "applied");
	assert_string_equal(json_string_value(json_object_get(rb, "decided_by")), "ops");
	assert_int_equal(json_integer_value(json_object_get(rb, "nchanges")), 0);
	assert_non_null(strstr(json_string_value(json_object_get(rb, "reason")),
			       "2 members not taken to 0.5: the policy refuses it (nothing sent)"));
	json_decref(ret);
	pass(t, at += 100);
	assert_int_equal(changes_by(&f, "tuner"), before); /* nothing sent */
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "rolled_back")), n);
	json_decref(st);
	assert_true(pmax[0][0] == 0.3 && pmax[1][0] == 0.3);
	tuner_free(t);
	fx_close(&f);
}


/* A proposal whose targets keep getting other changes while it is stored (409 CHANGED_MEANWHILE
 * after three tries, nothing stored) waits for the tuner's next pass: neither failed (which
 * would roll its step back) nor lost, and is stored then. */
static void test_changed_meanwhile_waits_for_the_next_pass(void **state)
{
	struct tuner_opts o = { .interval_ns = 1, .deadline_ns = 60 * NSEC_PER_SEC, .mode = CC_TN_ADVISE };
	double pmax[2][2] = { { 0.5, 0.5 }, { 0.5, 0.5 } };
	struct rf_err e = { 0 };
	struct fixture f;
	struct clash c = { .f = &f };
	json_t *v, *p, *st;
	struct tuner *t;
	int64_t at = 0;
	uint64_t id;

	(void)state;
	t = repair_tuner(&f, &o, pmax);
	v = first_canary(t, &at, &p);
	id = (uint64_t)json_integer_value(json_object_get(p, "id"));
	json_decref(v);
	assert_int_equal(tuner_decide(t, id, true, "ops", NULL, &st, &e), 0);
	json_decref(st);
	/* every try clashes (a target changed meanwhile is read again on a reader: none on the
	 * writer here) */
	changes_seam = (struct changes_seam){ .before_try = operator_touches_pfc, .arg = &c, .recheck_max = 0 };
	pass(t, at += 100);
	changes_seam = (struct changes_seam){ .recheck_max = CHANGES_RECHECK_MAX };
	assert_int_equal(c.calls, CHANGES_CLASH_TRIES);
	assert_int_equal(changes_by(&f, "tuner"), 0);
	assert_int_equal(changes_by(&f, "ops"), 2 * CHANGES_CLASH_TRIES); /* (two ports each) */
	v = tuner_proposals(t, true);
	p = NULL;
	for (size_t i = 0; i < json_array_size(v); i++)
		if ((uint64_t)json_integer_value(json_object_get(json_array_get(v, i), "id")) == id)
			p = json_array_get(v, i);
	assert_non_null(p);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "approved");
	assert_null(json_object_get(p, "outcome"));
	assert_null(json_object_get(p, "change_batch"));
	json_decref(v);
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "rolled_back")), 0);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 0);
	json_decref(st);
	/* the next pass, nothing in the way: stored, as approved */
	pass(t, at += 100);
	assert_int_equal(changes_by(&f, "tuner"), 1);
	st = tuner_status(t);
	assert_int_equal(json_integer_value(json_object_get(st, "changes_in_flight")), 1);
	json_decref(st);
	tuner_free(t);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reported_values_out_of_range),
		cmocka_unit_test(test_xoff_tracked_while_a_change_is_out),
		cmocka_unit_test(test_priority_kept_while_its_queues_hold_steps),
		cmocka_unit_test(test_rollout_leaves_out_what_an_operator_set),
		cmocka_unit_test(test_a_canary_is_judged_on_intervals_after_it),
		cmocka_unit_test(test_an_operator_undo_the_policy_refuses_sends_nothing),
		cmocka_unit_test(test_off_while_a_canary_is_out_says_who),
		cmocka_unit_test(test_changed_meanwhile_waits_for_the_next_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
