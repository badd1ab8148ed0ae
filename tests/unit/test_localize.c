/* Unit tests of the localization over synthetic probe matrices: a lossy fabric link, a host
 * that cannot receive (with its PFC victims), a whole ToR, noise without a fault (one outlier,
 * scattered slow pairs, one pair alone), and spread faults no single element explains. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/localize.h"
#include "tests/unit/unit.h"

#define HOSTS 16 /* 4 ToRs x 4 hosts, 2 spines */

static char names[HOSTS][16], tors[4][16], links[16][40], access[HOSTS][40];

static void init_names(void)
{
	for (unsigned h = 0; h < HOSTS; h++) {
		snprintf(names[h], sizeof(names[h]), "h%u", h);
		snprintf(access[h], sizeof(access[h]), "h%u-leaf%u", h, h / 4);
	}
	for (unsigned t = 0; t < 4; t++)
		snprintf(tors[t], sizeof(tors[t]), "leaf%u", t);
	for (unsigned t = 0; t < 4; t++)
		for (unsigned sp = 0; sp < 2; sp++)
			snprintf(links[t * 2 + sp], sizeof(links[0]), "leaf%u-spine%u", t, sp);
}

/* every host probes every other on two paths (label = spine for inter-ToR pairs) */
static size_t matrix(struct loc_result *r)
{
	size_t n = 0;

	for (int s = 0; s < HOSTS; s++)
		for (int d = 0; d < HOSTS; d++)
			for (int label = 0; label < 2 && s != d; label++) {
				struct loc_result *x = &r[n++];

				memset(x, 0, sizeof(*x));
				x->src = names[s];
				x->dst = names[d];
				x->src_tor = tors[s / 4];
				x->dst_tor = tors[d / 4];
				x->n = 20;
				x->p99_us = 5 + (s + d + label) % 3;
				x->path[x->npath++] = access[s];
				if (s / 4 != d / 4) {
					x->path[x->npath++] = links[(s / 4) * 2 + label];
					x->path[x->npath++] = links[(d / 4) * 2 + label];
				}
				x->path[x->npath++] = access[d];
			}
	return n;
}

static bool crosses(const struct loc_result *x, const char *link)
{
	for (unsigned k = 0; k < x->npath; k++)
		if (!strcmp(x->path[k], link))
			return true;
	return false;
}

static struct loc_result r[HOSTS * HOSTS * 2];

static void test_lossy_link(void **state)
{
	struct loc_finding f;
	size_t n;
	unsigned i = 0;

	(void)state;
	init_names();
	n = matrix(r);
	/* leaf2-spine1 loses: not every probe through it loses one in the window */
	for (size_t k = 0; k < n; k++)
		if (crosses(&r[k], "leaf2-spine1") && i++ % 5)
			r[k].lost = 1 + k % 3;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_LINK);
	assert_string_equal(f.subject, "leaf2-spine1");
	/* without paths: not a host either (spread over the ToR's hosts, not all of their pairs) */
	for (size_t k = 0; k < n; k++)
		r[k].npath = 0;
	loc_analyze(r, n, NULL, &f);
	assert_int_not_equal(f.kind, LOC_HOST);
}

static void test_slow_receiver_and_its_victim(void **state)
{
	struct loc_finding f;
	size_t n;

	(void)state;
	init_names();
	n = matrix(r);
	for (size_t k = 0; k < n; k++) {
		if (!strcmp(r[k].dst, "h5"))
			r[k].lost = 14; /* most probes to h5 time out */
		else if (!strcmp(r[k].src, "h4"))
			r[k].lost = 3; /* h4, paused by the back-pressure, loses a few */
	}
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_HOST);
	assert_string_equal(f.subject, "h5");
	assert_non_null(strstr(f.evidence, "probes to h5"));
	assert_non_null(strstr(f.evidence, "secondary"));
	assert_non_null(strstr(f.evidence, "h4"));
}

static void test_tor(void **state)
{
	struct loc_finding f;
	size_t n;

	(void)state;
	init_names();
	n = matrix(r);
	/* everything under leaf1 is slow, its own pairs too */
	for (size_t k = 0; k < n; k++)
		if (!strcmp(r[k].src_tor, "leaf1") || !strcmp(r[k].dst_tor, "leaf1"))
			r[k].p99_us = 900;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_TOR);
	assert_string_equal(f.subject, "leaf1");
	assert_non_null(strstr(f.evidence, "are slow"));
	assert_null(strstr(f.evidence, "()")); /* (it ended "of the bad ()") */
	/* results counted as results both times (it read "of the 234 probes of hosts under") */
	assert_non_null(strstr(f.evidence, " results of probes to or from hosts under leaf1 are"));
}

