/* The pingmesh localization's cost at fabric scale: the matrix of H hosts (32 under each ToR,
 * 8 spines) as rocefabd's plan probes it — every ToR mate and 2 hosts across, on 2 paths — and
 * loc_analyze_all over it, as each localization pass runs it (every 5 s), on a healthy fabric
 * and on what bad days look like: one lossy link, a slow host with its rack-mates'
 * back-pressure, two faults apart, a lossy link at a slow host's ToR, four faults, two lossy
 * links (neither carries most of the bad), a few losses scattered, two busy incast targets
 * (a probe to each lost now and then: no fault), a lossy link beside them (not named: their
 * losses keep it under most of the bad, and the search beyond names links only when every
 * finding is one), a lossier link beside them (named alone: the targets' rare losses name no
 * host), a lossier link and a slow host apart (both), and losses spread over the fabric.  Beside
 * each, one loc_analyze over the same results (the first finding alone): the ratio says how
 * many analyses' worth the search for further faults costs.
 * No bound is enforced here (make bench prints; tests/unit/test_localize checks the answers on
 * small matrices, test_pingmesh's smoke these at 256 hosts).
 *
 *   bench_localize [--hosts N] [--runs N] */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/localize.h"
#include "lib/timeutil.h"

#define PER_TOR 32
#define SPINES 8
#define ACROSS 2

struct fabric {
	unsigned nhosts, ntors;
	char (*host)[16], (*tor)[16], (*access)[32], (*uplink)[32]; /* uplink[t * SPINES + s] */
	struct loc_result *r;
	size_t n;
};

static int build(struct fabric *f, unsigned nhosts)
{
	size_t cap;

	f->nhosts = nhosts;
	f->ntors = (nhosts + PER_TOR - 1) / PER_TOR;
	f->host = calloc(nhosts, sizeof(*f->host));
	f->access = calloc(nhosts, sizeof(*f->access));
	f->tor = calloc(f->ntors, sizeof(*f->tor));
	f->uplink = calloc((size_t)f->ntors * SPINES, sizeof(*f->uplink));
	cap = (size_t)nhosts * (PER_TOR - 1 + ACROSS) * 2;
	f->r = calloc(cap, sizeof(*f->r));
	if (!f->host || !f->access || !f->tor || !f->uplink || !f->r)
		return -1;
	for (unsigned t = 0; t < f->ntors; t++) {
		snprintf(f->tor[t], sizeof(f->tor[t]), "leaf%u", t);
		for (unsigned s = 0; s < SPINES; s++)
			snprintf(f->uplink[t * SPINES + s], sizeof(f->uplink[0]), "leaf%u-spine%u", t, s);
	}
	for (unsigned h = 0; h < nhosts; h++) {
		snprintf(f->host[h], sizeof(f->host[h]), "h%u", h);
		snprintf(f->access[h], sizeof(f->access[h]), "h%u-leaf%u", h, h / PER_TOR);
	}
	f->n = 0;
	for (unsigned h = 0; h < nhosts; h++) {
		unsigned t = h / PER_TOR, dst[PER_TOR + ACROSS], nd = 0;

		for (unsigned m = t * PER_TOR; m < (t + 1) * PER_TOR && m < nhosts; m++)
			if (m != h)
				dst[nd++] = m;
		for (unsigned k = 0; k < ACROSS && f->ntors > 1; k++) /* (the plan's rotating sample) */
			dst[nd++] = (h + 37 * (k + 1) * PER_TOR / 8 + PER_TOR) % nhosts;
		for (unsigned i = 0; i < nd; i++)
			for (unsigned label = 0; label < 2 && f->n < cap; label++) {
				struct loc_result *x = &f->r[f->n++];
				unsigned d = dst[i], dt = d / PER_TOR, sp = (h + d + label) % SPINES;

				x->src = f->host[h];
				x->dst = f->host[d];
				x->src_tor = f->tor[t];
				x->dst_tor = f->tor[dt];
				x->n = 10;
				x->p99_us = 5 + (h * 7 + d * 13 + label) % 3;
				x->path[x->npath++] = f->access[h];
				if (dt != t) {
					x->path[x->npath++] = f->uplink[t * SPINES + sp];
					x->path[x->npath++] = f->uplink[dt * SPINES + sp];
				}
				x->path[x->npath++] = f->access[d];
			}
	}
	return 0;
}

