/* Unit tests of the congestion-control tuner (cc/tuner.c) on synthetic snapshots of a small
 * leaf-spine (2 leaves of 4 hosts, 2 spines): the policy's JSON and its refusals, the hard
 * invariants, a move through canary and rollout within max_share per step, a forced bad step
 * rolled back at the canary's verdict and not retried, advise mode waiting for an operator,
 * a change that failed to apply undone, and the operator's rollback of every step. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/snap.h"
#include "cc/tuner.h"
#include "tests/unit/unit.h"

#define PRIO 3
#define IV 100 /* us */
#define MBPS 100000
#define XOFF 3500000

static const struct cc_tn_ecn ecn0 = { 20000, 400000, 0.01 };
static const struct cc_tn_dcqcn dc0 = { 4, 300, 5, 50, 32767, 1019 };

/* What a port shows in an interval: its queue's peak, and the pause its traffic met. */
typedef void (*look_fn)(const char *node, const char *port, uint64_t *peak, uint64_t *pause_us, void *ctx);

static void add_link(struct cc_snap *s, const char *a, const char *pa, const char *b, const char *pb)
{
	int x = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, a), pa);
	int y = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, b), pb);

	assert_true(x >= 0 && y >= 0);
	assert_int_equal(cc_snap_link(s, (uint32_t)x, (uint32_t)y), 0);
}

/* What every host sends, the CNPs it handles and the packets it retransmits per interval (the
 * hosts' own signals). */
static uint64_t host_tx = 300000, host_cnp, host_retx;
/* a switch whose ports report no pause counter (NULL: every port reports it); one whose ports
 * report buf_discards buffer discards an interval, the only ones to report discards (NULL:
 * none) */
static const char *pause_unreported, *discards_reported;
static uint64_t buf_discards = 10, egress_discards;
/* frames lost on the link from spine0 into leaf1 per interval (its bad FCS count), its
 * carrier changes; whether leaf1's port to spine0 is down */
static uint64_t link_crc, link_carrier;
static bool link_down;
/* the host that pauses its switch port (NULL: none), for how long per interval; counted by the
 * switch (its port's pfc_rx_pause_duration_us) or by the host (its own pfc_tx_pause_duration_us) */
static const char *host_pausing;
static uint64_t host_pausing_us;
static bool host_pausing_own;
/* the host whose agent is silent (NULL: none): its port without readings, as rocefabd's
 * snapshot holds it; the host whose agent never reported (NULL: none): not in the snapshot,
 * its switch port's far end unknown */
static const char *host_silent, *host_absent;
/* a host with a second RoCE port, nic1:1, to leaf1's port "<host>-2" (NULL: none); the one
 * switch port host_pausing pauses (NULL: every one facing it) */
static const char *host_dual, *host_pausing_at;

static struct cc_snap *fabric(int64_t t, look_fn look, void *ctx)
{
	struct cc_snap *s = cc_snap_new(1u << PRIO, t, IV);
	char a[32], b[32];

	assert_non_null(s);
	for (int i = 0; i < 2; i++) {
		snprintf(a, sizeof(a), "leaf%d", i);
		cc_snap_node(s, a, CC_SWITCH);
		snprintf(a, sizeof(a), "spine%d", i);
		cc_snap_node(s, a, CC_SWITCH);
	}
	for (int h = 0; h < 8; h++) {
		snprintf(a, sizeof(a), "h%d", h);
		snprintf(b, sizeof(b), "leaf%d", h / 4);
		if (host_absent && !strcmp(a, host_absent)) {
			assert_true(cc_snap_port(s, (uint32_t)cc_snap_find_node(s, b), a) >= 0);
			continue;
		}
		cc_snap_node(s, a, CC_HOST);
		add_link(s, a, "nic0:1", b, a);
		if (host_dual && !strcmp(a, host_dual)) {
			char c[40];

			snprintf(c, sizeof(c), "%s-2", a);
			add_link(s, a, "nic1:1", "leaf1", c);
		}
	}
	for (int l = 0; l < 2; l++)
		for (int sp = 0; sp < 2; sp++) {
			snprintf(a, sizeof(a), "leaf%d", l);
			snprintf(b, sizeof(b), "spine%d", sp);
			add_link(s, a, b, b, a);
		}
	uint64_t *peaks = calloc(s->nports, sizeof(*peaks)), *pauses = calloc(s->nports, sizeof(*pauses));

	assert_true(peaks && pauses);
	for (uint32_t p = 0; p < s->nports; p++) {
		uint32_t q = p;

		peaks[p] = 1000;
		if (look)
			look(s->nodes[s->ports[p].node].name, s->ports[p].name, &peaks[p], &pauses[p], ctx);
		/* an edge link paused is its host paused by the switch (congestion), not the switch
		 * port paused by its host, which would be a host's own fault (host_pausing) */
		if (s->ports[p].peer != CC_NONE && s->nodes[s->ports[s->ports[p].peer].node].kind == CC_HOST &&
		    s->nodes[s->ports[p].node].kind == CC_SWITCH)
			q = s->ports[p].peer;
		if (q != p) { /* (a link paused a half is paused a half whichever side says so) */
			pauses[q] = pauses[q] > pauses[p] ? pauses[q] : pauses[p];
			pauses[p] = 0;
		}
	}
	for (uint32_t p = 0; p < s->nports; p++) {
		const char *node = s->nodes[s->ports[p].node].name;
		uint64_t peak = peaks[p], pause = pauses[p];

		s->ports[p].lossless = 1u << PRIO;
		s->ports[p].speed_mbps = MBPS;
		if (host_silent && !strcmp(node, host_silent)) {
			s->ports[p].silent = true;
			continue;
		}
		if (host_pausing && !host_pausing_own &&
		    (s->ports[p].peer != CC_NONE ? !strcmp(s->nodes[s->ports[s->ports[p].peer].node].name, host_pausing)
						 : host_absent && !strcmp(s->ports[p].name, host_absent)) &&
		    (!host_pausing_at || !strcmp(s->ports[p].name, host_pausing_at)))
			pause += host_pausing_us;
		if (host_pausing && host_pausing_own && !strcmp(node, host_pausing))
			cc_snap_set(s, p, "pfc_tx_pause_duration_us", PRIO, host_pausing_us);
		cc_snap_set(s, p, "prio_tx_bytes", PRIO, 300000);
		cc_snap_set(s, p, "prio_tx_packets", PRIO, 300);
		cc_snap_set(s, p, "ecn_marked_packets", PRIO, peak > 100000 ? 30 : 0);
		if (!pause_unreported || strcmp(node, pause_unreported))
			cc_snap_set(s, p, "pfc_rx_pause_duration_us", PRIO, pause);
		if (discards_reported && !strcmp(node, discards_reported))
		{
			cc_snap_set(s, p, "prio_rx_buf_discards", PRIO, buf_discards);
			cc_snap_set(s, p, "phy_tx_discards", -1, egress_discards);
		}
		if (!strcmp(node, "leaf1") && !strcmp(s->ports[p].name, "spine0")) {
			cc_snap_set(s, p, "phy_rx_crc_errors", -1, link_crc);
			cc_snap_set(s, p, "carrier_changes", -1, link_carrier);
			s->ports[p].down = link_down;
		}
		if (s->nodes[s->ports[p].node].kind == CC_SWITCH) {
			cc_snap_set(s, p, "queue_depth_bytes", PRIO, peak / 2);
			cc_snap_set(s, p, "queue_watermark_periodic_bytes", PRIO, peak);
		} else {
			cc_snap_set(s, p, "tx_bytes", -1, host_tx);
			cc_snap_set(s, p, "rp_cnp_handled", -1, host_cnp);
			cc_snap_set(s, p, "retransmitted_packets", -1, host_retx);
		}
	}
	free(peaks);
	free(pauses);
	cc_snap_finish(s);
	return s;
}

static struct cc_tn *tuner_with(const struct cc_tn_policy *p)
{
	struct cc_snap *s = fabric(0, NULL, NULL);
	struct cc_tn *t = cc_tn_new(p);

	assert_non_null(t);
	for (uint32_t i = 0; i < s->nports; i++) {
		const struct cc_node *n = &s->nodes[s->ports[i].node];

		if (n->kind == CC_SWITCH)
			assert_int_equal(cc_tn_track_port(t, n->name, s->ports[i].name, &ecn0), 0);
		else
			assert_int_equal(cc_tn_track_host(t, n->name, &dc0), 0);
	}
	cc_snap_free(s);
	return t;
}

static struct cc_tn *tuner(enum cc_tn_mode mode)
{
	struct cc_tn_policy p = cc_tn_defaults;

	p.mode = mode;
	return tuner_with(&p);
}

/* An interval; probe_p99_us: the pingmesh's tail latency (< 0: no probes); fault: the one the
 * detector names (cc_tn_input.fault), or NULL. */
static int run_input(struct cc_tn *t, int64_t i, look_fn look, void *ctx, double probe_p99_us, const char *fault)
{
	struct cc_snap *s = fabric(i * IV, look, ctx);
	struct cc_tn_input in = { .snap = s, .prio = PRIO, .xoff_bytes = XOFF, .probe_p99_us = probe_p99_us,
				  .fault = fault };
	int r = cc_tn_run(t, &in);

	cc_snap_free(s);
	assert_true(r >= 0);
	return r;
}

static int run_probed(struct cc_tn *t, int64_t i, look_fn look, void *ctx, double probe_p99_us)
{
	return run_input(t, i, look, ctx, probe_p99_us, NULL);
}

static int run(struct cc_tn *t, int64_t i, look_fn look, void *ctx)
{
	return run_probed(t, i, look, ctx, -1);
}

/* The one proposal to act on now (asserts there is exactly one). */
static struct cc_tn_proposal *one(struct cc_tn *t)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t, &n);

	assert_int_equal(n, 1);
	return v[0];
}

static size_t npending(struct cc_tn *t)
{
	size_t n;

	cc_tn_pending(t, &n);
	return n;
}

static void deep_down(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx);

/* Three intervals of deep ToR downlink queues (the tuner's first window of signals); *i the
 * next interval.  Its one proposal. */
static struct cc_tn_proposal *first_step(struct cc_tn *t, int64_t *i)
{
	for (; *i <= 3; (*i)++)
		run(t, *i, deep_down, NULL);
	return one(t);
}

/* Three quiet intervals (*i the next one), then a forced step of cls's knob to v. */
static void quiet_then_force(struct cc_tn *t, int64_t *i, enum cc_tn_class cls, enum cc_tn_knob knob, double v)
{
	const char *why;

	for (; *i <= 3; (*i)++)
		run(t, *i, NULL, NULL);
	assert_int_equal(cc_tn_force(t, cls, knob, v, &why), 0);
}

static bool tor_down(const char *port)
{
	return port[0] == 'h';
}

/* every ToR downlink's queue peaks at 1 MB (80 us at 100 Gb/s): above the target */
static void deep_down(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	(void)node, (void)pause, (void)ctx;
	if (!strncmp(node, "leaf", 4) && tor_down(port))
		*peak = 1000000;
}

/* A policy under which no switch port the tuner tracks could have a Kmax (its loop_bytes as
 * large as the XOFF thresholds) is one the daemon refuses: it froze every switch class. */
static void test_policy_fits(void **state)
{
	struct cc_tn_policy p = cc_tn_defaults;
	struct cc_tn_ecn ecn = { .kmin_bytes = 5000, .kmax_bytes = 200000, .pmax = 0.01 };
	struct cc_tn *t = cc_tn_new(&p);
	char buf[400];

	(void)state;
	p.loop_bytes = 100000000;
	assert_null(cc_tn_policy_fits(t, &p, buf, sizeof(buf))); /* no port known */
	assert_int_equal(cc_tn_track_port(t, "leaf0", "h1", &ecn), 0);
	assert_int_equal(cc_tn_track_port(t, "leaf0", "spine0", &ecn), 0);
	assert_int_equal(cc_tn_track_xoff(t, "leaf0", "h1", 3670000), 0);
	assert_int_equal(cc_tn_track_xoff(t, "leaf0", "spine0", 3000000), 0);
	assert_non_null(cc_tn_policy_fits(t, &p, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "thresholds are 3000000..3670000 bytes"));
	/* what would leave room: of loop_bytes only, kmin_floor_bytes cannot (a loop_bytes above
	 * every XOFF) */
	assert_non_null(strstr(buf, "some would have one with loop_bytes below 3660000"));
	assert_null(strstr(buf, "or kmin_floor_bytes"));
	p.loop_bytes = 3660000; /* Kmax would be at most kmin_floor_bytes on the larger one */
	assert_non_null(cc_tn_policy_fits(t, &p, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "with loop_bytes below 3660000 or kmin_floor_bytes below 10000"));
	p.loop_bytes = 3659999;
	assert_null(cc_tn_policy_fits(t, &p, buf, sizeof(buf)));
	cc_tn_free(t);
}

static void test_policy_json(void **state)
{
	struct cc_tn_policy p = cc_tn_defaults, q;
	json_t *j = cc_tn_policy_json(&p), *bad;
	char err[200];

	(void)state;
	assert_null(cc_tn_policy_check(&p));
	q = p;
	q.canary_share = 0.9;
	assert_int_equal(cc_tn_policy_from_json(j, &q, err, sizeof(err)), 0);
	assert_memory_equal(&q, &p, sizeof(p));
	json_decref(j);
	q = p;
	static const char *const refused[][2] = {
		{ "{\"surprise\": 1}", "surprise" },
		{ "{\"mode\": \"sometimes\"}", "mode" },
		{ "{\"canary_share\": 0}", "canary_share" },
		{ "{\"max_share\": 0.1}", "max_share" },
		{ "{\"pmax_floor\": 0.5, \"pmax_ceiling\": 0.2}", "/pmax_floor: must not be above pmax_ceiling" },
		/* an ordered pair: the low end named, the order said */
		{ "{\"cnp_gap_min_us\": 10, \"cnp_gap_max_us\": 5}",
		  "/cnp_gap_min_us: must not be above cnp_gap_max_us" },
		{ "{\"ai_min_mbps\": 100}", "/ai_min_mbps: must not be above ai_max_mbps" },
		/* an order broken by the other end of the pair: the field the request sets is named */
		{ "{\"pmax_ceiling\": 0.005}",
		  "/pmax_ceiling: must not be below pmax_floor (0.01 in the policy in force)" },
		{ "{\"canary_share\": 0.9}", "/canary_share: must be at most max_share (0.5 in the policy in force)" },
		{ "{\"kmax_ceiling_bytes\": 5000}",
		  "/kmax_ceiling_bytes: must be above kmin_floor_bytes (10000 in the policy in force)" },
		{ "{\"byte_reset_max\": 0}",
		  "/byte_reset_max: must not be below byte_reset_min (1 in the policy in force)" },
		{ "{\"hai_max_mbps\": 1, \"hai_min_mbps\": 2}", "/hai_min_mbps: must not be above hai_max_mbps" },
		{ "{\"ai_min_mbps\": 40, \"hai_max_mbps\": 30}", "/ai_min_mbps: must not be above hai_max_mbps" },
		{ "{\"host_classes\": [{\"name\": \"a\", \"hosts\": \"x\"}, {\"name\": \"a\", \"hosts\": \"y\"}]}",
		  "/host_classes: the names must differ" },
		{ "{\"canary_intervals\": -1}", "canary_intervals" },
		{ "{\"relax_intervals\": 100001}", "/relax_intervals: must be 0..100000" },
		{ "{\"kmin_floor_bytes\": \"5 parsecs\"}", "/kmin_floor_bytes: '5 parsecs' is not a size" },
		{ "{\"kmin_floor_bytes\": \"99999999TiB\"}", "/kmin_floor_bytes: '99999999TiB' is too large" },
		{ "{\"kmin_floor_bytes\": true}", "/kmin_floor_bytes: must be a whole number of bytes (or a size" },
		{ "{\"kmin_floor_bytes\": -5}",
		  "/kmin_floor_bytes: must be a whole number of bytes (or a size such as \"400KB\"), not negative" },
		{ "{\"canary_intervals\": \"5\"}", "/canary_intervals: must be a whole number" }, /* no size */
		{ "{\"max_factor\": 1}", "max_factor" },
		/* ranges no device takes (every member would be outside, each repair refused) */
		{ "{\"byte_reset_min\": 40000, \"byte_reset_max\": 50000}", "/byte_reset_max: must be in 1..32767" },
		{ "{\"hai_min_mbps\": 1e19, \"hai_max_mbps\": 1e19}", "/hai_min_mbps: must be in 1..1600000" },
		{ "{\"ai_min_mbps\": 0.5}", "/ai_min_mbps: must be in 1..1600000" },
		{ "{\"loop_bytes\": 2199023255552}", "/loop_bytes: must be at most 1099511627776" },
		/* committed rounded, a step to a fractional bound would leave the policy */
		{ "{\"cnp_gap_min_us\": 2.4}", "/cnp_gap_min_us: must be a whole number" },
		{ "{\"hai_max_mbps\": 399.5}", "/hai_max_mbps: must be a whole number" },
		{ "{\"loop_bytes\": 0}", "/loop_bytes: must be at least 1" },
		{ "{\"canary_intervals\": 2.5}", "/canary_intervals: must be a whole number" },
		{ "{\"tabu_intervals\": -3}", "/tabu_intervals: must be a whole number, not negative" },
		/* past any count: the field's range, as for 101 */
		{ "{\"canary_intervals\": 1000000000000}", "/canary_intervals: must be 1..100" },
		{ "{\"tabu_intervals\": 5000000000}", "/tabu_intervals: must be 0..100000" },
		{ "{\"g_max\": 5000000000}", "/g_max: must be in 0..1023" },
		{ "[]", "object" },
	};
	/* byte thresholds up to what the change path takes (1 TiB), an integer taken exactly
	 * (not through a double); the name of an unknown field is a JSON pointer */
	bad = json_loads("{\"kmax_ceiling_bytes\": 9007199254740993}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/kmax_ceiling_bytes: must be at most 1099511627776"));
	json_decref(bad);
	bad = json_loads("{\"kmax_ceiling_bytes\": 1099511627776}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), 0);
	assert_true(q.kmax_ceiling_bytes == 1099511627776ULL);
	json_decref(bad);
	q = p;
	bad = json_loads("{\"a/b~c\": 1}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/a~1b~0c: unknown policy field");
	json_decref(bad);
	/* a policy an older release saved: repaired (loop_bytes 0 its default, ranges inward) */
	bad = json_loads("{\"loop_bytes\": 0, \"ai_min_mbps\": 2.5, \"cnp_gap_max_us\": 9.5, \"mode\": \"off\"}",
			 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), -EINVAL);
	{
		json_t *fixed = cc_tn_policy_repaired(bad);

		assert_non_null(fixed);
		assert_int_equal(cc_tn_policy_from_json(fixed, &q, err, sizeof(err)), 0);
		assert_true(q.loop_bytes == cc_tn_defaults.loop_bytes && q.ai_min_mbps == 3 && q.cnp_gap_max_us == 9 &&
			    q.mode == CC_TN_OFF);
		json_decref(fixed);
	}
	json_decref(bad);
	/* and ranges past what devices take, which the older release took: held to them */
	bad = json_loads("{\"byte_reset_max\": 65535, \"hai_max_mbps\": 2000000, \"kmax_ceiling_bytes\": 2199023255552, "
			 "\"loop_bytes\": 2199023255552}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), -EINVAL);
	{
		json_t *fixed = cc_tn_policy_repaired(bad);

		assert_non_null(fixed);
		assert_int_equal(cc_tn_policy_from_json(fixed, &q, err, sizeof(err)), 0);
		assert_true(q.byte_reset_max == 32767 && q.hai_max_mbps == 1600000 &&
			    q.kmax_ceiling_bytes == 1099511627776ULL && q.loop_bytes == 1099511627776ULL);
		json_decref(fixed);
	}
	json_decref(bad);
	/* a hosts pattern with a '[' left open (matching that name only): escaped, the same match */
	bad = json_loads("{\"host_classes\": [{\"name\": \"gpu\", \"hosts\": \"gpu[1-4[\"}]}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), -EINVAL);
	{
		json_t *fixed = cc_tn_policy_repaired(bad);

		assert_non_null(fixed);
		assert_int_equal(cc_tn_policy_from_json(fixed, &q, err, sizeof(err)), 0);
		assert_string_equal(q.host_classes[0].hosts, "gpu\\[1-4\\[");
		assert_int_equal(fnmatch(q.host_classes[0].hosts, "gpu[1-4[", 0), 0);
		assert_int_not_equal(fnmatch(q.host_classes[0].hosts, "gpu1", 0), 0);
		json_decref(fixed);
	}
	json_decref(bad);
	q = p;
	bad = json_loads("{\"loop_bytes\": 1, \"ai_min_mbps\": 2}", 0, NULL);
	assert_null(cc_tn_policy_repaired(bad)); /* nothing to repair */
	json_decref(bad);
	/* a byte count may be a size, as the change path takes it */
	bad = json_loads("{\"kmin_floor_bytes\": \"5KB\", \"kmax_ceiling_bytes\": \"16MiB\"}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), 0);
	assert_true(q.kmin_floor_bytes == 5000 && q.kmax_ceiling_bytes == 16 << 20);
	json_decref(bad);
	q = p;
	/* a whole number written as a real is one (JSON Schema's integer) */
	bad = json_loads("{\"canary_intervals\": 5.0, \"loop_bytes\": 1e5}", 0, NULL);
	assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), 0);
	assert_int_equal(q.canary_intervals, 5);
	assert_int_equal(q.loop_bytes, 100000);
	json_decref(bad);
	q = p;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		bad = json_loads(refused[i][0], 0, NULL);
		assert_non_null(bad);
		err[0] = 0;
		assert_int_equal(cc_tn_policy_from_json(bad, &q, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, refused[i][1]));
		assert_memory_equal(&q, &p, sizeof(p)); /* nothing changed */
		json_decref(bad);
	}
}

static void test_invariants(void **state)
{
	const struct cc_tn_policy *p = &cc_tn_defaults;
	struct cc_tn_ecn e = ecn0;
	struct cc_tn_dcqcn d = dc0;

	(void)state;
	assert_null(cc_tn_ecn_check(p, &e, XOFF));
	e.kmin_bytes = e.kmax_bytes;
	assert_non_null(strstr(cc_tn_ecn_check(p, &e, XOFF), "below kmax"));
	e = ecn0;
	e.kmax_bytes = XOFF - p->loop_bytes + 1; /* less than one control loop below XOFF */
	assert_non_null(strstr(cc_tn_ecn_check(p, &e, XOFF), "XOFF"));
	assert_null(cc_tn_ecn_check(p, &e, 0)); /* XOFF unknown: not checked */
	e = ecn0;
	e.kmin_bytes = 5000; /* below the policy's floor */
	assert_non_null(cc_tn_ecn_check(p, &e, XOFF));
	e = ecn0;
	e.pmax = 1.5;
	assert_non_null(cc_tn_ecn_check(p, &e, XOFF));
	assert_null(cc_tn_dcqcn_check(p, &d));
	d.rpg_ai_rate_mbps = 100; /* above the HAI rate */
	assert_non_null(cc_tn_dcqcn_check(p, &d));
	d = dc0;
	d.min_time_between_cnps_us = 5000;
	assert_non_null(cc_tn_dcqcn_check(p, &d));
}

/* Applies every pending approved proposal and checks its changes keep the invariants (an undo
 * on a member already outside the policy on another knob: that knob's violation stays). */
