/* Validation of configuration changes: see validate.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "lib/validate.h"
#include "lib/conf.h"
#include "lib/params.h"

#define MAX_BYTES (1LL << 40)

static int bad(struct rf_err *e, const char *code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int bad(struct rf_err *e, const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		snprintf(e->code, sizeof(e->code), "%s", code);
		if (field)
			snprintf(e->where, sizeof(e->where), "/%s", field);
		else
			e->where[0] = '\0';
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
		e->err = -EINVAL;
	}
	return -EINVAL;
}

/* A byte count: an integer, or a string with a unit ("400KB", "1.5MiB"). */
static int bytes_of(json_t *params, const char *k, int64_t *ret, struct rf_err *e)
{
	json_t *v = json_object_get(params, k);
	uint64_t b;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || json_integer_value(v) > MAX_BYTES)
			return bad(e, "BAD_VALUE", k, "%" JSON_INTEGER_FORMAT " bytes is out of range 0..%lld",
				   json_integer_value(v), MAX_BYTES);
		*ret = json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		int r = conf_parse_size(json_string_value(v), &b);

		if (r == -ERANGE || (r == 0 && b > (uint64_t)MAX_BYTES))
			return bad(e, "BAD_VALUE", k, "'%s' is too large: at most %lld bytes", json_string_value(v),
				   MAX_BYTES);
		if (r < 0)
			return bad(e, "BAD_VALUE", k,
				   "'%s' is not a size: give bytes, or a number with a unit: " CONF_SIZE_UNITS,
				   json_string_value(v));
		*ret = (int64_t)b;
		json_object_set_new(params, k, json_integer((json_int_t)b)); /* normalized */
		return 0;
	}
	return bad(e, "BAD_VALUE", k, "must be a number of bytes (an integer, or a string such as \"400KB\")");
}

/* A value of a configuration as its agent reported it: any number (report_parse takes reals),
 * so one beyond int64 (1e300) is as good as none. */
static int64_t cur_int(const json_t *cur, const char *k, int64_t def)
{
	json_t *v = json_object_get(cur, k);
	double d;

	if (json_is_integer(v))
		return json_integer_value(v);
	if (!json_is_real(v))
		return def;
	d = json_real_value(v);
	return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : def;
}

/* lo's value must not exceed hi's, each as asked or else as it is now (a hi of 0 or unknown:
 * no limit); asked only of a change of one of them (a device that holds them otherwise takes
 * other changes). */
static int rate_order(const json_t *params, const json_t *current, const char *lo, const char *hi,
		      struct rf_err *e)
{
	if (!json_object_get(params, lo) && !json_object_get(params, hi))
		return 0;
	int64_t l = json_object_get(params, lo) ? json_integer_value(json_object_get(params, lo))
						: cur_int(current, lo, 0);
	int64_t h = json_object_get(params, hi) ? json_integer_value(json_object_get(params, hi))
						: cur_int(current, hi, 0);

	if (h > 0 && l > h)
		return bad(e, "BAD_THRESHOLD_ORDER", json_object_get(params, lo) ? lo : hi,
			   "%s (%" PRId64 " Mb/s) must not exceed %s (%" PRId64 " Mb/s)", lo, l, hi, h);
	return 0;
}

int validate_dcqcn(json_t *params, const json_t *current, int64_t line_mbps, struct rf_err *e)
{
	const char *k;
	json_t *v;

	if (!json_is_object(params) || !json_object_size(params))
		return bad(e, "NO_CHANGE", NULL, "name at least one DCQCN parameter to change");
	json_object_foreach(params, k, v) {
		const struct dcqcn_param *p = dcqcn_param_find(k);
		int64_t max;

		if (!p)
			return bad(e, "UNKNOWN_FIELD", k,
				   "'%s' is not a DCQCN parameter (see GET /api/v1/params/dcqcn)", k);
		if (json_is_boolean(v) && p->max == 1)
			json_object_set_new(params, k, json_integer(json_is_true(v)));
		else if (!json_is_integer(v))
			return bad(e, "BAD_VALUE", k, "%s is an integer (%s)", k, p->unit);
		v = json_object_get(params, k);
		max = p->max == PARAM_LINE_RATE ? (line_mbps > 0 ? line_mbps : 1600000) : p->max;
		if (json_integer_value(v) < p->min || json_integer_value(v) > max)
			return bad(e, "BAD_VALUE", k, "%s = %" JSON_INTEGER_FORMAT " is out of range %" PRId64
				   "..%" PRId64 " %s%s",
				   k, json_integer_value(v), p->min, max, p->unit,
				   p->max == PARAM_LINE_RATE && line_mbps > 0 ? " (the port's line rate)" : "");
	}
	/* the rates must stay ordered: min <= max (when max limits), and the additive increase
	 * no faster than the hyper increase that follows it (the tuner holds them so too) */
	return rate_order(params, current, "rpg_min_rate", "rpg_max_rate", e) ?:
	       rate_order(params, current, "rpg_ai_rate", "rpg_hai_rate", e);
}

