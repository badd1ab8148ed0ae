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

/* A block of 20 minutes (some missing, counters that come and go, gauges, a reset's huge
 * step) gives back each minute's rollup exactly (the same stored form); an idle port's
 * minutes take a few bytes each; every cut or flipped byte is -EBADMSG or decodes to
 * something, never a crash (the fuzz target does more). */
static void test_blocks(void **state)
{
	struct rollup slots[20], *back = NULL;
	size_t n = 0, nback = 0;
	struct buf b, x, y;
	int64_t t0 = 7200 * (int64_t)1000000000;

	(void)state;
	buf_init(&b);
	buf_init(&x);
	buf_init(&y);
	for (int m = 0; m < 30; m++) {
		if (m % 3 == 2)
			continue; /* no samples that minute */
		rollup_init(&slots[n], t0 + m * ROLLUP_1M_NS);
		for (int k = 0; k < 6; k++) {
			int64_t t = slots[n].t_ns + (k * 10 + m % 4) * (int64_t)1000000000;

			for (uint32_t c = 1; c <= 12; c++) {
				struct sample_entry se = { .counter = c, .prio = (uint8_t)(c % 3),
							   .flags = DELTA_VALID,
							   .raw = c == 5 && m > 10 ? 3 : (uint64_t)(m * 6 + k) * c * 1000,
							   .delta = c == 7 ? 0 : (uint64_t)c * 1000 + (uint64_t)k,
							   .dt_ns = 10000000000 + k };

				if (c == 9 && m % 2)
					continue; /* a counter that comes and goes */
				assert_int_equal(rollup_add_sample(&slots[n], &se, t, c >= 11), 0);
			}
		}
		n++;
	}
	assert_int_equal(rollup_block_encode(slots, n, t0, ROLLUP_1M_NS, &b), 0);
	assert_int_equal(rollup_block_decode(b.data, b.len, t0, ROLLUP_1M_NS, &back, &nback), 0);
	assert_int_equal(nback, n);
	for (size_t i = 0; i < n; i++) {
		buf_reset(&x);
		buf_reset(&y);
		assert_true(back[i].t_ns == slots[i].t_ns);
		assert_int_equal(rollup_encode(&slots[i], &x), 0);
		assert_int_equal(rollup_encode(&back[i], &y), 0);
		assert_int_equal(x.len, y.len);
		assert_memory_equal(x.data, y.data, x.len);
		rollup_fini(&back[i]);
	}
	free(back);
	/* not a bucket of the block */
	slots[3].t_ns += 1;
	assert_int_equal(rollup_block_encode(slots, n, t0, ROLLUP_1M_NS, &x), -EINVAL);
	slots[3].t_ns -= 1;
	for (size_t len = 0; len < b.len; len++) {
		uint8_t *cut = malloc(b.len);

		memcpy(cut, b.data, b.len);
		assert_int_equal(rollup_block_decode(cut, len, t0, ROLLUP_1M_NS, &back, &nback), -EBADMSG);
		cut[len] ^= 0x5a;
		if (rollup_block_decode(cut, b.len, t0, ROLLUP_1M_NS, &back, &nback) == 0) {
			for (size_t i = 0; i < nback; i++)
				rollup_fini(&back[i]);
			free(back);
		}
		free(cut);
	}
	/* an idle port: 60 minutes of 128 counters that did not move */
	{
		static struct rollup idle[60];

		for (int m = 0; m < 60; m++) {
			rollup_init(&idle[m], t0 + m * ROLLUP_1M_NS);
			for (int k = 0; k < 60; k++)
				for (uint32_t c = 1; c <= 128; c++)
					rollup_add_sample(&idle[m], &(struct sample_entry){ .counter = c,
							  .flags = DELTA_VALID, .raw = 42, .dt_ns = 1000000000 },
							  idle[m].t_ns + k * (int64_t)1000000000, false);
		}
		buf_reset(&x);
		assert_int_equal(rollup_block_encode(idle, 60, t0, ROLLUP_1M_NS, &x), 0);
		assert_true(x.len < 60 * 16); /* a v1 row of each would be ~2 KB */
		for (int m = 0; m < 60; m++)
			rollup_fini(&idle[m]);
	}
	for (size_t i = 0; i < n; i++)
		rollup_fini(&slots[i]);
	buf_fini(&b);
	buf_fini(&x);
	buf_fini(&y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adds_up),
		cmocka_unit_test(test_merge_in_any_order),
		cmocka_unit_test(test_stored_form),
		cmocka_unit_test(test_blocks),
	};

	return cmocka_run_group_tests_name("rollup", tests, NULL, NULL);
}
