/* Time helpers: see timeutil.h. */
#include <ctype.h>
#include <errno.h>
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

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			double ns = v * units[i].mult;

			if (ns > 9.0e18)
				return -EINVAL;
			*ret_ns = (int64_t)llround(ns);
			return 0;
		}
	}
	return -EINVAL;
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
	int64_t frac = 0, scale = NSEC_PER_SEC, days;
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
	    oh > 23 || om > 59 || Y < 1970)
		return -EINVAL;
	if (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0))
		return -EINVAL;
	if (Y >= 2262)
		return -ERANGE; /* int64 nanoseconds end in April 2262 */
	/* days from civil (Howard Hinnant's algorithm), valid for the proleptic Gregorian calendar */
	{
		int y = Y - (M <= 2);
		int era = y / 400;
		int yoe = y - era * 400;
		int doy = (153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1;
		int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

		days = (int64_t)era * 146097 + doe - 719468;
	}
	*ret_ns = ((days * 86400 + h * 3600 + m * 60 + sec) - sign * (oh * 3600 + om * 60)) *
			  NSEC_PER_SEC +
		  frac;
	return 0;
}

int tu_parse_time(const char *s, int64_t now_ns, int64_t *ret_ns)
{
	char *end;
	double v;
	int64_t d;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "now") == 0) {
		*ret_ns = now_ns;
		return 0;
	}
	if (*s == '-') {
		if (tu_parse_duration(s + 1, &d) < 0)
			return -EINVAL;
		*ret_ns = now_ns - d;
		return 0;
	}
	/* RFC 3339: a 'T' between date and time, or the space RFC 3339 allows there */
	if (strchr(s, 'T') || strchr(s, 't') || (strlen(s) > 10 && s[4] == '-' && s[10] == ' '))
		return tu_parse_rfc3339(s, ret_ns);
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 9.0e9)
		return -EINVAL;
	*ret_ns = (int64_t)llround(v * 1e9);
	return 0;
}
