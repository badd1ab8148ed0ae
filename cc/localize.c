/* Fault localization from a probe matrix: see localize.h.
 *
 * Every result gets a weight: its share of lost probes when any probe was lost (loss is the
 * strong signal: lossless traffic is not dropped by queues), else 1 when its p99 is far above
 * the typical p99.  Candidates are the hosts (probes to them, probes from them, and both), the
 * switch-to-switch links the probes crossed (when paths are known) and the ToRs.  A candidate
 * explains when most results through it are bad (rate) and it carries most of the bad weight
 * (coverage).  Bad results on fewer than min_pairs pairs name nothing (one pair cannot tell its
 * source from its destination; one slow pair is an outlier), nor do a few scattered bad ones
 * (lost or slow) that no element explains.  The one with the largest coverage wins; ties go to
 * the higher rate, then to the more specific element.  Faults spread under PFC (a slow receiver
 * pauses its ToR, which pauses the senders behind it), so the winner is the element the worst
 * results share, and the next best explanation of what is left is reported as secondary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/localize.h"
#include "lib/hmap.h"
#include "lib/vec.h"

const struct loc_conf loc_defaults = {
	.slow_factor = 5,
	.slow_floor_us = 100,
	.coverage = 0.6,
	.host_rate = 0.5,
	.link_rate = 0.3,
	.min_pairs = 2,
	.fabric_share = 0.1,
	.fabric_loss = 1e-3,
};

const char *loc_kind_name(enum loc_kind k)
{
	static const char *const names[] = { "none", "host", "link", "tor", "fabric" };

	return names[k];
}

enum cand_kind { C_HOST_IN, C_HOST_OUT, C_HOST, C_LINK, C_TOR };

struct cand {
	enum cand_kind kind;
	const char *name;
	unsigned through, bad;
	double weight; /* of the bad results through it */
};

struct cands {
	struct cand *v;
	size_t n, cap;
	struct hmap idx; /* "kind/name" -> index + 1 */
	char **keys;
};

static struct cand *cand_get(struct cands *c, enum cand_kind kind, const char *name)
{
	char key[200];
	void *v;

	snprintf(key, sizeof(key), "%d/%s", kind, name);
	v = hmap_get(&c->idx, key);
	if (v)
		return &c->v[(size_t)(uintptr_t)v - 1];
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		struct cand *nv = realloc(c->v, nc * sizeof(*nv));
		char **nk;

		if (!nv)
			return NULL;
		c->v = nv;
		nk = realloc(c->keys, nc * sizeof(*nk));
		if (!nk)
			return NULL;
		c->keys = nk;
		c->cap = nc;
	}
	c->keys[c->n] = strdup(key);
	if (!c->keys[c->n] || hmap_put(&c->idx, c->keys[c->n], (void *)(uintptr_t)(c->n + 1), NULL) < 0)
		return NULL;
	c->v[c->n] = (struct cand){ .kind = kind, .name = name };
	return &c->v[c->n++];
}

static void count(struct cands *c, enum cand_kind kind, const char *name, const struct loc_result *r,
		  double w)
{
	struct cand *x = name ? cand_get(c, kind, name) : NULL;

	if (!x)
		return;
	x->through++;
	if (r->bad) {
		x->bad++;
		x->weight += w;
	}
}

/* A switch-to-switch link: neither end (split at any '-', names may hold '-') is a host. */
static bool is_fabric_link(const char *link, const struct hmap *hosts)
{
	char buf[160];

	if (strlen(link) >= sizeof(buf))
		return true;
	for (const char *d = strchr(link, '-'); d; d = strchr(d + 1, '-')) {
		size_t k = (size_t)(d - link);

		memcpy(buf, link, k);
		buf[k] = '\0';
		if (hmap_get(hosts, buf) || hmap_get(hosts, d + 1))
			return false;
	}
	return true;
}

/* How many distinct (source, destination) pairs have a bad result, counting up to cap (<= 16). */
static unsigned bad_pairs(const struct loc_result *r, size_t n, unsigned cap)
{
	const struct loc_result *seen[16];
	unsigned k = 0;

	if (cap > 16)
		cap = 16;
	for (size_t i = 0; i < n && k < cap; i++) {
		bool dup = false;

		if (!r[i].bad)
			continue;
		for (unsigned j = 0; j < k && !dup; j++)
			dup = !strcmp(seen[j]->src, r[i].src) && !strcmp(seen[j]->dst, r[i].dst);
		if (!dup)
			seen[k++] = &r[i];
	}
	return k;
}

static int specificity(enum cand_kind k)
{
	return k == C_LINK ? 4 : k == C_HOST_IN || k == C_HOST_OUT ? 3 : k == C_HOST ? 2 : 1;
}

/* The best explanation of the bad weight total, or NULL. */
static struct cand *best(struct cands *c, double total, const struct loc_conf *conf)
{
	struct cand *b = NULL;
	double bcov = 0, brate = 0;

