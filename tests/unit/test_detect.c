/* Unit tests of the PFC deadlock and storm detector (cc/deadlock.c), the pfcwd baseline
 * (cc/pfcwd.c) and the snapshot (cc/snap.c) on synthetic snapshots: cycles in cycle order, the
 * queue a break frees most with, storms with their victims, the negatives (congestion that
 * drains, a switch pausing with a backlog, a pause that ended), slow receivers, and the life
 * of a mitigation (break, restore, persistent; isolation until the culprit is quiet; advise). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/deadlock.h"
#include "cc/pfcwd.h"
#include "cc/snap.h"
#include "tests/unit/unit.h"

#define PRIO 3
#define IV 1000 /* us */

static void set(struct cc_snap *s, uint32_t port, enum lane_field f, uint64_t v)
{
	assert_int_equal(cc_snap_set(s, port, lane_field_names[f], PRIO, v), 0);
}

static uint32_t P(const struct cc_snap *s, const char *node, const char *port)
{
	int p = cc_snap_find_port(s, node, port);

	assert_true(p >= 0);
	return (uint32_t)p;
}

/* every field reported (a NIC has no queue gauge), healthy: traffic flows, no pause */
static void healthy(struct cc_snap *s, uint32_t p)
{
	for (int f = 0; f < CF_N; f++)
		if (s->nodes[s->ports[p].node].kind == CC_SWITCH || (f != CF_QUEUE_DEPTH && f != CF_QUEUE_WATERMARK))
			set(s, p, (enum lane_field)f, 0);
	set(s, p, CF_TX_BYTES, 1000000);
	set(s, p, CF_RX_BYTES, 1000000);
	set(s, p, CF_TX_PACKETS, 250);
	set(s, p, CF_RX_PACKETS, 250);
}

/* the egress queue at p is paused by its peer all interval, sends nothing, holds depth bytes */
static void stuck(struct cc_snap *s, uint32_t p, uint64_t depth)
{
	uint32_t peer = s->ports[p].peer;

	set(s, p, CF_RX_PAUSE_US, IV);
	set(s, p, CF_RX_PAUSE_FRAMES, 20);
	set(s, p, CF_PAUSED, 1);
	set(s, p, CF_TX_BYTES, 0);
	set(s, p, CF_TX_PACKETS, 0);
	if (s->nodes[s->ports[p].node].kind == CC_SWITCH)
		set(s, p, CF_QUEUE_DEPTH, depth);
	set(s, peer, CF_TX_PAUSE_US, IV);
	set(s, peer, CF_TX_PAUSE_FRAMES, 20);
	set(s, peer, CF_PAUSING, 1);
	set(s, peer, CF_RX_BYTES, 0);
	set(s, peer, CF_RX_PACKETS, 0);
}

/* n switches in a ring (s0..), each with host hI; cross: also a chord s0 <-> s2 */
static struct cc_snap *ring(unsigned n, int64_t t, bool chord)
{
	struct cc_snap *s = cc_snap_new(1u << PRIO, t, IV);
	char a[16], b[16];

	assert_non_null(s);
	for (unsigned i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "s%u", i);
		assert_int_equal(cc_snap_node(s, a, CC_SWITCH), (int)i);
	}
	for (unsigned i = 0; i < n; i++) {
		int h, x, y;

		snprintf(a, sizeof(a), "s%u", i);
		snprintf(b, sizeof(b), "s%u", (i + 1) % n);
		x = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, a), b);
		y = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, b), a);
		assert_int_equal(cc_snap_link(s, (uint32_t)x, (uint32_t)y), 0);
		snprintf(b, sizeof(b), "h%u", i);
		h = cc_snap_node(s, b, CC_HOST);
		x = cc_snap_port(s, (uint32_t)h, "nic0:1");
		y = cc_snap_port(s, (uint32_t)cc_snap_find_node(s, a), b);
		assert_int_equal(cc_snap_link(s, (uint32_t)x, (uint32_t)y), 0);
	}
	if (chord) {
		int x = cc_snap_port(s, 0, "s2"), y = cc_snap_port(s, 2, "s0");

		assert_int_equal(cc_snap_link(s, (uint32_t)x, (uint32_t)y), 0);
	}
	for (uint32_t p = 0; p < s->nports; p++) {
		s->ports[p].lossless = 1u << PRIO;
		healthy(s, p);
	}
	cc_snap_finish(s);
	return s;
}

static const struct cc_dl_finding *only(const struct cc_dl_result *r, enum cc_dl_class c, unsigned want)
{
	const struct cc_dl_finding *f = NULL;
	unsigned n = 0;

	for (size_t i = 0; i < r->nfindings; i++)
		if (r->findings[i].cls == c) {
			f = &r->findings[i];
			n++;
		}
	assert_int_equal(n, want);
	return f;
}

static void test_snapshot(void **state)
{
	struct cc_snap *a = ring(3, 5000, false), *b = cc_snap_new(1u << PRIO, 5000, IV);
	json_t *ja, *jb;

	(void)state;
	/* other priorities and unknown names are ignored; impossible priorities refused */
	assert_int_equal(cc_snap_set(a, 0, "pfc_rx_pause_frames", 4, 7), 0);
	assert_null(cc_snap_prio(a, 0, 4));
	assert_int_equal(cc_snap_set(a, 0, "no_such_counter", PRIO, 7), 0);
	assert_int_equal(cc_snap_set(a, 0, "pfc_paused", 8, 1), -EINVAL);
	assert_int_equal(cc_snap_set(a, 999, "pfc_paused", PRIO, 1), -EINVAL);
	/* a port already linked elsewhere; a node of the other kind */
	assert_int_equal(cc_snap_link(a, P(a, "s0", "s1"), P(a, "s2", "s0")), -EINVAL);
	assert_int_equal(cc_snap_node(a, "h0", CC_SWITCH), -EINVAL);
	/* the same fabric built in another order renders the same */
	for (int i = 2; i >= 0; i--) {
		char n[16], h[16], nx[16];

		snprintf(n, sizeof(n), "s%d", i);
		snprintf(h, sizeof(h), "h%d", i);
		snprintf(nx, sizeof(nx), "s%d", (i + 1) % 3);
		cc_snap_port(b, (uint32_t)cc_snap_node(b, h, CC_HOST), "nic0:1");
		cc_snap_port(b, (uint32_t)cc_snap_node(b, n, CC_SWITCH), h);
	}
	for (int i = 0; i < 3; i++) {
		char n[16], nx[16], h[16];

		snprintf(n, sizeof(n), "s%d", i);
		snprintf(nx, sizeof(nx), "s%d", (i + 1) % 3);
		snprintf(h, sizeof(h), "h%d", i);
		cc_snap_link(b, (uint32_t)cc_snap_port(b, (uint32_t)cc_snap_find_node(b, nx), n),
			     (uint32_t)cc_snap_port(b, (uint32_t)cc_snap_find_node(b, n), nx));
		cc_snap_link(b, P(b, h, "nic0:1"), P(b, n, h));
	}
	for (uint32_t p = 0; p < b->nports; p++) {
		b->ports[p].lossless = 1u << PRIO;
		healthy(b, p);
	}
	cc_snap_finish(b);
	ja = cc_snap_json(a);
	jb = cc_snap_json(b);
	assert_true(json_equal(ja, jb));
	json_decref(ja);
	json_decref(jb);
	cc_snap_free(a);
	cc_snap_free(b);
}