static void apply_all(struct cc_tn *t, size_t class_size, size_t *changed)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t, &n);
	struct cc_tn_proposal *copy[16];

	assert_true(n <= 16);
	memcpy(copy, v, n * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		struct cc_tn_proposal *p = copy[i];

		if (p->state == CC_TN_WAITING)
			continue; /* advise mode: an operator's */
		assert_int_equal(p->state, CC_TN_APPROVED);
		if (p->phase != CC_TN_ROLLBACK)
			assert_true(p->nchanges <= (size_t)ceil(cc_tn_get_policy(t)->max_share * (double)class_size));
		for (size_t k = 0; k < p->nchanges; k++)
			if (!p->changes[k].host &&
			    (p->phase != CC_TN_ROLLBACK || !cc_tn_ecn_check(&cc_tn_defaults, &p->changes[k].ecn_from, XOFF)))
				assert_null(cc_tn_ecn_check(&cc_tn_defaults, &p->changes[k].ecn_to, XOFF));
		if (changed)
			*changed += p->nchanges;
		assert_int_equal(cc_tn_applied(t, p->id, CC_TN_OUT_APPLIED), 0);
	}
}

/* The pending proposal of a class and phase (asserts there is one). */
static struct cc_tn_proposal *pending_of(struct cc_tn *t, enum cc_tn_class cls, enum cc_tn_phase phase)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t, &n);

	for (size_t i = 0; i < n; i++)
		if (v[i]->cls == cls && v[i]->phase == phase)
			return v[i];
	fail_msg("no pending %s proposal of phase %d", cc_tn_class_name(cls), (int)phase);
	return NULL;
}

/* Whether step id is over (done or undone). */
static bool step_over(struct cc_tn *t, uint64_t id)
{
	json_t *j = cc_tn_json(t), *x;
	size_t i;
	bool over = true;

	json_array_foreach(json_object_get(j, "steps_in_progress"), i, x)
		if ((uint64_t)json_integer_value(json_object_get(x, "id")) == id)
			over = false;
	json_decref(j);
	return over;
}

static bool idle(struct cc_tn *t)
{
	json_t *j = cc_tn_json(t);
	bool r = !strcmp(json_string_value(json_object_get(j, "state")), "idle");

	json_decref(j);
	return r;
}

struct canary_look {
	struct cc_tn *t;
	bool better; /* the canary's queues are shallower than the rest's */
};

/* Whether proposal p (NULL: none) changes node's port. */
static bool changes_port(const struct cc_tn_proposal *p, const char *node, const char *port)
{
	for (size_t k = 0; p && k < p->nchanges; k++)
		if (!strcmp(p->changes[k].node, node) && !strcmp(p->changes[k].port, port))
			return true;
	return false;
}

static bool in_canary(struct cc_tn *t, const char *node, const char *port)
{
	/* a member of the step's changes so far */
	for (uint64_t id = 1; id < 64; id++) {
		struct cc_tn_proposal *p = cc_tn_find(t, id);

		if (p && p->phase == CC_TN_CANARY && changes_port(p, node, port))
			return true;
	}
	return false;
}

static void canary_look(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	struct canary_look *c = ctx;

	deep_down(node, port, peak, pause, NULL);
	if (in_canary(c->t, node, port)) {
		*peak = c->better ? 300000 : 3000000;
		*pause = c->better ? 0 : IV / 2;
	}
}

/* The canary judged after canary_intervals (canary_look: its queues shallower): the rollout it
 * makes. */
static struct cc_tn_proposal *judged(struct cc_tn *t, int64_t *i, struct canary_look *cl)
{
	struct cc_tn_proposal *p;

	for (unsigned k = 1; k < cc_tn_defaults.canary_intervals; k++)
		assert_int_equal(run(t, (*i)++, canary_look, cl), 0);
	assert_int_equal(run(t, (*i)++, canary_look, cl), 1);
	p = one(t);
	assert_int_equal(p->phase, CC_TN_ROLLOUT);
	return p;
}

/* Every rollout of the step applied, one after the other, until the step is over. */
static void rolled_out(struct cc_tn *t, int64_t *i, struct canary_look *cl, uint64_t step, size_t *changed)
{
	apply_all(t, 8, changed);
	for (int k = 0; k < 20 && !step_over(t, step); k++) {
		run(t, (*i)++, canary_look, cl);
		if (!step_over(t, step))
			apply_all(t, 8, changed);
	}
	assert_true(step_over(t, step));
}

static void test_canary_then_rollout(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_proposal *p;
	struct cc_tn_ecn e;
	size_t changed = 0;
	int64_t i = 1;

	(void)state;
	/* three intervals of signals first */
	assert_int_equal(run(t, i++, deep_down, NULL), 0);
	assert_int_equal(run(t, i++, deep_down, NULL), 0);
	assert_int_equal(run(t, i++, deep_down, NULL), 1);
	p = one(t);
	assert_int_equal(p->phase, CC_TN_CANARY);
	assert_int_equal(p->cls, CC_TN_TOR_DOWN);
	assert_int_equal(p->knob, CC_TN_KMIN);
	assert_true(p->to < p->from && p->to >= p->from / cc_tn_defaults.max_factor); /* one bounded step */
	assert_int_equal(p->nchanges, (size_t)ceil(cc_tn_defaults.canary_share * 8)); /* of 8 downlinks */
	assert_non_null(strstr(p->reason, "queue delay"));
	assert_non_null(p->evidence);
	{
		json_t *j = cc_tn_proposal_json(p);

		assert_int_equal(json_integer_value(json_object_get(j, "nchanges")), p->nchanges);
		assert_int_equal(json_array_size(json_object_get(j, "changes")), p->nchanges);
		json_decref(j);
	}
	apply_all(t, 8, &changed);
	/* a canary of half the class is not the class's setting yet (nor in GET /api/v1/cc) */
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, 20000);
	{
		json_t *j = cc_tn_json(t);

		assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(json_object_get(j, "settings"), "tor_down"), "kmin_bytes")),
				 20000);
		json_decref(j);
	}
	/* judged after canary_intervals: the canary's queues are shallower */
	p = judged(t, &i, &cl);
	rolled_out(t, &i, &cl, p->step, &changed);
	assert_int_equal(changed, 8); /* every downlink once, never more than max_share at a time */
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, 10000);
	cc_tn_class_ecn(t, CC_TN_SPINE, &e);
	assert_int_equal(e.kmin_bytes, 20000); /* the other classes untouched */
	cc_tn_free(t);
}

/* hold_switch (rocefabd's tuned priority is no longer the lowest lossless one): no step of a
 * switch class starts, however deep its queues; let go, the step comes. */
static void test_hold_switch(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	int64_t i = 1;

	(void)state;
	for (; i <= 8; i++) {
		struct cc_snap *s = fabric(i * IV, deep_down, NULL);
		struct cc_tn_input in = { .snap = s, .prio = PRIO, .xoff_bytes = XOFF, .probe_p99_us = -1,
					  .hold_switch = true };

		assert_int_equal(cc_tn_run(t, &in), 0);
		cc_snap_free(s);
	}
	assert_int_equal(npending(t), 0);
	assert_int_equal(run(t, i++, deep_down, NULL), 1);
	assert_int_equal(one(t)->cls, CC_TN_TOR_DOWN);
	cc_tn_free(t);
}

/* A rollout checked again as it is sent (a pass or more after it was made: an operator's
 * approval, its targets changing under it): a member set since it was made, and one whose
 * XOFF threshold now refuses the value, are left out, said in its error; the rest goes. */
static void test_rollout_trimmed_when_sent(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_ecn set = ecn0;
	struct cc_tn_proposal *p;
	size_t changed = 0, n;
	int64_t i = 1;

	(void)state;
	for (; i <= 2; i++)
		assert_int_equal(run(t, i, deep_down, NULL), 0);
	assert_int_equal(run(t, i++, deep_down, NULL), 1);
	apply_all(t, 8, &changed);
	p = judged(t, &i, &cl);
	n = p->nchanges;
	assert_true(n >= 2);
	assert_int_equal(cc_tn_sendable(t, p->id), 0);
	assert_int_equal(p->nchanges, n); /* nothing changed since: all of it */
	assert_string_equal(p->error, "");
	/* an operator sets one member's Kmin; another's XOFF falls to within loop_bytes of Kmax */
	set.kmin_bytes = 15000;
	assert_int_equal(cc_tn_track_port(t, p->changes[0].node, p->changes[0].port, &set), 0);
	assert_int_equal(cc_tn_track_xoff(t, p->changes[1].node, p->changes[1].port, 500000), 0);
	assert_int_equal(cc_tn_sendable(t, p->id), 0);
	assert_int_equal(p->nchanges, n - 2);
	assert_non_null(strstr(p->error, "2 members left out"));
	assert_non_null(strstr(p->error, "kmin_bytes is 15000 now, not 20000"));
	/* the rest goes out; the step completes without the two */
	rolled_out(t, &i, &cl, p->step, &changed);
	assert_int_equal(changed, 6);
	cc_tn_free(t);
}

/* The probes are a safety signal: a step that the canary's queues call good is rolled back
 * when the pingmesh's tail latency blows up while it is under way; without that rise the same
 * step rolls out (the control). */
static void test_probe_p99_rolls_back(void **state)
{
	(void)state;
	for (int blow_up = 0; blow_up < 2; blow_up++) {
		struct cc_tn *t = tuner(CC_TN_AUTO);
		struct canary_look cl = { .t = t, .better = true };
		struct cc_tn_proposal *p;
		size_t changed = 0;
		int64_t i = 1;

		for (int k = 0; k < 2; k++)
			assert_int_equal(run_probed(t, i++, deep_down, NULL, 10), 0);
		assert_int_equal(run_probed(t, i++, deep_down, NULL, 10), 1);
		p = one(t);
		assert_int_equal(p->phase, CC_TN_CANARY);
		apply_all(t, 8, &changed);
		assert_int_equal(run_probed(t, i++, canary_look, &cl, blow_up ? 60 : 11), blow_up);
		if (blow_up) {
			p = one(t);
			assert_int_equal(p->phase, CC_TN_ROLLBACK);
			assert_non_null(strstr(p->reason, "probes' p99 rose from 10.0 us to 60.0 us"));
		} else {
			assert_int_equal(npending(t), 0); /* still judged: nothing unsafe */
			for (unsigned k = 2; k < cc_tn_defaults.canary_intervals; k++)
				assert_int_equal(run_probed(t, i++, canary_look, &cl, 11), 0);
			assert_int_equal(run_probed(t, i++, canary_look, &cl, 11), 1);
			assert_int_equal(one(t)->phase, CC_TN_ROLLOUT);
		}
		cc_tn_free(t);
	}
}

/* The frames links lost while a step is watched (their bad FCS count) explain up to
 * RETX_PER_LOST_FRAME retransmissions each, and an interval in which a link goes down or up
 * (and the next) is left out of the retransmissions and of the drops at egress: the step is
 * not rolled back for them (before, a lossy link rolled back a step).  Without the link's
 * errors the same rise rolls it back; so does a rise beyond what one lost frame explains,
 * drops at egress with lost frames only, and drops at full buffers with a link going down;
 * and a link that went down once is left out for its own intervals only. */
static void test_link_errors_explain_retransmissions(void **state)
{
	static const struct {
		uint64_t crc_before, crc, carrier, discards, egress;
		const char *reason; /* NULL: rolled out */
	} cases[] = {
		{ 0, 0, 0, 0, 0, "retransmissions rose from 0.00 to 100.00 per host per interval" },
		{ 0, 50, 0, 0, 0, NULL },
		{ 50, 50, 0, 0, 0, NULL },
		{ 0, 1, 0, 0, 0, "rose from 0.00 to 100.00 per host per interval (beyond the 32 the frames lost" },
		{ 0, 0, 2, 0, 100, NULL },
		{ 0, 0, 2, 100, 0, "drops rose from 0.00 to 100.00 per port per interval" },
		{ 0, 50, 0, 0, 100, "drops rose from 0.00 to 100.00 per port per interval" },
		{ 0, 0, 0, 0, 100, "drops rose from 0.00 to 100.00 per port per interval" },
	};

	(void)state;
	for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
		struct cc_tn *t = tuner(CC_TN_AUTO);
		struct canary_look cl = { .t = t, .better = true };
		size_t changed = 0;
		int64_t i = 1;

		discards_reported = "leaf0";
		buf_discards = 0;
		link_crc = cases[n].crc_before;
		assert_int_equal(first_step(t, &i)->phase, CC_TN_CANARY);
		apply_all(t, 8, &changed);
		host_retx = 100;
		link_crc = cases[n].crc;
		link_carrier = cases[n].carrier;
		buf_discards = cases[n].discards;
		egress_discards = cases[n].egress;
		if (cases[n].reason) {
			struct cc_tn_proposal *p;

			assert_int_equal(run(t, i++, canary_look, &cl), 1);
			p = one(t);
			assert_int_equal(p->phase, CC_TN_ROLLBACK);
			if (!strstr(p->reason, cases[n].reason))
				fail_msg("case %zu: %s", n, p->reason);
		} else {
			assert_int_equal(judged(t, &i, &cl)->phase, CC_TN_ROLLOUT);
		}
		host_retx = link_crc = link_carrier = egress_discards = 0;
		buf_discards = 10;
		discards_reported = NULL;
		cc_tn_free(t);
	}
	/* one carrier change, in the first interval watched: that one and the next are the
	 * link's, the third is the step's; the link staying down (a port more down than before
	 * the step): all of them are the link's */
	for (int stays_down = 0; stays_down < 2; stays_down++) {
		struct cc_tn *t = tuner(CC_TN_AUTO);
		struct canary_look cl = { .t = t, .better = true };
		size_t changed = 0;
		int64_t i = 1;

		assert_int_equal(first_step(t, &i)->phase, CC_TN_CANARY);
		apply_all(t, 8, &changed);
		host_retx = 100;
		link_carrier = 1;
		link_down = stays_down;
		for (unsigned k = 1; k < cc_tn_defaults.canary_intervals; k++) {
			assert_int_equal(run(t, i++, canary_look, &cl), 0);
			link_carrier = 0;
		}
		assert_int_equal(run(t, i++, canary_look, &cl), 1);
		assert_int_equal(one(t)->phase, stays_down ? CC_TN_ROLLOUT : CC_TN_ROLLBACK);
		if (!stays_down)
			assert_non_null(strstr(one(t)->reason, "retransmissions rose from 0.00 to 100.00 per host"));
		host_retx = 0;
		link_down = false;
		cc_tn_free(t);
	}
}

/* The next process's view of the fabric: the starting values, then every applied change of
 * t's proposals in order (what the agents would report). */
static struct cc_tn *restarted(struct cc_tn *t, uint64_t *max_id)
{
	struct cc_tn *t2 = tuner(CC_TN_AUTO);

	*max_id = 0;
	for (uint64_t id = 1; id < 256; id++) {
		struct cc_tn_proposal *p = cc_tn_find(t, id);

		if (!p)
			continue;
		*max_id = id;
		for (size_t k = 0; p->state == CC_TN_APPLIED && k < p->nchanges; k++) {
			const struct cc_tn_change *c = &p->changes[k];

			if (c->host)
				assert_int_equal(cc_tn_track_host(t2, c->node, &c->dc_to), 0);
			else
				assert_int_equal(cc_tn_track_port(t2, c->node, c->port, &c->ecn_to), 0);
		}
	}
	return t2;
}

/* What a restart of rocefabd keeps: a completed step can still be rolled back, a step under
 * way is rolled back at once on the members it changed, ids go on; a malformed saved state
 * is refused whole. */
