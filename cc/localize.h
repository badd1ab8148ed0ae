/* Fault localization from a probe matrix (pingmesh): which single element best explains the
 * pairs whose probes are bad — one host, one link, one ToR, or the fabric at large.  A pure
 * function over plain structs (DESIGN.md section 6): no I/O.
 *
 * Each result is one (source, destination, path label) over the analysis window: probes sent,
 * lost, the p99 latency, and, when the transport knows it, the links the probes took.  A result
 * is bad when probes were lost or its p99 is far above the fabric's typical p99 (by loss when
 * any probe was lost; lost probes too few to name anything leave the judgment to the
 * latencies).  An element explains the bad results when it is on (nearly) all of them
 * (coverage) and most results through it are bad (rate); among the elements that explain, the
 * one with the largest share, then the highest rate, but a ToR gives way to a host under it
 * whose results are mostly bad and carry more than half the ToR's share, explaining on its own
 * too or standing out (their mean weight over twice that of the ToR's results of other hosts);
 * else to an uplink of it (the ToR at one end) that carries more than half its share when the
 * ToR's other results, within the rack and across its other uplinks, are mostly good; "the
 * fabric" when none explains.  With paths, a fabric link can be
 * named; without them (real hosts without path tracing) the answer is a host, a ToR or the
 * fabric. */
#ifndef ROCEFAB_LOCALIZE_H
#define ROCEFAB_LOCALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOC_MAX_PATH 16
/* At most this many faults are named at once (loc_analyze_all). */
#define LOC_MAX_FINDINGS 4

struct loc_result {
	const char *src, *dst;
	const char *src_tor, *dst_tor; /* the hosts' ToRs (NULL: unknown) */
	uint64_t n, lost;
	double p99_us;
	const char *path[LOC_MAX_PATH]; /* link names; npath 0: unknown */
	unsigned npath;
	bool bad; /* set by loc_analyze */
};

enum loc_kind { LOC_NONE, LOC_HOST, LOC_LINK, LOC_TOR, LOC_FABRIC };

struct loc_finding {
	enum loc_kind kind;
	char subject[160];     /* the host, the link ("a-b"), the ToR; links that tie: "a-b|c-d" */
	unsigned bad, total;   /* results: bad ones, and all */
	unsigned bad_through;  /* bad results through the subject */
	unsigned through;      /* results through the subject */
	double typical_p99_us; /* the fabric's median p99, the yardstick */
	bool by_loss;	       /* judged by lost probes (else by latency) */
	char evidence[512];
};

struct loc_conf {
	double slow_factor; /* a result is bad when its p99 exceeds slow_factor x typical ... */
	double slow_floor_us; /* ... and this floor */
	double coverage;    /* an explanation must be on this share of the bad results */
	double host_rate;   /* and this share of the results through it must be bad (hosts, ToRs) */
	double link_rate;   /* (links) */
	unsigned min_pairs; /* bad results on fewer (source, destination) pairs than this name
			     * nothing: one pair cannot tell its source from its destination or its
			     * path, and one slow pair is an outlier */
	double fabric_share; /* without a single culprit, "the fabric" needs this share of the
			      * results bad, lost or slow (else: scattered outliers) ... */
	double fabric_loss;  /* ... or, by lost probes, this share of all the probes lost (a fault
			      * that the sparse cross-ToR sample sees on few results) */
};

extern const struct loc_conf loc_defaults;

const char *loc_kind_name(enum loc_kind k);
/* Marks the bad results and returns the best explanation (LOC_NONE when nothing is bad). */
void loc_analyze(struct loc_result *r, size_t n, const struct loc_conf *c, struct loc_finding *ret);
/* Several faults at once: the best explanation (loc_analyze), then, with the results through
 * it set aside, the best explanation of the rest, and so on, up to max findings (later ones'
 * counts are of the results left to them).  One of the rest is taken for the back-pressure of
 * what is named already (a slow element pauses its neighbours, whose probes queue and time
 * out), set aside unnamed and the search goes on, when it is: under the same ToR as, or at an
 * end of a link of, one named or set aside (but a link that loses probes at a switch it shares
 * with a named one that does too: drops do not spread by back-pressure; nor a link that loses
 * probes at a host's ToR with twice the share of its results bad as of the rest's others
 * through that ToR, most of those of normal latency (back-pressure that times probes out
 * delays the others of the same results, and reaches every link of the ToR; drops do neither);
 * nor a host that loses probes at an end of a named link that does, with twice the share of
 * its results bad as its rack-mates'); a ToR; one whose ToR,
 * or that of a host named or set aside before it, is not known (they cannot be shown apart);
 * or, both judged by latency, a link away from one named.  "The fabric" is never a later
 * finding: when the rest reads as the fabric, the element that explains a share of it
 * (coverage / LOC_MAX_FINDINGS) is set aside when it is back-pressure (and the rest looked at
 * again), named when a share coverage of the rest's bad results are through it; a rest too
 * sparse for the fabric (scattered), by the element that explains a share of it, judged as any
 * other.  Where
 * loc_analyze names the fabric (no element explains most of the bad alone), a few hosts and
 * links apart that each explain a share (coverage / LOC_MAX_FINDINGS at least, the rates as
 * ever) are named instead when together they leave nothing that names a host, link or ToR and
 * no more of the bad results than one element may (1 - coverage), and no link was set aside
 * for sharing a switch with a named one only (that switch's fault, which no finding names).
 * Returns how many findings it wrote (1 when max >= 1: the first is loc_analyze's, LOC_NONE
 * included); the marks of the bad results are those of every finding written. */
size_t loc_analyze_all(struct loc_result *r, size_t n, const struct loc_conf *c, struct loc_finding *ret,
		       size_t max);
/* Link ("a-b") is one that finding f names ("a-b", or "a-b|c-d" when links tie). */
bool loc_names_link(const struct loc_finding *f, const char *link);

#endif