static void test_cycle_in_order(void **state)
{
	struct cc_snap *s = ring(4, 10 * IV, false);
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;

	(void)state;
	stuck(s, P(s, "s2", "s3"), 50000);
	stuck(s, P(s, "s3", "s0"), 60000);
	stuck(s, P(s, "s0", "s1"), 40000);
	stuck(s, P(s, "s1", "s2"), 30000);
	/* victims: a host paused behind s1, and s1's queue toward it is not part of the cycle */
	stuck(s, P(s, "h1", "nic0:1"), 0);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	f = only(r, CC_DL_DEADLOCK, 1);
	assert_int_equal(f->nports, 4);
	assert_string_equal(f->ports[0].node, "s0");
	assert_string_equal(f->ports[0].port, "s1");
	assert_string_equal(f->ports[1].node, "s1");
	assert_string_equal(f->ports[2].node, "s2");
	assert_string_equal(f->ports[3].node, "s3");
	assert_int_equal(f->prio, PRIO);
	assert_true(f->fresh);
	/* every queue frees the whole cycle: the shallowest drops least */
	assert_string_equal(f->suggested.node, "s1");
	assert_string_equal(f->suggested.port, "s2");
	assert_non_null(strstr(f->summary, "s0:s1 -> s1:s2 -> s2:s3 -> s3:s0"));
	only(r, CC_DL_PAUSE_STORM, 0);
	assert_int_equal(r->nactions, 0); /* advise by default */
	cc_dl_free(d);
	cc_snap_free(s);
}

static void test_break_frees_most(void **state)
{
	/* two cycles, s0 -> s1 -> s2 -> s0 (the chord) and s0 -> s1 -> s2 -> s3 -> s0, share s0:s1
	 * and s1:s2: releasing either frees both; releasing s2:s3 or s3:s0 frees only one */
	struct cc_snap *s = ring(4, 10 * IV, true);
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;

	(void)state;
	stuck(s, P(s, "s0", "s1"), 90000);
	stuck(s, P(s, "s1", "s2"), 80000);
	stuck(s, P(s, "s2", "s3"), 1000);
	stuck(s, P(s, "s3", "s0"), 1000);
	stuck(s, P(s, "s2", "s0"), 1000);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	f = only(r, CC_DL_DEADLOCK, 1);
	assert_int_equal(f->nports, 5);
	assert_string_equal(f->suggested.node, "s1"); /* frees both cycles, shallower than s0:s1 */
	assert_string_equal(f->suggested.port, "s2");
	cc_dl_free(d);
	cc_snap_free(s);
}

static void test_storm_and_victims(void **state)
{
	struct cc_snap *s = ring(4, 10 * IV, false);
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;

	(void)state;
	/* h2 pauses s2:h2 all interval and takes nothing; s1's and s0's queues behind it freeze */
	stuck(s, P(s, "s2", "h2"), 70000);
	stuck(s, P(s, "s1", "s2"), 70000);
	stuck(s, P(s, "s0", "s1"), 70000);
	stuck(s, P(s, "h1", "nic0:1"), 0);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	only(r, CC_DL_DEADLOCK, 0);
	f = only(r, CC_DL_PAUSE_STORM, 1);
	assert_string_equal(f->culprit, "h2");
	assert_int_equal(f->victims_total, 4);
	assert_string_equal(f->victims[0].node, "s2"); /* nearest first */
	assert_string_equal(f->suggested.node, "s2");
	assert_string_equal(f->suggested.port, "h2");
	/* the source is h2's port, which sends the pauses; the port it pauses is s2:h2, paused all
	 * interval (an operator's trial: only the source was listed, "paused 0 us") */
	assert_string_equal(f->ports[0].node, "h2");
	assert_int_equal(f->ports[0].paused_us, 0);
	assert_string_equal(f->paused.node, "s2");
	assert_string_equal(f->paused.port, "h2");
	assert_int_equal(f->paused.paused_us, IV);
	assert_int_equal(f->paused.depth_bytes, 70000);
	{
		json_t *j = cc_dl_finding_json(f);

		assert_string_equal(json_string_value(json_object_get(json_object_get(j, "paused"), "port")), "h2");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "paused"), "paused_us")), IV);
		json_decref(j);
	}
	only(r, CC_DL_SLOW_RECEIVER, 0);
	cc_dl_free(d);
	cc_snap_free(s);
}

/* h2's port as rocefabd's snapshot holds a host whose agent is silent: no readings */
static void silence(struct cc_snap *s, uint32_t p)
{
	struct cc_prio *e = cc_snap_prio(s, p, PRIO);

	memset(e, 0, sizeof(*e));
	s->ports[p].phave = 0;
	s->ports[p].silent = true;
}

/* s, h2 silenced, names no storm (s freed) */
static void no_storm_of_silent_h2(struct cc_dl *d, struct cc_snap *s)
{
	const struct cc_dl_result *r;

	silence(s, P(s, "h2", "nic0:1"));
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	only(r, CC_DL_PAUSE_STORM, 0);
	cc_snap_free(s);
}

/* A hung host's NIC pauses its switch port while its agent is dead: the storm is read from the
 * switch's side (before, a silent source was no finding at all, and its storm's alert cleared
 * once its agent stopped) */