static void test_state_across_restart(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO), *t2, *t3;
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_proposal *p;
	uint64_t step1, step2, max_id;
	enum cc_tn_knob knob2;
	double from2, to2;
	size_t n2, k, under;
	json_t *saved, *bad, *st, *x;
	char err[200];
	int64_t i = 1;

	(void)state;
	/* step 1: canary, rollout, done */
	for (k = 0; k < 3; k++)
		run(t, i++, deep_down, NULL);
	step1 = one(t)->step;
	apply_all(t, 8, NULL);
	for (k = 0; k < 30 && !step_over(t, step1); k++) {
		run(t, i++, canary_look, &cl);
		apply_all(t, 8, NULL);
	}
	assert_true(step_over(t, step1));
	/* step 2 (perhaps started by the interval that ended step 1): its canary applied, then
	 * the process stops */
	for (k = 0; k < 10 && idle(t); k++)
		run(t, i++, deep_down, NULL);
	apply_all(t, 8, NULL);
	assert_false(idle(t));
	st = cc_tn_json(t);
	under = json_array_size(json_object_get(st, "steps_in_progress"));
	x = json_array_get(json_object_get(st, "steps_in_progress"), 0);
	assert_string_equal(json_string_value(json_object_get(x, "class")), "tor_down");
	step2 = (uint64_t)json_integer_value(json_object_get(x, "id"));
	assert_int_equal(cc_tn_knob_parse(json_string_value(json_object_get(x, "knob")), &knob2), 0);
	from2 = json_number_value(json_object_get(x, "from"));
	to2 = json_number_value(json_object_get(x, "to"));
	json_decref(st);
	n2 = 0;
	for (uint64_t id = 1; id < 256; id++)
		if ((p = cc_tn_find(t, id)) && p->step == step2 && p->state == CC_TN_APPLIED)
			n2 += p->nchanges;
	assert_true(step2 > step1 && n2 > 0);
	saved = cc_tn_state_json(t);
	assert_non_null(saved);
	/* through text, as rocefabd keeps it */
	{
		char *text = json_dumps(saved, JSON_COMPACT);

		json_decref(saved);
		saved = json_loads(text, 0, NULL);
		free(text);
		assert_non_null(saved);
	}

	t2 = restarted(t, &max_id);
	assert_int_equal(cc_tn_state_load(t2, saved, err, sizeof(err)), (int)under);
	assert_string_equal(err, ""); /* every hold taken back: nothing for the log */
	assert_int_equal(npending(t2), under);
	p = pending_of(t2, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_int_equal(p->state, CC_TN_APPROVED); /* whatever the mode */
	assert_int_equal(p->step, step2);
	assert_true(p->id > max_id);
	assert_int_equal(p->knob, knob2);
	assert_true(p->from == to2 && p->to == from2);
	assert_int_equal(p->nchanges, n2); /* exactly the canary's members */
	assert_non_null(strstr(p->reason, "under way when the tuner stopped"));
	for (k = 0; k < p->nchanges; k++)
		assert_true(cc_tn_knob_get_ecn(&p->changes[k].ecn_to, knob2) == from2);
	/* the class is busy with it until it is applied: no other step, no operator's rollback */
	assert_false(idle(t2));
	assert_int_equal(cc_tn_rollback_all(t2), -EBUSY);
	apply_all(t2, 8, NULL);
	assert_int_equal(run(t2, i++, NULL, NULL), 0); /* a quiet interval: the step ends */
	assert_true(idle(t2));
	/* the completed step is still known: an operator's rollback undoes it on all 8 downlinks */
	assert_int_equal(cc_tn_rollback_all(t2), 1);
	p = one(t2);
	assert_int_equal(p->step, step1);
	assert_int_equal(p->nchanges, 8);
	st = cc_tn_state_json(t2);
	assert_true((uint64_t)json_integer_value(json_object_get(st, "next_step")) > step2);
	json_decref(st);

	/* the same state taken back under a policy that refuses the step's old value (a repair cut
	 * short): its members stay at the new value, and the record says so; no rollback counted
	 * (it read "rolled back" with nothing sent, counted as one) */
	{
		struct cc_tn *t4 = restarted(t, &max_id);
		struct cc_tn_policy q = *cc_tn_get_policy(t4);
		json_t *after;

		if (knob2 == CC_TN_PMAX)
			*(from2 < to2 ? &q.pmax_floor : &q.pmax_ceiling) = to2;
		else if (from2 > to2)
			q.kmax_ceiling_bytes = to2;
		else
			q.kmin_floor_bytes = to2;
		assert_true(knob2 <= CC_TN_PMAX);
		assert_int_equal(cc_tn_set_policy(t4, &q), 0);
		assert_int_equal(cc_tn_state_load(t4, saved, err, sizeof(err)), (int)under);
		p = NULL;
		for (uint64_t id = max_id + 1; id < 256 && !p; id++)
			if ((p = cc_tn_find(t4, id)) && (p->step != step2 || p->phase != CC_TN_ROLLBACK))
				p = NULL;
		assert_non_null(p);
		assert_int_equal(p->nchanges, 0);
		assert_int_equal(p->state, CC_TN_APPLIED);
		assert_null(strstr(p->reason, "rolled back"));
		assert_non_null(strstr(p->reason, "left at"));
		assert_non_null(strstr(p->reason, "a repair cut short"));
		assert_true(idle(t4)); /* over: not shown rolling back until the next decision */
		after = cc_tn_state_json(t4);
		assert_int_equal(json_integer_value(json_object_get(after, "rolled_back")),
				 json_integer_value(json_object_get(saved, "rolled_back")));
		json_decref(after);
		cc_tn_free(t4);
	}

	/* malformed: refused whole, the counters untouched */
	t3 = tuner(CC_TN_AUTO);
	bad = json_pack("{s:i,s:i,s:i,s:i,s:[],s:[{s:i,s:s,s:s,s:f,s:f,s:[]}]}", "next_id", 99, "next_step", 99, "steps",
			1, "rolled_back", 0, "done", "under_way", "step", 1, "class", "nope", "knob", "kmin_bytes", "from",
			1.0, "to", 2.0, "members");
	assert_int_equal(cc_tn_state_load(t3, bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown"));
	st = cc_tn_state_json(t3);
	assert_int_equal(json_integer_value(json_object_get(st, "next_id")), 1);
	json_decref(st);
	json_decref(bad);
	assert_int_equal(cc_tn_state_load(t3, json_object_get(saved, "done"), err, sizeof(err)), -EINVAL);
	/* a host knob saved for a switch class; a counter beyond what JSON numbers hold exactly */
	bad = json_pack("{s:i,s:i,s:i,s:i,s:[{s:i,s:s,s:s,s:f,s:f,s:[]}],s:[]}", "next_id", 9, "next_step", 9, "steps",
			1, "rolled_back", 0, "done", "step", 1, "class", "spine", "knob", "rpg_ai_rate", "from", 5.0, "to",
			10.0, "members", "under_way");
	assert_int_equal(cc_tn_state_load(t3, bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "is not one of class spine"));
	json_decref(bad);
	bad = json_pack("{s:I,s:i,s:i,s:i,s:[],s:[]}", "next_id", (json_int_t)1 << 60, "next_step", 9, "steps", 1,
			"rolled_back", 0, "done", "under_way");
	assert_int_equal(cc_tn_state_load(t3, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	/* holds: not an array, not read (the rest is taken); a host knob held on a switch class,
	 * a direction or a knob unknown, one of a class the policy no longer has: dropped, the
	 * rest taken */
	bad = json_pack("{s:i,s:i,s:i,s:i,s:[],s:[],s:{}}", "next_id", 9, "next_step", 9, "steps", 1, "rolled_back",
			0, "done", "under_way", "holds");
	assert_int_equal(cc_tn_state_load(t3, bad, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "holds are not an array")); /* for rocefabd's log */
	json_decref(bad);
	st = cc_tn_state_json(t3);
	assert_int_equal(json_integer_value(json_object_get(st, "next_id")), 9);
	assert_int_equal(json_array_size(json_object_get(st, "holds")), 0);
	json_decref(st);
	bad = json_pack("{s:i,s:i,s:i,s:i,s:[],s:[],s:[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},"
			"{s:s,s:s,s:s,s:i},{s:s,s:s,s:i},{s:s,s:s,s:s,s:i}]}",
			"next_id", 9, "next_step", 9, "steps", 1, "rolled_back", 0, "done", "under_way", "holds",
			"class", "spine", "knob", "rpg_ai_rate", "direction", "up", "intervals", 5,
			"class", "spine", "knob", "pmax", "direction", "sideways", "intervals", 5,
			"class", "spine", "knob", "kmid_bytes", "direction", "up", "intervals", 5,
			"class", "gone", "knob", "rpg_ai_rate", "direction", "up", "intervals", 5,
			"class", "spine", "knob", "soften", "intervals", 1000000,
			"class", "tor_up", "knob", "kmax_bytes", "direction", "down", "intervals", 7);
	assert_int_equal(cc_tn_state_load(t3, bad, err, sizeof(err)), 0);
	assert_string_equal(err, "4 held-back moves of the saved state not taken back (1 of a class the policy no "
				 "longer has, 3 not read): they may be tried sooner than held");
	json_decref(bad);
	st = cc_tn_json(t3);
	assert_int_equal(json_array_size(json_object_get(st, "holds")), 2);
	/* no longer than the policy holds one now */
	x = json_array_get(json_object_get(st, "holds"), 0);
	assert_string_equal(json_string_value(json_object_get(x, "class")), "tor_up");
	assert_string_equal(json_string_value(json_object_get(x, "direction")), "down");
	assert_int_equal(json_integer_value(json_object_get(x, "intervals")), 7);
	x = json_array_get(json_object_get(st, "holds"), 1);
	assert_string_equal(json_string_value(json_object_get(x, "knob")), "soften");
	assert_int_equal(json_integer_value(json_object_get(x, "intervals")), 2 * cc_tn_defaults.tabu_intervals);
	json_decref(st);
	/* saved on a clock of tens of intervals: the saved state does not change every interval */
	st = cc_tn_state_json(t3);
	x = json_array_get(json_object_get(st, "holds"), 0);
	assert_int_equal(json_integer_value(json_object_get(x, "intervals")), 10);
	json_decref(st);
	json_decref(saved);
	cc_tn_free(t3);
	cc_tn_free(t2);
	cc_tn_free(t);
}


/* the edge links of h0..h3 (leaf0's downlinks): deep queues, paused half the time */
static void leaf0_paused(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	(void)ctx;
	if (!strcmp(node, "leaf0") && tor_down(port)) {
		*peak = 1000000;
		*pause = IV / 2;
	}
}

static const struct cc_tn_proposal *pending_class(struct cc_tn *t, enum cc_tn_class c)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t, &n);

	for (size_t i = 0; i < n; i++)
		if (v[i]->cls == c)
			return v[i];
	return NULL;
}

static bool pending_classes(struct cc_tn *t)
{
	json_t *j = cc_tn_json(t);
	bool r = json_is_true(json_object_get(j, "host_classes_pending"));

	json_decref(j);
	return r;
}

/* How many members the tuner lists outside its policy. */
static json_int_t outside_members(struct cc_tn *t)
{
	json_t *j = cc_tn_json(t);
	json_int_t n = json_integer_value(json_object_get(json_object_get(j, "outside_policy"), "members"));

	json_decref(j);
	return n;
}

static double class_json(struct cc_tn *t, const char *cls, const char *knob)
{
	json_t *j = cc_tn_json(t);
	json_t *v = json_object_get(json_object_get(json_object_get(j, "settings"), cls), knob);
	double r = v ? json_number_value(v) : NAN;

	json_decref(j);
	return r;
}

/* A harder step kept on a class holds the class's softening moves for twice tabu_intervals
 * (the load that called for it may come back; a softening right after works against it and
 * keeps the settings moving): the hosts' CNPs come sooner against pauses, then the fabric is
 * quiet while the hosts are busy and cut back often (the softening rule's signals): their
 * first softening move waits until the hold ends, and comes then. */
static void test_no_softening_after_a_harder_step(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	const struct cc_tn_proposal *p;
	int64_t i = 1, done_at = 0, soft_at = 0;
	uint64_t step;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, leaf0_paused, NULL);
	p = pending_class(t, CC_TN_HOSTS);
	assert_non_null(p);
	assert_int_equal(p->knob, CC_TN_CNP_GAP);
	assert_true(p->to < p->from);
	step = p->step;
	apply_all(t, 8, NULL);
	host_tx = 1000000; /* 80 % of 100 Gb/s */
	host_cnp = 10;
	for (; i < 200 && !soft_at; i++) {
		if (done_at && i == done_at + 10) {
			/* rocefabd restarts within the hold: the next process keeps it (and the
			 * tabu on undoing the step), through the saved state's text */
			json_t *saved = cc_tn_state_json(t), *o;
			char *text = json_dumps(saved, JSON_COMPACT), err[200];
			struct cc_tn *t2;
			uint64_t max_id;
			size_t k, held = 0;

			json_decref(saved);
			saved = json_loads(text, 0, NULL);
			free(text);
			json_array_foreach(json_object_get(saved, "holds"), k, o) {
				json_int_t left = json_integer_value(json_object_get(o, "intervals")),
					   tabu = cc_tn_defaults.tabu_intervals;

				if (strcmp(json_string_value(json_object_get(o, "class")), "hosts"))
					continue;
				if (!strcmp(json_string_value(json_object_get(o, "knob")), "soften"))
					held += left > tabu && left <= 2 * tabu;
				else
					held += left > 0 && left <= tabu &&
						!strcmp(json_string_value(json_object_get(o, "direction")), "up");
			}
			assert_int_equal(held, 2); /* the softening hold, min_time_between_cnps up */
			t2 = restarted(t, &max_id);
			assert_int_equal(cc_tn_state_load(t2, saved, err, sizeof(err)), 0);
			json_decref(saved);
			cc_tn_free(t);
			t = t2;
		}
		run(t, i, NULL, NULL);
		if (!done_at && step_over(t, step))
			done_at = i;
		p = pending_class(t, CC_TN_HOSTS);
		if (p && p->phase == CC_TN_CANARY)
			soft_at = i;
		apply_all(t, 8, NULL);
	}
	host_tx = 300000;
	host_cnp = 0;
	assert_int_equal(class_json(t, "hosts", "min_time_between_cnps"), 2); /* the step was kept */
	assert_true(done_at > 0 && soft_at > 0);
	assert_true(p->knob == CC_TN_AI_RATE && p->to > p->from);
	assert_true(soft_at >= done_at + 2 * (int64_t)cc_tn_defaults.tabu_intervals);
	/* the restart may lengthen the hold (saved on a clock of tens), within the policy's 60 */
	assert_true(soft_at <= done_at + 2 * (int64_t)cc_tn_defaults.tabu_intervals + 10);
	cc_tn_free(t);
}

/* Holds saved on a clock of tens of intervals shared by all: however many there are, started
 * when, the saved state changes for them only when the interval count passes a ten. */
static void test_holds_saved_together(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	json_t *doc, *st;
	char err[200], *was = NULL;
	int changes = 0;

	(void)state;
	doc = json_pack("{s:i,s:i,s:i,s:i,s:[],s:[],s:[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},{s:s,s:s,s:i}]}", "next_id",
			1, "next_step", 1, "steps", 0, "rolled_back", 0, "done", "under_way", "holds", "class", "tor_up",
			"knob", "kmax_bytes", "direction", "down", "intervals", 7, "class", "spine", "knob", "pmax",
			"direction", "up", "intervals", 13, "class", "hosts", "knob", "soften", "intervals", 25);
	assert_int_equal(cc_tn_state_load(t, doc, err, sizeof(err)), 0);
	json_decref(doc);
	for (int64_t i = 1; i <= 30; i++) {
		json_t *j;
		char *text;
		json_int_t n;

		assert_int_equal(run(t, i, NULL, NULL), 0); /* a quiet fabric: no step */
		st = cc_tn_state_json(t);
		text = json_dumps(json_object_get(st, "holds"), JSON_COMPACT);
		json_decref(st);
		j = cc_tn_json(t);
		n = json_integer_value(json_object_get(j, "intervals"));
		/* the live view counts every interval: 7, 13 and 25 from the load */
		assert_int_equal(json_array_size(json_object_get(j, "holds")), (n < 7) + (n < 13) + (n < 25));
		json_decref(j);
		if (was && strcmp(was, text)) {
			assert_int_equal(n % 10, 0);
			changes++;
		}
		free(was);
		was = text;
	}
	assert_int_equal(changes, 3); /* at 10, 20 and 30 */
	free(was);
	cc_tn_free(t);
}

/* Members whose reported setting the policy refuses are listed in the tuner's JSON: one host
 * outside (its rpg_ai_rate above ai_max_mbps) is left as it is and blocks no step of the
 * others, a port whose Kmax leaves no control loop below XOFF is named with its port; most of
 * a class outside at one value is stepped back inside (repair_class), fewer than half left. */
static void test_outside_policy(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_dcqcn fast = dc0, gap1 = dc0;
	struct cc_tn_ecn tall = ecn0;
	const struct cc_tn_proposal *p;
	json_t *j, *o, *x;
	char h[16];
	int64_t i = 1;

	(void)state;
	fast.rpg_ai_rate_mbps = 100;
	assert_int_equal(cc_tn_track_host(t, "h0", &fast), 0);
	tall.kmax_bytes = XOFF - 100000; /* less than loop_bytes (150 KB) below XOFF */
	assert_int_equal(cc_tn_track_port(t, "spine0", "leaf0", &tall), 0);
	/* a port's own XOFF threshold (rocefabd: each switch port's as reported), the others' none */
	assert_int_equal(cc_tn_track_xoff(t, "leaf1", "spine1", ecn0.kmax_bytes + 100000), 0);
	assert_int_equal(cc_tn_track_xoff(t, "leaf9", "spine1", 1), -ENOENT);
	for (; i <= 3; i++)
		run(t, i, leaf0_paused, NULL);
	p = pending_class(t, CC_TN_HOSTS);
	assert_non_null(p);
	assert_int_equal(p->knob, CC_TN_CNP_GAP);
	assert_true(p->nchanges > 0);
	for (size_t k = 0; k < p->nchanges; k++)
		assert_string_not_equal(p->changes[k].node, "h0");
	/* leaf1's port to spine1 is outside at its class's Kmax (its own XOFF): one of four, set
	 * apart — its class is not stepped for it */
	assert_null(pending_class(t, CC_TN_TOR_UP));
	j = cc_tn_json(t);
	o = json_object_get(j, "outside_policy");
	assert_int_equal(json_integer_value(json_object_get(o, "members")), 3);
	assert_int_equal(json_array_size(json_object_get(o, "first")), 3);
	for (size_t k = 0; k < 3; k++) {
		x = json_array_get(json_object_get(o, "first"), k);
		if (!strcmp(json_string_value(json_object_get(x, "node")), "h0")) {
			assert_null(json_object_get(x, "port"));
			assert_string_equal(json_string_value(json_object_get(x, "class")), "hosts");
			assert_non_null(strstr(json_string_value(json_object_get(x, "why")), "rpg_ai_rate"));
		} else if (!strcmp(json_string_value(json_object_get(x, "node")), "leaf1")) {
			assert_string_equal(json_string_value(json_object_get(x, "port")), "spine1");
			assert_string_equal(json_string_value(json_object_get(x, "class")), "tor_up");
			assert_non_null(strstr(json_string_value(json_object_get(x, "why")), "XOFF"));
		} else {
			assert_string_equal(json_string_value(json_object_get(x, "node")), "spine0");
			assert_string_equal(json_string_value(json_object_get(x, "port")), "leaf0");
			assert_string_equal(json_string_value(json_object_get(x, "class")), "spine");
			assert_non_null(strstr(json_string_value(json_object_get(x, "why")), "XOFF"));
		}
	}
	json_decref(j);
	cc_tn_free(t);

	/* every host's CNP spacing below the policy's floor (2 us), as a release whose floor was
	 * 1 us left it: listed, and stepped back to the floor through canary and rollout on a
	 * quiet fabric (no gain to show: it is what the policy asks); the switches step against
	 * pauses all the same */
	t = tuner(CC_TN_AUTO);
	gap1.min_time_between_cnps_us = 1;
	for (int k = 0; k < 8; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_host(t, h, &gap1), 0);
	}
	for (i = 1; i <= 3; i++)
		run(t, i, leaf0_paused, NULL);
	p = pending_class(t, CC_TN_HOSTS);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_CNP_GAP && p->phase == CC_TN_CANARY && p->from == 1 && p->to == 2);
	assert_int_equal(p->nchanges, 4);
	assert_non_null(strstr(p->reason, "8 of its members at min_time_between_cnps 1 are outside the policy"));
	assert_non_null(pending_class(t, CC_TN_TOR_DOWN));
	j = cc_tn_json(t);
	o = json_object_get(j, "outside_policy");
	assert_int_equal(json_integer_value(json_object_get(o, "members")), 8);
	x = json_array_get(json_object_get(o, "first"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(x, "why")), "min_time_between_cnps"));
	json_decref(j);
	for (; i <= 30; i++) {
		apply_all(t, 8, NULL);
		run(t, i, NULL, NULL);
	}
	{
		struct cc_tn_dcqcn d;
		bool kept = false;

		cc_tn_class_dcqcn(t, CC_TN_HOSTS, &d);
		assert_true(d.min_time_between_cnps_us == 2);
		for (uint64_t id = 1; id < 64; id++) {
			const struct cc_tn_proposal *q = cc_tn_find(t, id);

			kept |= q && q->cls == CC_TN_HOSTS && q->phase == CC_TN_ROLLOUT &&
				strstr(q->reason, "a step back inside the policy needs no gain to show");
		}
		assert_true(kept);
	}
	j = cc_tn_json(t);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "outside_policy"), "members")), 0);
	json_decref(j);
	cc_tn_free(t);

	/* every ToR downlink's Kmax too close to XOFF (a lowered XOFF): Kmax down to loop_bytes
	 * below it, without pauses to call for it */
	t = tuner(CC_TN_AUTO);
	for (int l = 0; l < 2; l++)
		for (int k = 0; k < 4; k++) {
			char leaf[16];

			snprintf(leaf, sizeof(leaf), "leaf%d", l);
			snprintf(h, sizeof(h), "h%d", l * 4 + k);
			assert_int_equal(cc_tn_track_port(t, leaf, h, &tall), 0);
		}
	for (i = 1; i <= 3; i++)
		run(t, i, NULL, NULL);
	p = pending_class(t, CC_TN_TOR_DOWN);
	assert_non_null(p);
	assert_int_equal(p->knob, CC_TN_KMAX);
	assert_true(p->from == XOFF - 100000 && p->to == XOFF - 150000 && p->nchanges > 0);
	assert_non_null(strstr(p->reason, "XOFF"));
	cc_tn_free(t);

	/* five of the eight ToR downlinks set apart outside the policy (Pmax below its floor) at
	 * another Kmin: the three inside give the class's setting; but they are most of the
	 * class, so their Pmax is stepped to the floor (theirs only: the three keep theirs) */
	t = tuner(CC_TN_AUTO);
	tall = ecn0;
	tall.kmin_bytes = 30000;
	tall.pmax = 0.001;
	for (int k = 0; k < 5; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_port(t, k < 4 ? "leaf0" : "leaf1", h, &tall), 0);
	}
	run(t, 1, NULL, NULL);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &tall);
	assert_memory_equal(&tall, &ecn0, sizeof(tall));
	for (i = 2; i <= 3; i++)
		run(t, i, NULL, NULL);
	p = pending_class(t, CC_TN_TOR_DOWN);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_PMAX && p->from == 0.001 && p->to == 0.01);
	for (size_t k = 0; k < p->nchanges; k++)
		assert_true(p->changes[k].ecn_from.kmin_bytes == 30000 && p->changes[k].ecn_to.pmax == 0.01);
	cc_tn_free(t);

	/* every ToR downlink's XOFF lowered to 400 KB, under Kmin (300 KB) plus a control loop:
	 * Kmax can go to 250 KB only once Kmin is below it, so Kmin goes to 125 KB first */
	t = tuner(CC_TN_AUTO);
	tall = (struct cc_tn_ecn){ 300000, 400000, 0.01 };
	for (int k = 0; k < 8; k++) {
		char leaf[16];

		snprintf(leaf, sizeof(leaf), "leaf%d", k / 4);
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_port(t, leaf, h, &tall), 0);
		assert_int_equal(cc_tn_track_xoff(t, leaf, h, 400000), 0);
	}
	for (i = 1; i <= 3; i++)
		run(t, i, NULL, NULL);
	p = pending_class(t, CC_TN_TOR_DOWN);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_KMIN && p->from == 300000 && p->to == 125000);
	assert_non_null(strstr(p->expect, "room for tor_down kmax_bytes 250000: kmin_bytes 125000 first"));
	for (; i <= 60; i++) {
		apply_all(t, 8, NULL);
		run(t, i, NULL, NULL);
	}
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &tall);
	assert_true(tall.kmin_bytes == 125000 && tall.kmax_bytes == 250000);
	j = cc_tn_json(t);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "outside_policy"), "members")), 0);
	json_decref(j);
	cc_tn_free(t);

	/* one host's rpg_hai_rate set below the class's rpg_ai_rate (5): that host is outside at
	 * the class's AI, and the class's AI is not stepped down for it */
	t = tuner(CC_TN_AUTO);
	fast = dc0;
	fast.rpg_hai_rate_mbps = 3;
	assert_int_equal(cc_tn_track_host(t, "h3", &fast), 0);
	for (i = 1; i <= 6; i++)
		run(t, i, NULL, NULL);
	assert_int_equal(npending(t), 0);
	cc_tn_free(t);

	/* three of the eight (fewer than half) set apart outside: listed and left as they are */
	t = tuner(CC_TN_AUTO);
	for (int k = 0; k < 3; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_port(t, "leaf0", h, &tall), 0);
	}
	for (i = 1; i <= 6; i++)
		run(t, i, NULL, NULL);
	assert_int_equal(npending(t), 0);
	cc_tn_free(t);
}

/* One tuner through n intervals of a quiet fabric in auto mode, every proposal applied. */
static void settle(struct cc_tn *t, int64_t *i, int64_t n)
{
	for (int64_t end = *i + n; *i < end; (*i)++) {
		apply_all(t, 8, NULL);
		run(t, *i, NULL, NULL);
	}
}

/* The repair's partners (partner_first), its advise-mode rejection and a restart in its
 * middle. */
static void test_repair_partners_reject_restart(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t, *t2;
	struct cc_tn_dcqcn d = dc0, d2;
	struct cc_tn_ecn e;
	const struct cc_tn_proposal *p;
	json_t *saved;
	char h[16], err[200];
	int64_t i = 1;

	(void)state;
	/* hai_max_mbps 30 under the hosts' rpg_ai_rate 40 (rpg_hai_rate 50): AI to 30 first,
	 * then HAI to 30 */
	pol.mode = CC_TN_AUTO;
	pol.hai_max_mbps = 30;
	t = tuner_with(&pol);
	d.rpg_ai_rate_mbps = 40;
	for (int k = 0; k < 8; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_host(t, h, &d), 0);
	}
	settle(t, &i, 3);
	p = pending_class(t, CC_TN_HOSTS);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_AI_RATE && p->from == 40 && p->to == 30);
	assert_non_null(strstr(p->expect, "room for hosts rpg_hai_rate 30: rpg_ai_rate 30 first"));
	settle(t, &i, 60);
	cc_tn_class_dcqcn(t, CC_TN_HOSTS, &d2);
	assert_true(d2.rpg_ai_rate_mbps == 30 && d2.rpg_hai_rate_mbps == 30);
	assert_int_equal(outside_members(t), 0);
	cc_tn_free(t);

	/* kmin_floor_bytes raised above the ToR downlinks' Kmax (400 KB): Kmax to twice the floor
	 * first, then Kmin to the floor */
	pol = cc_tn_defaults;
	pol.mode = CC_TN_AUTO;
	pol.kmin_floor_bytes = 500000;
	t = tuner_with(&pol);
	i = 1;
	settle(t, &i, 3);
	p = pending_class(t, CC_TN_TOR_DOWN);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_KMAX && p->from == 400000 && p->to == 1000000);
	settle(t, &i, 60);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_true(e.kmin_bytes == 500000 && e.kmax_bytes == 1000000);
	assert_int_equal(outside_members(t), 0); /* the ToR uplinks and spine ports too */
	cc_tn_free(t);

	/* Kmax to go under XOFF less a loop (250 KB) with a floor of 130 KB: Kmin to the floor
	 * (half of 250 KB is below it) */
	pol = cc_tn_defaults;
	pol.mode = CC_TN_AUTO;
	pol.kmin_floor_bytes = 130000;
	t = tuner_with(&pol);
	e = (struct cc_tn_ecn){ 300000, 400000, 0.01 };
	for (int k = 0; k < 8; k++) {
		char leaf[16];

		snprintf(leaf, sizeof(leaf), "leaf%d", k / 4);
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_port(t, leaf, h, &e), 0);
		assert_int_equal(cc_tn_track_xoff(t, leaf, h, 400000), 0);
	}
	i = 1;
	settle(t, &i, 3);
	p = pending_class(t, CC_TN_TOR_DOWN);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_KMIN && p->to == 130000);
	settle(t, &i, 60);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_true(e.kmin_bytes == 130000 && e.kmax_bytes == 250000);
	assert_int_equal(outside_members(t), 0);
	cc_tn_free(t);

	/* advise: a repair rejected is held for tabu_intervals, then proposed again (to keep a
	 * class outside on purpose, widen the policy) */
	pol = cc_tn_defaults;
	pol.mode = CC_TN_ADVISE;
	pol.tabu_intervals = 10;
	pol.cnp_gap_min_us = 8;
	t = tuner_with(&pol);
	for (i = 1; i <= 3; i++)
		run(t, i, NULL, NULL);
	p = one(t);
	assert_true(p->knob == CC_TN_CNP_GAP && p->to == 8 && p->state == CC_TN_WAITING);
	assert_int_equal(cc_tn_decide(t, p->id, false), 0);
	for (; i <= 12; i++) {
		run(t, i, NULL, NULL);
		assert_int_equal(npending(t), 0);
	}
	for (; i <= 16 && !npending(t); i++)
		run(t, i, NULL, NULL);
	p = one(t);
	assert_true(p->knob == CC_TN_CNP_GAP && p->to == 8 && p->state == CC_TN_WAITING);
	/* ... and widening the policy ends it */
	pol.cnp_gap_min_us = 2;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	for (int64_t end = i + 40; i < end; i++) {
		run(t, i, NULL, NULL);
		assert_int_equal(npending(t), 0);
	}
	cc_tn_free(t);

	/* rocefabd restarted after the canary moved half the hosts' CNP spacing from 1 to 2: the
	 * step's rollback is refused (1 is outside the policy) and the repair goes on once its
	 * hold ends, the hosts at 2 counting with those at 1 as most of the class */
	t = tuner(CC_TN_AUTO);
	d = dc0;
	d.min_time_between_cnps_us = 1;
	for (int k = 0; k < 8; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_host(t, h, &d), 0);
	}
	for (i = 1; i <= 3; i++)
		run(t, i, NULL, NULL);
	p = pending_class(t, CC_TN_HOSTS);
	assert_true(p && p->knob == CC_TN_CNP_GAP && p->nchanges == 4);
	apply_all(t, 8, NULL);
	saved = cc_tn_state_json(t);
	assert_non_null(saved);
	t2 = tuner(CC_TN_AUTO);
	for (int k = 0; k < 8; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		d2 = d;
		for (size_t c = 0; c < p->nchanges; c++)
			if (!strcmp(p->changes[c].node, h))
				d2.min_time_between_cnps_us = 2;
		assert_int_equal(cc_tn_track_host(t2, h, &d2), 0);
	}
	assert_int_equal(cc_tn_state_load(t2, saved, err, sizeof(err)), 1);
	json_decref(saved);
	cc_tn_free(t);
	i = 1;
	settle(t2, &i, 80);
	cc_tn_class_dcqcn(t2, CC_TN_HOSTS, &d2);
	assert_true(d2.min_time_between_cnps_us == 2);
	assert_int_equal(outside_members(t2), 0);
	/* the repair done, nothing of it counts any more: three hosts an operator sets to 1 us
	 * afterwards are a minority set apart */
	for (int k = 0; k < 3; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_host(t2, h, &d), 0);
	}
	for (int64_t end = i + 40; i < end; i++) {
		run(t2, i, NULL, NULL);
		assert_null(pending_class(t2, CC_TN_HOSTS));
	}
	assert_int_equal(outside_members(t2), 3);
	cc_tn_free(t2);
}

/* Which members a repair moves: those its value brings inside, more than half the class with
 * those an earlier repair brought there; a port whose own limit is narrower, one an operator
 * set apart inside, and a minority set apart at another value are left. */
static void test_repair_groups(void **state)
{
	struct cc_tn *t;
	struct cc_tn_ecn e = ecn0;
	struct cc_tn_dcqcn d = dc0;
	const struct cc_tn_proposal *p;
	char h[16], leaf[16];
	int64_t i;

	(void)state;
	/* six ToR downlinks' XOFF lowered to 400 KB (Kmax at most 250 KB), one of them further
	 * (380 KB: 230 KB), and a seventh port's Kmin set to 300 KB by an operator (inside: its
	 * XOFF is the fabric's): Kmax to 250 KB (five of eight take it; 230 KB is farther) on the
	 * five and on h7 (inside, at the same Kmax), neither on h0 (left outside) nor on h6 */
	t = tuner(CC_TN_AUTO);
	for (int k = 0; k < 8; k++) {
		snprintf(leaf, sizeof(leaf), "leaf%d", k / 4);
		snprintf(h, sizeof(h), "h%d", k);
		if (k < 6)
			assert_int_equal(cc_tn_track_xoff(t, leaf, h, k == 0 ? 380000 : 400000), 0);
	}
	e.kmin_bytes = 300000;
	assert_int_equal(cc_tn_track_port(t, "leaf1", "h6", &e), 0);
	for (i = 1; i <= 3; i++)
		run(t, i, NULL, NULL);
	p = pending_class(t, CC_TN_TOR_DOWN);
	assert_non_null(p);
	assert_true(p->knob == CC_TN_KMAX && p->from == 400000 && p->to == 250000 && p->nchanges > 0);
	assert_non_null(strstr(p->reason, "5 of its members at kmax_bytes 400000 are outside"));
	for (; i <= 60; i++) {
		apply_all(t, 8, NULL);
		run(t, i, NULL, NULL);
		for (uint64_t id = 1; id < 64; id++) {
			const struct cc_tn_proposal *q = cc_tn_find(t, id);

			assert_false(q && q->knob == CC_TN_KMAX &&
				     (changes_port(q, "leaf0", "h0") || changes_port(q, "leaf1", "h6")));
		}
	}
	assert_true(class_json(t, "tor_down", "kmax_bytes") == 250000);
	{
		json_t *j = cc_tn_json(t), *o = json_object_get(j, "outside_policy");

		/* h0 alone is left outside */
		assert_int_equal(json_integer_value(json_object_get(o, "members")), 1);
		assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "first"), 0),
								      "port")), "h0");
		json_decref(j);
	}
	cc_tn_free(t);

	/* six ports' own limits 250, 250, 230, 230, 210 and 210 KB, in either order: 210 KB is the
	 * nearest value most of the class (six of eight) can take, whatever the members' order */
	for (int ord = 0; ord < 2; ord++) {
		static const uint64_t limit[] = { 250000, 250000, 230000, 230000, 210000, 210000 };

		t = tuner(CC_TN_AUTO);
		for (int k = 0; k < 6; k++) {
			snprintf(leaf, sizeof(leaf), "leaf%d", k / 4);
			snprintf(h, sizeof(h), "h%d", k);
			assert_int_equal(cc_tn_track_xoff(t, leaf, h, limit[ord ? 5 - k : k] + 150000), 0);
		}
		for (i = 1; i <= 3; i++)
			run(t, i, NULL, NULL);
		p = pending_class(t, CC_TN_TOR_DOWN);
		assert_non_null(p);
		assert_true(p->knob == CC_TN_KMAX && p->to == 210000);
		assert_non_null(strstr(p->reason, "6 of its members at kmax_bytes 400000 are outside"));
		cc_tn_free(t);
	}

	/* every ToR downlink's XOFF at 160 KB: Kmax could go no lower than the floor of Kmin
	 * (10 KB) plus one byte; nothing is moved, Kmin not lowered for nothing */
	t = tuner(CC_TN_AUTO);
	for (int k = 0; k < 8; k++) {
		snprintf(leaf, sizeof(leaf), "leaf%d", k / 4);
		snprintf(h, sizeof(h), "h%d", k);
		assert_int_equal(cc_tn_track_xoff(t, leaf, h, 160000), 0);
	}
	for (i = 1; i <= 6; i++) {
		run(t, i, NULL, NULL);
		assert_null(pending_class(t, CC_TN_TOR_DOWN));
	}
	cc_tn_free(t);

	/* five hosts at the floor of the CNP spacing (2 us) as the rules leave them, three set to
	 * 1 us by an operator: a minority set apart, not a repair cut short */
	t = tuner(CC_TN_AUTO);
	for (int k = 0; k < 8; k++) {
		snprintf(h, sizeof(h), "h%d", k);
		d.min_time_between_cnps_us = k < 3 ? 1 : 2;
		assert_int_equal(cc_tn_track_host(t, h, &d), 0);
	}
	for (i = 1; i <= 6; i++) {
		run(t, i, NULL, NULL);
		assert_null(pending_class(t, CC_TN_HOSTS));
	}
	cc_tn_free(t);
}

/* Host classes: the policy's names and patterns (and their refusals); each class steps on its
 * own hosts' signals (the class whose edge links pause gets more CNPs, the other keeps its
 * DCQCN); the classes cannot be redefined under a step of theirs; a completed step of a class
 * since removed is still undone by an operator's rollback, and a saved step of it is restored
 * as one of "hosts". */
static void test_host_classes(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults, q, none;
	const struct cc_tn_proposal *p;
	struct cc_tn *t, *t2;
	enum cc_tn_class c;
	json_t *j, *saved, *x;
	char err[200];
	const char *why;
	size_t undone = 0, k, n;
	int64_t i = 1;
	uint64_t step;

	(void)state;
	j = json_loads("{\"mode\": \"auto\", \"host_classes\": [{\"name\": \"gpu\", \"hosts\": \"h[0-3]\"}]}", 0,
		       NULL);
	assert_int_equal(cc_tn_policy_from_json(j, &pol, err, sizeof(err)), 0);
	json_decref(j);
	assert_int_equal(pol.nhost_classes, 1);
	assert_int_equal(cc_tn_host_class_of(&pol, "h2"), CC_TN_HOST_CLASS0);
	assert_int_equal(cc_tn_host_class_of(&pol, "h5"), CC_TN_HOSTS);
	assert_string_equal(cc_tn_class_label(&pol, CC_TN_HOST_CLASS0), "gpu");
	assert_int_equal(cc_tn_class_lookup(&pol, "gpu", &c), 0);
	assert_int_equal(c, CC_TN_HOST_CLASS0);
	assert_int_equal(cc_tn_class_lookup(&pol, "storage", &c), -ENOENT);
	/* the JSON round trip */
	j = cc_tn_policy_json(&pol);
	x = json_array_get(json_object_get(j, "host_classes"), 0);
	assert_string_equal(json_string_value(json_object_get(x, "hosts")), "h[0-3]");
	q = cc_tn_defaults;
	assert_int_equal(cc_tn_policy_from_json(j, &q, err, sizeof(err)), 0);
	assert_memory_equal(&q, &pol, sizeof(q));
	json_decref(j);
	static const char *const refused[][2] = {
		{ "{\"host_classes\": {}}", "/host_classes" },
		{ "{\"host_classes\": [{\"name\": \"hosts\", \"hosts\": \"x*\"}]}", "must not be" },
		{ "{\"host_classes\": [{\"name\": \"a b\", \"hosts\": \"x*\"}]}", "letters" },
		{ "{\"host_classes\": [{\"name\": \"a\", \"hosts\": \"\"}]}", "pattern" },
		{ "{\"host_classes\": [{\"name\": \"a\", \"hosts\": \"gpu[1-4\"}]}", "a '[' without its ']'" },
		{ "{\"host_classes\": [{\"name\": \"a\", \"hosts\": \"x\"}, {\"name\": \"a\", \"hosts\": \"y\"}]}", "differ" },
		/* the member at fault named */
		{ "{\"host_classes\": [{\"name\": \"a\"}]}", "/host_classes/0/hosts: must be a string" },
		{ "{\"host_classes\": [{\"name\": \"a\", \"hosts\": \"x\", \"w/y\": 1}]}",
		  "/host_classes/0/w~1y: unknown field (a class has name and hosts)" },
		{ "{\"host_classes\": [7]}", "/host_classes/0: must be an object" },
		{ "{\"host_classes\": [{\"name\": \"a\", \"hosts\": \"x\"}, {\"name\": \"b\", \"hosts\": \"x\"}, "
		  "{\"name\": \"c\", \"hosts\": \"x\"}, {\"name\": \"d\", \"hosts\": \"x\"}, {\"name\": \"e\", "
		  "\"hosts\": \"x\"}]}",
		  "at most 4" },
	};
	for (k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		j = json_loads(refused[k][0], 0, NULL);
		assert_non_null(j);
		q = pol;
		err[0] = 0;
		assert_int_equal(cc_tn_policy_from_json(j, &q, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, refused[k][1]));
		assert_memory_equal(&q, &pol, sizeof(q));
		json_decref(j);
	}

	/* a class whose pattern matches no host is listed as such (gpu has h0..h3) */
	q = pol;
	q.nhost_classes = 2;
	snprintf(q.host_classes[1].name, sizeof(q.host_classes[1].name), "storage");
	snprintf(q.host_classes[1].hosts, sizeof(q.host_classes[1].hosts), "st-*");
	t = tuner_with(&q);
	j = cc_tn_json(t);
	x = json_object_get(j, "empty_host_classes");
	assert_int_equal(json_array_size(x), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(x, 0), "name")), "storage");
	assert_string_equal(json_string_value(json_object_get(json_array_get(x, 0), "hosts")), "st-*");
	json_decref(j);
	cc_tn_free(t);

	t = tuner_with(&pol);
	j = cc_tn_json(t);
	assert_int_equal(json_array_size(json_object_get(j, "empty_host_classes")), 0);
	json_decref(j);
	/* a DCQCN knob only, of a class that has members */
	assert_int_equal(cc_tn_force(t, CC_TN_HOST_CLASS0, CC_TN_KMIN, 10000, &why), -EINVAL);
	assert_int_equal(cc_tn_force(t, CC_TN_HOST_CLASS0 + 1, CC_TN_CNP_GAP, 2, &why), -EINVAL);
	/* leaf0's downlinks pause: gpu (h0..h3 behind them) gets more CNPs, hosts (h4..h7) not */
	for (k = 0; k < 3; k++)
		run(t, i++, leaf0_paused, NULL);
	p = pending_class(t, CC_TN_HOST_CLASS0);
	assert_non_null(p);
	assert_null(pending_class(t, CC_TN_HOSTS));
	step = p->step;
	assert_int_equal(p->knob, CC_TN_CNP_GAP);
	assert_true(p->to < p->from);
	assert_string_equal(p->cls_name, "gpu");
	assert_int_equal(p->nchanges, 2); /* the canary: half of gpu's 4 */
	for (k = 0; k < p->nchanges; k++)
		assert_true(p->changes[k].host && strchr("0123", p->changes[k].node[1]));
	j = cc_tn_proposal_json(p);
	assert_string_equal(json_string_value(json_object_get(j, "class")), "gpu");
	x = json_object_get(json_object_get(j, "evidence"), "host_classes");
	assert_true(json_number_value(json_object_get(json_object_get(x, "gpu"), "pause_share")) > 0.1);
	assert_true(json_number_value(json_object_get(json_object_get(x, "hosts"), "pause_share")) == 0);
	json_decref(j);
	/* not redefined under the step: the new classes wait (set back, nothing waits); the rest
	 * of the policy is in force at once */
	none = pol;
	none.nhost_classes = 0;
	assert_int_equal(cc_tn_set_policy(t, &none), 0);
	assert_true(pending_classes(t));
	assert_int_equal(cc_tn_get_policy(t)->nhost_classes, 0);
	q = pol;
	q.tolerance = 0.3;
	assert_int_equal(cc_tn_set_policy(t, &q), 0);
	assert_false(pending_classes(t));
	assert_true(cc_tn_get_policy(t)->tolerance == 0.3);
	apply_all(t, 8, NULL);
	for (k = 0; k < 30 && !step_over(t, step); k++) {
		run(t, i++, leaf0_paused, NULL);
		apply_all(t, 8, NULL);
	}
	assert_true(step_over(t, step));
	/* then quiet until every step is over */
	for (k = 0; k < 30 && !idle(t); k++) {
		run(t, i++, NULL, NULL);
		apply_all(t, 8, NULL);
	}
	assert_true(idle(t));
	assert_true(class_json(t, "gpu", "min_time_between_cnps") < dc0.min_time_between_cnps_us);
	assert_true(class_json(t, "hosts", "min_time_between_cnps") == dc0.min_time_between_cnps_us);

	/* saved with its class's name; taken back where no class has that name: one of hosts */
	saved = cc_tn_state_json(t);
	n = 0;
	json_array_foreach(json_object_get(saved, "done"), k, x)
		n += !strcmp(json_string_value(json_object_get(x, "class")), "gpu");
	assert_true(n >= 1);
	/* the holds of gpu (its CNP spacing kept: not undone, not softened for a while) are
	 * saved under its name, and dropped where no class has that name */
	n = 0;
	json_array_foreach(json_object_get(saved, "holds"), k, x)
		n += !strcmp(json_string_value(json_object_get(x, "class")), "gpu");
	assert_true(n >= 1);
	t2 = tuner(CC_TN_AUTO);
	assert_int_equal(cc_tn_state_load(t2, saved, err, sizeof(err)), 0);
	assert_non_null(strstr(err, " of a class the policy no longer has, 0 not read)"));
	/* exactly the others' holds: none of gpu's went to "hosts" */
	j = cc_tn_json(t2);
	n = 0;
	json_array_foreach(json_object_get(j, "holds"), k, x) {
		json_t *y;
		size_t m;
		bool found = false;

		json_array_foreach(json_object_get(saved, "holds"), m, y)
			found |= json_equal(json_object_get(x, "class"), json_object_get(y, "class")) &&
				 json_equal(json_object_get(x, "knob"), json_object_get(y, "knob")) &&
				 !strcmp(json_string_value(json_object_get(x, "direction")) ?: "-",
					 json_string_value(json_object_get(y, "direction")) ?: "-");
		assert_true(found);
		n++;
	}
	json_array_foreach(json_object_get(saved, "holds"), k, x)
		n -= strcmp(json_string_value(json_object_get(x, "class")), "gpu") != 0;
	assert_int_equal(n, 0);
	json_decref(j);
	json_decref(saved);
	cc_tn_free(t2);

	/* in advise mode, a canary of a host class waiting for an operator: rejected by a
	 * redefinition, which does not wait for it */
	q = pol;
	q.mode = CC_TN_ADVISE;
	t2 = tuner_with(&q);
	for (k = 0; k < 3; k++)
		run(t2, (int64_t)k + 1, leaf0_paused, NULL);
	p = pending_class(t2, CC_TN_HOST_CLASS0);
	assert_non_null(p);
	assert_int_equal(p->state, CC_TN_WAITING);
	step = p->id;
	q.nhost_classes = 0;
	assert_int_equal(cc_tn_set_policy(t2, &q), 0);
	assert_int_equal(cc_tn_find(t2, step)->state, CC_TN_REJECTED);
	cc_tn_free(t2);

	/* the class removed: its hosts are "hosts" now, and the operator's rollback still finds
	 * the members of its steps */
	assert_int_equal(cc_tn_set_policy(t, &none), 0);
	assert_true(isnan(class_json(t, "gpu", "min_time_between_cnps")));
	assert_true(cc_tn_rollback_all(t) >= 1);
	undone = 0;
	apply_all(t, 8, &undone);
	assert_true(undone >= 4);
	assert_true(class_json(t, "hosts", "min_time_between_cnps") == dc0.min_time_between_cnps_us);
	for (k = 0; k < 8; k++) {
		char h[16];
		struct cc_tn_proposal *rp;
		double last = NAN;

		snprintf(h, sizeof(h), "h%zu", k);
		for (uint64_t id = 1; id < 256; id++)
			for (size_t m = 0; (rp = cc_tn_find(t, id)) && m < rp->nchanges; m++)
				if (!strcmp(rp->changes[m].node, h))
					last = rp->changes[m].dc_to.min_time_between_cnps_us;
		/* gpu's hosts back where they were, the others never changed */
		if (k < 4)
			assert_true(last == dc0.min_time_between_cnps_us);
		else
			assert_true(isnan(last));
	}
	cc_tn_free(t);
}


/* New host classes set while a step of one is out come in force when it is over (no host
 * class steps meanwhile), and the host classes decide only on signals measured with them: gpu
 * (h0..h3) paused, then gpu redefined as h4..h7, whose links never paused, proposes nothing. */
static void test_host_classes_wait_for_the_step(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults, other;
	const struct cc_tn_proposal *p;
	struct cc_tn *t;
	int64_t i = 1;
	uint64_t step;
	size_t k;

	(void)state;
	pol.mode = CC_TN_AUTO;
	pol.nhost_classes = 1;
	snprintf(pol.host_classes[0].name, sizeof(pol.host_classes[0].name), "gpu");
	snprintf(pol.host_classes[0].hosts, sizeof(pol.host_classes[0].hosts), "h[0-3]");
	t = tuner_with(&pol);
	for (k = 0; k < 3; k++)
		run(t, i++, leaf0_paused, NULL);
	p = pending_class(t, CC_TN_HOST_CLASS0);
	assert_non_null(p);
	step = p->step;
	apply_all(t, 8, NULL);
	other = pol;
	snprintf(other.host_classes[0].hosts, sizeof(other.host_classes[0].hosts), "h[4-7]");
	assert_int_equal(cc_tn_set_policy(t, &other), 0);
	assert_true(pending_classes(t));
	{
		const char *why;

		assert_int_equal(cc_tn_force(t, CC_TN_HOSTS, CC_TN_CNP_GAP, 2, &why), -EBUSY);
		assert_non_null(strstr(why, "wait"));
	}
	for (k = 0; k < 30 && pending_classes(t); k++) {
		run(t, i++, leaf0_paused, NULL);
		apply_all(t, 8, NULL);
	}
	assert_false(pending_classes(t));
	assert_true(step_over(t, step));
	/* in force now, gpu is h4..h7; a quiet interval: still no step of a host class but the
	 * first (none while the classes waited, none on the old classes' signals since) */
	run(t, i++, NULL, NULL);
	for (uint64_t id = 1; id < 256; id++) {
		struct cc_tn_proposal *x = cc_tn_find(t, id);

		assert_true(!x || !cc_tn_class_is_hosts(x->cls) || x->step == step);
	}
	apply_all(t, 8, NULL);
	cc_tn_free(t);
}

/* Saved steps under way of a host class no longer in force and of "hosts": both rolled back at
 * the restart (the first in a free place, under its saved name), neither dropped. */
static void test_restore_steps_of_gone_classes(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	json_t *doc, *st, *x;
	char err[200];
	size_t n, k, found = 0;
	struct cc_tn_proposal **v;

	(void)state;
	doc = json_pack("{s:i,s:i,s:i,s:i,s:[],s:[{s:i,s:s,s:s,s:f,s:f,s:[s,s]},{s:i,s:s,s:s,s:f,s:f,s:[s]}]}",
			"next_id", 9, "next_step", 9, "steps", 2, "rolled_back", 0, "done", "under_way", "step", 3,
			"class", "gone", "knob", "min_time_between_cnps", "from", 8.0, "to", 4.0, "members", "h0", "h1",
			"step", 4, "class", "hosts", "knob", "rpg_ai_rate", "from", 10.0, "to", 5.0, "members", "h4");
	assert_non_null(doc);
	assert_int_equal(cc_tn_state_load(t, doc, err, sizeof(err)), 2);
	json_decref(doc);
	v = cc_tn_pending(t, &n);
	assert_int_equal(n, 2);
	for (k = 0; k < n; k++) {
		assert_int_equal(v[k]->phase, CC_TN_ROLLBACK);
		if (!strcmp(v[k]->cls_name, "gone")) {
			assert_int_equal(v[k]->nchanges, 2);
			assert_true(v[k]->changes[0].dc_to.min_time_between_cnps_us == 8);
			found++;
		} else {
			assert_string_equal(v[k]->cls_name, "hosts");
			assert_int_equal(v[k]->nchanges, 1);
			assert_string_equal(v[k]->changes[0].node, "h4");
			found++;
		}
	}
	assert_int_equal(found, 2);
	/* saved again before they are applied: both, with their members */
	st = cc_tn_state_json(t);
	assert_int_equal(json_array_size(json_object_get(st, "under_way")), 2);
	json_array_foreach(json_object_get(st, "under_way"), k, x)
		if (!strcmp(json_string_value(json_object_get(x, "class")), "gone"))
			assert_int_equal(json_array_size(json_object_get(x, "members")), 2);
	json_decref(st);
	apply_all(t, 8, NULL);
	run(t, 1, NULL, NULL);
	assert_true(idle(t));
	cc_tn_free(t);
}

static void test_forced_bad_step_rolled_back(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE); /* forced steps need no approval */
	struct canary_look cl = { .t = t, .better = false };
	struct cc_tn_proposal *p;
	const char *why;
	struct cc_tn_ecn e;
	uint64_t rb;
	int64_t i = 1;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, NULL, NULL);
	/* values breaking an invariant are refused, with the reason */
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMIN, 400000, &why), -EINVAL);
	assert_non_null(strstr(why, "kmin_bytes must be below kmax_bytes"));
	assert_int_equal(cc_tn_force(t, CC_TN_HOSTS, CC_TN_KMIN, 1000, &why), -EINVAL);
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMIN, 150000, &why), 0);
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMIN, 100000, &why), -EBUSY);
	p = one(t);
	assert_true(p->forced);
	assert_int_equal(p->state, CC_TN_APPROVED);
	apply_all(t, 8, NULL);
	/* the canary's queues and pauses grow: rolled back in the first interval, before its
	 * verdict was due */
	run(t, i++, canary_look, &cl);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_int_equal(p->nchanges, (size_t)ceil(cc_tn_defaults.canary_share * 8));
	assert_int_equal(p->changes[0].ecn_to.kmin_bytes, 20000);
	assert_non_null(strstr(p->reason, "rolled back"));
	apply_all(t, 8, NULL);
	run(t, i++, NULL, NULL);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, 20000);
	cc_tn_steps(t, &rb);
	assert_int_equal(rb, 1);
	cc_tn_free(t);
}

/* every ToR downlink's queue deep, every port paused *ctx microseconds per interval */
static void storm(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	deep_down(node, port, peak, pause, NULL);
	*pause = *(const uint64_t *)ctx;
}

/* every port paused *ctx microseconds per interval; the ToR ports facing h0, h2, h4 and h6
 * with deep queues, those facing the others shallow (port "hN": fewer than ten hosts a leaf) */
static void storm_on_even(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	if (!strncmp(node, "leaf", 4) && tor_down(port))
		*peak = (port[1] - '0') % 2 ? 100000 : 1000000;
	*pause = *(const uint64_t *)ctx;
}

/* Whether host canary p is exactly the nwant hosts named in `want`, in any order. */
static void assert_host_canary(const struct cc_tn_proposal *p, const char *const *want, size_t nwant)
{
	unsigned seen = 0;

	assert_int_equal(p->nchanges, nwant);
	for (size_t k = 0; k < p->nchanges; k++) {
		size_t at = 0;

		while (at < nwant && strcmp(want[at], p->changes[k].node))
			at++;
		if (at == nwant)
			fail_msg("%s in the canary, not one of the %zu wanted (%s, ...)", p->changes[k].node, nwant,
				 want[0]);
		seen |= 1u << at;
	}
	assert_int_equal(seen, (1u << nwant) - 1);
}

/* The hosts' first canary at canary_share `share`, rolled back as the storm grows, and the
 * class's next one: the nwant hosts of first_want, then those of next_want. */
