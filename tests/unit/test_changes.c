/* Unit tests of configuration changes without HTTP (what the tuner and the detector will use):
 * choosing targets by glob patterns, validating the values against every one of them (all or
 * nothing), committing them to the audit log, the commands that carry them to the agents, the
 * outcomes they report, and the time-out of changes nobody answered. */
#include <inttypes.h>

#include "tests/unit/daemon-fixture.h"

static const char *boot = "b1"; /* the boot of leaf0's agent */

/* A leaf switch with ports h0..h3 (lossless priority 3, XOFF threshold 1 MB) and ECN on
 * queues 0 and 3 of each; command_results (stolen, may be NULL) as its agent reports them in
 * a report made at t. */
static json_t *switch_report_as(struct fixture *f, const char *sw, int64_t t, json_t *command_results, bool replay)
{
	json_t *ports = json_array(), *pfc = json_array(), *ecn = json_array(), *extra;

	for (int p = 0; p < 4; p++) {
		char port[16];

		snprintf(port, sizeof(port), "h%d", p);
		json_array_append_new(ports, json_pack("{s:s,s:s,s:I}", "port", port, "state", "up", "speed_mbps",
						       (json_int_t)100000));
		json_array_append_new(pfc, json_pack("{s:s,s:s,s:i,s:s,s:i,s:I}", "device", sw, "port", port,
						     "enable", 8, "mode", "dynamic", "alpha_shift", -3,
						     "xoff_threshold_bytes", (json_int_t)1000000));
		for (int q = 0; q < 4; q += 3)
			json_array_append_new(ecn, json_pack("{s:s,s:s,s:i,s:b,s:I,s:I,s:f}", "device", sw, "port",
							     port, "queue", q, "enabled", 1, "kmin_bytes",
							     (json_int_t)100000, "kmax_bytes", (json_int_t)400000,
							     "pmax", 0.2));
	}
	extra = json_pack("{s:{s:o,s:o}}", "config", "pfc", pfc, "ecn", ecn);
	if (command_results)
		json_object_set_new(extra, "command_results", command_results);
	extra = fx_doc(f, sw, "switch", t,
		       json_pack("[{s:s,s:s,s:s,s:o}]", "name", sw, "kind", "switch", "driver", "sim", "ports", ports),
		       extra);
	json_object_set_new(json_object_get(extra, "agent"), "boot_id", json_string(boot));
	return fx_report_as(f, extra, replay);
}

static json_t *switch_report_at(struct fixture *f, const char *sw, int64_t t, json_t *command_results)
{
	return switch_report_as(f, sw, t, command_results, false);
}

static json_t *switch_report(struct fixture *f, const char *sw, json_t *command_results)
{
	return switch_report_at(f, sw, tu_now_ns(), command_results);
}

static int64_t count(struct fixture *f, const char *where)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM changes WHERE %s", where);
	return fx_int(f, sql);
}