static void test_storm_of_a_silent_host(void **state)
{
	struct cc_snap *s = ring(4, 10 * IV, false), *acc;
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;
	json_t *j;

	(void)state;
	stuck(s, P(s, "s2", "h2"), 70000);
	stuck(s, P(s, "s1", "s2"), 70000);
	silence(s, P(s, "h2", "nic0:1"));
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	f = only(r, CC_DL_PAUSE_STORM, 1);
	assert_string_equal(f->culprit, "h2");
	assert_true(f->silent);
	assert_non_null(strstr(f->summary, "no readings of its own"));
	assert_string_equal(f->suggested.node, "s2");
	assert_string_equal(f->suggested.port, "h2");
	assert_string_equal(f->paused.port, "h2");
	assert_int_equal(f->paused.paused_us, IV);
	assert_int_equal(f->victims_total, 2);
	j = cc_dl_finding_json(f);
	assert_true(json_is_true(json_object_get(j, "source_silent")));
	json_decref(j);
	only(r, CC_DL_DEADLOCK, 0);
	only(r, CC_DL_SLOW_RECEIVER, 0);
	/* the tuner's sum of snapshots keeps the silent port, silent, at the end of its switch
	 * port (whose pauses are its: before, left out, the tuner could not tell whose they were),
	 * until readings of it come */
	s->ports[P(s, "h2", "nic0:1")].speed_mbps = 100000;
	acc = cc_snap_new(1u << PRIO, 0, 0);
	assert_int_equal(cc_snap_merge(acc, s), 0);
	assert_int_equal(cc_snap_merge(acc, s), 0);
	{
		int sw = cc_snap_find_port(acc, "s2", "h2"), h = cc_snap_find_port(acc, "h2", "nic0:1");

		assert_true(sw >= 0 && h >= 0);
		assert_true(acc->ports[h].silent && !acc->ports[sw].silent);
		assert_int_equal(acc->ports[h].peer, sw);
		assert_int_equal(acc->ports[h].phave, 0);
		/* (its state as s has it: a review found it lossy, up and of no speed in the sum) */
		assert_true(acc->ports[h].lossless);
		assert_int_equal(acc->ports[h].lossless, s->ports[P(s, "h2", "nic0:1")].lossless);
		assert_int_equal(acc->ports[h].speed_mbps, 100000);
		s->ports[P(s, "h2", "nic0:1")].silent = false;
		cc_snap_set(s, P(s, "h2", "nic0:1"), "pfc_tx_pause_duration_us", PRIO, 5);
		assert_int_equal(cc_snap_merge(acc, s), 0);
		assert_false(acc->ports[h].silent);
		s->ports[P(s, "h2", "nic0:1")].silent = true;
		assert_int_equal(cc_snap_merge(acc, s), 0);
		assert_false(acc->ports[h].silent); /* (its readings so far stay) */
		assert_int_equal(cc_snap_prio(acc, (uint32_t)h, PRIO)->v[CF_TX_PAUSE_US], 5);
	}
	cc_snap_free(acc);
	cc_snap_free(s);

	/* the same silent host, its switch port paused but sending: no storm */
	s = ring(4, 11 * IV, false);
	set(s, P(s, "s2", "h2"), CF_RX_PAUSE_US, IV);
	set(s, P(s, "s2", "h2"), CF_PAUSED, 1);
	no_storm_of_silent_h2(d, s);
	/* stuck, but no longer paused at the interval's end: no storm either */
	s = ring(4, 12 * IV, false);
	stuck(s, P(s, "s2", "h2"), 70000);
	set(s, P(s, "s2", "h2"), CF_PAUSED, 0);
	no_storm_of_silent_h2(d, s);
	/* the switch port pauses the host too (a review: the host may pause because its own sending
	 * waits, a victim; with its readings it is no finding): no storm */
	s = ring(4, 13 * IV, false);
	stuck(s, P(s, "s2", "h2"), 70000);
	set(s, P(s, "s2", "h2"), CF_TX_PAUSE_US, IV);
	set(s, P(s, "s2", "h2"), CF_PAUSING, 1);
	no_storm_of_silent_h2(d, s);
	/* the host does not keep the priority lossless: the link is in doubt, no storm */
	s = ring(4, 14 * IV, false);
	stuck(s, P(s, "s2", "h2"), 70000);
	s->ports[P(s, "h2", "nic0:1")].lossless = 0;
	no_storm_of_silent_h2(d, s);
	cc_dl_free(d);
}

/* h2 silent, pausing s2:h2 or not, as s2:h2 tells: before its isolation, stuck; isolated (lossy:
 * it obeys no pause, so it is never paused, and sends), only by its pause frame count; frames:
 * the switch counts pause frames (a review: one that does not) */
static struct cc_snap *silent_storm(int64_t t, bool pausing, bool isolated, bool frames)
{
	struct cc_snap *s = ring(4, t, false);
	uint32_t q = P(s, "s2", "h2");

	if (isolated) {
		s->ports[q].lossless = 0;
		if (pausing)
			set(s, q, CF_RX_PAUSE_FRAMES, 20);
	} else if (pausing) {
		stuck(s, q, 70000);
	}
	if (!frames)
		cc_snap_prio(s, q, PRIO)->have &= ~(1u << CF_RX_PAUSE_FRAMES);
	silence(s, P(s, "h2", "nic0:1"));
	return s;
}

/* A silent host's storm isolated in auto mode is held while its switch port counts its pause
 * frames, and put back once it has counted none for the restore time; a switch that does not
 * count them holds it (its pause time and state say nothing once it is lossy).  Before, the
 * host's own empty readings said it had stopped, and the port was put back while it paused. */
/* A detector in auto mode (restore after 2 IV) that found h2's silent storm at IV and isolated
 * s2:h2. */
static struct cc_dl *silent_storm_found(bool frames)
{
	struct cc_dl_conf c = cc_dl_defaults;
	const struct cc_dl_result *r;
	struct cc_snap *s = silent_storm(IV, true, false, frames);
	struct cc_dl *d;

	c.storm_mode = CC_DL_AUTO;
	c.restore_us = 2 * IV;
	d = cc_dl_new(&c);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_true(only(r, CC_DL_PAUSE_STORM, 1)->silent);
	assert_int_equal(r->nactions, 1);
	assert_string_equal(r->actions[0].port, "h2");
	cc_dl_action_done(d, r->actions[0].id, true);
	return d;
}

static void silent_storm_isolated(bool frames)
{
	struct cc_dl *d = silent_storm_found(frames);
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;
	struct cc_snap *s;

	for (int i = 2; i <= 6; i++) {
		s = silent_storm(i * IV, true, true, frames);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		f = only(r, CC_DL_PAUSE_STORM, 1);
		assert_true(f->mitigated && f->silent);
		assert_non_null(strstr(f->summary, "(isolated)"));
		assert_int_equal(r->nactions, 0);
	}
	/* no pause frames from 6 IV: put back at 8 IV, when they are counted */
	for (int i = 7; i <= 8; i++) {
		s = silent_storm(i * IV, false, true, frames);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
	}
	if (frames) {
		assert_int_equal(r->nactions, 1);
		assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
		/* (what said it stopped: not h2's own readings, which it has none of) */
		assert_non_null(strstr(r->actions[0].reason,
				       "(as the port it paused read it: no readings of its own)"));
	} else {
		assert_int_equal(r->nactions, 0);
		assert_true(only(r, CC_DL_PAUSE_STORM, 1)->mitigated);
	}
	cc_dl_free(d);
}

static void test_silent_storm_held_while_its_port_is_paused(void **state)
{
	(void)state;
	silent_storm_isolated(true);
	silent_storm_isolated(false);
}

/* A silent host's storm, isolated, whose switch port's readings go too (its switch's agent gone),
 * then come back without a pause frame count: nothing read says the storm is over, so the port
 * stays isolated and the finding stays raised, as it was last read (the same id, its last_us
 * unmoved, no action).  Before, the finding (and its alert) cleared while the port stayed out
 * of lossless mode.  Pause frames counted again tell: none, and the port is put back. */