	for (size_t i = 0; i < c->n; i++) {
		struct cand *x = &c->v[i];
		double rate = x->through ? (double)x->bad / x->through : 0;
		double cov = total > 0 ? x->weight / total : 0;
		double need = x->kind == C_LINK ? conf->link_rate : conf->host_rate;

		if (rate < need || cov < conf->coverage)
			continue;
		if (!b || cov > bcov + 1e-9 ||
		    (fabs(cov - bcov) <= 1e-9 && (rate > brate + 1e-9 ||
						  (fabs(rate - brate) <= 1e-9 && specificity(x->kind) > specificity(b->kind))))) {
			b = x;
			bcov = cov;
			brate = rate;
		}
	}
	return b;
}

static void name_of(const struct cand *x, char *out, size_t len)
{
	snprintf(out, len, "%s", x->name);
}

static const char *what(const struct cand *x)
{
	switch (x->kind) {
	case C_HOST_IN:
		return "probes to";
	case C_HOST_OUT:
		return "probes from";
	case C_HOST:
		return "probes to or from";
	case C_LINK:
		return "probes crossing";
	default:
		return "probes to or from hosts under";
	}
}

/* One analysis: by lost probes when use_loss and any was lost, else by latency.  *weak: set when
 * the lost probes named nothing for want of evidence (one pair, or a few scattered), so that
 * the latencies may still say something. */