int validate_ecn(json_t *params, const json_t *current, const json_t *port_pfc, int queue,
		 struct rf_err *e)
{
	static const char *const allowed[] = { "enabled", "kmin_bytes", "kmax_bytes", "pmax", NULL };
	int64_t kmin, kmax;
	bool enabled;
	const char *k;
	json_t *v;
	int r;

	if (!json_is_object(params) || !json_object_size(params))
		return bad(e, "NO_CHANGE", NULL, "name at least one of enabled, kmin_bytes, kmax_bytes, pmax");
	json_object_foreach(params, k, v) {
		bool ok = false;

		for (int i = 0; allowed[i]; i++)
			ok |= !strcmp(k, allowed[i]);
		if (!ok)
			return bad(e, "UNKNOWN_FIELD", k,
				   "'%s' is not an ECN setting (enabled, kmin_bytes, kmax_bytes, pmax)", k);
	}
	if ((v = json_object_get(params, "enabled")) && !json_is_boolean(v))
		return bad(e, "BAD_VALUE", "enabled", "must be true or false");
	if ((v = json_object_get(params, "pmax")) &&
	    (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1)))
		return bad(e, "BAD_VALUE", "pmax", "the marking probability at Kmax is a number from 0 to 1");
	kmin = cur_int(current, "kmin_bytes", -1);
	kmax = cur_int(current, "kmax_bytes", -1);
	if (json_object_get(params, "kmin_bytes") && (r = bytes_of(params, "kmin_bytes", &kmin, e)) < 0)
		return r;
	if (json_object_get(params, "kmax_bytes") && (r = bytes_of(params, "kmax_bytes", &kmax, e)) < 0)
		return r;
	enabled = json_object_get(params, "enabled") ? json_is_true(json_object_get(params, "enabled"))
						     : json_is_true(json_object_get(current, "enabled"));
	if (kmin >= 0 && kmax >= 0 && kmin >= kmax)
		return bad(e, "BAD_THRESHOLD_ORDER",
			   json_object_get(params, "kmin_bytes") ? "kmin_bytes" : "kmax_bytes",
			   "Kmin (%" PRId64 " bytes) must be below Kmax (%" PRId64 " bytes)", kmin, kmax);
	/* ECN must act before PFC on a lossless priority (facts file section 4.2): against the
	 * threshold the agent reports, or else the one its PFC settings give (SONiC reports a
	 * dynamic threshold's alpha and shared buffer, not the threshold) */
	if (enabled && port_pfc && queue >= 0 && (cur_int(port_pfc, "enable", 0) & (1 << queue))) {
		const char *src;
		int64_t xoff = validate_port_xoff(port_pfc, &src);
		const char *from = !strcmp(src, "reported") ? ""
				   : !strcmp(src, "static") ? ", its static XOFF"
							    : ", from its alpha and shared buffer";

		if (xoff > 0 && kmax >= xoff)
			return bad(e, "BAD_THRESHOLD_ORDER", "kmax_bytes",
				   "Kmax (%" PRId64 " bytes) must be below the port's PFC XOFF threshold "
				   "(%" PRId64 " bytes%s) on lossless priority %d, so that ECN acts before PFC",
				   kmax, xoff, from, queue);
	}
	return 0;
}

int64_t validate_pfc_xoff(const json_t *pfc)
{
	const char *mode = json_string_value(json_object_get(pfc, "mode"));

	if (mode && !strcmp(mode, "static"))
		return cur_int(pfc, "xoff_bytes", -1);
	if (json_is_integer(json_object_get(pfc, "shared_bytes"))) {
		int64_t shift = cur_int(pfc, "alpha_shift", 0);
		double alpha = ldexp(1.0, shift < -64 ? -64 : shift > 64 ? 64 : (int)shift);
		double thr = (double)cur_int(pfc, "shared_bytes", 0) * alpha / (1.0 + alpha);

		return thr >= 0 && thr <= 9.2e18 ? (int64_t)thr : -1; /* as reported: any number */
	}
	return cur_int(pfc, "xoff_threshold_bytes", -1);
}

int64_t validate_port_xoff(const json_t *pfc, const char **from)
{
	int64_t rep = cur_int(pfc, "xoff_threshold_bytes", 0);
	const char *mode = json_string_value(json_object_get(pfc, "mode"));

	if (rep > 0) { /* (0: none known) */
		*from = "reported";
		return rep;
	}
	*from = mode && !strcmp(mode, "static") ? "static" : "computed";
	return validate_pfc_xoff(pfc);
}

void validate_pfc_merge(json_t *pfc, json_t *params)
{
	int64_t thr;

	json_object_update(pfc, params);
	if (json_object_get(params, "xoff_bytes"))
		json_object_set_new(pfc, "mode", json_string("static"));
	else if (json_object_get(params, "alpha_shift"))
		json_object_set_new(pfc, "mode", json_string("dynamic"));
	if (!json_object_get(params, "xoff_bytes") && !json_object_get(params, "alpha_shift"))
		return;
	/* the threshold the agent reported was the old one's; unknown when not computed here */
	json_object_del(pfc, "xoff_threshold_bytes");
	if ((thr = validate_pfc_xoff(pfc)) >= 0)
		json_object_set_new(pfc, "xoff_threshold_bytes", json_integer(thr));
}

