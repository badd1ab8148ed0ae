/* libFuzzer target: the stored form of a port's counters (daemon/codec.c), the BLOB that every
 * counters query decodes row by row (views_port_counters) and that a damaged or foreign
 * database could hold anything in.  The first byte picks:
 *   even  the rest is a stored row: codec_decode, codec_count; and codec_decode_row after a
 *         full row of 8 entries (a NEXT row follows it)
 *   odd   the rest is an array of entries (as ingest computes them): codec_encode; and the
 *         chain: a second row of those entries with other values, as what changed
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
		struct codec_chain ch;
		struct sample_entry base[8];

		codec_chain_init(&ch);
		for (int i = 0; i < 8; i++)
			base[i] = (struct sample_entry){ .counter = (uint32_t)i, .flags = i & 1 ? DELTA_VALID : 0,
							 .raw = (uint64_t)i << (i * 7), .delta = (uint64_t)i,
							 .dt_ns = 1000 };
		codec_chain_push(&ch, 1000, base, 8, false);
		codec_chain_push(&ch, 2000, base, 8, true);
		r = codec_decode_row(&ch, 3000, data + 1, size - 1, collect, &a);
		if (r == 0 && size >= 3 && data[1] == CODEC_VERSION_2 && data[2] == CODEC_NEXT &&
		    (a.n != 8 || ch.t_ns != 3000))
			abort(); /* a row that follows has the entries of the one before */
		if (r != 0 && r != 1 && r != -EBADMSG && r != -ESRCH)
			abort();
		if (r == -ESRCH && !(size >= 3 && data[1] == CODEC_VERSION_2 && data[2] == CODEC_NEXT))
			abort();
		codec_chain_fini(&ch);
		a.n = 0;
		r = codec_decode(data + 1, size - 1, collect, &a);
		if (r < 0) {
			if (r == -ESRCH && data[1] == CODEC_VERSION_2 && data[2] == CODEC_NEXT &&
			    codec_count(data + 1, size - 1) == -ESRCH)
				return 0; /* needs the row before */
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
	{
		/* the same counters again, other values: follows the row, and reads back */
		struct codec_chain w, rd;
		struct sample_entry *e2 = malloc((a.n ? a.n : 1) * sizeof(*e2));

		if (!e2)
			abort();
		for (size_t i = 0; i < a.n; i++) {
			e2[i] = a.e[i];
			e2[i].raw = a.e[i].raw * 3 + data[i % size];
			e2[i].delta = a.e[i].delta ^ data[(i + 1) % size];
			e2[i].flags = (uint8_t)((a.e[i].flags ^ data[(i + 2) % size]) & 0x7f);
			if ((e2[i].flags & DELTA_VALID) && e2[i].dt_ns <= 0)
				e2[i].dt_ns = 1;
		}
		codec_chain_init(&w);
		codec_chain_init(&rd);
		codec_chain_push(&w, 10, a.e, a.n, false);
		buf_reset(&y);
		b.n = 0;
		r = codec_encode_next(&w, 20, e2, a.n, &y);
		if (r == 0) {
			struct list *l2 = &c;

			if (codec_decode_row(&rd, 10, x.data, x.len, collect, &b) != 0)
				abort();
			l2->n = 0;
			if (codec_decode_row(&rd, 20, y.data, y.len, collect, l2) != 0 || l2->n != a.n)
				abort();
			memcpy(b.e, e2, a.n * sizeof(*e2));
			b.n = a.n;
			if (!same(&b, l2))
				abort(); /* what changed gives the row back */
		} else if (r != -EAGAIN || a.n != 0) {
			abort();
		}
		codec_chain_fini(&w);
		codec_chain_fini(&rd);
		free(e2);
	}
	buf_fini(&x);
	buf_fini(&y);
	return 0;
}
