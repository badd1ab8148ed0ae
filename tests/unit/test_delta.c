/* Unit tests of the delta math: growth, wraps at 8/16/32/64 bits, resets, new host boots,
 * saturating counters, clocks that do not advance, and implausible jumps. */
#include "daemon/delta.h"
#include "tests/unit/unit.h"

#define SEC 1000000000LL

static unsigned run(uint64_t prev, uint64_t cur, unsigned width, bool sat, bool new_boot,
		    uint64_t *d)
{
	struct delta_in in = { .prev_raw = prev, .cur_raw = cur, .prev_t_ns = 10 * SEC,
			       .cur_t_ns = 11 * SEC, .width = (uint8_t)width, .saturate = sat,
			       .have_prev = true, .new_boot = new_boot,
			       .max_rate = delta_max_rate("packets", 1) };

	return delta_compute(&in, d);
}

static void test_growth(void **state)
{
	uint64_t d;

	(void)state;
	assert_int_equal(run(100, 150, 64, false, false, &d), DELTA_VALID);
	assert_int_equal(d, 50);
	assert_int_equal(run(100, 100, 32, false, false, &d), DELTA_VALID);
	assert_int_equal(d, 0);
}

static void test_wraps(void **state)
{
	uint64_t d;

	(void)state;
	/* 32-bit wrap: 0xFFFFFF00 -> 0x10 is 0x110 */
	assert_int_equal(run(0xFFFFFF00u, 0x10, 32, false, false, &d), DELTA_VALID | DELTA_WRAP);
	assert_int_equal(d, 0x110);
	/* 64-bit wrap */
	assert_int_equal(run(UINT64_MAX - 9, 5, 64, false, false, &d), DELTA_VALID | DELTA_WRAP);
	assert_int_equal(d, 15);
	/* 16-bit wrap */
	assert_int_equal(run(65530, 4, 16, false, false, &d), DELTA_VALID | DELTA_WRAP);
	assert_int_equal(d, 10);
}

static void test_resets(void **state)
{
	uint64_t d;

	(void)state;
	/* far from the top of the range: a reset, not a 4-billion wrap */
	assert_int_equal(run(1000000, 200, 32, false, false, &d), DELTA_VALID | DELTA_RESET);
	assert_int_equal(d, 200);
	/* 64-bit counters going back are resets */
	assert_int_equal(run(5000000000ULL, 7, 64, false, false, &d), DELTA_VALID | DELTA_RESET);
	assert_int_equal(d, 7);
	/* a saturating counter going back was cleared */
	assert_int_equal(run(65535, 3, 16, true, false, &d), DELTA_VALID | DELTA_RESET);
	assert_int_equal(d, 3);
	/* a 32-bit counter from above half its range to near 0 reads as a wrap, unless a 64-bit
	 * counter of the port went back in the same read: the port's counters were reset */
	assert_int_equal(run(0xF0000000u, 5, 32, false, false, &d), DELTA_VALID | DELTA_WRAP);
	{
		struct delta_in in = { .prev_raw = 0xF0000000u, .cur_raw = 5, .prev_t_ns = 10 * SEC,
				       .cur_t_ns = 11 * SEC, .width = 32, .have_prev = true, .port_reset = true,
				       .max_rate = delta_max_rate("packets", 1) };

		assert_int_equal(delta_compute(&in, &d), DELTA_VALID | DELTA_RESET);
		assert_int_equal(d, 5);
	}
	/* saturated: flagged */
	assert_int_equal(run(65000, 65535, 16, true, false, &d), DELTA_VALID | DELTA_SATURATED);
	assert_int_equal(d, 535);
}