static void analyze(struct loc_result *r, size_t n, const struct loc_conf *conf, struct loc_finding *f,
		    bool use_loss, bool *weak)
{
	struct cands c = { 0 };
	struct hmap hostset;
	double *p99 = calloc(n + 1, sizeof(double)), typical, limit, total = 0, *w;
	double sent = 0, lost = 0;
	char badly[80];
	unsigned bad = 0, badpairs;
	bool paths = false, lossy = false;
	struct cand *b;

	*weak = false;
	memset(f, 0, sizeof(*f));
	f->total = (unsigned)n;
	w = calloc(n + 1, sizeof(double));
	if (!p99 || !w) {
		free(p99);
		free(w);
		return;
	}
	for (size_t i = 0; i < n; i++)
		p99[i] = r[i].p99_us;
	qsort(p99, n, sizeof(double), vec_cmp_double);
	typical = n ? p99[n / 2] : 0;
	free(p99);
	f->typical_p99_us = typical;
	limit = conf->slow_factor * typical > conf->slow_floor_us ? conf->slow_factor * typical : conf->slow_floor_us;
	hmap_init(&hostset);
	hmap_init(&c.idx);
	for (size_t i = 0; i < n; i++) {
		hmap_put(&hostset, r[i].src, (void *)r[i].src, NULL);
		hmap_put(&hostset, r[i].dst, (void *)r[i].dst, NULL);
		lossy |= use_loss && r[i].lost > 0;
		paths |= r[i].npath > 0;
		sent += (double)r[i].n;
		lost += (double)r[i].lost;
	}
	for (size_t i = 0; i < n; i++) {
		r[i].bad = lossy ? r[i].lost > 0 : r[i].p99_us > limit;
		w[i] = !r[i].bad ? 0 : lossy && r[i].n ? (double)r[i].lost / (double)r[i].n : 1;
		bad += r[i].bad;
		total += w[i];
		count(&c, C_HOST_OUT, r[i].src, &r[i], w[i]);
		count(&c, C_HOST_IN, r[i].dst, &r[i], w[i]);
		count(&c, C_HOST, r[i].src, &r[i], w[i]);
		count(&c, C_HOST, r[i].dst, &r[i], w[i]);
		count(&c, C_TOR, r[i].src_tor, &r[i], w[i]);
		if (r[i].dst_tor && (!r[i].src_tor || strcmp(r[i].src_tor, r[i].dst_tor)))
			count(&c, C_TOR, r[i].dst_tor, &r[i], w[i]);
		for (unsigned k = 0; k < r[i].npath; k++)
			if (is_fabric_link(r[i].path[k], &hostset))
				count(&c, C_LINK, r[i].path[k], &r[i], w[i]);
	}
	f->bad = bad;
	if (!bad) {
		f->kind = LOC_NONE;
		if (n)
			snprintf(f->evidence, sizeof(f->evidence), "all %zu results good (typical p99 %.1f us)", n,
				 typical);
		else
			snprintf(f->evidence, sizeof(f->evidence),
				 "no probe results in the window (the pingmesh off or not probing with that op and "
				 "size, or no host agent reporting)");
		goto out;
	}
	if ((badpairs = bad_pairs(r, n, conf->min_pairs)) < conf->min_pairs) {
		/* one pair (a host that just died, seen by its first prober; one scheduling hiccup)
		 * cannot tell its source from its destination: wait for more evidence */
		f->kind = LOC_NONE;
		*weak = lossy;
		snprintf(f->evidence, sizeof(f->evidence),
			 "%u of %zu results %s, on %u pair(s), fewer than the %u a finding needs%s", bad, n,
			 lossy ? "lost probes" : "slow (p99 far above the typical)", badpairs, conf->min_pairs,
			 lossy ? "" : ": an outlier");
		goto out;
	}
	b = best(&c, total, conf);
	if (lossy)
		snprintf(badly, sizeof(badly), "lost probes (%.0f of %.0f probes)", lost, sent);
	else
		snprintf(badly, sizeof(badly), "slow (p99 far above the typical %.1f us)", typical);
	if (!b && bad < conf->fabric_share * (double)n && (!lossy || lost < conf->fabric_loss * sent)) {
		/* a probe that timed out behind a PFC pause is lost as surely as a dropped one: a
		 * few such on pairs that share nothing are the tail of a busy fabric, not a fault
		 * (the demo's incast loses about one probe in 10,000-30,000 this way).  A fault the
		 * sparse cross-ToR sample sees on few results (a spine that drops) loses far more */
		f->kind = LOC_NONE;
		*weak = lossy;
		snprintf(f->evidence, sizeof(f->evidence),
			 "%u of %zu results %s, scattered: no host, link or ToR explains them, and too few "
			 "for the fabric at large",
			 bad, n, badly);
		goto out;
	}
	if (!b) {
		f->kind = LOC_FABRIC;
		snprintf(f->subject, sizeof(f->subject), "fabric");
		f->bad_through = bad;
		f->through = (unsigned)n;
		snprintf(f->evidence, sizeof(f->evidence),
			 "%u of %zu results %s, spread so that no single host, link or ToR explains them",
			 bad, n, badly);
		goto out;
	}
	f->kind = b->kind == C_LINK ? LOC_LINK : b->kind == C_TOR ? LOC_TOR : LOC_HOST;
	name_of(b, f->subject, sizeof(f->subject));
	f->bad_through = b->bad;
	f->through = b->through;
	{
		int len = snprintf(f->evidence, sizeof(f->evidence),
				   "%u of %zu results %s; %u of the %u results of %s %s are, and they carry "
				   "%.0f%% of the bad%s",
				   bad, n, lossy ? "lost probes" : "are slow (p99 far above the typical)", b->bad,
				   b->through, what(b), b->name, 100 * b->weight / total,
				   lossy ? " (weighted by the share of probes lost)" : "");

		/* what is left: the next explanation (faults spread under PFC) */
		if (len > 0 && (size_t)len < sizeof(f->evidence)) {
			double left = total - b->weight;
			struct cand *second = NULL;
			double best2 = 0;

			for (size_t i = 0; i < c.n; i++) {
				struct cand *x = &c.v[i];

				/* the same host the other way, or a ToR or link that contains the winner,
				 * is not a second explanation */
				if (x == b || !strcmp(x->name, b->name) || x->through == 0)
					continue;
				if ((double)x->bad / x->through >= conf->host_rate && x->weight > best2 &&
				    x->weight > 0.3 * left && left > 0.15 * total) {
					second = x;
					best2 = x->weight;
				}
			}
			if (second)
				snprintf(f->evidence + len, sizeof(f->evidence) - (size_t)len,
					 "; secondary (likely a consequence, e.g. PFC back-pressure): %s %s",
					 what(second), second->name);
		}
	}
out:
	hmap_fini(&hostset);
	hmap_fini(&c.idx);
	for (size_t i = 0; i < c.n; i++)
		free(c.keys[i]);
	free(c.keys);
	free(c.v);
	free(w);
}

void loc_analyze(struct loc_result *r, size_t n, const struct loc_conf *conf, struct loc_finding *f)
{
	struct loc_finding slow;
	bool weak, unused;
	unsigned nlost = 0;
	int len;

	if (!conf)
		conf = &loc_defaults;
	analyze(r, n, conf, f, true, &weak);
	if (!weak)
		return;
	/* a few lost probes that name nothing do not hide what the latencies say (a congested
	 * fabric loses a probe or two to timeouts behind its pauses) */
	analyze(r, n, conf, &slow, false, &unused);
	slow.bad = 0;
	for (size_t i = 0; i < n; i++) {
		nlost += r[i].lost > 0;
		if (slow.kind == LOC_NONE)
			r[i].bad = r[i].lost > 0; /* the first analysis's marks, and its finding */
		else
			r[i].bad |= r[i].lost > 0;
		slow.bad += r[i].bad;
	}
	if (slow.kind == LOC_NONE)
		return;
	*f = slow;
	len = (int)strlen(f->evidence);
	snprintf(f->evidence + len, sizeof(f->evidence) - (size_t)len,
		 "; besides, %u result(s) lost probes, too few to name anything", nlost);
}
