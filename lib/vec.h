/* Arrays that grow by doubling: the one helper for the "n used of cap, realloc when full"
 * pattern. */
#ifndef ROCEFAB_VEC_H
#define ROCEFAB_VEC_H

#include <errno.h>
#include <math.h>
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

/* The p-th percentile of n sorted values by nearest rank: the smallest value with at least
 * p % of them at or below it (0 when n is 0). */
static inline double vec_percentile(const double *sorted, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)ceil(p * (double)n / 100.0 - 1e-9); /* 0.99 * 1000 is 990.0000000000001 */
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* The median of n > 0 sorted values (the mean of the middle two when n is even). */
static inline double vec_median(const double *sorted, size_t n)
{
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

#endif