static void test_select_validate_commit(void **state)
{
	struct change_select sel = { .node = "leaf*", .port = "h[01]", .queue = 3 };
	struct change_set cs;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *params, *cmds, *results;
	int64_t batch = 0;
	size_t i;
	json_t *c;
	bool open, failed;
	char msg[200];

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	json_decref(switch_report(&f, "leaf1", NULL));
	json_decref(switch_report(&f, "spine0", NULL));

	/* Kmax at the XOFF threshold: every target rejects it, nothing is stored */
	params = json_pack("{s:s,s:s}", "kmin_bytes", "200KB", "kmax_bytes", "1MB");
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	rd = store_reader_get(f.st);
	assert_int_equal(changes_select(rd, &cs, &sel, &e), 0);
	store_reader_put(f.st, rd);
	assert_int_equal(cs.n, 4); /* leaf0 and leaf1, ports h0 and h1, queue 3 */
	assert_int_equal(cs.nbad, 4);
	assert_int_equal(change_set_check(&cs, true, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
	assert_string_equal(e.where, "/kmax_bytes");
	assert_non_null(strstr(e.msg, "4 of 4 targets reject the change; nothing was changed."));
	assert_int_equal(json_array_size(cs.rejections), 4);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(cs.rejections, 0),
									       "target"), "agent")), "leaf0");
	assert_int_equal(change_set_commit(f.st, &cs, "t", NULL, tu_now_ns() + 60 * NSEC_PER_SEC, &batch, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
	change_set_fini(&cs);
	json_decref(params);
	assert_int_equal(count(&f, "1"), 0);

	/* valid values: a change per target, pending, with the old values, normalized */
	params = json_pack("{s:s,s:s}", "kmin_bytes", "200KB", "kmax_bytes", "600KB");
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	json_decref(params);
	rd = store_reader_get(f.st);
	assert_int_equal(changes_select(rd, &cs, &sel, &e), 0);
	store_reader_put(f.st, rd);
	assert_int_equal(change_set_check(&cs, true, &e), 0);
	assert_int_equal(change_set_commit(f.st, &cs, "tuner", "canary", tu_now_ns() + 60 * NSEC_PER_SEC, &batch, &e),
			 0);
	change_set_fini(&cs);
	assert_true(batch > 0);
	assert_int_equal(count(&f, "state = 'pending' AND actor = 'tuner' AND reason = 'canary' AND queue = 3"), 4);
	assert_int_equal(count(&f, "params = '{\"kmax_bytes\":600000,\"kmin_bytes\":200000}'"), 4);
	assert_int_equal(count(&f, "old LIKE '%\"kmax_bytes\":400000%'"), 4);

	/* leaf0's next report carries its two changes as commands; then it reports them applied */
	cmds = switch_report(&f, "leaf0", NULL);
	assert_int_equal(json_array_size(cmds), 2);
	results = json_array();
	json_array_foreach(cmds, i, c) {
		assert_string_equal(json_string_value(json_object_get(c, "kind")), "set_ecn");
		assert_string_equal(json_string_value(json_object_get(c, "reason")), "canary");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "params"), "queue")), 3);
		json_array_append_new(results, json_pack("{s:s,s:s,s:{s:i}}", "id", json_string_value(json_object_get(c, "id")),
							 "outcome", "applied", "values", "kmin_bytes", 200000));
	}
	json_decref(cmds);
	assert_int_equal(count(&f, "state = 'sent'"), 2);
	json_decref(switch_report(&f, "leaf0", results));
	assert_int_equal(count(&f, "state = 'applied' AND agent_id = 'leaf0'"), 2);
	assert_int_equal(count(&f, "state = 'sent'"), 0);
	assert_int_equal(count(&f, "state = 'pending' AND agent_id = 'leaf1'"), 2);

	/* where the batch stands (what the tuner waits on): open while leaf1's are pending; then
	 * leaf1 applies one and fails the other: failed, with the agent's message */
	rd = store_reader_get(f.st);
	assert_int_equal(changes_batch_state(rd, batch, &open, &failed, msg, sizeof(msg), &e), 0);
	store_reader_put(f.st, rd);
	assert_true(open && !failed);
	cmds = switch_report(&f, "leaf1", NULL);
	assert_int_equal(json_array_size(cmds), 2);
	results = json_array();
	json_array_foreach(cmds, i, c)
		json_array_append_new(results, i ? json_pack("{s:s,s:s,s:{s:s,s:s}}", "id",
							     json_string_value(json_object_get(c, "id")), "outcome",
							     "failed", "error", "code", "EIO", "message", "the ASIC said no")
						 : json_pack("{s:s,s:s,s:{s:i}}", "id", json_string_value(json_object_get(c, "id")),
							     "outcome", "applied", "values", "kmin_bytes", 200000));
	json_decref(cmds);
	json_decref(switch_report(&f, "leaf1", results));
	assert_int_equal(count(&f, "state = 'failed'"), 1);
	rd = store_reader_get(f.st);
	assert_int_equal(changes_batch_state(rd, batch, &open, &failed, msg, sizeof(msg), &e), 0);
	assert_true(!open && failed);
	assert_string_equal(msg, "the ASIC said no");
	/* a batch with nothing pending, sent, failed or timed out (none at all here): neither */
	assert_int_equal(changes_batch_state(rd, batch + 1000, &open, &failed, msg, sizeof(msg), &e), 0);
	assert_true(!open && !failed);
	store_reader_put(f.st, rd);
	fx_close(&f);
}

