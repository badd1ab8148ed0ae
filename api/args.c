/* Query and path parameters, parsed strictly: one spelling per value, and a 400 problem naming
 * the parameter for anything else (see internal.h). */
#include <string.h>

#include "api/internal.h"
#include "lib/jsonutil.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

int api_time_arg(struct api_req *req, const char *name, int64_t now_ns, int64_t *ret, struct rf_err *e)
{
	const char *v = api_arg(req, name);
	int r;

	if (!v)
		return 0;
	r = tu_parse_time(v, now_ns, ret);
	if (r == -ERANGE)
		return rf_err_set(e, -ERANGE, "BAD_PARAMETER", name,
				  "'%s' is outside the times rocefab handles (1970 to " TU_MAX_TIME_TEXT ")", v);
	if (r < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", name,
				  "'%s' is not a time (RFC 3339, Unix seconds, 'now' or '-5m')", v);
	return 1;
}

int api_duration_arg(struct api_req *req, const char *name, int64_t *ret, struct rf_err *e)
{
	const char *v = api_arg(req, name);
	int r;

	if (!v)
		return 0;
	r = tu_parse_duration(v, ret);
	if (r == -ERANGE)
		return rf_err_set(e, -ERANGE, "BAD_PARAMETER", name, "'%s' is too long a duration", v);
	if (r < 0)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", name,
				  "'%s' is not a duration (such as 10s or 1m)", v);
	return 1;
}

int api_bool_arg(struct api_req *req, const char *name, bool *ret, struct rf_err *e)
{
	const char *v = api_arg(req, name);

	if (!v)
		return 0;
	if (strcmp(v, "true") && strcmp(v, "false"))
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", name, "'%s' is not true or false", v);
	*ret = !strcmp(v, "true");
	return 1;
}

const char *api_actor(const struct api_req *req)
{
	return req->token_name[0] ? req->token_name : "anonymous";
}

int api_uint_value(const char *value, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		   struct rf_err *e)
{
	uint64_t v;
	int r = str_parse_uint(value, max, &v);

	/* (the message names the parameter too: clients show the detail, not always the pointer) */
	if (r == -EINVAL)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", name,
				  "%s: '%s' is not a number in plain decimal (no sign, spaces or leading zeros)", name,
				  value);
	if (r < 0 || v < min)
		return rf_err_set(e, -ERANGE, "BAD_PARAMETER", name, "%s: '%s' is outside %llu to %llu", name, value,
				  (unsigned long long)min, (unsigned long long)max);
	*ret = v;
	return 0;
}

int api_uint_arg(struct api_req *req, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		 struct rf_err *e)
{
	const char *v = api_arg(req, name);
	int r;

	if (!v)
		return 0;
	return (r = api_uint_value(v, name, min, max, ret, e)) < 0 ? r : 1;
}

int api_take_reason(json_t *doc, char **ret, struct rf_err *e)
{
	json_t *reason = json_object_get(doc, "reason");

	*ret = NULL;
	if (!reason)
		return 0;
	if (!json_is_string(reason))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/reason", "reason is a string (text), not %s",
				  json_is_null(reason)	    ? "null"
				  : json_is_number(reason)  ? "a number"
				  : json_is_boolean(reason) ? "true or false"
							    : "an array or object");
	if (json_string_length(reason) > API_MAX_REASON)
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/reason", "reason is %zu bytes (UTF-8): at most %d",
				  json_string_length(reason), API_MAX_REASON);
	if (strlen(json_string_value(reason)) != json_string_length(reason))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/reason", "reason holds a NUL character");
	/* it goes to logs, terminals and the audit log as it is written */
	if (!str_is_printable(json_string_value(reason)) || str_has_bidi_controls(json_string_value(reason)) ||
	    strstr(json_string_value(reason), "\xe2\x80\xa8") || strstr(json_string_value(reason), "\xe2\x80\xa9"))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/reason",
				  "reason is one line of text: no control characters (newline, tab, escape), line or "
				  "paragraph separators, or bidirectional formatting characters");
	if (!(*ret = strdup(json_string_value(reason))))
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	json_object_del(doc, "reason");
	return 0;
}

int api_no_other_member(json_t *doc, const char *takes, struct rf_err *e)
{
	const char *k;
	struct js_path at;

	if (!json_object_size(doc))
		return 0;
	k = json_object_iter_key(json_object_iter(doc));
	js_path_init(&at);
	js_path_push_key(&at, k);
	return rf_err_set(e, -EINVAL, "UNKNOWN_FIELD", js_path_str(&at),
			  "unknown member '%s': this request takes only %s", k, takes);
}

int api_reason_body(struct api_req *req, char **ret)
{
	struct rf_err e = { 0 };
	json_t *body;

	*ret = NULL;
	if (!req->body.len)
		return 0;
	body = js_parse(req->body.data, req->body.len, &e);
	if (body && !json_is_object(body)) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/", "send no body, {} or {\"reason\": \"why\"}");
	} else if (body && api_take_reason(body, ret, &e) == 0) {
		api_no_other_member(body, "a reason ({\"reason\": \"why\"})", &e);
	}
	json_decref(body);
	if (!e.err)
		return 0;
	free(*ret);
	*ret = NULL;
	api_reply_problem(req, 0, &e);
	return -1;
}

int api_no_body(struct api_req *req)
{
	struct rf_err e = { 0 };
	json_t *body;

	if (!req->body.len)
		return 0;
	body = js_parse(req->body.data, req->body.len, &e);
	if (body && json_is_object(body) && !json_object_size(body)) {
		json_decref(body);
		return 0;
	}
	json_decref(body);
	if (!e.err)
		rf_err_set(&e, -EINVAL, "UNKNOWN_FIELD", "/", "this request takes no body (or {})");
	api_reply_problem(req, 0, &e);
	return -1;
}
