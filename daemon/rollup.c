/* Rollups: see rollup.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "daemon/delta.h"
#include "daemon/rollup.h"

#define F_GAUGE 0x01
#define F_MINMAX 0x02
#define F_SAME 0x04 /* max is min: one f64 */
#define F_ZERO 0x08 /* min and max are 0: none (an idle priority's rates) */
#define F_SUMN 0x10 /* a gauge's sum is n times its min (it did not move): no sum */
#define F_ALL (F_GAUGE | F_MINMAX | F_SAME | F_ZERO | F_SUMN)

int64_t rollup_bucket(int64_t t_ns, int64_t w)
{
	int64_t b = t_ns - t_ns % w;

	return t_ns % w < 0 ? b - w : b;
}

void rollup_init(struct rollup *r, int64_t t_ns)
{
	*r = (struct rollup){ .t_ns = t_ns };
}

void rollup_fini(struct rollup *r)
{
	free(r->e);
	*r = (struct rollup){ 0 };
}

void rollup_reset(struct rollup *r, int64_t t_ns)
{
	r->t_ns = t_ns;
	r->n = 0;
}

static int reserve(struct rollup *r, size_t n)
{
	struct rollup_entry *e;
	size_t cap;

	if (n <= r->cap)
		return 0;
	cap = r->cap ? r->cap : 16;
	while (cap < n)
		cap *= 2;
	if (!(e = realloc(r->e, cap * sizeof(*e))))
		return -ENOMEM;
	r->e = e;
	r->cap = cap;
	return 0;
}

int rollup_copy(struct rollup *dst, const struct rollup *src)
{
	int r = reserve(dst, src->n);

	if (r < 0)
		return r;
	if (src->n)
		memcpy(dst->e, src->e, src->n * sizeof(*src->e));
	dst->n = src->n;
	dst->t_ns = src->t_ns;
	return 0;
}

static int entry_cmp(uint32_t c1, uint8_t p1, uint32_t c2, uint8_t p2)
{
	if (c1 != c2)
		return c1 < c2 ? -1 : 1;
	return p1 < p2 ? -1 : p1 > p2;
}

/* The entry of (counter, prio), inserted empty where it belongs when absent; NULL: no memory. */
static struct rollup_entry *entry_get(struct rollup *r, uint32_t counter, uint8_t prio, bool gauge)
{
	size_t lo = 0, hi = r->n;

	/* reports come sorted, so the entry is usually the next one: binary search anyway */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = entry_cmp(r->e[mid].counter, r->e[mid].prio, counter, prio);