static void test_select_errors(void **state)
{
	struct change_select any = { .queue = -2 };
	struct change_set cs;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *params = json_pack("{s:i}", "kmin_bytes", 1000), *entries = NULL;

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	rd = store_reader_get(f.st);
	/* DCQCN is set on hosts, ECN on switches */
	assert_int_equal(change_set_init(&cs, CHANGE_DCQCN, true, params), 0);
	assert_int_equal(changes_select(rd, &cs, &any, &e), -EINVAL);
	assert_string_equal(e.code, "SCHEMA_VIOLATION");
	change_set_fini(&cs);
	/* a selection that matches nothing */
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	any.node = "spine*";
	assert_int_equal(changes_select(rd, &cs, &any, &e), -ENOENT);
	assert_string_equal(e.code, "NO_TARGETS");
	change_set_fini(&cs);
	/* hosts: none reported a DCQCN configuration */
	assert_int_equal(change_set_init(&cs, CHANGE_DCQCN, false, params), 0);
	any.node = NULL;
	any.all = true;
	assert_int_equal(changes_select(rd, &cs, &any, &e), -ENOENT);
	change_set_fini(&cs);
	any.all = false;

	/* an empty selection (every queue of every switch port) is refused unless it says all */
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	assert_int_equal(changes_select(rd, &cs, &any, &e), -EINVAL);
	assert_string_equal(e.code, "EMPTY_SELECTION");
	assert_string_equal(e.where, "/select");
	assert_int_equal(cs.n, 0);
	change_set_fini(&cs);
	any.all = true;
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	assert_int_equal(changes_select(rd, &cs, &any, &e), 0);
	assert_int_equal(cs.n, 8); /* 4 ports, queues 0 and 3 */
	change_set_fini(&cs);
	/* and more targets than the selection's limit are refused, saying how many */
	any.max_targets = 5;
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	assert_int_equal(changes_select(rd, &cs, &any, &e), -ERANGE);
	assert_string_equal(e.code, "TOO_MANY_TARGETS");
	assert_int_equal(cs.matched, 8);
	assert_int_equal(cs.n, 5);
	assert_non_null(strstr(e.msg, "matches 8 ecn objects, more than the limit of 5"));
	change_set_fini(&cs);
	any = (struct change_select){ .node = "leaf*", .port = "h[0-2]", .queue = -2, .max_targets = 6 };
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	assert_int_equal(changes_select(rd, &cs, &any, &e), 0);
	assert_int_equal(cs.n, 6);
	change_set_fini(&cs);

	/* one object by name */
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_ECN, "leaf0", NULL, "h2", 3, &entries, &e), 0);
	assert_int_equal(json_array_size(entries), 1);
	json_decref(entries);
	assert_int_equal(changes_lookup(rd, "host", CHANGE_ECN, "leaf0", NULL, "h2", 3, &entries, &e), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_HOST");
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_ECN, "leaf9", NULL, "h2", 3, &entries, &e), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_SWITCH");
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_ECN, "leaf0", NULL, "h9", 3, &entries, &e), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_PORT");
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_ECN, "leaf0", NULL, "h2", 5, &entries, &e), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_QUEUE");
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_DCQCN, "leaf0", NULL, NULL, -2, &entries, &e), -ENOENT);
	assert_string_equal(e.code, "NO_CONFIGURATION");
	assert_null(entries);

	/* one object, one bad value: its own error, not a summary */
	assert_int_equal(changes_lookup(rd, "switch", CHANGE_ECN, "leaf0", NULL, "h2", 3, &entries, &e), 0);
	json_decref(params);
	params = json_pack("{s:f}", "pmax", 1.5);
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	assert_int_equal(change_set_add(rd, &cs, "leaf0", json_array_get(entries, 0), &e), 0);
	assert_int_equal(change_set_check(&cs, false, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_VALUE");
	assert_string_equal(e.where, "/pmax");
	change_set_fini(&cs);
	json_decref(entries);
	json_decref(params);
	store_reader_put(f.st, rd);
	fx_close(&f);
}

/* One change of kind to leaf0's port (ECN: its queue 3), made as a PUT of the object makes it,
 * deadline after now (negative: already past); the check's answer (e: its error). */
static int change_port(struct fixture *f, enum change_kind kind, const char *port, const char *params_text,
		       int64_t deadline, struct rf_err *e)
{
	json_t *params = json_loads(params_text, 0, NULL), *entries = NULL;
	struct store_reader *rd = store_reader_get(f->st);
	struct change_set cs;
	int64_t batch;
	int r;

	assert_non_null(params);
	assert_int_equal(changes_lookup(rd, "switch", kind, "leaf0", NULL, port, kind == CHANGE_ECN ? 3 : -2,
					&entries, e), 0);
	assert_int_equal(change_set_init(&cs, kind, true, params), 0);
	assert_int_equal(change_set_add(rd, &cs, "leaf0", json_array_get(entries, 0), e), 0);
	store_reader_put(f->st, rd);
	if ((r = change_set_check(&cs, false, e)) == 0)
		assert_int_equal(change_set_commit(f->st, &cs, "t", NULL, tu_now_ns() + deadline, &batch, e), 0);
	change_set_fini(&cs);
	json_decref(entries);
	json_decref(params);
	return r;
}

#define MIN (60 * NSEC_PER_SEC)

/* The ids of commands, "c1 c4". */
static const char *ids_of(json_t *cmds)
{
	static char buf[200];
	size_t i, n = 0;
	json_t *c;

	buf[0] = '\0';
	json_array_foreach(cmds, i, c)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? " " : "",
				      json_string_value(json_object_get(c, "id")));
	return buf;
}

/* The agent's outcomes of commands: applied, but the one named failed (or none). */
static json_t *outcomes(json_t *cmds, const char *failed)
{
	json_t *results = json_array(), *c;
	size_t i;

	json_array_foreach(cmds, i, c) {
		const char *id = json_string_value(json_object_get(c, "id"));

		json_array_append_new(results, failed && !strcmp(id, failed)
						       ? json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", "failed",
								   "error", "code", "EIO", "message", "refused")
						       : json_pack("{s:s,s:s}", "id", id, "outcome", "applied"));
	}
	return results;
}

/* A change is validated against what its object will hold when it gets there: the values
 * reported with the changes still out on it laid over them (its agent applies those first),
 * and the same of the port's PFC for ECN and of the queues' ECN for PFC.  leaf0 reports Kmin
 * 100 KB, Kmax 400 KB and an XOFF threshold of 1 MB on every port throughout. */
