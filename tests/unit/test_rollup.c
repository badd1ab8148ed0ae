/* Unit tests of the rollups (daemon/rollup.c): a bucket adds up its samples as a step bucket of
 * the raw series does, buckets merge in any order to the same rollup, the stored form round
 * trips, and a corrupt row is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/delta.h"
#include "daemon/rollup.h"
#include "tests/unit/unit.h"

#define T0 1764514140000000000LL /* a minute's start */

static struct sample_entry counter(uint64_t raw, uint64_t delta, int64_t dt_ns, bool valid)
{
	return (struct sample_entry){ .counter = 7, .prio = 0xff, .flags = valid ? DELTA_VALID : 0,
				      .raw = raw, .delta = delta, .dt_ns = dt_ns };
}

static struct sample_entry gauge(uint64_t v, uint8_t prio)
{
	return (struct sample_entry){ .counter = 3, .prio = prio, .raw = v };
}

/* Field by field (a struct's padding is not compared). */
static void assert_same_entry(const struct rollup_entry *a, const struct rollup_entry *b)
{
	assert_int_equal(a->counter, b->counter);
	assert_int_equal(a->prio, b->prio);
	assert_int_equal(a->gauge, b->gauge);
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->n_valid, b->n_valid);
	assert_int_equal(a->delta, b->delta);
	assert_int_equal(a->dt_ns, b->dt_ns);
	assert_int_equal(a->last, b->last);
	assert_int_equal(a->last_ns, b->last_ns);
	assert_int_equal(a->have_minmax, b->have_minmax);
	assert_true(a->sum == b->sum && a->min == b->min && a->max == b->max);
}

static void test_adds_up(void **state)
{
	struct rollup r;
	const struct rollup_entry *c, *g;

	(void)state;
	assert_int_equal(rollup_bucket(T0 + 59999999999LL, ROLLUP_1M_NS), T0);
	assert_int_equal(rollup_bucket(-1, ROLLUP_1M_NS), -ROLLUP_1M_NS);
	rollup_init(&r, T0);
	assert_int_equal(rollup_add_sample(&r, &(struct sample_entry){ 0 }, T0, false), 0);
	rollup_reset(&r, T0);
	assert_int_equal(rollup_add_sample(&r, &(struct sample_entry){ .counter = 7, .prio = 0xff,
									.raw = 10 }, T0 + 1, false), 0);
	/* a baseline (a reset): counted, no delta */
	assert_int_equal(rollup_add_sample(&r, &(struct sample_entry){ .counter = 7, .prio = 0xff,
									.raw = 5 }, T0 + 2, false), 0);
	{
		struct sample_entry a = counter(1005, 1000, 1000000000, true);
		struct sample_entry b = counter(4005, 3000, 1000000000, true);

		assert_int_equal(rollup_add_sample(&r, &b, T0 + 4000000000LL, false), 0);
		assert_int_equal(rollup_add_sample(&r, &a, T0 + 3000000000LL, false), 0); /* late */
	}
	assert_int_equal(rollup_add_sample(&r, &(struct sample_entry){ .counter = 3, .prio = 3, .raw = 50 },
					   T0 + 1, true), 0);
	assert_int_equal(rollup_add_sample(&r, &(struct sample_entry){ .counter = 3, .prio = 3, .raw = 10 },
					   T0 + 2, true), 0);
	assert_int_equal(r.n, 2);
	g = &r.e[0]; /* sorted by counter id */
	c = &r.e[1];
	assert_int_equal(c->n, 4);
	assert_int_equal(c->n_valid, 2);
	assert_int_equal(c->delta, 4000);
	assert_int_equal(c->dt_ns, 2000000000);
	assert_int_equal(c->last, 4005); /* the newest by time, not by arrival */
	assert_true(c->min == 1000.0 && c->max == 3000.0);
	assert_int_equal(g->n, 2);
	assert_true(g->sum == 60.0 && g->min == 10.0 && g->max == 50.0 && g->last == 10);
	rollup_fini(&r);
}