static void test_noise_and_spread(void **state)
{
	struct loc_finding f;
	size_t n;

	(void)state;
	init_names();
	n = matrix(r);
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	/* congestion bursts below the floor are not faults */
	for (size_t k = 0; k < n; k += 7)
		r[k].p99_us = 60;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	/* one slow result is an outlier, not a fault of its source; two through one host name it */
	n = matrix(r);
	r[0].p99_us = 5000;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	assert_true(r[0].bad);
	assert_non_null(strstr(f.evidence, "an outlier"));
	r[2].p99_us = 5000; /* h0 to h2: two of h0's 30, two of 480 in all: scattered */
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	assert_non_null(strstr(f.evidence, "scattered"));
	for (size_t k = 0; k < n; k++) /* everything h0 sends is slow: h0 */
		if (!strcmp(r[k].src, "h0"))
			r[k].p99_us = 5000;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_HOST);
	assert_string_equal(f.subject, "h0");
	/* one pair losing probes on both paths (a host that just died, seen by its first prober):
	 * its source or its destination? nothing is named until a second pair says */
	n = matrix(r);
	r[0].lost = r[1].lost = 20;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	assert_non_null(strstr(f.evidence, "lost probes, on 1 pair(s)"));
	for (size_t k = 0; k < n; k++) /* every prober of h1 loses: h1 */
		if (!strcmp(r[k].dst, "h1"))
			r[k].lost = 20;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_HOST);
	assert_string_equal(f.subject, "h1");
	/* slow everywhere, no culprit: the fabric */
	n = matrix(r);
	for (size_t k = 0; k < n; k += 5)
		r[k].p99_us = 5000;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_FABRIC);
	/* a probe lost on each of two pairs that share no host, link or ToR (a probe that timed
	 * out behind a pause: the demo's incast does it): scattered, not the fabric */
	n = matrix(r);
	for (size_t k = 0; k < n; k += 2) /* one path of each */
		if ((!strcmp(r[k].src, "h1") && !strcmp(r[k].dst, "h2")) ||
		    (!strcmp(r[k].src, "h12") && !strcmp(r[k].dst, "h6")))
			r[k].lost = 1;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	assert_int_equal(f.bad, 2);
	assert_non_null(strstr(f.evidence, "lost probes (2 of 9600 probes), scattered"));
	/* the same two lost probes do not hide a slow fabric (a congested one loses a probe or
	 * two to timeouts behind its pauses) */
	for (size_t k = 0; k < n; k += 5)
		r[k].p99_us = 5000;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_FABRIC);
	assert_non_null(strstr(f.evidence, "results slow (p99 far above the typical"));
	assert_non_null(strstr(f.evidence, "besides, 2 result(s) lost probes"));
	assert_true(r[0].bad && f.bad >= n / 5);
	/* without paths, a fault that few results cross loses many probes on them: 3 pairs under
	 * different ToRs lose all theirs (3 of 480 results, 60 of 9,600 probes): the fabric, where
	 * 2 probes of 9,600 were scattered */
	n = matrix(r);
	for (size_t k = 0; k < n; k++)
		r[k].npath = 0;
	for (size_t k = 1; k < n; k += 2)
		if ((!strcmp(r[k].src, "h0") && !strcmp(r[k].dst, "h5")) ||
		    (!strcmp(r[k].src, "h9") && !strcmp(r[k].dst, "h14")) ||
		    (!strcmp(r[k].src, "h7") && !strcmp(r[k].dst, "h11")))
			r[k].lost = r[k].n;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_FABRIC);
	assert_int_equal(f.bad, 3);
	assert_non_null(strstr(f.evidence, "(60 of 9600 probes)"));
	n = matrix(r);
	/* losses everywhere: the fabric, no single culprit */
	for (size_t k = 0; k < n; k += 3)
		r[k].lost = 1;
	loc_analyze(r, n, NULL, &f);
	assert_int_equal(f.kind, LOC_FABRIC);
	/* nothing at all */
	loc_analyze(r, 0, NULL, &f);
	assert_int_equal(f.kind, LOC_NONE);
	assert_non_null(strstr(f.evidence, "no probe results"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lossy_link),
		cmocka_unit_test(test_slow_receiver_and_its_victim),
		cmocka_unit_test(test_tor),
		cmocka_unit_test(test_noise_and_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
