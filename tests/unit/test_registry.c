/* Unit tests of the counter registry: the built-in schemas/counters.json, lookups by source
 * name (exact, per driver, per priority), and rejection of bad registries. */
#include <string.h>

#include "lib/registry.h"
#include "tests/unit/unit.h"

static void test_builtin(void **state)
{
	const struct reg_source *s;
	const struct reg_counter *c;
	struct rf_err e;
	struct reg *r;

	(void)state;
	assert_int_equal(reg_load_builtin(&r, &e), 0);
	assert_true(reg_size(r) > 50);

	/* port_xmit_data is in 4-byte words: the registry scales it */
	s = reg_lookup(r, "ib_counters", "mlx5", "port_xmit_data");
	assert_non_null(s);
	assert_string_equal(s->counter->name, "roce_tx_bytes");
	assert_int_equal(s->scale, 4);
	assert_int_equal(s->width, 64);
	assert_int_equal(s->rank, 0);

	/* mlx5 Q-counters are 32 bit; the same meaning on rxe is a 64-bit counter */
	s = reg_lookup(r, "hw_counters", "mlx5", "out_of_sequence");
	assert_non_null(s);
	assert_int_equal(s->width, 32);
	s = reg_lookup(r, "hw_counters", "rxe", "out_of_seq_request");
	assert_non_null(s);
	assert_string_equal(s->counter->name, "out_of_sequence");
	assert_int_equal(s->width, 64);
	/* a driver-specific source does not match another driver */
	assert_null(reg_lookup(r, "hw_counters", "rxe", "out_of_sequence"));
	/* a source without driver matches every driver */
	assert_non_null(reg_lookup(r, "ib_counters", "bnxt_re", "port_rcv_packets"));

	/* per-priority PFC counters from ethtool */
	s = reg_lookup(r, "ethtool", NULL, "rx_prio3_pause");
	assert_non_null(s);
	assert_string_equal(s->counter->name, "pfc_rx_pause_frames");
	assert_int_equal(s->prio, 3);
	assert_int_equal(s->counter->scope, REG_SCOPE_PORT_PRIO);
	s = reg_lookup(r, "ethtool", NULL, "tx_prio7_pause_duration");
	assert_non_null(s);
	assert_int_equal(s->prio, 7);
	assert_string_equal(s->counter->metric, "pfc_tx_pause_duration_seconds");
	assert_true(s->counter->metric_scale == 1e-6);
	assert_null(reg_lookup(r, "ethtool", NULL, "rx_prio8_pause"));

	/* saturating PMA error counters */
	s = reg_lookup(r, "ib_counters", NULL, "symbol_error");
	assert_non_null(s);
	assert_int_equal(s->wrap, REG_SATURATE);
	assert_int_equal(s->width, 16);

	/* second-ranked source */
	s = reg_lookup(r, "hw_counters", "mlx5", "rdma_tx_bytes");
	assert_non_null(s);
	assert_int_equal(s->rank, 1);

	c = reg_find(r, "np_cnp_sent");
	assert_non_null(c);
	assert_ptr_equal(reg_counter(r, c->id), c);
	assert_true(reg_group_known(r, "netdev"));
	assert_false(reg_group_known(r, "nonsense"));
	assert_null(reg_lookup(r, "hw_counters", "mlx5", "no_such_counter"));
	reg_free(r);
}

static void expect_bad(const char *json, const char *where_part, const char *msg_part)
{
	struct rf_err e = { 0 };
	struct reg *r = NULL;

	assert_int_equal(reg_load(json, strlen(json), "t.json", &r, &e), -EINVAL);
	assert_null(r);
	if (!strstr(e.where, where_part) || !strstr(e.msg, msg_part))
		fail_msg("got '%s: %s', expected '%s' / '%s'", e.where, e.msg, where_part, msg_part);
}

static void test_bad(void **state)
{
	(void)state;
	expect_bad("{", "t.json", "malformed");
	expect_bad("{\"schema\":2,\"counters\":[]}", "/schema", "out of range");
	expect_bad("{\"schema\":1,\"counters\":[{\"name\":\"a\",\"scope\":\"port\",\"unit\":\"x\","
		   "\"kind\":\"counter\",\"help\":\"h\",\"sources\":[],\"extra\":1}]}",
		   "/counters/0/extra", "unknown field");
	expect_bad("{\"schema\":1,\"counters\":[{\"name\":\"a\",\"scope\":\"port\",\"unit\":\"x\","
		   "\"kind\":\"counter\",\"help\":\"h\",\"sources\":[]},{\"name\":\"a\",\"scope\":"
		   "\"port\",\"unit\":\"x\",\"kind\":\"counter\",\"help\":\"h\",\"sources\":[]}]}",
		   "/counters/1/name", "defined twice");
	expect_bad("{\"schema\":1,\"counters\":[{\"name\":\"a\",\"scope\":\"port\",\"unit\":\"x\","
		   "\"kind\":\"counter\",\"help\":\"h\",\"sources\":[{\"group\":\"g\",\"name\":"
		   "\"p%d\"}]}]}",
		   "/counters/0/sources/0/name", "per-priority");
	expect_bad("{\"schema\":1,\"counters\":[{\"name\":\"a_ms\",\"scope\":\"port\",\"unit\":"
		   "\"microseconds\",\"kind\":\"counter\",\"help\":\"h\",\"sources\":[]}]}",
		   "/counters/0/name", "_us");
	expect_bad("{\"schema\":1,\"counters\":[{\"name\":\"a\",\"scope\":\"port\",\"unit\":\"x\","
		   "\"kind\":\"counter\",\"help\":\"h\",\"sources\":[{\"group\":\"g\",\"name\":\"s\","
		   "\"width\":65}]}]}",
		   "/counters/0/sources/0/width", "out of range");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
