/* The detector's cost at fabric scale: a synthetic snapshot of S switches x 64 ports x 2
 * lossless priorities plus H hosts (the target: 2,000 switches and 50,000 hosts), with
 * what a bad day looks like: a few per cent of the queues congested (paused, draining), a
 * 4-switch deadlock and a pause storm with a tree of victims.  Prints the time of cc_dl_run
 * (median and max of the runs), the snapshot's memory, and the same at 1/4 and 1/2 of the size
 * so that linear growth can be read off; the pfcwd baseline's poll on the same snapshot beside
 * it.  No bound is enforced here (make bench prints, tests/system checks correctness).
 *
 *   bench_detect_scale [--switches N] [--hosts N] [--runs N] */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cc/deadlock.h"
#include "cc/pfcwd.h"
#include "cc/snap.h"
#include "lib/timeutil.h"

#define PORTS 64
#define P3 3
#define P4 4
#define IV 200000 /* us: the fast lane's interval */

static void set(struct cc_snap *s, uint32_t port, int prio, enum lane_field f, uint64_t v)
{
	cc_snap_set(s, port, lane_field_names[f], prio, v);
}

static void healthy(struct cc_snap *s, uint32_t p, int prio, bool sw)
{
	for (int f = 0; f < CF_N; f++)
		if (sw || (f != CF_QUEUE_DEPTH && f != CF_QUEUE_WATERMARK))
			set(s, p, prio, (enum lane_field)f, 0);
	set(s, p, prio, CF_TX_BYTES, 2500000000ULL);
	set(s, p, prio, CF_RX_BYTES, 2500000000ULL);
	set(s, p, prio, CF_TX_PACKETS, 600000);
	set(s, p, prio, CF_RX_PACKETS, 600000);
}

static void paused(struct cc_snap *s, uint32_t p, int prio, uint64_t tx)
{
	uint32_t peer = s->ports[p].peer;

	set(s, p, prio, CF_RX_PAUSE_US, IV);
	set(s, p, prio, CF_RX_PAUSE_FRAMES, 4000);
	set(s, p, prio, CF_PAUSED, 1);
	set(s, p, prio, CF_TX_BYTES, tx);
	set(s, p, prio, CF_TX_PACKETS, tx / 4096);
	if (s->nodes[s->ports[p].node].kind == CC_SWITCH)
		set(s, p, prio, CF_QUEUE_DEPTH, 300000);
	set(s, peer, prio, CF_TX_PAUSE_US, IV);
	set(s, peer, prio, CF_PAUSING, 1);
	set(s, peer, prio, CF_TX_PAUSE_FRAMES, 4000);
	if (!tx)
		set(s, peer, prio, CF_RX_BYTES, 0);
}

/* Leaves with hosts and uplinks, spines above; every switch has PORTS ports (some unlinked). */
static struct cc_snap *build(unsigned nsw, unsigned nhosts)
{
	struct cc_snap *s = cc_snap_new((1u << P3) | (1u << P4), 100 * IV, IV);
	unsigned nleaves = nsw * 5 / 8, nspines = nsw - nleaves;
	unsigned hosts_per_leaf = (nhosts + nleaves - 1) / nleaves, up = PORTS - hosts_per_leaf;
	char a[32], b[32];
	unsigned h = 0;

