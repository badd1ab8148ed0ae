/* libFuzzer target: the congestion-control tuner's policy as PUT /api/v1/cc/policy takes it
 * (lib/jsonutil.c js_parse, then cc/tuner.c cc_tn_policy_from_json).  A body must either be
 * refused with the policy unchanged, or give a policy that passes cc_tn_policy_check, that a
 * tuner can be made with, and that survives its own JSON unchanged.  Run with `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cc/tuner.h"
#include "lib/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two policies alike, field by field (as their JSON: no padding bytes compared). */
static int same(const struct cc_tn_policy *a, const struct cc_tn_policy *b)
{
	json_t *x = cc_tn_policy_json(a), *y = cc_tn_policy_json(b);
	int r = x && y && json_equal(x, y);

	json_decref(x);
	json_decref(y);
	return r;
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
	if (cc_tn_policy_from_json(body, &p, err, sizeof(err)) < 0) {
		if (!same(&p, &before) || !err[0])
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
	if (!doc || cc_tn_policy_from_json(doc, &back, err, sizeof(err)) < 0 || !same(&back, &p))
		abort(); /* the policy as GET shows it is the policy */
	json_decref(doc);
	return 0;
}
