/* Arrays that grow by doubling: the one helper for the "n used of cap, realloc when full"
 * pattern. */
#ifndef ROCEFAB_VEC_H
#define ROCEFAB_VEC_H

#include <errno.h>
#include <stdlib.h>

/* Room for one more element in *v (n used of *cap elements of size bytes): 0, or -ENOMEM with
 * *v and *cap unchanged. */
static inline int vec_room(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return 0;
	if (!(p = realloc(*v, ncap * size)))
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

/* qsort's comparison of doubles, ascending (NaNs are not ordered: keep them out). */
static inline int vec_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif
