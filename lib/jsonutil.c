/* JSON helpers: see jsonutil.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/strutil.h"

void js_path_init(struct js_path *p)
{
	p->len = 0;
	p->buf[0] = '\0';
}

size_t js_path_push_key(struct js_path *p, const char *key)
{
	size_t prev = p->len;

	if (p->len + 1 < sizeof(p->buf))
		p->buf[p->len++] = '/';
	/* RFC 6901 escaping: ~ -> ~0, / -> ~1 */
	for (const char *k = key; *k && p->len + 3 < sizeof(p->buf); k++) {
		if (*k == '~' || *k == '/') {
			p->buf[p->len++] = '~';
			p->buf[p->len++] = *k == '~' ? '0' : '1';
		} else {
			p->buf[p->len++] = *k;
		}
	}
	p->buf[p->len] = '\0';
	return prev;
}

size_t js_path_push_idx(struct js_path *p, size_t idx)
{
	size_t prev = p->len;
	int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "/%zu", idx);

	if (n > 0 && (size_t)n < sizeof(p->buf) - p->len)
		p->len += (size_t)n;
	p->buf[p->len] = '\0';
	return prev;
}

void js_path_pop(struct js_path *p, size_t prev)
{
	p->len = prev;
	p->buf[prev] = '\0';
}

const char *js_path_str(const struct js_path *p)
{
	return p->len ? p->buf : "/";
}

int js_fail(struct rf_err *e, const struct js_path *p, const char *key, const char *fmt, ...)
{
	struct js_path q = *p;
	va_list ap;
	int r;

	if (key)
		js_path_push_key(&q, key);
	va_start(ap, fmt);
	r = rf_err_vset(e, -EINVAL, "SCHEMA_VIOLATION", js_path_str(&q), fmt, ap);
	va_end(ap);
	return r;
}

int js_check_keys(json_t *obj, const char *const *allowed, const struct js_path *p,
		  struct rf_err *e)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool ok = false;

		for (int i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], key) == 0) {
				ok = true;
				break;
			}
		if (!ok)
			return js_fail(e, p, key, "unknown field");
	}
	return 0;
}

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
	default:
		return "null";
	}
}

int js_req_obj(json_t *obj, const char *key, const struct js_path *p, json_t **ret,
	       struct rf_err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return js_fail(e, p, key, "required field is missing");
	if (!json_is_object(v))
		return js_fail(e, p, key, "must be an object, not %s", type_name(v));
	*ret = v;
	return 0;
}

static int get_arr(json_t *obj, const char *key, size_t max, const struct js_path *p,
		   json_t **ret, struct rf_err *e, bool required)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? js_fail(e, p, key, "required field is missing") : 0;
	if (!json_is_array(v))
		return js_fail(e, p, key, "must be an array, not %s", type_name(v));
	if (json_array_size(v) > max)
		return js_fail(e, p, key, "has %zu items, more than the limit of %zu",
			       json_array_size(v), max);
	*ret = v;
	return 1;
}

int js_req_arr(json_t *obj, const char *key, size_t max, const struct js_path *p, json_t **ret,
	       struct rf_err *e)
{
	int r = get_arr(obj, key, max, p, ret, e, true);

	return r < 0 ? r : 0;
}

int js_opt_arr(json_t *obj, const char *key, size_t max, const struct js_path *p, json_t **ret,
	       struct rf_err *e)
{
	return get_arr(obj, key, max, p, ret, e, false);
}

static int get_int(json_t *obj, const char *key, int64_t min, int64_t max,
		   const struct js_path *p, int64_t *ret, struct rf_err *e, bool required)
{
	json_t *v = json_object_get(obj, key);
	json_int_t i;

	if (!v)
		return required ? js_fail(e, p, key, "required field is missing") : 0;
	if (!json_is_integer(v))
		return js_fail(e, p, key, "must be an integer, not %s", type_name(v));
	i = json_integer_value(v);
	if (i < min || i > max)
		return js_fail(e, p, key, "%lld is out of range %lld..%lld", (long long)i,
			       (long long)min, (long long)max);
	*ret = i;
	return 1;
}

int js_req_int(json_t *obj, const char *key, int64_t min, int64_t max, const struct js_path *p,
	       int64_t *ret, struct rf_err *e)
{
	int r = get_int(obj, key, min, max, p, ret, e, true);

	return r < 0 ? r : 0;
}