static void test_validated_against_changes_still_out(void **state)
{
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *cmds, *next;

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	/* c1: Kmin up to 300 KB; then Kmax 250 KB: fine against the Kmin reported, not against the
	 * one on its way */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmin_bytes\": 300000}", MIN, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 250000}", MIN, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
	assert_non_null(strstr(e.msg, "Kmin (300000 bytes) must be below Kmax (250000 bytes)"));
	assert_non_null(strstr(e.msg, "counted with the 1 change still on the way to it or its port; the newest: "
				      "change 1)"));
	/* c2: Kmax up to 900 KB; c3: Kmin 600 KB, refused against the Kmax reported, not now: it
	 * waits for them (c2 and c1 are fine as reported too, and wait for nothing) */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 900000}", MIN, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmin_bytes\": 600000}", MIN, &e), 0);
	assert_int_equal(count(&f, "after_ids IS NULL"), 2);
	assert_int_equal(count(&f, "id = 3 AND after_ids = '[1,2]'"), 1);
	/* the port's PFC against its queue's ECN on the way: XOFF 800 KB under Kmax 900 KB */
	assert_int_equal(change_port(&f, CHANGE_PFC, "h0", "{\"xoff_bytes\": 800000}", MIN, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
	assert_string_equal(e.where, "/xoff_bytes");
	/* and the queue's ECN against its port's PFC on the way (h1: Kmax 400 KB reported): c4
	 * XOFF 800 KB; c5 Kmax 700 KB, fine either way */
	assert_int_equal(change_port(&f, CHANGE_PFC, "h1", "{\"xoff_bytes\": 800000}", MIN, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h1", "{\"kmax_bytes\": 900000}", MIN, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
	assert_non_null(strstr(e.msg, "PFC XOFF threshold (800000 bytes)"));
	assert_int_equal(change_port(&f, CHANGE_ECN, "h1", "{\"kmax_bytes\": 700000}", MIN, &e), 0);
	/* a change past its deadline will not be sent: it does not count (h2: c6, c7) */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h2", "{\"kmin_bytes\": 300000}", -NSEC_PER_SEC, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h2", "{\"kmax_bytes\": 250000}", MIN, &e), 0);
	/* a change goes only once those it counted are applied: c3 waits */
	cmds = switch_report(&f, "leaf0", NULL);
	assert_string_equal(ids_of(cmds), "c1 c2 c4 c5 c7");
	/* sent, they still count, and past their deadline too, until their outcome (the agent may
	 * have applied one by its own clock): c1 here */
	store_flush(f.st);
	assert_int_equal(store_exec(store_writer_db(f.st), "UPDATE changes SET deadline_ns = 1 WHERE id = 1", NULL), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 250000}", MIN, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "counted with the 3 changes still on the way"));
	/* c8: a deadlock break (priority 3 lossy) waits for none of them, as none decides it */
	assert_int_equal(change_port(&f, CHANGE_PFC, "h0", "{\"enable\": 0}", MIN, &e), 0);
	assert_int_equal(count(&f, "id = 8 AND after_ids IS NULL"), 1);
	/* while it is on its way the queue is lossless still for ECN: Kmax not above XOFF (1 MB) */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 2000000}", MIN, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "PFC XOFF threshold"));
	/* h3: c9 Kmax 900 KB, c10 Kmin 600 KB counting it; c9 times out unsent: c10 fails */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h3", "{\"kmax_bytes\": 900000}", MIN, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h3", "{\"kmin_bytes\": 600000}", MIN, &e), 0);
	/* c11: h1's Kmin 600 KB, valid only with c5 (and c4, its port's, on the way): its own
	 * deadline passes first */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h1", "{\"kmin_bytes\": 600000}", MIN, &e), 0);
	store_flush(f.st);
	assert_int_equal(store_exec(store_writer_db(f.st), "UPDATE changes SET deadline_ns = 1 WHERE id IN (9, 11)",
				    NULL), 0);
	/* and c2 fails on the device: c3, checked counting it, fails without being sent */
	next = switch_report(&f, "leaf0", outcomes(cmds, "c2"));
	json_decref(cmds);
	assert_int_equal(count(&f, "id = 3 AND state = 'failed' AND error LIKE '%DEPENDS_ON_FAILED%change 2,%'"), 1);
	assert_int_equal(count(&f, "id = 9 AND state = 'timed_out'"), 1);
	assert_int_equal(count(&f, "id = 10 AND state = 'failed' AND error LIKE '%DEPENDS_ON_FAILED%change 9,%'"), 1);
	assert_int_equal(count(&f, "id = 11 AND state = 'timed_out' AND "
				   "error LIKE '%DEPENDS_ON_PENDING%never sent: changes 5, 4, which%'"), 1);
	assert_string_equal(ids_of(next), "c8");
	json_decref(switch_report(&f, "leaf0", outcomes(next, NULL)));
	json_decref(next);
	/* applied (and read back), the report is what counts: leaf0 reports Kmin 100 KB still */
	assert_int_equal(count(&f, "state IN ('pending', 'sent') AND port != 'h2'"), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 250000}", MIN, &e), 0);
	fx_close(&f);
}

/* A set validated (its targets read) before another change to one of its ports was stored:
 * that target is checked again as the set is stored, counting it (refused there if it breaks
 * with it); with refuse_changed a change to the port's PFC refuses the set; sets on other
 * ports are not checked again. */
static void test_changed_meanwhile(void **state)
{
	const char *ports[] = { "h0", "h0", "h1", "h0", "h0", "h0", "h2", "h2", "h3", "h3", "h3" };
	const enum change_kind kinds[] = { CHANGE_ECN, CHANGE_PFC, CHANGE_ECN, CHANGE_ECN, CHANGE_ECN, CHANGE_ECN,
					   CHANGE_PFC, CHANGE_PFC, CHANGE_PFC, CHANGE_ECN, CHANGE_PFC };
	const int queues[] = { 3, -2, 3, 3, 0, 3, -2, -2, -2, 0, -2 };
	const char *params[] = { "{\"kmax_bytes\": 900000}", "{\"xoff_bytes\": 800000}", "{\"kmin_bytes\": 50000}",
				 "{\"kmin_bytes\": 50000}",  "{\"kmin_bytes\": 50000}", "{\"kmin_bytes\": 60000}",
				 "{\"enable\": 8}",	     "{\"xoff_bytes\": 900000}", "{\"enable\": 0}",
				 "{\"kmin_bytes\": 50000}",  "{\"enable\": 24}" };
	const int order[] = { 0, 1, 2, 3, 4, 5, 7, 6, 9, 10, 8 };
	const int want[] = { 0, -EINVAL, 0, 0, 0, 0, 0, -EALREADY, 0, 0, -EALREADY };
	struct change_set cs[11];
	struct rf_err e = { 0 };
	struct fixture f;
	int64_t batch;

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	/* Kmax 900 KB and XOFF 800 KB on h0, each fine against the other as reported (1 MB, 400
	 * KB), not together; h1's and h0's Kmin, read after, that of h0's queue 0, h0's again by
	 * one refusing changes meanwhile (the detector), two changes of h2's PFC, and h3's PFC by
	 * the detector with an ECN and a PFC change to h3 stored after it was read */
	for (int i = 0; i < 11; i++) {
		json_t *p = json_loads(params[i], 0, NULL), *entries = NULL;
		struct store_reader *rd = store_reader_get(f.st);

		assert_int_equal(changes_lookup(rd, "switch", kinds[i], "leaf0", NULL, ports[i], queues[i], &entries, &e),
				 0);
		assert_int_equal(change_set_init(&cs[i], kinds[i], true, p), 0);
		cs[i].refuse_changed = i == 5 || i == 6 || i == 8;
		assert_int_equal(change_set_add(rd, &cs[i], "leaf0", json_array_get(entries, 0), &e), 0);
		assert_int_equal(change_set_check(&cs[i], false, &e), 0);
		store_reader_put(f.st, rd);
		json_decref(entries);
		json_decref(p);
	}
	for (int k = 0; k < 11; k++) {
		int i = order[k];

		memset(&e, 0, sizeof(e));
		assert_int_equal(change_set_commit(f.st, &cs[i], i ? "t" : "ops", NULL, tu_now_ns() + 60 * NSEC_PER_SEC,
						   &batch, &e), want[k]);
		if (i == 1) {
			/* XOFF 800 KB checked again with Kmax 900 KB on its way: refused, said so */
			assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
			assert_string_equal(e.where, "/xoff_bytes");
			assert_non_null(strstr(e.msg, "1 of 1 targets reject the change; nothing was changed. First: "));
			assert_non_null(strstr(e.msg, "; checked again as it was stored, counting change 1 (by ops), stored meanwhile"));
			assert_int_equal(json_array_size(cs[1].rejections), 1);
		}
		if (i == 6 || i == 8) {
			assert_string_equal(e.code, "CHANGED_MEANWHILE");
			assert_non_null(strstr(e.msg, i == 6 ? "(by t) to leaf0 port h2 was stored while this one was made"
							     : "change 8 (by t) to leaf0 port h3 was stored"));
		}
	}
	/* h0's Kmin, checked again, fine with Kmax 900 KB on its way too: stored, waiting for none;
	 * refuse_changed does not refuse an ECN change (the detector's mask is PFC) */
	assert_int_equal(count(&f, "port = 'h0' AND kind = 'ecn' AND queue = 3 AND after_ids IS NULL"), 3);
	assert_int_equal(count(&f, "kind = 'pfc'"), 2);
	for (int i = 0; i < 11; i++)
		change_set_fini(&cs[i]);
	assert_int_equal(count(&f, "1"), 8);
	fx_close(&f);
}

/* More targets changed meanwhile than the writer reads again (CHANGES_RECHECK_MAX): they are
 * read again on a reader and the set sent again; refused whole if they reject it then. */
static void test_changed_meanwhile_many(void **state)
{
	struct change_select sel = { .node = "leaf*", .queue = -2 };
	const char *params[] = { "{\"kmax_bytes\": 250000}", "{\"kmin_bytes\": 300000}", "{\"kmax_bytes\": 350000}",
				 "{\"kmin_bytes\": 120000}" };
	struct change_set cs[4];
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct fixture f;
	int64_t batch;

	(void)state;
	fx_open(&f);
	for (int i = 0; i < 10; i++) { /* 10 switches of 4 ports of 2 ECN queues: 80 targets */
		char sw[16];

		snprintf(sw, sizeof(sw), "leaf%d", i);
		json_decref(switch_report(&f, sw, NULL));
	}
	rd = store_reader_get(f.st);
	for (int i = 0; i < 4; i++) {
		json_t *p = json_loads(params[i], 0, NULL);

		assert_int_equal(change_set_init(&cs[i], CHANGE_ECN, true, p), 0);
		assert_int_equal(changes_select(rd, &cs[i], &sel, &e), 0);
		assert_int_equal(cs[i].n, 80);
		assert_int_equal(change_set_check(&cs[i], true, &e), 0);
		json_decref(p);
	}
	store_reader_put(f.st, rd);
	/* Kmin 300 KB stored after Kmax 250 KB was checked: every target rejects it */
	assert_int_equal(change_set_commit(f.st, &cs[1], "ops", NULL, tu_now_ns() + MIN, &batch, &e), 0);
	assert_int_equal(change_set_commit(f.st, &cs[0], "t", NULL, tu_now_ns() + MIN, &batch, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_THRESHOLD_ORDER");
	assert_non_null(strstr(e.msg, "80 of 80 targets reject the change"));
	assert_int_equal(json_array_size(cs[0].rejections), CHANGES_REJECTIONS_MAX);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(cs[0].rejections, 0), "detail")),
			       "; checked again as it was stored, counting change "));
	assert_int_equal(count(&f, "params LIKE '%250000%'"), 0);
	/* Kmin 120 KB stored after Kmax 350 KB was checked: fine with it, stored */
	assert_int_equal(change_set_commit(f.st, &cs[3], "ops", NULL, tu_now_ns() + MIN, &batch, &e), 0);
	assert_int_equal(change_set_commit(f.st, &cs[2], "t", NULL, tu_now_ns() + MIN, &batch, &e), 0);
	assert_int_equal(count(&f, "params LIKE '%350000%'"), 80);
	for (int i = 0; i < 4; i++)
		change_set_fini(&cs[i]);
	fx_close(&f);
}

