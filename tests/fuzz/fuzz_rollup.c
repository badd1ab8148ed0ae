/* libFuzzer target: the stored form of a rollup (daemon/rollup.c), the BLOB that the writer
 * reads back to merge a late sample or a minute into an hour, and that every counters query
 * with a step of a minute or more decodes row by row.  A damaged or foreign database could
 * hold anything in it.
 *
 * Invariants: decoding never reads past the row, and what decodes encodes into a row that
 * decodes to the same entries (a fixed point); merging a decoded rollup into an empty one and
 * into itself keeps the entries sorted and unique (it decodes again after encoding). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/rollup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* (a NaN is itself; 0 and -0 are the same sum) */
static bool same_f(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

static bool same(const struct rollup *a, const struct rollup *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct rollup_entry *x = &a->e[i], *y = &b->e[i];

		if (x->counter != y->counter || x->prio != y->prio || x->gauge != y->gauge ||
		    x->n != y->n || x->n_valid != y->n_valid || x->delta != y->delta ||
		    x->dt_ns != y->dt_ns || x->last != y->last || x->last_ns != y->last_ns ||
		    x->have_minmax != y->have_minmax || !same_f(x->sum, y->sum) ||
		    !same_f(x->min, y->min) || !same_f(x->max, y->max))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rollup a, b, m;
	struct buf out;

	if (size && data[0] == ROLLUP_BLOCK_VERSION) {
		/* a block (an hour of minutes): what decodes encodes into a block of the same */
		struct rollup *s1 = NULL, *s2 = NULL;
		size_t n1 = 0, n2 = 0;
		int64_t t0 = 1764511200000000000;

		buf_init(&out);
		if (rollup_block_decode(data, size, t0, ROLLUP_1M_NS, &s1, &n1) == 0) {
			if (rollup_block_encode(s1, n1, t0, ROLLUP_1M_NS, &out) != 0 ||
			    rollup_block_decode(out.data, out.len, t0, ROLLUP_1M_NS, &s2, &n2) != 0 ||
			    n1 != n2)
				abort();
			for (size_t i = 0; i < n1; i++)
				if (s1[i].t_ns != s2[i].t_ns || !same(&s1[i], &s2[i]))
					abort();
			for (size_t i = 0; i < n1; i++) {
				rollup_fini(&s1[i]);
				rollup_fini(&s2[i]);
			}
			free(s1);
			free(s2);
		}
		buf_fini(&out);
		return 0;
	}
	rollup_init(&a, 1764514140000000000);
	rollup_init(&b, a.t_ns);
	rollup_init(&m, a.t_ns);
	buf_init(&out);
	if (rollup_decode(data, size, &a) == 0) {
		if (rollup_encode(&a, &out) != 0 || rollup_decode(out.data, out.len, &b) != 0 ||
		    !same(&a, &b))
			abort();
		if (rollup_merge(&m, &a) != 0 || !same(&m, &a) || rollup_merge(&m, &a) != 0)
			abort();
		buf_reset(&out);
		if (rollup_encode(&m, &out) != 0 || rollup_decode(out.data, out.len, &b) != 0 ||
		    b.n != a.n)
			abort();
	}
	buf_fini(&out);
	rollup_fini(&a);
	rollup_fini(&b);
	rollup_fini(&m);
	return 0;
}