static void test_unread_storm_stays_raised_while_held(void **state)
{
	struct cc_dl *d = silent_storm_found(true);
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;
	struct cc_snap *s;
	uint64_t id;
	json_t *j;

	(void)state;
	s = silent_storm(2 * IV, true, true, true);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	f = only(r, CC_DL_PAUSE_STORM, 1);
	assert_false(f->unread);
	id = f->id;
	for (int i = 3; i <= 7; i++) {
		/* s2 and h2 gone (the two switches left have nothing to say); then s2:h2 back, isolated,
		 * paused by nothing it counts */
		s = i < 7 ? ring(2, i * IV, false) : silent_storm(i * IV, true, true, false);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		f = only(r, CC_DL_PAUSE_STORM, 1);
		assert_int_equal(f->id, id);
		assert_true(f->unread && f->silent && f->mitigated);
		assert_int_equal(f->last_us, 2 * IV);
		assert_string_equal(f->culprit, "h2");
		assert_string_equal(f->suggested.node, "s2");
		assert_string_equal(f->suggested.port, "h2");
		assert_non_null(strstr(f->summary, i < 7 ? "no readings from it or from s2:h2"
							 : "does not count pause frames"));
		assert_int_equal(r->nactions, 0);
	}
	j = cc_dl_finding_json(f);
	assert_true(json_is_true(json_object_get(j, "unread")));
	json_decref(j);
	j = cc_dl_holds_json(d); /* (its hold says so: rocefabctl detector) */
	assert_true(json_is_true(json_object_get(json_array_get(j, 0), "unread")));
	json_decref(j);
	/* its frames counted again, none: quiet from 7 IV, put back at 9 IV */
	for (int i = 8; i <= 9; i++) {
		s = silent_storm(i * IV, false, true, true);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		only(r, CC_DL_PAUSE_STORM, 0);
		j = cc_dl_holds_json(d); /* (read again: no longer unread) */
		assert_null(json_object_get(json_array_get(j, 0), "unread"));
		json_decref(j);
	}
	assert_int_equal(r->nactions, 1);
	assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
	cc_dl_free(d);
}

/* A storm read as over (its switch port counts no pause frames from the host), then both ends
 * gone: nothing is raised again, and the port goes back as the last readings said (a review: a
 * new alert said "kept isolated" while the detector was putting the port back). */
/* A silent host's storm isolated by a switch that counts no pause frames is held unread; its
 * port, lossy, sends again while the host pauses it: the storm alone, no slow receiver of the
 * same host (a review: both were raised, the one saying the port counts no pauses, the other
 * reading its pause time). */
static void test_an_isolated_storm_is_no_slow_receiver(void **state)
{
	struct cc_dl *d = silent_storm_found(false);
	const struct cc_dl_result *r;

	(void)state;
	for (int i = 2; i <= 5; i++) {
		struct cc_snap *s = silent_storm(i * IV, true, true, false);

		set(s, P(s, "s2", "h2"), CF_RX_PAUSE_US, IV / 2);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		assert_true(only(r, CC_DL_PAUSE_STORM, 1)->mitigated);
		only(r, CC_DL_SLOW_RECEIVER, 0);
	}
	cc_dl_free(d);
}

static void test_unread_storm_over_is_not_raised_again(void **state)
{
	struct cc_dl *d = silent_storm_found(true);
	const struct cc_dl_result *r;
	struct cc_snap *s;

	(void)state;
	for (int i = 2; i <= 5; i++) {
		/* 2 IV pausing, 3 IV not (quiet from 2 IV), then s2 and h2 gone */
		s = i == 2 ? silent_storm(i * IV, true, true, true)
			   : i == 3 ? silent_storm(i * IV, false, true, true) : ring(2, i * IV, false);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		only(r, CC_DL_PAUSE_STORM, i == 2);
		assert_int_equal(r->nactions, i == 4);
		if (i == 4) { /* (said as it is: nothing was read since 3 IV) */
			assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
			assert_non_null(strstr(r->actions[0].reason,
					       "(as last read: neither it nor the port it paused reads pauses now)"));
		}
	}
	cc_dl_free(d);
}

static void test_negatives(void **state)
{
	struct cc_snap *s = ring(4, 10 * IV, false);
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;
	uint32_t p;

	(void)state;
	/* a cycle of paused queues that still drain: congestion, recorded, no alarm */
	stuck(s, P(s, "s0", "s1"), 50000);
	stuck(s, P(s, "s1", "s2"), 50000);
	stuck(s, P(s, "s2", "s3"), 50000);
	stuck(s, P(s, "s3", "s0"), 50000);
	set(s, P(s, "s2", "s3"), CF_TX_BYTES, 1500);
	/* a switch port pausing all interval with nothing received, but its node has a backlog */
	p = P(s, "s1", "h1");
	set(s, p, CF_TX_PAUSE_US, IV);
	set(s, p, CF_PAUSING, 1);
	set(s, p, CF_RX_BYTES, 0);
	/* a host that paused all interval but stopped by its end */
	p = P(s, "h3", "nic0:1");
	set(s, p, CF_TX_PAUSE_US, IV);
	set(s, p, CF_PAUSING, 0);
	set(s, p, CF_RX_BYTES, 0);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	only(r, CC_DL_DEADLOCK, 0);
	only(r, CC_DL_PAUSE_STORM, 0);
	assert_int_equal(only(r, CC_DL_CONGESTION, 1)->victims_total, 1);
	cc_dl_free(d);
	cc_snap_free(s);
}

static void slow_host(struct cc_snap *s)
{
	uint32_t p = P(s, "h2", "nic0:1");

	set(s, p, CF_TX_PAUSE_US, IV / 2);
	set(s, p, CF_PAUSING, 1);
	set(s, p, CF_RX_BYTES, 300000);
}

static void test_slow_receiver_needs_two_intervals(void **state)
{
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;

	(void)state;
	for (int i = 1; i <= 3; i++) {
		struct cc_snap *s = ring(4, i * IV, false);

		slow_host(s);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		if (i == 1) {
			only(r, CC_DL_SLOW_RECEIVER, 0);
		} else {
			assert_string_equal(only(r, CC_DL_SLOW_RECEIVER, 1)->culprit, "h2");
			only(r, CC_DL_PAUSE_STORM, 0);
		}
		cc_snap_free(s);
	}
	cc_dl_free(d);
}

/* rocefabd's runs may come faster than a port's readings: two runs over the same readings
 * are one interval, not two (a storm's last interval, paused for part of it and then taking
 * traffic, read as a slow receiver); the next readings make the second.  Once found, the
 * same readings again keep the finding.  Runs slower than the readings: the next run's
 * readings are newer, a second interval (runs[5..6]). */
