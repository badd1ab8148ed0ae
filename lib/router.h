/* Table-driven request routing: method + path pattern ("/api/v1/hosts/{id}") -> the caller's
 * entry.  rocefabd's REST API (api/) and the simulator's control API (sim/control.c) each keep
 * a table of their own entry type; every entry begins with a struct route_pattern.
 * Matching is exact per segment; "{name}" matches one non-empty segment, and HEAD matches GET. */
#ifndef ROCEFAB_ROUTER_H
#define ROCEFAB_ROUTER_H

#include <stddef.h>

#define ROUTER_MAX_PARAMS 4

struct route_pattern {
	const char *method;
	const char *pattern;
};

struct route_match {
	int index; /* of the matched entry, -1 when none */
	int nparams;
	const char *params[ROUTER_MAX_PARAMS]; /* the {name} segments, NUL-terminated */
	char allow[64]; /* on -EOPNOTSUPP: the methods the path supports, "GET, PUT" */
	char *heap;	/* the parameters when they do not fit in small */
	char small[256];
};

/* table: an array of entries of stride bytes, each beginning with a struct route_pattern, the
 * last one's pattern NULL.  max_param: the longest parameter accepted (0: no limit).
 * 0 and m->index on a match; -ENOENT when no pattern matches the path; -EOPNOTSUPP when one
 * does but not for this method (m->allow lists the methods); -ENAMETOOLONG for a parameter
 * longer than max_param; -ENOMEM.  Release m with router_match_fini() in every case. */
int router_match(const void *table, size_t stride, const char *method, const char *path,
		 size_t max_param, struct route_match *m);
void router_match_fini(struct route_match *m);

/* The entry at index i of such a table. */
static inline const void *router_entry(const void *table, size_t stride, int i)
{
	return (const char *)table + (size_t)i * stride;
}

#endif