/* A change whose agent went silent past its deadline (and the grace) is timed out by the pass. */
static void test_sweep(void **state)
{
	struct change_select sel = { .node = "leaf0", .port = "h0", .queue = 0 };
	struct change_set cs;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *params = json_pack("{s:b}", "enabled", 0);
	int64_t batch;

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
	rd = store_reader_get(f.st);
	assert_int_equal(changes_select(rd, &cs, &sel, &e), 0);
	store_reader_put(f.st, rd);
	/* its deadline and the grace are over already */
	assert_int_equal(change_set_commit(f.st, &cs, "t", NULL, tu_now_ns() - CHANGES_GRACE_NS - NSEC_PER_SEC,
					   &batch, &e), 0);
	change_set_fini(&cs);
	assert_int_equal(count(&f, "state = 'pending'"), 1);
	/* and one held for others, never sent: DEPENDS_ON_PENDING, as at a report */
	store_flush(f.st);
	assert_int_equal(store_exec(store_writer_db(f.st),
				    "INSERT INTO changes(batch, created_ns, actor, agent_id, kind, device, port, queue, "
				    "params, state, deadline_ns, updated_ns, after_ids) SELECT batch, created_ns, actor, "
				    "agent_id, kind, device, port, queue, params, state, deadline_ns, updated_ns, '[1]' "
				    "FROM changes WHERE id = 1", NULL), 0);
	assert_int_equal(changes_sweep(f.st, tu_now_ns()), 0);
	store_flush(f.st);
	assert_int_equal(count(&f, "id = 1 AND state = 'timed_out' AND error LIKE '%NO_ANSWER%'"), 1);
	assert_int_equal(count(&f, "id = 2 AND state = 'timed_out' AND error LIKE '%DEPENDS_ON_PENDING%never sent: "
				   "changes 1, which%'"), 1);
	json_decref(params);
	fx_close(&f);
}

