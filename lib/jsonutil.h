/* JSON helpers on top of jansson: typed field access that reports problems with the JSON
 * pointer of the offending value ("/samples/3/values/np_cnp_sent"), and small utilities.
 * Unless said otherwise, returned json_t pointers are borrowed references. */
#ifndef ROCEFAB_JSONUTIL_H
#define ROCEFAB_JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

struct js_path {
	char buf[256];
	size_t len;
};

void js_path_init(struct js_path *p);
/* Both return the previous length, to hand back to js_path_pop(). */
size_t js_path_push_key(struct js_path *p, const char *key);
size_t js_path_push_idx(struct js_path *p, size_t idx);
void js_path_pop(struct js_path *p, size_t prev);
/* The pointer as a string ("" for the root is shown as "/"). */
const char *js_path_str(const struct js_path *p);

/* Fills e with code "SCHEMA_VIOLATION" at path p (+ key, if not NULL) and returns -EINVAL. */
int js_fail(struct rf_err *e, const struct js_path *p, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Rejects members of obj not named in allowed (NULL-terminated). */
int js_check_keys(json_t *obj, const char *const *allowed, const struct js_path *p,
		  struct rf_err *e);

/* Field getters.  "req" fails when the member is absent; "opt" leaves *ret untouched then and
 * returns 0 (use the return value 1 to learn that it was present). */
int js_req_obj(json_t *obj, const char *key, const struct js_path *p, json_t **ret,
	       struct rf_err *e);
int js_req_arr(json_t *obj, const char *key, size_t max, const struct js_path *p, json_t **ret,
	       struct rf_err *e);
int js_opt_arr(json_t *obj, const char *key, size_t max, const struct js_path *p, json_t **ret,
	       struct rf_err *e);
int js_req_int(json_t *obj, const char *key, int64_t min, int64_t max, const struct js_path *p,
	       int64_t *ret, struct rf_err *e);
int js_opt_int(json_t *obj, const char *key, int64_t min, int64_t max, const struct js_path *p,
	       int64_t *ret, struct rf_err *e);
int js_opt_num(json_t *obj, const char *key, double min, double max, const struct js_path *p,
	       double *ret, struct rf_err *e);
int js_opt_bool(json_t *obj, const char *key, const struct js_path *p, bool *ret,
		struct rf_err *e);
/* Strings: length 1..maxlen; when id is true, only [A-Za-z0-9._-] and not starting with . or -. */
int js_req_str(json_t *obj, const char *key, size_t maxlen, bool id, const struct js_path *p,
	       const char **ret, struct rf_err *e);
int js_opt_str(json_t *obj, const char *key, size_t maxlen, bool id, const struct js_path *p,
	       const char **ret, struct rf_err *e);
/* One of choices (NULL-terminated); *ret is the index. */
int js_req_enum(json_t *obj, const char *key, const char *const *choices,
		const struct js_path *p, int *ret, struct rf_err *e);

bool js_is_id(const char *s, size_t maxlen);
/* Parses text of at most len bytes; on failure e gets code BAD_JSON with line:column.
 * Returns a new reference or NULL. */
json_t *js_parse(const char *text, size_t len, struct rf_err *e);
/* A JSON string of s with every byte that is not part of valid UTF-8, and every control
 * character (C0, DEL, C1: which rocefabd refuses in reported text and which could drive a
 * terminal), replaced by '?': for text that carries what a request sent or a file held (a
 * path parameter in an error's detail, a sysfs value in an agent's error), where json_string()
 * would fail.  A new reference; NULL only when out of memory. */
json_t *js_string_lossy(const char *s);
/* json_object_set_new that ignores a NULL value (from a failed constructor) safely. */
int js_set(json_t *obj, const char *key, json_t *val_stolen);
/* A string member or def. */
const char *js_str(json_t *obj, const char *key, const char *def);
/* An integer member or def. */
int64_t js_int(json_t *obj, const char *key, int64_t def);

#endif
