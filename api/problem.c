/* Problem details: see problem.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/problem.h"
#include "lib/jsonutil.h"

unsigned api_status_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case EINVAL:
	case ERANGE:
	case EDOM:
	case EBADMSG:
	case EPROTO:
		return 400;
	case EPERM:
		return 401;
	case EACCES:
		return 403;
	case ENOENT:
	case ENODEV:
	case ESRCH:
		return 404;
	case EOPNOTSUPP:
		return 405;
	case EEXIST:
	case EUSERS: /* another agent holds the id */
	case EALREADY:
		return 409;
	case E2BIG:
	case EMSGSIZE:
	case EFBIG:
		return 413;
	case ENAMETOOLONG:
		return 414;
	case EMEDIUMTYPE:
		return 415;
	case EAGAIN:
	case EBUSY:
	case ESHUTDOWN:
		return 503;
	case ENOSPC:
		return 507;
	case ETIMEDOUT:
		return 504;
	default:
		return 500;
	}
}

const char *api_status_title(unsigned status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 507:
		return "Insufficient Storage";
	default:
		return "Internal Server Error";
	}
}

static const char *default_code(unsigned status)
{
	switch (status) {
	case 400:
		return "BAD_REQUEST";
	case 401:
		return "UNAUTHORIZED";
	case 403:
		return "FORBIDDEN";
	case 404:
		return "NOT_FOUND";
	case 405:
		return "METHOD_NOT_ALLOWED";
	case 409:
		return "CONFLICT";
	case 413:
		return "BODY_TOO_LARGE";
	case 414:
		return "URI_TOO_LONG";
	case 415:
		return "UNSUPPORTED_MEDIA_TYPE";
	case 429:
		return "RATE_LIMITED";
	case 431:
		return "HEADERS_TOO_LARGE";
	case 503:
		return "UNAVAILABLE";
	case 504:
		return "TIMEOUT";
	case 507:
		return "STORAGE_FULL";
	default:
		return "INTERNAL_ERROR";
	}
}

json_t *problem_new(unsigned status, const struct rf_err *e, const char *instance)
{
	const char *code = e && e->code[0] ? e->code : default_code(status);
	char type[96] = "urn:rocefab:problem:";
	size_t n = strlen(type);
	json_t *p = json_object();

	for (const char *c = code; *c && n + 1 < sizeof(type); c++)
		type[n++] = *c == '_' ? '-' : (char)tolower((unsigned char)*c);
	type[n] = '\0';
	if (!p)
		return NULL;
	js_set(p, "type", json_string(type));
	js_set(p, "title", json_string(api_status_title(status)));
	js_set(p, "status", json_integer(status));
	js_set(p, "code", json_string(code));
	if (e && e->msg[0])
		js_set(p, "detail", js_string_lossy(e->msg)); /* may quote the request */
	else
		js_set(p, "detail", json_string(api_status_title(status)));
	if (instance)
		js_set(p, "instance", js_string_lossy(instance));
	if (e && e->where[0])
		js_set(p, "pointer", js_string_lossy(e->where));
	return p;
}
