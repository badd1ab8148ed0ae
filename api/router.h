/* The route table: method + path pattern ("/api/v1/hosts/{id}") -> handler and required role.
 * Matching is exact per segment; "{name}" matches one non-empty segment. */
#ifndef ROCEFAB_ROUTER_H
#define ROCEFAB_ROUTER_H

#include <stddef.h>

#define ROUTER_MAX_PARAMS 4
#define ROUTER_PARAM_LEN 200

struct api_req;

struct route {
	const char *method;
	const char *pattern;
	int need_role; /* enum role */
	int (*handler)(struct api_req *req);
	const char *summary;
};

struct route_match {
	const struct route *route;
	int nparams;
	char params[ROUTER_MAX_PARAMS][ROUTER_PARAM_LEN];
	char allow[64]; /* on -EOPNOTSUPP: the methods the path supports, "GET, PUT" */
};

/* 0 and m->route on a match; -ENOENT when no pattern matches the path; -EOPNOTSUPP when one
 * does but not for this method (m->allow lists the methods); -ENAMETOOLONG for a segment
 * longer than ROUTER_PARAM_LEN. */
int router_match(const struct route *table, const char *method, const char *path,
		 struct route_match *m);

#endif