/* An answer carries at most 64 commands: the oldest open changes, sent again until their
 * outcome; only those sent are marked sent, the rest go once outcomes make room. */
static void test_sixty_four_per_answer(void **state)
{
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *cmds, *next;
	char params[64];

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	for (int i = 1; i <= 70; i++) {
		snprintf(params, sizeof(params), "{\"kmin_bytes\": %d}", 100000 + 1000 * i);
		assert_int_equal(change_port(&f, CHANGE_ECN, "h0", params, MIN, &e), 0);
	}
	cmds = switch_report(&f, "leaf0", NULL);
	assert_int_equal(json_array_size(cmds), 64);
	assert_string_equal(json_string_value(json_object_get(json_array_get(cmds, 63), "id")), "c64");
	assert_int_equal(count(&f, "state = 'sent'"), 64);
	assert_int_equal(count(&f, "state = 'pending' AND id > 64"), 6);
	/* no outcome yet: the same 64 again */
	next = switch_report(&f, "leaf0", NULL);
	assert_int_equal(json_array_size(next), 64);
	json_decref(next);
	/* their outcomes: the other 6 go */
	next = switch_report(&f, "leaf0", outcomes(cmds, NULL));
	json_decref(cmds);
	assert_string_equal(ids_of(next), "c65 c66 c67 c68 c69 c70");
	assert_int_equal(count(&f, "state = 'applied'"), 64);
	assert_int_equal(count(&f, "state = 'sent'"), 6);
	json_decref(next);
	fx_close(&f);
}

/* A replay (a report leaf0 spooled before its agent took another id) gets no commands: its
 * agent would not apply them, and they would time out in doubt. */
static void test_replay_gets_no_commands(void **state)
{
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *cmds;

	(void)state;
	fx_open(&f);
	json_decref(switch_report(&f, "leaf0", NULL));
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmin_bytes\": 50000}", MIN, &e), 0);
	cmds = switch_report_as(&f, "leaf0", tu_now_ns(), NULL, true);
	assert_int_equal(json_array_size(cmds), 0);
	json_decref(cmds);
	assert_int_equal(count(&f, "state = 'pending'"), 1);
	cmds = switch_report(&f, "leaf0", NULL);
	assert_string_equal(ids_of(cmds), "c1");
	json_decref(cmds);
	fx_close(&f);
}

/* A change sent and timed out by the pass while its agent was silent may have been applied:
 * it counts in the checks of other changes to its object until a report the agent made after
 * its deadline, which has its outcome if it was (leaf0 reports Kmin 100 KB, Kmax 400 KB). */
/* c1: leaf0's h0's Kmin down to 50 KB, c2: h1's; sent (their commands, returned), unanswered,
 * timed out in doubt at the sweep (their deadline moved back to `deadline`). */
