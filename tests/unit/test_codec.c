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

/* A port's rows as one chain: 40 rows of 32 counters (idle, steady, a 32-bit wrap, a scale-4
 * counter, a reset, a gauge, a counter losing its delta), written as the writer does and read
 * back from the first row: every entry equal; an idle row small; a late row between them
 * changes nothing; read from mid-chain the rows say -ESRCH, never wrong values. */
#define NE 32
#define NR 40

static void make_row(int k, struct sample_entry *e)
{
	for (int i = 0; i < NE; i++) {
		uint64_t raw;

		switch (i % 8) {
		case 0: raw = 0; break;				   /* idle */
		case 1: raw = 1000000ULL * (uint64_t)k + (uint64_t)(k * k % 7); break; /* steady */
		case 2: raw = (0xfffffff0ULL + 3ULL * (uint64_t)k) & 0xffffffffULL; break; /* wraps */
		case 3: raw = 250ULL * (uint64_t)k; break;	   /* 4-byte words, delta in bytes */
		case 4: raw = k == 20 ? 5 : 77777ULL * (uint64_t)k; break; /* a reset at row 20 */
		case 5: raw = (uint64_t)(k % 5) * 3; break;	   /* a gauge */
		case 6: raw = UINT64_MAX - (uint64_t)k; break;	   /* huge values */
		default: raw = (uint64_t)k << 40; break;
		}
		e[i] = (struct sample_entry){ .counter = (uint32_t)i + 1, .prio = (uint8_t)(i % 8),
					      .raw = raw };
		if (k > 0 && i % 8 != 5 && !(i % 8 == 4 && k == 20) && !(i == 7 && k % 9 == 0)) {
			e[i].flags = DELTA_VALID | (i % 8 == 2 && raw < 0x10 ? DELTA_WRAP : 0);
			e[i].delta = i % 8 == 3 ? 1000 : i % 8 == 2 ? 3 : (uint64_t)k * 11;
			e[i].dt_ns = k == 13 ? 999999937 : 1000000000;
		}
	}
}

static void test_chain(void **state)
{
	static struct sample_entry rows[NR][NE];
	struct codec_chain w, r;
	struct buf blobs[NR];
	struct collect out;
	size_t idle_len = 0;

	(void)state;
	codec_chain_init(&w);
	codec_chain_init(&r);
	for (int k = 0; k < NR; k++) {
		int64_t t = 1000000000LL * (k + 1);
		int rc;

		make_row(k, rows[k]);
		buf_init(&blobs[k]);
		rc = codec_encode_next(&w, t, rows[k], NE, &blobs[k]);
		if (k == 0) {
			assert_int_equal(rc, -EAGAIN); /* nothing to follow */
			assert_int_equal(codec_encode(rows[k], NE, &blobs[k]), 0);
		} else {
			assert_int_equal(rc, 0);
		}
		assert_int_equal(codec_chain_push(&w, t, rows[k], NE, k > 0), 0);
	}
	/* a row of an idle port: all values as predicted */
	{
		struct sample_entry idle[NE];
		struct buf b;

		memcpy(idle, rows[NR - 1], sizeof(idle));
		for (int i = 0; i < NE; i++) {
			idle[i].raw += w.rdiff[i];
			if (idle[i].flags & DELTA_VALID)
				idle[i].delta = w.rdiff[i] * ((i % 8 == 3) ? 4 : 1);
		}
		buf_init(&b);
		assert_int_equal(codec_encode_next(&w, 1000000000LL * (NR + 1), idle, NE, &b), 0);
		idle_len = b.len;
		buf_fini(&b);
	}
	assert_true(idle_len <= 16);
	for (int k = 0; k < NR; k++) {
		out.n = 0;
		assert_int_equal(codec_decode_row(&r, 1000000000LL * (k + 1), blobs[k].data,
						  blobs[k].len, collect_fn, &out), 0);
		assert_int_equal(out.n, NE);
		for (int i = 0; i < NE; i++) {
			assert_int_equal(out.e[i].counter, rows[k][i].counter);
			assert_int_equal(out.e[i].prio, rows[k][i].prio);
			assert_int_equal(out.e[i].flags, rows[k][i].flags);
			assert_true(out.e[i].raw == rows[k][i].raw);
			if (rows[k][i].flags & DELTA_VALID) {
				assert_true(out.e[i].delta == rows[k][i].delta);
				assert_true(out.e[i].dt_ns == rows[k][i].dt_ns);
			}
		}
		if (k == 10) {
			/* a detached row read between two of the chain */
			struct buf d;

			buf_init(&d);
			assert_int_equal(codec_encode_detached(rows[3], NE, &d), 0);
			out.n = 0;
			assert_int_equal(codec_decode_row(&r, 10500000000LL, d.data, d.len, collect_fn,
							  &out), 0);
			assert_int_equal(out.n, NE);
			assert_true(out.e[1].raw == rows[3][1].raw);
			out.n = 0;
			assert_int_equal(codec_decode(d.data, d.len, collect_fn, &out), 0);
			assert_int_equal(out.n, NE);
			buf_fini(&d);
		}
	}
	/* from mid-chain: no base, so no values */
	codec_chain_reset(&r);
	out.n = 0;
	assert_int_equal(codec_decode_row(&r, 5000000000LL, blobs[4].data, blobs[4].len, collect_fn,
					  &out), -ESRCH);
	assert_int_equal(codec_decode(blobs[4].data, blobs[4].len, collect_fn, &out), -ESRCH);
	assert_int_equal(out.n, 0);
	/* every cut of a NEXT row is corrupt or refused, never values */
	codec_decode_row(&r, 1000000000LL, blobs[0].data, blobs[0].len, collect_fn, &out);
	for (size_t len = 0; len < blobs[1].len; len++) {
		struct codec_chain c2;

		codec_chain_init(&c2);
		codec_chain_push(&c2, 1000000000LL, rows[0], NE, false);
		out.n = 0;
		assert_true(codec_decode_row(&c2, 2000000000LL, blobs[1].data, len, collect_fn,
					     &out) < 0);
		assert_int_equal(out.n, 0);
		codec_chain_fini(&c2);
	}
	/* other counters than the row before: written full */
	{
		struct buf b;

		buf_init(&b);
		rows[0][3].counter = 99;
		assert_int_equal(codec_encode_next(&w, 1000000000LL * (NR + 2), rows[0], NE, &b),
				 -EAGAIN);
		assert_int_equal(codec_encode_next(&w, 1000000000LL * NR, rows[1], NE, &b), -EAGAIN);
		buf_fini(&b);
	}
	for (int k = 0; k < NR; k++)
		buf_fini(&blobs[k]);
	codec_chain_fini(&w);
	codec_chain_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_chain),
	};

	return cmocka_run_group_tests_name("codec", tests, NULL, NULL);
}
