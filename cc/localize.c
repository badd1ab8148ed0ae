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
 * the higher rate, then to the more specific element; a ToR gives way to a host under it or
 * an uplink of it that carries more than half of its share (best()).  Faults spread under PFC
 * (a slow receiver
 * pauses its ToR, which pauses the senders behind it), so the winner is the element the worst
 * results share, and the next best explanation of what is left is reported as secondary. */
#include <limits.h>
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
	size_t len = strnlen(name, sizeof(key) - 3);
	void *v;

	/* "kind/name" (by hand: this runs for every element of every result) */
	key[0] = (char)('0' + kind);
	key[1] = '/';
	memcpy(key + 2, name, len);
	key[len + 2] = '\0';
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

/* Whether result r counts for candidate x, as analyze() counted it. */
static bool counts_for(const struct cand *x, const struct loc_result *r)
{
	switch (x->kind) {
	case C_HOST_OUT:
		return !strcmp(r->src, x->name);
	case C_HOST_IN:
		return !strcmp(r->dst, x->name);
	case C_HOST:
		return !strcmp(r->src, x->name) || !strcmp(r->dst, x->name);
	case C_TOR:
		return (r->src_tor && !strcmp(r->src_tor, x->name)) || (r->dst_tor && !strcmp(r->dst_tor, x->name));
	default:
		for (unsigned k = 0; k < r->npath; k++)
			if (!strcmp(r->path[k], x->name))
				return true;
		return false;
	}
}

