/* Growable buffer: see buf.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

void buf_init(struct buf *b)
{
	memset(b, 0, sizeof(*b));
}

void buf_fini(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data)
		b->data[0] = '\0';
}

int buf_reserve(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t ncap;
	char *n;

	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap < need)
		ncap *= 2;
	n = realloc(b->data, ncap);
	if (!n) {
		b->oom = true;
		return -ENOMEM;
	}
	b->data = n;
	b->cap = ncap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
	if (buf_reserve(b, len) < 0)
		return -ENOMEM;
	if (len) /* (data may be NULL then: an empty buf's) */
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	if (buf_reserve(b, 64) < 0)
		return -ENOMEM;
	va_copy(aq, ap);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, aq);
	va_end(aq);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= b->cap - b->len) {
		if (buf_reserve(b, (size_t)n) < 0)
			return -ENOMEM;
		n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		if (n < 0)
			return -EINVAL;
	}
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *buf_steal(struct buf *b, size_t *ret_len)
{
	char *d = b->data;

	if (!d)
		d = strdup("");
	if (ret_len)
		*ret_len = b->len;
	buf_init(b);
	return d;
}
