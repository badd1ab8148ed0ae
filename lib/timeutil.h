/* Time helpers.  Inside rocefab a point in time is int64 nanoseconds since the Unix epoch
 * (CLOCK_REALTIME) and a duration is int64 nanoseconds.  REST shows RFC 3339 strings. */
#ifndef ROCEFAB_TIMEUTIL_H
#define ROCEFAB_TIMEUTIL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define NSEC_PER_USEC ((int64_t)1000)
#define NSEC_PER_MSEC ((int64_t)1000000)
#define NSEC_PER_SEC  ((int64_t)1000000000)

int64_t tu_now_ns(void);  /* CLOCK_REALTIME */
int64_t tu_mono_ns(void); /* CLOCK_MONOTONIC */
/* Sleeps until the CLOCK_MONOTONIC time t (or returns early with -EINTR on a signal). */
int tu_sleep_until_mono(int64_t t);

/* The times an int64 of nanoseconds since the epoch holds: 1677-09-21T00:12:43.145224192Z to
 * 2262-04-11T23:47:16.854775807Z.  A time or duration beyond them is -ERANGE, never wrapped. */
#define TU_MAX_TIME_TEXT "2262-04-11T23:47:16Z"

/* "1.5s", "250ms", "100us", "500ns", "2m", "1h", "1d"; a bare number means seconds.
 * Returns 0, -EINVAL (garbage, negative) or -ERANGE (2^63 ns, about 292 years, or more). */
int tu_parse_duration(const char *s, int64_t *ret_ns);
/* A duration (>= 0) as tu_parse_duration() takes it back, in the largest unit that holds it
 * whole: "14d", "6h", "2m", "90s", "250ms", "100us", "7ns", "0s".  Returns buf. */
char *tu_format_duration(int64_t ns, char *buf, size_t len);
/* 2026-11-30T14:49:55.123456Z (always UTC, microseconds).  Returns buf. */
char *tu_format_rfc3339(int64_t ns, char *buf, size_t len);
/* RFC 3339 with optional fraction and a Z or +hh:mm offset.  0, -EINVAL (not RFC 3339, no such
 * date) or -ERANGE (outside the int64 range above; times before 1970 are negative). */
int tu_parse_rfc3339(const char *s, int64_t *ret_ns);
/* A time argument as operators type it: "now", "-5m" (relative to now), Unix seconds
 * ("1764514195.5") or RFC 3339.  0, -EINVAL (none of those) or -ERANGE (before 1970, or after
 * TU_MAX_TIME_TEXT). */
int tu_parse_time(const char *s, int64_t now_ns, int64_t *ret_ns);
/* Whether tu_parse_time reads s relative to now ("now", "-5m"). */
bool tu_time_is_relative(const char *s);

#endif