static void fabric_free(struct fabric *f)
{
	free(f->host);
	free(f->access);
	free(f->tor);
	free(f->uplink);
	free(f->r);
}

static bool crosses(const struct loc_result *x, const char *link)
{
	for (unsigned k = 0; k < x->npath; k++)
		if (!strcmp(x->path[k], link))
			return true;
	return false;
}

static void healthy(struct fabric *f)
{
	for (size_t k = 0; k < f->n; k++) {
		f->r[k].lost = 0;
		f->r[k].p99_us = 5 + k % 3;
	}
}

/* a link losing on 4 of 5 of its results */
static void lossy(struct fabric *f, const char *link)
{
	unsigned i = 0;

	for (size_t k = 0; k < f->n; k++)
		if (crosses(&f->r[k], link) && i++ % 5)
			f->r[k].lost = 1 + k % 3;
}

/* a link losing on every one of its results, half their probes */
static void lossier(struct fabric *f, const char *link)
{
	for (size_t k = 0; k < f->n; k++)
		if (crosses(&f->r[k], link))
			f->r[k].lost = f->r[k].n / 2;
}

/* a host that cannot receive: probes to it lost, its rack-mates' losing one now and then */
static void slow(struct fabric *f, unsigned h)
{
	for (size_t k = 0; k < f->n; k++)
		if (f->r[k].dst == f->host[h])
			f->r[k].lost = f->r[k].n / 2;
		else if (f->r[k].src_tor == f->tor[h / PER_TOR] && k % 29 == 0)
			f->r[k].lost = 1;
}

/* a busy incast target: a probe to it lost now and then behind PFC pauses (every other result) */
static void busy(struct fabric *f, unsigned h)
{
	for (size_t k = 0; k < f->n; k++)
		if (f->r[k].dst == f->host[h] && k % 2 == 0)
			f->r[k].lost = 1;
}

/* one lost probe on every every-th result */
static void spread(struct fabric *f, size_t every)
{
	for (size_t k = 0; k < f->n; k++)
		if (k % every == 3)
			f->r[k].lost = 1;
}

