/* Errors: functions return 0 or a negative errno.  Where an operator will see the failure, the
 * caller also passes a struct rf_err that receives a stable code (e.g. "BAD_THRESHOLD_ORDER"),
 * a message, and where it applies the location of the problem (a JSON pointer like
 * "/samples/3/values/np_cnp_sent" or "file.conf:12").  errno becomes an HTTP status in
 * exactly one place: api_status_from_errno(). */
#ifndef ROCEFAB_ERR_H
#define ROCEFAB_ERR_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>

struct rf_err {
	int err;	   /* negative errno, 0 when unset */
	char code[40];	   /* stable code, "" when unset */
	char where[160];   /* JSON pointer, file:line, flag name; "" when none */
	char msg[512];	   /* human-readable, one line */
};

/* Fills e (which may be NULL) and returns -abs(err), so that callers can write
 *   return rf_err_set(e, -EINVAL, "BAD_VALUE", "/seq", "must be positive");  */
int rf_err_set(struct rf_err *e, int err, const char *code, const char *where, const char *fmt,
	       ...) __attribute__((format(printf, 5, 6)));
int rf_err_vset(struct rf_err *e, int err, const char *code, const char *where, const char *fmt,
		va_list ap) __attribute__((format(printf, 5, 0)));
void rf_err_clear(struct rf_err *e);
/* where becomes "prefix:where" (or "prefix" when where was empty), e.g. a file name. */
void rf_err_prefix_where(struct rf_err *e, const char *prefix);
/* "where: msg [CODE]" or "msg [CODE]", for logs and command-line tools. */
const char *rf_err_str(const struct rf_err *e, char *buf, size_t len);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