static void test_merge_in_any_order(void **state)
{
	struct rollup m[3], ab, ba, all;
	struct sample_entry s[9];

	(void)state;
	for (int i = 0; i < 9; i++)
		s[i] = i % 3 == 2 ? gauge(100 + 13 * (uint64_t)i, 4)
				  : counter(1000 * (uint64_t)i, 100 * (uint64_t)(i + 1), 500000000, i != 4);
	rollup_init(&all, T0);
	for (int k = 0; k < 3; k++) {
		rollup_init(&m[k], T0 + k * ROLLUP_1M_NS);
		for (int i = 3 * k; i < 3 * k + 3; i++) {
			int64_t t = T0 + k * ROLLUP_1M_NS + i;

			assert_int_equal(rollup_add_sample(&m[k], &s[i], t, i % 3 == 2), 0);
			assert_int_equal(rollup_add_sample(&all, &s[i], t, i % 3 == 2), 0);
		}
	}
	rollup_init(&ab, T0);
	rollup_init(&ba, T0);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(rollup_merge(&ab, &m[k]), 0);
		assert_int_equal(rollup_merge(&ba, &m[2 - k]), 0);
	}
	assert_int_equal(ab.n, all.n);
	assert_int_equal(ba.n, all.n);
	for (size_t i = 0; i < all.n; i++) {
		assert_same_entry(&ab.e[i], &all.e[i]);
		assert_same_entry(&ba.e[i], &all.e[i]);
	}
	for (int k = 0; k < 3; k++)
		rollup_fini(&m[k]);
	rollup_fini(&ab);
	rollup_fini(&ba);
	rollup_fini(&all);
}

static void test_stored_form(void **state)
{
	struct rollup r, back;
	struct buf b;

	(void)state;
	rollup_init(&r, T0);
	rollup_init(&back, T0);
	buf_init(&b);
	for (int i = 0; i < 60; i++) {
		struct sample_entry c = counter(1000 * (uint64_t)i, 1000, 1000000000, i > 0);
		struct sample_entry g = gauge((uint64_t)i * 4096, (uint8_t)(i % 8));

		assert_int_equal(rollup_add_sample(&r, &c, T0 + i * 1000000000LL, false), 0);
		assert_int_equal(rollup_add_sample(&r, &g, T0 + i * 1000000000LL, true), 0);
	}
	assert_int_equal(rollup_encode(&r, &b), 0);
	assert_int_equal(rollup_decode(b.data, b.len, &back), 0);
	assert_int_equal(back.n, r.n);
	for (size_t i = 0; i < r.n; i++)
		assert_same_entry(&back.e[i], &r.e[i]);
	/* every cut is refused, as is trailing garbage and another version */
	for (size_t len = 0; len < b.len; len++)
		assert_int_equal(rollup_decode(b.data, len, &back), -EBADMSG);
	{
		uint8_t *x = malloc(b.len + 1);

		memcpy(x, b.data, b.len);
		x[b.len] = 0;
		assert_int_equal(rollup_decode(x, b.len + 1, &back), -EBADMSG);
		x[0] = 2;
		assert_int_equal(rollup_decode(x, b.len, &back), -EBADMSG);
		free(x);
	}
	/* a count larger than the row does not allocate for it */
	{
		uint8_t bad[] = { 1, 0xff, 0xff, 0xff, 0xff, 0x0f };

		assert_int_equal(rollup_decode(bad, sizeof(bad), &back), -EBADMSG);
	}
	buf_fini(&b);
	rollup_fini(&r);
	rollup_fini(&back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adds_up),
		cmocka_unit_test(test_merge_in_any_order),
		cmocka_unit_test(test_stored_form),
	};

	return cmocka_run_group_tests_name("rollup", tests, NULL, NULL);
}
