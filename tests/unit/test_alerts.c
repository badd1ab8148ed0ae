/* Unit tests of rocefabd's alerts (one owner of the alerts table: raise, update, clear, the
 * history, each source confined to its own kinds) and of the scheduler of periodic passes. */
#include "daemon/alerts.h"
#include "daemon/portwatch.h"
#include "daemon/sched.h"
#include "tests/unit/daemon-fixture.h"

static const char *const loc_kinds[] = { "host", "link", "tor", "fabric", NULL };
static const char *const other_kinds[] = { "deadlock", "pause_storm", NULL };

static json_t *list(struct fixture *f, const char *state)
{
	struct store_reader *rd = store_reader_get(f->st);
	struct rf_err e = { 0 };
	json_t *doc = NULL;

	assert_int_equal(alerts_list(rd, state, &doc, &e), 0);
	store_reader_put(f->st, rd);
	return doc;
}

static json_t *item(json_t *doc, size_t i)
{
	return json_array_get(json_object_get(doc, "items"), i);
}

static const char *field(json_t *doc, size_t i, const char *k)
{
	return json_string_value(json_object_get(item(doc, i), k));
}

static void test_alerts_lifecycle(void **state)
{
	struct alert_finding link = { "link", "leaf0-spine1", "18 of 20 bad results cross leaf0-spine1", NULL, ALERT_RAISE,
				      0 };
	struct alert_finding host = { "host", "h7", "every probe to h7 is lost", NULL, ALERT_RAISE, 0 };
	struct alert_finding storm = { "pause_storm", "h3", "h3 pauses leaf0:h3 100 %", "{\"culprit\":\"h3\"}", ALERT_RAISE,
				       0 };
	int64_t t0 = 1764514195000000000LL;
	struct fixture f;
	json_t *doc;

	(void)state;
	fx_open(&f);
	/* raised */
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &link, 1, t0), 0);
	store_flush(f.st);
	doc = list(&f, "active");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	assert_string_equal(field(doc, 0, "kind"), "link");
	assert_string_equal(field(doc, 0, "subject"), "leaf0-spine1");
	assert_string_equal(field(doc, 0, "state"), "active");
	assert_true(json_is_null(json_object_get(item(doc, 0), "cleared")));
	json_decref(doc);

	/* the same finding goes on: updated (last seen, evidence), not raised again */
	link.evidence = "19 of 20 bad results cross leaf0-spine1";
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &link, 1, t0 + NSEC_PER_SEC), 0);
	/* another source's alert is not the pingmesh's to clear */
	assert_int_equal(alerts_sync(f.st, "detector", other_kinds, &storm, 1, t0 + NSEC_PER_SEC), 0);
	store_flush(f.st);
	doc = list(&f, NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 2);
	assert_string_equal(field(doc, 0, "kind"), "pause_storm"); /* newest first */
	assert_string_equal(field(doc, 1, "evidence"), "19 of 20 bad results cross leaf0-spine1");
	assert_string_equal(field(doc, 1, "first_seen"), "2025-11-30T14:49:55.000000Z");
	assert_string_equal(field(doc, 1, "last_seen"), "2025-11-30T14:49:56.000000Z");
	json_decref(doc);
	/* a finding last seen before now (a slow receiver held between its slow intervals) says when */
	link.last_ns = t0 + NSEC_PER_SEC;
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &link, 1, t0 + 3 * NSEC_PER_SEC / 2), 0);
	link.last_ns = 0;
	store_flush(f.st);
	doc = list(&f, NULL);
	assert_string_equal(field(doc, 1, "last_seen"), "2025-11-30T14:49:56.000000Z");
	json_decref(doc);

	/* a new finding: the link is over (cleared, kept in the history), the host raised; the
	 * detector's storm stays */
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &host, 1, t0 + 2 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	doc = list(&f, "cleared");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	assert_string_equal(field(doc, 0, "subject"), "leaf0-spine1");
	assert_string_equal(field(doc, 0, "cleared"), "2025-11-30T14:49:57.000000Z");
	json_decref(doc);
	doc = list(&f, "active");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 2);
	assert_string_equal(field(doc, 0, "subject"), "h7");
	assert_string_equal(field(doc, 1, "subject"), "h3");
	json_decref(doc);

	/* nothing found any more: the pingmesh's alerts clear, the storm stays */
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, NULL, 0, t0 + 3 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	doc = list(&f, "active");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	assert_string_equal(field(doc, 0, "kind"), "pause_storm");
	json_decref(doc);
	/* a cleared alert that comes back is a new alert */
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &link, 1, t0 + 4 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE subject = 'leaf0-spine1'"), 2);

	/* bad arguments */
	assert_int_equal(alerts_sync(f.st, "x", NULL, &link, 1, t0), -EINVAL);
	{
		struct store_reader *rd = store_reader_get(f.st);
		struct rf_err e = { 0 };

		doc = NULL;
		assert_int_equal(alerts_list(rd, "acked", &doc, &e), -EINVAL);
		assert_string_equal(e.code, "BAD_PARAMETER");
		assert_null(doc);
		store_reader_put(f.st, rd);
	}
	fx_close(&f);
}

/* A finding another source's alert explains raises no alert of its own.  One raised before goes on
 * (ALERT_KEEP: a fault found before may be one of its own) or, the same fault (ALERT_FOLD), is
 * cleared, saying what explains it, its last seen kept. */
static void test_alerts_explained(void **state)
{
	struct alert_finding tor = { "tor", "leaf0", "probes under leaf0 are slow",
				     "{\"attributed_to\":{\"kind\":\"pause_storm\",\"subject\":\"h7\"}}", ALERT_KEEP,
				     0 };
	struct alert_finding host = { "host", "h7", "every probe to h7 is lost", NULL, ALERT_RAISE, 0 };
	struct alert_finding link = { "link", "leaf1-spine0", "lost", NULL, ALERT_RAISE, 0 };
	struct alert_finding both[2];
	int64_t t0 = 1764514195000000000LL;
	struct fixture f;
	json_t *doc;

	(void)state;
	fx_open(&f);
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &tor, 1, t0), 0);
	tor.how = ALERT_FOLD;
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &tor, 1, t0), 0);
	store_flush(f.st);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts"), 0);
	/* raised before they were explained: the same fault is folded, with what explains it; a
	 * link the storm may add to goes on */
	both[0] = host;
	both[1] = link;
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, both, 2, t0 + NSEC_PER_SEC), 0);
	both[0].how = ALERT_FOLD;
	both[0].evidence = "every probe to h7 is lost; the PFC detector names it too";
	both[0].details = "{\"attributed_to\":{\"kind\":\"pause_storm\",\"subject\":\"h7\"}}";
	both[1].how = ALERT_KEEP;
	both[1].evidence = "lost; the pause storm of h7 may add to it";
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, both, 2, t0 + 2 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	doc = list(&f, "cleared");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	assert_string_equal(field(doc, 0, "subject"), "h7");
	assert_string_equal(field(doc, 0, "evidence"), "every probe to h7 is lost; the PFC detector names it too");
	assert_string_equal(field(doc, 0, "cleared"), "2025-11-30T14:49:57.000000Z");
	assert_string_equal(field(doc, 0, "last_seen"), "2025-11-30T14:49:56.000000Z");
	{
		json_t *at = json_object_get(json_object_get(item(doc, 0), "details"), "attributed_to");

		assert_string_equal(json_string_value(json_object_get(at, "kind")), "pause_storm");
	}
	json_decref(doc);
	doc = list(&f, "active");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	assert_string_equal(field(doc, 0, "subject"), "leaf1-spine0");
	assert_string_equal(field(doc, 0, "evidence"), "lost; the pause storm of h7 may add to it");
	assert_string_equal(field(doc, 0, "last_seen"), "2025-11-30T14:49:57.000000Z");
	json_decref(doc);
	/* still explained: the host is not raised again; the link, once over, clears as any other
	 * and is not raised again while explained */
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, both, 1, t0 + 3 * NSEC_PER_SEC), 0);
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, both, 2, t0 + 4 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE subject = 'h7'"), 1);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE subject = 'leaf1-spine0'"), 1);
	assert_int_equal(fx_int(&f, "SELECT count(*) FROM alerts WHERE state = 'active'"), 0);
	fx_close(&f);
}

/* The history is bounded: the newest ALERTS_LIST_MAX. */
static void test_alerts_details_and_ack(void **state)
{
	struct alert_finding storm = { "pause_storm", "h3 priority 3", "h3 pauses leaf0:h3",
				       "{\"culprit\":\"h3\",\"priority\":3}", ALERT_RAISE, 0 };
	struct alert_finding plain = { "host", "h9", "lost", NULL, ALERT_RAISE, 0 };
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *a = NULL;
	int64_t id;

	(void)state;
	fx_open(&f);
	assert_int_equal(alerts_sync(f.st, "detector", other_kinds, &storm, 1, 1000), 0);
	assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &plain, 1, 1000), 0);
	store_flush(f.st);
	id = fx_int(&f, "SELECT id FROM alerts WHERE kind = 'pause_storm'");
	rd = store_reader_get(f.st);
	assert_int_equal(alerts_get(rd, id, &a, &e), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(a, "details"), "culprit")), "h3");
	assert_true(json_is_null(json_object_get(a, "acked")));
	json_decref(a);
	/* no details: none shown */
	assert_int_equal(alerts_get(rd, fx_int(&f, "SELECT id FROM alerts WHERE kind = 'host'"), &a, &e), 0);
	assert_null(json_object_get(a, "details"));
	json_decref(a);
	assert_int_equal(alerts_get(rd, 999, &a, &e), -ENOENT);
	assert_string_equal(e.code, "NO_SUCH_ALERT");
	store_reader_put(f.st, rd);
	/* acknowledged: by whom and when, still active */
	assert_int_equal(alerts_ack(f.st, id, "ops", 2000, &e), 0);
	assert_int_equal(alerts_ack(f.st, 999, "ops", 2000, &e), -ENOENT);
	/* the first acknowledgement stands: the same caller again is done, another is told who */
	assert_int_equal(alerts_ack(f.st, id, "ops", 2500, &e), 0);
	assert_int_equal(alerts_ack(f.st, id, "noc", 2600, &e), -EALREADY);
	assert_string_equal(e.code, "ALREADY_ACKED");
	assert_non_null(strstr(e.msg, "was acknowledged by ops at 1970-01-01T00:00:00.000002Z"));
	rd = store_reader_get(f.st);
	assert_int_equal(alerts_get(rd, id, &a, &e), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(a, "acked"), "by")), "ops");
	assert_string_equal(json_string_value(json_object_get(a, "state")), "active");
	assert_int_equal(json_array_size(json_object_get(a, "mitigations")), 0);
	json_decref(a);
	store_reader_put(f.st, rd);
	/* mitigated by operators: who, when, why (none: no member) and the change, oldest first,
	 * the last ALERT_MITIGATIONS_MAX */
	{
		struct alert_action aa = { "ops", "lossless_off", NULL, 1 };

		assert_int_equal(alerts_mitigated(f.st, 999, NULL, NULL, &aa, 3000, &e), -ENOENT);
	}
	for (int i = 1; i <= ALERT_MITIGATIONS_MAX + 2; i++) {
		struct alert_action aa = { i % 2 ? "ops" : "noc", "lossless_off", i % 2 ? "INC-7" : NULL, i };

		assert_int_equal(alerts_mitigated(f.st, id, NULL, NULL, &aa, 3000 + i, &e), 0);
	}
	rd = store_reader_get(f.st);
	assert_int_equal(alerts_get(rd, id, &a, &e), 0);
	{
		json_t *m = json_object_get(a, "mitigations"), *first = json_array_get(m, 0),
		       *last = json_array_get(m, ALERT_MITIGATIONS_MAX - 1);

		assert_int_equal(json_array_size(m), ALERT_MITIGATIONS_MAX);
		assert_int_equal(json_integer_value(json_object_get(first, "change")), 3);
		assert_string_equal(json_string_value(json_object_get(first, "by")), "ops");
		assert_string_equal(json_string_value(json_object_get(first, "reason")), "INC-7");
		assert_int_equal(json_integer_value(json_object_get(last, "change")), ALERT_MITIGATIONS_MAX + 2);
		assert_string_equal(json_string_value(json_object_get(last, "by")), "noc");
		assert_null(json_object_get(last, "reason"));
		assert_true(json_is_string(json_object_get(last, "at")));
		assert_string_equal(json_string_value(json_object_get(last, "op")), "lossless_off");
	}
	json_decref(a);
	store_reader_put(f.st, rd);
	fx_close(&f);
}

/* The detector's own actions go on the newest alert of the finding's kind and subject, cleared
 * or not: a restoration comes after its storm alert cleared. */