static void test_slow_receiver_counts_readings_not_runs(void **state)
{
	static const struct {
		int64_t from, to;
		size_t found;
	} runs[] = { { 0, IV, 0 },	    { 0, IV, 0 },	   { IV, 2 * IV, 1 },	  { IV, 2 * IV, 1 },
		     { 2 * IV, 3 * IV, 1 }, { 0, 0, 0 },	   { 10 * IV, 11 * IV, 0 }, { 13 * IV, 14 * IV, 1 } };
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;

	(void)state;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		if (!runs[i].to) { /* a new detector */
			cc_dl_free(d);
			d = cc_dl_new(NULL);
			continue;
		}
		struct cc_snap *s = ring(4, (int64_t)(i + 1) * IV, false);
		uint32_t p = P(s, "h2", "nic0:1");

		slow_host(s);
		s->ports[p].read_from_us = runs[i].from;
		s->ports[p].read_to_us = runs[i].to;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		only(r, CC_DL_SLOW_RECEIVER, runs[i].found);
		cc_snap_free(s);
	}
	cc_dl_free(d);
}

/* A slow receiver pauses only while more comes to it than it takes: under a bursty load some
 * intervals have nothing to pause for.  Found, it stays raised (the same finding, saying when
 * it was last one) through slow_hold intervals that are not, and comes back as the same one;
 * after slow_hold of them it clears.  Its port going down clears it at once.  (Before, every
 * quiet interval cleared it: an operator's trial saw 17 alerts for one slow host in 3 min.) */
static void test_slow_receiver_held_between_bursts(void **state)
{
	/* per interval (ends at i * IV): slow or not, the finding wanted (0: none) */
	static const struct {
		bool slow, down;
		int found;
	} iv[] = {
		{ true, false, 0 },  { true, false, 1 },  { false, false, 1 }, { false, false, 1 },
		{ true, false, 1 },  { false, false, 1 }, { false, false, 1 }, { false, false, 0 },
		{ false, false, 0 }, { true, false, 0 },  { true, false, 2 },  { false, true, 0 },
	};
	struct cc_dl_conf c = cc_dl_defaults;
	const struct cc_dl_result *r;
	struct cc_dl *d;
	uint64_t ids[3] = { 0 };
	int64_t last = 0;

	(void)state;
	assert_int_equal(cc_dl_defaults.slow_hold, 25);
	c.slow_hold = 3;
	d = cc_dl_new(&c);
	for (size_t i = 0; i < sizeof(iv) / sizeof(iv[0]); i++) {
		struct cc_snap *s = ring(4, (int64_t)(i + 1) * IV, false);
		const struct cc_dl_finding *f;

		if (iv[i].slow) {
			slow_host(s);
			last = s->t_us;
		}
		s->ports[P(s, "h2", "nic0:1")].down = iv[i].down;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		f = only(r, CC_DL_SLOW_RECEIVER, iv[i].found != 0);
		if (f) {
			if (!ids[iv[i].found])
				ids[iv[i].found] = f->id;
			assert_int_equal(f->id, ids[iv[i].found]);
			assert_int_equal(f->last_us, last);
			assert_true(strstr(f->summary, "paused its switch port 500 of 1000 us while taking 300000 "));
			assert_string_equal(f->paused.node, "s2"); /* the port it pauses */
			assert_string_equal(f->paused.port, "h2");
			/* paused as the summary says, held between its slow intervals too (a review: the
			 * quiet interval's own read 0) */
			assert_int_equal(f->paused.paused_us, 500);
			if (iv[i].slow)
				assert_null(strstr(f->summary, " ago"));
			else
				assert_true(strstr(f->summary, s->t_us - last == IV ? ", 1 interval ago (raised" :
											", 2 intervals ago (raised"));
		} else if (i && iv[i - 1].found) {
			assert_int_equal(r->ncleared, 1);
			assert_int_equal(r->cleared[0], ids[iv[i - 1].found]);
		}
		cc_snap_free(s);
	}
	assert_true(ids[1] && ids[2] && ids[1] != ids[2]);
	cc_dl_free(d);
}

/* The hold counts intervals, not the snapshots' clock (rocefabd's is the agents' median, which
 * may step back): cleared at the third quiet one all the same.  A run that sees the same
 * readings again is not another quiet interval.  And a host found, then a pause source (a NIC
 * that froze): the storm alone, the slow receiver cleared at once. */
static void test_slow_receiver_hold_counts_intervals(void **state)
{
	static const struct {
		int64_t t, read_to; /* the snapshot's end; h2's readings (0: not known) */
		bool slow;
		int found;
	} iv[] = { { 100 * IV, 0, true, 0 }, { 101 * IV, 0, true, 1 }, { 3 * IV, 0, false, 1 },
		   { 4 * IV, 0, false, 1 },   { 5 * IV, 0, false, 0 },   { 6 * IV, 0, true, 0 },
		   { 7 * IV, 7 * IV, true, 1 }, { 8 * IV, 8 * IV, false, 1 }, { 9 * IV, 8 * IV, false, 1 },
		   { 10 * IV, 8 * IV, false, 1 }, { 11 * IV, 11 * IV, false, 1 }, { 12 * IV, 12 * IV, false, 0 } };
	struct cc_dl_conf c = cc_dl_defaults;
	const struct cc_dl_result *r;
	struct cc_dl *d;
	struct cc_snap *s;

	(void)state;
	c.slow_hold = 3;
	d = cc_dl_new(&c);
	for (size_t i = 0; i < sizeof(iv) / sizeof(iv[0]); i++) {
		s = ring(4, iv[i].t, false);
		if (iv[i].slow)
			slow_host(s);
		s->ports[P(s, "h2", "nic0:1")].read_to_us = iv[i].read_to;
		s->ports[P(s, "h2", "nic0:1")].read_from_us = iv[i].read_to ? iv[i].read_to - IV : 0;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		only(r, CC_DL_SLOW_RECEIVER, iv[i].found);
		cc_snap_free(s);
	}
	cc_dl_free(d);
	/* found, then pausing all interval while it takes nothing: a storm, not a held receiver */
	d = cc_dl_new(&c);
	for (int i = 1; i <= 3; i++) {
		s = ring(4, i * IV, false);
		if (i < 3) {
			slow_host(s);
		} else {
			uint32_t p = P(s, "h2", "nic0:1");

			set(s, p, CF_TX_PAUSE_US, IV);
			set(s, p, CF_TX_PAUSE_FRAMES, 20);
			set(s, p, CF_PAUSING, 1);
			set(s, p, CF_RX_BYTES, 0);
			set(s, p, CF_RX_PACKETS, 0);
		}
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		only(r, CC_DL_SLOW_RECEIVER, i == 2);
		if (i == 3)
			assert_string_equal(only(r, CC_DL_PAUSE_STORM, 1)->culprit, "h2");
		cc_snap_free(s);
	}
	cc_dl_free(d);
}