/* The weight of x's bad results that b does not carry: what x explains of what b leaves. */
static double left_weight(const struct cand *x, const struct cand *b, const struct loc_result *r, size_t n,
			  const double *w)
{
	double left = 0;

	for (size_t i = 0; i < n; i++)
		if (w[i] > 0 && counts_for(x, &r[i]) && !counts_for(b, &r[i]))
			left += w[i];
	return left;
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

static bool explained_by(const struct loc_result *x, const struct loc_finding *f);

/* How many distinct (source, destination) pairs have a bad result (through f unless NULL),
 * counting up to cap (<= 16). */
static unsigned bad_pairs(const struct loc_result *r, size_t n, unsigned cap, const struct loc_finding *f)
{
	const struct loc_result *seen[16];
	unsigned k = 0;

	if (cap > 16)
		cap = 16;
	for (size_t i = 0; i < n && k < cap; i++) {
		bool dup = false;

		if (!r[i].bad || (f && !explained_by(&r[i], f)))
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

/* x (its share cov of the bad, its rate) explains better than b: the larger share, the higher
 * rate, the more specific. */
static bool better(const struct cand *x, double cov, double rate, const struct cand *b, double bcov, double brate)
{
	if (!b)
		return true;
	if (fabs(cov - bcov) > 1e-9)
		return cov > bcov;
	if (fabs(rate - brate) > 1e-9)
		return rate > brate;
	return specificity(x->kind) > specificity(b->kind);
}

/* Explains: most results through it bad, and it carries coverage of the bad weight total. */
static bool explains(const struct cand *x, double total, const struct loc_conf *conf, double *cov, double *rate)
{
	*rate = x->through ? (double)x->bad / x->through : 0;
	*cov = total > 0 ? x->weight / total : 0;
	return *rate >= (x->kind == C_LINK ? conf->link_rate : conf->host_rate) && *cov >= conf->coverage;
}

/* The ToR of a host, as the results say (NULL: unknown). */
static const char *tor_of(const struct loc_result *r, size_t n, const char *host)
{
	const char *t = NULL;

	for (size_t i = 0; i < n && !t; i++)
		t = !strcmp(r[i].src, host) ? r[i].src_tor : !strcmp(r[i].dst, host) ? r[i].dst_tor : NULL;
	return t;
}

/* Host x (under ToR t) stands out: the mean weight of its results over twice that of t's
 * results to or from other hosts (in a rack of two, each host carries half its failing ToR's). */
static bool host_stands_out(const struct cand *x, const struct cand *t, const struct loc_result *r, size_t n,
			    const double *w)
{
	double own = 0, other = 0;
	unsigned nown = 0, nother = 0;

	for (size_t i = 0; i < n; i++) {
		if (!counts_for(t, &r[i]))
			continue;
		if (strcmp(r[i].src, x->name) && strcmp(r[i].dst, x->name)) {
			nother++;
			other += w[i];
		} else if (counts_for(x, &r[i])) {
			nown++;
			own += w[i];
		}
	}
	return nown && own * nother > 2 * other * nown;
}

/* Link x is an uplink of ToR t (t one of its ends, and every result across it to or from a host
 * under t), and t's other results are mostly good (under rate_max bad), both those within the
 * rack and those across its other uplinks: a ToR that fails shows on each. */
static bool uplink_alone(const struct cand *x, const struct cand *t, const struct loc_result *r, size_t n,
			 double rate_max)
{
	size_t tl = strlen(t->name), xl = strlen(x->name);
	unsigned in = 0, in_bad = 0, out = 0, out_bad = 0;

	if (xl <= tl + 1 || !((!strncmp(x->name, t->name, tl) && x->name[tl] == '-') ||
			      (!strcmp(x->name + xl - tl, t->name) && x->name[xl - tl - 1] == '-')))
		return false;
	for (size_t i = 0; i < n; i++) {
		bool across = counts_for(x, &r[i]), under = counts_for(t, &r[i]);

		if (across && !under)
			return false;
		if (across || !under)
			continue;
		if (r[i].src_tor && r[i].dst_tor && !strcmp(r[i].src_tor, r[i].dst_tor)) {
			in++;
			in_bad += r[i].bad;
		} else {
			out++;
			out_bad += r[i].bad;
		}
	}
	return in + out > 0 && (!in || in_bad < rate_max * in) && (!out || out_bad < rate_max * out);
}

/* The best explanation of the bad weight total (w: each result's), or NULL.  A ToR gives way to
 * a host under it whose results are mostly bad and carry more than half the ToR's share, and
 * that explains on its own too or stands out among the ToR's (host_stands_out: the ToR covers
 * what the host explains, and more: the
 * host's back-pressure, or a fault beside it, which the rest's analysis names; before, the ToR
 * was named whenever enough of its results were bad, and a slow host's finding flipped to its
 * ToR and back as its rack-mates' timeouts came and went; and then the host had to explain on
 * its own, which it failed one pass in ten beside a lossy uplink carrying over a third of the
 * bad: a CI run; in a rack of two, each host carries more than half of its failing ToR's).  Else to an uplink of it, the one that explains best, carrying more
 * than half the ToR's share, when the ToR's other results are mostly good (uplink_alone): a
 * ToR that fails shows within its rack too, and on every uplink (on one alone when the others
 * carry nothing), so a ToR whose trouble is all across one uplink is that link's (the same CI
 * run: with the host's results set aside, the lossy uplink and a rack-mate's back-pressure read
 * as the ToR, and the link was never named). */
static struct cand *best(struct cands *c, double total, const struct loc_conf *conf, const struct loc_result *r,
			 size_t n, const double *w)
{
	struct cand *b = NULL, *h = NULL;
	double bcov = 0, brate = 0, hcov = 0, hrate = 0, cov, rate;
	bool host;

	for (size_t i = 0; i < c->n; i++)
		if (explains(&c->v[i], total, conf, &cov, &rate) && better(&c->v[i], cov, rate, b, bcov, brate)) {
			b = &c->v[i];
			bcov = cov;
			brate = rate;
		}
	if (!b || b->kind != C_TOR)
		return b;
	for (size_t i = 0; i < c->n; i++) {
		struct cand *x = &c->v[i];
		const char *t;
		bool alone;

		alone = explains(x, total, conf, &cov, &rate);
		if (x->kind == C_LINK || x->kind == C_TOR || rate < conf->host_rate || cov <= bcov / 2 ||
		    !better(x, cov, rate, h, hcov, hrate) || !(t = tor_of(r, n, x->name)) || strcmp(t, b->name) ||
		    (!alone && !host_stands_out(x, b, r, n, w)))
			continue;
		h = x;
		hcov = cov;
		hrate = rate;
	}
	host = h != NULL;
	for (size_t i = 0; !host && i < c->n; i++) {
		struct cand *x = &c->v[i];

		explains(x, total, conf, &cov, &rate);
		if (x->kind != C_LINK || rate < conf->link_rate || cov <= bcov / 2 ||
		    !better(x, cov, rate, h, hcov, hrate) || !uplink_alone(x, b, r, n, conf->host_rate))
			continue;
		h = x;
		hcov = cov;
		hrate = rate;
	}
	return h ?: b;
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
	f->by_loss = lossy;
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
	if ((badpairs = bad_pairs(r, n, conf->min_pairs, NULL)) < conf->min_pairs) {
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
	b = best(&c, total, conf, r, n, w);
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
				   "%u of %zu results %s; %u of the %u results of %s %s %s, and they carry "
				   "%.0f%% of the bad%s",
				   bad, n, lossy ? "lost probes" : "are slow (p99 far above the typical)", b->bad,
				   b->through, what(b), b->name, lossy ? "did" : "are slow", 100 * b->weight / total,
				   lossy ? " (weighted by the share of probes lost)" : "");

		/* what is left: the next explanation (faults spread under PFC) */
		if (len > 0 && (size_t)len < sizeof(f->evidence)) {
			double left = total - b->weight, best2 = 0, rate2 = 0;
			struct cand *second = NULL;

			for (size_t i = 0; i < c.n && left > 0.15 * total; i++) {
				struct cand *x = &c.v[i];
				double rate = x->through ? (double)x->bad / x->through : 0, wl;

				/* the same host the other way is not a second explanation, nor what a ToR
				 * or link carries of the winner's (a trial: "secondary: probes to or from
				 * hosts under leaf1" for a host under leaf1): what it explains of the rest
				 * (x's weight bounds it) */
				if (x == b || !strcmp(x->name, b->name) || rate < conf->host_rate ||
				    x->weight < best2 || x->weight <= 0.3 * left)
					continue;
				wl = left_weight(x, b, r, n, w);
				/* (a tie: the narrower, the host before its ToR) */
				if (wl > 0.3 * left && (wl > best2 || (wl == best2 && rate > rate2))) {
					second = x;
					best2 = wl;
					rate2 = rate;
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

/* --- several faults ------------------------------------------------------------------------------ */

struct span {
	const char *p;
	size_t len;
};

/* A link on a path and its two ends (ok: it has two). */
struct lend {
	const char *name;
	struct span e[2];
	bool ok;
};

/* The fabric's shape as the results show it: hosts and ToRs (each name to itself; the results'
 * own strings), and the links on paths (each to its ends, worked out once: the searches ask
 * for them for every result). */
struct shape {
	const struct loc_result *r;
	size_t n;
	struct hmap hosts, tors, links;
	struct lend *ends;
};

static bool link_ends(const struct shape *s, const char *l, size_t m, struct span ends[2]);

static void shape_init(struct shape *s, const struct loc_result *r, size_t n)
{
	const char *key;
	void *val;

	s->r = r;
	s->n = n;
	hmap_init(&s->hosts);
	hmap_init(&s->tors);
	hmap_init(&s->links);
	/* (a name left out on ENOMEM only makes things look nearer: fewer findings) */
	for (size_t i = 0; i < n; i++) {
		hmap_put(&s->hosts, r[i].src, (void *)r[i].src, NULL);
		hmap_put(&s->hosts, r[i].dst, (void *)r[i].dst, NULL);
		if (r[i].src_tor)
			hmap_put(&s->tors, r[i].src_tor, (void *)r[i].src_tor, NULL);
		if (r[i].dst_tor)
			hmap_put(&s->tors, r[i].dst_tor, (void *)r[i].dst_tor, NULL);
		for (unsigned k = 0; k < r[i].npath; k++)
			hmap_put(&s->links, r[i].path[k], (void *)r[i].path[k], NULL);
	}
	/* (without room, the ends are worked out when asked) */
	s->ends = calloc(s->links.len + 1, sizeof(*s->ends));
	for (size_t it = 0, i = 0; s->ends && hmap_next(&s->links, &it, &key, &val); i++) {
		s->ends[i].name = key;
		s->ends[i].ok = link_ends(s, key, strlen(key), s->ends[i].e);
	}
	/* (a put may grow the table even when it replaces: out of room, none of it is used) */
	for (size_t i = 0; s->ends && i < s->links.len; i++)
		if (hmap_put(&s->links, s->ends[i].name, &s->ends[i], NULL) < 0) {
			free(s->ends);
			s->ends = NULL;
		}
}

/* The ends of a link on a path (link_ends, from the shape's cache). */
static bool ends_known(const struct shape *s, const char *l, struct span e[2])
{
	const struct lend *x = s->ends ? hmap_get(&s->links, l) : NULL;

	if (!x)
		return link_ends(s, l, strlen(l), e);
	e[0] = x->e[0];
	e[1] = x->e[1];
	return x->ok;
}

static void shape_fini(struct shape *s)
{
	hmap_fini(&s->hosts);
	hmap_fini(&s->tors);
	hmap_fini(&s->links);
	free(s->ends);
}

static bool span_eq(struct span a, struct span b)
{
	return a.len == b.len && !memcmp(a.p, b.p, a.len);
}

static bool span_in(const struct hmap *h, struct span a)
{
	char key[160];

	if (a.len >= sizeof(key))
		return false;
	memcpy(key, a.p, a.len);
	key[a.len] = '\0';
	return hmap_get(h, key) != NULL;
}

/* The two ends of link l (m bytes; names may hold '-'): split where the link the other way
 * round is on a path too, else where one side is a host or a ToR, else at the first '-'.
 * false: no '-'. */
static bool link_ends(const struct shape *s, const char *l, size_t m, struct span ends[2])
{
	int best = -1;

	for (const char *d = memchr(l, '-', m); d; d = memchr(d + 1, '-', m - (size_t)(d + 1 - l))) {
		struct span a = { l, (size_t)(d - l) }, b = { d + 1, m - a.len - 1 };
		char rev[320];
		int score = 0;

		if (!a.len || !b.len)
			continue;
		if (m < sizeof(rev)) {
			snprintf(rev, sizeof(rev), "%.*s-%.*s", (int)b.len, b.p, (int)a.len, a.p);
			if (hmap_get(&s->links, rev))
				score = 2;
		}
		if (!score && (span_in(&s->hosts, a) || span_in(&s->hosts, b) || span_in(&s->tors, a) ||
			       span_in(&s->tors, b)))
			score = 1;
		if (score > best) {
			best = score;
			ends[0] = a;
			ends[1] = b;
		}
	}
	return best >= 0;
}

/* The switches a finding names or hangs off: a host's ToR, the ToR, each link's two ends
 * ("a-b|c-d" when links tie).  unknown: a host whose ToR the results do not say. */
struct ends {
	struct span v[2 * LOC_MAX_FINDINGS + 2];
	unsigned n;
	bool unknown;
};

static void ends_of(const struct shape *s, const struct loc_finding *f, struct ends *e)
{
	const char *p = f->subject;

	e->n = 0;
	e->unknown = false;
	if (f->kind == LOC_HOST) {
		const char *t = tor_of(s->r, s->n, p);

		e->unknown = !t;
		if (t)
			e->v[e->n++] = (struct span){ t, strlen(t) };
		return;
	}
	if (f->kind == LOC_TOR) {
		e->v[e->n++] = (struct span){ p, strlen(p) };
		return;
	}
	while (f->kind == LOC_LINK && *p && e->n + 2 <= sizeof(e->v) / sizeof(e->v[0])) {
		size_t m = strcspn(p, "|");

		if (link_ends(s, p, m, &e->v[e->n]))
			e->n += 2;
		p += m + (p[m] == '|');
	}
}

static bool ends_meet(const struct ends *a, const struct ends *b)
{
	for (unsigned i = 0; i < a->n; i++)
		for (unsigned j = 0; j < b->n; j++)
			if (span_eq(a->v[i], b->v[j]))
				return true;
	return false;
}

/* A link on a path joins a switch of a to one of b. */
static bool ends_adjacent(const struct shape *s, const struct ends *a, const struct ends *b)
{
	const char *key;
	void *val;
	size_t it = 0;

	while (hmap_next(&s->links, &it, &key, &val)) {
		struct span e[2];
		struct ends one = { .n = 1 };

		if (!ends_known(s, key, e))
			continue;
		for (int k = 0; k < 2; k++) {
			one.v[0] = e[k];
			if (ends_meet(&one, a)) {
				one.v[0] = e[!k];
				if (ends_meet(&one, b))
					return true;
			}
		}
	}
	return false;
}

bool loc_names_link(const struct loc_finding *f, const char *link)
{
	size_t n = link ? strlen(link) : 0;

	for (const char *s = f->subject; f->kind == LOC_LINK && link && *s;) {
		size_t m = strcspn(s, "|");

		if (m == n && !strncmp(s, link, n))
			return true;
		s += m + (s[m] == '|');
	}
	return false;
}

/* Result x is one of those finding f names: to or from its host, under its ToR, across one of
 * its links. */
static bool explained_by(const struct loc_result *x, const struct loc_finding *f)
{
	const char *s = f->subject;

	switch (f->kind) {
	case LOC_HOST:
		return !strcmp(x->src, s) || !strcmp(x->dst, s);
	case LOC_TOR:
		return (x->src_tor && !strcmp(x->src_tor, s)) || (x->dst_tor && !strcmp(x->dst_tor, s));
	case LOC_LINK:
		for (unsigned k = 0; k < x->npath; k++)
			if (loc_names_link(f, x->path[k]))
				return true;
		return false;
	default:
		return true;
	}
}

/* A result goes through switch sw: under it, or across a link at it. */
static bool through_switch(const struct shape *s, const struct loc_result *x, struct span sw)
{
	struct span e[2];

	if ((x->src_tor && span_eq((struct span){ x->src_tor, strlen(x->src_tor) }, sw)) ||
	    (x->dst_tor && span_eq((struct span){ x->dst_tor, strlen(x->dst_tor) }, sw)))
		return true;
	for (unsigned k = 0; k < x->npath; k++)
		if (ends_known(s, x->path[k], e) && (span_eq(e[0], sw) || span_eq(e[1], sw)))
			return true;
	return false;
}

/* g (found in the rest, sub[0..m), judged by loss) loses probes at a switch it shares with one
 * named (ef) well beyond the rest's other results through that switch: the share of its results
 * that are bad at least twice theirs, over 4 of them at least; a link's bad results besides
 * mostly of normal latency (p99 within limit_us).  A host's back-pressure reaches every link of
 * its ToR, and what times probes out there delays the others of the same results too; drops at
 * one link do not spread and do not delay (an operator's trial: a lossy link at a slow host's
 * ToR was taken for the host's back-pressure, and never named).  Nor does a lossy link make a
 * host under its end lose more than its rack-mates. */
static bool stands_out(const struct shape *s, const struct loc_result *sub, size_t m, const struct loc_finding *g,
		       const struct ends *eg, const struct ends *ef, double limit_us)
{
	unsigned fast = 0;

	for (size_t k = 0; g->kind == LOC_LINK && k < m; k++)
		fast += sub[k].bad && sub[k].p99_us <= limit_us && explained_by(&sub[k], g);
	if (g->kind == LOC_LINK && 2 * fast < g->bad_through)
		return false;
	for (unsigned i = 0; i < eg->n; i++) {
		struct ends one = { .v = { eg->v[i] }, .n = 1 };
		unsigned others = 0, bad = 0;

		if (!ends_meet(&one, ef))
			continue;
		for (size_t k = 0; k < m; k++)
			if (!explained_by(&sub[k], g) && through_switch(s, &sub[k], eg->v[i])) {
				others++;
				bad += sub[k].bad;
			}
		if (others < 4 || 2.0 * bad * g->through > (double)g->bad_through * others)
			return false;
	}
	return true;
}

/* g, which meets f (named when is_named) at a switch, loses probes there as a fault of its own:
 * links that both do (drops do not spread by back-pressure; a spine that drops shows as its
 * links), or, standing out (stands_out), a link at a host's ToR or a host at an end of a named
 * lossy link. */
static bool apart(const struct shape *s, const struct loc_finding *f, bool is_named, const struct loc_finding *g,
		  const struct ends *ef, const struct ends *eg, const struct loc_result *sub, size_t m, double limit_us)
{
	bool lossy_link = is_named && f->kind == LOC_LINK && f->by_loss;

	if (!g->by_loss)
		return false;
	if (lossy_link && g->kind == LOC_LINK)
		return true;
	return ((f->kind == LOC_HOST && g->kind == LOC_LINK) || (lossy_link && g->kind == LOC_HOST)) &&
	       stands_out(s, sub, m, g, eg, ef, limit_us);
}

/* g, found in the rest sub[0..m), is taken for the back-pressure of what set[0..ns) holds (nf
 * of them named, first): see loc_analyze_all. */
static bool pressure(const struct shape *s, const struct loc_finding *set, size_t ns, size_t nf,
		     const struct loc_finding *g, const struct loc_result *sub, size_t m, const struct loc_conf *conf)
{
	double limit = fmax(conf->slow_factor * g->typical_p99_us, conf->slow_floor_us);
	struct ends eg, ef;

	if (g->kind == LOC_TOR)
		return true;
	ends_of(s, g, &eg);
	if (eg.unknown || !eg.n)
		return true;
	for (size_t k = 0; k < ns; k++) {
		ends_of(s, &set[k], &ef);
		if (ef.unknown)
			return true;
		if (ends_meet(&ef, &eg) && !apart(s, &set[k], k < nf, g, &ef, &eg, sub, m, limit))
			return true;
		if (k < nf && !set[k].by_loss && !g->by_loss && ends_adjacent(s, &ef, &eg))
			return true;
	}
	return false;
}

/* Link g shares a switch with a link named in set[0..nf), and with no host's or ToR's in
 * set[0..ns) (the ToR of a host named is enough to explain it). */
static bool link_meets_named(const struct shape *s, const struct loc_finding *set, size_t ns, size_t nf,
			     const struct loc_finding *g)
{
	struct ends eg, ef;
	bool meets = false;

	ends_of(s, g, &eg);
	for (size_t k = 0; k < ns; k++) {
		ends_of(s, &set[k], &ef);
		if (set[k].kind != LOC_LINK && ends_meet(&ef, &eg))
			return false;
		meets |= k < nf && set[k].kind == LOC_LINK && ends_meet(&ef, &eg);
	}
	return meets;
}

/* The results not set aside by f[0..nf) (aside[] keeps who is), copied to sub (their indexes
 * in r to idx); how many. */
static size_t rest_of(const struct loc_result *r, size_t n, const struct loc_finding *f, size_t nf, bool *aside,
		      struct loc_result *sub, size_t *idx)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nf && !aside[i]; k++)
			aside[i] = explained_by(&r[i], &f[k]);
		if (!aside[i]) {
			sub[m] = r[i];
			idx[m++] = i;
		}
	}
	return m;
}

/* The evidence of a later finding: which ones named before it set their results aside. */
static void later_evidence(struct loc_finding *g, const struct loc_finding *named, size_t nf)
{
	char ev[sizeof(g->evidence)];
	size_t len = 0, room;

	memcpy(ev, g->evidence, sizeof(ev));
	len = (size_t)snprintf(g->evidence, 200, "with the results of ");
	for (size_t k = 0; k < nf && len < 200; k++)
		len += (size_t)snprintf(g->evidence + len, 200 - len, "%s%s", k ? ", " : "", named[k].subject);
	if (len >= 200) /* (names too long: cut, said so) */
		len = 196 + (size_t)snprintf(g->evidence + 196, 4, "...");
	len += (size_t)snprintf(g->evidence + len, sizeof(g->evidence) - len, " set aside: ");
	room = sizeof(g->evidence) - len - 1;
	room = strnlen(ev, room);
	memcpy(g->evidence + len, ev, room);
	g->evidence[len + room] = '\0';
}

/* The rest (sub[0..m)) reads as the fabric (*g): is it the back-pressure of what is named plus
 * another fault?  The element that explains the largest share of it (coverage / LOC_MAX_FINDINGS
 * at least) replaces *g when it is a neighbour of what is named or set aside (false: set it
 * aside, and look again), or when a share coverage of the rest's bad results, by count, are
 * through it (true: judge it as any other; else *g stays the fabric). */
static bool relaxed(const struct shape *sh, struct loc_result *sub, size_t m, const struct loc_conf *few,
		    double coverage, const struct loc_finding *set, size_t ns, size_t nf, struct loc_finding *g)
{
	struct loc_finding g2;
	unsigned bad = 0, through = 0;

	loc_analyze(sub, m, few, &g2);
	if (g2.kind != LOC_HOST && g2.kind != LOC_LINK && g2.kind != LOC_TOR)
		return true;
	if (pressure(sh, set, ns, nf, &g2, sub, m, few)) {
		*g = g2;
		return false;
	}
	for (size_t k = 0; k < m; k++) {
		bad += sub[k].bad;
		through += sub[k].bad && explained_by(&sub[k], &g2);
	}
	if (through >= coverage * bad)
		*g = g2;
	return true;
}

/* A host named from lost probes too few for the fabric: the share of the probes of its bad
 * results lost, at least (a slow receiver's time out by the half; an incast target's, one now
 * and then). */
#define HOST_LOSS 0.25

/* The share of the probes of f's bad results that were lost. */
static double bad_loss_share(const struct loc_result *r, size_t n, const struct loc_finding *f)
{
	uint64_t sent = 0, lost = 0;

	for (size_t i = 0; i < n; i++)
		if (r[i].bad && explained_by(&r[i], f)) {
			sent += r[i].n;
			lost += r[i].lost;
		}
	return sent ? (double)lost / (double)sent : 0;
}

/* f loses probes on min_pairs pairs at least, and is no host whose bad results lost less than a
 * quarter of their probes (a busy fabric's incast targets lose one now and then behind PFC
 * pauses, and are no fault). */
static bool loses_apart(const struct loc_result *r, size_t n, const struct loc_finding *f, unsigned min_pairs)
{
	return f->by_loss && bad_pairs(r, n, min_pairs, f) >= min_pairs &&
	       (f->kind != LOC_HOST || bad_loss_share(r, n, f) >= HOST_LOSS);
}

/* The bad results of sub[0..m) that are not a named host's back-pressure: its rack-mates' (a
 * probe to or from a host under its ToR), which PFC pauses as the host does its ToR's port. */
static unsigned unexplained(const struct loc_result *r, size_t n, const struct loc_result *sub, size_t m,
			    const struct loc_finding *named, size_t nf)
{
	const char *tors[LOC_MAX_FINDINGS];
	size_t nt = 0;
	unsigned bad = 0;

	for (size_t k = 0; k < nf && nt < LOC_MAX_FINDINGS; k++)
		if (named[k].kind == LOC_HOST && (tors[nt] = tor_of(r, n, named[k].subject)))
			nt++;
	for (size_t k = 0; k < m; k++) {
		bool near = false;

		for (size_t t = 0; t < nt && sub[k].bad && !near; t++)
			near = (sub[k].src_tor && !strcmp(sub[k].src_tor, tors[t])) ||
			       (sub[k].dst_tor && !strcmp(sub[k].dst_tor, tors[t]));
		bad += sub[k].bad && !near;
	}
	return bad;
}

/* Adds to ret[0..1) the faults that what it sets aside leaves, each judged with conf (a rest
 * that reads as the fabric looked at again with few, unless NULL: relaxed(); one too sparse
 * for the fabric, by lost probes, with few too); returns how many
 * findings there are.  *left: the bad results that what is left at the end holds when it names
 * nothing or the fabric, but the named hosts' back-pressure (else UINT_MAX); *others: what was
 * set aside as back-pressure holds a link that shares a switch with a named link only. */
static size_t more(const struct shape *sh, struct loc_result *r, size_t n, const struct loc_conf *conf,
		   const struct loc_conf *few, struct loc_finding *ret, size_t max, struct loc_result *sub, size_t *idx,
		   bool *aside, unsigned *left, bool *others)
{
	struct loc_finding set[2 * LOC_MAX_FINDINGS]; /* the named (first), and what was set aside */
	size_t nf = 1, ns = 1;

	set[0] = ret[0];
	memset(aside, 0, n * sizeof(*aside));
	*left = UINT_MAX;
	*others = false;
	while (ns < sizeof(set) / sizeof(set[0])) {
		struct loc_finding *g = &set[ns];
		size_t m = rest_of(r, n, set, ns, aside, sub, idx);

		if (!m) {
			*left = 0;
			break;
		}
		loc_analyze(sub, m, conf, g);
		if (g->kind == LOC_FABRIC && few && !relaxed(sh, sub, m, few, conf->coverage, set, ns, nf, g)) {
			ns++; /* (set aside: the back-pressure that made the rest look like the fabric) */
			continue;
		}
		/* a rest too sparse for the fabric (its bad results a few per cent of it: sparse
		 * probing at a thousand hosts, where a named fault's neighbours lose a probe now and
		 * then): what explains a share of its lost probes (few), on min_pairs pairs at least,
		 * is judged as any other (a ToR set aside).  Not by latency: a busy fabric's incast
		 * targets, each slow on a share, are no fault; nor a host whose bad results lose a
		 * probe now and then (those targets behind PFC pauses, a review): a quarter of their
		 * probes at least */
		if (g->kind == LOC_NONE && g->bad && few) {
			struct loc_finding g2;

			loc_analyze(sub, m, few, &g2);
			if ((g2.kind == LOC_HOST || g2.kind == LOC_LINK || g2.kind == LOC_TOR) &&
			    loses_apart(sub, m, &g2, conf->min_pairs))
				*g = g2;
		}
		if (g->kind == LOC_NONE || g->kind == LOC_FABRIC) {
			*left = unexplained(r, n, sub, m, ret, nf);
			break;
		}
		if (pressure(sh, set, ns, nf, g, sub, m, conf)) {
			*others |= g->kind == LOC_LINK && link_meets_named(sh, set, ns, nf, g);
			ns++;
			continue;
		}
		if (nf == max)
			break;
		for (size_t k = 0; k < m; k++)
			r[idx[k]].bad |= sub[k].bad;
		ret[nf] = *g;
		later_evidence(&ret[nf], ret, nf);
		/* keep the named at the front of set[] (pressure() looks one link away from those) */
		if (ns != nf) {
			struct loc_finding t = set[nf];

			set[nf] = *g;
			set[ns] = t;
		}
		nf++;
		ns++;
	}
	return nf;
}

/* A finding's "secondary" that another finding names is not its consequence: said no more. */
static void drop_named_secondary(struct loc_finding *f, const struct loc_finding *all, size_t nf)
{
	static const char tag[] = "; secondary (likely a consequence";
	char *sec = strstr(f->evidence, tag);
	size_t len;

	for (size_t k = 0; sec && k < nf; k++) {
		len = strlen(all[k].subject);
		if (&all[k] != f && strlen(sec) > len && sec[strlen(sec) - len - 1] == ' ' &&
		    !strcmp(sec + strlen(sec) - len, all[k].subject)) {
			*sec = '\0';
			return;
		}
	}
}

/* Each of f[0..nf) is a link or a host that loses probes apart (loses_apart). */
static bool lossy_apart(const struct loc_result *r, size_t n, const struct loc_finding *f, size_t nf,
			unsigned min_pairs)
{
	for (size_t k = 0; k < nf; k++)
		if ((f[k].kind != LOC_LINK && f[k].kind != LOC_HOST) || !loses_apart(r, n, &f[k], min_pairs))
			return false;
	return true;
}

size_t loc_analyze_all(struct loc_result *r, size_t n, const struct loc_conf *conf, struct loc_finding *ret,
		       size_t max)
{
	struct loc_result *sub;
	struct loc_finding fabric;
	struct loc_conf few; /* the relaxed coverage: a share of the bad */
	struct shape sh;
	size_t *idx, nf = 1;
	unsigned left;
	bool *aside, others;

	if (!max)
		return 0;
	if (!conf)
		conf = &loc_defaults;
	few = *conf;
	few.coverage = conf->coverage / LOC_MAX_FINDINGS;
	loc_analyze(r, n, conf, &ret[0]);
	/* (nothing bad, or too little for the search below: one analysis) */
	if (max == 1 || (ret[0].kind == LOC_NONE && (!ret[0].bad || !ret[0].by_loss ||
						      bad_pairs(r, n, conf->min_pairs, NULL) < conf->min_pairs)))
		return 1;
	sub = calloc(n + 1, sizeof(*sub));
	idx = calloc(n + 1, sizeof(*idx));
	aside = calloc(n + 1, sizeof(*aside));
	shape_init(&sh, r, n);
	if (!sub || !idx || !aside)
		goto out;
	if (ret[0].kind != LOC_FABRIC && ret[0].kind != LOC_NONE) {
		nf = more(&sh, r, n, conf, &few, ret, max, sub, idx, aside, &left, &others);
		goto out;
	}
	/* no single element explains most of it: may a few hosts and links apart explain it?
	 * Each still needs most results through it bad, and together they must leave no more of
	 * the bad results than one element may (1 - coverage) and nothing that names a host, link
	 * or ToR, with no link set aside for sharing a switch with a named one (that switch's
	 * fault, which no single finding names): else it is the fabric.  So too lost probes too
	 * few for the fabric (two lossy links at a thousand hosts, each half of a few per mille),
	 * where links and hosts that lose a quarter of their bad results' probes, each on
	 * min_pairs pairs at least, are named (lossy_apart) */
	fabric = ret[0];
	loc_analyze(r, n, &few, &ret[0]);
	if ((ret[0].kind != LOC_HOST && ret[0].kind != LOC_LINK) ||
	    (fabric.kind != LOC_FABRIC && !lossy_apart(r, n, ret, 1, conf->min_pairs))) {
		/* (the marks follow what it was judged by, lost probes or latency, not the coverage) */
		if (ret[0].by_loss != fabric.by_loss)
			loc_analyze(r, n, conf, &fabric);
		ret[0] = fabric;
		goto out;
	}
	if ((nf = more(&sh, r, n, &few, NULL, ret, max, sub, idx, aside, &left, &others)) > 1 && !others &&
	    left != UINT_MAX && left <= (1 - conf->coverage) * fabric.bad &&
	    (fabric.kind == LOC_FABRIC || lossy_apart(r, n, ret, nf, conf->min_pairs)))
		goto out;
	nf = 1;
	ret[0] = fabric;
	loc_analyze(r, n, conf, &fabric); /* (its marks: more() set those of the rests) */
out:
	for (size_t k = 0; k < nf; k++)
		drop_named_secondary(&ret[k], ret, nf);
	shape_fini(&sh);
	free(sub);
	free(idx);
	free(aside);
	return nf;
}
