/* Checked string helpers: see strutil.h. */
#include <stdlib.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/strutil.h"

int str_fmt(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, size, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (size)
			dst[0] = '\0';
		return -EINVAL;
	}
	return (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int str_parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;
	size_t n = 0;
	bool big = false;

	if (!s || !*s || (s[0] == '0' && s[1]))
		return -EINVAL;
	for (; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9')
			return -EINVAL;
		/* keep reading after an overflow: "99999999999999999999x" is not a number at all */
		big |= __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(s[n] - '0'), &v);
	}
	if (big || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int str_copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (!size)
		return -E2BIG;
	if (n >= size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -E2BIG;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

char *str_slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (64L << 20) &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		*ret_len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
		if (!errno)
			errno = EFBIG;
	}
	fclose(f);
	return buf;
}