static int64_t timed(struct fabric *f, bool all, size_t *nf, struct loc_finding *out)
{
	struct loc_finding one;
	int64_t t0 = tu_mono_ns();

	if (all)
		*nf = loc_analyze_all(f->r, f->n, NULL, out, LOC_MAX_FINDINGS);
	else
		loc_analyze(f->r, f->n, NULL, &one);
	return tu_mono_ns() - t0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void one(struct fabric *f, const char *name, int runs)
{
	int64_t *ta = calloc((size_t)runs, sizeof(*ta)), *t1 = calloc((size_t)runs, sizeof(*t1));
	struct loc_finding out[LOC_MAX_FINDINGS];
	char named[200] = "";
	size_t nf = 0, len = 0;

	if (!ta || !t1) {
		free(ta);
		free(t1);
		return;
	}
	for (int i = 0; i < runs; i++) {
		t1[i] = timed(f, false, &nf, out);
		ta[i] = timed(f, true, &nf, out);
	}
	qsort(ta, (size_t)runs, sizeof(*ta), cmp_i64);
	qsort(t1, (size_t)runs, sizeof(*t1), cmp_i64);
	for (size_t k = 0; k < nf && len < sizeof(named); k++)
		len += (size_t)snprintf(named + len, sizeof(named) - len, "%s%s %s", k ? ", " : "",
					loc_kind_name(out[k].kind), out[k].kind == LOC_NONE ? "" : out[k].subject);
	printf("  %-34s %8.1f %8.1f %8.1f %6.1f  %s\n", name, (double)ta[runs / 2] / 1e6,
	       (double)ta[runs - 1] / 1e6, (double)t1[runs / 2] / 1e6,
	       t1[runs / 2] ? (double)ta[runs / 2] / (double)t1[runs / 2] : 0, named);
	free(ta);
	free(t1);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "hosts", required_argument, NULL, 'H' },
					      { "runs", required_argument, NULL, 'r' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	unsigned nhosts = 1024;
	int runs = 5, c;
	struct fabric f = { 0 };
	unsigned t2, t5;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		unsigned long v;

		if (c == 'h') {
			printf("usage: bench_localize [--hosts N] [--runs N]\n");
			return 0;
		}
		if (c == '?')
			return 2;
		v = strtoul(optarg, &end, 10);
		if (*end || v == 0 || v > 100000 || (c == 'H' && v < 8 * PER_TOR)) {
			fprintf(stderr, "bench_localize: '%s' is not a count (hosts: %u at least)\n", optarg,
				8 * PER_TOR);
			return 2;
		}
		if (c == 'H')
			nhosts = (unsigned)v;
		else
			runs = (int)v;
	}
	if (build(&f, nhosts) < 0) {
		fprintf(stderr, "bench_localize: out of memory\n");
		fabric_free(&f);
		return 1;
	}
	t2 = 2 % f.ntors;
	t5 = 5 % f.ntors;
	printf("Pingmesh localization (loc_analyze_all, as each pass runs it every 5 s; %u hosts, %u per ToR, "
	       "%u spines, %zu results; %d runs)\n", nhosts, PER_TOR, SPINES, f.n, runs);
	printf("  %-34s %8s %8s %8s %6s  %s\n", "case", "ms p50", "ms max", "one ms", "ratio", "named");
	healthy(&f);
	one(&f, "healthy", runs);
	lossy(&f, f.uplink[t2 * SPINES + 1]);
	one(&f, "a lossy link", runs);
	healthy(&f);
	slow(&f, t5 * PER_TOR + 3);
	one(&f, "a slow host (rack-mates' losses)", runs);
	lossy(&f, f.uplink[t2 * SPINES + 1]);
	one(&f, "lossy link + slow host apart", runs);
	healthy(&f);
	slow(&f, t5 * PER_TOR + 3);
	lossy(&f, f.uplink[t5 * SPINES + 4]);
	one(&f, "lossy link at the slow host's ToR", runs);
	lossy(&f, f.uplink[t2 * SPINES + 1]);
	slow(&f, 7 % nhosts);
	one(&f, "four faults", runs);
	healthy(&f);
	lossy(&f, f.uplink[t5 * SPINES + 4]);
	lossy(&f, f.uplink[t2 * SPINES + 1]);
	one(&f, "two lossy links, neither most", runs);
	healthy(&f);
	spread(&f, 997);
	one(&f, "a few losses scattered", runs);
	healthy(&f);
	busy(&f, 7 % nhosts);
	busy(&f, t5 * PER_TOR + 3);
	one(&f, "two busy incast targets", runs);
	lossy(&f, f.uplink[t2 * SPINES + 1]);
	one(&f, "a lossy link, two busy targets", runs);
	healthy(&f);
	busy(&f, 7 % nhosts);
	busy(&f, t5 * PER_TOR + 3);
	lossier(&f, f.uplink[t2 * SPINES + 1]);
	one(&f, "a lossier link, two busy targets", runs);
	healthy(&f);
	lossier(&f, f.uplink[t2 * SPINES + 1]);
	slow(&f, t5 * PER_TOR + 3);
	one(&f, "a lossier link + slow host apart", runs);
	healthy(&f);
	spread(&f, 7);
	one(&f, "losses spread over the fabric", runs);
	printf("  (ratio: loc_analyze_all's time over one loc_analyze of the same results, the first finding "
	       "alone)\n");
	fabric_free(&f);
	return 0;
}
