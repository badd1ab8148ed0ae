/* Sample row encoding: see codec.h. */
#include <errno.h>
#include <stdlib.h>

#include "daemon/codec.h"
#include "daemon/delta.h"

#define SAME_DT 0x80

int codec_put_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return buf_append(b, tmp, n);
}

int codec_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t c;

		if (*p >= end)
			return -EBADMSG;
		c = *(*p)++;
		if (shift == 63 && (c & 0x7e))
			return -EBADMSG;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

int codec_encode(const struct sample_entry *e, size_t n, struct buf *out)
{
	int64_t last_dt = -1;
	uint8_t hdr = CODEC_VERSION;
	int r = buf_append(out, &hdr, 1);

	if (r == 0)
		r = codec_put_varint(out, n);
	for (size_t i = 0; i < n && r == 0; i++) {
		uint8_t pf[2] = { e[i].prio, (uint8_t)(e[i].flags & 0x7f) };
		bool valid = e[i].flags & DELTA_VALID;

		if (valid && e[i].dt_ns == last_dt)
			pf[1] |= SAME_DT;
		r = codec_put_varint(out, e[i].counter);
		if (r == 0)
			r = buf_append(out, pf, 2);
		if (r == 0)
			r = codec_put_varint(out, e[i].raw);
		if (r == 0 && valid)
			r = codec_put_varint(out, e[i].delta);
		if (r == 0 && valid && !(pf[1] & SAME_DT)) {
			r = codec_put_varint(out, (uint64_t)e[i].dt_ns);
			last_dt = e[i].dt_ns;
		}
	}
	return r;
}

/* The entries of a full row after its version byte. */
static int decode_full(const uint8_t *p, const uint8_t *end,
		       int (*fn)(const struct sample_entry *e, void *ctx), void *ctx)
{
	int64_t last_dt = -1;
	uint64_t n, v;

	if (codec_get_varint(&p, end, &n) < 0 || n > (uint64_t)(end - p))
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++) {
		struct sample_entry e = { 0 };
		int r;

		if (codec_get_varint(&p, end, &v) < 0 || v > UINT32_MAX || end - p < 2)
			return -EBADMSG;
		e.counter = (uint32_t)v;
		e.prio = *p++;
		e.flags = *p++;
		if (codec_get_varint(&p, end, &e.raw) < 0)
			return -EBADMSG;
		if (e.flags & DELTA_VALID) {
			if (codec_get_varint(&p, end, &e.delta) < 0)
				return -EBADMSG;
			if (e.flags & SAME_DT) {
				if (last_dt < 0)
					return -EBADMSG;
				e.dt_ns = last_dt;
			} else {
				if (codec_get_varint(&p, end, &v) < 0 || v > INT64_MAX)
					return -EBADMSG;
				e.dt_ns = last_dt = (int64_t)v;
			}
		}
		e.flags &= 0x7f;
		r = fn(&e, ctx);
		if (r)
			return r;
	}
	return p == end ? 0 : -EBADMSG;
}

int codec_decode(const void *blob, size_t len,
		 int (*fn)(const struct sample_entry *e, void *ctx), void *ctx)
{
	const uint8_t *p = blob;

	if (len >= 2 && p[0] == CODEC_VERSION)
		return decode_full(p + 1, p + len, fn, ctx);
	if (len >= 3 && p[0] == CODEC_VERSION_2 && p[1] == CODEC_DETACHED)
		return decode_full(p + 2, p + len, fn, ctx);
	if (len >= 2 && p[0] == CODEC_VERSION_2 && p[1] == CODEC_NEXT)
		return -ESRCH; /* needs the row before it: codec_decode_row */
	return -EBADMSG;
}

/* --- rows that follow another (codec.h) ---------------------------------------------------- */

void codec_chain_init(struct codec_chain *c)
{
	*c = (struct codec_chain){ 0 };
}

void codec_chain_fini(struct codec_chain *c)
{
	free(c->e);
	free(c->rdiff);
	*c = (struct codec_chain){ 0 };
}

void codec_chain_reset(struct codec_chain *c)
{
	c->t_ns = 0;
	c->n = 0;
}

static int chain_reserve(struct codec_chain *c, size_t n)
{
	struct sample_entry *e;
	uint64_t *d;
	size_t cap;

	if (n <= c->cap)
		return 0;
	cap = c->cap ? c->cap : 32;
	while (cap < n)
		cap *= 2;
	if (!(e = realloc(c->e, cap * sizeof(*e))))
		return -ENOMEM;
	c->e = e;
	if (!(d = realloc(c->rdiff, cap * sizeof(*d))))
		return -ENOMEM;
	c->rdiff = d;
	c->cap = cap;
	return 0;
}