		if (c == 0)
			return &r->e[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (reserve(r, r->n + 1) < 0)
		return NULL;
	memmove(&r->e[lo + 1], &r->e[lo], (r->n - lo) * sizeof(*r->e));
	r->e[lo] = (struct rollup_entry){ .counter = counter, .prio = prio, .gauge = gauge,
					  .last_ns = INT64_MIN };
	r->n++;
	return &r->e[lo];
}

static void minmax(struct rollup_entry *e, double lo, double hi)
{
	if (!e->have_minmax || lo < e->min)
		e->min = lo;
	if (!e->have_minmax || hi > e->max)
		e->max = hi;
	e->have_minmax = true;
}

void rollup_entry_of_sample(struct rollup_entry *e, const struct sample_entry *se, int64_t t_ns,
			    bool gauge)
{
	*e = (struct rollup_entry){ .counter = se->counter, .prio = se->prio, .gauge = gauge,
				    .n = 1, .last = se->raw, .last_ns = t_ns };
	if (gauge) {
		e->sum = e->min = e->max = (double)se->raw;
		e->have_minmax = true;
	} else if ((se->flags & DELTA_VALID) && se->dt_ns > 0) {
		e->n_valid = 1;
		e->delta = se->delta;
		e->dt_ns = se->dt_ns;
		e->min = e->max = (double)se->delta * 1e9 / (double)se->dt_ns;
		e->have_minmax = true;
	}
}

/* Sums that cannot grow further stay at their largest (a damaged row, not real traffic). */
static uint32_t add_u32(uint32_t a, uint32_t b)
{
	return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

static int64_t add_i64(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b; /* (both are at least 0) */
}

static void entry_merge(struct rollup_entry *e, const struct rollup_entry *s)
{
	e->n = add_u32(e->n, s->n);
	e->n_valid = add_u32(e->n_valid, s->n_valid);
	if (e->n_valid > e->n)
		e->n_valid = e->n;
	e->delta = e->delta > UINT64_MAX - s->delta ? UINT64_MAX : e->delta + s->delta;
	e->dt_ns = add_i64(e->dt_ns, s->dt_ns);
	e->sum += s->sum;
	if (s->last_ns >= e->last_ns) {
		e->last = s->last;
		e->last_ns = s->last_ns;
	}
	if (s->have_minmax)
		minmax(e, s->min, s->max);
}

int rollup_add_sample(struct rollup *r, const struct sample_entry *se, int64_t t_ns, bool gauge)
{
	struct rollup_entry *e = entry_get(r, se->counter, se->prio, gauge), one;

	if (!e)
		return -ENOMEM;
	rollup_entry_of_sample(&one, se, t_ns, gauge);
	entry_merge(e, &one);
	return 0;
}

int rollup_merge(struct rollup *r, const struct rollup *src)
{
	for (size_t i = 0; i < src->n; i++) {
		struct rollup_entry *e = entry_get(r, src->e[i].counter, src->e[i].prio, src->e[i].gauge);

		if (!e)
			return -ENOMEM;
		entry_merge(e, &src->e[i]);
	}
	return 0;
}

static int put_f64(struct buf *b, double v)
{
	uint8_t out[8];
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(u >> (8 * i));
	return buf_append(b, out, sizeof(out));
}

static int get_f64(const uint8_t **p, const uint8_t *end, double *ret)
{
	uint64_t u = 0;

	if (end - *p < 8)
		return -EBADMSG;
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)(*p)[i] << (8 * i);
	*p += 8;
	memcpy(ret, &u, sizeof(*ret));
	return 0;
}

int rollup_encode(const struct rollup *r, struct buf *out)
{
	uint8_t hdr = ROLLUP_VERSION;
	int rc = buf_append(out, &hdr, 1);

	if (rc == 0)
		rc = codec_put_varint(out, r->n);
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		const struct rollup_entry *e = &r->e[i];
		bool zero = e->have_minmax && e->min == 0 && e->max == 0 && !signbit(e->min) &&
			    !signbit(e->max);
		bool same = e->have_minmax && !zero && memcmp(&e->min, &e->max, sizeof(e->min)) == 0;
		bool sumn = e->gauge && e->have_minmax && e->sum == (double)e->n * e->min &&
			    memcmp(&e->sum, &(double){ (double)e->n * e->min }, sizeof(e->sum)) == 0;
		uint8_t pf[2] = { e->prio, (uint8_t)((e->gauge ? F_GAUGE : 0) |
						      (e->have_minmax ? F_MINMAX : 0) |
						      (zero ? F_ZERO : 0) | (same ? F_SAME : 0) |
						      (sumn ? F_SUMN : 0)) };
		int64_t off = e->last_ns - r->t_ns;

		rc = codec_put_varint(out, e->counter);
		if (rc == 0)
			rc = buf_append(out, pf, 2);
		if (rc == 0)
			rc = codec_put_varint(out, e->n);
		if (rc == 0 && !e->gauge) {
			rc = codec_put_varint(out, e->n_valid);
			if (rc == 0)
				rc = codec_put_varint(out, e->delta);
			if (rc == 0)
				rc = codec_put_varint(out, (uint64_t)e->dt_ns);
		}
		if (rc == 0)
			rc = codec_put_varint(out, e->last);
		if (rc == 0)
			rc = codec_put_varint(out, (uint64_t)(off > 0 ? off : 0));
		if (rc == 0 && e->gauge && !sumn)
			rc = put_f64(out, e->sum);
		if (rc == 0 && e->have_minmax && !zero) {
			rc = put_f64(out, e->min);
			if (rc == 0 && !same)
				rc = put_f64(out, e->max);
		}
	}
	return rc;
}

