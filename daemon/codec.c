/* Sample row encoding: see codec.h. */
#include <errno.h>

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

int codec_decode(const void *blob, size_t len,
		 int (*fn)(const struct sample_entry *e, void *ctx), void *ctx)
{
	const uint8_t *p = blob, *end = p + len;
	int64_t last_dt = -1;
	uint64_t n, v;

	if (len < 2 || p[0] != CODEC_VERSION)
		return -EBADMSG;
	p++;
	if (codec_get_varint(&p, end, &n) < 0 || n > len)
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