	if (!s || hosts_per_leaf >= PORTS)
		abort();
	for (unsigned i = 0; i < nleaves; i++) {
		snprintf(a, sizeof(a), "leaf%u", i);
		cc_snap_node(s, a, CC_SWITCH);
	}
	for (unsigned i = 0; i < nspines; i++) {
		snprintf(a, sizeof(a), "spine%u", i);
		cc_snap_node(s, a, CC_SWITCH);
	}
	for (unsigned l = 0; l < nleaves; l++) {
		snprintf(a, sizeof(a), "leaf%u", l);
		for (unsigned k = 0; k < hosts_per_leaf && h < nhosts; k++, h++) {
			int hn, x, y;

			snprintf(b, sizeof(b), "h%u", h);
			hn = cc_snap_node(s, b, CC_HOST);
			x = cc_snap_port(s, (uint32_t)hn, "nic0:1");
			y = cc_snap_port(s, l, b);
			cc_snap_link(s, (uint32_t)x, (uint32_t)y);
		}
		for (unsigned u = 0; u < up; u++) {
			unsigned sp = (l * up + u) % nspines;
			int x, y;

			snprintf(b, sizeof(b), "spine%u", sp);
			snprintf(a, sizeof(a), "up%u", u);
			x = cc_snap_port(s, l, a);
			snprintf(a, sizeof(a), "leaf%u-%u", l, u);
			y = cc_snap_port(s, nleaves + sp, a);
			cc_snap_link(s, (uint32_t)x, (uint32_t)y);
		}
	}
	/* every switch has PORTS ports */
	for (uint32_t n = 0; n < nleaves + nspines; n++)
		for (unsigned k = s->nodes[n].nports; k < PORTS; k++) {
			snprintf(a, sizeof(a), "spare%u", k);
			cc_snap_port(s, n, a);
		}
	for (uint32_t p = 0; p < s->nports; p++) {
		bool sw = s->nodes[s->ports[p].node].kind == CC_SWITCH;

		s->ports[p].lossless = (1u << P3) | (1u << P4);
		healthy(s, p, P3, sw);
		healthy(s, p, P4, sw);
	}
	/* 3% of the linked queues congested: paused, draining */
	for (uint32_t p = 0; p < s->nports; p += 33)
		if (s->ports[p].peer != CC_NONE)
			paused(s, p, P3, 1000000);
	/* a deadlock on priority 4: leaf0 -> spine A -> leaf L -> spine B -> leaf0, with L a leaf
	 * linked to both of leaf0's first two spines */
	{
		uint32_t up0 = s->nodes[0].ports[hosts_per_leaf], up1 = s->nodes[0].ports[hosts_per_leaf + 1];
		uint32_t spa = s->ports[s->ports[up0].peer].node, spb = s->ports[s->ports[up1].peer].node;
		uint32_t a2l = CC_NONE, l2b = CC_NONE, b2l0 = s->ports[up1].peer;

		for (uint32_t i = 0; i < s->nodes[spa].nports && l2b == CC_NONE; i++) {
			uint32_t q = s->nodes[spa].ports[i], leaf;

			if (s->ports[q].peer == CC_NONE || (leaf = s->ports[s->ports[q].peer].node) == 0)
				continue;
			for (uint32_t j = 0; j < s->nodes[leaf].nports; j++) {
				uint32_t u = s->nodes[leaf].ports[j];

				if (s->ports[u].peer != CC_NONE && s->ports[s->ports[u].peer].node == spb) {
					a2l = q;
					l2b = u;
					break;
				}
			}
		}
		if (l2b == CC_NONE)
			abort();
		paused(s, up0, P4, 0);
		paused(s, a2l, P4, 0);
		paused(s, l2b, P4, 0);
		paused(s, b2l0, P4, 0);
	}
	/* a storm: the last host pauses its leaf port; the hosts of that leaf freeze behind it */
	{
		uint32_t leafport, leaf;
		int hp;

		snprintf(b, sizeof(b), "h%u", nhosts - 1);
		hp = cc_snap_find_port(s, b, "nic0:1");
		leafport = s->ports[hp].peer;
		leaf = s->ports[leafport].node;
		paused(s, leafport, P3, 0);
		for (uint32_t i = 0; i < s->nodes[leaf].nports; i++) {
			uint32_t q = s->nodes[leaf].ports[i], hq = s->ports[q].peer;

			if (hq != CC_NONE && hq != (uint32_t)hp && s->nodes[s->ports[hq].node].kind == CC_HOST)
				paused(s, hq, P3, 0);
			else if (hq != CC_NONE && q != leafport)
				set(s, q, P3, CF_QUEUE_DEPTH, 0);
		}
		set(s, (uint32_t)hp, P3, CF_RX_BYTES, 0);
	}
	cc_snap_finish(s);
	return s;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static size_t snap_bytes(const struct cc_snap *s)
{
	size_t b = sizeof(*s) + s->capnodes * sizeof(*s->nodes) + s->capports * sizeof(*s->ports) +
		   s->prcap * s->nprios * sizeof(*s->prbuf);

	for (uint32_t i = 0; i < s->nnodes; i++)
		b += s->nodes[i].capports * sizeof(uint32_t) + strlen(s->nodes[i].name) + 1;
	for (uint32_t i = 0; i < s->nports; i++)
		b += strlen(s->ports[i].key) + 1;
	return b + 2 * 16 * (s->nnodes + s->nports); /* the name indexes, roughly */
}

static long rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int one(unsigned nsw, unsigned nhosts, int runs, bool check)
{
	int64_t t0 = tu_mono_ns();
	struct cc_snap *s = build(nsw, nhosts);
	double build_ms = (double)(tu_mono_ns() - t0) / 1e6, *ms = calloc((size_t)runs, sizeof(*ms)), wd_ms;
	struct cc_dl_conf c = cc_dl_defaults;
	const struct cc_dl_result *r = NULL;
	const struct cc_wd_action *wa;
	struct cc_wd_conf wc = cc_wd_scaled(IV);
	struct cc_wd *w = cc_wd_new(&wc);
	size_t nwa, deadlocks = 0, storms = 0, stuck = 0, cong = 0;

	for (int i = 0; i < runs; i++) {
		struct cc_dl *d = cc_dl_new(&c); /* a fresh detector: every run sees everything new */

		t0 = tu_mono_ns();
		if (cc_dl_run(d, s, &r) < 0)
			abort();
		ms[i] = (double)(tu_mono_ns() - t0) / 1e6;
		stuck = r->stuck_queues;
		if (getenv("BENCH_DEBUG"))
			for (size_t k = 0; k < r->nfindings; k++)
				fprintf(stderr, "%s\n", r->findings[k].summary);
		deadlocks = storms = cong = 0;
		for (size_t k = 0; k < r->nfindings; k++) {
			deadlocks += r->findings[k].cls == CC_DL_DEADLOCK;
			storms += r->findings[k].cls == CC_DL_PAUSE_STORM;
			if (r->findings[k].cls == CC_DL_CONGESTION)
				cong += r->findings[k].victims_total;
		}
		cc_dl_free(d);
	}
	t0 = tu_mono_ns();
	cc_wd_poll(w, s, &wa, &nwa);
	wd_ms = (double)(tu_mono_ns() - t0) / 1e6;
	qsort(ms, (size_t)runs, sizeof(*ms), cmp_d);
	printf("  %6u %7u %9u %9.1f %11.1f %9.1f %9.1f %10.1f %6zu %6zu %6zu %7zu\n", nsw, nhosts, s->nports,
	       (double)snap_bytes(s) / 1e6, (double)snap_bytes(s) / s->nports, ms[runs / 2], ms[runs - 1], wd_ms,
	       deadlocks, storms, stuck, cong);
	(void)build_ms;
	if (check && (deadlocks != 1 || storms != 1)) {
		fprintf(stderr, "bench_detect_scale: expected 1 deadlock and 1 storm, found %zu and %zu\n", deadlocks,
			storms);
		return 1;
	}
	cc_wd_free(w);
	free(ms);
	cc_snap_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "switches", required_argument, NULL, 's' },
					      { "hosts", required_argument, NULL, 'H' },
					      { "runs", required_argument, NULL, 'r' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	unsigned nsw = 2000, nhosts = 50000;
	int runs = 9, c, rc = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		unsigned long v;

		if (c == 'h') {
			printf("usage: bench_detect_scale [--switches N] [--hosts N] [--runs N]\n");
			return 0;
		}
		if (c == '?')
			return 2;
		v = strtoul(optarg, &end, 10);
		if (*end || v == 0 || v > 1000000) {
			fprintf(stderr, "bench_detect_scale: '%s' is not a count\n", optarg);
			return 2;
		}
		if (c == 's')
			nsw = (unsigned)v;
		else if (c == 'H')
			nhosts = (unsigned)v;
		else
			runs = (int)v;
	}
	if (nsw < 16 || nhosts / (nsw * 5 / 8) >= PORTS - 4) {
		fprintf(stderr, "bench_detect_scale: too few switches for the hosts\n");
		return 2;
	}
	printf("Detector cost (cc_dl_run on one fast-lane snapshot, %d runs; 2 lossless priorities, 64 ports "
	       "per switch)\n", runs);
	printf("  %6s %7s %9s %9s %11s %9s %9s %10s %6s %6s %6s %7s\n", "switch", "hosts", "ports", "snap MB",
	       "B per port", "ms p50", "ms max", "pfcwd ms", "dlock", "storm", "stuck", "congest");
	rc |= one(nsw / 4, nhosts / 4, runs, true);
	rc |= one(nsw / 2, nhosts / 2, runs, true);
	rc |= one(nsw, nhosts, runs, true);
	printf("  (peak RSS %ld MB)\n", rss_kb() / 1024);
	return rc;
}