int rollup_decode(const void *blob, size_t len, struct rollup *r)
{
	const uint8_t *p = blob, *end = p + len;
	uint64_t n, v;
	int rc;

	r->n = 0;
	if (len < 2 || p[0] != ROLLUP_VERSION)
		return -EBADMSG;
	p++;
	if ((rc = codec_get_varint(&p, end, &n)) < 0)
		return rc;
	if (n > len) /* every entry takes bytes */
		return -EBADMSG;
	if ((rc = reserve(r, n)) < 0)
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		struct rollup_entry e = { 0 };
		uint8_t pf[2];
		uint64_t c, off;

		if ((rc = codec_get_varint(&p, end, &c)) < 0)
			return rc;
		if (c > UINT32_MAX || end - p < 2)
			return -EBADMSG;
		memcpy(pf, p, 2);
		p += 2;
		if ((pf[1] & ~F_ALL) || ((pf[1] & (F_SAME | F_ZERO | F_SUMN)) && !(pf[1] & F_MINMAX)) ||
		    ((pf[1] & F_SAME) && (pf[1] & F_ZERO)) || ((pf[1] & F_SUMN) && !(pf[1] & F_GAUGE)))
			return -EBADMSG;
		e.counter = (uint32_t)c;
		e.prio = pf[0];
		e.gauge = pf[1] & F_GAUGE;
		e.have_minmax = pf[1] & F_MINMAX;
		if ((rc = codec_get_varint(&p, end, &v)) < 0)
			return rc;
		if (v > UINT32_MAX)
			return -EBADMSG;
		e.n = (uint32_t)v;
		if (!e.gauge) {
			if ((rc = codec_get_varint(&p, end, &v)) < 0)
				return rc;
			if (v > e.n)
				return -EBADMSG;
			e.n_valid = (uint32_t)v;
			if ((rc = codec_get_varint(&p, end, &e.delta)) < 0 ||
			    (rc = codec_get_varint(&p, end, &v)) < 0)
				return rc;
			if (v > INT64_MAX)
				return -EBADMSG;
			e.dt_ns = (int64_t)v;
		}
		if ((rc = codec_get_varint(&p, end, &e.last)) < 0 ||
		    (rc = codec_get_varint(&p, end, &off)) < 0)
			return rc;
		if (off > (uint64_t)ROLLUP_1H_NS * 24)
			return -EBADMSG;
		e.last_ns = r->t_ns + (int64_t)off;
		if (e.gauge && !(pf[1] & F_SUMN) && (rc = get_f64(&p, end, &e.sum)) < 0)
			return rc;
		if (e.have_minmax && !(pf[1] & F_ZERO)) {
			if ((rc = get_f64(&p, end, &e.min)) < 0)
				return rc;
			e.max = e.min;
			if (!(pf[1] & F_SAME) && (rc = get_f64(&p, end, &e.max)) < 0)
				return rc;
		}
		if (pf[1] & F_SUMN)
			e.sum = (double)e.n * e.min;
		if (r->n && entry_cmp(r->e[r->n - 1].counter, r->e[r->n - 1].prio, e.counter, e.prio) >= 0)
			return -EBADMSG; /* sorted and unique, as written */
		r->e[r->n++] = e;
	}
	return p == end ? 0 : -EBADMSG;
}

/* --- blocks ------------------------------------------------------------------------------- */

static uint64_t f64_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double bits_f64(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static int put_u64be(struct buf *b, uint64_t v)
{
	uint8_t out[8];

	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (56 - 8 * i));
	return buf_append(b, out, sizeof(out));
}

static int get_u64be(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;

	if (end - *p < 8)
		return -EBADMSG;
	for (int i = 0; i < 8; i++)
		v = v << 8 | (*p)[i];
	*p += 8;
	*ret = v;
	return 0;
}

/* What a value is predicted from: the same slot's entry before (times, counts: every counter of
 * a port is read together) or the same counter's slot before (amounts). */
struct slot_prev {
	uint64_t n, n_valid, dt_ns, off;
};

