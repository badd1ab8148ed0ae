/* The dashboard's static files (web/), served by rocefabd at / from memory.
 *
 * Everything under api.web_root is read once at start (regular files, names not starting with
 * a dot, at most WEB_MAX_FILES and WEB_MAX_BYTES in all), plus the browser libraries its file
 * "javascript.list" names, one path per line relative to api.javascript_root (Debian's
 * /usr/share/javascript, where libjs-* packages install), served under /javascript/.  A request
 * can only ever get one of these files: no path from a request reaches the file system. */
#ifndef ROCEFAB_API_WEB_H
#define ROCEFAB_API_WEB_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

#define WEB_MAX_FILES 512
#define WEB_MAX_BYTES (32u << 20)

struct web_file {
	char *path; /* "/index.html", "/javascript/chart.js/chart.esm.js" */
	char *data;
	size_t len;
	const char *type;
	char etag[24]; /* "\"<16 hex digits of its sha256>\"" */
	bool html;
};

struct web;

/* Loads root (and the libraries of root/javascript.list from jsroot).  -ENOENT (e filled) when
 * root has no index.html; a library that is missing is only logged (the page says which). */
int web_load(const char *root, const char *jsroot, struct web **ret, struct rf_err *e);
void web_free(struct web *w);
/* The file for a request path ("/" is "/index.html"), or NULL. */
const struct web_file *web_find(const struct web *w, const char *url);
size_t web_count(const struct web *w);

#endif
