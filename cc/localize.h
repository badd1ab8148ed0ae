/* Fault localization from a probe matrix (pingmesh): which single element best explains the
 * pairs whose probes are bad — one host, one link, one ToR, or the fabric at large.  A pure
 * function over plain structs (DESIGN.md section 6): no I/O.
 *
 * Each result is one (source, destination, path label) over the analysis window: probes sent,
 * lost, the p99 latency, and, when the transport knows it, the links the probes took.  A result
 * is bad when probes were lost or its p99 is far above the fabric's typical p99 (by loss when
 * any probe was lost; lost probes too few to name anything leave the judgment to the
 * latencies).  An element explains the bad results when it is on (nearly) all of them
 * (coverage) and most results through it are bad (rate); among the elements that explain, the one with the highest rate
 * wins, hosts and links before ToRs, ToRs before "the fabric".  With paths, a fabric link can be
 * named; without them (real hosts without path tracing) the answer is a host, a ToR or the
 * fabric. */
#ifndef ROCEFAB_LOCALIZE_H
#define ROCEFAB_LOCALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOC_MAX_PATH 16

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

#endif