struct key_prev {
	uint64_t delta, last, step, sum, min, max;
};

struct bkey {
	uint32_t counter;
	uint8_t prio;
	bool gauge;
};

/* (the kind too: a counter whose kind changed within a block keeps both) */
static int bkey_cmp(const void *a, const void *b)
{
	const struct bkey *x = a, *y = b;
	int c = entry_cmp(x->counter, x->prio, y->counter, y->prio);

	return c ? c : (int)x->gauge - (int)y->gauge;
}

/* The body before compression: slots, the union of their keys, then per key and slot the
 * values as residuals (zigzag varints; doubles XOR the counter's slot before, 8 bytes big
 * endian, so that what repeats is 0 bytes for deflate). */
static int block_body(const struct rollup *slots, size_t nslots, int64_t t0, int64_t width,
		      struct buf *out)
{
	struct bkey *keys = NULL;
	struct slot_prev *sp = NULL;
	size_t *pos = NULL, nkeys = 0, total = 0;
	int r = 0;

	for (size_t s = 0; s < nslots; s++)
		total += slots[s].n;
	keys = malloc((total ? total : 1) * sizeof(*keys));
	sp = calloc(nslots ? nslots : 1, sizeof(*sp));
	pos = calloc(nslots ? nslots : 1, sizeof(*pos));
	if (!keys || !sp || !pos) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < nslots; s++)
		for (size_t i = 0; i < slots[s].n; i++)
			keys[nkeys++] = (struct bkey){ slots[s].e[i].counter, slots[s].e[i].prio,
						       slots[s].e[i].gauge };
	qsort(keys, nkeys, sizeof(*keys), bkey_cmp);
	{
		size_t u = 0;

		for (size_t i = 0; i < nkeys; i++)
			if (u == 0 || bkey_cmp(&keys[u - 1], &keys[i]) != 0)
				keys[u++] = keys[i];
		nkeys = u;
	}
	r = codec_put_varint(out, nslots);
	for (size_t s = 0; r == 0 && s < nslots; s++)
		r = codec_put_varint(out, (uint64_t)((slots[s].t_ns - t0) / width));
	if (r == 0)
		r = codec_put_varint(out, nkeys);
	for (size_t k = 0; r == 0 && k < nkeys; k++) {
		uint8_t pg[2] = { keys[k].prio, keys[k].gauge };

		r = codec_put_varint(out, keys[k].counter - (k ? keys[k - 1].counter : 0));
		if (r == 0)
			r = buf_append(out, pg, 2);
	}
	for (size_t k = 0; r == 0 && k < nkeys; k++) {
		struct key_prev kp = { 0 };

		for (size_t s = 0; r == 0 && s < nslots; s++) {
			const struct rollup *sl = &slots[s];
			const struct rollup_entry *e = NULL;
			uint64_t off, step;

			/* slots' entries are sorted, so each slot's next is at pos[s] */
			if (pos[s] < sl->n && sl->e[pos[s]].counter == keys[k].counter &&
			    sl->e[pos[s]].prio == keys[k].prio && sl->e[pos[s]].gauge == keys[k].gauge)
				e = &sl->e[pos[s]++];
			if (!e || e->n == 0) {
				r = codec_put_varint(out, codec_zigzag(0 - sp[s].n)); /* n 0: not in this slot */
				sp[s].n = 0;
				continue;
			}
			off = (uint64_t)(e->last_ns - sl->t_ns > 0 ? e->last_ns - sl->t_ns : 0);
			step = e->last - kp.last;
			r = codec_put_varint(out, codec_zigzag(e->n - sp[s].n));
			if (r == 0)
				r = buf_append(out, &(uint8_t){ e->have_minmax }, 1);
			if (r == 0 && !e->gauge) {
				r = codec_put_varint(out, codec_zigzag(e->n_valid - sp[s].n_valid));
				if (r == 0)
					r = codec_put_varint(out, codec_zigzag(e->delta - kp.delta));
				if (r == 0)
					r = codec_put_varint(out, codec_zigzag((uint64_t)e->dt_ns - sp[s].dt_ns));
				sp[s].n_valid = e->n_valid;
				sp[s].dt_ns = (uint64_t)e->dt_ns;
				kp.delta = e->delta;
			}
			if (r == 0)
				r = codec_put_varint(out, codec_zigzag(step - kp.step));
			if (r == 0)
				r = codec_put_varint(out, codec_zigzag(off - sp[s].off));
			if (r == 0 && e->gauge)
				r = put_u64be(out, f64_bits(e->sum) ^ kp.sum);
			if (r == 0 && e->have_minmax) {
				r = put_u64be(out, f64_bits(e->min) ^ kp.min);
				if (r == 0)
					r = put_u64be(out, f64_bits(e->max) ^ kp.max);
				kp.min = f64_bits(e->min);
				kp.max = f64_bits(e->max);
			}
			sp[s].n = e->n;
			sp[s].off = off;
			kp.step = step;
			kp.last = e->last;
			kp.sum = f64_bits(e->sum);
		}
	}