static json_t *two_in_doubt(struct fixture *f, int64_t deadline)
{
	struct rf_err e = { 0 };
	char sql[200];
	json_t *cmds;

	json_decref(switch_report(f, "leaf0", NULL));
	assert_int_equal(change_port(f, CHANGE_ECN, "h0", "{\"kmin_bytes\": 50000}", MIN, &e), 0);
	assert_int_equal(change_port(f, CHANGE_ECN, "h1", "{\"kmin_bytes\": 50000}", MIN, &e), 0);
	cmds = switch_report(f, "leaf0", NULL);
	assert_string_equal(ids_of(cmds), "c1 c2");
	store_flush(f->st);
	snprintf(sql, sizeof(sql), "UPDATE changes SET deadline_ns = %" PRId64, deadline);
	assert_int_equal(store_exec(store_writer_db(f->st), sql, NULL), 0);
	assert_int_equal(changes_sweep(f->st, tu_now_ns()), 0);
	store_flush(f->st);
	return cmds;
}

static void test_timed_out_in_doubt(void **state)
{
	int64_t deadline = tu_now_ns() - CHANGES_GRACE_NS - NSEC_PER_SEC;
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *cmds;

	(void)state;
	fx_open(&f);
	cmds = two_in_doubt(&f, deadline);
	assert_int_equal(count(&f, "state = 'timed_out' AND in_doubt = 1 AND error LIKE '%NO_ANSWER%may have applied%'"),
			 2);
	/* counted: Kmax 40 KB is refused against it, Kmax 80 KB (c3, c4) passes only with it and
	 * waits for it */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 40000}", MIN, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "counted with the 1 change still on the way to it or its port; the newest: "
				      "change 1)"));
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 80000}", MIN, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h1", "{\"kmax_bytes\": 80000}", MIN, &e), 0);
	assert_int_equal(count(&f, "id = 3 AND after_ids = '[1]'"), 1);
	assert_int_equal(count(&f, "id = 4 AND after_ids = '[2]'"), 1);
	/* a report made before the deadline (late from the agent's queue) settles nothing: neither
	 * goes, neither fails */
	json_decref(cmds);
	cmds = switch_report_at(&f, "leaf0", deadline - NSEC_PER_SEC, NULL);
	assert_string_equal(ids_of(cmds), "");
	json_decref(cmds);
	assert_int_equal(count(&f, "in_doubt = 1"), 2);
	assert_int_equal(count(&f, "state = 'pending'"), 2);
	/* one made after it: c2 was applied (its outcome, late), c1 not (none): c4 goes, c3 fails */
	cmds = switch_report(&f, "leaf0", json_pack("[{s:s,s:s}]", "id", "c2", "outcome", "applied"));
	assert_string_equal(ids_of(cmds), "c4");
	assert_int_equal(count(&f, "in_doubt IS NOT NULL"), 0);
	assert_int_equal(count(&f, "id = 2 AND state = 'applied' AND error IS NULL"), 1);
	assert_int_equal(count(&f, "id = 1 AND state = 'timed_out' AND error LIKE '%nor in a report it made after "
				   "it: not applied%'"),
			 1);
	assert_int_equal(count(&f, "id = 3 AND state = 'failed' AND error LIKE '%DEPENDS_ON_FAILED%change 1,%'"), 1);
	/* settled, the report is what counts: Kmax 40 KB is refused against Kmin 100 KB alone */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 40000}", MIN, &e), -EINVAL);
	assert_null(strstr(e.msg, "counted with"));
	/* timed out at a report made after the deadline: settled at once */
	json_decref(switch_report(&f, "leaf0", outcomes(cmds, NULL)));
	json_decref(cmds);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h2", "{\"kmin_bytes\": 50000}", MIN, &e), 0);
	json_decref(switch_report(&f, "leaf0", NULL));
	store_flush(f.st);
	assert_int_equal(store_exec(store_writer_db(f.st), "UPDATE changes SET deadline_ns = 1 WHERE id = 5", NULL), 0);
	json_decref(switch_report(&f, "leaf0", NULL));
	assert_int_equal(count(&f, "id = 5 AND state = 'timed_out' AND in_doubt IS NULL AND error LIKE '%not applied%'"),
			 1);
	/* c6 sent, the agent restarts (its outcomes go with it): its new boot's report cannot say
	 * it was not applied, only that its settings, as reported, say what it holds */
	assert_int_equal(change_port(&f, CHANGE_ECN, "h3", "{\"kmin_bytes\": 50000}", MIN, &e), 0);
	cmds = switch_report(&f, "leaf0", NULL);
	assert_string_equal(ids_of(cmds), "c6");
	json_decref(cmds);
	store_flush(f.st);
	assert_int_equal(store_exec(store_writer_db(f.st), "UPDATE changes SET deadline_ns = 1 WHERE id = 6", NULL), 0);
	assert_int_equal(changes_sweep(f.st, tu_now_ns()), 0);
	store_flush(f.st);
	assert_int_equal(count(&f, "id = 6 AND in_doubt = 1 AND sent_boot = 'b1'"), 1);
	boot = "b2";
	json_decref(switch_report(&f, "leaf0", NULL));
	boot = "b1";
	assert_int_equal(count(&f, "id = 6 AND in_doubt IS NULL AND error LIKE '%restarted before it reported%'"), 1);
	fx_close(&f);
}

/* Changes in doubt whose agent never reports again, settled by an operator, applied or not,
 * with who, when and why; those that counted them fail now, not at a report that never comes
 * (nor are they sent on the operator's word when the agent comes back holding something else);
 * a change not in doubt, or unknown, is refused and nothing changes. */
