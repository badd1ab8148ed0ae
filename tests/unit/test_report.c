/* Unit tests of report validation: every document in tests/data/reports/good is accepted,
 * every one in bad/ is rejected with the code and JSON pointer that expectations.tsv names.
 * Run from the top of the tree (make check does). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/idguard.h"
#include "daemon/report.h"
#include "tests/unit/unit.h"

static struct reg *reg;

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int setup(void **state)
{
	struct rf_err e;

	(void)state;
	return reg_load_builtin(&reg, &e);
}

static int teardown(void **state)
{
	(void)state;
	reg_free(reg);
	return 0;
}

static void test_good(void **state)
{
	glob_t g;

	(void)state;
	assert_int_equal(glob("tests/data/reports/good/*.json", 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 4);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct rf_err e = { 0 };
		struct report *r = NULL;
		size_t len;
		char *text = slurp(g.gl_pathv[i], &len);

		if (report_parse(text, len, reg, &r, &e) < 0)
			fail_msg("%s rejected: %s: %s", g.gl_pathv[i], e.where, e.msg);
		report_free(r);
		free(text);
	}
	globfree(&g);
}

static void test_bad(void **state)
{
	FILE *f = fopen("tests/data/reports/bad/expectations.tsv", "re");
	char line[512];
	int n = 0;

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char file[128], code[64], pointer[160], verdict[32], path[300];
		struct rf_err e = { 0 };
		struct report *r = NULL;
		size_t len;
		char *text;

		if (line[0] == '#' ||
		    sscanf(line, "%127[^\t]\t%63[^\t]\t%159[^\t]\t%31s", file, code, pointer, verdict) != 4)
			continue;
		snprintf(path, sizeof(path), "tests/data/reports/bad/%s", file);
		text = slurp(path, &len);
		if (report_parse(text, len, reg, &r, &e) == 0)
			fail_msg("%s was accepted", file);
		if (strcmp(e.code, code) != 0)
			fail_msg("%s: code %s, expected %s (%s)", file, e.code, code, e.msg);
		if (strcmp(pointer, "-") != 0 && strcmp(e.where, pointer) != 0)
			fail_msg("%s: pointer %s, expected %s", file, e.where, pointer);
		assert_true(e.msg[0] != '\0');
		free(text);
		n++;
	}
	fclose(f);
	assert_true(n >= 20);
}

static void test_mapping(void **state)
{
	size_t len;
	char *text = slurp("tests/data/reports/good/absent-errors-spool.json", &len);
	struct rf_err e = { 0 };
	struct report *r = NULL;
	const struct reg_counter *cnp = reg_find(reg, "np_cnp_sent");
	bool saw_cnp = false;

	(void)state;
	assert_int_equal(report_parse(text, len, reg, &r, &e), 0);
	assert_string_equal(r->agent_id, "h7");
	assert_int_equal(r->seq, 42);
	assert_int_equal(r->spool_dropped, 3);
	assert_int_equal(r->spool_queued, 10);
	assert_non_null(r->host_boot_id);
	assert_int_equal(json_array_size(r->absent), 2);
	assert_non_null(r->errors);
	/* "not_in_registry" and the unknown source's "x" are counted, not stored */
	assert_int_equal(r->unknown_values, 2);
	assert_int_equal(r->nvalues, 3);
	for (uint32_t i = 0; i < r->nvalues; i++) {
		if (r->values[i].counter == cnp->id) {
			saw_cnp = true;
			assert_int_equal(r->values[i].raw, 9223372036854775807ULL);
			assert_int_equal(r->values[i].width, 64);
		}
		if (r->values[i].counter == reg_find(reg, "roce_tx_bytes")->id)
			assert_int_equal(r->values[i].scale, 4);
	}
	assert_true(saw_cnp);
	report_free(r);
	free(text);
}