static void host_canaries(double share, const char *const *first_want, const char *const *next_want, size_t nwant,
			  const char *const *apart)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t;
	struct cc_tn_dcqcn gap = dc0;
	uint64_t pause = 1, first;
	struct cc_tn_proposal *p;
	int64_t i = 1;

	pol.mode = CC_TN_AUTO;
	pol.canary_share = share;
	pol.max_share = fmax(pol.max_share, share);
	t = tuner_with(&pol);
	gap.min_time_between_cnps_us = dc0.min_time_between_cnps_us + 1;
	for (; apart && *apart; apart++)
		assert_int_equal(cc_tn_track_host(t, *apart, &gap), 0);
	for (; i <= 3; i++)
		run(t, i, storm_on_even, &pause);
	p = pending_of(t, CC_TN_HOSTS, CC_TN_CANARY);
	assert_int_equal(p->knob, CC_TN_CNP_GAP);
	assert_host_canary(p, first_want, nwant);
	first = p->step;
	apply_all(t, 8, NULL);
	/* the storm grows: rolled back, tried again after canary_intervals */
	pause = 10;
	run(t, i++, storm_on_even, &pause);
	apply_all(t, 8, NULL);
	pause = 1;
	for (unsigned k = 0; k < 16; k++) {
		size_t n;
		struct cc_tn_proposal **v;

		run(t, i++, storm_on_even, &pause);
		v = cc_tn_pending(t, &n);
		for (size_t j = 0; j < n; j++)
			if (v[j]->cls == CC_TN_HOSTS && v[j]->phase == CC_TN_CANARY && v[j]->step != first) {
				assert_host_canary(v[j], next_want, nwant);
				cc_tn_free(t);
				return;
			}
		apply_all(t, 8, NULL);
	}
	fail_msg("no second canary of the hosts");
}

/* A host class's canary and the rest start from like queues: its hosts spread evenly over the
 * order of their ToR ports' queues (h1 h3 h5 h7 shallow, h0 h2 h4 h6 deep), not every other
 * host by name (which here would be the four deep ones), at places that turn with each canary
 * of the class.  At a share of 0.5, one of each pair, the other at the next canary; at 0.25,
 * one of each four; with h4 and h6 set apart (their own CNP gap), half of the six others, then
 * the other half (a share of the class, 4, would put two of the six in both); at a share of
 * 1e-300 (the policy takes it) one host, the next another. */
static void test_host_canary_matched(void **state)
{
	static const char *const even[] = { "h1", "h5", "h0", "h4" }, *const odd[] = { "h3", "h7", "h2", "h6" };
	static const char *const six_first[] = { "h1", "h5", "h0" }, *const six_next[] = { "h3", "h7", "h2" };
	static const char *const apart[] = { "h4", "h6", NULL };
	static const char *const quarter_first[] = { "h1", "h0" }, *const quarter_next[] = { "h3", "h2" };
	static const char *const least_first[] = { "h1" }, *const least_next[] = { "h3" };
	static const char *const all_but_h2[] = { "h1", "h3", "h5", "h7", "h0", "h4", "h6" },
				 *const all_but_h3[] = { "h1", "h5", "h7", "h0", "h2", "h4", "h6" };

	(void)state;
	host_canaries(0.5, even, odd, 4, NULL);
	host_canaries(0.5, six_first, six_next, 3, apart);
	host_canaries(0.25, quarter_first, quarter_next, 2, NULL);
	host_canaries(1e-300, least_first, least_next, 1, NULL);
	/* at a share of 1 all but one: the rest a canary is judged against (h2, then h3) */
	host_canaries(1, all_but_h2, all_but_h3, 7, NULL);
}

/* A switch class's canary at the least share the policy takes: one port (1 / 1e-300 is
 * larger than any size_t: the stride is bounded by the class, else the conversion is undefined,
 * which the sanitizer build's float-cast-overflow reports). */
static void test_switch_canary_least_share(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t;
	struct cc_tn_proposal *p;
	int64_t i = 1;

	(void)state;
	pol.mode = CC_TN_AUTO;
	pol.canary_share = 1e-300;
	t = tuner_with(&pol);
	p = first_step(t, &i);
	assert_int_equal(p->cls, CC_TN_TOR_DOWN);
	assert_int_equal(p->phase, CC_TN_CANARY);
	assert_int_equal(p->nchanges, 1);
	cc_tn_free(t);
}

/* A canary leaves one member of its class out at least, whatever the share: the rest it is
 * judged against (with none, no harm is seen and no gain shown).  The rollout takes the rest. */
static void test_canary_leaves_a_rest(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t;
	struct cc_tn_proposal *p;
	size_t changed = 0;
	int64_t i = 1;

	(void)state;
	pol.mode = CC_TN_AUTO;
	pol.canary_share = pol.max_share = 1;
	t = tuner_with(&pol);
	p = first_step(t, &i);
	assert_int_equal(p->cls, CC_TN_TOR_DOWN);
	assert_int_equal(p->phase, CC_TN_CANARY);
	assert_int_equal(p->nchanges, 7); /* of the 8 ToR downlinks */
	apply_all(t, 8, NULL);
	for (; i < 40 && !changed; i++) {
		struct canary_look cl = { .t = t, .better = true };
		struct cc_tn_proposal **v;
		size_t n;

		run(t, i, canary_look, &cl);
		v = cc_tn_pending(t, &n);
		for (size_t k = 0; k < n; k++)
			if (v[k]->cls == CC_TN_TOR_DOWN && v[k]->phase == CC_TN_ROLLOUT)
				changed = v[k]->nchanges;
		apply_all(t, 8, NULL);
	}
	assert_int_equal(changed, 1); /* the canary shallower than the rest: kept, rolled out */
	cc_tn_free(t);
}

/* A canary waiting for an operator is withdrawn when the policy changes in more than its mode
 * (its value and its members were chosen under the one before: applied now it could leave the
 * policy in force), with no hold: the move comes again under the new policy.  The same policy
 * set again, or only a new mode, leaves it waiting (auto approves it). */
static void test_policy_change_withdraws_waiting(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn_proposal *p;
	enum cc_tn_knob knob;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	pol.mode = CC_TN_ADVISE;
	p = first_step(t, &i);
	id = p->id;
	knob = p->knob;
	assert_int_equal(knob, CC_TN_KMIN);
	assert_true(p->to < p->from);
	assert_int_equal(cc_tn_set_policy(t, &pol), 0); /* the same */
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_WAITING);
	pol.kmin_floor_bytes = p->to + 1; /* the proposal's value is below the new floor */
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_REJECTED);
	assert_int_equal(npending(t), 0);
	assert_true(idle(t));
	assert_int_equal(cc_tn_decide(t, id, true), -EALREADY);
	/* the same move made again at once (no hold), inside the new policy */
	run(t, i++, deep_down, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
	assert_true(p->id != id);
	assert_int_equal(p->knob, knob);
	assert_true(p->to < p->from && p->to >= (double)pol.kmin_floor_bytes);
	/* a new mode and a new share at once: withdrawn, not approved */
	id = p->id;
	pol.mode = CC_TN_AUTO;
	pol.canary_share = 0.25;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_REJECTED);
	cc_tn_free(t);
}

/* The intervals a move is held back for (0: not held), as GET /api/v1/cc lists them (the last
 * listed: a hold unless ports pause comes after the one from every rule); *unless_pausing
 * (when not NULL): whether that hold is one unless ports pause. */
static long long hold_of(struct cc_tn *t, const char *cls, const char *knob, const char *dir, bool *unless_pausing)
{
	json_t *j = cc_tn_json(t), *x;
	long long n = 0;
	size_t k;

	if (unless_pausing)
		*unless_pausing = false;
	json_array_foreach(json_object_get(j, "holds"), k, x)
		if (!strcmp(json_string_value(json_object_get(x, "class")), cls) &&
		    !strcmp(json_string_value(json_object_get(x, "knob")), knob) &&
		    !strcmp(json_string_value(json_object_get(x, "direction")) ?: "", dir)) {
			n = json_integer_value(json_object_get(x, "intervals"));
			if (unless_pausing)
				*unless_pausing = json_is_true(json_object_get(x, "unless_pausing"));
		}
	json_decref(j);
	return n;
}

/* A policy's shorter tabu_intervals shortens the holds in force at once, as a restart does (it
 * takes them back no longer than the policy holds a move now); before, only a restart did (a
 * trial: "held back for 22 intervals" after tabu_intervals 3, "3" once restarted). */
static void test_holds_follow_a_shorter_tabu(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_policy p = cc_tn_defaults;
	json_t *st = json_pack("{s:i,s:i,s:i,s:i,s:[],s:[],s:[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i,s:b},{s:s,s:s,s:i}]}",
			       "next_id", 1, "next_step", 1, "steps", 0, "rolled_back", 0, "done", "under_way", "holds",
			       "class", "tor_up", "knob", "kmax_bytes", "direction", "down", "intervals", 25,
			       "class", "spine", "knob", "pmax", "direction", "up", "intervals", 20,
			       "unless_pausing", 1, "class", "spine", "knob", "soften", "intervals", 50);
	char err[200] = "";
	bool ng;

	(void)state;
	assert_int_equal(cc_tn_state_load(t, st, err, sizeof(err)), 0);
	json_decref(st);
	assert_int_equal(hold_of(t, "tor_up", "kmax_bytes", "down", NULL), 25);
	assert_int_equal(hold_of(t, "spine", "pmax", "up", &ng), 20);
	assert_true(ng);
	p.mode = CC_TN_ADVISE;
	p.tabu_intervals = 3;
	assert_int_equal(cc_tn_set_policy(t, &p), 0);
	assert_int_equal(hold_of(t, "tor_up", "kmax_bytes", "down", NULL), 3);
	assert_int_equal(hold_of(t, "spine", "pmax", "up", &ng), 3);
	assert_int_equal(hold_of(t, "spine", "soften", "", NULL), 6); /* twice tabu_intervals */
	/* a longer one lengthens none */
	p.tabu_intervals = 100;
	assert_int_equal(cc_tn_set_policy(t, &p), 0);
	assert_int_equal(hold_of(t, "tor_up", "kmax_bytes", "down", NULL), 3);
	cc_tn_free(t);
}

/* deep ToR downlink queues, three times as deep on the members of canary *ctx */
static void canary_deeper(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	const struct cc_tn_proposal *p = *(struct cc_tn_proposal *const *)ctx;

	deep_down(node, port, peak, pause, NULL);
	if (changes_port(p, node, port))
		*peak = 3000000;
}

/* A harder move rolled back for no clear gain (deeper queues called for it; its canary's
 * queues were no shorter than the rest's) is held unless ports pause: when they start to, it
 * comes at once, as the first move against them, and a restart keeps the kind of hold.  Rolled
 * back for harm (its canary's queues deeper), it is held whatever the signals; so is a
 * softening move rolled back for no clear gain (it is never made against pauses). */
static void test_no_gain_held_but_not_against_pauses(void **state)
{
	const unsigned ci = cc_tn_defaults.canary_intervals;

	(void)state;
	for (int harm = 0; harm < 2; harm++) {
		struct cc_tn *t = tuner(CC_TN_AUTO), *t2;
		struct cc_tn_proposal *p, *canary = NULL;
		uint64_t pause = 10; /* 10 % of the time */
		bool unless;
		char err[200];
		json_t *st;
		int64_t i = 1;

		/* deep queues: Kmin down, then Kmax down, each rolled back for no clear gain (every
		 * downlink's queue as deep as before), but Kmax down for harm in the second round */
		for (int knob = 0; knob < 2; knob++) {
			for (; i <= 3; i++)
				run(t, i, deep_down, NULL);
			if (knob)
				run(t, i++, deep_down, NULL);
			canary = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
			assert_int_equal(canary->knob, knob ? CC_TN_KMAX : CC_TN_KMIN);
			assert_true(canary->to < canary->from);
			apply_all(t, 8, NULL);
			for (unsigned k = 0; k < ci && npending(t) == 0; k++)
				run(t, i++, knob && harm ? canary_deeper : deep_down, &canary);
			p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
			assert_true(!strstr(p->reason, "no clear gain") == (knob && harm));
			apply_all(t, 8, NULL);
		}
		assert_true(hold_of(t, "tor_down", "kmax_bytes", "down", &unless) > 0);
		assert_int_equal(unless, !harm);
		/* both held while ports do not pause */
		run(t, i++, deep_down, NULL);
		assert_int_equal(npending(t), 0);
		/* a restart keeps the kind of hold */
		st = cc_tn_state_json(t);
		t2 = tuner(CC_TN_AUTO);
		assert_int_equal(cc_tn_state_load(t2, st, err, sizeof(err)), 0);
		json_decref(st);
		assert_true(hold_of(t2, "tor_down", "kmax_bytes", "down", &unless) > 0);
		assert_int_equal(unless, !harm);
		cc_tn_free(t2);
		/* ports pause: rule 1 on the class with the deepest queues, Kmax down first, unless it
		 * was rolled back for harm (then Pmax up) */
		run(t, i++, storm, &pause);
		p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
		assert_non_null(strstr(p->reason, "paused"));
		assert_int_equal(p->knob, harm ? CC_TN_PMAX : CC_TN_KMAX);
		assert_true(harm ? p->to > p->from : p->to < p->from);
		cc_tn_free(t);
	}
	/* a softening move: the hosts regain rate faster (quiet queues, many CNPs, busy senders) */
	{
		struct cc_tn *t = tuner(CC_TN_AUTO);
		struct cc_tn_proposal *p;
		bool unless = true;
		int64_t i = 1;

		host_tx = 1000000; /* 80 % of 100 Gb/s */
		host_cnp = 10;
		for (; i <= 3; i++)
			run(t, i, NULL, NULL);
		p = pending_of(t, CC_TN_HOSTS, CC_TN_CANARY);
		assert_int_equal(p->knob, CC_TN_AI_RATE);
		apply_all(t, 8, NULL);
		for (unsigned k = 0; k < ci && npending(t) == 0; k++)
			run(t, i++, NULL, NULL);
		host_tx = 300000;
		host_cnp = 0;
		assert_non_null(strstr(pending_of(t, CC_TN_HOSTS, CC_TN_ROLLBACK)->reason, "no clear gain"));
		apply_all(t, 8, NULL);
		assert_true(hold_of(t, "hosts", "rpg_ai_rate", "up", &unless) > 0);
		assert_false(unless);
		cc_tn_free(t);
	}
}

/* A move against pauses rolled back because the fabric's pauses rose (a storm growing on its
 * own does that: the fabric-wide test cannot tell) is tried again after canary_intervals, not
 * tabu_intervals, and kept when the storm merely goes on; a second such rollback within
 * tabu_intervals holds it for that long; a forced step so rolled back is held for that long. */
static void test_storm_retried(void **state)
{
	const unsigned ci = cc_tn_defaults.canary_intervals;

	(void)state;
	for (int again = 0; again < 2; again++) {
		struct cc_tn *t = tuner(CC_TN_AUTO);
		uint64_t pause = 1; /* 1 % of the time: above the target */
		struct cc_tn_proposal *p;
		int64_t i = 1;

		for (; i <= 3; i++)
			run(t, i, storm, &pause);
		p = pending_of(t, CC_TN_HOSTS, CC_TN_CANARY);
		assert_int_equal(p->knob, CC_TN_CNP_GAP);
		assert_true(p->to < p->from);
		assert_non_null(strstr(p->reason, "paused"));
		apply_all(t, 8, NULL);
		/* the storm grows: 10 % of the time, above 3x before plus 1 % (on 16 of the 24
		 * ports: the ToR downlinks' hosts are paused, not the ports) */
		pause = 10;
		run(t, i++, storm, &pause);
		p = pending_of(t, CC_TN_HOSTS, CC_TN_ROLLBACK);
		assert_non_null(strstr(p->reason, "pause time rose from 0.667 % to 6.667 %"));
		apply_all(t, 8, NULL);
		assert_int_equal(hold_of(t, "hosts", "min_time_between_cnps", "down", NULL), ci);
		/* tried again once the hold is over, on signals that include the storm */
		for (unsigned k = 1; k < ci; k++) {
			struct cc_tn_proposal **v;
			size_t n;

			run(t, i++, storm, &pause);
			v = cc_tn_pending(t, &n);
			for (size_t j = 0; j < n; j++)
				assert_int_not_equal(v[j]->cls, CC_TN_HOSTS);
			apply_all(t, 8, NULL);
		}
		run(t, i++, storm, &pause);
		p = pending_of(t, CC_TN_HOSTS, CC_TN_CANARY);
		assert_int_equal(p->knob, CC_TN_CNP_GAP);
		apply_all(t, 8, NULL);
		if (!again) {
			struct cc_tn_dcqcn d;

			/* the storm goes on as it was: the move is kept and rolls out */
			for (unsigned k = 1; k < ci; k++) {
				run(t, i++, storm, &pause);
				apply_all(t, 8, NULL);
			}
			run(t, i++, storm, &pause);
			p = pending_of(t, CC_TN_HOSTS, CC_TN_ROLLOUT);
			apply_all(t, 8, NULL);
			run(t, i++, storm, &pause);
			apply_all(t, 8, NULL);
			cc_tn_class_dcqcn(t, CC_TN_HOSTS, &d);
			assert_true(d.min_time_between_cnps_us < dc0.min_time_between_cnps_us);
		} else {
			/* rolled back again for the same reason: now held for tabu_intervals */
			pause = 50;
			run(t, i++, storm, &pause);
			p = pending_of(t, CC_TN_HOSTS, CC_TN_ROLLBACK);
			assert_non_null(strstr(p->reason, "pause time rose"));
			apply_all(t, 8, NULL);
			assert_int_equal(hold_of(t, "hosts", "min_time_between_cnps", "down", NULL),
					 cc_tn_defaults.tabu_intervals);
		}
		cc_tn_free(t);
	}
	/* a step someone else chose is not one against pauses: held for tabu_intervals */
	{
		struct cc_tn *t = tuner(CC_TN_ADVISE);
		uint64_t pause = 0;
		const char *why;
		int64_t i = 1;

		for (; i <= 3; i++)
			run(t, i, storm, &pause);
		assert_int_equal(cc_tn_force(t, CC_TN_HOSTS, CC_TN_CNP_GAP, 2, &why), 0);
		apply_all(t, 8, NULL);
		pause = 10;
		run(t, i++, storm, &pause);
		assert_non_null(strstr(pending_of(t, CC_TN_HOSTS, CC_TN_ROLLBACK)->reason, "pause time rose"));
		apply_all(t, 8, NULL);
		assert_int_equal(hold_of(t, "hosts", "min_time_between_cnps", "down", NULL),
				 cc_tn_defaults.tabu_intervals);
		cc_tn_free(t);
	}
	/* never held longer than tabu_intervals */
	{
		struct cc_tn_policy pol = cc_tn_defaults;
		struct cc_tn *t;
		uint64_t pause = 1;
		int64_t i = 1;

		pol.mode = CC_TN_AUTO;
		pol.tabu_intervals = 2;
		t = tuner_with(&pol);
		for (; i <= 3; i++)
			run(t, i, storm, &pause);
		apply_all(t, 8, NULL);
		pause = 10;
		run(t, i++, storm, &pause);
		pending_of(t, CC_TN_HOSTS, CC_TN_ROLLBACK);
		apply_all(t, 8, NULL);
		assert_int_equal(hold_of(t, "hosts", "min_time_between_cnps", "down", NULL), 2);
		cc_tn_free(t);
	}
}

static void test_advise_waits(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_proposal *p;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	p = first_step(t, &i);
	assert_int_equal(p->state, CC_TN_WAITING);
	id = p->id;
	/* nothing else is proposed while it waits */
	for (int k = 0; k < 5; k++)
		assert_int_equal(run(t, i++, deep_down, NULL), 0);
	assert_int_equal(npending(t), 1);
	assert_int_equal(cc_tn_applied(t, id, CC_TN_OUT_APPLIED), -EALREADY); /* not approved */
	assert_int_equal(cc_tn_decide(t, 999, true), -ENOENT);
	assert_int_equal(cc_tn_decide(t, id, false), 0);
	assert_int_equal(cc_tn_decide(t, id, true), -EALREADY);
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_REJECTED);
	/* the next proposal is another move (the rejected one is tabu) */
	run(t, i++, deep_down, NULL);
	p = one(t);
	assert_int_not_equal(p->id, id);
	assert_false(p->cls == CC_TN_TOR_DOWN && p->knob == CC_TN_KMIN && p->to < p->from);
	assert_int_equal(cc_tn_decide(t, p->id, true), 0);
	assert_int_equal(one(t)->state, CC_TN_APPROVED);
	cc_tn_free(t);
}

static void test_failed_apply_undone(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_proposal *p;
	int64_t i = 1;
	size_t n;
	double from;

	(void)state;
	p = first_step(t, &i);
	n = p->nchanges;
	from = p->from;
	/* the first change went through, the second did not (or went through and its
	 * confirmation came too late): the step is undone on every member it named */
	assert_int_equal(cc_tn_applied(t, p->id, CC_TN_OUT_FAILED), 0);
	p = one(t);
	assert_int_equal(p->phase, CC_TN_ROLLBACK);
	assert_int_equal(p->nchanges, n);
	for (size_t k = 0; k < n; k++)
		assert_true(cc_tn_knob_get_ecn(&p->changes[k].ecn_to, p->knob) == from);
	assert_int_equal(cc_tn_applied(t, p->id, CC_TN_OUT_APPLIED), 0);
	run(t, i++, NULL, NULL);
	assert_true(step_over(t, p->step));
	cc_tn_free(t);
}

/* A change set that never reached the fabric (rocefabd could not store it): nothing to undo
 * on its members, only on its step's earlier ones — a rollout not sent goes back on the
 * canary's members, not on its own (no change from a value to the same value). */
static void test_not_sent_is_not_undone(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_proposal *p, *b;
	int64_t i = 1;
	size_t canary;

	(void)state;
	p = first_step(t, &i);
	assert_int_equal(cc_tn_applied(t, p->id, CC_TN_OUT_NOT_SENT), 0);
	b = one(t);
	assert_int_equal(b->phase, CC_TN_ROLLBACK);
	assert_int_equal(b->nchanges, 0);
	assert_non_null(strstr(b->reason, "could not be applied"));
	assert_int_equal(cc_tn_applied(t, b->id, CC_TN_OUT_APPLIED), 0);
	run(t, i++, deep_down, NULL);
	assert_true(step_over(t, p->step));
	cc_tn_free(t);

	/* the next step's canary applied and judged good, its rollout not sent */
	t = tuner(CC_TN_AUTO);
	cl.t = t;
	i = 1;
	p = first_step(t, &i);
	canary = p->nchanges;
	apply_all(t, 8, NULL);
	for (unsigned k = 1; k < cc_tn_defaults.canary_intervals; k++)
		assert_int_equal(run(t, i++, canary_look, &cl), 0);
	assert_int_equal(run(t, i++, canary_look, &cl), 1);
	p = one(t);
	assert_int_equal(p->phase, CC_TN_ROLLOUT);
	assert_int_equal(cc_tn_applied(t, p->id, CC_TN_OUT_NOT_SENT), 0);
	b = one(t);
	assert_int_equal(b->phase, CC_TN_ROLLBACK);
	assert_int_equal(b->nchanges, canary);
	for (size_t k = 0; k < b->nchanges; k++)
		for (size_t j = 0; j < p->nchanges; j++)
			assert_false(!strcmp(b->changes[k].node, p->changes[j].node) &&
				     !strcmp(b->changes[k].port, p->changes[j].port));
	cc_tn_free(t);
}

/* Turned off while a canary's changes may be on their way (approved, not yet reported
 * applied): the rollback names every member of it, not only those known changed. */
static void test_off_with_changes_on_their_way(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_policy p = *cc_tn_get_policy(t);
	struct cc_tn_proposal *c, *b;
	int64_t i = 1;

	(void)state;
	c = first_step(t, &i);
	assert_int_equal(c->state, CC_TN_APPROVED);
	p.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &p), 0);
	assert_int_equal(c->state, CC_TN_REJECTED);
	b = one(t);
	assert_int_equal(b->phase, CC_TN_ROLLBACK);
	assert_int_equal(b->nchanges, c->nchanges);
	for (size_t k = 0; k < b->nchanges; k++)
		assert_true(cc_tn_knob_get_ecn(&b->changes[k].ecn_to, b->knob) == c->from);
	cc_tn_free(t);
}

