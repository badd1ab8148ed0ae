/* Route matching: see router.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/router.h"

/* Whether path matches pattern; with out, copies the parameters there (out has room for the
 * path's length plus a NUL per parameter) and points m's params at them. */
static int match_pattern(const char *pattern, const char *path, size_t max_param, char *out,
			 struct route_match *m)
{
	const char *p = pattern, *s = path;
	int n = 0;

	while (*p && *s) {
		if (*p == '{') {
			const char *pe = strchr(p, '}');
			const char *se = strchr(s, '/');
			size_t len;

			if (!pe)
				return -EINVAL;
			len = se ? (size_t)(se - s) : strlen(s);
			if (len == 0)
				return -ENOENT;
			if (max_param && len > max_param)
				return -ENAMETOOLONG;
			if (n >= ROUTER_MAX_PARAMS)
				return -EINVAL;
			if (out) {
				memcpy(out, s, len);
				out[len] = '\0';
				m->params[n] = out;
				out += len + 1;
			}
			n++;
			p = pe + 1;
			s += len;
			continue;
		}
		if (*p != *s)
			return -ENOENT;
		p++;
		s++;
	}
	if (*p || *s)
		return -ENOENT;
	if (out)
		m->nparams = n;
	return 0;
}

int router_match(const void *table, size_t stride, const char *method, const char *path,
		 size_t max_param, struct route_match *m)
{
	bool path_matched = false;
	size_t alen = 0, need;
	int r;

	m->index = -1;
	m->nparams = 0;
	m->allow[0] = '\0';
	m->heap = NULL;
	for (int i = 0;; i++) {
		const struct route_pattern *rt = router_entry(table, stride, i);
		char *out;

		if (!rt->pattern)
			break;
		r = match_pattern(rt->pattern, path, max_param, NULL, NULL);
		if (r == -ENAMETOOLONG)
			return r;
		if (r < 0)
			continue;
		path_matched = true;
		if (strcmp(rt->method, method) != 0 &&
		    (strcmp(method, "HEAD") != 0 || strcmp(rt->method, "GET") != 0)) {
			if (!strstr(m->allow, rt->method) &&
			    alen + strlen(rt->method) + 3 < sizeof(m->allow))
				alen += (size_t)snprintf(m->allow + alen, sizeof(m->allow) - alen,
							 "%s%s", alen ? ", " : "", rt->method);
			continue;
		}
		need = strlen(path) + ROUTER_MAX_PARAMS + 1;
		out = m->small;
		if (need > sizeof(m->small) && !(out = m->heap = malloc(need)))
			return -ENOMEM;
		m->index = i;
		return match_pattern(rt->pattern, path, max_param, out, m);
	}
	return path_matched ? -EOPNOTSUPP : -ENOENT;
}

void router_match_fini(struct route_match *m)
{
	free(m->heap);
	m->heap = NULL;
}