int validate_pfc(json_t *params, const json_t *current, const json_t *port_ecn, bool is_switch,
		 struct rf_err *e)
{
	static const char *const allowed[] = { "enable", "xoff_bytes", "xon_bytes", "alpha_shift", NULL };
	json_t *merged, *v;
	int64_t xoff = -1, xon = -1, thr;
	const char *k;
	size_t i;
	int r;

	if (!json_is_object(params) || !json_object_size(params))
		return bad(e, "NO_CHANGE", NULL, "name at least one of enable, xoff_bytes, xon_bytes, alpha_shift");
	json_object_foreach(params, k, v) {
		bool ok = false;

		for (int n = 0; allowed[n]; n++)
			ok |= !strcmp(k, allowed[n]);
		if (!ok)
			return bad(e, "UNKNOWN_FIELD", k,
				   "'%s' is not a PFC setting (enable, xoff_bytes, xon_bytes, alpha_shift)", k);
		if (!is_switch && strcmp(k, "enable"))
			return bad(e, "BAD_VALUE", k,
				   "a NIC port has only \"enable\" (the thresholds are the switch's)");
	}
	if ((v = json_object_get(params, "enable")) &&
	    (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 255))
		return bad(e, "BAD_VALUE", "enable",
			   "enable is a bit mask of priorities, 0 to 255 (8 = priority 3 only)");
	if ((v = json_object_get(params, "alpha_shift")) &&
	    (!json_is_integer(v) || json_integer_value(v) < -8 || json_integer_value(v) > 8))
		return bad(e, "BAD_VALUE", "alpha_shift",
			   "alpha_shift is log2 of the dynamic threshold's alpha, -8 to 8 (-3: alpha = 1/8)");
	if (json_object_get(params, "alpha_shift") &&
	    (json_object_get(params, "xoff_bytes") || json_object_get(params, "xon_bytes")))
		return bad(e, "BAD_VALUE", "alpha_shift",
			   "choose a dynamic threshold (alpha_shift) or static ones (xoff_bytes, xon_bytes), not both");
	if (json_object_get(params, "xoff_bytes") && (r = bytes_of(params, "xoff_bytes", &xoff, e)) < 0)
		return r;
	if (json_object_get(params, "xon_bytes") && (r = bytes_of(params, "xon_bytes", &xon, e)) < 0)
		return r;
	if (json_object_get(params, "xon_bytes") && !json_object_get(params, "xoff_bytes")) {
		/* a port with a dynamic threshold (or one whose agent says XOFF 0) has no static XOFF
		 * to be below */
		xoff = cur_int(current, "xoff_bytes", -1);
		if (!strcmp(json_string_value(json_object_get(current, "mode")) ?: "", "dynamic") ||
		    (json_is_number(json_object_get(current, "xoff_bytes")) &&
		     json_number_value(json_object_get(current, "xoff_bytes")) <= 0))
			return bad(e, "BAD_VALUE", "xon_bytes",
				   "the port has no static XOFF threshold (its threshold is dynamic): a static "
				   "XON needs one, so give xoff_bytes with it");
	}
	if (xoff >= 0 && json_object_get(params, "xoff_bytes") && xoff == 0)
		return bad(e, "BAD_VALUE", "xoff_bytes", "an XOFF threshold of 0 bytes would pause at once");
	if (xon >= 0 && xoff >= 0 && xon >= xoff)
		return bad(e, "BAD_THRESHOLD_ORDER", "xon_bytes",
			   "XON (%" PRId64 " bytes) must be below XOFF (%" PRId64 " bytes)", xon, xoff);
	if (!is_switch)
		return 0;
	/* the new threshold against the ECN Kmax of this port's lossless queues */
	if (!(merged = json_deep_copy(current ? current : json_object())))
		return -ENOMEM;
	validate_pfc_merge(merged, params);
	thr = validate_pfc_xoff(merged);
	json_array_foreach(port_ecn, i, v) {
		int q = (int)cur_int(v, "queue", -1);

		if (q < 0 || !(cur_int(merged, "enable", 0) & (1 << q)) ||
		    !json_is_true(json_object_get(v, "enabled")) || thr < 0)
			continue;
		if (cur_int(v, "kmax_bytes", 0) >= thr) {
			json_decref(merged);
			return bad(e, "BAD_THRESHOLD_ORDER",
				   json_object_get(params, "xoff_bytes") ? "xoff_bytes"
				   : json_object_get(params, "alpha_shift") ? "alpha_shift" : "enable",
				   "the XOFF threshold would be %" PRId64 " bytes, not above the ECN Kmax (%" PRId64
				   " bytes) of lossless queue %d: ECN must act before PFC",
				   thr, cur_int(v, "kmax_bytes", 0), q);
		}
	}
	json_decref(merged);
	return 0;
}