/* h2 slow with its agent silent, as its switch port s2:h2 tells: paused half the interval by
 * h2 while it sends h2 300000 bytes (only h2's NIC pauses it) */
static void slow_silent_host(struct cc_snap *s)
{
	uint32_t p = P(s, "s2", "h2");

	silence(s, P(s, "h2", "nic0:1"));
	set(s, p, CF_RX_PAUSE_US, IV / 2);
	set(s, p, CF_RX_PAUSE_FRAMES, 10);
	set(s, p, CF_PAUSED, 1);
	set(s, p, CF_TX_BYTES, 300000);
}

/* A slow receiver whose agent is silent is read from its switch port (before, no finding: its
 * switch port's queue was called congestion), found after two intervals of that port's
 * readings and held between them as they count; then stuck, a storm.  Not when h2 keeps the
 * priority lossy, nor when its switch port is silent too or reads no pause time. */
static void test_slow_receiver_whose_agent_is_silent(void **state)
{
	struct cc_dl_conf c = cc_dl_defaults;
	const struct cc_dl_result *r;
	const struct cc_dl_finding *f;
	struct cc_dl *d;
	struct cc_snap *s;
	json_t *j;

	(void)state;
	c.slow_hold = 2;
	d = cc_dl_new(&c);
	for (int i = 1; i <= 9; i++) {
		s = ring(4, i * IV, false);
		if (i <= 2 || i == 5 || i == 8) {
			slow_silent_host(s);
		} else if (i == 9) {
			silence(s, P(s, "h2", "nic0:1"));
			stuck(s, P(s, "s2", "h2"), 70000);
		} else {
			silence(s, P(s, "h2", "nic0:1"));
		}
		/* the switch port's readings: one interval each, the same twice at 4 (no new one) */
		s->ports[P(s, "s2", "h2")].read_from_us = (i == 4 ? 2 : i - 1) * IV;
		s->ports[P(s, "s2", "h2")].read_to_us = (i == 4 ? 3 : i) * IV;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		/* (held through 3 and 4, cleared at 7, the second interval without it, new at 8: one
		 * interval is not two) */
		f = only(r, CC_DL_SLOW_RECEIVER, i >= 2 && i <= 6);
		if (f) {
			assert_string_equal(f->culprit, "h2");
			assert_true(f->silent);
			assert_string_equal(f->paused.node, "s2");
			assert_string_equal(f->paused.port, "h2");
			assert_int_equal(f->paused.paused_us, IV / 2);
			assert_non_null(strstr(f->summary, "paused its switch port 500 of 1000 us while taking "
							   "300000 bytes (read from that port: no readings of its own)"));
			j = cc_dl_finding_json(f);
			assert_true(json_is_true(json_object_get(j, "source_silent")));
			json_decref(j);
		}
		if (i == 9)
			assert_true(only(r, CC_DL_PAUSE_STORM, 1)->silent);
		cc_snap_free(s);
	}
	cc_dl_free(d);

	/* slow on its own readings, then its agent gone: the switch's readings, on another clock
	 * (here behind the host's), make the second interval all the same (a review: compared
	 * with the host's, they made none) */
	d = cc_dl_new(NULL);
	for (int i = 1; i <= 2; i++) {
		s = ring(4, i * IV, false);
		if (i == 1) {
			slow_host(s);
			s->ports[P(s, "h2", "nic0:1")].read_from_us = 10 * IV;
			s->ports[P(s, "h2", "nic0:1")].read_to_us = 11 * IV;
		} else {
			slow_silent_host(s);
			s->ports[P(s, "s2", "h2")].read_from_us = 5 * IV;
			s->ports[P(s, "s2", "h2")].read_to_us = 6 * IV;
		}
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		only(r, CC_DL_SLOW_RECEIVER, i == 2);
		cc_snap_free(s);
	}
	cc_dl_free(d);

	/* the negatives, two intervals each: h2 lossy, lossless on another priority; s2:h2 silent,
	 * reading no pause time, lossy (isolated from h2: it sends whatever h2 pauses) */
	for (int k = 0; k < 5; k++) {
		d = cc_dl_new(NULL);
		for (int i = 1; i <= 2; i++) {
			s = ring(4, i * IV, false);
			slow_silent_host(s);
			if (k == 0)
				s->ports[P(s, "h2", "nic0:1")].lossless = 0;
			else if (k == 1)
				s->ports[P(s, "h2", "nic0:1")].lossless = 1u << (PRIO + 1);
			else if (k == 2)
				silence(s, P(s, "s2", "h2"));
			else if (k == 3)
				cc_snap_prio(s, P(s, "s2", "h2"), PRIO)->have &= ~(1u << CF_RX_PAUSE_US);
			else
				s->ports[P(s, "s2", "h2")].lossless = 0;
			assert_int_equal(cc_dl_run(d, s, &r), 0);
			only(r, CC_DL_SLOW_RECEIVER, 0);
			cc_snap_free(s);
		}
		cc_dl_free(d);
	}
}

static struct cc_snap *deadlocked(int64_t t, bool broken)
{
	struct cc_snap *s = ring(3, t, false);

	stuck(s, P(s, "s0", "s1"), 10000);
	stuck(s, P(s, "s1", "s2"), 20000);
	stuck(s, P(s, "s2", "s0"), 30000);
	if (broken) /* s0:s1 ignores pauses: nothing stuck there */
		s->ports[P(s, "s0", "s1")].lossless = 0;
	return s;
}