static void test_new_boot(void **state)
{
	uint64_t d;

	(void)state;
	/* after a reboot the counter restarted from 0, whatever the previous value */
	assert_int_equal(run(5000, 9000, 64, false, true, &d), DELTA_VALID | DELTA_NEW_BOOT);
	assert_int_equal(d, 9000);
	assert_int_equal(run(5000, 10, 32, false, true, &d), DELTA_VALID | DELTA_NEW_BOOT);
	assert_int_equal(d, 10);
	/* ...unless the value is impossible for one interval: then it is only a baseline */
	assert_int_equal(run(5, 900000000000ULL, 64, false, true, &d),
			 DELTA_NEW_BOOT | DELTA_IMPLAUSIBLE);
	assert_int_equal(d, 0);
}

static void test_implausible(void **state)
{
	struct delta_in in = { .prev_raw = 3000000000ULL, .cur_raw = 100, .prev_t_ns = 10 * SEC,
			       .cur_t_ns = 10 * SEC + SEC / 1000, /* 1 ms */
			       .width = 32, .have_prev = true,
			       .max_rate = delta_max_rate("packets", 1) };
	uint64_t d;

	(void)state;
	/* a 1.29e9 wrap in 1 ms is 1.3e12/s: impossible, so it was a reset */
	assert_int_equal(delta_compute(&in, &d), DELTA_VALID | DELTA_RESET);
	assert_int_equal(d, 100);
	/* the same over 1 s is a plausible wrap */
	in.cur_t_ns = 11 * SEC;
	assert_int_equal(delta_compute(&in, &d), DELTA_VALID | DELTA_WRAP);
	assert_int_equal(d, 4294967295ULL - 3000000000ULL + 100 + 1);
	/* growth is growth, however fast (a switch whose counters move once a second, read
	 * twice in that second, shows a second's growth in a fraction of it) */
	in = (struct delta_in){ .prev_raw = 0, .cur_raw = 250000000000ULL, .prev_t_ns = 10 * SEC,
				.cur_t_ns = 10 * SEC + SEC / 5, .width = 64, .have_prev = true,
				.max_rate = delta_max_rate("bytes", 1) };
	assert_int_equal(delta_compute(&in, &d), DELTA_VALID);
	assert_int_equal(d, 250000000000ULL);
	/* but not beyond two seconds of it: another counter (two NICs' names swapped by a driver
	 * reload: 993 GB in a second, 7.9 Tb/s), a baseline */
	in.cur_raw = 993000000000ULL;
	in.cur_t_ns = 11 * SEC;
	assert_int_equal(delta_compute(&in, &d), DELTA_IMPLAUSIBLE);
	assert_int_equal(d, 0);
	/* pause duration cannot exceed wall time */
	assert_true(delta_max_rate("microseconds", 1) < 1.1e6);
	assert_true(delta_max_rate("bytes", 4) == 2e11 / 4);
}

static void test_baselines(void **state)
{
	struct delta_in in = { .prev_raw = 1, .cur_raw = 2, .prev_t_ns = 10 * SEC,
			       .cur_t_ns = 10 * SEC, .width = 64, .have_prev = true };
	uint64_t d = 99;

	(void)state;
	assert_int_equal(delta_compute(&in, &d), DELTA_CLOCK);
	assert_int_equal(d, 0);
	in.cur_t_ns = 9 * SEC;
	assert_int_equal(delta_compute(&in, &d), DELTA_CLOCK);
	in.have_prev = false;
	assert_int_equal(delta_compute(&in, &d), 0);
	/* a value beyond the registered width: treated as 64-bit, so no bogus wrap */
	in = (struct delta_in){ .prev_raw = 1ULL << 40, .cur_raw = 5, .prev_t_ns = SEC,
				.cur_t_ns = 2 * SEC, .width = 32, .have_prev = true };
	assert_int_equal(delta_compute(&in, &d), DELTA_VALID | DELTA_RESET);
	assert_int_equal(d, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth),	   cmocka_unit_test(test_wraps),
		cmocka_unit_test(test_resets),	   cmocka_unit_test(test_new_boot),
		cmocka_unit_test(test_implausible), cmocka_unit_test(test_baselines),
	};

	return cmocka_run_group_tests_name("delta", tests, NULL, NULL);
}