int js_opt_int(json_t *obj, const char *key, int64_t min, int64_t max, const struct js_path *p,
	       int64_t *ret, struct rf_err *e)
{
	return get_int(obj, key, min, max, p, ret, e, false);
}

int js_opt_num(json_t *obj, const char *key, double min, double max, const struct js_path *p,
	       double *ret, struct rf_err *e)
{
	json_t *v = json_object_get(obj, key);
	double d;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return js_fail(e, p, key, "must be a number, not %s", type_name(v));
	d = json_number_value(v);
	if (d < min || d > max)
		return js_fail(e, p, key, "%g is out of range %g..%g", d, min, max);
	*ret = d;
	return 1;
}

int js_opt_bool(json_t *obj, const char *key, const struct js_path *p, bool *ret,
		struct rf_err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return js_fail(e, p, key, "must be true or false, not %s", type_name(v));
	*ret = json_is_true(v);
	return 1;
}

bool js_is_id(const char *s, size_t maxlen)
{
	size_t n = 0;

	if (!*s || *s == '.' || *s == '-')
		return false;
	for (; *s; s++, n++) {
		char c = *s;

		if (n >= maxlen)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int get_str(json_t *obj, const char *key, size_t maxlen, bool id,
		   const struct js_path *p, const char **ret, struct rf_err *e, bool required)
{
	json_t *v = json_object_get(obj, key);
	const char *s;
	size_t len;

	if (!v)
		return required ? js_fail(e, p, key, "required field is missing") : 0;
	if (!json_is_string(v))
		return js_fail(e, p, key, "must be a string, not %s", type_name(v));
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0)
		return js_fail(e, p, key, "must not be empty");
	if (len > maxlen)
		return js_fail(e, p, key, "is %zu bytes long, more than the limit of %zu", len,
			       maxlen);
	if (strlen(s) != len)
		return js_fail(e, p, key, "contains a NUL character");
	/* Text ends up in logs and on operators' terminals: no control characters (C0, DEL, C1),
	 * which could rewrite what they show. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f))
			return js_fail(e, p, key, "contains a control character (byte %zu)", i);
	}
	if (id && !js_is_id(s, maxlen))
		return js_fail(e, p, key,
			       "'%s' is not a valid identifier (letters, digits, '.', '_', '-'; "
			       "not starting with '.' or '-')",
			       s);
	*ret = s;
	return 1;
}

int js_req_str(json_t *obj, const char *key, size_t maxlen, bool id, const struct js_path *p,
	       const char **ret, struct rf_err *e)
{
	int r = get_str(obj, key, maxlen, id, p, ret, e, true);

	return r < 0 ? r : 0;
}

int js_opt_str(json_t *obj, const char *key, size_t maxlen, bool id, const struct js_path *p,
	       const char **ret, struct rf_err *e)
{
	return get_str(obj, key, maxlen, id, p, ret, e, false);
}

int js_req_enum(json_t *obj, const char *key, const char *const *choices,
		const struct js_path *p, int *ret, struct rf_err *e)
{
	const char *s;
	int r = js_req_str(obj, key, 64, false, p, &s, e);

	if (r < 0)
		return r;
	for (int i = 0; choices[i]; i++) {
		if (strcmp(choices[i], s) == 0) {
			*ret = i;
			return 0;
		}
	}
	return js_fail(e, p, key, "'%s' is not one of the allowed values", s);
}

json_t *js_parse(const char *text, size_t len, struct rf_err *e)
{
	json_error_t je;
	json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);

	if (!v) {
		rf_err_set(e, -EINVAL, "BAD_JSON", NULL, "malformed JSON at line %d column %d: %s",
			   je.line, je.column, je.text);
		return NULL;
	}
	return v;
}

/* The length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates, at
 * most U+10FFFF), 0 when there is none. */

json_t *js_string_lossy(const char *s)
{
	json_t *v;
	char *copy;

	if (str_is_printable(s) && (v = json_string(s)))
		return v;
	if (!(copy = strdup(s)))
		return NULL;
	str_make_printable(copy);
	v = json_string(copy);
	free(copy);
	return v;
}

int js_set(json_t *obj, const char *key, json_t *val_stolen)
{
	if (!val_stolen)
		return -ENOMEM;
	return json_object_set_new(obj, key, val_stolen) < 0 ? -ENOMEM : 0;
}

const char *js_str(json_t *obj, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : def;
}

int64_t js_int(json_t *obj, const char *key, int64_t def)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}