static void test_alerts_action_by_subject(void **state)
{
	struct alert_finding h3 = { "pause_storm", "h3 nic0:1 priority 3", "pause storm (isolated)", NULL, ALERT_RAISE, 0 };
	struct alert_action restore = { "detector", "restore", "pause_storm #4 over", 17 };
	struct store_reader *rd;
	struct fixture f;
	struct rf_err e = { 0 };
	json_t *doc, *a, *m;
	int64_t old, id;

	(void)state;
	fx_open(&f);
	assert_int_equal(alerts_sync(f.st, "detector", other_kinds, &h3, 1, 1000), 0);
	assert_int_equal(alerts_sync(f.st, "detector", other_kinds, NULL, 0, 2000), 0); /* cleared */
	assert_int_equal(alerts_sync(f.st, "detector", other_kinds, &h3, 1, 3000), 0); /* again: a new one */
	assert_int_equal(alerts_sync(f.st, "detector", other_kinds, NULL, 0, 4000), 0);
	store_flush(f.st);
	doc = list(&f, NULL);
	id = json_integer_value(json_object_get(json_array_get(json_object_get(doc, "items"), 0), "id"));
	old = json_integer_value(json_object_get(json_array_get(json_object_get(doc, "items"), 1), "id"));
	json_decref(doc);
	assert_true(id > old);
	assert_int_equal(alerts_mitigated(f.st, 0, "pause_storm", "h3 nic0:1 priority 3", &restore, 5000, &e), 0);
	assert_int_equal(alerts_mitigated(f.st, 0, "pause_storm", "h4 nic0:1 priority 3", &restore, 5000, &e), -ENOENT);
	assert_string_equal(e.code, "NO_SUCH_ALERT");
	rd = store_reader_get(f.st);
	assert_int_equal(alerts_get(rd, id, &a, &e), 0);
	assert_string_equal(json_string_value(json_object_get(a, "state")), "cleared");
	assert_int_equal(json_array_size(json_object_get(a, "mitigations")), 1);
	m = json_array_get(json_object_get(a, "mitigations"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "op")), "restore");
	assert_int_equal(json_integer_value(json_object_get(m, "change")), 17);
	json_decref(a);
	assert_int_equal(alerts_get(rd, old, &a, &e), 0);
	assert_int_equal(json_array_size(json_object_get(a, "mitigations")), 0);
	json_decref(a);
	store_reader_put(f.st, rd);
	fx_close(&f);
}

static void test_alerts_history_bound(void **state)
{
	struct fixture f;
	json_t *doc;

	(void)state;
	fx_open(&f);
	for (int i = 0; i < ALERTS_LIST_MAX + 5; i++) {
		char subject[16];
		struct alert_finding a = { "host", subject, "x", NULL, ALERT_RAISE, 0 };

		snprintf(subject, sizeof(subject), "h%d", i);
		assert_int_equal(alerts_sync(f.st, "pingmesh", loc_kinds, &a, 1, 1 + i), 0);
		store_flush(f.st);
	}
	doc = list(&f, NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), ALERTS_LIST_MAX);
	assert_string_equal(field(doc, 0, "subject"), "h204");
	json_decref(doc);
	doc = list(&f, "active");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	json_decref(doc);
	fx_close(&f);
}

/* --- the scheduler ---------------------------------------------------------------------------- */

struct pass_log {
	char order[32];
	int64_t last_now;
	int result;
};

static int pass_a(void *ctx, int64_t now)
{
	struct pass_log *l = ctx;

	strncat(l->order, "a", sizeof(l->order) - strlen(l->order) - 1);
	l->last_now = now;
	return 0;
}

static int pass_b(void *ctx, int64_t now)
{
	struct pass_log *l = ctx;

	(void)now;
	strncat(l->order, "b", sizeof(l->order) - strlen(l->order) - 1);
	return l->result;
}

static void test_sched(void **state)
{
	struct pass_log log = { .result = 0 };
	struct sched_pass a = { .name = "a", .period_ns = 100, .first_ns = 0, .run = pass_a, .ctx = &log };
	struct sched_pass b = { .name = "b", .period_ns = 250, .first_ns = 50, .run = pass_b, .ctx = &log };
	struct sched_stats st;
	struct sched *s;

	(void)state;
	assert_int_equal(sched_new(&s), 0);
	assert_int_equal(sched_add(s, &a, 1000), 0);
	assert_int_equal(sched_add(s, &b, 1000), 0);
	assert_int_equal(sched_add(s, &a, 1000), -EEXIST);
	{
		struct sched_pass bad = { .name = "c", .period_ns = 0, .run = pass_a };

		assert_int_equal(sched_add(s, &bad, 1000), -EINVAL);
		bad.period_ns = 10;
		bad.run = NULL;
		assert_int_equal(sched_add(s, &bad, 1000), -EINVAL);
	}
	/* a at once, then every 100; b 50 after it was added, then every 250 */
	assert_int_equal(sched_run_due(s, 1000, 7), 50);
	assert_string_equal(log.order, "a");
	assert_int_equal(log.last_now, 7);
	assert_int_equal(sched_run_due(s, 1049, 8), 1);
	assert_string_equal(log.order, "a");
	assert_int_equal(sched_run_due(s, 1050, 9), 50);
	assert_string_equal(log.order, "ab");
	assert_int_equal(sched_run_due(s, 1100, 10), 100);
	assert_string_equal(log.order, "aba");
	/* late: each due pass runs once (no burst of catch-ups), in the order they were added */
	assert_int_equal(sched_run_due(s, 2000, 11), 100);
	assert_string_equal(log.order, "abaab");
	assert_int_equal(sched_get_stats(s, "a", &st), 0);
	assert_int_equal(st.runs, 3);
	assert_int_equal(st.failures, 0);
	/* a busy store skips a run; failures are counted */
	log.result = -EAGAIN;
	assert_int_equal(sched_run_due(s, 2250, 12), 100);
	assert_string_equal(log.order, "abaabab");
	assert_int_equal(sched_get_stats(s, "b", &st), 0);
	assert_int_equal(st.runs, 3);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.failures, 0);
	assert_int_equal(st.last_result, -EAGAIN);
	log.result = -EIO;
	assert_int_equal(sched_run_due(s, 2500, 13), 100);
	assert_string_equal(log.order, "abaababab");
	assert_int_equal(sched_get_stats(s, "b", &st), 0);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.last_result, -EIO);
	assert_int_equal(sched_get_stats(s, "nope", &st), -ENOENT);
	sched_free(s);
}