static void test_break_restore_persistent(void **state)
{
	struct cc_dl_conf c = cc_dl_defaults;
	struct cc_dl *d;
	const struct cc_dl_result *r;
	struct cc_snap *s;
	uint64_t first;

	(void)state;
	c.deadlock_mode = CC_DL_AUTO;
	c.restore_us = 3 * IV;
	d = cc_dl_new(&c);
	s = deadlocked(1 * IV, false);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 1);
	assert_int_equal(r->actions[0].op, CC_DL_LOSSY);
	assert_string_equal(r->actions[0].node, "s0");
	assert_string_equal(r->actions[0].port, "s1");
	assert_non_null(strstr(r->actions[0].reason, "for 3 ms"));
	first = r->findings[0].id;
	assert_true(r->findings[0].mitigated);
	cc_dl_action_done(d, r->actions[0].id, true);
	assert_int_equal(cc_dl_holds(d), 1);
	/* the break drains the cycle: the finding clears, the hold stays until the restore time */
	s = ring(3, 2 * IV, false);
	s->ports[P(s, "s0", "s1")].lossless = 0;
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->ncleared, 1);
	assert_int_equal(r->cleared[0], first);
	assert_int_equal(r->nactions, 0);
	s = ring(3, 4 * IV, false);
	s->ports[P(s, "s0", "s1")].lossless = 0;
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 1);
	assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
	cc_dl_action_done(d, r->actions[0].id, true);
	assert_int_equal(cc_dl_holds(d), 0);
	/* it forms again: persistent, broken for good */
	s = deadlocked(5 * IV, false);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_non_null(only(r, CC_DL_PERSISTENT, 1));
	assert_int_equal(r->nactions, 1);
	assert_non_null(strstr(r->actions[0].reason, "until the routing is fixed"));
	cc_dl_action_done(d, r->actions[0].id, true);
	for (int i = 6; i < 20; i++) {
		s = ring(3, i * IV, false);
		s->ports[P(s, "s0", "s1")].lossless = 0;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		assert_int_equal(r->nactions, 0);
		assert_true(only(r, CC_DL_PERSISTENT, 1)->mitigated); /* stays raised */
	}
	/* an operator fixed the routing and put the port back: the hold is theirs, it goes */
	s = ring(3, 20 * IV, false);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(cc_dl_holds(d), 0);
	only(r, CC_DL_PERSISTENT, 0);
	assert_int_equal(r->nactions, 0);
	/* a loop there later is a deadlock of its own, broken for a time (it was persistent, held
	 * for good, for the life of the process) */
	s = deadlocked(21 * IV, false);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	only(r, CC_DL_PERSISTENT, 0);
	assert_non_null(only(r, CC_DL_DEADLOCK, 1));
	assert_int_equal(r->nactions, 1);
	assert_non_null(strstr(r->actions[0].reason, "for 3 ms"));
	cc_dl_action_done(d, r->actions[0].id, true);
	for (int i = 22; i <= 24; i++) {
		s = ring(3, i * IV, false);
		s->ports[P(s, "s0", "s1")].lossless = 0;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
	}
	assert_int_equal(r->nactions, 1);
	assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
	cc_dl_action_done(d, r->actions[0].id, true);
	/* ... and so is one that forms more than 10 restore times after its break was restored */
	s = ring(3, 40 * IV, false);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	s = deadlocked(55 * IV, false);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_non_null(only(r, CC_DL_DEADLOCK, 1));
	only(r, CC_DL_PERSISTENT, 0);
	cc_dl_free(d);
}

static struct cc_snap *storming(int64_t t, bool isolated, bool pausing)
{
	struct cc_snap *s = ring(3, t, false);
	uint32_t h = P(s, "h1", "nic0:1");

	if (!pausing)
		return s;
	if (isolated) {
		/* the switch ignores the pauses: h1 takes traffic but still pauses */
		s->ports[P(s, "s1", "h1")].lossless = 0;
		set(s, h, CF_TX_PAUSE_US, IV);
		set(s, h, CF_PAUSING, 1);
	} else {
		stuck(s, P(s, "s1", "h1"), 50000);
	}
	return s;
}

static void test_storm_isolated_until_quiet(void **state)
{
	struct cc_dl_conf c = cc_dl_defaults;
	struct cc_dl *d;
	const struct cc_dl_result *r;
	struct cc_snap *s;
	uint64_t restore;

	(void)state;
	c.storm_mode = CC_DL_AUTO;
	c.restore_us = 2 * IV;
	d = cc_dl_new(&c);
	s = storming(IV, false, true);
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 1);
	assert_string_equal(r->actions[0].node, "s1");
	assert_string_equal(r->actions[0].port, "h1");
	cc_dl_action_done(d, r->actions[0].id, true);
	/* isolated and still pausing: the storm stays (not a slow receiver), nothing restored */
	for (int i = 2; i <= 6; i++) {
		s = storming(i * IV, true, true);
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		assert_true(only(r, CC_DL_PAUSE_STORM, 1)->mitigated);
		only(r, CC_DL_SLOW_RECEIVER, 0);
		assert_int_equal(r->nactions, 0);
	}
	/* quiet from t = 6 IV: restored once it has been quiet for 2 IV */
	s = storming(7 * IV, true, false);
	s->ports[P(s, "s1", "h1")].lossless = 0;
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 0);
	s = storming(8 * IV, true, false);
	s->ports[P(s, "s1", "h1")].lossless = 0;
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 1);
	assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
	restore = r->actions[0].id;
	/* (a storm restored on its host's own readings says nothing of another port's) */
	assert_null(strstr(r->actions[0].reason, "as the port it paused"));
	assert_null(strstr(r->actions[0].reason, "as last read"));
	/* the restore failed (the port is still out of lossless mode): retried at the next interval */
	cc_dl_action_done(d, restore, false);
	s = storming(9 * IV, true, false);
	s->ports[P(s, "s1", "h1")].lossless = 0;
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 1);
	assert_int_equal(r->actions[0].op, CC_DL_RESTORE);
	assert_true(r->actions[0].id != restore);
	cc_dl_action_done(d, r->actions[0].id, true);
	assert_int_equal(cc_dl_holds(d), 0);
	cc_dl_free(d);
}

/* A restore that failed is retried only while the storm is still over: one that started again
 * meanwhile keeps its port isolated (a review: the retry went out, saying "has not paused"). */
static void test_failed_restore_not_retried_once_the_storm_is_back(void **state)
{
	struct cc_dl_conf c = cc_dl_defaults;
	struct cc_dl *d;
	const struct cc_dl_result *r;
	struct cc_snap *s;

	(void)state;
	c.storm_mode = CC_DL_AUTO;
	c.restore_us = 2 * IV;
	d = cc_dl_new(&c);
	for (int i = 1; i <= 6; i++) {
		/* found at IV, isolated; quiet from IV: restored at 3 IV, which fails; back at 4 IV */
		s = storming(i * IV, i > 1, i == 1 || i >= 4);
		if (i > 1)
			s->ports[P(s, "s1", "h1")].lossless = 0;
		assert_int_equal(cc_dl_run(d, s, &r), 0);
		cc_snap_free(s);
		assert_int_equal(r->nactions, i == 1 || i == 3);
		if (r->nactions)
			cc_dl_action_done(d, r->actions[0].id, i == 1);
	}
	assert_true(only(r, CC_DL_PAUSE_STORM, 1)->mitigated);
	cc_dl_free(d);
}

