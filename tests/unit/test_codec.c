/* Unit tests of the sample row encoding: round trip, compactness, and corrupt blobs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/codec.h"
#include "daemon/delta.h"
#include "tests/unit/unit.h"

struct collect {
	struct sample_entry e[64];
	int n;
};

static int collect_fn(const struct sample_entry *e, void *ctx)
{
	struct collect *c = ctx;

	c->e[c->n++] = *e;
	return 0;
}

static void test_roundtrip(void **state)
{
	struct sample_entry in[60];
	struct collect out = { .n = 0 };
	struct buf b;

	(void)state;
	buf_init(&b);
	for (int i = 0; i < 60; i++)
		in[i] = (struct sample_entry){ .counter = (uint32_t)i * 3, .prio = i < 8 ? i : 0xff,
					       .flags = i == 5 ? 0 : DELTA_VALID | (i == 7 ? DELTA_WRAP : 0),
					       .raw = (uint64_t)i * 123456789ULL + (i == 9 ? UINT64_MAX / 2 : 0),
					       .delta = (uint64_t)i * 1000,
					       .dt_ns = i < 30 ? 1000000000 : 999999 };
	assert_int_equal(codec_encode(in, 60, &b), 0);
	/* compact: well under the 40 bytes a naive struct would take */
	assert_true(b.len < 60 * 16);
	assert_int_equal(codec_decode(b.data, b.len, collect_fn, &out), 0);
	assert_int_equal(out.n, 60);
	for (int i = 0; i < 60; i++) {
		assert_int_equal(out.e[i].counter, in[i].counter);
		assert_int_equal(out.e[i].prio, in[i].prio);
		assert_int_equal(out.e[i].flags, in[i].flags);
		assert_int_equal(out.e[i].raw, in[i].raw);
		if (in[i].flags & DELTA_VALID) {
			assert_int_equal(out.e[i].delta, in[i].delta);
			assert_int_equal(out.e[i].dt_ns, in[i].dt_ns);
		}
	}
	assert_int_equal(codec_count(b.data, b.len), 60);
	buf_fini(&b);
}

static void test_corrupt(void **state)
{
	struct sample_entry in[3] = {
		{ .counter = 1, .prio = 0xff, .flags = DELTA_VALID, .raw = 5, .delta = 1, .dt_ns = 7 },
		{ .counter = 2, .prio = 3, .flags = DELTA_VALID, .raw = 500, .delta = 9, .dt_ns = 7 },
		{ .counter = 300, .prio = 0xff, .flags = 0, .raw = UINT64_MAX },
	};
	struct collect out;
	struct buf b;

	(void)state;
	buf_init(&b);
	assert_int_equal(codec_encode(in, 3, &b), 0);
	/* every truncation is detected */
	for (size_t len = 0; len < b.len; len++) {
		out.n = 0;
		assert_int_equal(codec_decode(b.data, len, collect_fn, &out), -EBADMSG);
	}
	/* trailing garbage and a wrong version */
	{
		char *x = malloc(b.len + 1);

		memcpy(x, b.data, b.len);
		x[b.len] = 0;
		out.n = 0;
		assert_int_equal(codec_decode(x, b.len + 1, collect_fn, &out), -EBADMSG);
		x[0] = 9;
		assert_int_equal(codec_decode(x, b.len, collect_fn, &out), -EBADMSG);
		free(x);
	}
	/* a huge count does not make the decoder read past the end */
	{
		uint8_t bad[] = { 1, 0xff, 0xff, 0xff, 0xff, 0x0f };

		assert_int_equal(codec_count(bad, sizeof(bad)), -EBADMSG);
	}
	buf_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_corrupt),
	};

	return cmocka_run_group_tests_name("codec", tests, NULL, NULL);
}