out:
	free(keys);
	free(sp);
	free(pos);
	return r;
}

int rollup_block_encode(const struct rollup *slots, size_t nslots, int64_t t0, int64_t width,
			struct buf *out)
{
	struct buf body;
	uLongf clen;
	uint8_t hdr = ROLLUP_BLOCK_VERSION;
	size_t at;
	int r;

	for (size_t s = 0; s < nslots; s++)
		if (slots[s].t_ns < t0 || (slots[s].t_ns - t0) % width ||
		    (slots[s].t_ns - t0) / width >= ROLLUP_BLOCK_MAX_SLOTS ||
		    (s && slots[s].t_ns <= slots[s - 1].t_ns))
			return -EINVAL;
	buf_init(&body);
	if ((r = block_body(slots, nslots, t0, width, &body)) < 0)
		goto out;
	clen = compressBound((uLong)body.len);
	if ((r = buf_append(out, &hdr, 1)) < 0 || (r = codec_put_varint(out, body.len)) < 0)
		goto out;
	at = out->len;
	if ((r = buf_reserve(out, clen)) < 0)
		goto out;
	if (compress2((Bytef *)out->data + at, &clen, (const Bytef *)body.data, (uLong)body.len,
		      Z_DEFAULT_COMPRESSION) != Z_OK) {
		r = -ENOMEM;
		goto out;
	}
	out->len = at + clen;
out:
	buf_fini(&body);
	return r;
}

int rollup_block_decode(const void *blob, size_t len, int64_t t0, int64_t width,
			struct rollup **ret, size_t *ret_n)
{
	const uint8_t *p = blob, *end = p + len, *q, *qend;
	struct rollup *slots = NULL;
	struct bkey *keys = NULL;
	struct slot_prev *sp = NULL;
	uint8_t *body = NULL;
	uint64_t blen, nslots = 0, nkeys, v;
	uLongf got;
	int r = -EBADMSG;