static void test_settled_by_an_operator(void **state)
{
	int64_t deadline = tu_now_ns() - CHANGES_GRACE_NS - NSEC_PER_SEC;
	struct store_reader *rd;
	struct rf_err e = { 0 };
	struct fixture f;
	json_t *cmds, *c = NULL;

	(void)state;
	fx_open(&f);
	/* c1 and c2 in doubt; c3 and c4 wait for them (Kmax 80 KB passes only with Kmin 50 KB) */
	json_decref(two_in_doubt(&f, deadline));
	assert_int_equal(change_port(&f, CHANGE_ECN, "h0", "{\"kmax_bytes\": 80000}", MIN, &e), 0);
	assert_int_equal(change_port(&f, CHANGE_ECN, "h1", "{\"kmax_bytes\": 80000}", MIN, &e), 0);
	assert_int_equal(count(&f, "in_doubt = 1"), 2);
	/* refused: not in doubt (c3 pending), unknown; nothing changed */
	assert_int_equal(changes_settle(f.st, 3, true, "ops", "checked", &e), -EALREADY);
	assert_string_equal(e.code, "NOT_IN_DOUBT");
	assert_non_null(strstr(e.msg, "change 3 is not in doubt (it is pending)"));
	assert_int_equal(changes_settle(f.st, 99, true, "ops", "checked", &e), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_CHANGE");
	assert_int_equal(count(&f, "in_doubt = 1"), 2);
	/* c1 applied, by ops who looked; c2 not: c3 and c4, which counted them, fail at once either
	 * way (an operator's word is no read-back: they go again checked against what the agent
	 * reports); one checked counting c1 before, stored after, is checked again without it */
	{
		json_t *params = json_pack("{s:i}", "kmax_bytes", 90000), *entries = NULL;
		struct store_reader *r0 = store_reader_get(f.st);
		struct change_set cs;
		int64_t batch;

		assert_int_equal(changes_lookup(r0, "switch", CHANGE_ECN, "leaf0", NULL, "h0", 3, &entries, &e), 0);
		assert_int_equal(change_set_init(&cs, CHANGE_ECN, true, params), 0);
		assert_int_equal(change_set_add(r0, &cs, "leaf0", json_array_get(entries, 0), &e), 0);
		store_reader_put(f.st, r0);
		assert_int_equal(change_set_check(&cs, false, &e), 0); /* with c1 (Kmin 50 KB) */
		assert_int_equal(changes_settle(f.st, 1, true, "ops", "read Kmin 50 KB on the console", &e), 0);
		assert_int_equal(change_set_commit(f.st, &cs, "t", NULL, tu_now_ns() + MIN, &batch, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "change 1, which it counted, was settled meanwhile"));
		change_set_fini(&cs);
		json_decref(entries);
		json_decref(params);
	}
	assert_int_equal(changes_settle(f.st, 2, false, "noc", NULL, &e), 0);
	assert_int_equal(count(&f, "id = 1 AND state = 'applied' AND error IS NULL AND in_doubt IS NULL"), 1);
	assert_int_equal(count(&f, "id = 2 AND state = 'timed_out' AND in_doubt IS NULL AND "
				   "error LIKE '%settled by noc: not applied%'"),
			 1);
	assert_int_equal(count(&f, "id = 3 AND state = 'failed' AND error LIKE '%DEPENDS_ON_FAILED%change 1,%settled by "
				   "an operator%'"),
			 1);
	assert_int_equal(count(&f, "id = 4 AND state = 'failed' AND error LIKE '%DEPENDS_ON_FAILED%change 2,%'"), 1);
	rd = store_reader_get(f.st);
	assert_int_equal(changes_get(rd, 1, &c, &e), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "settled"), "by")), "ops");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "settled"), "reason")),
			    "read Kmin 50 KB on the console");
	assert_true(json_is_true(json_object_get(json_object_get(c, "settled"), "applied")));
	assert_true(json_is_string(json_object_get(json_object_get(c, "settled"), "at")));
	assert_true(json_is_false(json_object_get(c, "in_doubt")));
	json_decref(c);
	assert_int_equal(changes_get(rd, 2, &c, &e), 0);
	assert_true(json_is_null(json_object_get(json_object_get(c, "settled"), "reason")));
	assert_true(json_is_false(json_object_get(json_object_get(c, "settled"), "applied")));
	json_decref(c);
	assert_int_equal(changes_get(rd, 3, &c, &e), 0);
	assert_null(json_object_get(c, "settled"));
	json_decref(c);
	store_reader_put(f.st, rd);
	/* settled once: not again */
	assert_int_equal(changes_settle(f.st, 1, false, "ops", "again", &e), -EALREADY);
	/* the agent is back after all: nothing is sent; its late word on c2 does not undo the
	 * operator's (logged) */
	cmds = switch_report(&f, "leaf0", json_pack("[{s:s,s:s}]", "id", "c2", "outcome", "applied"));
	assert_string_equal(ids_of(cmds), "");
	json_decref(cmds);
	assert_int_equal(count(&f, "id = 2 AND state = 'timed_out' AND settled_applied = 0"), 1);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_validate_commit),
		cmocka_unit_test(test_select_errors),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_validated_against_changes_still_out),
		cmocka_unit_test(test_changed_meanwhile),
		cmocka_unit_test(test_changed_meanwhile_many),
		cmocka_unit_test(test_timed_out_in_doubt),
		cmocka_unit_test(test_settled_by_an_operator),
		cmocka_unit_test(test_sixty_four_per_answer),
		cmocka_unit_test(test_replay_gets_no_commands),
	};

	return cmocka_run_group_tests_name("changes", tests, NULL, NULL);
}
