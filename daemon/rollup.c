/* Rollups: see rollup.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
