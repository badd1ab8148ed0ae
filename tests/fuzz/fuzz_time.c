/* libFuzzer target: the one-value parsers, each given the whole input as a string.
 *   lib/timeutil.c  tu_parse_duration, tu_parse_rfc3339, tu_parse_time, tu_format_rfc3339
 *   lib/conf.c      conf_parse_size, conf_parse_bool (configuration values, -o overrides)
 *   lib/log.c       log_parse_level, log_parse_target
 *   lib/httpd.c     net_parse_listen (listen = ADDRESS:PORT, numeric only: no resolver)
 *   lib/probeops.c  probe_op_parse, probe_op_valid; lib/params.c dcqcn_param_find
 *   daemon/         change_kind_parse, role_parse
 * These are what ?from=, ?to=, ?step=, ?window=, ?op=, ?kind= and configuration values go
 * through.  Invariants: a duration is >= 0 and reads back the same from its "%lldns" form; a
 * time from RFC 3339 at or after the epoch formats and reads back to itself (truncated to the
 * microsecond, the format's precision); a relative time is not after now; a size and a bool read
 * back from their canonical text; a parsed name formats back to the text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

#include "daemon/changes.h"
#include "daemon/tokens.h"
#include "lib/conf.h"
#include "lib/httpd.h"
#include "lib/log.h"
#include "lib/params.h"
#include "lib/probeops.h"
#include "lib/timeutil.h"

#define NOW ((int64_t)1764514195 * NSEC_PER_SEC + 123456789)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_duration(const char *s)
{
	int64_t d, d2;
	char buf[64];

	if (tu_parse_duration(s, &d) < 0)
		return;
	if (d < 0)
		abort();
	snprintf(buf, sizeof(buf), "%" PRId64 "ns", d);
	if (tu_parse_duration(buf, &d2) < 0 || d2 != d)
		abort();
}

static void check_rfc3339(const char *s)
{
	int64_t t, t2, t3;
	char buf[64];

	if (tu_parse_rfc3339(s, &t) < 0)
		return;
	/* the time parser takes every RFC 3339 text the same way, but refuses the times before
	 * 1970 (an operator's time is after it: 0 means none) */
	if (t < 0 ? tu_parse_time(s, NOW, &t3) != -ERANGE
		  : tu_parse_time(s, NOW, &t3) < 0 || t3 != t)
		abort();
	if (t < 0)
		return; /* an offset before 1970-01-01T00:00:00Z: nothing formats those */
	tu_format_rfc3339(t, buf, sizeof(buf));
	if (tu_parse_rfc3339(buf, &t2) < 0 || t2 != t - t % NSEC_PER_USEC)
		abort();
}

static void check_time(const char *s)
{
	int64_t t;

	if (tu_parse_time(s, NOW, &t) < 0)
		return;
	if (s[0] == '-' && t > NOW)
		abort();
	if (!strcmp(s, "now") && t != NOW)
		abort();
}

static void check_size(const char *s)
{
	uint64_t v, v2;
	char buf[32];

	if (conf_parse_size(s, &v) < 0)
		return;
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	if (conf_parse_size(buf, &v2) < 0 || v2 != v)
		abort();
}

static void check_names(const char *s)
{
	struct sockaddr_storage ss;
	struct rf_err e = { 0 };
	enum change_kind k;
	enum probe_op op;
	enum log_target tg;
	enum role role;
	int lvl;
	bool b, b2;

	if (conf_parse_bool(s, &b) == 0 && (conf_parse_bool(b ? "true" : "false", &b2) < 0 || b2 != b))
		abort();
	if (log_parse_level(s, &lvl) == 0 && (lvl < LOG_EMERG || lvl > LOG_DEBUG))
		abort();
	log_parse_target(s, &tg);
	if (probe_op_parse(s, &op) == 0 && (strcmp(probe_op_name(op), s) || !probe_op_valid(s)))
		abort();
	if (change_kind_parse(s, &k) == 0 && strcmp(change_kind_name(k), s))
		abort();
	if (role_parse(s, &role) == 0 && strcmp(role_name(role), s))
		abort();
	if (dcqcn_param_find(s) && strcmp(dcqcn_param_find(s)->name, s))
		abort();
	if (net_parse_listen(s, "listen", &ss, &b, &e) < 0 && !e.code[0])
		abort(); /* a refusal says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0'; /* a value is a C string: an embedded NUL ends it, as it would in a query */
	check_duration(s);
	check_rfc3339(s);
	check_time(s);
	check_size(s);
	check_names(s);
	free(s);
	return 0;
}
