/* Rich error values: see err.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

int rf_err_vset(struct rf_err *e, int err, const char *code, const char *where, const char *fmt,
		va_list ap)
{
	if (err > 0)
		err = -err;
	if (err == 0)
		err = -EINVAL;
	if (!e)
		return err;
	e->err = err;
	snprintf(e->code, sizeof(e->code), "%s", code ? code : "");
	snprintf(e->where, sizeof(e->where), "%s", where ? where : "");
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	return err;
}

int rf_err_set(struct rf_err *e, int err, const char *code, const char *where, const char *fmt,
	       ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = rf_err_vset(e, err, code, where, fmt, ap);
	va_end(ap);
	return r;
}

void rf_err_clear(struct rf_err *e)
{
	if (e)
		memset(e, 0, sizeof(*e));
}

void rf_err_prefix_where(struct rf_err *e, const char *prefix)
{
	char where[sizeof(e->where)];
	int n;

	if (!e)
		return;
	n = snprintf(where, sizeof(where), "%s%s", prefix, e->where[0] ? ":" : "");
	if (n < 0 || (size_t)n >= sizeof(where))
		return;
	snprintf(where + n, sizeof(where) - (size_t)n, "%.*s", (int)(sizeof(where) - (size_t)n - 1),
		 e->where);
	memcpy(e->where, where, sizeof(where));
}

const char *rf_err_str(const struct rf_err *e, char *buf, size_t len)
{
	const char *msg = e->msg[0] ? e->msg : strerror(-e->err);

	if (e->where[0])
		snprintf(buf, len, "%s: %s%s%s%s", e->where, msg, e->code[0] ? " [" : "", e->code,
			 e->code[0] ? "]" : "");
	else
		snprintf(buf, len, "%s%s%s%s", msg, e->code[0] ? " [" : "", e->code,
			 e->code[0] ? "]" : "");
	return buf;
}