	*ret = NULL;
	*ret_n = 0;
	if (len < 2 || p[0] != ROLLUP_BLOCK_VERSION)
		return -EBADMSG;
	p++;
	if (codec_get_varint(&p, end, &blen) < 0 || blen > ROLLUP_BLOCK_MAX_BODY)
		return -EBADMSG;
	if (!(body = malloc(blen ? blen : 1)))
		return -ENOMEM;
	got = (uLongf)blen;
	if (uncompress(body, &got, p, (uLong)(end - p)) != Z_OK || got != blen)
		goto out;
	q = body;
	qend = body + blen;
	if (codec_get_varint(&q, qend, &nslots) < 0 || nslots > ROLLUP_BLOCK_MAX_SLOTS)
		goto out;
	slots = calloc(nslots ? nslots : 1, sizeof(*slots));
	sp = calloc(nslots ? nslots : 1, sizeof(*sp));
	if (!slots || !sp) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t s = 0; s < nslots; s++) {
		if (codec_get_varint(&q, qend, &v) < 0 || v >= ROLLUP_BLOCK_MAX_SLOTS ||
		    (s && t0 + (int64_t)v * width <= slots[s - 1].t_ns))
			goto out;
		rollup_init(&slots[s], t0 + (int64_t)v * width);
	}
	if (codec_get_varint(&q, qend, &nkeys) < 0 || nkeys > (uint64_t)(qend - q))
		goto out;
	if (!(keys = malloc((nkeys ? nkeys : 1) * sizeof(*keys)))) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t k = 0; k < nkeys; k++) {
		uint64_t c;

		if (codec_get_varint(&q, qend, &v) < 0 || qend - q < 2)
			goto out;
		c = (k ? keys[k - 1].counter : 0) + v;
		if (c > UINT32_MAX || q[1] > 1)
			goto out;
		keys[k] = (struct bkey){ (uint32_t)c, q[0], q[1] };
		if (k && bkey_cmp(&keys[k - 1], &keys[k]) >= 0)
			goto out; /* sorted and unique, as written */
		q += 2;
	}
	for (uint64_t k = 0; k < nkeys; k++) {
		struct key_prev kp = { 0 };

		for (uint64_t s = 0; s < nslots; s++) {
			struct rollup_entry e = { .counter = keys[k].counter, .prio = keys[k].prio,
						  .gauge = keys[k].gauge };
			uint64_t off, step;

			if (codec_get_varint(&q, qend, &v) < 0)
				goto out;
			e.n = (uint32_t)(codec_unzigzag(v) + sp[s].n);
			if (codec_unzigzag(v) + sp[s].n > UINT32_MAX)
				goto out;
			sp[s].n = e.n;
			if (e.n == 0)
				continue;
			if (q >= qend || *q > 1)
				goto out;
			e.have_minmax = *q++;
			if (!e.gauge) {
				if (codec_get_varint(&q, qend, &v) < 0)
					goto out;
				sp[s].n_valid += codec_unzigzag(v);
				if (sp[s].n_valid > e.n)
					goto out;
				e.n_valid = (uint32_t)sp[s].n_valid;
				if (codec_get_varint(&q, qend, &v) < 0)
					goto out;
				e.delta = kp.delta += codec_unzigzag(v);
				if (codec_get_varint(&q, qend, &v) < 0)
					goto out;
				sp[s].dt_ns += codec_unzigzag(v);
				if (sp[s].dt_ns > INT64_MAX)
					goto out;
				e.dt_ns = (int64_t)sp[s].dt_ns;
			}
			if (codec_get_varint(&q, qend, &v) < 0)
				goto out;
			step = codec_unzigzag(v) + kp.step;
			e.last = kp.last + step;
			if (codec_get_varint(&q, qend, &v) < 0)
				goto out;
			off = codec_unzigzag(v) + sp[s].off;
			if (off > (uint64_t)width)
				goto out;
			e.last_ns = slots[s].t_ns + (int64_t)off;
			if (e.gauge) {
				if (get_u64be(&q, qend, &v) < 0)
					goto out;
				e.sum = bits_f64(v ^ kp.sum);
			}
			if (e.have_minmax) {
				if (get_u64be(&q, qend, &v) < 0)
					goto out;
				kp.min ^= v;
				if (get_u64be(&q, qend, &v) < 0)
					goto out;
				kp.max ^= v;
				e.min = bits_f64(kp.min);
				e.max = bits_f64(kp.max);
			}
			sp[s].off = off;
			kp.step = step;
			kp.last = e.last;
			kp.sum = f64_bits(e.sum);
			if (slots[s].n && slots[s].e[slots[s].n - 1].counter == e.counter &&
			    slots[s].e[slots[s].n - 1].prio == e.prio)
				goto out; /* one entry a counter and priority in a bucket */
			if (reserve(&slots[s], slots[s].n + 1) < 0) {
				r = -ENOMEM;
				goto out;
			}
			slots[s].e[slots[s].n++] = e;
		}
	}
	if (q != qend)
		goto out;
	*ret = slots;
	*ret_n = nslots;
	slots = NULL;
	r = 0;
out:
	if (slots)
		for (uint64_t s = 0; s < nslots; s++)
			rollup_fini(&slots[s]);
	free(slots);
	free(keys);
	free(sp);
	free(body);
	return r;
}