/* Every member of proposal p reports knob value v (as its agent would after applying it, or
 * not), but the first `skip`, which report `first`, and the one after them, `second` (when not
 * 0). */
static void report2(struct cc_tn *t, const struct cc_tn_proposal *p, size_t skip, double first, double second,
		    double v)
{
	for (size_t k = 0; k < p->nchanges; k++) {
		struct cc_tn_ecn e = p->changes[k].ecn_from;

		e.kmin_bytes = (uint64_t)(k < skip ? first : k == skip && second ? second : v);
		assert_int_equal(cc_tn_track_port(t, p->changes[k].node, p->changes[k].port, &e), 0);
	}
}

static void report(struct cc_tn *t, const struct cc_tn_proposal *p, size_t skip, double first, double v)
{
	report2(t, p, skip, first, 0, v);
}

/* A rollback that fails (an agent away) is tried again on the members still at the step's
 * value (not one an operator set meanwhile), up to five times; then the step is kept as
 * completed, so that the operator's rollback still undoes it (and again, when that fails).
 * Before, the first failure ended the step: its members stayed at the new value, undone by
 * nothing. */
static void test_failed_rollback_retried(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	struct cc_tn_proposal *c, *b;
	uint64_t step, rb0, rb;
	double from, to;
	size_t n;
	int64_t i = 1;

	(void)state;
	c = first_step(t, &i);
	step = c->step;
	from = c->from;
	to = c->to;
	n = c->nchanges;
	assert_true(n >= 3);
	assert_int_equal(cc_tn_applied(t, c->id, CC_TN_OUT_APPLIED), 0);
	report(t, c, 0, 0, to);
	pol.mode = CC_TN_OFF; /* the brake: the step is rolled back */
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	b = one(t);
	assert_int_equal(b->phase, CC_TN_ROLLBACK);
	assert_int_equal(b->nchanges, n);
	for (unsigned fail = 1; fail <= 5; fail++) {
		assert_int_equal(cc_tn_applied(t, b->id, CC_TN_OUT_FAILED), 0);
		/* the first member took it, an operator set the second, the others report the
		 * step's value still */
		report2(t, c, 1, from, 12345, to);
		assert_false(step_over(t, step));
		for (unsigned k = 1; k < cc_tn_defaults.canary_intervals; k++) {
			assert_int_equal(run(t, i++, NULL, NULL), 0);
			assert_int_equal(npending(t), 0);
		}
		run(t, i++, NULL, NULL);
		if (fail == 5)
			break;
		b = one(t);
		assert_int_equal(b->phase, CC_TN_ROLLBACK);
		assert_int_equal(b->step, step);
		assert_int_equal(b->nchanges, n - 2);
		assert_true(b->changes[0].ecn_to.kmin_bytes == from);
		assert_non_null(strstr(b->reason, "its rollback failed"));
	}
	/* given up: the step is completed as far as the tuner can tell, a proposal says so */
	assert_true(step_over(t, step));
	assert_int_equal(npending(t), 0);
	b = cc_tn_find(t, b->id + 1);
	assert_non_null(b);
	assert_int_equal(b->state, CC_TN_FAILED);
	assert_int_equal(b->nchanges, n - 2); /* the members still at the step's value */
	assert_non_null(strstr(b->error, "failed 5 times"));
	/* the members answer again: the operator's rollback undoes the step on those still at it;
	 * when that fails, the next one does (the step counted once among the rollbacks) */
	cc_tn_steps(t, &rb0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(cc_tn_rollback_all(t), 1);
		b = one(t);
		assert_int_equal(b->nchanges, n - 2);
		assert_true(b->changes[0].ecn_to.kmin_bytes == from);
		if (!k) {
			assert_int_equal(cc_tn_applied(t, b->id, CC_TN_OUT_FAILED), 0);
			report2(t, c, 1, from, 12345, to);
		}
	}
	assert_int_equal(cc_tn_applied(t, b->id, CC_TN_OUT_APPLIED), 0);
	assert_int_equal(cc_tn_rollback_all(t), 0);
	cc_tn_steps(t, &rb);
	assert_int_equal(rb, rb0);
	cc_tn_free(t);

	/* a rollback applied at the second try ends the step */
	t = tuner(CC_TN_AUTO);
	pol = *cc_tn_get_policy(t);
	i = 1;
	c = first_step(t, &i);
	step = c->step;
	assert_int_equal(cc_tn_applied(t, c->id, CC_TN_OUT_APPLIED), 0);
	report(t, c, 0, 0, c->to);
	pol.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	b = one(t);
	assert_int_equal(cc_tn_applied(t, b->id, CC_TN_OUT_FAILED), 0);
	for (unsigned k = 0; k < cc_tn_defaults.canary_intervals; k++)
		run(t, i++, NULL, NULL);
	b = one(t);
	assert_int_equal(cc_tn_applied(t, b->id, CC_TN_OUT_APPLIED), 0);
	report(t, c, 0, 0, c->from);
	run(t, i++, NULL, NULL);
	assert_true(step_over(t, step));
	assert_int_equal(cc_tn_rollback_all(t), 0); /* nothing left to undo */
	cc_tn_free(t);
}

/* A port whose XOFF was lowered under the old Kmax (plus loop_bytes) while a step of Kmax was
 * out is left at the new Kmax by the step's rollback: its switch would refuse the old value,
 * and with it the whole change set (the other ports then stayed at the step's value). */
static void test_rollback_keeps_a_port_whose_xoff_fell(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	struct cc_tn_proposal *c, *b;
	const char *why;
	int64_t i = 1;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, NULL, NULL);
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMAX, 200000, &why), 0);
	c = one(t);
	assert_true(c->nchanges >= 2);
	assert_int_equal(cc_tn_applied(t, c->id, CC_TN_OUT_APPLIED), 0);
	/* 400 KB + loop_bytes is above 360 KB, 200 KB + loop_bytes is not */
	assert_int_equal(cc_tn_track_xoff(t, "leaf0", c->changes[0].port, 360000), 0);
	pol.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	b = one(t);
	assert_int_equal(b->phase, CC_TN_ROLLBACK);
	assert_int_equal(b->nchanges, c->nchanges - 1);
	for (size_t k = 0; k < b->nchanges; k++) {
		assert_false(!strcmp(b->changes[k].node, c->changes[0].node) &&
			     !strcmp(b->changes[k].port, c->changes[0].port));
		assert_int_equal(b->changes[k].ecn_to.kmax_bytes, 400000);
	}
	cc_tn_free(t);
}

/* A canary waiting for an operator (or approved, not sent yet) whose members report another
 * value than the step moves from — another operator set one meanwhile — is withdrawn; applied
 * as it was, it would have set values chosen for the setting before, and its rollback would
 * have restored that setting instead of the operator's. */
static void test_stale_canary_withdrawn(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_proposal *p, *q;
	struct cc_tn_ecn e;
	json_t *j;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	p = first_step(t, &i);
	id = p->id;
	assert_int_equal(p->state, CC_TN_WAITING);
	run(t, i++, deep_down, NULL); /* nothing moved: still waiting */
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_WAITING);
	e = p->changes[0].ecn_from;
	e.kmin_bytes = 15000;
	assert_int_equal(cc_tn_track_port(t, p->changes[0].node, p->changes[0].port, &e), 0);
	run(t, i++, deep_down, NULL);
	p = cc_tn_find(t, id);
	assert_int_equal(p->state, CC_TN_REJECTED);
	assert_non_null(strstr(p->error, "withdrawn"));
	assert_non_null(strstr(p->error, "is 15000 now, not 20000"));
	j = cc_tn_proposal_json(p);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "withdrawn"));
	json_decref(j);
	/* made again (no hold), without the member set apart */
	run(t, i++, deep_down, NULL);
	q = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
	assert_true(q->id != id && q->knob == p->knob && q->from == p->from);
	assert_false(changes_port(q, p->changes[0].node, p->changes[0].port));
	/* approved, then a member moves before the next decision sends it: withdrawn too */
	id = q->id;
	assert_int_equal(cc_tn_decide(t, id, true), 0);
	e = q->changes[0].ecn_from;
	e.kmin_bytes = 16000;
	assert_int_equal(cc_tn_track_port(t, q->changes[0].node, q->changes[0].port, &e), 0);
	run(t, i++, deep_down, NULL);
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_REJECTED);
	cc_tn_free(t);
}

/* Turned off before an approved canary was sent (the caller says so): rejected with nothing
 * to roll back.  Before, a rollback of every member from the value it had to the same value
 * went out, counted among the rollbacks. */
static void test_off_before_the_canary_is_sent(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_policy p = *cc_tn_get_policy(t);
	struct cc_tn_proposal *c;
	uint64_t rb;
	int64_t i = 1;

	(void)state;
	c = first_step(t, &i);
	assert_int_equal(cc_tn_not_sent(t, 999), -ENOENT);
	assert_int_equal(cc_tn_not_sent(t, c->id), 0);
	p.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &p), 0);
	assert_int_equal(c->state, CC_TN_REJECTED);
	assert_int_equal(npending(t), 0);
	assert_true(idle(t));
	cc_tn_steps(t, &rb);
	assert_int_equal(rb, 0);
	assert_int_equal(cc_tn_not_sent(t, c->id), -EALREADY);
	cc_tn_free(t);
}

/* Whether GET /api/v1/cc lists a hold of class's knob in direction dir. */
static bool holds(struct cc_tn *t, const char *cls, const char *knob, const char *dir)
{
	json_t *st = cc_tn_json(t), *x;
	bool found = false;
	size_t i;

	json_array_foreach(json_object_get(st, "holds"), i, x)
		found |= !strcmp(json_string_value(json_object_get(x, "class")) ?: "", cls) &&
			 !strcmp(json_string_value(json_object_get(x, "knob")) ?: "", knob) &&
			 !strcmp(json_string_value(json_object_get(x, "direction")) ?: "", dir);
	json_decref(st);
	return found;
}

static void test_rollback_all(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_proposal *p, **v;
	struct cc_tn_ecn e;
	int64_t i = 1;
	size_t undone = 0, n;
	bool outside_undone = false;
	int steps;
	uint64_t rb0, rb;

	(void)state;
	p = first_step(t, &i);
	apply_all(t, 8, NULL);
	for (int k = 0; k < 20 && !step_over(t, p->step); k++) {
		run(t, i++, canary_look, &cl);
		apply_all(t, 8, NULL);
	}
	/* then a healthy fabric: whatever step started finishes, none starts */
	for (int k = 0; k < 20 && !idle(t); k++) {
		run(t, i++, NULL, NULL);
		apply_all(t, 8, NULL);
	}
	assert_true(idle(t));
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, 10000);
	/* an operator sets one port's Pmax below the policy's floor: its Kmin is undone all the
	 * same (the undo breaks nothing it does not break already) */
	e.pmax = 0.001;
	assert_int_equal(cc_tn_track_port(t, "leaf0", "h0", &e), 0);
	/* another one's Kmax below its Kmin: Kmin back up would still break Kmin < Kmax, kept */
	e = (struct cc_tn_ecn){ 10000, 5000, 0.01 };
	assert_int_equal(cc_tn_track_port(t, "leaf1", "h5", &e), 0);
	cc_tn_steps(t, &rb0);
	assert_true(holds(t, "tor_down", "kmin_bytes", "up")); /* the kept step's: not straight back */
	steps = cc_tn_rollback_all(t);
	assert_true(steps >= 1);
	/* undone by the operator: held from coming again, and the hold on going back is over (it
	 * held a repair of Kmin up to a raised floor back) */
	assert_true(holds(t, "tor_down", "kmin_bytes", "down"));
	assert_false(holds(t, "tor_down", "kmin_bytes", "up"));
	cc_tn_steps(t, &rb);
	assert_int_equal(rb, rb0 + (uint64_t)steps); /* asked for, counted all the same */
	v = cc_tn_pending(t, &n);
	for (size_t k = 0; k < n; k++)
		for (size_t c = 0; c < v[k]->nchanges; c++) {
			outside_undone |= !strcmp(v[k]->changes[c].node, "leaf0") && !strcmp(v[k]->changes[c].port, "h0") &&
					  v[k]->changes[c].ecn_to.kmin_bytes == ecn0.kmin_bytes;
			assert_false(!strcmp(v[k]->changes[c].node, "leaf1") && !strcmp(v[k]->changes[c].port, "h5"));
		}
	assert_true(outside_undone);
	apply_all(t, 8, &undone);
	assert_true(undone >= 7); /* all but leaf1:h5 */
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e); /* the port outside has no vote */
	assert_memory_equal(&e, &ecn0, sizeof(e)); /* every step undone, newest first */
	assert_int_equal(cc_tn_rollback_all(t), 0); /* nothing left to undo */
	cc_tn_free(t);
}

/* A canary of more than half the class (canary_share 0.6: 5 of 8 downlinks) is not the
 * class's setting either, until the step rolls out. */
static void test_canary_is_not_the_setting(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t;
	struct cc_tn_proposal *p;
	struct cc_tn_ecn e;
	size_t changed = 0;
	int64_t i = 1;

	(void)state;
	pol.canary_share = pol.max_share = 0.6;
	t = tuner_with(&pol);
	for (; i <= 3; i++)
		run(t, i, deep_down, NULL);
	p = one(t);
	assert_int_equal(p->cls, CC_TN_TOR_DOWN);
	assert_int_equal(p->knob, CC_TN_KMIN);
	assert_int_equal(p->nchanges, 5);
	apply_all(t, 8, &changed);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, ecn0.kmin_bytes);
	cc_tn_free(t);
}

/* An operator's rollback while a canary waits for a decision (advise): nothing of it was
 * applied, so it is rejected (not -EBUSY, which a step applied in part gets), nothing counts as
 * rolled back, and the same move is not proposed again at once. */
static void test_rollback_rejects_waiting(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_proposal *p, **v;
	uint64_t rb0, rb;
	int64_t i = 1;
	size_t n;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, deep_down, NULL);
	p = one(t);
	assert_int_equal(p->state, CC_TN_WAITING);
	cc_tn_steps(t, &rb0);
	assert_int_equal(cc_tn_rollback_all(t), 0);
	assert_int_equal(p->state, CC_TN_REJECTED);
	assert_int_equal(npending(t), 0);
	cc_tn_steps(t, &rb);
	assert_int_equal(rb, rb0);
	for (int k = 0; k < 5; k++, i++) {
		run(t, i, deep_down, NULL);
		v = cc_tn_pending(t, &n);
		for (size_t j = 0; j < n; j++)
			assert_false(v[j]->cls == p->cls && v[j]->knob == p->knob && (v[j]->to < v[j]->from) == (p->to < p->from));
	}
	cc_tn_free(t);
}

/* Turning the tuner off is a brake: waiting proposals drop, a step under way comes back, nothing
 * can be approved; turning it to auto lets a waiting canary go. */
static void test_mode_changes(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_policy pol = cc_tn_defaults;
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_proposal *p;
	struct cc_tn_ecn e;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	p = first_step(t, &i);
	id = p->id;
	assert_int_equal(p->state, CC_TN_WAITING);
	/* off: the waiting proposal is dropped, and nothing can be approved */
	pol.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_REJECTED);
	assert_int_equal(npending(t), 0);
	assert_true(idle(t));
	assert_int_equal(run(t, i++, deep_down, NULL), 0); /* and it proposes nothing */
	/* advise again: a new proposal; auto: it goes ahead by itself */
	pol.mode = CC_TN_ADVISE;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	while (!npending(t))
		run(t, i++, deep_down, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
	assert_int_equal(p->state, CC_TN_WAITING);
	pol.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	pol.mode = CC_TN_ADVISE;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	while (!npending(t))
		run(t, i++, deep_down, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
	pol.mode = CC_TN_AUTO;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	assert_int_equal(p->state, CC_TN_APPROVED);
	apply_all(t, 8, NULL);
	run(t, i++, canary_look, &cl);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	/* off while the canary is out: it comes back, approved without asking */
	pol.mode = CC_TN_OFF;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_int_equal(p->state, CC_TN_APPROVED);
	assert_non_null(strstr(p->reason, "turned off"));
	apply_all(t, 8, NULL);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, ecn0.kmin_bytes);
	/* nothing waiting can be approved while off */
	assert_int_equal(cc_tn_decide(t, 999, true), -ENOENT);
	cc_tn_free(t);
}

/* A member an operator set apart keeps its value through a step and its undoing. */
static void test_outlier_kept(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_ecn apart = ecn0;
	struct cc_tn_proposal **v;
	size_t n;
	int64_t i = 1;

	(void)state;
	apart.kmin_bytes = 30000;
	assert_int_equal(cc_tn_track_port(t, "leaf0", "h0", &apart), 0);
	for (; i <= 3; i++)
		run(t, i, deep_down, NULL);
	v = cc_tn_pending(t, &n);
	for (size_t k = 0; k < n; k++)
		for (size_t c = 0; c < v[k]->nchanges; c++)
			assert_false(!strcmp(v[k]->changes[c].node, "leaf0") && !strcmp(v[k]->changes[c].port, "h0"));
	cc_tn_free(t);
}

static void peak_at(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	(void)pause;
	if (!strcmp(node, "leaf0") && !strcmp(port, "h1"))
		*peak = *(uint64_t *)ctx;
}

/* Intervals summed for a longer decision interval: counters add, peaks take the larger,
 * other gauges the later reading, links and speeds kept. */
static void test_snapshot_merge(void **state)
{
	uint64_t big = 500000, small = 2000;
	struct cc_snap *a = fabric(IV, peak_at, &big), *b = fabric(2 * IV, peak_at, &small);
	struct cc_snap *acc = cc_snap_new(1u << PRIO, 0, 0);
	const struct cc_prio *e;
	int p, h;

	(void)state;
	assert_int_equal(cc_snap_merge(acc, a), 0);
	assert_int_equal(cc_snap_merge(acc, b), 0);
	cc_snap_finish(acc);
	assert_int_equal(acc->interval_us, 2 * IV);
	assert_int_equal(acc->t_us, 2 * IV);
	assert_int_equal(acc->nports, a->nports);
	p = cc_snap_find_port(acc, "leaf0", "h1");
	e = cc_snap_prio(acc, (uint32_t)p, PRIO);
	assert_int_equal(e->v[CF_TX_BYTES], 600000);
	assert_int_equal(e->v[CF_QUEUE_PEAK], 500000); /* the larger */
	assert_int_equal(e->v[CF_QUEUE_DEPTH], 1000);  /* the later reading */
	assert_int_equal(acc->ports[p].speed_mbps, MBPS);
	h = cc_snap_find_port(acc, "h1", "nic0:1");
	assert_int_equal(acc->ports[p].peer, (uint32_t)h);
	assert_int_equal(acc->ports[h].pv[CP_TX_BYTES], 600000);
	cc_snap_free(a);
	cc_snap_free(b);
	cc_snap_free(acc);
}

/* One node of a snapshot: port pname of node (of kind), tx_bytes on PRIO, linked to peer's
 * port "p" on node peer (a host). */
static struct cc_snap *one_node(const char *node, enum cc_node_kind kind, const char *pname, uint64_t tx,
				const char *peer)
{
	struct cc_snap *s = cc_snap_new(1u << PRIO, IV, IV);
	int n = cc_snap_node(s, node, kind), p = cc_snap_port(s, (uint32_t)n, pname);
	int h = cc_snap_port(s, (uint32_t)cc_snap_node(s, peer, CC_HOST), "p");
	struct cc_prio *e = cc_snap_prio(s, (uint32_t)p, PRIO);

	e->v[CF_TX_BYTES] = tx;
	e->have |= 1u << CF_TX_BYTES;
	assert_int_equal(cc_snap_link(s, (uint32_t)p, (uint32_t)h), 0);
	cc_snap_finish(s);
	return s;
}

/* An agent's role flipped between two intervals of a sum (a switch's agent that first reported
 * as a host): the node takes its new kind with the new readings, and what it summed as the
 * other kind is dropped, its ports silent and unlinked.  Before, the node was left out of the
 * sum from the flip on: the tuner decided a whole interval without it. */
static void test_snapshot_merge_role_flip(void **state)
{
	struct cc_snap *a = one_node("leaf1", CC_HOST, "leaf1:h4", 1000, "h4");
	struct cc_snap *b = one_node("leaf1", CC_SWITCH, "h4", 7000, "h4");
	struct cc_snap *acc = cc_snap_new(1u << PRIO, 0, 0);
	int n, old, now, h;

	(void)state;
	assert_int_equal(cc_snap_merge(acc, a), 0);
	assert_int_equal(cc_snap_merge(acc, b), 0);
	cc_snap_finish(acc);
	n = cc_snap_find_node(acc, "leaf1");
	assert_true(n >= 0);
	assert_int_equal(acc->nodes[n].kind, CC_SWITCH);
	now = cc_snap_find_port(acc, "leaf1", "h4");
	old = cc_snap_find_port(acc, "leaf1", "leaf1:h4");
	h = cc_snap_find_port(acc, "h4", "p");
	assert_true(now >= 0 && old >= 0 && h >= 0);
	assert_int_equal(cc_snap_prio(acc, (uint32_t)now, PRIO)->v[CF_TX_BYTES], 7000);
	assert_false(acc->ports[now].silent);
	assert_int_equal(acc->ports[now].peer, (uint32_t)h);
	assert_int_equal(acc->ports[h].peer, (uint32_t)now);
	assert_true(acc->ports[old].silent);
	assert_int_equal(acc->ports[old].peer, CC_NONE);
	assert_int_equal(cc_snap_prio(acc, (uint32_t)old, PRIO)->have, 0);
	/* and back again: the port summed before the flip has readings again */
	assert_int_equal(cc_snap_merge(acc, a), 0);
	assert_int_equal(acc->nodes[n].kind, CC_HOST);
	assert_false(acc->ports[old].silent);
	assert_int_equal(cc_snap_prio(acc, (uint32_t)old, PRIO)->v[CF_TX_BYTES], 1000);
	assert_true(acc->ports[now].silent);
	cc_snap_free(a);
	cc_snap_free(b);
	cc_snap_free(acc);
}

/* Two steps of Kmax kept one after the other (400 -> 300 -> 200 KB), then an operator sets one
 * port of both to 250 KB: undoing every step leaves that port as the operator set it.  Before,
 * the newer step's undo skipped it but took the tuner's belief of it to 300 KB, so the older
 * step's undo found it at its own value and sent 400 KB over the operator's. */
static void test_rollback_all_leaves_an_operators_value(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	const double to[2] = { 300000, 200000 };
	struct cc_tn_proposal **v;
	struct cc_tn_ecn e;
	const char *why;
	int64_t i = 1;
	size_t n, undone = 0;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, NULL, NULL);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMAX, to[s], &why), 0);
		for (int k = 0; k < 20 && !idle(t); k++) {
			apply_all(t, 8, NULL);
			run(t, i++, canary_look, &cl);
		}
		apply_all(t, 8, NULL);
		run(t, i++, NULL, NULL);
		assert_true(idle(t));
		cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
		assert_int_equal(e.kmax_bytes, (uint64_t)to[s]);
	}
	e.kmax_bytes = 250000;
	assert_int_equal(cc_tn_track_port(t, "leaf0", "h0", &e), 0);
	assert_int_equal(cc_tn_rollback_all(t), 2);
	v = cc_tn_pending(t, &n);
	assert_int_equal(n, 2);
	for (size_t k = 0; k < n; k++) {
		assert_false(changes_port(v[k], "leaf0", "h0"));
		undone += v[k]->nchanges;
	}
	assert_int_equal(undone, 14); /* 7 ports, each by both undos */
	cc_tn_free(t);
}