static void test_rank(void **state)
{
	/* a port offering port_xmit_data (rank 0) and rdma_tx_bytes (rank 1): the PMA counter wins */
	const char *doc =
		"{\"schema\":1,\"agent\":{\"id\":\"h\",\"role\":\"host\",\"boot_id\":\"b\",\"version\":\"v\","
		"\"backend\":\"linux\"},\"seq\":1,\"time_ns\":1764514195000000000,\"interval_ms\":1000,"
		"\"inventory\":{\"devices\":[{\"name\":\"mlx5_0\",\"kind\":\"rdma\",\"ports\":[{\"port\":"
		"\"1\",\"state\":\"up\"}]}]},\"samples\":[{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":"
		"\"hw_counters\",\"driver\":\"mlx5\",\"t_ns\":1764514195000000000,\"values\":{"
		"\"rdma_tx_bytes\":800}},{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":\"ib_counters\","
		"\"t_ns\":1764514195000000000,\"values\":{\"port_xmit_data\":200}}]}";
	struct rf_err e = { 0 };
	struct report *r = NULL;

	(void)state;
	assert_int_equal(report_parse(doc, strlen(doc), reg, &r, &e), 0);
	assert_int_equal(r->nvalues, 2);
	assert_true(r->values[0].skip);	 /* rdma_tx_bytes */
	assert_false(r->values[1].skip); /* port_xmit_data */
	report_free(r);
}

/* A host report with one value: name = value in group (driver mlx5). */
static int parse_one(const char *group, const char *name, const char *value, struct rf_err *e)
{
	char doc[1024];
	struct report *r = NULL;
	int x;

	snprintf(doc, sizeof(doc),
		 "{\"schema\":1,\"agent\":{\"id\":\"h\",\"role\":\"host\",\"boot_id\":\"b\",\"version\":\"v\","
		 "\"backend\":\"linux\"},\"seq\":1,\"time_ns\":1764514195000000000,\"interval_ms\":1000,"
		 "\"inventory\":{\"devices\":[{\"name\":\"mlx5_0\",\"kind\":\"rdma\",\"ports\":[{\"port\":"
		 "\"1\",\"state\":\"up\"}]}]},\"samples\":[{\"device\":\"mlx5_0\",\"port\":\"1\",\"source\":"
		 "\"%s\",\"driver\":\"mlx5\",\"t_ns\":1764514195000000000,\"values\":{\"%s\":%s}}]}",
		 group, name, value);
	x = report_parse(doc, strlen(doc), reg, &r, e);
	report_free(r);
	return x;
}

static void test_widths(void **state)
{
	struct rf_err e = { 0 };

	(void)state;
	/* a 32-bit Q-counter (hw_counters of mlx5): up to 2^32 - 1, not 5e9 (a 5e9/s rate spike) */
	assert_int_equal(parse_one("hw_counters", "out_of_sequence", "4294967295", &e), 0);
	assert_int_equal(parse_one("hw_counters", "out_of_sequence", "4294967296", &e), -EINVAL);
	assert_string_equal(e.code, "SCHEMA_VIOLATION");
	assert_string_equal(e.where, "/samples/0/values/out_of_sequence");
	assert_non_null(strstr(e.msg, "32 bits"));
	assert_int_equal(parse_one("hw_counters", "out_of_sequence", "5000000000", &e), -EINVAL);
	/* PMA PortCounters: symbol_error 16 bits, link_downed 8 bits */
	assert_int_equal(parse_one("ib_counters", "symbol_error", "65535", &e), 0);
	assert_int_equal(parse_one("ib_counters", "symbol_error", "65536", &e), -EINVAL);
	assert_int_equal(parse_one("ib_counters", "link_downed", "255", &e), 0);
	assert_int_equal(parse_one("ib_counters", "link_downed", "256", &e), -EINVAL);
	assert_string_equal(e.where, "/samples/0/values/link_downed");
	/* 64-bit: anything an int64 holds; a name the registry does not know is still counted, not
	 * checked */
	assert_int_equal(parse_one("hw_counters", "np_cnp_sent", "9223372036854775807", &e), 0);
	assert_int_equal(parse_one("hw_counters", "no_such_counter", "9223372036854775807", &e), 0);
}

static void test_truncations(void **state)
{
	/* every prefix of a valid report is rejected cleanly (no crash, a code) */
	size_t len;
	char *text = slurp("tests/data/reports/good/stor-b1.json", &len);

	(void)state;
	for (size_t n = 0; n < len; n += 7) {
		struct rf_err e = { 0 };
		struct report *r = NULL;

		assert_int_equal(report_parse(text, n, reg, &r, &e), -EINVAL);
		assert_true(e.code[0] != '\0');
	}
	free(text);
}

