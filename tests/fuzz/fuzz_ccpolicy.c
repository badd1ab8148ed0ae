/* libFuzzer target: the congestion-control tuner's policy as PUT /api/v1/cc/policy takes it
 * (lib/jsonutil.c js_parse, then cc/tuner.c cc_tn_policy_from_json).  A body must either be
 * refused with the policy unchanged, or give a policy that passes cc_tn_policy_check, that a
 * tuner can be made with, and that survives its own JSON unchanged.
 *
 * An object with "done" is taken as the tuner's saved state instead (what rocefabd reads back
 * from its database at a start: cc_tn_state_load), as a damaged row could hold it: refused
 * with nothing taken, or taken with every change it proposes (the rollbacks of steps under
 * way, and an operator's rollback of the completed ones) within the invariants, and its own
 * state then taken by another tuner.  Run with `make fuzz`. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cc/tuner.h"
#include "lib/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A small fabric's members: two ToR downlinks, an uplink, two hosts. */
static struct cc_tn *tracked(void)
{
	static const struct cc_tn_ecn e = { 20000, 400000, 0.01 };
	static const struct cc_tn_dcqcn d = { 4, 300, 5, 50, 32767, 1019 };
	struct cc_tn *t = cc_tn_new(&cc_tn_defaults);

	if (!t || cc_tn_track_port(t, "leaf0", "h0", &e) < 0 || cc_tn_track_port(t, "leaf0", "h1", &e) < 0 ||
	    cc_tn_track_port(t, "leaf0", "spine0", &e) < 0 || cc_tn_track_host(t, "h0", &d) < 0 ||
	    cc_tn_track_host(t, "h1", &d) < 0)
		abort();
	return t;
}

static char *state_text(const struct cc_tn *t)
{
	json_t *j = cc_tn_state_json(t);
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(j);
	if (!text)
		abort();
	return text;
}

/* Every change waiting to be applied keeps the invariants. */
static void changes_valid(struct cc_tn *t)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t, &n);

	for (size_t i = 0; v && i < n; i++)
		for (size_t k = 0; k < v[i]->nchanges; k++) {
			const struct cc_tn_change *c = &v[i]->changes[k];

			if (c->host ? cc_tn_dcqcn_check(&cc_tn_defaults, &c->dc_to) != NULL
				    : cc_tn_ecn_check(&cc_tn_defaults, &c->ecn_to, 0) != NULL)
				abort();
		}
}

static void saved_state(json_t *doc)
{
	struct cc_tn *t = tracked(), *t2;
	char err[300] = "", *before = state_text(t), *after;
	int r = cc_tn_state_load(t, doc, err, sizeof(err));

	if (r == -EINVAL) {
		after = state_text(t);
		if (!err[0] || strcmp(before, after))
			abort(); /* refused: says why, takes nothing */
		free(after);
	} else if (r >= 0) {
		json_t *again;

		changes_valid(t);
		again = cc_tn_state_json(t);
		t2 = tracked();
		if (!again || cc_tn_state_load(t2, again, err, sizeof(err)) < 0)
			abort(); /* what it saves, it takes back */
		json_decref(again);
		cc_tn_free(t2);
		if (cc_tn_rollback_all(t) >= 0)
			changes_valid(t);
	} else if (r != -ENOMEM) {
		abort();
	}
	free(before);
	cc_tn_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cc_tn_policy p = cc_tn_defaults, before = cc_tn_defaults, back = cc_tn_defaults;
	struct rf_err e = { 0 };
	char err[300];
	json_t *body = js_parse((const char *)data, size, &e), *doc;
	struct cc_tn *t;

	if (!body)
		return 0;
	if (json_object_get(body, "done")) {
		saved_state(body);
		json_decref(body);
		return 0;
	}
	if (cc_tn_policy_from_json(body, &p, err, sizeof(err)) < 0) {
		if (!cc_tn_policy_equal(&p, &before) || !err[0])
			abort(); /* a refusal changes nothing and says why */
		json_decref(body);
		return 0;
	}
	json_decref(body);
	if (cc_tn_policy_check(&p))
		abort();
	if (!(t = cc_tn_new(&p)))
		abort();
	cc_tn_free(t);
	doc = cc_tn_policy_json(&p);
	if (!doc || cc_tn_policy_from_json(doc, &back, err, sizeof(err)) < 0 || !cc_tn_policy_equal(&back, &p))
		abort(); /* the policy as GET shows it is the policy */
	json_decref(doc);
	return 0;
}