static void test_advise_and_mitigate(void **state)
{
	struct cc_dl *d = cc_dl_new(NULL);
	const struct cc_dl_result *r;
	struct cc_dl_action a;
	struct cc_snap *s = deadlocked(IV, false);
	uint64_t id, cong = 0;
	struct cc_dl_conf c;

	(void)state;
	stuck(s, P(s, "h0", "nic0:1"), 0);
	set(s, P(s, "h0", "nic0:1"), CF_TX_BYTES, 10); /* paused but draining: congestion */
	assert_int_equal(cc_dl_run(d, s, &r), 0);
	cc_snap_free(s);
	assert_int_equal(r->nactions, 0);
	id = only(r, CC_DL_DEADLOCK, 1)->id;
	for (size_t i = 0; i < r->nfindings; i++)
		if (r->findings[i].cls == CC_DL_CONGESTION)
			cong = r->findings[i].id;
	assert_true(cong != 0);
	assert_int_equal(cc_dl_mitigate(d, 9999, &a), -ENOENT);
	assert_int_equal(cc_dl_mitigate(d, cong, &a), -EINVAL);
	assert_int_equal(cc_dl_mitigate(d, id, &a), 0);
	assert_int_equal(a.op, CC_DL_LOSSY);
	assert_int_equal(a.finding, id);
	assert_int_equal(cc_dl_mitigate(d, id, &a), -EALREADY);
	c = *cc_dl_config(d);
	c.deadlock_mode = CC_DL_OFF;
	cc_dl_configure(d, &c);
	assert_int_equal(cc_dl_mitigate(d, id, &a), -EPERM);
	/* a bad configuration is named */
	c.restore_us = 0;
	assert_non_null(cc_dl_conf_check(&c));
	c.restore_us = 1;
	c.stuck_share = 1.5;
	assert_non_null(cc_dl_conf_check(&c));
	assert_null(cc_dl_conf_check(&cc_dl_defaults));
	cc_dl_free(d);
}

static void test_pfcwd(void **state)
{
	struct cc_wd_conf c = cc_wd_scaled(IV);
	struct cc_wd *w = cc_wd_new(&c);
	const struct cc_wd_action *a;
	size_t n;

	(void)state;
	/* poll 1: paused (no previous sample); poll 2: paused again, frames, no XON: storm */
	for (int i = 1; i <= 2; i++) {
		struct cc_snap *s = ring(3, i * IV, false);

		stuck(s, P(s, "s0", "s1"), 1000);
		assert_int_equal(cc_wd_poll(w, s, &a, &n), 0);
		cc_snap_free(s);
		assert_int_equal(n, i == 1 ? 0 : 1);
	}
	assert_int_equal(a[0].op, CC_WD_DROP);
	assert_string_equal(a[0].node, "s0");
	assert_int_equal(cc_wd_stormed(w), 1);
	/* pause frames stop: restored after restoration time */
	{
		struct cc_snap *s = ring(3, 3 * IV, false);

		assert_int_equal(cc_wd_poll(w, s, &a, &n), 0);
		cc_snap_free(s);
	}
	assert_int_equal(n, 1);
	assert_int_equal(a[0].op, CC_WD_RESTORE);
	/* an XON transition in between: no storm */
	for (int i = 4; i <= 6; i++) {
		struct cc_snap *s = ring(3, i * IV, false);

		stuck(s, P(s, "s1", "s2"), 1000);
		set(s, P(s, "s1", "s2"), CF_RX_PAUSE_TRANSITIONS, 1);
		assert_int_equal(cc_wd_poll(w, s, &a, &n), 0);
		cc_snap_free(s);
		assert_int_equal(n, 0);
	}
	cc_wd_free(w);
}

/* What holds the tuner's harder steps on a priority (cc_dl_fault): the first of its findings
 * that no congestion control cures — a deadlock by its first queue (a persistent one its break
 * holds by that queue), once it has lasted min_age_us; a storm or a slow receiver by its
 * culprit — with the others counted; congestion, and the findings of other priorities, not. */
static void test_fault_for_the_tuner(void **state)
{
	struct cc_dl_queue q[1] = { { .node = "leaf1", .port = "spine0" } };
	struct cc_dl_finding f[4] = {
		{ .cls = CC_DL_CONGESTION, .prio = 3, .ports = q, .nports = 1 },
		{ .cls = CC_DL_SLOW_RECEIVER, .prio = 6, .culprit = "h7" },
		{ .cls = CC_DL_DEADLOCK, .prio = 3, .ports = q, .nports = 1 },
		{ .cls = CC_DL_PAUSE_STORM, .prio = 3, .culprit = "h2" },
	};
	struct cc_dl_result r = { .findings = f, .nfindings = 4 };
	char buf[200];

	(void)state;
	assert_true(cc_dl_fault(&r, 3, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "deadlock at leaf1:spine0 and more");
	assert_true(cc_dl_fault(&r, 6, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "slow_receiver h7");
	assert_false(cc_dl_fault(&r, 4, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "");
	r.nfindings = 1; /* congestion alone */
	assert_false(cc_dl_fault(&r, 3, 0, buf, sizeof(buf)));
	f[1].cls = CC_DL_PERSISTENT;
	f[1].ports = q;
	f[1].nports = 1;
	r.nfindings = 2;
	assert_true(cc_dl_fault(&r, 6, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "persistent at leaf1:spine0");
	/* one its break holds: no cycle in this interval, the queue the break holds named */
	f[1].nports = 0;
	snprintf(f[1].suggested.node, sizeof(f[1].suggested.node), "spine1");
	snprintf(f[1].suggested.port, sizeof(f[1].suggested.port), "leaf2");
	assert_true(cc_dl_fault(&r, 6, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "persistent at spine1:leaf2");
	/* a deadlock younger than min_age_us: not yet (the storm after it is the first) */
	r.t_us = 1000;
	f[2].first_us = 900;
	r.nfindings = 4;
	assert_true(cc_dl_fault(&r, 3, 200, buf, sizeof(buf)));
	assert_string_equal(buf, "pause_storm h2");
	f[2].first_us = 800;
	assert_true(cc_dl_fault(&r, 3, 200, buf, sizeof(buf)));
	assert_string_equal(buf, "deadlock at leaf1:spine0 and more");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_cycle_in_order),
		cmocka_unit_test(test_break_frees_most),
		cmocka_unit_test(test_storm_and_victims),
		cmocka_unit_test(test_storm_of_a_silent_host),
		cmocka_unit_test(test_silent_storm_held_while_its_port_is_paused),
		cmocka_unit_test(test_unread_storm_stays_raised_while_held),
		cmocka_unit_test(test_unread_storm_over_is_not_raised_again),
		cmocka_unit_test(test_an_isolated_storm_is_no_slow_receiver),
		cmocka_unit_test(test_failed_restore_not_retried_once_the_storm_is_back),
		cmocka_unit_test(test_negatives),
		cmocka_unit_test(test_slow_receiver_needs_two_intervals),
		cmocka_unit_test(test_slow_receiver_counts_readings_not_runs),
		cmocka_unit_test(test_slow_receiver_held_between_bursts),
		cmocka_unit_test(test_slow_receiver_hold_counts_intervals),
		cmocka_unit_test(test_slow_receiver_whose_agent_is_silent),
		cmocka_unit_test(test_break_restore_persistent),
		cmocka_unit_test(test_storm_isolated_until_quiet),
		cmocka_unit_test(test_advise_and_mitigate),
		cmocka_unit_test(test_pfcwd),
		cmocka_unit_test(test_fault_for_the_tuner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
