/* Route matching: see router.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/router.h"

/* Matches path against pattern; fills params when m is not NULL. */
static int match_pattern(const char *pattern, const char *path, struct route_match *m)
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
			if (len >= ROUTER_PARAM_LEN)
				return -ENAMETOOLONG;
			if (n >= ROUTER_MAX_PARAMS)
				return -EINVAL;
			if (m) {
				memcpy(m->params[n], s, len);
				m->params[n][len] = '\0';
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
	if (m)
		m->nparams = n;
	return 0;
}

int router_match(const struct route *table, const char *method, const char *path,
		 struct route_match *m)
{
	bool path_matched = false;
	size_t alen = 0;
	int r;

	m->route = NULL;
	m->nparams = 0;
	m->allow[0] = '\0';
	for (const struct route *rt = table; rt->pattern; rt++) {
		r = match_pattern(rt->pattern, path, NULL);
		if (r == -ENAMETOOLONG)
			return r;
		if (r < 0)
			continue;
		path_matched = true;
		if (strcmp(rt->method, method) == 0 ||
		    (strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0)) {
			m->route = rt;
			return match_pattern(rt->pattern, path, m);
		}
		if (!strstr(m->allow, rt->method) && alen + strlen(rt->method) + 3 < sizeof(m->allow))
			alen += (size_t)snprintf(m->allow + alen, sizeof(m->allow) - alen, "%s%s",
						 alen ? ", " : "", rt->method);
	}
	return path_matched ? -EOPNOTSUPP : -ENOENT;
}
