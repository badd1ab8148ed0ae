/* libFuzzer target: the stored form of a port's counters (daemon/codec.c), the BLOB that every
 * counters query decodes row by row (views_port_counters) and that a damaged or foreign
 * database could hold anything in.  The first byte picks:
 *   even  the rest is a stored row: codec_decode, codec_count
 *   odd   the rest is an array of entries (as ingest computes them): codec_encode
 *
 * Invariants: decoding never reads past the row and counts what it calls back for; what
 * decodes encodes into a row that decodes to the same entries, and that row is a fixed point
 * of decoding and encoding; what ingest encodes decodes back to what it was. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/codec.h"
#include "daemon/delta.h"

#define MAX_ENTRIES 4096

struct list {
	struct sample_entry e[MAX_ENTRIES];
	size_t n;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int collect(const struct sample_entry *e, void *ctx)
{
	struct list *l = ctx;

	if (l->n == MAX_ENTRIES)
		return 1; /* stops the decoding: more than the target keeps */
	l->e[l->n++] = *e;
	return 0;
}

static bool same(const struct list *a, const struct list *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct sample_entry *x = &a->e[i], *y = &b->e[i];
		bool valid = x->flags & DELTA_VALID;

		if (x->counter != y->counter || x->prio != y->prio || x->flags != y->flags ||
		    x->raw != y->raw || (valid && (x->delta != y->delta || x->dt_ns != y->dt_ns)))
			return false;
	}
	return true;
}

/* Encodes l, decodes it into *back: 0, or the codec's error. */
static int round_trip(const struct list *l, struct buf *out, struct list *back)
{
	back->n = 0;
	if (codec_encode(l->e, l->n, out) < 0)
		abort(); /* out of memory only */
	return codec_decode(out->data, out->len, collect, back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct list a, b, c;
	struct buf x = { 0 }, y = { 0 };
	int r;

	if (!size)
		return 0;
	a.n = 0;
	if (!(data[0] & 1)) {
		r = codec_decode(data + 1, size - 1, collect, &a);
		if (r < 0) {
			if (r != -EBADMSG || codec_count(data + 1, size - 1) != -EBADMSG)
				abort();
			return 0;
		}
		if (r == 0 && codec_count(data + 1, size - 1) != (int)a.n)
			abort();
		if (r > 0)
			return 0; /* stopped at MAX_ENTRIES */
	} else {
		/* entries as ingest makes them: a valid delta has a positive time since the last read */
		for (size_t off = 1; off + sizeof(a.e[0]) <= size && a.n < MAX_ENTRIES; off += sizeof(a.e[0])) {
			struct sample_entry *e = &a.e[a.n++];

			memcpy(e, data + off, sizeof(*e));
			e->flags &= 0x7f;
			if ((e->flags & DELTA_VALID) && e->dt_ns <= 0)
				e->dt_ns = e->dt_ns == 0 || e->dt_ns == INT64_MIN ? 1 : -e->dt_ns;
		}
	}
	if (round_trip(&a, &x, &b) != 0 || !same(&a, &b))
		abort(); /* encoded entries decode to themselves */
	if (round_trip(&b, &y, &c) != 0 || !same(&b, &c) || x.len != y.len ||
	    memcmp(x.data, y.data, x.len))
		abort(); /* and the encoding is a fixed point */
	buf_fini(&x);
	buf_fini(&y);
	return 0;
}