/* A report of host h1 whose two ports are in these states (nic0:1 toward leaf0, nic0:2 none). */
static void host_ports(struct fixture *f, const char *s1, const char *s2, int64_t t)
{
	json_t *devices = json_pack("[{s:s,s:s,s:s,s:[{s:s,s:s,s:I,s:{s:s,s:s}},{s:s,s:s}]}]", "name", "nic0", "kind",
				    "rdma", "driver", "sim", "ports", "port", "1", "state", s1, "speed_mbps",
				    (json_int_t)100000, "neighbor", "system", "leaf0", "port", "h1", "port", "2",
				    "state", s2);

	json_decref(fx_report(f, fx_doc(f, "h1", "host", t, devices, NULL)));
}

/* port_down: a port that was up and is reported down raises one (naming its neighbour and
 * since when, the report's time); one never up (unused) does not; it stays while its agent is
 * silent, and clears when the port is up again. */
static void test_port_down(void **state)
{
	struct portwatch *pw;
	struct fixture f;
	int64_t t = tu_now_ns() - 10 * NSEC_PER_SEC;
	json_t *doc;

	(void)state;
	fx_open(&f);
	assert_int_equal(portwatch_new(f.st, &pw), 0);
	host_ports(&f, "up", "down", t);
	assert_int_equal(portwatch_pass(pw, tu_now_ns()), 0);
	store_flush(f.st);
	doc = list(&f, "active");
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 0); /* nic0:2 never up */
	json_decref(doc);
	host_ports(&f, "down", "down", t + NSEC_PER_SEC);
	host_ports(&f, "down", "down", t + 2 * NSEC_PER_SEC); /* (the state's time kept) */
	assert_int_equal(portwatch_pass(pw, tu_now_ns()), 0);
	store_flush(f.st);
	doc = list(&f, "active");
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
	assert_string_equal(field(doc, 0, "kind"), "port_down");
	assert_string_equal(field(doc, 0, "subject"), "h1:nic0:1");
	{
		char since[40], want[120];

		tu_format_rfc3339(t + NSEC_PER_SEC, since, sizeof(since));
		snprintf(want, sizeof(want),
			 "the port is down since %s, after it was up; its neighbour was leaf0 port h1", since);
		assert_string_equal(field(doc, 0, "evidence"), want);
	}
	json_decref(doc);
	/* its agent silent (nothing reported): the alert stays */
	assert_int_equal(portwatch_pass(pw, tu_now_ns() + 3600 * NSEC_PER_SEC), 0);
	store_flush(f.st);
	doc = list(&f, "active");
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
	json_decref(doc);
	/* up again: cleared */
	host_ports(&f, "up", "down", t + 3 * NSEC_PER_SEC);
	assert_int_equal(portwatch_pass(pw, tu_now_ns()), 0);
	store_flush(f.st);
	doc = list(&f, "active");
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 0);
	json_decref(doc);
	portwatch_free(pw);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alerts_lifecycle),
		cmocka_unit_test(test_alerts_explained),
		cmocka_unit_test(test_alerts_history_bound),
		cmocka_unit_test(test_alerts_details_and_ack),
		cmocka_unit_test(test_alerts_action_by_subject),
		cmocka_unit_test(test_sched),
		cmocka_unit_test(test_port_down),
	};

	return cmocka_run_group_tests_name("alerts", tests, NULL, NULL);
}
