/* Checked string helpers: see strutil.h. */
#include <stdlib.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
	struct stat st;
	long n;

	if (!f)
		return NULL;
	errno = 0; /* (one left from before named no failure of ours) */
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		errno = EISDIR;
		return NULL;
	}
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

/* The length of the valid UTF-8 sequence s starts with; 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
	uint32_t cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* the NUL at the end stops here too */
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* The length of the control character s starts with (C0, DEL; C1 is U+0080-U+009F, two
 * bytes); 0 when it is not one. */
static size_t control_len(const unsigned char *s)
{
	if (s[0] < 0x20 || s[0] == 0x7f)
		return 1;
	return s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f ? 2 : 0;
}

const char *str_glob_open_bracket(const char *pat)
{
	for (const char *p = pat; *p; p++) {
		const char *q;

		if (*p == '\\') {
			if (!*++p)
				break;
			continue;
		}
		if (*p != '[')
			continue;
		/* a ']' first (after '!' or '^') is one of the set, not its end */
		q = p + 1 + (p[1] == '!' || p[1] == '^');
		if (*q == ']')
			q++;
		for (; *q && *q != ']'; q++) {
			const char *r = q + 2;

			/* as glibc's fnmatch: a '\\' escapes inside a set too, and a class
			 * ("[[:alpha:]]", a lowercase name), an equivalence class ("[[=a=]]") and
			 * a collating symbol ("[[.-.]]") hold a ']' of their own */
			if (q[0] == '\\' && q[1]) {
				q++;
			} else if (q[0] == '[' && q[1] == ':') {
				while (*r >= 'a' && *r <= 'z')
					r++;
				if (r[0] == ':' && r[1] == ']')
					q = r + 1;
			} else if (q[0] == '[' && (q[1] == '=' || q[1] == '.') && q[2]) {
				const char end[3] = { q[1], ']', '\0' };

				if ((r = strstr(q + 3, end)))
					q = r + 1;
			}
		}
		if (!*q)
			return p;
		p = q;
	}
	return NULL;
}

bool str_has_bidi_controls(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((p[0] == 0xd8 && p[1] == 0x9c) ||
		    (p[0] == 0xe2 && p[1] == 0x80 &&
		     (p[2] == 0x8e || p[2] == 0x8f || (p[2] >= 0xaa && p[2] <= 0xae))) ||
		    (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9))
			return true;
	return false;
}

bool str_is_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = control_len(p) ? 0 : utf8_seq(p);

		if (!n)
			return false;
		p += n;
	}
	return true;
}

void str_make_printable(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p;) {
		size_t n = control_len(p), k;

		if (n) {
			for (k = 0; k < n; k++)
				*p++ = '?';
		} else if ((n = utf8_seq(p))) {
			p += n;
		} else {
			*p++ = '?';
		}
	}
}

size_t str_utf8_prefix(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return n;
	n = max;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--; /* s[n], the first byte left out, continues a sequence begun before it */
	return n;
}

int str_natcmp_n(const char *a, size_t la, const char *b, size_t lb)
{
	const char *za = a + la, *zb = b + lb;

#define DIGIT(p, z) ((p) < (z) && *(p) >= '0' && *(p) <= '9')
	while (a < za && b < zb) {
		if (DIGIT(a, za) && DIGIT(b, zb)) {
			const char *ea, *eb;
			size_t na, nb;

			while (*a == '0' && DIGIT(a + 1, za))
				a++;
			while (*b == '0' && DIGIT(b + 1, zb))
				b++;
			for (ea = a; DIGIT(ea, za); ea++)
				;
			for (eb = b; DIGIT(eb, zb); eb++)
				;
			na = (size_t)(ea - a);
			nb = (size_t)(eb - b);
			if (na != nb)
				return na < nb ? -1 : 1;
			for (; a < ea; a++, b++)
				if (*a != *b)
					return *a < *b ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
#undef DIGIT
	return a < za ? 1 : b < zb ? -1 : 0;
}

int str_natcmp(const char *a, const char *b)
{
	return str_natcmp_n(a, strlen(a), b, strlen(b));
}