/* An operator's rollback of a completed step that failed leaves the step to undo again, and
 * the next rollback finds its members at the step's value (before, the first had taken the
 * tuner's belief of them to the old value: the second found none, sent nothing and called the
 * step undone). */
static void test_failed_rollback_all_again(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_proposal *p;
	int64_t i = 1;
	size_t n;

	(void)state;
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000);
	for (int k = 0; k < 20 && !idle(t); k++) {
		apply_all(t, 8, NULL);
		run(t, i++, canary_look, &cl);
	}
	assert_true(idle(t));
	assert_int_equal(cc_tn_rollback_all(t), 1);
	p = one(t);
	n = p->nchanges;
	assert_int_equal(n, 8);
	assert_int_equal(cc_tn_applied(t, p->id, CC_TN_OUT_FAILED), 0);
	assert_int_equal(cc_tn_rollback_all(t), 1);
	p = one(t);
	assert_int_equal(p->nchanges, n);
	assert_int_equal(p->changes[0].ecn_to.kmax_bytes, 400000);
	cc_tn_free(t);
}

/* A canary is checked again as it is approved, as the mode goes to auto and before it is sent:
 * one whose value would now leave less than a control loop below a port's XOFF threshold
 * (lowered since it was made) is withdrawn (rejected, with why), not sent.  Before, only its
 * members' values were compared, at the next decision (rocefabd sends an approved canary at
 * its next pass, which may come first). */
static void test_approval_checked_again(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	struct cc_tn_proposal *p;
	const char *why;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, NULL, NULL);
	/* forced steps need no approval: this one's canary is approved, not sent yet */
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000, &why), 0);
	p = one(t);
	id = p->id;
	assert_int_equal(cc_tn_sendable(t, id), 0);
	/* XOFF 400 KB: 300 KB leaves 100 KB, less than loop_bytes (150 KB) */
	assert_int_equal(cc_tn_track_xoff(t, p->changes[0].node, p->changes[0].port, 400000), 0);
	assert_int_equal(cc_tn_sendable(t, id), -ESTALE);
	p = cc_tn_find(t, id);
	assert_int_equal(p->state, CC_TN_REJECTED);
	assert_non_null(strstr(p->error, "withdrawn"));
	assert_non_null(strstr(p->error, "less than one control loop"));
	assert_true(idle(t));
	assert_int_equal(cc_tn_sendable(t, id), -EALREADY);
	cc_tn_free(t);

	/* waiting for an operator, its port's XOFF lowered: the operator's apply is refused */
	t = tuner(CC_TN_ADVISE);
	i = 1;
	p = first_step(t, &i);
	id = p->id;
	assert_int_equal(p->state, CC_TN_WAITING);
	assert_int_equal(cc_tn_track_xoff(t, p->changes[0].node, p->changes[0].port, 400000), 0);
	assert_int_equal(cc_tn_decide(t, id, true), -ESTALE);
	p = cc_tn_find(t, id);
	assert_int_equal(p->state, CC_TN_REJECTED);
	assert_non_null(strstr(p->error, "less than one control loop"));
	assert_int_equal(npending(t), 0);
	/* made again without that port; another one's XOFF lowered, then auto: not approved */
	run(t, i++, deep_down, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_CANARY);
	assert_true(p->id != id);
	id = p->id;
	assert_int_equal(cc_tn_track_xoff(t, p->changes[0].node, p->changes[0].port, 400000), 0);
	pol.mode = CC_TN_AUTO;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	p = cc_tn_find(t, id);
	assert_int_equal(p->state, CC_TN_REJECTED);
	assert_non_null(strstr(p->error, "withdrawn"));
	assert_true(idle(t));
	cc_tn_free(t);
}

/* A policy narrowed while a step is out: the step is rolled back at the next decision, not
 * judged, rolled out or left on its canary outside the policy in force.  Before, a forced step
 * (kept unless it hurts) rolled out to values the policy no longer allowed. */
static void test_policy_narrowed_under_a_step(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	struct cc_tn_proposal *p;
	int64_t i = 1;

	(void)state;
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_PMAX, 0.5);
	apply_all(t, 8, NULL);
	pol.pmax_ceiling = 0.2;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	run(t, i++, NULL, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_non_null(strstr(p->reason, "pmax at 0.5 breaks this now: pmax is outside the policy's pmax_floor..pmax_ceiling"));
	assert_int_equal(p->nchanges, 4);
	for (size_t k = 0; k < p->nchanges; k++)
		assert_true(p->changes[k].ecn_to.pmax == ecn0.pmax);
	apply_all(t, 8, NULL);
	run(t, i++, NULL, NULL);
	assert_true(idle(t));
	cc_tn_free(t);
}

/* Force takes what a step may take: a whole number where the knob takes one (a step to
 * 200000.4 would set 200000 on its members, which its rollback would never find at the step's
 * value), inside the policy's range (dce_tcp_g 2^32 went through as 0). */
static void test_force_refused(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	const char *why;
	int64_t i = 1;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, NULL, NULL);
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMAX, 200000.4, &why), -EINVAL);
	assert_non_null(strstr(why, "whole"));
	assert_int_equal(cc_tn_force(t, CC_TN_HOSTS, CC_TN_ALPHA_G, 4294967296.0, &why), -EINVAL);
	assert_non_null(strstr(why, "range"));
	assert_int_equal(cc_tn_force(t, CC_TN_HOSTS, CC_TN_ALPHA_G, NAN, &why), -EINVAL);
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_PMAX, 0.05, &why), 0); /* Pmax: any */
	cc_tn_free(t);
}

/* A counter a port does not report is left out, not taken as zero: with every link paused half
 * the time (an edge link's host paused, not its switch port), the fabric's pause share is 7/18
 * though one switch reports no pause counter (18 ports report: 14 paused, leaf0's 4 downlinks
 * not; before, leaf1's 6 ports counted as never paused: 7/24); drops per port are those of the
 * ports that report discards. */
static void test_unreported_counter_not_zero(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	uint64_t half = IV / 2;
	json_t *j;

	(void)state;
	pause_unreported = "leaf1";
	discards_reported = "leaf0";
	run(t, 1, storm, &half);
	pause_unreported = discards_reported = NULL;
	j = cc_tn_json(t);
	assert_float_equal(json_number_value(json_object_get(json_object_get(j, "signals"), "pause_share")),
			   7.0 / 18, 1e-12);
	/* drops per port over the ports that report discards (before: over every port, 3) */
	assert_float_equal(json_number_value(json_object_get(json_object_get(j, "signals"), "drops_per_port")), 10,
			   1e-12);
	json_decref(j);
	cc_tn_free(t);
}

/* A host the tuner tracks (its DCQCN in the database) but that is not in the snapshot — down,
 * gone, or reporting no fast lane: nothing measures it — is in no step of its class. */
static void test_absent_host_not_moved(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_proposal **v;
	int64_t i = 1;
	size_t n;

	(void)state;
	assert_int_equal(cc_tn_track_host(t, "h9", &dc0), 0);
	quiet_then_force(t, &i, CC_TN_HOSTS, CC_TN_CNP_GAP, 2);
	for (int k = 0; k < 20 && !idle(t); k++) {
		v = cc_tn_pending(t, &n);
		for (size_t c = 0; c < n; c++)
			for (size_t m = 0; m < v[c]->nchanges; m++)
				assert_string_not_equal(v[c]->changes[m].node, "h9");
		apply_all(t, 8, NULL);
		run(t, i++, NULL, NULL);
	}
	cc_tn_free(t);
}

/* An interval summed from two: in the first, h1's agent reported as a switch (port "a"), in the
 * second as the host it is (cc_snap_merge keeps the port it had, silent, unlinked). */
static void run_flipped(struct cc_tn *t, int64_t i)
{
	struct cc_snap *s = fabric(i * IV, NULL, NULL), *was = cc_snap_new(1u << PRIO, i * IV - IV / 2, IV / 2);
	struct cc_snap *acc = cc_snap_new(1u << PRIO, 0, 0);
	int p = cc_snap_port(was, (uint32_t)cc_snap_node(was, "h1", CC_SWITCH), "a");
	struct cc_tn_input in = { .prio = PRIO, .xoff_bytes = XOFF, .probe_p99_us = -1 };

	cc_snap_prio(was, (uint32_t)p, PRIO)->v[CF_TX_BYTES] = 1000;
	cc_snap_prio(was, (uint32_t)p, PRIO)->have |= 1u << CF_TX_BYTES;
	cc_snap_finish(was);
	assert_int_equal(cc_snap_merge(acc, was), 0);
	assert_int_equal(cc_snap_merge(acc, s), 0);
	cc_snap_finish(acc);
	in.snap = acc;
	assert_true(cc_tn_run(t, &in) >= 0);
	cc_snap_free(was);
	cc_snap_free(s);
	cc_snap_free(acc);
}

/* A host whose agent's role flipped within the decision interval is measured by its port with
 * readings (a review: the host took the first port of its node, the silent one its switch role
 * left: nothing sent, no ToR port). */
static void test_a_host_after_a_role_flip_is_measured(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t;
	json_t *j, *one;

	(void)state;
	pol.mode = CC_TN_ADVISE;
	pol.nhost_classes = 1;
	snprintf(pol.host_classes[0].name, sizeof(pol.host_classes[0].name), "one");
	snprintf(pol.host_classes[0].hosts, sizeof(pol.host_classes[0].hosts), "h1");
	t = tuner_with(&pol);
	for (int64_t i = 1; i <= 3; i++)
		run_flipped(t, i);
	j = cc_tn_json(t);
	one = json_object_get(json_object_get(json_object_get(j, "signals"), "host_classes"), "one");
	assert_non_null(one);
	assert_true(json_number_value(json_object_get(one, "host_util")) > 0);
	json_decref(j);
	cc_tn_free(t);
}

/* An interval while the detector names a host's fault (fault), or none (NULL). */
static int run_fault(struct cc_tn *t, int64_t i, look_fn look, const char *fault)
{
	return run_input(t, i, look, NULL, -1, fault);
}

/* (a test that fails leaves none of its fabric's faults to the tests after it) */
static int faults_cleared(void **state)
{
	(void)state;
	host_pausing = NULL;
	host_pausing_own = false;
	pause_unreported = NULL;
	host_silent = host_absent = host_dual = host_pausing_at = NULL;
	return 0;
}

/* Whether GET /api/v1/cc's harder_held_for is want (NULL: absent). */
static bool held_for(struct cc_tn *t, const char *want)
{
	json_t *j = cc_tn_json(t);
	const char *why = json_string_value(json_object_get(j, "harder_held_for"));
	bool r = want ? why && !strcmp(why, want) : !why;

	if (!r)
		print_error("harder_held_for: %s, not %s\n", why ?: "(none)", want ?: "(none)");
	json_decref(j);
	return r;
}

/* While the detector names a host's fault (a slow receiver), deep queues start no harder step:
 * its pauses and the queues they deepen are not congestion control's to fix (an operator's
 * trial: a slow receiver took the spines' Kmin to the floor, each step kept as "a harder move
 * against pauses needs no gain to show").  GET /api/v1/cc says why; once it is gone, the step
 * comes. */
static void test_no_harder_step_for_a_host_fault(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	json_t *j;
	size_t n;
	int64_t i = 1;

	(void)state;
	for (; i <= 6; i++)
		assert_int_equal(run_fault(t, i, deep_down, "slow_receiver h3"), 0);
	cc_tn_pending(t, &n);
	assert_int_equal(n, 0);
	j = cc_tn_json(t);
	assert_string_equal(json_string_value(json_object_get(j, "harder_held_for")), "slow_receiver h3");
	json_decref(j);
	/* over: held while its pauses are in the window of signals (3 intervals) */
	for (int k = 0; k < 3; k++)
		run_fault(t, i++, deep_down, NULL);
	cc_tn_pending(t, &n);
	assert_int_equal(n, 0);
	assert_true(held_for(t, "slow_receiver h3, over: its pauses still in the last intervals' signals"));
	run_fault(t, i++, deep_down, NULL);
	cc_tn_pending(t, &n);
	assert_int_equal(n, 1);
	j = cc_tn_json(t);
	assert_null(json_object_get(j, "harder_held_for"));
	json_decref(j);
	cc_tn_free(t);
}

/* A harder step against pauses that a fault comes upon while its canary is out is judged as any
 * harder step: kept for a clear gain only, not as "a harder move against pauses needs no gain
 * to show" (an operator's trial: the hosts' CNP step made at 600 us rolled out at 900 us, the
 * slow receiver named from 700 us). */
static void test_no_free_pass_during_a_fault(void **state)
{
	const unsigned ci = cc_tn_defaults.canary_intervals;
	uint64_t pause = IV / 10;

	(void)state;
	for (int fault = 0; fault < 2; fault++) {
		struct cc_tn *t = tuner(CC_TN_AUTO);
		struct cc_tn_proposal *p;
		int64_t i = 1;

		for (; i <= 3; i++)
			run(t, i, storm, &pause);
		p = pending_of(t, CC_TN_HOSTS, CC_TN_CANARY);
		assert_int_equal(p->knob, CC_TN_CNP_GAP);
		apply_all(t, 8, NULL);
		for (unsigned k = 0; k < ci; k++)
			run_input(t, i++, storm, &pause, -1, fault ? "slow_receiver h3" : NULL);
		if (fault)
			assert_non_null(strstr(pending_of(t, CC_TN_HOSTS, CC_TN_ROLLBACK)->reason, "no clear gain"));
		else
			assert_non_null(
				strstr(pending_of(t, CC_TN_HOSTS, CC_TN_ROLLOUT)->reason, "needs no gain to show"));
		cc_tn_free(t);
	}
}

/* Advise mode: a harder canary waiting for an operator when a fault begins is withdrawn at the
 * next decision, with why (made on the signals before it; an operator's trial applied one during
 * a hold, unwarned); so is one made after a hold, when a storm comes. */
static void test_waiting_harder_canary_withdrawn_during_a_fault(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_proposal *p;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	p = first_step(t, &i);
	id = p->id;
	assert_true(p->state == CC_TN_WAITING && p->to < p->from);
	run_fault(t, i++, deep_down, "slow_receiver h3");
	p = cc_tn_find(t, id);
	assert_true(p && p->state == CC_TN_REJECTED);
	assert_non_null(strstr(p->error, "withdrawn: no harder step while the fabric has a fault (slow_receiver h3)"));
	assert_int_equal(cc_tn_decide(t, id, true), -EALREADY); /* (not waiting any more) */
	assert_int_equal(npending(t), 0);
	for (int k = 0; k < 4; k++) /* the hold over (3 more intervals): a canary again */
		run(t, i++, deep_down, NULL);
	id = one(t)->id;
	run_fault(t, i++, NULL, "pause_storm h5");
	p = cc_tn_find(t, id);
	assert_true(p && p->state == CC_TN_REJECTED);
	assert_non_null(strstr(p->error, "(pause_storm h5)"));
	cc_tn_free(t);
}

/* A host that pauses its switch port is a fault of its own, named or not: while h3 pauses
 * leaf0's port 5 % of the time and no switch pauses, deep queues start no harder step (the
 * operator's trial's slow receiver paused its port below the detector's 20 %: unnamed, it drove
 * harder steps); as the switch counts it or, the switch counting no pauses, as the host counts
 * the pauses it sent; or h3's agent silent, as the switch counts it (a trial: a silent slow
 * receiver's pauses took the ToR downlinks' Kmin from 1 MB to 125 KB).  A host pausing 0.5 %
 * holds nothing, nor does a policy's host_pause_hold of 0; nor one NIC's pauses among the
 * switches' (congestion: every port paused 10 %).  The detector's name for a fault comes
 * first. */
static void test_no_harder_step_for_a_pausing_host(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	uint64_t pause = IV / 10;
	struct cc_tn *t;
	int64_t i = 1;

	(void)state;
	pol.mode = CC_TN_ADVISE;
	for (int own = 0; own < 3; own++) { /* the switch's count, the host's own, h3 silent */
		t = tuner_with(&pol);
		host_pausing = "h3";
		host_pausing_own = own == 1;
		host_silent = own == 2 ? "h3" : NULL;
		pause_unreported = own == 1 ? "leaf0" : NULL;
		host_pausing_us = IV / 20;
		for (i = 1; i <= 6; i++)
			run(t, i, deep_down, NULL);
		assert_int_equal(npending(t), 0);
		assert_true(held_for(t, "host h3 pauses its switch port 5.0 % of the time; hosts' own pauses: 100 % of "
					"the fabric's"));
		host_pausing_us = IV / 200;
		for (int k = 0; k < 4; k++)
			run(t, i++, deep_down, NULL);
		/* below 1 % over the last 4 intervals, its pauses still in the window's signals */
		assert_int_equal(npending(t), 0);
		for (int k = 0; k < 3; k++)
			run(t, i++, deep_down, NULL);
		assert_true(npending(t) > 0 && held_for(t, NULL));
		host_pausing_own = false;
		pause_unreported = NULL;
		host_silent = NULL;
		cc_tn_free(t);
	}
	/* among the switches' pauses */
	t = tuner_with(&pol);
	host_pausing_us = IV / 20;
	for (i = 1; i <= 3; i++)
		run(t, i, storm, &pause);
	assert_int_equal(pending_of(t, CC_TN_HOSTS, CC_TN_CANARY)->knob, CC_TN_CNP_GAP);
	assert_true(held_for(t, NULL));
	cc_tn_free(t);
	/* the detector's name first */
	t = tuner_with(&pol);
	for (i = 1; i <= 3; i++)
		run_fault(t, i, deep_down, "slow_receiver h3");
	assert_int_equal(npending(t), 0);
	assert_true(held_for(t, "slow_receiver h3"));
	cc_tn_free(t);
	/* not with host_pause_hold 0 */
	pol.host_pause_hold = 0;
	t = tuner_with(&pol);
	for (i = 1; i <= 3; i++)
		run(t, i, deep_down, NULL);
	assert_true(npending(t) > 0 && held_for(t, NULL));
	host_pausing = NULL;
	cc_tn_free(t);
}

/* A host with two RoCE ports pausing on one: read on either (before, only the port classify()
 * kept, the first by name, was: h3 pausing leaf1's port to its second one held nothing). */
static void test_a_host_pausing_on_its_second_port(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t;

	(void)state;
	pol.mode = CC_TN_ADVISE;
	host_dual = host_pausing = "h3";
	host_pausing_at = "h3-2";
	host_pausing_us = IV / 20;
	t = tuner_with(&pol);
	for (int64_t i = 1; i <= 6; i++)
		run(t, i, deep_down, NULL);
	assert_int_equal(npending(t), 0);
	assert_true(held_for(t, "host h3 pauses its switch port 5.0 % of the time; hosts' own pauses: 100 % of "
				"the fabric's"));
	cc_tn_free(t);
	faults_cleared(NULL);
}

/* An operator's trial: a slow receiver whose agent never reported (h3, not in the snapshot:
 * leaf0's port to it has no far end) held nothing, and its port, taken for a ToR uplink, was
 * stepped with them, its deep queue in their signals: every ToR port's Kmin went to 31 KB.  Its
 * pauses hold the harder steps, and no step of the ToR uplinks moves it. */
static void test_a_tor_port_whose_far_end_is_unknown(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn_proposal **v;
	struct cc_tn *t;
	size_t n, up = 0;
	const char *why;
	int64_t i;

	(void)state;
	pol.mode = CC_TN_ADVISE;
	host_absent = host_pausing = "h3";
	host_pausing_us = IV / 20;
	t = tuner_with(&pol);
	for (i = 1; i <= 6; i++)
		run(t, i, deep_down, NULL);
	assert_int_equal(npending(t), 0);
	assert_true(held_for(t, "the far end of leaf0 h3 (no readings of it: a host without an agent?) pauses it 5.0 % "
				"of the time; hosts' own pauses: 100 % of the fabric's"));
	cc_tn_free(t);
	host_pausing = NULL;
	pol.mode = CC_TN_AUTO;
	t = tuner_with(&pol);
	for (i = 1; i <= 3; i++)
		run(t, i, NULL, NULL);
	assert_int_equal(cc_tn_force(t, CC_TN_TOR_UP, CC_TN_KMIN, 15000, &why), 0);
	for (int k = 0; k < 20 && !idle(t); k++) {
		apply_all(t, 8, NULL);
		run(t, i++, NULL, NULL);
	}
	v = cc_tn_made_since(t, 0, &n);
	for (size_t k = 0; k < n; k++)
		for (size_t c = 0; c < v[k]->nchanges; c++) {
			assert_false(!strcmp(v[k]->changes[c].node, "leaf0") && !strcmp(v[k]->changes[c].port, "h3"));
			up += v[k]->cls == CC_TN_TOR_UP;
		}
	assert_true(up >= 4); /* (the uplinks moved: 2 per leaf) */
	cc_tn_free(t);
}

/* Two steps of Kmin kept (20 -> 15 -> 12 KB), then a Kmin floor of 16 KB: undoing every step
 * takes the ports through 15 KB (not allowed, so not sent) to the 20 KB before both, in the
 * older undo.  Before, the newer undo refused the ports and the older one found them at 12 KB,
 * not its own 15 KB: both "applied" with no change, the ports left below the floor. */
static uint64_t t_rolled_back(struct cc_tn *t)
{
	uint64_t rb;

	cc_tn_steps(t, &rb);
	return rb;
}

static void test_rollback_all_through_a_refused_value(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_proposal *q;
	uint64_t rb;
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	const double to[2] = { 15000, 12000 };
	struct cc_tn_proposal **v;
	struct cc_tn_ecn e;
	const char *why;
	int64_t i = 1;
	size_t n;

	(void)state;
	for (; i <= 3; i++)
		run(t, i, NULL, NULL);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(cc_tn_force(t, CC_TN_TOR_DOWN, CC_TN_KMIN, to[s], &why), 0);
		for (int k = 0; k < 20 && !idle(t); k++) {
			apply_all(t, 8, NULL);
			run(t, i++, canary_look, &cl);
		}
		assert_true(idle(t));
	}
	pol.kmin_floor_bytes = 16000;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	rb = t_rolled_back(t);
	assert_int_equal(cc_tn_rollback_all(t), 2);
	v = cc_tn_pending(t, &n);
	assert_int_equal(n, 1);
	/* the newer undo: 15 KB is below the floor, nothing to send; applied as it is, said so,
	 * and no rollback counted (before: approved, then applied and counted, nothing moved) */
	q = cc_tn_find(t, v[0]->id - 1);
	assert_non_null(q);
	assert_int_equal(q->nchanges, 0);
	assert_int_equal(q->state, CC_TN_APPLIED);
	assert_non_null(strstr(q->reason, ": 8 members not taken to 15000: the policy refuses it (nothing sent)"));
	assert_int_equal(t_rolled_back(t), rb + 1);
	assert_int_equal(v[0]->nchanges, 8);
	for (size_t k = 0; k < v[0]->nchanges; k++) {
		assert_int_equal(v[0]->changes[k].ecn_to.kmin_bytes, 20000);
		assert_int_equal(v[0]->changes[k].ecn_from.kmin_bytes, 12000); /* what they have */
	}
	/* the older undo fails: both steps are to undo again, from what the ports report */
	assert_int_equal(cc_tn_applied(t, v[0]->id, CC_TN_OUT_FAILED), 0);
	for (int h = 0; h < 8; h++) {
		char node[16], port[16];

		snprintf(node, sizeof(node), "leaf%d", h / 4);
		snprintf(port, sizeof(port), "h%d", h);
		e = ecn0;
		e.kmin_bytes = 12000;
		assert_int_equal(cc_tn_track_port(t, node, port, &e), 0);
	}
	/* the floor back down: the newer undo sends its changes now, and is counted now (a review:
	 * it was marked counted when it sent nothing, and never counted after) */
	pol.kmin_floor_bytes = cc_tn_defaults.kmin_floor_bytes;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	assert_int_equal(cc_tn_rollback_all(t), 2);
	v = cc_tn_pending(t, &n);
	assert_int_equal(n, 2);
	assert_int_equal(v[0]->nchanges, 8);
	assert_int_equal(v[1]->nchanges, 8);
	assert_int_equal(t_rolled_back(t), rb + 2);
	apply_all(t, 8, NULL);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmin_bytes, 20000);
	cc_tn_free(t);
}