uint64_t codec_zigzag(uint64_t d)
{
	int64_t v = (int64_t)d;

	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

uint64_t codec_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* The factor from raw steps to deltas that the entry before showed (port_xmit_data counts
 * 4-byte words and its deltas are bytes); 1 when it showed none. */
static uint64_t chain_scale(const struct codec_chain *c, size_t i)
{
	const struct sample_entry *b = &c->e[i];
	uint64_t d = c->rdiff[i];

	if (!(b->flags & DELTA_VALID) || d == 0 || b->delta < d || b->delta % d)
		return 1;
	return b->delta / d;
}

int codec_chain_push(struct codec_chain *c, int64_t t_ns, const struct sample_entry *e, size_t n,
		     bool next)
{
	int r;

	if (next && n != c->n)
		return -EINVAL;
	if ((r = chain_reserve(c, n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		c->rdiff[i] = next ? e[i].raw - c->e[i].raw : 0;
		c->e[i] = e[i];
		c->e[i].flags &= 0x7f;
	}
	c->n = (uint32_t)n;
	c->t_ns = t_ns;
	return 0;
}

/* Values where most are 0: a token is a varint count of zeros, then the varint of the next
 * non-zero value less one; zeros after the last non-zero value are not written. */
struct zrun {
	uint64_t zeros;
	uint64_t ntokens;
};

static int zrun_put(struct zrun *z, struct buf *out, uint64_t v)
{
	int r;

	if (v == 0) {
		z->zeros++;
		return 0;
	}
	if ((r = codec_put_varint(out, z->zeros)) == 0)
		r = codec_put_varint(out, v - 1);
	z->zeros = 0;
	z->ntokens++;
	return r;
}

struct zget {
	const uint8_t *p, *end;
	uint64_t zeros, value, ntokens;
	bool have_value;
};

static int zrun_get(struct zget *z, uint64_t *ret)
{
	uint64_t zeros, v;

	if (z->zeros) {
		z->zeros--;
		*ret = 0;
		return 0;
	}
	if (z->have_value) {
		z->have_value = false;
		*ret = z->value;
		return 0;
	}
	if (z->ntokens == 0) {
		*ret = 0; /* the zeros after the last token */
		return 0;
	}
	if (codec_get_varint(&z->p, z->end, &zeros) < 0 || codec_get_varint(&z->p, z->end, &v) < 0 ||
	    v == UINT64_MAX)
		return -EBADMSG;
	z->ntokens--;
	if (zeros) {
		z->zeros = zeros - 1;
		z->value = v + 1;
		z->have_value = true;
		*ret = 0;
	} else {
		*ret = v + 1;
	}
	return 0;
}

int codec_encode_next(const struct codec_chain *c, int64_t t_ns, const struct sample_entry *e,
		      size_t n, struct buf *out)
{
	uint8_t hdr[2] = { CODEC_VERSION_2, CODEC_NEXT };
	struct buf body;
	struct zrun z = { 0 };
	uint64_t gap = (uint64_t)(t_ns - c->t_ns);
	int r;

	if (!c->t_ns || t_ns <= c->t_ns || n != c->n || n == 0)
		return -EAGAIN;
	for (size_t i = 0; i < n; i++)
		if (e[i].counter != c->e[i].counter || e[i].prio != c->e[i].prio)
			return -EAGAIN;
	buf_init(&body);
	r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct sample_entry *b = &c->e[i];
		uint64_t step = e[i].raw - b->raw;

		r = zrun_put(&z, &body, (uint64_t)((e[i].flags ^ b->flags) & 0x7f));
		if (r == 0)
			r = zrun_put(&z, &body, codec_zigzag(step - c->rdiff[i]));
		if (r == 0 && (e[i].flags & DELTA_VALID)) {
			r = zrun_put(&z, &body, codec_zigzag(e[i].delta - chain_scale(c, i) * step));
			if (r == 0)
				r = zrun_put(&z, &body, codec_zigzag((uint64_t)e[i].dt_ns - gap));
		}
	}
	if (r == 0)
		r = buf_append(out, hdr, sizeof(hdr));
	if (r == 0)
		r = codec_put_varint(out, gap);
	if (r == 0)
		r = codec_put_varint(out, n);
	if (r == 0)
		r = codec_put_varint(out, z.ntokens);
	if (r == 0)
		r = buf_append(out, body.data, body.len);
	buf_fini(&body);
	return r;
}

int codec_encode_detached(const struct sample_entry *e, size_t n, struct buf *out)
{
	uint8_t hdr = CODEC_VERSION_2;
	size_t at = out->len;
	int r = buf_append(out, &hdr, 1);

	/* a full row, its version byte replaced by 2, DETACHED */
	if (r == 0)
		r = codec_encode(e, n, out);
	if (r == 0)
		out->data[at + 1] = CODEC_DETACHED;
	return r;
}

struct push_ctx {
	struct sample_entry *e;
	size_t n, cap;
};

static int collect_fn(const struct sample_entry *e, void *arg)
{
	struct push_ctx *p = arg;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct sample_entry *ne = realloc(p->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		p->e = ne;
		p->cap = cap;
	}
	p->e[p->n++] = *e;
	return 0;
}

static int decode_next(struct codec_chain *c, int64_t t_ns, const uint8_t *p, const uint8_t *end,
		       struct sample_entry *e)
{
	struct zget z = { 0 };
	uint64_t gap, n, v;

	if (codec_get_varint(&p, end, &gap) < 0 || codec_get_varint(&p, end, &n) < 0 ||
	    codec_get_varint(&p, end, &z.ntokens) < 0)
		return -EBADMSG;
	if (gap == 0 || gap > INT64_MAX)
		return -EBADMSG;
	if (!c->t_ns || (uint64_t)t_ns - (uint64_t)c->t_ns != gap || n != c->n)
		return -ESRCH; /* not the row written before it (pruned, or read from mid-chain) */
	if (z.ntokens > (uint64_t)(end - p))
		return -EBADMSG;
	z.p = p;
	z.end = end;
	for (size_t i = 0; i < n; i++) {
		const struct sample_entry *b = &c->e[i];
		uint64_t step;

		e[i] = (struct sample_entry){ .counter = b->counter, .prio = b->prio };
		if (zrun_get(&z, &v) < 0 || v > 0x7f)
			return -EBADMSG;
		e[i].flags = (uint8_t)(b->flags ^ v);
		if (zrun_get(&z, &v) < 0)
			return -EBADMSG;
		step = codec_unzigzag(v) + c->rdiff[i];
		e[i].raw = b->raw + step;
		if (e[i].flags & DELTA_VALID) {
			if (zrun_get(&z, &v) < 0)
				return -EBADMSG;
			e[i].delta = codec_unzigzag(v) + chain_scale(c, i) * step;
			if (zrun_get(&z, &v) < 0)
				return -EBADMSG;
			v = codec_unzigzag(v) + gap;
			if (v == 0 || v > INT64_MAX)
				return -EBADMSG; /* a delta's interval is positive */
			e[i].dt_ns = (int64_t)v;
		}
	}
	return z.ntokens == 0 && !z.zeros && !z.have_value && z.p == z.end ? 0 : -EBADMSG;
}

int codec_decode_row(struct codec_chain *c, int64_t t_ns, const void *blob, size_t len,
		     int (*fn)(const struct sample_entry *e, void *ctx), void *ctx)
{
	const uint8_t *p = blob, *end = p + len;
	struct push_ctx pc = { 0 };
	int r;

	if (len >= 2 && p[0] == CODEC_VERSION_2 && p[1] == CODEC_NEXT) {
		if (!c->t_ns || c->n == 0)
			return -ESRCH;
		if (!(pc.e = malloc(c->n * sizeof(*pc.e))))
			return -ENOMEM;
		pc.n = c->n;
		r = decode_next(c, t_ns, p + 2, end, pc.e);
		if (r == 0)
			r = codec_chain_push(c, t_ns, pc.e, pc.n, true);
	} else if (len >= 2 && p[0] == CODEC_VERSION) {
		/* a full row: the chain starts again from it */
		r = decode_full(p + 1, end, collect_fn, &pc);
		if (r == 0)
			r = codec_chain_push(c, t_ns, pc.e, pc.n, false);
		else if (r != -ENOMEM)
			codec_chain_reset(c);
	} else {
		/* detached (written late, between rows of a chain), or not a row */
		free(pc.e);
		return codec_decode(blob, len, fn, ctx);
	}
	for (size_t i = 0; r == 0 && i < pc.n; i++)
		r = fn(&pc.e[i], ctx);
	free(pc.e);
	return r;
}

static int count_fn(const struct sample_entry *e, void *ctx)
{
	(void)e;
	(*(int *)ctx)++;
	return 0;
}

int codec_count(const void *blob, size_t len)
{
	int n = 0;
	int r = codec_decode(blob, len, count_fn, &n);

	return r < 0 ? r : n;
}
