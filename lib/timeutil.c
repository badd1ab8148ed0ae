/* Time helpers: see timeutil.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/timeutil.h"

int64_t tu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int64_t tu_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int tu_sleep_until_mono(int64_t t)
{
	struct timespec ts = { .tv_sec = t / NSEC_PER_SEC, .tv_nsec = t % NSEC_PER_SEC };
	int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);

	return r ? -r : 0;
}

/* 2^63 as a double: the first value above INT64_MAX (which a double cannot hold exactly). */
#define TWO_POW_63 9223372036854775808.0

/* The length of the plain decimal number s starts with: digits, without a leading zero but in
 * "0" itself, then optionally '.' and digits; 0 when it does not start with one.  What strtod
 * would take besides ("0x10", "1e3", "00", "inf") is not a number an operator writes. */
static size_t decimal_len(const char *s)
{
	size_t n = 0, m;

	if (!isdigit((unsigned char)s[0]) || (s[0] == '0' && isdigit((unsigned char)s[1])))
		return 0;
	while (isdigit((unsigned char)s[n]))
		n++;
	if (s[n] != '.')
		return n;
	for (m = n + 1; isdigit((unsigned char)s[m]); m++)
		;
	return m > n + 1 ? m : 0;
}

int tu_parse_duration(const char *s, int64_t *ret_ns)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {
		{ "ns", 1.0 },		  { "us", 1e3 },	  { "ms", 1e6 },
		{ "s", 1e9 },		  { "m", 60e9 },	  { "min", 60e9 },
		{ "h", 3600e9 },	  { "d", 86400e9 },	  { "", 1e9 },
	};
	char *end;
	double v;

	if (!s || !decimal_len(s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end != s + decimal_len(s) || isnan(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			double ns = v * units[i].mult;

			/* "1e400s" (strtod's ERANGE), "inf" and anything from 2^63 ns (292 years)
			 * up do not fit an int64: refused, never wrapped */
			if (errno == ERANGE || !isfinite(ns) || ns >= TWO_POW_63)
				return -ERANGE;
			*ret_ns = (int64_t)llround(ns);
			return 0;
		}
	}
	return -EINVAL;
}

char *tu_format_duration(int64_t ns, char *buf, size_t len)
{
	static const struct {
		int64_t ns;
		const char *unit;
	} units[] = {
		{ 86400 * NSEC_PER_SEC, "d" }, { 3600 * NSEC_PER_SEC, "h" }, { 60 * NSEC_PER_SEC, "m" },
		{ NSEC_PER_SEC, "s" },	       { NSEC_PER_MSEC, "ms" },	     { 1000, "us" },
	};

	if (ns <= 0) {
		/* (0 reads as seconds; a negative one is none, shown as the number it is) */
		snprintf(buf, len, ns ? "%" PRId64 "ns" : "0s", ns);
		return buf;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%" PRId64 "%s", ns / units[i].ns, units[i].unit);
			return buf;
		}
	snprintf(buf, len, "%" PRId64 "ns", ns);
	return buf;
}

char *tu_format_rfc3339(int64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / NSEC_PER_SEC);
	long us = (long)((ns % NSEC_PER_SEC) / NSEC_PER_USEC);
	struct tm tm;
	char base[32];

	if (us < 0) {
		sec -= 1;
		us += 1000000;
	}
	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06ldZ", base, us);
	return buf;
}

static int parse_digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

int tu_parse_rfc3339(const char *s, int64_t *ret_ns)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int Y, M, D, h, m, sec, oh = 0, om = 0;
	int64_t frac = 0, scale = NSEC_PER_SEC, days, secs, ns;
	const char *p = s;
	int sign = 0;

	if (parse_digits(&p, 4, &Y) || expect(&p, '-') || parse_digits(&p, 2, &M) ||
	    expect(&p, '-') || parse_digits(&p, 2, &D))
		return -EINVAL;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -EINVAL;
	p++;
	if (parse_digits(&p, 2, &h) || expect(&p, ':') || parse_digits(&p, 2, &m) ||
	    expect(&p, ':') || parse_digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p)) {
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
			p++;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		p++;
		if (parse_digits(&p, 2, &oh) || expect(&p, ':') || parse_digits(&p, 2, &om))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p || M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || m > 59 || sec > 60 ||
	    oh > 23 || om > 59)
		return -EINVAL;
	if (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0))
		return -EINVAL;
	/* days from civil (Howard Hinnant's algorithm), valid for the proleptic Gregorian calendar */
	{
		int y = Y - (M <= 2);
		int era = y / 400;
		int yoe = y - era * 400;
		int doy = (153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1;
		int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

		days = (int64_t)era * 146097 + doe - 719468;
	}
	/* seconds of years 0000-9999 fit an int64 easily; their nanoseconds do not (years after
	 * 2262 or before 1677 overflow): refused, never wrapped */
	secs = days * 86400 + h * 3600 + m * 60 + sec - sign * (oh * 3600 + om * 60);
	if (secs < 0 && frac > 0) {
		/* the earliest times are whole seconds short of INT64_MIN plus a fraction */
		secs++;
		frac -= NSEC_PER_SEC;
	}
	if (__builtin_mul_overflow(secs, NSEC_PER_SEC, &ns) || __builtin_add_overflow(ns, frac, &ns))
		return -ERANGE;
	*ret_ns = ns;
	return 0;
}

bool tu_time_is_relative(const char *s)
{
	return s && (!strcmp(s, "now") || *s == '-');
}

int tu_parse_time(const char *s, int64_t now_ns, int64_t *ret_ns)
{
	char *end;
	double v;
	int64_t d, t;
	int r;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "now") == 0) {
		t = now_ns;
	} else if (*s == '-') {
		if ((r = tu_parse_duration(s + 1, &d)) < 0)
			return r;
		if (__builtin_sub_overflow(now_ns, d, &t))
			return -ERANGE;
	} else if (strchr(s, 'T') || strchr(s, 't') ||
		   (strlen(s) > 10 && s[4] == '-' && s[10] == ' ')) {
		/* RFC 3339: a 'T' between date and time, or the space RFC 3339 allows there */
		if ((r = tu_parse_rfc3339(s, &t)) < 0)
			return r;
	} else {
		if (!decimal_len(s) || s[decimal_len(s)])
			return -EINVAL;
		errno = 0;
		v = strtod(s, &end);
		if (end == s || *end || isnan(v))
			return -EINVAL;
		if (errno == ERANGE || !isfinite(v) || v * 1e9 >= TWO_POW_63)
			return -ERANGE;
		t = (int64_t)llround(v * 1e9);
	}
	/* rocefab's times are after the epoch (0 stands for "none") */
	if (t < 0)
		return -ERANGE;
	*ret_ns = t;
	return 0;
}