/* The pending rollback of a class, NULL when none. */
static struct cc_tn_proposal *rollback_of(struct cc_tn *t, enum cc_tn_class cls)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t, &n);

	for (size_t i = 0; i < n; i++)
		if (v[i]->cls == cls && v[i]->phase == CC_TN_ROLLBACK)
			return v[i];
	return NULL;
}

/* A floor raised over the whole class while a canary runs: the rest cannot follow, so the
 * step is rolled back at its verdict.  Before, its rollout moved nothing and the step was
 * called complete, half the class at the new value. */
static void test_class_that_cannot_follow_rolled_back(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct canary_look cl = { .t = t, .better = true };
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	struct cc_tn_proposal *p;
	int64_t i = 1;

	(void)state;
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000);
	apply_all(t, 8, NULL);
	pol.kmin_floor_bytes = 30000; /* every port's Kmin (20 KB) below it */
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	/* (the other classes' repairs step meanwhile) */
	for (int k = 0; k < 5 && !rollback_of(t, CC_TN_TOR_DOWN); k++) {
		apply_all(t, 8, NULL);
		run(t, i++, canary_look, &cl);
	}
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_non_null(strstr(p->reason, "4 members of the class at 400000 could not follow"));
	assert_int_equal(p->nchanges, 4);
	for (size_t k = 0; k < p->nchanges; k++)
		assert_int_equal(p->changes[k].ecn_to.kmax_bytes, 400000);
	cc_tn_free(t);
}

/* Half the class set apart before a step (an operator's Pmax below the policy's floor on the
 * ToR ports of leaf0): the step moves the other half and completes; those set apart are not
 * "members that could not follow". */
static void test_step_completes_without_members_set_apart(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_ecn e = ecn0;
	uint64_t rb, step;
	int64_t i = 1;

	(void)state;
	e.pmax = 0.001;
	for (int h = 0; h < 4; h++) {
		char port[16];

		snprintf(port, sizeof(port), "h%d", h);
		assert_int_equal(cc_tn_track_port(t, "leaf0", port, &e), 0);
	}
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000);
	step = one(t)->step;
	for (int k = 0; k < 20 && !step_over(t, step); k++) {
		apply_all(t, 8, NULL);
		run(t, i++, NULL, NULL);
	}
	assert_true(step_over(t, step));
	cc_tn_steps(t, &rb);
	assert_int_equal(rb, 0);
	cc_tn_class_ecn(t, CC_TN_TOR_DOWN, &e);
	assert_int_equal(e.kmax_bytes, 300000);
	cc_tn_free(t);
}

/* The ports of a canary (a proposal's changes) and whether the rest of the class pauses now. */
struct calm_canary {
	const struct cc_tn_proposal *p;
	bool rest_pauses;
};

/* ToR downlinks: the canary's never pause; the rest half of the time, or a tenth. */
static void calm_canary_look(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	struct calm_canary *c = ctx;

	if (strncmp(node, "leaf", 4) || !tor_down(port))
		return;
	*peak = 200000;
	*pause = changes_port(c->p, node, port) ? 0 : c->rest_pauses ? IV / 2 : IV / 10;
}

/* A canary that never pauses, while the rest of its class pauses less than before (a hot spot
 * that moved): not worse (the shares stop at 0: it was rolled back, "the canary's paused share
 * went from 0.000 % to 0.000 %, the rest's from 50 % to 10 %").  One that pauses is still
 * rolled back: test_forced_bad_step_rolled_back. */
static void test_a_canary_that_does_not_pause_is_not_worse(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO), *t2;
	struct calm_canary cc = { .rest_pauses = true };
	struct cc_tn_proposal *p, *q;
	int64_t i = 1;

	(void)state;
	/* the canary a forced Kmax step of tor_down takes (the same members every time) */
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000);
	cc.p = p = one(t);
	t2 = tuner(CC_TN_OFF); /* (that step alone: none of its own against the pauses) */
	i = 1;
	for (; i <= 6; i++)
		run(t2, i, calm_canary_look, &cc);
	{
		const char *why;

		assert_int_equal(cc_tn_force(t2, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000, &why), 0);
	}
	q = one(t2);
	assert_int_equal(q->nchanges, p->nchanges);
	for (size_t k = 0; k < q->nchanges; k++)
		assert_true(changes_port(p, q->changes[k].node, q->changes[k].port));
	assert_int_equal(cc_tn_applied(t2, q->id, CC_TN_OUT_APPLIED), 0);
	cc.rest_pauses = false;
	for (unsigned k = 0; k < cc_tn_defaults.canary_intervals; k++)
		run(t2, i++, calm_canary_look, &cc);
	q = one(t2);
	assert_int_equal(q->phase, CC_TN_ROLLOUT);
	cc_tn_free(t2);
	cc_tn_free(t);
}

/* The pauses of leaf0's edge links until tor_down's Kmax is down a step (kept against them:
 * no gain to show); *i the next interval. */
static void kmax_down_against_pauses(struct cc_tn *t, int64_t *i)
{
	for (int64_t end = *i + 60; *i < end && class_json(t, "tor_down", "kmax_bytes") != ecn0.kmax_bytes / 2;
	     (*i)++) {
		run(t, *i, leaf0_paused, NULL);
		apply_all(t, 8, NULL);
	}
	assert_int_equal(class_json(t, "tor_down", "kmax_bytes"), ecn0.kmax_bytes / 2);
}

/* While a relax canary is out (ctx: the tuner, *id the canary's proposal), the ToR downlinks
 * it did not change pause half the time: the pauses are back, not the canary's doing. */
struct relax_look {
	struct cc_tn *t;
	uint64_t id;
};

static void relax_rest_pauses(const char *node, const char *port, uint64_t *peak, uint64_t *pause, void *ctx)
{
	struct relax_look *rl = ctx;

	if (!strncmp(node, "leaf", 4) && tor_down(port) && !changes_port(cc_tn_find(rl->t, rl->id), node, port)) {
		*peak = 3000000;
		*pause = IV / 2;
	}
}

/* Whether a step of class cls is in progress. */
static bool stepping(struct cc_tn *t, const char *cls)
{
	json_t *j = cc_tn_json(t), *x;
	size_t k;
	bool r = false;

	json_array_foreach(json_object_get(j, "steps_in_progress"), k, x)
		r |= !strcmp(json_string_value(json_object_get(x, "class")), cls);
	json_decref(j);
	return r;
}

/* Quiet intervals until tor_down's Kmax is back where it was and its step done (apply_all
 * each), at most n; the interval its undoing began (0: none did).  harm: the first undoing's
 * canary, once applied, ends it (its id in harm). */
static int64_t quiet_until_kmax_back(struct cc_tn *t, int64_t *i, int64_t n, struct relax_look *harm)
{
	int64_t began = 0;

	for (int64_t end = *i + n;
	     *i < end && (class_json(t, "tor_down", "kmax_bytes") != ecn0.kmax_bytes || stepping(t, "tor_down"));
	     (*i)++) {
		const struct cc_tn_proposal *p;

		run(t, *i, NULL, NULL);
		p = pending_class(t, CC_TN_TOR_DOWN);
		if (p && p->phase == CC_TN_CANARY && p->knob == CC_TN_KMAX && p->to > p->from) {
			assert_non_null(strstr(p->reason, "no port paused above the target"));
			assert_true(p->to <= ecn0.kmax_bytes); /* the newest first: the way it came */
			if (!began)
				began = *i;
			if (harm && !harm->id) {
				harm->id = p->id;
				apply_all(t, 8, NULL);
				return began;
			}
		}
		if (p && p->phase == CC_TN_ROLLOUT && p->knob == CC_TN_KMAX && p->to > p->from)
			assert_non_null(strstr(p->reason, "needs no gain to show"));
		apply_all(t, 8, NULL);
	}
	return began;
}

/* Harder ECN moves made against pauses are undone once no port paused for relax_intervals
 * (kept for good, such moves piled up with each burst of pauses and slowed the long flows of
 * every load after), one step at a time back to where the class was, with no gain to show;
 * should the pauses come back, the move comes again at once (no hold on it).  The hosts' CNP
 * spacing stays.  Not with relax_intervals 0; a restart keeps where the class was (relax_to);
 * a relax canary out when ports pause again is rolled back. */
static void test_a_move_against_pauses_undone_once_they_are_gone(void **state)
{
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_tn *t = tuner(CC_TN_AUTO), *t2;
	struct relax_look harm = { 0 };
	int64_t i = 1, last_paused, began;
	json_t *saved, *o;
	uint64_t max_id;
	size_t k, against = 0;
	char err[200];

	(void)state;
	kmax_down_against_pauses(t, &i);
	last_paused = i - 1;
	run(t, i++, NULL, NULL);
	apply_all(t, 8, NULL);
	{ /* GET /api/v1/cc says where it goes back to, and how long ports have been quiet */
		json_t *j = cc_tn_json(t), *r = json_array_get(json_object_get(j, "relax_to"), 0);

		assert_int_equal(json_array_size(json_object_get(j, "relax_to")), 1);
		assert_string_equal(json_string_value(json_object_get(r, "class")), "tor_down");
		assert_string_equal(json_string_value(json_object_get(r, "knob")), "kmax_bytes");
		assert_int_equal(json_number_value(json_object_get(r, "value")), ecn0.kmax_bytes);
		assert_null(json_object_get(r, "left_at"));
		assert_int_equal(json_integer_value(json_object_get(j, "quiet_intervals")), 1);
		json_decref(j);
	}
	began = quiet_until_kmax_back(t, &i, 200, NULL);
	assert_true(began > 0);
	assert_true(began >= last_paused + (int64_t)pol.relax_intervals);
	assert_int_equal(class_json(t, "tor_down", "kmax_bytes"), ecn0.kmax_bytes);
	assert_int_equal(class_json(t, "hosts", "min_time_between_cnps"), 2); /* kept */
	/* the pauses back: the move comes again within the tuner's window */
	for (int64_t end = i + 3; i <= end && !pending_class(t, CC_TN_TOR_DOWN); i++)
		run(t, i, leaf0_paused, NULL);
	assert_non_null(pending_class(t, CC_TN_TOR_DOWN));
	assert_int_equal(pending_class(t, CC_TN_TOR_DOWN)->knob, CC_TN_KMAX);
	assert_true(pending_class(t, CC_TN_TOR_DOWN)->to < ecn0.kmax_bytes);
	cc_tn_free(t);

	/* never with relax_intervals 0 */
	pol.mode = CC_TN_AUTO;
	pol.relax_intervals = 0;
	t = tuner_with(&pol);
	i = 1;
	kmax_down_against_pauses(t, &i);
	assert_int_equal(quiet_until_kmax_back(t, &i, 200, NULL), 0);
	assert_true(class_json(t, "tor_down", "kmax_bytes") <= ecn0.kmax_bytes / 2);
	cc_tn_free(t);

	/* a restart keeps what the step was made against */
	t = tuner(CC_TN_AUTO);
	i = 1;
	kmax_down_against_pauses(t, &i);
	for (int64_t end = i + 10; i < end; i++) { /* the rest of its steps judged (quiet: none to relax yet) */
		run(t, i, NULL, NULL);
		apply_all(t, 8, NULL);
	}
	saved = cc_tn_state_json(t);
	json_array_foreach(json_object_get(saved, "relax_to"), k, o)
		against += !strcmp(json_string_value(json_object_get(o, "class")), "tor_down") &&
			   !strcmp(json_string_value(json_object_get(o, "knob")), "kmax_bytes") &&
			   json_number_value(json_object_get(o, "value")) == ecn0.kmax_bytes;
	assert_int_equal(against, 1);
	t2 = restarted(t, &max_id);
	assert_int_equal(cc_tn_state_load(t2, saved, err, sizeof(err)), 0);
	json_decref(saved);
	cc_tn_free(t);
	t = t2;
	cc_tn_ids_at_least(t, max_id + 1, 64);
	/* the pauses back while its canary is out (elsewhere): rolled back at once, the Kmax kept down */
	harm.t = t;
	assert_true(quiet_until_kmax_back(t, &i, 200, &harm) > 0);
	run(t, i++, relax_rest_pauses, &harm);
	assert_non_null(pending_class(t, CC_TN_TOR_DOWN));
	assert_int_equal(pending_class(t, CC_TN_TOR_DOWN)->phase, CC_TN_ROLLBACK);
	assert_non_null(strstr(pending_class(t, CC_TN_TOR_DOWN)->reason, "paused above the target again"));
	apply_all(t, 8, NULL);
	assert_int_equal(class_json(t, "tor_down", "kmax_bytes"), cc_tn_find(t, harm.id)->from);
	cc_tn_free(t);
}

/* Every ToR downlink's Kmax set to v by hand (not by the tuner). */
static void tor_down_kmax_by_hand(struct cc_tn *t, uint64_t v)
{
	struct cc_snap *s = fabric(0, NULL, NULL);
	struct cc_tn_ecn e = ecn0;

	e.kmax_bytes = v;
	for (uint32_t p = 0; p < s->nports; p++) {
		const struct cc_node *n = &s->nodes[s->ports[p].node];

		if (n->kind == CC_SWITCH && !strncmp(n->name, "leaf", 4) && tor_down(s->ports[p].name))
			assert_int_equal(cc_tn_track_port(t, n->name, s->ports[p].name, &e), 0);
	}
	cc_snap_free(s);
}

/* leaf0's edge links paused one interval in five: the window of signals is quiet in between */
static void leaf0_paused_now_and_then(const char *node, const char *port, uint64_t *peak, uint64_t *pause,
				      void *ctx)
{
	if (*(const int64_t *)ctx % 5 == 0)
		leaf0_paused(node, port, peak, pause, NULL);
}

/* What holds the undoing of moves against pauses back: pauses now and then (quiet windows
 * between them, never relax_intervals of quiet); a value set since by hand (the operator's:
 * forgotten); and a canary of it waiting for an operator is withdrawn when ports pause again. */
static void test_moves_against_pauses_not_undone_too_soon(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_policy pol = cc_tn_defaults;
	const struct cc_tn_proposal *p = NULL;
	int64_t i = 1;
	json_t *saved;

	(void)state;
	kmax_down_against_pauses(t, &i);
	for (int64_t end = i + 3 * (int64_t)pol.tabu_intervals; i < end; i++) {
		run(t, i, leaf0_paused_now_and_then, &i);
		p = pending_class(t, CC_TN_TOR_DOWN);
		assert_false(p && strstr(p->reason, "no port paused above the target"));
		apply_all(t, 8, NULL);
	}
	assert_true(class_json(t, "tor_down", "kmax_bytes") < ecn0.kmax_bytes);
	/* set by hand since: not the tuner's to undo */
	tor_down_kmax_by_hand(t, 50000);
	assert_int_equal(quiet_until_kmax_back(t, &i, 100, NULL), 0);
	assert_int_equal(class_json(t, "tor_down", "kmax_bytes"), 50000);
	saved = cc_tn_state_json(t);
	assert_int_equal(json_array_size(json_object_get(saved, "relax_to")), 0);
	json_decref(saved);
	cc_tn_free(t);

	/* in advise, a canary waiting when ports pause again is withdrawn */
	t = tuner(CC_TN_AUTO);
	i = 1;
	kmax_down_against_pauses(t, &i);
	pol.mode = CC_TN_ADVISE;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	for (int64_t end = i + 100; i < end; i++) {
		run(t, i, NULL, NULL);
		p = pending_class(t, CC_TN_TOR_DOWN);
		if (p && p->state == CC_TN_WAITING && strstr(p->reason, "no port paused above the target"))
			break;
		{ /* the steps before it approved */
			size_t n;
			struct cc_tn_proposal **v = cc_tn_pending(t, &n);
			uint64_t ids[16];

			assert_true(n <= 16);
			for (size_t x = 0; x < n; x++)
				ids[x] = v[x]->state == CC_TN_WAITING ? v[x]->id : 0;
			for (size_t x = 0; x < n; x++)
				if (ids[x])
					assert_int_equal(cc_tn_decide(t, ids[x], true), 0);
		}
		apply_all(t, 8, NULL);
	}
	assert_non_null(p);
	assert_int_equal(p->state, CC_TN_WAITING);
	{
		uint64_t id = p->id;

		run(t, ++i, leaf0_paused, NULL);
		assert_int_equal(cc_tn_find(t, id)->state, CC_TN_REJECTED);
		assert_non_null(strstr(cc_tn_find(t, id)->error, "paused above the target again"));
	}
	cc_tn_free(t);
}

/* A port set apart (an operator's Kmin of its own, inside the policy) is listed while a step of
 * that knob waits for an operator, who deciding on it sees which members it leaves be; it was
 * left out as soon as the step existed. */
static void test_set_apart_shown_while_a_step_waits(void **state)
{
	struct cc_tn *t = tuner(CC_TN_ADVISE);
	struct cc_tn_ecn e;
	json_t *st, *sa;
	int64_t i = 1;

	(void)state;
	/* apart on every ECN knob: whichever the step moves */
	e = (struct cc_tn_ecn){ 30000, 500000, 0.02 };
	assert_int_equal(cc_tn_track_port(t, "leaf0", "h1", &e), 0);
	for (; i < 30 && !npending(t); i++)
		run(t, i, deep_down, NULL);
	assert_int_equal(one(t)->state, CC_TN_WAITING);
	assert_int_equal(one(t)->cls, CC_TN_TOR_DOWN);
	st = cc_tn_json(t);
	sa = json_object_get(st, "set_apart");
	assert_int_equal(json_integer_value(json_object_get(sa, "members")), 1);
	assert_int_equal(json_integer_value(json_object_get(sa, "knobs")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(sa, "first"), 0), "port")),
			    "h1");
	json_decref(st);
	cc_tn_free(t);
}

/* A canary on its way (approved, its outcome not in) when the policy narrows under one of its
 * members, or an XOFF is lowered under its value: not withdrawn at the decision (its changes
 * would land with no step to undo them), rolled back once applied. */
static void test_canary_on_its_way_not_withdrawn(void **state)
{
	struct cc_tn *t = tuner(CC_TN_AUTO);
	struct cc_tn_policy pol = *cc_tn_get_policy(t);
	struct cc_tn_proposal *p;
	uint64_t id;
	int64_t i = 1;

	(void)state;
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_PMAX, 0.5);
	id = one(t)->id;
	pol.pmax_ceiling = 0.2;
	assert_int_equal(cc_tn_set_policy(t, &pol), 0);
	run(t, i++, NULL, NULL);
	p = cc_tn_find(t, id);
	assert_int_equal(p->state, CC_TN_APPROVED);
	assert_int_equal(cc_tn_applied(t, id, CC_TN_OUT_APPLIED), 0);
	run(t, i++, NULL, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_int_equal(p->nchanges, 4);
	cc_tn_free(t);

	/* an XOFF lowered within loop_bytes of a Kmax canary's value while it was on its way:
	 * rolled back once applied, except that port (its old Kmax would be closer still) */
	t = tuner(CC_TN_AUTO);
	i = 1;
	quiet_then_force(t, &i, CC_TN_TOR_DOWN, CC_TN_KMAX, 300000);
	p = one(t);
	id = p->id;
	assert_int_equal(cc_tn_track_xoff(t, p->changes[0].node, p->changes[0].port, 400000), 0);
	run(t, i++, NULL, NULL);
	assert_int_equal(cc_tn_find(t, id)->state, CC_TN_APPROVED);
	assert_int_equal(cc_tn_applied(t, id, CC_TN_OUT_APPLIED), 0);
	run(t, i++, NULL, NULL);
	p = pending_of(t, CC_TN_TOR_DOWN, CC_TN_ROLLBACK);
	assert_non_null(strstr(p->reason, "breaks this now: kmax_bytes leaves less than one control loop"));
	assert_int_equal(p->nchanges, 3);
	cc_tn_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_json),
		cmocka_unit_test(test_policy_fits),
		cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_canary_then_rollout),
		cmocka_unit_test(test_rollout_trimmed_when_sent),
		cmocka_unit_test(test_hold_switch),
		cmocka_unit_test(test_forced_bad_step_rolled_back),
		cmocka_unit_test(test_probe_p99_rolls_back),
		cmocka_unit_test(test_link_errors_explain_retransmissions),
		cmocka_unit_test(test_state_across_restart),
		cmocka_unit_test(test_advise_waits),
		cmocka_unit_test(test_failed_apply_undone),
		cmocka_unit_test(test_rollback_all),
		cmocka_unit_test(test_rollback_rejects_waiting),
		cmocka_unit_test(test_canary_is_not_the_setting),
		cmocka_unit_test(test_snapshot_merge),
		cmocka_unit_test(test_snapshot_merge_role_flip),
		cmocka_unit_test(test_holds_follow_a_shorter_tabu),
		cmocka_unit_test(test_a_host_after_a_role_flip_is_measured),
		cmocka_unit_test(test_no_harder_step_for_a_host_fault),
		cmocka_unit_test_teardown(test_no_harder_step_for_a_pausing_host, faults_cleared),
		cmocka_unit_test_teardown(test_a_tor_port_whose_far_end_is_unknown, faults_cleared),
		cmocka_unit_test_teardown(test_a_host_pausing_on_its_second_port, faults_cleared),
		cmocka_unit_test(test_no_free_pass_during_a_fault),
		cmocka_unit_test(test_waiting_harder_canary_withdrawn_during_a_fault),
		cmocka_unit_test(test_mode_changes),
		cmocka_unit_test(test_outlier_kept),
		cmocka_unit_test(test_no_softening_after_a_harder_step),
		cmocka_unit_test(test_holds_saved_together),
		cmocka_unit_test(test_storm_retried),
		cmocka_unit_test(test_no_gain_held_but_not_against_pauses),
		cmocka_unit_test(test_host_canary_matched),
		cmocka_unit_test(test_switch_canary_least_share),
		cmocka_unit_test(test_canary_leaves_a_rest),
		cmocka_unit_test(test_policy_change_withdraws_waiting),
		cmocka_unit_test(test_outside_policy),
		cmocka_unit_test(test_repair_partners_reject_restart),
		cmocka_unit_test(test_repair_groups),
		cmocka_unit_test(test_host_classes),
		cmocka_unit_test(test_host_classes_wait_for_the_step),
		cmocka_unit_test(test_restore_steps_of_gone_classes),
		cmocka_unit_test(test_not_sent_is_not_undone),
		cmocka_unit_test(test_off_with_changes_on_their_way),
		cmocka_unit_test(test_failed_rollback_retried),
		cmocka_unit_test(test_rollback_keeps_a_port_whose_xoff_fell),
		cmocka_unit_test(test_stale_canary_withdrawn),
		cmocka_unit_test(test_off_before_the_canary_is_sent),
		cmocka_unit_test(test_rollback_all_leaves_an_operators_value),
		cmocka_unit_test(test_failed_rollback_all_again),
		cmocka_unit_test(test_approval_checked_again),
		cmocka_unit_test(test_policy_narrowed_under_a_step),
		cmocka_unit_test(test_force_refused),
		cmocka_unit_test(test_unreported_counter_not_zero),
		cmocka_unit_test(test_absent_host_not_moved),
		cmocka_unit_test(test_rollback_all_through_a_refused_value),
		cmocka_unit_test(test_class_that_cannot_follow_rolled_back),
		cmocka_unit_test(test_step_completes_without_members_set_apart),
		cmocka_unit_test(test_set_apart_shown_while_a_step_waits),
		cmocka_unit_test(test_a_canary_that_does_not_pause_is_not_worse),
		cmocka_unit_test(test_a_move_against_pauses_undone_once_they_are_gone),
		cmocka_unit_test(test_moves_against_pauses_not_undone_too_soon),
		cmocka_unit_test(test_canary_on_its_way_not_withdrawn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