/* Two agents as one id take turns (A, B, A, B): B, which came second, is refused until it, or
 * A, has been silent for IDGUARD_HOLD_NS; a restart (a new boot, its fast PFC reports beside
 * its spool's full reports of the boot before), a third boot and other ids are taken as ever. */
static void test_idguard(void **state)
{
	struct idguard *g;
	int64_t since = 0, t = 1000;
	char held[65];
	json_t *w;

#define FULL(id, boot) idguard_check(g, id, boot, true, t++, held, &since)
#define PFC(id, boot) idguard_check(g, id, boot, false, t++, held, &since)
	(void)state;
	assert_int_equal(idguard_new(&g), 0);
	/* a restart: the new boot's fast reports go beside its spool's full reports of the one
	 * before, then its own full reports */
	assert_int_equal(FULL("h1", "a"), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(PFC("h1", "b"), 0);
		assert_int_equal(FULL("h1", "a"), 0);
	}
	assert_int_equal(FULL("h1", "b"), 0);
	assert_int_equal(PFC("h1", "b"), 0);
	assert_int_equal(FULL("h1", "b"), 0);
	/* a clone starts as h2 beside the agent that has it (held from before rocefabd started) */
	assert_false(idguard_knows(g, "h2"));
	idguard_seed(g, "h2", "x");
	assert_true(idguard_knows(g, "h2"));
	assert_int_equal(FULL("h2", "y"), 0);
	assert_int_equal(FULL("h2", "x"), 0);
	since = 0;
	assert_int_equal(idguard_check(g, "h2", "y", true, t, held, &since), -EUSERS);
	assert_string_equal(held, "x");
	assert_true(since == t);
	t++;
	assert_int_equal(FULL("h2", "x"), 0);
	assert_int_equal(FULL("h2", "y"), -EUSERS);
	assert_int_equal(PFC("h2", "y"), -EUSERS); /* its fast reports too */
	assert_int_equal(PFC("h2", "x"), 0);
	/* h1 is no business of h2's */
	assert_int_equal(FULL("h1", "b"), 0);
	w = idguard_shared(g, t);
	assert_int_equal(json_array_size(w), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "agent")), "h2");
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "held_by")), "x");
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "refused")), "y");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(w, 0), "refused_reports")), 3);
	json_decref(w);
	/* x's agent restarts (a third boot): it keeps the id; y is still refused */
	assert_int_equal(FULL("h2", "z"), 0);
	assert_int_equal(FULL("h2", "y"), -EUSERS);
	w = idguard_shared(g, t);
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "held_by")), "z");
	json_decref(w);
	/* y silent for the hold: no longer shared, and taken again as a boot like any other */
	t += IDGUARD_HOLD_NS + 1;
	w = idguard_shared(g, t);
	assert_int_equal(json_array_size(w), 0);
	json_decref(w);
	assert_int_equal(FULL("h2", "z"), 0);
	assert_int_equal(FULL("h2", "y"), 0);
	/* the one that holds the id gone (retired) while the other goes on trying: released */
	assert_int_equal(FULL("h3", "p"), 0);
	assert_int_equal(FULL("h3", "q"), 0);
	assert_int_equal(FULL("h3", "p"), 0);
	assert_int_equal(FULL("h3", "q"), -EUSERS);
	for (int i = 0; i < 3; i++) {
		t += IDGUARD_HOLD_NS / 3;
		assert_int_equal(FULL("h3", "q"), i < 2 ? -EUSERS : 0);
	}
	assert_int_equal(FULL("h3", "q"), 0);
#undef FULL
#undef PFC
	idguard_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),	cmocka_unit_test(test_bad), cmocka_unit_test(test_idguard),
		cmocka_unit_test(test_mapping), cmocka_unit_test(test_rank),
		cmocka_unit_test(test_widths),	cmocka_unit_test(test_truncations),
	};

	return cmocka_run_group_tests_name("report", tests, setup, teardown);
}
