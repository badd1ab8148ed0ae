/* The congestion-control tuner: see tuner.h. */
#include <errno.h>
#include <inttypes.h>
#include <float.h>
#include <fnmatch.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/tuner.h"
#include "lib/conf.h"
#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/strutil.h"
#include "lib/vec.h"

const struct cc_tn_policy cc_tn_defaults = {
	.mode = CC_TN_ADVISE,
	.canary_share = 0.5,
	.max_share = 0.5,
	.canary_intervals = 3,
	.tabu_intervals = 30,
	/* 10: 5, 10 and 20 read alike on the shifting workload (docs/performance.md; the hold on
	 * undoing a kept step, tabu_intervals, comes first there) */
	.relax_intervals = 10,
	.max_factor = 2.0,
	.pmax_step = 0.1,
	.qdelay_target_us = 20,
	.pause_target = 0.0005,
	.host_pause_hold = 0.01,
	.tolerance = 0.25,
	.kmin_floor_bytes = 10000,
	.kmax_ceiling_bytes = 16000000,
	.pmax_floor = 0.01,
	.pmax_ceiling = 1.0,
	/* not below 2 us: at 1 us a marked flow may be cut every microsecond, each cut up to
	 * rpg_min_dec_fac, toward rpg_min_rate, and it climbs back by rpg_ai_rate per
	 * rpg_time_reset.  Measured (2026-12-03, bench-cc's workloads, the tuner alone with a
	 * floor of 1 against 2, seeds 1-18): long flows' p99 slowdown 15.5 -> 12.4 on WebSearch
	 * 70 %, 18.5 -> 14.5 on the shifting workload, 4-12 % lower on WebSearch 50 %, FB Hadoop,
	 * AliStorage and all-reduce, short flows' p99 up to 3 % higher; seeds 19-36: shifting long
	 * 22.0 -> 15.0 but short 33.4 -> 40.2, WebSearch 70 % unchanged */
	.cnp_gap_min_us = 2,
	.cnp_gap_max_us = 4095,
	.time_reset_min_us = 50,
	.time_reset_max_us = 131071,
	.ai_min_mbps = 1,
	.ai_max_mbps = 80,
	.hai_min_mbps = 1,
	.hai_max_mbps = 400,
	.byte_reset_min = 1,
	.byte_reset_max = 32767,
	.g_min = 0,
	.g_max = 1023,
	.loop_bytes = 150000,
};

static const char *const mode_names[] = { "off", "advise", "auto" };
static const char *const class_names[] = { "tor_down", "tor_up", "spine", "hosts" };
/* a class's name under the tuner's policy */
#define LBL(c) cc_tn_class_label(&t->live, (enum cc_tn_class)(c))
/* the names of GET /api/v1/switches/S/ports/P/ecn and GET /api/v1/hosts/H/dcqcn */
static const char *const knob_names[] = { "kmin_bytes",	   "kmax_bytes",   "pmax",
					  "min_time_between_cnps", "rpg_time_reset", "rpg_ai_rate",
					  "rpg_hai_rate",	   "rpg_byte_reset", "dce_tcp_g" };

const char *cc_tn_mode_name(enum cc_tn_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "?";
}

const char *cc_tn_class_name(enum cc_tn_class c)
{
	return (unsigned)c < CC_TN_HOST_CLASS0 ? class_names[c] : "?";
}

const char *cc_tn_class_label(const struct cc_tn_policy *p, enum cc_tn_class c)
{
	if ((unsigned)c < CC_TN_HOST_CLASS0)
		return class_names[c];
	if ((unsigned)(c - CC_TN_HOST_CLASS0) < p->nhost_classes)
		return p->host_classes[c - CC_TN_HOST_CLASS0].name;
	return "?";
}

int cc_tn_class_lookup(const struct cc_tn_policy *p, const char *s, enum cc_tn_class *ret)
{
	if (!s)
		return -ENOENT;
	if (!cc_tn_class_parse(s, ret))
		return 0;
	for (unsigned i = 0; i < p->nhost_classes && i < CC_TN_MAX_HOST_CLASSES; i++)
		if (!strcmp(s, p->host_classes[i].name)) {
			*ret = (enum cc_tn_class)(CC_TN_HOST_CLASS0 + i);
			return 0;
		}
	return -ENOENT;
}

enum cc_tn_class cc_tn_host_class_of(const struct cc_tn_policy *p, const char *host)
{
	for (unsigned i = 0; i < p->nhost_classes && i < CC_TN_MAX_HOST_CLASSES; i++)
		if (!fnmatch(p->host_classes[i].hosts, host, 0))
			return (enum cc_tn_class)(CC_TN_HOST_CLASS0 + i);
	return CC_TN_HOSTS;
}

const char *cc_tn_knob_name(enum cc_tn_knob k)
{
	return (unsigned)k < CC_TN_NKNOBS ? knob_names[k] : "?";
}

static int parse(const char *const *names, int n, const char *s, int *ret)
{
	for (int i = 0; i < n; i++)
		if (s && !strcmp(s, names[i])) {
			*ret = i;
			return 0;
		}
	return -EINVAL;
}

int cc_tn_mode_parse(const char *s, enum cc_tn_mode *ret)
{
	int v, r = parse(mode_names, 3, s, &v);

	if (!r)
		*ret = (enum cc_tn_mode)v;
	return r;
}

int cc_tn_class_parse(const char *s, enum cc_tn_class *ret)
{
	int v, r = parse(class_names, CC_TN_HOST_CLASS0, s, &v);

	if (!r)
		*ret = (enum cc_tn_class)v;
	return r;
}

int cc_tn_knob_parse(const char *s, enum cc_tn_knob *ret)
{
	int v, r = parse(knob_names, CC_TN_NKNOBS, s, &v);

	if (!r)
		*ret = (enum cc_tn_knob)v;
	return r;
}

static bool is_ecn_knob(enum cc_tn_knob k)
{
	return k <= CC_TN_PMAX;
}

static const char *host_classes_check(const struct cc_tn_policy *p)
{
	if (p->nhost_classes > CC_TN_MAX_HOST_CLASSES)
		return "host_classes: at most 4 classes";
	for (unsigned i = 0; i < p->nhost_classes; i++) {
		const struct cc_tn_host_class *h = &p->host_classes[i];
		enum cc_tn_class c;
		size_t n = strnlen(h->name, sizeof(h->name));

		if (!n || n == sizeof(h->name) ||
		    strspn(h->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != n)
			return "host_classes: a name is 1 to 31 letters, digits, '_', '-' or '.'";
		if (!cc_tn_class_parse(h->name, &c))
			return "host_classes: a name must not be tor_down, tor_up, spine or hosts";
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(h->name, p->host_classes[j].name))
				return "host_classes: the names must differ";
		n = strnlen(h->hosts, sizeof(h->hosts));
		if (!n || n == sizeof(h->hosts))
			return "host_classes: a hosts pattern is 1 to 127 characters";
		if (str_glob_open_bracket(h->hosts))
			return "host_classes: a hosts pattern has a '[' without its ']' (\\[ for the character itself)";
	}
	return NULL;
}

/* The ranges of the hosts' knobs: each end within the NIC's bounds, the low end not above the
 * high one, and both whole numbers, as the NIC takes them (microseconds, Mb/s): a step clamped
 * to a fractional bound would be committed rounded, outside the policy.  Each message names
 * the field to mend ("FIELD: what"). */
#define WHOLE ": must be a whole number (the NIC takes whole microseconds and Mb/s)"
#define WR(lo, hi, min, max, in)                                                                 \
	{ { #lo, #hi },                                                                          \
	  { #lo WHOLE, #hi WHOLE },                                                              \
	  { offsetof(struct cc_tn_policy, lo), offsetof(struct cc_tn_policy, hi) },              \
	  min,                                                                                   \
	  max,                                                                                   \
	  { #lo ": must be " in, #hi ": must be " in },                                          \
	  #lo ": must not be above " #hi }
static const struct {
	const char *name[2], *why[2]; /* [0] the low end, [1] the high end; why: not whole */
	size_t off[2];
	double min, max;      /* the bounds of either end */
	const char *out[2], *order; /* outside the bounds; the ends reversed */
} host_ranges[] = {
	WR(cnp_gap_min_us, cnp_gap_max_us, 0, 4095, "in 0..4095"),
	WR(time_reset_min_us, time_reset_max_us, 1, 131071, "in 1..131071"),
	WR(ai_min_mbps, ai_max_mbps, 1, 1600000, "in 1..1600000 (Mb/s: 1.6 Tb/s)"),
	WR(hai_min_mbps, hai_max_mbps, 1, 1600000, "in 1..1600000 (Mb/s: 1.6 Tb/s)"),
};
#undef WR
#undef WHOLE

static double policy_double(const struct cc_tn_policy *p, size_t off)
{
	return *(const double *)(const void *)((const char *)p + off);
}

/* The bounds, order and whole numbers of the hosts' ranges. */
static const char *host_ranges_check(const struct cc_tn_policy *p)
{
	for (size_t i = 0; i < sizeof(host_ranges) / sizeof(host_ranges[0]); i++) {
		double v[2];

		for (int end = 0; end < 2; end++) {
			v[end] = policy_double(p, host_ranges[i].off[end]);
			if (!(v[end] >= host_ranges[i].min && v[end] <= host_ranges[i].max))
				return host_ranges[i].out[end];
		}
		if (v[0] > v[1])
			return host_ranges[i].order;
		for (int end = 0; end < 2; end++)
			if (v[end] != floor(v[end]))
				return host_ranges[i].why[end];
	}
	return NULL;
}

#define POLICY_MAX_BYTES (1ULL << 40) /* the change path's largest byte threshold */

/* Field name of policy c held to max (a number above it, as an older release took it). */
static bool held_to(json_t *c, const char *name, double max)
{
	json_t *v = json_object_get(c, name);

	if (!json_is_number(v) || !(json_number_value(v) > max))
		return false;
	json_object_set_new(c, name, json_integer((json_int_t)max));
	return true;
}

json_t *cc_tn_policy_repaired(json_t *doc)
{
	json_t *c = json_is_object(doc) ? json_deep_copy(doc) : NULL, *v;
	bool fixed = false;
	size_t i;

	if (!c)
		return NULL;
	if ((v = json_object_get(c, "loop_bytes")) && json_is_integer(v) && !json_integer_value(v)) {
		json_object_del(c, "loop_bytes");
		fixed = true;
	}
	for (i = 0; i < sizeof(host_ranges) / sizeof(host_ranges[0]); i++)
		for (int end = 0; end < 2; end++) {
			const char *name = host_ranges[i].name[end];
			double d;

			if ((v = json_object_get(c, name)) && json_is_real(v) && isfinite(d = json_real_value(v)) &&
			    d != floor(d)) {
				json_object_set_new(c, name, json_real(end ? floor(d) : ceil(d))); /* inward */
				fixed = true;
			}
			fixed |= held_to(c, name, host_ranges[i].max);
		}
	/* no limits of devices before: held to them */
	fixed |= held_to(c, "byte_reset_min", 32767);
	fixed |= held_to(c, "byte_reset_max", 32767);
	fixed |= held_to(c, "kmin_floor_bytes", (double)POLICY_MAX_BYTES - 1);
	fixed |= held_to(c, "kmax_ceiling_bytes", (double)POLICY_MAX_BYTES);
	fixed |= held_to(c, "loop_bytes", (double)POLICY_MAX_BYTES);
	/* a hosts pattern with a '[' left open: the same names, each such '[' escaped */
	json_array_foreach(json_object_get(c, "host_classes"), i, v) {
		const char *hosts = json_string_value(json_object_get(v, "hosts")), *at;
		char buf[2 * sizeof(((struct cc_tn_host_class *)0)->hosts)];
		size_t n;

		if (!hosts || (n = strlen(hosts)) >= sizeof(buf) / 2)
			continue; /* refused as it is: no pattern was ever so long */
		memcpy(buf, hosts, n + 1);
		while ((at = str_glob_open_bracket(buf))) {
			memmove(buf + (at - buf) + 1, at, strlen(at) + 1);
			buf[at - buf] = '\\';
		}
		/* (one too long once escaped stays refused: the defaults then, said) */
		if (strcmp(buf, hosts) && strlen(buf) < sizeof(buf) / 2) {
			json_object_set_new(v, "hosts", json_string(buf));
			fixed = true;
		}
	}
	if (!fixed) {
		json_decref(c);
		return NULL;
	}
	return c;
}

/* Each message names the field to mend first ("FIELD: what is wrong"; cc_tn_policy_from_json
 * makes the name a JSON pointer); of an ordered pair, its low end. */
const char *cc_tn_policy_check(const struct cc_tn_policy *p)
{
	const char *why;

	if ((unsigned)p->mode > CC_TN_AUTO)
		return "mode: must be off, advise or auto";
	if (!(p->canary_share > 0 && p->canary_share <= 1))
		return "canary_share: must be in (0, 1]";
	if (!(p->max_share > 0 && p->max_share <= 1))
		return "max_share: must be in (0, 1]";
	if (p->max_share < p->canary_share)
		return "max_share: must be at least canary_share";
	if (p->canary_intervals < 1 || p->canary_intervals > 100)
		return "canary_intervals: must be 1..100";
	if (p->tabu_intervals > 100000)
		return "tabu_intervals: must be 0..100000";
	if (p->relax_intervals > 100000)
		return "relax_intervals: must be 0..100000";
	if (!(p->max_factor > 1 && p->max_factor <= 16))
		return "max_factor: must be in (1, 16]";
	if (!(p->pmax_step > 0 && p->pmax_step <= 1))
		return "pmax_step: must be in (0, 1]";
	if (!(p->qdelay_target_us > 0 && p->qdelay_target_us <= 1e6))
		return "qdelay_target_us: must be in (0, 1e6]";
	if (!(p->pause_target >= 0 && p->pause_target < 1))
		return "pause_target: must be in [0, 1)";
	if (!(p->host_pause_hold >= 0 && p->host_pause_hold <= 1))
		return "host_pause_hold: must be in [0, 1]";
	if (!(p->tolerance > 0 && p->tolerance <= 10))
		return "tolerance: must be in (0, 10]";
	if (p->kmin_floor_bytes >= p->kmax_ceiling_bytes)
		return "kmin_floor_bytes: must be below kmax_ceiling_bytes";
	/* what the change path takes (a range no switch takes leaves every port outside) */
	if (p->kmax_ceiling_bytes > POLICY_MAX_BYTES)
		return "kmax_ceiling_bytes: must be at most 1099511627776 (1 TiB)";
	if (!(p->pmax_floor > 0 && p->pmax_floor <= 1))
		return "pmax_floor: must be in (0, 1]";
	if (!(p->pmax_ceiling > 0 && p->pmax_ceiling <= 1))
		return "pmax_ceiling: must be in (0, 1]";
	if (p->pmax_floor > p->pmax_ceiling)
		return "pmax_floor: must not be above pmax_ceiling";
	if ((why = host_ranges_check(p)))
		return why;
	/* rpg_ai_rate may not exceed rpg_hai_rate: no host could be inside both ranges */
	if (p->ai_min_mbps > p->hai_max_mbps)
		return "ai_min_mbps: must not be above hai_max_mbps";
	if (p->byte_reset_min < 1)
		return "byte_reset_min: must be at least 1";
	if (p->byte_reset_min > p->byte_reset_max)
		return "byte_reset_min: must not be above byte_reset_max";
	if (p->byte_reset_max > 32767)
		return "byte_reset_max: must be in 1..32767 (the NIC's rpg_byte_reset)";
	if (p->g_max > 1023)
		return "g_max: must be in 0..1023";
	if (p->g_min > p->g_max)
		return "g_min: must not be above g_max";
	/* Kmax at most XOFF minus this is a hard invariant: no room at all is no policy */
	if (!p->loop_bytes)
		return "loop_bytes: must be at least 1 (the room for one control loop below XOFF)";
	if (p->loop_bytes > POLICY_MAX_BYTES)
		return "loop_bytes: must be at most 1099511627776 (1 TiB)";
	return host_classes_check(p);
}

/* The policy's fields: name, kind (d double, u unsigned, U uint64, m mode), offset. */
#define PF(name, kind) { #name, kind, offsetof(struct cc_tn_policy, name) }
static const struct {
	const char *name;
	char kind;
	size_t off;
} policy_fields[] = {
	PF(mode, 'm'),		    PF(canary_share, 'd'),     PF(max_share, 'd'),
	PF(canary_intervals, 'u'),  PF(tabu_intervals, 'u'),   PF(relax_intervals, 'u'), PF(max_factor, 'd'),
	PF(pmax_step, 'd'),	    PF(qdelay_target_us, 'd'), PF(pause_target, 'd'),
	PF(host_pause_hold, 'd'),   PF(tolerance, 'd'),	       PF(kmin_floor_bytes, 'U'), PF(kmax_ceiling_bytes, 'U'),
	PF(pmax_floor, 'd'),	    PF(pmax_ceiling, 'd'),     PF(cnp_gap_min_us, 'd'),     PF(cnp_gap_max_us, 'd'),
	PF(time_reset_min_us, 'd'), PF(time_reset_max_us, 'd'), PF(ai_min_mbps, 'd'),
	PF(ai_max_mbps, 'd'),	    PF(hai_min_mbps, 'd'),     PF(hai_max_mbps, 'd'),
	PF(byte_reset_min, 'U'),    PF(byte_reset_max, 'U'),   PF(g_min, 'u'),
	PF(g_max, 'u'),		    PF(loop_bytes, 'U'),
};
#undef PF

json_t *cc_tn_policy_json(const struct cc_tn_policy *p)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < sizeof(policy_fields) / sizeof(policy_fields[0]); i++) {
		const char *at = (const char *)p + policy_fields[i].off;
		json_t *v;

		switch (policy_fields[i].kind) {
		case 'm':
			v = json_string(cc_tn_mode_name(*(const enum cc_tn_mode *)(const void *)at));
			break;
		case 'd':
			v = json_real(*(const double *)(const void *)at);
			break;
		case 'u':
			v = json_integer(*(const unsigned *)(const void *)at);
			break;
		default:
			v = json_integer((json_int_t) * (const uint64_t *)(const void *)at);
			break;
		}
		json_object_set_new(o, policy_fields[i].name, v);
	}
	if (o) {
		json_t *a = json_array();

		for (unsigned i = 0; a && i < p->nhost_classes && i < CC_TN_MAX_HOST_CLASSES; i++)
			json_array_append_new(a, json_pack("{s:s,s:s}", "name", p->host_classes[i].name, "hosts",
							   p->host_classes[i].hosts));
		json_object_set_new(o, "host_classes", a ? a : json_array());
	}
	return o;
}

bool cc_tn_policy_equal(const struct cc_tn_policy *a, const struct cc_tn_policy *b)
{
	json_t *x = cc_tn_policy_json(a), *y = cc_tn_policy_json(b);
	bool r = x && y && json_equal(x, y);

	json_decref(x);
	json_decref(y);
	return r;
}

/* "host_classes": [{"name": N, "hosts": PATTERN}...], the whole list at once. */
static int host_classes_from_json(json_t *v, struct cc_tn_policy *n, char *err, size_t len)
{
	size_t i;
	json_t *it;

	if (!json_is_array(v) || json_array_size(v) > CC_TN_MAX_HOST_CLASSES) {
		snprintf(err, len, "/host_classes: must be an array of at most %d objects", CC_TN_MAX_HOST_CLASSES);
		return -EINVAL;
	}
	memset(n->host_classes, 0, sizeof(n->host_classes));
	n->nhost_classes = 0;
	json_array_foreach(v, i, it) {
		json_t *name = json_object_get(it, "name"), *hosts = json_object_get(it, "hosts"), *x;
		const char *k;

		if (!json_is_object(it)) {
			snprintf(err, len, "/host_classes/%zu: must be an object with the strings name and hosts", i);
			return -EINVAL;
		}
		/* the member at fault named (it was the whole class, "x" in it not said) */
		json_object_foreach(it, k, x) {
			struct js_path q = { .len = 0 };

			if (!strcmp(k, "name") || !strcmp(k, "hosts"))
				continue;
			js_path_push_key(&q, k);
			snprintf(err, len, "/host_classes/%zu%s: unknown field (a class has name and hosts)", i,
				 js_path_str(&q));
			return -EINVAL;
		}
		if (!json_is_string(name) || !json_is_string(hosts)) {
			snprintf(err, len, "/host_classes/%zu/%s: must be a string", i,
				 json_is_string(name) ? "hosts" : "name");
			return -EINVAL;
		}
		if (strlen(json_string_value(name)) >= sizeof(n->host_classes[i].name)) {
			snprintf(err, len, "/host_classes/%zu/name: at most 31 characters", i);
			return -EINVAL;
		}
		if (strlen(json_string_value(hosts)) >= sizeof(n->host_classes[i].hosts)) {
			snprintf(err, len, "/host_classes/%zu/hosts: at most 127 characters", i);
			return -EINVAL;
		}
		snprintf(n->host_classes[i].name, sizeof(n->host_classes[i].name), "%s", json_string_value(name));
		snprintf(n->host_classes[i].hosts, sizeof(n->host_classes[i].hosts), "%s", json_string_value(hosts));
		n->nhost_classes++;
	}
	return 0;
}

/* cc_tn_policy_check's "FIELD: what" for a request o, as "/FIELD: what" (the field as a JSON
 * pointer).  An order of two fields ("A: must not be above B") broken by a request that sets B
 * but not A names B, the field the request can mend, with A's value in force. */
static void policy_error(json_t *o, const struct cc_tn_policy *n, const char *why, char *err, size_t len)
{
	static const char *const rel[][2] = {
		{ "not be above", "not be below" },
		{ "be below", "be above" },
		{ "be at least", "be at most" },
	};
	const char *colon = strchr(why, ':');
	int na = colon ? (int)(colon - why) : 0;

	snprintf(err, len, "/%s", why);
	for (size_t r = 0; colon && r < sizeof(rel) / sizeof(rel[0]); r++) {
		size_t nr = strlen(rel[r][0]);
		const char *b;
		char a[32];

		if (strncmp(colon, ": must ", 7) || strncmp(colon + 7, rel[r][0], nr) || colon[7 + nr] != ' ' ||
		    (size_t)na >= sizeof(a))
			continue;
		b = colon + 7 + nr + 1;
		if (strchr(b, ' '))
			continue;
		snprintf(a, sizeof(a), "%.*s", na, why);
		for (size_t i = 0; i < sizeof(policy_fields) / sizeof(policy_fields[0]); i++) {
			const char *at = (const char *)n + policy_fields[i].off;
			char v[32];

			if (strcmp(policy_fields[i].name, a) || json_object_get(o, a) || !json_object_get(o, b))
				continue;
			if (policy_fields[i].kind == 'd')
				snprintf(v, sizeof(v), "%.15g", *(const double *)(const void *)at);
			else if (policy_fields[i].kind == 'u')
				snprintf(v, sizeof(v), "%u", *(const unsigned *)(const void *)at);
			else
				snprintf(v, sizeof(v), "%llu", (unsigned long long)*(const uint64_t *)(const void *)at);
			snprintf(err, len, "/%s: must %s %s (%s in the policy in force)", b, rel[r][1], a, v);
		}
	}
}

int cc_tn_policy_from_json(json_t *o, struct cc_tn_policy *p, char *err, size_t len)
{
	struct cc_tn_policy n = *p;
	const char *k, *why;
	json_t *v;

	if (!json_is_object(o)) {
		snprintf(err, len, "the policy is a JSON object");
		return -EINVAL;
	}
	json_object_foreach(o, k, v) {
		size_t i;
		char *at;

		if (!strcmp(k, "host_classes")) {
			if (host_classes_from_json(v, &n, err, len) < 0)
				return -EINVAL;
			continue;
		}
		for (i = 0; i < sizeof(policy_fields) / sizeof(policy_fields[0]); i++)
			if (!strcmp(k, policy_fields[i].name))
				break;
		if (i == sizeof(policy_fields) / sizeof(policy_fields[0])) {
			struct js_path q = { .len = 0 };

			js_path_push_key(&q, k); /* a JSON pointer: / and ~ escaped, at most 255 bytes */
			snprintf(err, len, "%s: unknown policy field", js_path_str(&q));
			return -EINVAL;
		}
		at = (char *)&n + policy_fields[i].off;
		switch (policy_fields[i].kind) {
		case 'm':
			if (!json_is_string(v) || cc_tn_mode_parse(json_string_value(v), (enum cc_tn_mode *)(void *)at) < 0) {
				snprintf(err, len, "/%s: must be \"off\", \"advise\" or \"auto\"", k);
				return -EINVAL;
			}
			break;
		case 'd':
			if (!json_is_number(v) || !isfinite(json_number_value(v))) {
				snprintf(err, len, "/%s: must be a number", k);
				return -EINVAL;
			}
			*(double *)(void *)at = json_number_value(v);
			break;
		default: {
			/* a whole number: an integer as it is, or a real such as 5.0 or 1e5 (JSON
			 * Schema's integer) up to 2^53; its range is the check's */
			uint64_t most = policy_fields[i].kind == 'u' ? UINT32_MAX : INT64_MAX, x;
			double d = json_number_value(v);
			size_t nk = strlen(k);
			bool bytes = nk > 6 && !strcmp(k + nk - 6, "_bytes");

			if (json_is_integer(v) && json_integer_value(v) >= 0) {
				x = (uint64_t)json_integer_value(v);
			} else if (bytes && json_is_string(v)) {
				/* a size as the change path takes one ("16MB", "1.5MiB", "400 kB") */
				int pr = conf_parse_size(json_string_value(v), &x);

				if (pr == -ERANGE) {
					snprintf(err, len, "/%s: '%.64s' is too large", k, json_string_value(v));
					return -EINVAL;
				}
				if (pr < 0) {
					snprintf(err, len, "/%s: '%.64s' is not a size: give bytes, or a number with a "
							   "unit: " CONF_SIZE_UNITS, k, json_string_value(v));
					return -EINVAL;
				}
			} else if (json_is_real(v) && d == floor(d) && d >= 0 && d <= 0x1p53) {
				x = (uint64_t)d;
			} else {
				snprintf(err, len, "/%s: must be a whole number%s%s", k,
					 bytes ? " of bytes (or a size such as \"400KB\")" : "",
					 json_is_number(v) && d < 0 ? ", not negative" : json_is_real(v) && d == floor(d)
						 ? ", up to 2^53 when written as a real" : "");
				return -EINVAL;
			}
			/* (a count: every one has a range far below, which the check says: "must be
			 * 1..100", not "up to 4294967295", an operator's trial) */
			if (x > most && policy_fields[i].kind == 'u')
				x = most;
			if (x > most) {
				snprintf(err, len, "/%s: must be a whole number up to %llu", k, (unsigned long long)most);
				return -EINVAL;
			}
			if (policy_fields[i].kind == 'u')
				*(unsigned *)(void *)at = (unsigned)x;
			else
				*(uint64_t *)(void *)at = x;
			break;
		}
		}
	}
	if ((why = cc_tn_policy_check(&n))) {
		policy_error(o, &n, why, err, len);
		return -EINVAL;
	}
	*p = n;
	return 0;
}

/* The range the policy gives knob k: its device ranges (Kmin: from its floor; Kmax: up to
 * its ceiling; what else bounds them is the class's or the member's: step_value, knob_range). */
static void policy_range(const struct cc_tn_policy *p, enum cc_tn_knob k, double *lo, double *hi)
{
	*lo = -INFINITY;
	*hi = INFINITY;
	switch (k) {
	case CC_TN_KMIN:
		*lo = (double)p->kmin_floor_bytes;
		break;
	case CC_TN_KMAX:
		*hi = (double)p->kmax_ceiling_bytes;
		break;
	case CC_TN_PMAX:
		*lo = p->pmax_floor;
		*hi = p->pmax_ceiling;
		break;
	case CC_TN_CNP_GAP:
		*lo = p->cnp_gap_min_us;
		*hi = p->cnp_gap_max_us;
		break;
	case CC_TN_TIME_RESET:
		*lo = p->time_reset_min_us;
		*hi = p->time_reset_max_us;
		break;
	case CC_TN_AI_RATE:
		*lo = p->ai_min_mbps;
		*hi = p->ai_max_mbps;
		break;
	case CC_TN_HAI_RATE:
		*lo = p->hai_min_mbps;
		*hi = p->hai_max_mbps;
		break;
	case CC_TN_BYTE_RESET:
		*lo = (double)p->byte_reset_min;
		*hi = (double)p->byte_reset_max;
		break;
	default:
		*lo = p->g_min;
		*hi = p->g_max;
		break;
	}
}

/* Whether value v of knob k lies in policy_range (NAN does not). */
static bool in_policy(const struct cc_tn_policy *p, enum cc_tn_knob k, double v)
{
	double lo, hi;

	policy_range(p, k, &lo, &hi);
	return v >= lo && v <= hi;
}

/* Every invariant and range a setting breaks, one bit each; the first one's text is the
 * reason given.  The bits let an undo be refused only for what it would break anew. */
static const char *const ecn_why[] = {
	"kmin_bytes must be below kmax_bytes",
	"kmin_bytes is below the policy's kmin_floor_bytes",
	"kmax_bytes is above the policy's kmax_ceiling_bytes",
	"kmax_bytes leaves less than one control loop (loop_bytes) below the PFC XOFF threshold",
	"pmax is outside the policy's pmax_floor..pmax_ceiling",
};

static unsigned ecn_violations(const struct cc_tn_policy *p, const struct cc_tn_ecn *e, uint64_t xoff_bytes)
{
	return (unsigned)(e->kmin_bytes >= e->kmax_bytes) |
	       (unsigned)!in_policy(p, CC_TN_KMIN, (double)e->kmin_bytes) << 1 |
	       (unsigned)!in_policy(p, CC_TN_KMAX, (double)e->kmax_bytes) << 2 |
	       (unsigned)(xoff_bytes && (p->loop_bytes > xoff_bytes || e->kmax_bytes > xoff_bytes - p->loop_bytes)) << 3 |
	       (unsigned)!in_policy(p, CC_TN_PMAX, e->pmax) << 4;
}

static const char *const dcqcn_why[] = {
	"min_time_between_cnps is outside the policy's cnp_gap_min_us..cnp_gap_max_us",
	"rpg_time_reset is outside the policy's range",
	"rpg_ai_rate is outside the policy's range",
	"rpg_hai_rate is outside the policy's range",
	"rpg_ai_rate must not exceed rpg_hai_rate",
	"rpg_byte_reset is outside the policy's range",
	"dce_tcp_g is outside the policy's range",
};

/* Bit b: knob bit_knob[b] outside its range (bit 4, marked CC_TN_NKNOBS: AI above HAI). */
static unsigned dcqcn_violations(const struct cc_tn_policy *p, const struct cc_tn_dcqcn *d)
{
	static const enum cc_tn_knob bit_knob[] = { CC_TN_CNP_GAP, CC_TN_TIME_RESET, CC_TN_AI_RATE, CC_TN_HAI_RATE,
						    CC_TN_NKNOBS, CC_TN_BYTE_RESET, CC_TN_ALPHA_G };
	unsigned v = (unsigned)(d->rpg_ai_rate_mbps > d->rpg_hai_rate_mbps) << 4;

	for (unsigned b = 0; b < sizeof(bit_knob) / sizeof(bit_knob[0]); b++)
		if (bit_knob[b] != CC_TN_NKNOBS && !in_policy(p, bit_knob[b], cc_tn_knob_get_dcqcn(d, bit_knob[b])))
			v |= 1u << b;
	return v;
}

static const char *first_why(unsigned v, const char *const *why)
{
	return v ? why[__builtin_ctz(v)] : NULL;
}

const char *cc_tn_ecn_check(const struct cc_tn_policy *p, const struct cc_tn_ecn *e, uint64_t xoff_bytes)
{
	return first_why(ecn_violations(p, e, xoff_bytes), ecn_why);
}

const char *cc_tn_dcqcn_check(const struct cc_tn_policy *p, const struct cc_tn_dcqcn *d)
{
	return first_why(dcqcn_violations(p, d), dcqcn_why);
}

double cc_tn_knob_get_ecn(const struct cc_tn_ecn *e, enum cc_tn_knob k)
{
	return k == CC_TN_KMIN ? (double)e->kmin_bytes : k == CC_TN_KMAX ? (double)e->kmax_bytes : e->pmax;
}

double cc_tn_knob_get_dcqcn(const struct cc_tn_dcqcn *d, enum cc_tn_knob k)
{
	switch (k) {
	case CC_TN_CNP_GAP:
		return d->min_time_between_cnps_us;
	case CC_TN_TIME_RESET:
		return d->rpg_time_reset_us;
	case CC_TN_AI_RATE:
		return d->rpg_ai_rate_mbps;
	case CC_TN_HAI_RATE:
		return d->rpg_hai_rate_mbps;
	case CC_TN_BYTE_RESET:
		return (double)d->rpg_byte_reset;
	case CC_TN_ALPHA_G:
		return d->dce_tcp_g;
	default:
		return NAN;
	}
}

static void knob_set_ecn(struct cc_tn_ecn *e, enum cc_tn_knob k, double v)
{
	if (k == CC_TN_KMIN)
		e->kmin_bytes = (uint64_t)llround(v);
	else if (k == CC_TN_KMAX)
		e->kmax_bytes = (uint64_t)llround(v);
	else
		e->pmax = v;
}

static void knob_set_dcqcn(struct cc_tn_dcqcn *d, enum cc_tn_knob k, double v)
{
	switch (k) {
	case CC_TN_CNP_GAP:
		d->min_time_between_cnps_us = v;
		break;
	case CC_TN_TIME_RESET:
		d->rpg_time_reset_us = v;
		break;
	case CC_TN_AI_RATE:
		d->rpg_ai_rate_mbps = v;
		break;
	case CC_TN_HAI_RATE:
		d->rpg_hai_rate_mbps = v;
		break;
	case CC_TN_BYTE_RESET:
		d->rpg_byte_reset = (uint64_t)llround(v);
		break;
	case CC_TN_ALPHA_G:
		d->dce_tcp_g = (uint32_t)lround(v);
		break;
	default:
		break;
	}
}

/* --- state ------------------------------------------------------------------------------- */

struct member {
	char key[132]; /* "node\x1fport", or the host's name */
	char node[64], port[64];
	bool host;
	int cls; /* from the last snapshot; -1: not seen */
	struct cc_tn_ecn ecn;
	struct cc_tn_dcqcn dc;
	uint64_t xoff; /* a port's own PFC XOFF threshold, as reported (0: the input's xoff_bytes) */
	int32_t snap_port; /* in the last snapshot: the port (a host: its NIC port); -1 */
	int32_t tor_port;  /* a host: the switch port facing it; -1 */
	bool canary;	   /* in the step's canary */
	bool touched;	   /* changed by the step in progress */
	uint16_t repaired; /* bit k: knob k left at a repair's value by a restart that cut the
			    * repair short (the policy refused its undo): it counts toward the
			    * repair's "most of a class" until that repair is done or the value
			    * changes */
	uint64_t owner;	   /* touched: the step that changed it (a restored rollback may hold
			    * members of other classes) */
	/* cc_tn_rollback_all: knobs (bit k) an undo passed through without a change (the policy
	 * refuses the value on the way: an older undo may take the member on from there), and
	 * the value each will really have (as it was, or as an older undo sets it) */
	uint16_t undo_passed;
	double undo_real[CC_TN_NKNOBS];
	uint64_t movable; /* the last step it could take when the step began (next_rollout) */
	bool unsure;	   /* its change failed: it may have been applied all the same (an agent
			    * that applied it and confirmed too late), or not */
	/* its last intervals' samples (queue delay us, share of capacity sent, share paused;
	 * NAN: not measured), newest at [nh % HIST], and the step's baseline: their mean when the
	 * step began (each member is compared with itself before, the canary's change with the
	 * rest's: a port that happens to carry a hot spot is not a worse canary) */
	double hq[4], hu[4], hp[4];
	double hx[4]; /* a host: the share of the interval it paused its switch port (unread: the
		       * far end paused this port) */
	/* a ToR's port whose far end is not in the snapshot (a host whose agent never reported,
	 * or a switch's): not known for a downlink or an uplink, so of no class (no step moves it,
	 * its queue is in no class's signals); the pauses it receives read as a host's
	 * (host_pausing: a trial's slow receiver without an agent took every ToR port's Kmin to
	 * 31 KB, its port taken for an uplink) */
	bool unread;
	unsigned nh;
	double bq, bu, bp;
};

/* Signals of one interval, fabric-wide and per class. */
struct sig {
	double pause_share;	   /* port time paused, all ports */
	/* of the ports' time paused (in intervals: a port paused all of it counts 1), the hosts'
	 * own: their switch ports paused by them (host_pauses) */
	double paused_ports, host_paused_ports;
	double qd_us[CC_TN_NSWITCH_CLASSES];	/* 90th percentile of the class's queue delay */
	double util[CC_TN_NSWITCH_CLASSES];	/* bytes sent / capacity */
	double mark[CC_TN_NSWITCH_CLASSES];	/* marked / sent packets */
	double host_util;	   /* hosts' bytes sent / capacity */
	double retx;		   /* retransmitted packets + timeouts per host */
	double retx_hosts;	   /* the hosts that reported them */
	double drops;		   /* discards per port */
	double buf_drops;	   /* of those, at a full ingress buffer (not a link's) */
	double crc;		   /* frames lost on links (bad FCS), fabric-wide */
	double carrier;		   /* links gone down or up (carrier changes), fabric-wide */
	double down_ports;	   /* ports down */
	/* a link went down or up in this interval or the one before (its flows time out) */
	bool link_event;
	double cnp;		   /* CNPs handled per host */
	double probe_p99_us;	   /* < 0: none */
	/* per host class ([class - CC_TN_HOSTS]), over its hosts and the ToR ports facing them:
	 * the share of their time paused (either side), the 90th percentile of those ToR ports'
	 * queue delay, the hosts' bytes sent against capacity and CNPs handled per host */
	double h_pause[CC_TN_NHOST_SLOTS], h_qd_us[CC_TN_NHOST_SLOTS], h_util[CC_TN_NHOST_SLOTS],
		h_cnp[CC_TN_NHOST_SLOTS];
};

/* Samples of one measure, one per member and interval: their count, sum and sum of squares. */
struct stat {
	double n, s, ss;
};

static void stat_add(struct stat *st, double x)
{
	st->n++;
	st->s += x;
	st->ss += x * x;
}

static double stat_mean(const struct stat *st)
{
	return st->n ? st->s / st->n : 0;
}

static double stat_var(const struct stat *st)
{
	double m = stat_mean(st);

	/* not below 0: equal samples can leave a rounding error either way (three of 0.1:
	 * -1.7e-18), and its square root would be NaN, which passes every comparison */
	return st->n > 1 ? fmax(0, (st->ss - st->n * m * m) / (st->n - 1)) : 0;
}

/* Whether c's mean is above r's by more than margin, and clearly (Welch's t above tmin): a
 * burst on one member in one interval does not make a canary worse; nor does one sample a
 * side (its spread unknown: a class of two in its first interval). */
static bool stat_worse_t(const struct stat *c, const struct stat *r, double margin, double tmin)
{
	double mc = stat_mean(c), mr = stat_mean(r), se;

	if (c->n < 2 || r->n < 2 || mc - mr <= margin)
		return false;
	se = sqrt(stat_var(c) / c->n + stat_var(r) / r->n);
	return se <= 0 || (mc - mr) / se > tmin;
}

static bool stat_worse(const struct stat *c, const struct stat *r, double margin)
{
	return stat_worse_t(c, r, margin, 2);
}

/* A group's measures over the intervals watched, canary against the rest: each sample is a
 * member's value less its baseline; lvl_* are the group's baselines' mean (its level before). */
struct grp {
	struct stat qd, util, pause; /* queue delay (us), share of capacity sent, share paused */
	double lvl_qd, lvl_util, lvl_pause;
};

enum step_state { ST_IDLE, ST_WAIT, ST_CANARY, ST_ROLLOUT, ST_ROLLBACK };
static const char *const state_names[] = { "idle", "waiting", "canary", "rollout", "rollback" };

struct done_step {
	uint64_t step;
	enum cc_tn_class cls;
	enum cc_tn_knob knob;
	double from, to;
	char **keys; /* the members changed */
	size_t nkeys;
	bool undone;
	bool counted; /* in rolled_back already: its own rollback was given up (rollback_again) */
	bool passed; /* an operator's undo of it passed a member on to an older step's undo, which
		      * sends its change: that one failing, this one is to undo again */
};

/* A step in progress: one knob of one class.  The classes step independently (each compares
 * its changed members with its others), so a fabric settles in a few intervals. */
struct step {
	enum step_state st;
	uint64_t step;
	enum cc_tn_class cls;
	enum cc_tn_knob knob;
	double from, to;
	bool forced, aggressive;
	bool urgent; /* against pauses: kept unless it hurts, no gain to show needed */
	bool repair; /* brings the class's setting back inside the policy: kept unless it hurts */
	bool relax; /* undoes a move against pauses now gone (relax_move): kept unless it hurts */
	unsigned tries; /* rollbacks of it that failed (rollback_again) */
	uint64_t retry_at; /* the interval its failed rollback is tried again */
	char label[32]; /* a restored step of a host class not in force: its saved name */
	struct cc_tn_proposal *cur; /* its latest proposal (canary, rollout or rollback) */
	unsigned watched;
	struct sig base; /* the fabric before the step */
	struct sig during;
	unsigned nduring;
	unsigned nquiet; /* intervals watched without a link event (watch_add) */
	struct grp g_canary, g_rest;
};

#define MAX_PROPOSALS 1024
#define WINDOW 3
/* What one frame a link lost may cost in retransmitted packets: a go-back-N sender resends
 * what it had sent after it (its window in flight; at 100 Gb/s and a 20 us round trip, 250
 * frames of 1 KB).  In the simulator at 2 % loss: about 40 a lost frame on average. */
#define RETX_PER_LOST_FRAME 256

struct cc_tn {
	struct cc_tn_policy pol; /* as set */
	/* the host classes in force (its host_classes only): pol's once no step of a host class
	 * is applied in part (a step's members stay its members until it is done or undone) */
	struct cc_tn_policy live;
	uint64_t classes_since; /* the interval they came in force: host classes wait for a
				 * window of signals measured with them */
	struct member **m;
	size_t nm, capm;
	struct hmap idx;
	int64_t t_us;
	uint64_t interval;
	bool carrier_last; /* a link went down or up in the last interval */
	uint64_t next_id, next_step, steps, rolled_back;
	struct cc_tn_proposal **props; /* recent, oldest first */
	size_t nprops, capprops;
	struct cc_tn_proposal **pend; /* cc_tn_pending's answer */
	size_t cappend;
	struct sig hist[WINDOW]; /* the last intervals' signals, hist[0] newest */
	unsigned nhist;
	uint64_t tabu_until[CC_TN_NCLASSES][CC_TN_NKNOBS][2]; /* [dir]: 0 down, 1 up */
	/* no softening move on the class before this interval: a harder step on it was kept
	 * (softening right after would work against it; the load that called for it may be back) */
	uint64_t soft_until[CC_TN_NCLASSES];
	/* a move against pauses rolled back for a fabric-wide rise is held briefly (unsafe_hold)
	 * once per tabu_intervals: until this interval the next such rollback holds it for
	 * tabu_intervals (not saved: a restart forgets it) */
	uint64_t retry_until[CC_TN_NCLASSES][CC_TN_NKNOBS][2];
	/* a harder move rolled back for no clear gain (not for harm) is held back until this
	 * interval unless ports pause: made while they do it comes at once (harder congestion
	 * control where PFC fires is kept without a gain to show, so its want of one says nothing
	 * there) */
	uint64_t nogain_until[CC_TN_NCLASSES][CC_TN_NKNOBS][2];
	uint64_t xoff; /* the last input's */
	uint64_t paused_at; /* the last interval whose ports paused above pause_target (0: none) */
	/* a switch class's Kmax or Pmax before the harder moves made against pauses that are kept
	 * on it (to; NAN: none), and where the tuner's last kept step of the knob left it (at):
	 * relax_move goes back to `to` once the pauses are gone, unless the value is no longer
	 * `at` (set since by someone else: theirs to keep) */
	struct relax {
		double to, at;
	} relax[CC_TN_NSWITCH_CLASSES][CC_TN_NKNOBS];
	/* the last input's, or a host pausing its switch port (host_pausing), or one of these
	 * whose pauses are still in the window of signals (fault_linger), "" when none: no harder
	 * step starts */
	char fault[384];
	char fault_last[384]; /* the last one held for, and the interval it was last seen */
	uint64_t fault_at;
	bool was_held; /* the last interval ended with one: its canaries need a gain (step_run) */
	unsigned canaries[CC_TN_NCLASSES]; /* canaries of the class so far (host_canary's turn) */
	struct step steps_of[CC_TN_NCLASSES]; /* the step in progress in each class */
	struct done_step *done;
	size_t ndone, capdone;
};

struct cc_tn *cc_tn_new(const struct cc_tn_policy *p)
{
	struct cc_tn *t;

	if (cc_tn_policy_check(p))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pol = *p;
	t->live = t->pol;
	hmap_init(&t->idx);
	t->next_id = t->next_step = 1;
	for (int c = 0; c < CC_TN_NSWITCH_CLASSES; c++)
		for (int k = 0; k < CC_TN_NKNOBS; k++)
			t->relax[c][k].to = NAN;
	return t;
}

static void proposal_free(struct cc_tn_proposal *p)
{
	if (!p)
		return;
	json_decref(p->evidence);
	free(p->changes);
	free(p);
}

void cc_tn_free(struct cc_tn *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nm; i++)
		free(t->m[i]);
	free(t->m);
	hmap_fini(&t->idx);
	for (size_t i = 0; i < t->nprops; i++)
		proposal_free(t->props[i]);
	free(t->props);
	free(t->pend);
	for (size_t i = 0; i < t->ndone; i++) {
		for (size_t k = 0; k < t->done[i].nkeys; k++)
			free(t->done[i].keys[k]);
		free(t->done[i].keys);
	}
	free(t->done);
	free(t);
}

static void mode_changed(struct cc_tn *t, enum cc_tn_mode from);

static bool same_host_classes(const struct cc_tn_policy *a, const struct cc_tn_policy *b)
{
	if (a->nhost_classes != b->nhost_classes)
		return false;
	for (unsigned i = 0; i < a->nhost_classes && i < CC_TN_MAX_HOST_CLASSES; i++)
		if (strcmp(a->host_classes[i].name, b->host_classes[i].name) ||
		    strcmp(a->host_classes[i].hosts, b->host_classes[i].hosts))
			return false;
	return true;
}

static void step_end(struct cc_tn *t, struct step *k);

/* Every canary waiting for an operator, of class `from` and after, rejected (nothing of it is
 * applied); hold: its move is not proposed again for tabu_intervals (an operator's no). */
static void reject_waiting(struct cc_tn *t, int from, bool hold)
{
	for (int c = from; c < CC_TN_NCLASSES; c++) {
		struct step *w = &t->steps_of[c];

		if (w->st != ST_WAIT)
			continue;
		if (w->cur)
			w->cur->state = CC_TN_REJECTED;
		if (hold)
			t->tabu_until[w->cls][w->knob][w->to > w->from] = t->interval + t->pol.tabu_intervals;
		step_end(t, w);
	}
}

/* Whether a step of a host class is applied in part (a canary waiting for an operator is not). */
static bool host_step_out(const struct cc_tn *t)
{
	for (int c = CC_TN_HOSTS; c < CC_TN_NCLASSES; c++)
		if (t->steps_of[c].st != ST_IDLE && t->steps_of[c].st != ST_WAIT)
			return true;
	return false;
}

static bool classes_pending(const struct cc_tn *t)
{
	return !same_host_classes(&t->live, &t->pol);
}

/* The policy's host classes in force, when they differ from those in force and no step of a
 * host class is applied in part: every host's class again; a canary waiting for an operator
 * (its members named by the old classes) rejected; a completed step keeps its class by name,
 * or becomes one of "hosts" when its class is gone (an operator's rollback finds its members
 * by name either way); a class kept by name keeps its tabu, a new one takes that of "hosts"
 * (where its hosts were); the host classes decide again after a window of new signals. */
static void adopt_classes(struct cc_tn *t)
{
	uint64_t tabu[CC_TN_NCLASSES][CC_TN_NKNOBS][2], retry[CC_TN_NCLASSES][CC_TN_NKNOBS][2],
		nogain[CC_TN_NCLASSES][CC_TN_NKNOBS][2], soft[CC_TN_NCLASSES];
	struct cc_tn_policy old = t->live;

	if (!classes_pending(t))
		return;
	/* a canary waiting for an operator would run on the old classes and hold the new ones
	 * back: rejected as soon as new ones are set (cc_tn_set_policy has withdrawn it already;
	 * a state restored with a canary waiting has not) */
	reject_waiting(t, CC_TN_HOSTS, false);
	if (host_step_out(t))
		return;
	memcpy(t->live.host_classes, t->pol.host_classes, sizeof(t->live.host_classes));
	t->live.nhost_classes = t->pol.nhost_classes;
	for (size_t i = 0; i < t->nm; i++)
		if (t->m[i]->host)
			t->m[i]->cls = cc_tn_host_class_of(&t->live, t->m[i]->node);
	for (size_t i = 0; i < t->ndone; i++) {
		struct done_step *ds = &t->done[i];

		if (ds->cls >= CC_TN_HOST_CLASS0 &&
		    cc_tn_class_lookup(&t->live, cc_tn_class_label(&old, ds->cls), &ds->cls) < 0)
			ds->cls = CC_TN_HOSTS;
	}
	memcpy(tabu, t->tabu_until, sizeof(tabu));
	memcpy(retry, t->retry_until, sizeof(retry));
	memcpy(soft, t->soft_until, sizeof(soft));
	memcpy(nogain, t->nogain_until, sizeof(nogain));
	for (int c = CC_TN_HOST_CLASS0; c < CC_TN_NCLASSES; c++) {
		enum cc_tn_class was;

		if (cc_tn_class_lookup(&old, cc_tn_class_label(&t->live, (enum cc_tn_class)c), &was) < 0)
			was = CC_TN_HOSTS;
		memcpy(t->tabu_until[c], tabu[was], sizeof(t->tabu_until[c]));
		memcpy(t->retry_until[c], retry[was], sizeof(t->retry_until[c]));
		memcpy(t->nogain_until[c], nogain[was], sizeof(t->nogain_until[c]));
		t->soft_until[c] = soft[was];
	}
	t->classes_since = t->interval;
}

static uint64_t soft_hold(const struct cc_tn_policy *p);

/* The holds in force no longer than the policy holds a move now, as a restart takes them back
 * (saved_hold): an operator's shorter tabu_intervals took effect on the holds only at a
 * restart (a trial: "held back for 22 intervals" after tabu_intervals 3, "3" once restarted). */
static void clamp_holds(struct cc_tn *t)
{
	uint64_t most = t->interval + t->pol.tabu_intervals, soft = t->interval + soft_hold(&t->pol);

	for (int c = 0; c < CC_TN_NCLASSES; c++) {
		for (int k = 0; k < CC_TN_NKNOBS; k++)
			for (int up = 0; up < 2; up++) {
				if (t->tabu_until[c][k][up] > most)
					t->tabu_until[c][k][up] = most;
				if (t->nogain_until[c][k][up] > most)
					t->nogain_until[c][k][up] = most;
			}
		if (t->soft_until[c] > soft)
			t->soft_until[c] = soft;
	}
}

int cc_tn_set_policy(struct cc_tn *t, const struct cc_tn_policy *p)
{
	enum cc_tn_mode old = t->pol.mode;
	struct cc_tn_policy same_mode = *p;

	if (cc_tn_policy_check(p))
		return -EINVAL;
	same_mode.mode = old;
	/* a canary waiting for an operator was made under the policy before — its value inside
	 * those ranges, its members that share of the class — and applying it now could leave
	 * the policy in force: withdrawn (rejected, no hold: made again if still called for) */
	if (!cc_tn_policy_equal(&t->pol, &same_mode))
		reject_waiting(t, 0, false);
	t->pol = *p;
	clamp_holds(t);
	adopt_classes(t);
	if (old != p->mode)
		mode_changed(t, old);
	return 0;
}

const struct cc_tn_policy *cc_tn_get_policy(const struct cc_tn *t)
{
	return &t->pol;
}

/* A member's key: "node\x1fport", or the host's name. */
static void member_key(char key[132], const char *node, const char *port, bool host)
{
	if (host)
		snprintf(key, 132, "%s", node);
	else
		snprintf(key, 132, "%s\x1f%s", node, port);
}

static struct member *member_get(struct cc_tn *t, const char *node, const char *port, bool host)
{
	char key[132];
	struct member *m;

	if (strlen(node) >= sizeof(m->node) || strlen(port) >= sizeof(m->port))
		return NULL;
	member_key(key, node, port, host);
	m = hmap_get(&t->idx, key);
	if (m)
		return m;
	if (vec_room((void **)&t->m, &t->capm, t->nm, sizeof(*t->m)) < 0 || !(m = calloc(1, sizeof(*m))))
		return NULL;
	memcpy(m->key, key, sizeof(key));
	snprintf(m->node, sizeof(m->node), "%s", node);
	snprintf(m->port, sizeof(m->port), "%s", host ? "" : port);
	m->host = host;
	m->cls = host ? (int)cc_tn_host_class_of(&t->live, m->node) : -1;
	m->snap_port = m->tor_port = -1;
	if (hmap_put(&t->idx, m->key, m, NULL) < 0) {
		free(m);
		return NULL;
	}
	t->m[t->nm++] = m;
	return m;
}

int cc_tn_track_port(struct cc_tn *t, const char *node, const char *port, const struct cc_tn_ecn *e)
{
	struct member *m = member_get(t, node, port, false);

	if (!m)
		return -ENOMEM;
	for (int k = CC_TN_KMIN; k <= CC_TN_PMAX; k++)
		if (cc_tn_knob_get_ecn(e, (enum cc_tn_knob)k) != cc_tn_knob_get_ecn(&m->ecn, (enum cc_tn_knob)k))
			m->repaired &= (uint16_t) ~(1u << k);
	m->ecn = *e;
	return 0;
}

int cc_tn_track_host(struct cc_tn *t, const char *host, const struct cc_tn_dcqcn *d)
{
	struct member *m = member_get(t, host, "", true);

	if (!m)
		return -ENOMEM;
	for (int k = CC_TN_CNP_GAP; k < CC_TN_NKNOBS; k++)
		if (cc_tn_knob_get_dcqcn(d, (enum cc_tn_knob)k) != cc_tn_knob_get_dcqcn(&m->dc, (enum cc_tn_knob)k))
			m->repaired &= (uint16_t) ~(1u << k);
	m->dc = *d;
	return 0;
}

int cc_tn_track_xoff(struct cc_tn *t, const char *node, const char *port, uint64_t xoff_bytes)
{
	char key[132];
	struct member *m;

	member_key(key, node, port, false);
	if (!(m = hmap_get(&t->idx, key)))
		return -ENOENT;
	m->xoff = xoff_bytes;
	return 0;
}

const char *cc_tn_policy_fits(const struct cc_tn *t, const struct cc_tn_policy *p, char *buf, size_t len)
{
	uint64_t lo = 0, hi = 0;
	size_t n = 0;

	for (size_t i = 0; i < t->nm; i++) {
		const struct member *m = t->m[i];
		uint64_t xoff = m->xoff ? m->xoff : t->xoff;

		if (m->host || !xoff)
			continue;
		if (xoff > p->loop_bytes && xoff - p->loop_bytes > p->kmin_floor_bytes)
			return NULL;
		lo = n++ && lo < xoff ? lo : xoff;
		hi = hi > xoff ? hi : xoff;
	}
	if (!n)
		return NULL; /* nothing known yet */
	/* what would leave room, of either field (the message served both, named loop_bytes' bound) */
	{
		size_t l = 0;

		l += (size_t)snprintf(buf, len,
				      "loop_bytes: with loop_bytes %" PRIu64 " no switch port has room for a Kmax: "
				      "their PFC XOFF thresholds are %" PRIu64 "..%" PRIu64 " bytes, and Kmax must "
				      "stay at most XOFF - loop_bytes and above kmin_floor_bytes (%" PRIu64 ")",
				      p->loop_bytes, lo, hi, p->kmin_floor_bytes);
		if (l < len && hi > p->kmin_floor_bytes)
			l += (size_t)snprintf(buf + l, len - l, "; some would have one with loop_bytes below %" PRIu64,
					      hi - p->kmin_floor_bytes);
		if (l < len && hi > p->loop_bytes)
			snprintf(buf + l, len - l, "%s kmin_floor_bytes below %" PRIu64,
				 hi > p->kmin_floor_bytes ? " or" : "; some would have one with", hi - p->loop_bytes);
	}
	return buf;
}

/* --- signals ----------------------------------------------------------------------------- */

static bool host_node(const struct cc_snap *s, uint32_t port)
{
	return port != CC_NONE && s->nodes[s->ports[port].node].kind == CC_HOST;
}

/* Every member's class and place in this snapshot. */
static void classify(struct cc_tn *t, const struct cc_snap *s)
{
	bool *has_hosts = calloc(s->nnodes ? s->nnodes : 1, sizeof(*has_hosts));

	for (size_t i = 0; i < t->nm; i++) {
		t->m[i]->snap_port = t->m[i]->tor_port = -1;
		t->m[i]->unread = false;
		if (!t->m[i]->host)
			t->m[i]->cls = -1;
	}
	if (!has_hosts)
		return;
	for (uint32_t p = 0; p < s->nports; p++)
		if (s->nodes[s->ports[p].node].kind == CC_SWITCH && host_node(s, s->ports[p].peer))
			has_hosts[s->ports[p].node] = true;
	for (uint32_t p = 0; p < s->nports; p++) {
		const struct cc_port *cp = &s->ports[p];
		const struct cc_node *n = &s->nodes[cp->node];
		struct member *m;
		char key[132];

		if (n->kind == CC_HOST) {
			m = hmap_get(&t->idx, n->name);
			if (!m || !m->host || m->snap_port >= 0)
				continue;
			/* a port without readings (its agent silent; or one a switch's agent left, its
			 * role flipped within the decision interval, cc_snap_merge) gives only the
			 * switch port it hangs off, whose received pauses are its (host_pauses): not
			 * seen, no step moves it (before, a silent slow receiver was not read, and its
			 * pauses drove harder steps: an operator's trial) */
			if (!cp->silent)
				m->snap_port = (int32_t)p;
			if (!cp->silent || m->tor_port < 0)
				m->tor_port = cp->peer == CC_NONE ? -1 : (int32_t)cp->peer;
			continue;
		}
		snprintf(key, sizeof(key), "%s\x1f%s", n->name, cp->name);
		m = hmap_get(&t->idx, key);
		if (!m)
			continue;
		m->snap_port = (int32_t)p;
		m->unread = cp->peer == CC_NONE && has_hosts[cp->node];
		m->cls = m->unread		      ? -1
			 : host_node(s, cp->peer)     ? CC_TN_TOR_DOWN
			 : has_hosts[cp->node]	      ? CC_TN_TOR_UP
						      : CC_TN_SPINE;
	}
	free(has_hosts);
}

/* A queue's delay over the interval, in microseconds at the port's speed: its peak (the
 * periodic watermark) when the switch reports one, else its depth at the end. */
static double qdelay_us(const struct cc_snap *s, uint32_t port, unsigned prio)
{
	const struct cc_prio *e = cc_snap_prio(s, port, prio);
	uint64_t mbps = s->ports[port].speed_mbps;

	if (!e || !mbps)
		return -1;
	if (e->have & (1u << CF_QUEUE_PEAK))
		return (double)e->v[CF_QUEUE_PEAK] * 8 / (double)mbps;
	if (e->have & (1u << CF_QUEUE_DEPTH))
		return (double)e->v[CF_QUEUE_DEPTH] * 8 / (double)mbps;
	return -1;
}

static double p90(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(double), vec_cmp_double);
	return v[(size_t)((double)(n - 1) * 0.9 + 0.5)];
}

/* Whether a priority's field f, a port's field f, was reported: an absent one is not a zero
 * (a missing pause counter is no proof of a port never paused), so it is left out of sums
 * and of what they are divided by. */
static bool has_field(const struct cc_prio *e, unsigned f)
{
	return e && (e->have & (1u << f));
}

static bool has_pfield(const struct cc_port *cp, unsigned f)
{
	return cp->phave & (1u << f);
}

/* The share of the interval host port p (linked to its switch port, or not) paused that
 * switch port: as the switch port counts the pauses it received (a hung host's agent often
 * sends nothing), or as p counts those it sent; the larger.  NAN: neither reported. */
static double port_paused_by_host(const struct cc_snap *s, uint32_t p, unsigned prio, double iv)
{
	const struct cc_prio *e;
	double x = NAN;

	if (s->ports[p].peer != CC_NONE && has_field(e = cc_snap_prio(s, s->ports[p].peer, prio), CF_RX_PAUSE_US))
		x = (double)e->v[CF_RX_PAUSE_US] / iv;
	if (has_field(e = cc_snap_prio(s, p, prio), CF_TX_PAUSE_US))
		x = fmax(isnan(x) ? 0 : x, (double)e->v[CF_TX_PAUSE_US] / iv);
	return x;
}

/* The share of the interval a host paused its switch port, of each of its ports the most (a
 * host with two RoCE ports may pause on one: before, only the port classify() kept was read),
 * and in *sum their total (port time paused, as the fabric's paused share counts it; sum may
 * be NULL); an unread ToR port: its far end's, as the port counts them.  NAN: none reported. */
static double host_pauses(const struct cc_snap *s, const struct member *m, unsigned prio, double *sum)
{
	double iv = s->interval_us > 0 ? (double)s->interval_us : 1, most = NAN, total = 0;
	const struct cc_prio *e;
	int node;

	if (m->unread) { /* (its own port: the switch's) */
		most = has_field(e = cc_snap_prio(s, (uint32_t)m->snap_port, prio), CF_RX_PAUSE_US)
			       ? (double)e->v[CF_RX_PAUSE_US] / iv
			       : NAN;
		total = isnan(most) ? 0 : most;
	} else if ((node = cc_snap_find_node(s, m->node)) >= 0) {
		const struct cc_node *n = &s->nodes[node];

		for (uint32_t i = 0; i < n->nports; i++) {
			double x = port_paused_by_host(s, n->ports[i], prio, iv);

			if (!isnan(x)) {
				most = fmax(isnan(most) ? 0 : most, x);
				total += x;
			}
		}
	}
	if (sum)
		*sum = total;
	return most;
}

/* The signals of each host class, from its members. */
static int measure_host_classes(struct cc_tn *t, const struct cc_tn_input *in, struct sig *g)
{
	const struct cc_snap *s = in->snap;
	double iv = s->interval_us > 0 ? (double)s->interval_us : 1;
	double paused[CC_TN_NHOST_SLOTS] = { 0 }, ptime[CC_TN_NHOST_SLOTS] = { 0 }, tx[CC_TN_NHOST_SLOTS] = { 0 },
	       cap[CC_TN_NHOST_SLOTS] = { 0 }, cnp[CC_TN_NHOST_SLOTS] = { 0 };
	unsigned nh[CC_TN_NHOST_SLOTS] = { 0 }; /* hosts that reported their CNPs */
	size_t nq[CC_TN_NHOST_SLOTS] = { 0 };
	double *qd[CC_TN_NHOST_SLOTS] = { 0 };
	int r = 0;

	for (int h = 0; h < CC_TN_NHOST_SLOTS; h++)
		if (!(qd[h] = malloc((t->nm ? t->nm : 1) * sizeof(double))))
			r = -ENOMEM;
	for (size_t i = 0; i < t->nm && !r; i++) {
		const struct member *m = t->m[i];
		const struct cc_port *cp;
		const struct cc_prio *e;
		int h = m->cls - CC_TN_HOSTS;
		double q;

		if (!m->host || h < 0 || h >= CC_TN_NHOST_SLOTS || m->snap_port < 0)
			continue;
		cp = &s->ports[m->snap_port];
		if (has_pfield(cp, CP_TX_BYTES)) {
			tx[h] += (double)cp->pv[CP_TX_BYTES];
			cap[h] += (double)cp->speed_mbps * iv / 8;
		}
		if (has_pfield(cp, CP_CNP_HANDLED)) {
			nh[h]++;
			cnp[h] += (double)cp->pv[CP_CNP_HANDLED];
		}
		if (has_field(e = cc_snap_prio(s, (uint32_t)m->snap_port, in->prio), CF_RX_PAUSE_US)) {
			paused[h] += (double)e->v[CF_RX_PAUSE_US];
			ptime[h] += iv;
		}
		if (m->tor_port < 0)
			continue;
		if (has_field(e = cc_snap_prio(s, (uint32_t)m->tor_port, in->prio), CF_RX_PAUSE_US)) {
			paused[h] += (double)e->v[CF_RX_PAUSE_US];
			ptime[h] += iv;
		}
		if ((q = qdelay_us(s, (uint32_t)m->tor_port, in->prio)) >= 0)
			qd[h][nq[h]++] = q;
	}
	for (int h = 0; h < CC_TN_NHOST_SLOTS; h++) {
		if (!r) {
			g->h_pause[h] = ptime[h] > 0 ? paused[h] / ptime[h] : 0;
			g->h_qd_us[h] = p90(qd[h], nq[h]);
			g->h_util[h] = cap[h] > 0 ? tx[h] / cap[h] : 0;
			g->h_cnp[h] = nh[h] ? cnp[h] / nh[h] : 0;
		}
		free(qd[h]);
	}
	return r;
}

static int measure(struct cc_tn *t, const struct cc_tn_input *in, struct sig *g)
{
	const struct cc_snap *s = in->snap;
	double *qd[CC_TN_NSWITCH_CLASSES] = { 0 };
	size_t nq[CC_TN_NSWITCH_CLASSES] = { 0 };
	double tx[CC_TN_NSWITCH_CLASSES] = { 0 }, cap[CC_TN_NSWITCH_CLASSES] = { 0 };
	double mk[CC_TN_NSWITCH_CLASSES] = { 0 }, pk[CC_TN_NSWITCH_CLASSES] = { 0 };
	double paused = 0, port_time = 0, htx = 0, hcap = 0, retx = 0, drops = 0, bdrops = 0, cnp = 0;
	unsigned nretx = 0, ncnp = 0, ndrops = 0; /* hosts, ports that reported them */
	double iv = s->interval_us > 0 ? (double)s->interval_us : 1;
	int r = 0;

	memset(g, 0, sizeof(*g));
	for (int c = 0; c < CC_TN_NSWITCH_CLASSES; c++)
		if (!(qd[c] = malloc((t->nm ? t->nm : 1) * sizeof(double))))
			r = -ENOMEM;
	for (uint32_t p = 0; p < s->nports && !r; p++) {
		const struct cc_port *cp = &s->ports[p];
		const struct cc_prio *e = cc_snap_prio(s, p, in->prio);

		g->crc += (double)cp->pv[CP_RX_CRC]; /* (0 unless reported) */
		g->carrier += (double)cp->pv[CP_CARRIER];
		g->down_ports += cp->down;
		if (cp->down)
			continue;
		if (has_field(e, CF_RX_PAUSE_US)) {
			paused += (double)e->v[CF_RX_PAUSE_US];
			port_time += iv;
		}
		if (has_pfield(cp, CP_TX_DISCARDS) || has_field(e, CF_RX_BUF_DISCARDS)) {
			ndrops++;
			drops += has_pfield(cp, CP_TX_DISCARDS) ? (double)cp->pv[CP_TX_DISCARDS] : 0;
			bdrops += has_field(e, CF_RX_BUF_DISCARDS) ? (double)e->v[CF_RX_BUF_DISCARDS] : 0;
		}
		if (s->nodes[cp->node].kind == CC_HOST) {
			if (has_pfield(cp, CP_TX_BYTES)) {
				htx += (double)cp->pv[CP_TX_BYTES];
				hcap += (double)cp->speed_mbps * iv / 8;
			}
			if (has_pfield(cp, CP_RETX) || has_pfield(cp, CP_ACK_TIMEOUT)) {
				nretx++;
				retx += (double)(cp->pv[CP_RETX] + cp->pv[CP_ACK_TIMEOUT]);
			}
			if (has_pfield(cp, CP_CNP_HANDLED)) {
				ncnp++;
				cnp += (double)cp->pv[CP_CNP_HANDLED];
			}
		}
	}
	for (size_t i = 0; i < t->nm && !r; i++) {
		const struct member *m = t->m[i];
		const struct cc_prio *e;
		double q;

		if (((m->host && m->cls >= 0) || m->unread) && !isnan(host_pauses(s, m, in->prio, &q)))
			g->host_paused_ports += q;
		if (m->host || m->cls < 0 || m->snap_port < 0)
			continue;
		e = cc_snap_prio(s, (uint32_t)m->snap_port, in->prio);
		if ((q = qdelay_us(s, (uint32_t)m->snap_port, in->prio)) >= 0)
			qd[m->cls][nq[m->cls]++] = q;
		if (has_field(e, CF_TX_BYTES)) {
			tx[m->cls] += (double)e->v[CF_TX_BYTES];
			cap[m->cls] += (double)s->ports[m->snap_port].speed_mbps * iv / 8;
		}
		if (has_field(e, CF_ECN_MARKED) && has_field(e, CF_TX_PACKETS)) {
			mk[m->cls] += (double)e->v[CF_ECN_MARKED];
			pk[m->cls] += (double)e->v[CF_TX_PACKETS];
		}
	}
	for (int c = 0; c < CC_TN_NSWITCH_CLASSES && !r; c++) {
		g->qd_us[c] = p90(qd[c], nq[c]);
		g->util[c] = cap[c] > 0 ? tx[c] / cap[c] : 0;
		g->mark[c] = pk[c] > 0 ? mk[c] / pk[c] : 0;
	}
	for (int c = 0; c < CC_TN_NSWITCH_CLASSES; c++)
		free(qd[c]);
	/* with no named host class in force "hosts" goes by the fabric's signals (choose): none
	 * of its own to measure */
	if (!r && t->live.nhost_classes)
		r = measure_host_classes(t, in, g);
	g->pause_share = port_time > 0 ? paused / port_time : 0;
	g->paused_ports = paused / iv;
	g->host_util = hcap > 0 ? htx / hcap : 0;
	g->retx = nretx ? retx / nretx : 0;
	g->retx_hosts = nretx;
	g->link_event = g->carrier > 0 || t->carrier_last;
	t->carrier_last = g->carrier > 0;
	g->cnp = ncnp ? cnp / ncnp : 0;
	g->drops = ndrops ? (drops + bdrops) / ndrops : 0;
	g->buf_drops = ndrops ? bdrops / ndrops : 0;
	g->probe_p99_us = in->probe_p99_us;
	return r;
}

/* The mean of the last n intervals' signals (n <= nhist). */
static void sig_mean(const struct cc_tn *t, unsigned n, struct sig *ret)
{
	double p = 0;
	unsigned np = 0;

	memset(ret, 0, sizeof(*ret));
	if (!n)
		return;
	for (unsigned i = 0; i < n; i++) {
		const struct sig *g = &t->hist[i];

		ret->pause_share += g->pause_share / n;
		ret->paused_ports += g->paused_ports / n;
		ret->host_paused_ports += g->host_paused_ports / n;
		for (int c = 0; c < CC_TN_NSWITCH_CLASSES; c++) {
			ret->qd_us[c] += g->qd_us[c] / n;
			ret->util[c] += g->util[c] / n;
			ret->mark[c] += g->mark[c] / n;
		}
		ret->host_util += g->host_util / n;
		ret->retx += g->retx / n;
		ret->drops += g->drops / n;
		ret->crc += g->crc / n;
		ret->carrier += g->carrier / n;
		ret->down_ports += g->down_ports / n;
		ret->cnp += g->cnp / n;
		for (int h = 0; h < CC_TN_NHOST_SLOTS; h++) {
			ret->h_pause[h] += g->h_pause[h] / n;
			ret->h_qd_us[h] += g->h_qd_us[h] / n;
			ret->h_util[h] += g->h_util[h] / n;
			ret->h_cnp[h] += g->h_cnp[h] / n;
		}
		if (g->probe_p99_us >= 0) {
			p += g->probe_p99_us;
			np++;
		}
	}
	ret->probe_p99_us = np ? p / np : -1;
}

static bool class_present(const struct cc_tn *t, enum cc_tn_class c);

/* The signals; with named host classes, each host class's too. */
static json_t *sig_json(const struct cc_tn *t, const struct sig *g)
{
	json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f}", "pause_share", g->pause_share, "host_util", g->host_util,
			      "retransmits_per_host", g->retx, "drops_per_port", g->drops, "cnp_per_host", g->cnp,
			      "link_errors", g->crc + g->carrier);

	for (int c = 0; o && c < CC_TN_NSWITCH_CLASSES; c++)
		json_object_set_new(o, class_names[c],
				    json_pack("{s:f,s:f,s:f}", "queue_delay_p90_us", g->qd_us[c], "utilization",
					      g->util[c], "marked_share", g->mark[c]));
	if (o && g->probe_p99_us >= 0)
		json_object_set_new(o, "probe_p99_us", json_real(g->probe_p99_us));
	if (o && t->live.nhost_classes) {
		json_t *hc = json_object();

		for (int c = CC_TN_HOSTS; hc && c < CC_TN_NCLASSES; c++) {
			int h = c - CC_TN_HOSTS;

			if (class_present(t, (enum cc_tn_class)c))
				json_object_set_new(hc, LBL(c),
						    json_pack("{s:f,s:f,s:f,s:f}", "pause_share", g->h_pause[h],
							      "tor_queue_delay_p90_us", g->h_qd_us[h], "host_util",
							      g->h_util[h], "cnp_per_host", g->h_cnp[h]));
		}
		json_object_set_new(o, "host_classes", hc);
	}
	return o;
}

/* Adds this interval's measures of the canary and of the rest of the step's class. */
/* A member's samples in this snapshot: queue delay (the queue it sends into: a port's own, the
 * switch port facing a host), share of capacity sent, share of the time its traffic was paused
 * (a port: its own and its peer's; a host's pause depends on what it sends, not on its own
 * knobs: none).  NAN where not measured. */
static void member_sample(const struct cc_snap *s, const struct member *m, unsigned prio, double *q, double *u,
			  double *pz)
{
	double iv = s->interval_us > 0 ? (double)s->interval_us : 1;
	int32_t qp = m->host ? m->tor_port : m->snap_port, tp = m->snap_port;
	const struct cc_prio *e;
	double x;

	*q = *u = *pz = NAN;
	if (qp >= 0 && (x = qdelay_us(s, (uint32_t)qp, prio)) >= 0)
		*q = x;
	if (tp >= 0 && s->ports[tp].speed_mbps) {
		const struct cc_port *cp = &s->ports[tp];

		e = cc_snap_prio(s, (uint32_t)tp, prio);
		if (m->host ? has_pfield(cp, CP_TX_BYTES) : has_field(e, CF_TX_BYTES))
			*u = (m->host ? (double)cp->pv[CP_TX_BYTES] : (double)e->v[CF_TX_BYTES]) /
			     ((double)cp->speed_mbps * iv / 8);
	}
	if (!m->host && qp >= 0 && has_field(e = cc_snap_prio(s, (uint32_t)qp, prio), CF_RX_PAUSE_US)) {
		const struct cc_port *cp = &s->ports[qp];
		const struct cc_prio *pe = cp->peer != CC_NONE ? cc_snap_prio(s, cp->peer, prio) : NULL;

		*pz = ((double)e->v[CF_RX_PAUSE_US] + (has_field(pe, CF_RX_PAUSE_US) ? (double)pe->v[CF_RX_PAUSE_US] : 0)) / iv;
	}
}

/* Every member's samples of this interval into its history. */
static void history_add(struct cc_tn *t, const struct cc_tn_input *in)
{
	for (size_t i = 0; i < t->nm; i++) {
		struct member *m = t->m[i];
		unsigned k = m->nh++ % 4;

		m->hx[k] = NAN;
		if (m->unread) {
			m->hq[k] = m->hu[k] = m->hp[k] = NAN;
			m->hx[k] = host_pauses(in->snap, m, in->prio, NULL);
			continue;
		}
		if (m->cls < 0 || (m->snap_port < 0 && !m->host)) {
			m->hq[k] = m->hu[k] = m->hp[k] = NAN;
			continue;
		}
		member_sample(in->snap, m, in->prio, &m->hq[k], &m->hu[k], &m->hp[k]);
		if (m->host)
			m->hx[k] = host_pauses(in->snap, m, in->prio, NULL);
	}
}

static double hist_mean(const double *h, unsigned nh)
{
	double sum = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < (nh < 4 ? nh : 4); i++)
		if (!isnan(h[i])) {
			sum += h[i];
			n++;
		}
	return n ? sum / n : NAN;
}

/* A host pausing its switch port is a pause source of its own: its receive pipeline (a slow
 * receiver, a stalled NIC) cannot take what comes at line rate, which no ECN or DCQCN setting
 * cures; the pauses and deep queues it spreads are not congestion's, and harder marking against
 * them only slows every other flow (an operator's trial: a slow receiver took the spines' Kmin
 * to the floor).  Hosts that drain at line rate pause nothing (rocefab-sim's pause only under a
 * fault), but real NICs do now and then (PCIe back-pressure, their caches' misses): such a host
 * holds the harder steps only when it pauses host_pause_hold of the time or more and the
 * hosts' own pauses are HOST_ROOTED or more of the fabric's paused port time over the tuner's
 * window — under congestion, whose pauses are the switches', one NIC's pauses hold nothing.
 * (A host whose agent is silent, or never reported, is read from its switch port's side:
 * classify().)  In the simulator a slow receiver's pauses stay on its own link (0.9 to 1 of
 * the fabric's). */
#define HOST_ROOTED 0.25

/* The host pausing its switch port most over the last intervals, when it is host_pause_hold or
 * more while the hosts' pauses are HOST_ROOTED of the fabric's: what no harder step is for
 * (fault).  Nothing otherwise. */
static void host_pausing(struct cc_tn *t)
{
	const struct member *worst = NULL;
	double most = 0, own;
	struct sig g;

	if (t->pol.host_pause_hold <= 0 || !t->nhist)
		return;
	for (size_t i = 0; i < t->nm; i++) {
		const struct member *m = t->m[i];
		double x;

		if (((m->host && m->cls >= 0) || m->unread) && !isnan(x = hist_mean(m->hx, m->nh)) && x > most) {
			most = x;
			worst = m;
		}
	}
	sig_mean(t, t->nhist, &g);
	/* (the hosts' own count as all of it where the switches report no pauses) */
	own = g.paused_ports > 0 ? fmin(1, g.host_paused_ports / g.paused_ports) : 1;
	if (!worst || most < t->pol.host_pause_hold || own < HOST_ROOTED)
		return;
	if (worst->host)
		snprintf(t->fault, sizeof(t->fault),
			 "host %s pauses its switch port %.1f %% of the time; hosts' own pauses: %.0f %% of the "
			 "fabric's",
			 worst->node, most * 100, own * 100);
	else
		snprintf(t->fault, sizeof(t->fault),
			 "the far end of %s %s (no readings of it: a host without an agent?) pauses it %.1f %% of "
			 "the time; hosts' own pauses: %.0f %% of the fabric's",
			 worst->node, worst->port, most * 100, own * 100);
}

/* A fault held for stays in the tuner's signals for the window after it was last seen (the
 * mean of the last WINDOW intervals decides): held as long (an operator's trial: the first
 * decision after a pause storm ended read 42 % of port time paused, and made and kept three
 * harder steps on it). */
static void fault_linger(struct cc_tn *t)
{
	if (t->fault[0]) {
		memcpy(t->fault_last, t->fault, sizeof(t->fault_last));
		t->fault_at = t->interval;
	} else if (t->fault_last[0] && t->interval <= t->fault_at + WINDOW) {
		snprintf(t->fault, sizeof(t->fault), "%.300s, over: its pauses still in the last intervals' signals",
			 t->fault_last);
	} else {
		t->fault_last[0] = '\0';
	}
}

static void lvl_add(double *lvl, double *n, double v)
{
	if (!isnan(v)) {
		*lvl = (*lvl * *n + v) / (*n + 1);
		(*n)++;
	}
}

/* The step's baselines: every member of its class compared with itself from now on. */
static void baseline(struct cc_tn *t, struct step *k)
{
	double nc[3] = { 0 }, nr[3] = { 0 };

	memset(&k->g_canary, 0, sizeof(k->g_canary));
	memset(&k->g_rest, 0, sizeof(k->g_rest));
	for (size_t i = 0; i < t->nm; i++) {
		struct member *m = t->m[i];
		struct grp *g;
		double *n;

		if (m->cls != (int)k->cls)
			continue;
		m->bq = hist_mean(m->hq, m->nh);
		m->bu = hist_mean(m->hu, m->nh);
		m->bp = hist_mean(m->hp, m->nh);
		g = m->canary ? &k->g_canary : &k->g_rest;
		n = m->canary ? nc : nr;
		lvl_add(&g->lvl_qd, &n[0], m->bq);
		lvl_add(&g->lvl_util, &n[1], m->bu);
		lvl_add(&g->lvl_pause, &n[2], m->bp);
	}
}

/* Adds this interval's changes from the baselines, of the changed members and of the rest. */
static void grp_add(struct cc_tn *t, struct step *k, const struct cc_tn_input *in)
{
	for (size_t i = 0; i < t->nm; i++) {
		const struct member *m = t->m[i];
		struct grp *g;
		double q, u, pz;

		if ((int)k->cls != m->cls)
			continue;
		g = m->canary ? &k->g_canary : &k->g_rest;
		member_sample(in->snap, m, in->prio, &q, &u, &pz);
		if (!isnan(q) && !isnan(m->bq))
			stat_add(&g->qd, q - m->bq);
		if (!isnan(u) && !isnan(m->bu))
			stat_add(&g->util, u - m->bu);
		if (!isnan(pz) && !isnan(m->bp))
			stat_add(&g->pause, pz - m->bp);
	}
}

/* --- proposals --------------------------------------------------------------------------- */

/* A step's class name: its class's, or a restored step's saved one. */
static const char *step_label(const struct cc_tn *t, const struct step *k)
{
	return k->label[0] ? k->label : LBL(k->cls);
}

static bool in_progress(const struct cc_tn *t, const struct cc_tn_proposal *p)
{
	for (int c = 0; c < CC_TN_NCLASSES; c++)
		if (t->steps_of[c].cur == p)
			return true;
	return false;
}

static struct cc_tn_proposal *proposal_new(struct cc_tn *t, struct step *k, enum cc_tn_phase phase)
{
	struct cc_tn_proposal *p;

	if (t->nprops >= MAX_PROPOSALS) {
		/* drop the oldest finished one that is not the step's */
		for (size_t i = 0; i < t->nprops; i++) {
			struct cc_tn_proposal *o = t->props[i];

			if (!in_progress(t, o) && o->state != CC_TN_WAITING && o->state != CC_TN_APPROVED) {
				proposal_free(o);
				memmove(&t->props[i], &t->props[i + 1], (t->nprops - i - 1) * sizeof(*t->props));
				t->nprops--;
				break;
			}
		}
	}
	if (vec_room((void **)&t->props, &t->capprops, t->nprops, sizeof(*t->props)) < 0 ||
	    !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->id = t->next_id++;
	p->step = k->step;
	p->phase = phase;
	p->cls = k->cls;
	snprintf(p->cls_name, sizeof(p->cls_name), "%s", step_label(t, k));
	p->knob = k->knob;
	p->from = k->from;
	p->to = k->to;
	p->forced = k->forced;
	p->t_us = t->t_us;
	p->state = CC_TN_APPROVED;
	t->props[t->nprops++] = p;
	return p;
}

static int add_change(struct cc_tn_proposal *p, const struct member *m, enum cc_tn_knob k, double to)
{
	struct cc_tn_change *c;
	size_t cap = p->nchanges; /* grown one by one: steps are small */
	struct cc_tn_change *nc = realloc(p->changes, (cap + 1) * sizeof(*nc));

	if (!nc)
		return -ENOMEM;
	p->changes = nc;
	c = &nc[p->nchanges++];
	memset(c, 0, sizeof(*c));
	memcpy(c->node, m->node, sizeof(c->node));
	memcpy(c->port, m->port, sizeof(c->port));
	c->host = m->host;
	c->ecn_from = c->ecn_to = m->ecn;
	c->dc_from = c->dc_to = m->dc;
	if (m->host)
		knob_set_dcqcn(&c->dc_to, k, to);
	else
		knob_set_ecn(&c->ecn_to, k, to);
	return 0;
}

/* The members of the step's class, in a stable order. */
static size_t class_members(struct cc_tn *t, const struct step *k, struct member ***ret)
{
	struct member **v = malloc((t->nm ? t->nm : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return 0;
	for (size_t i = 0; i < t->nm; i++)
		if (t->m[i]->cls == (int)k->cls && t->m[i]->snap_port >= 0)
			v[n++] = t->m[i];
	*ret = v;
	return n;
}

static double member_value(const struct member *m, enum cc_tn_knob k)
{
	return m->host ? cc_tn_knob_get_dcqcn(&m->dc, k) : cc_tn_knob_get_ecn(&m->ecn, k);
}

/* What a member's setting breaks (the bits of ecn_violations or dcqcn_violations) with value v
 * of knob k, or as it is (k < 0).  An undo is checked too: the policy may have narrowed since,
 * or a saved state be damaged. */
static unsigned violations(const struct cc_tn *t, const struct member *m, int k, double v, uint64_t xoff)
{
	if (m->host) {
		struct cc_tn_dcqcn d = m->dc;

		if (k >= 0)
			knob_set_dcqcn(&d, (enum cc_tn_knob)k, v);
		return dcqcn_violations(&t->pol, &d);
	} else {
		struct cc_tn_ecn e = m->ecn;

		if (k >= 0)
			knob_set_ecn(&e, (enum cc_tn_knob)k, v);
		return ecn_violations(&t->pol, &e, m->xoff ? m->xoff : xoff);
	}
}

/* What a member's setting breaks as it reports it: nonzero, it is outside the policy. */
static unsigned outside(const struct cc_tn *t, const struct member *m)
{
	return violations(t, m, -1, 0, t->xoff);
}

static const char *violation_why(const struct member *m, unsigned v)
{
	return first_why(v, m->host ? dcqcn_why : ecn_why);
}

/* The bits of ecn_violations or dcqcn_violations that knob k takes part in. */
static unsigned knob_bits(enum cc_tn_knob k)
{
	switch (k) {
	case CC_TN_KMIN:
		return 1u << 0 | 1u << 1;
	case CC_TN_KMAX:
		return 1u << 0 | 1u << 2 | 1u << 3;
	case CC_TN_PMAX:
		return 1u << 4;
	case CC_TN_CNP_GAP:
		return 1u << 0;
	case CC_TN_TIME_RESET:
		return 1u << 1;
	case CC_TN_AI_RATE:
		return 1u << 2 | 1u << 4;
	case CC_TN_HAI_RATE:
		return 1u << 3 | 1u << 4;
	case CC_TN_BYTE_RESET:
		return 1u << 5;
	default:
		return 1u << 6;
	}
}

/* Whether undoing a step on member m (knob k back to v) is refused: the old value breaks
 * something the member does not break already, or a rule of that knob it breaks now (Kmax
 * back up while already too close to XOFF).  One outside the policy on another knob only (an
 * operator's setting, a narrower policy) still gets the undo. */
static bool undo_refused(const struct cc_tn *t, const struct member *m, enum cc_tn_knob k, double v)
{
	unsigned after = violations(t, m, (int)k, v, t->xoff);

	return after & (~outside(t, m) | knob_bits(k));
}

/* Whether a step of knob k from `from` may move member m (of the step's class): at that
 * setting, seen, and in no other step. */
static bool member_at(const struct member *m, enum cc_tn_knob k, double from)
{
	return m->snap_port >= 0 && !m->touched && member_value(m, k) == from;
}

/* Whether a step of knob k from `from` to v moves member m: one at that setting (member_at),
 * inside the policy with v (one outside it on any knob, as reported, comes back inside with
 * the step or is left as it is, like one an operator set apart; GET /api/v1/cc lists it).  A
 * repair (repair_class) moves one outside on another knob too, as long as the step breaks
 * nothing anew and leaves nothing of its own knob broken. */
static unsigned move_breaks(const struct cc_tn *t, const struct member *m, enum cc_tn_knob k, double v,
			    uint64_t xoff, bool repair);

static bool member_moves(const struct cc_tn *t, const struct member *m, enum cc_tn_knob k, double from, double v,
			 uint64_t xoff, bool repair)
{
	return member_at(m, k, from) && !move_breaks(t, m, k, v, xoff, repair);
}

/* What member m would break with value v of knob k (violations' bits; a repair: only what it
 * breaks anew, or its own knob's). */
static unsigned move_breaks(const struct cc_tn *t, const struct member *m, enum cc_tn_knob k, double v,
			    uint64_t xoff, bool repair)
{
	unsigned after = violations(t, m, (int)k, v, xoff);

	return repair ? after & (~violations(t, m, -1, 0, xoff) | knob_bits(k)) : after;
}

/* Orders a host class's canary candidates by their queues before the step: the queue delay
 * of the ToR port facing each (bq: host_canary sets it as baseline() will; not measured:
 * first), then the key, so that the order is stable. */
static int by_level(const void *a, const void *b)
{
	const struct member *x = *(struct member *const *)a, *y = *(struct member *const *)b;
	double qx = x->bq, qy = y->bq;

	if (isnan(qx) != isnan(qy))
		return isnan(qx) ? -1 : 1;
	if (!isnan(qx) && qx != qy)
		return qx < qy ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Member m joins step k's changed group with the step's value (the group the step compares
 * with the rest). */
static int join_step(struct cc_tn_proposal *p, struct member *m, const struct step *k)
{
	int r = add_change(p, m, k->knob, k->to);

	m->touched = m->canary = true;
	m->owner = k->step;
	return r;
}

/* How many of n members a share is: rounded up, one at least, n at most. */
static size_t share_of(double share, size_t n)
{
	/* (less a rounding error: 0.07 x 100 is 7.000000000000001, not 8 members) */
	size_t want = (size_t)ceil(share * (double)n - 1e-9);

	return want < 1 ? 1 : want > n ? n : want;
}

/* A canary's size: `share` of the ne members that move, but one member of the class's n at
 * least left out — the rest it is judged against (a canary_share near 1 would leave none, and
 * no step could be judged: its harm never seen, its gain never shown).  A class of one member
 * has no rest whatever the share. */
static size_t canary_size(double share, size_t ne, size_t n)
{
	size_t want = share_of(share, ne);

	return n > 1 && want > n - 1 ? n - 1 : want;
}

/* A host class's canary: `share` of its members that move (want of ne, at least one), spread
 * evenly over them in the order of their queues (by_level) — the j-th at (j + (c + 1/2) /
 * turns) * ne / want, turns = ne / want rounded up, c counting the class's canaries modulo
 * turns — so that the canary and the rest start from like queues: at 0.5 one of each pair, the
 * other at the next canary.  Over `turns` canaries every member is in one at least (want *
 * turns >= ne), and none in all of them while want <= ne / 2 (above, some must be).  The count
 * is the class's, whatever the knob (not remapped when the classes change, not saved: a
 * restart begins anew).  Before, as the switch classes' ports are taken (every stride-th,
 * spread over the switches), the hosts were every stride-th in the order first seen: the same
 * hosts in every canary, and where jobs are placed by such a pattern (bench-cc: the all-reduce
 * ring on every fourth host, the incast's receiver h0) it compared the busy hosts with the
 * idle ones.  Measured: docs/performance.md, "The hosts' canary". */
static int host_canary(struct cc_tn *t, const struct step *k, struct cc_tn_proposal *p, struct member **v, size_t n,
		       double share)
{
	size_t ne = 0, want, turns, c;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (member_moves(t, v[i], k->knob, k->from, k->to, t->xoff, k->repair)) {
			v[i]->bq = hist_mean(v[i]->hq, v[i]->nh);
			v[ne++] = v[i];
		}
	if (!ne)
		return 0;
	qsort(v, ne, sizeof(*v), by_level);
	want = canary_size(share, ne, n);
	turns = (ne + want - 1) / want;
	if (turns < 2)
		turns = 2;
	c = t->canaries[k->cls]++ % turns;
	/* places strictly rising (ne / want >= 1), the last below ne */
	for (size_t j = 0; j < want && !r; j++)
		r = join_step(p, v[(2 * (j * turns + c) + 1) * ne / (2 * want * turns)], k);
	return r;
}

/* Members not yet at the step's value get it, up to the share (spread over the class for a
 * canary: host_canary for a host class); they join the changed group the step compares with
 * the rest. */
static int propose_changes(struct cc_tn *t, struct step *k, struct cc_tn_proposal *p, double share, bool canary)
{
	struct member **v = NULL;
	size_t n = class_members(t, k, &v), want, done = 0, stride;
	int r = 0;

	if (!n) {
		free(v);
		return 0;
	}
	if (canary && cc_tn_class_is_hosts(k->cls)) {
		r = host_canary(t, k, p, v, n, share);
		free(v);
		return r;
	}
	want = canary ? canary_size(share, n, n) : share_of(share, n);
	/* no more than the class: a share of 1e-300 passes the policy, and 1e300 is no size_t */
	stride = canary ? (size_t)fmin(1 / share + 0.5, (double)n) : 1;
	if (stride < 1)
		stride = 1;
	/* spread the canary over the class: every k-th member (switches and ToRs alike); the rest
	 * up to the share (a canary short of it, as members of other values are skipped) */
	for (size_t pass = 0; pass < 2 && done < want && !r; pass++)
		for (size_t i = 0; i < n && done < want && !r; i++) {
			struct member *m = v[i];

			/* the members at the class's setting move; one set apart (by an operator) keeps
			 * its value, so that undoing the step restores every member exactly */
			if (!member_moves(t, m, k->knob, k->from, k->to, t->xoff, k->repair))
				continue;
			if (canary && pass == 0 && stride > 1 && i % stride)
				continue;
			r = join_step(p, m, k);
			done++;
		}
	free(v);
	return r;
}

static struct member *member_find(const struct cc_tn *t, const char *node, const char *port, bool host)
{
	char key[132];

	member_key(key, node, port, host);
	return hmap_get(&t->idx, key);
}

static void step_end(struct cc_tn *t, struct step *k)
{
	for (size_t i = 0; i < t->nm; i++) {
		struct member *m = t->m[i];

		if (m->touched && m->owner == k->step)
			m->touched = m->canary = m->unsure = false;
	}
	k->label[0] = '\0';
	k->st = ST_IDLE;
	k->cur = NULL;
}

/* Whether step k's rollback leaves member m where it is: the old value would break what the
 * member does not break now — Kmax back above a port's XOFF lowered since (its switch would
 * refuse the whole change set), a range the policy narrowed since — as an operator's rollback
 * would (undo_refused).  A repair's old value is outside the policy by design: only what the
 * change path refuses keeps it there — Kmin not below Kmax, Kmax not below the port's XOFF
 * (validate_ecn), rpg_ai_rate above rpg_hai_rate anew. */
static bool rollback_refused(const struct cc_tn *t, const struct step *k, const struct member *m)
{
	if (!k->repair)
		return undo_refused(t, m, k->knob, k->from);
	if (m->host)
		return violations(t, m, (int)k->knob, k->from, t->xoff) & ~outside(t, m) & 1u << 4;
	{
		struct cc_tn_ecn e = m->ecn;
		uint64_t xoff = m->xoff ? m->xoff : t->xoff;

		knob_set_ecn(&e, k->knob, k->from);
		return e.kmin_bytes >= e.kmax_bytes || (xoff && e.kmax_bytes >= xoff);
	}
}

/* The changes applied so far by the step, undone; the move is held back for `hold` intervals
 * (nogain: unless ports pause, nogain_until). */
static int rollback_held(struct cc_tn *t, struct step *k, const char *why, uint64_t hold, bool nogain)
{
	struct cc_tn_proposal *p = proposal_new(t, k, CC_TN_ROLLBACK);
	double to = k->to;

	if (!p)
		return -ENOMEM;
	p->from = k->to;
	p->to = k->from;
	snprintf(p->reason, sizeof(p->reason), "step %llu (%s %s %.15g -> %.15g) rolled back: %s",
		 (unsigned long long)k->step, LBL(k->cls), knob_names[k->knob], k->from, to, why);
	snprintf(p->expect, sizeof(p->expect), "the class's %s back to %.15g on the members the step changed",
		 knob_names[k->knob], k->from);
	for (size_t i = 0; i < t->nm; i++) {
		struct member *m = t->m[i];

		/* a member whose change failed goes back too: if it was not applied this sets
		 * the value it has */
		if (!m->touched || m->owner != k->step || (member_value(m, k->knob) != to && !m->unsure) ||
		    rollback_refused(t, k, m))
			continue;
		if (add_change(p, m, k->knob, k->from) < 0)
			return -ENOMEM;
	}
	if (nogain)
		t->nogain_until[k->cls][k->knob][k->to > k->from] = t->interval + hold;
	else
		t->tabu_until[k->cls][k->knob][k->to > k->from] = t->interval + hold;
	t->rolled_back++;
	k->cur = p;
	k->st = ST_ROLLBACK;
	return 1;
}

static int propose_rollback(struct cc_tn *t, struct step *k, const char *why)
{
	return rollback_held(t, k, why, t->pol.tabu_intervals, false);
}

/* How long before a move is tried again at the soonest: as long as a canary is judged, and
 * the tuner's window of signals lasts (its next baseline is measured after the last try). */
static uint64_t retry_wait(const struct cc_tn *t)
{
	return t->pol.canary_intervals > WINDOW ? t->pol.canary_intervals : WINDOW;
}

/* How long a step rolled back by the fabric-wide test (unsafe) is held back.  That test cannot
 * tell a step's effect from the load's, and a storm growing on its own rolls back the harder
 * move made against it while ports pause: such a move is held only as long as a canary is
 * judged (and the tuner's window of signals lasts: the next try's baseline is all storm, whose
 * rise then no longer counts against it), never longer than tabu_intervals; a second such
 * rollback within tabu_intervals holds it for that long.  Measured on the shifting workload
 * (docs/performance.md): seeds 1-18 short p99 25.2 -> 22.9, pause 8.1 -> 7.6 ms; seeds 19-36
 * 39.6 -> 32.0, 7.8 -> 6.1 ms; long flows unchanged. */
static uint64_t unsafe_hold(struct cc_tn *t, const struct step *k)
{
	uint64_t retry = retry_wait(t);
	uint64_t *again = &t->retry_until[k->cls][k->knob][k->to > k->from];

	if (!k->urgent || retry >= t->pol.tabu_intervals || t->interval < *again)
		return t->pol.tabu_intervals;
	*again = t->interval + t->pol.tabu_intervals;
	return retry;
}

/* --- moves ------------------------------------------------------------------------------- */

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The value one bounded step from v, up or down, inside the knob's range (NAN: no step). */
static double step_value(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, bool up)
{
	const struct cc_tn_policy *p = &t->pol;
	struct cc_tn_ecn e;
	struct cc_tn_dcqcn d;
	double v, f = p->max_factor, nv, lo, hi;

	policy_range(p, k, &lo, &hi);
	if (k == CC_TN_PMAX || is_ecn_knob(k)) {
		cc_tn_class_ecn(t, c, &e);
		v = cc_tn_knob_get_ecn(&e, k);
	} else {
		cc_tn_class_dcqcn(t, c, &d);
		v = cc_tn_knob_get_dcqcn(&d, k);
	}
	switch (k) {
	case CC_TN_KMIN: /* Kmin stays at most half Kmax: marking keeps a slope */
		nv = round(clampd(up ? v * f : v / f, lo, (double)(e.kmax_bytes / 2)));
		break;
	case CC_TN_KMAX:
		nv = round(clampd(up ? v * f : v / f, (double)e.kmin_bytes * 2, hi));
		break;
	case CC_TN_PMAX:
		nv = round(clampd(up ? v + p->pmax_step : v - p->pmax_step, lo, hi) * 1000) / 1000;
		break;
	case CC_TN_CNP_GAP:
		/* 4 -> 2 -> 1 -> 0 and back: whole microseconds, as the NIC takes them */
		nv = clampd(up ? (v < 1 ? 1 : floor(v * f)) : (v <= 1 ? 0 : floor(v / f)), lo, hi);
		break;
	case CC_TN_ALPHA_G:
		nv = round(clampd(up ? v + 2 : v - 2, lo, hi));
		break;
	default: /* the rate-increase timer, the rates, the byte counter */
		nv = round(clampd(up ? v * f : v / f, lo, hi));
		break;
	}
	/* a bound on the far side (Kmin already above half Kmax, say) is no step in that direction */
	return (up ? nv <= v : nv >= v) ? NAN : nv;
}

/* The tuner's belief of a member's value (until it reports again). */
static void member_set(struct member *m, enum cc_tn_knob k, double v)
{
	if (m->host)
		knob_set_dcqcn(&m->dc, k, v);
	else
		knob_set_ecn(&m->ecn, k, v);
}

static double majority(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k);

/* Whether a step of the class's knob k from `from` to v may start: it moves one member at
 * least (member_moves) and breaks nothing on a member inside the policy now (NULL), or why not. */
static const char *step_check(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, double from, double v,
			      uint64_t xoff, bool repair)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nm; i++) {
		const struct member *m = t->m[i];
		unsigned bad;

		if (m->cls != (int)c || !member_at(m, k, from))
			continue;
		if (member_moves(t, m, k, from, v, xoff, repair))
			n++;
		else if (!repair && !outside(t, m) && (bad = violations(t, m, (int)k, v, xoff)))
			return violation_why(m, bad);
	}
	return n ? NULL : "no member at the class's setting is inside the policy with that value";
}

/* step_check from the class's setting. */
static const char *candidate_check(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, double v,
				   uint64_t xoff)
{
	return step_check(t, c, k, majority(t, c, k), v, xoff, false);
}

static bool class_present(const struct cc_tn *t, enum cc_tn_class c)
{
	for (size_t i = 0; i < t->nm; i++)
		if (t->m[i]->cls == (int)c && t->m[i]->snap_port >= 0)
			return true;
	return false;
}

static void watch_reset(struct step *k);

/* Starts a step: the canary's proposal (waiting for an operator in advise mode).  From the
 * class's setting, or a repair's from `from` (repair_class). */
static int start_step(struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob kn, double to, bool aggressive,
		      bool forced, bool urgent, const char *why, const char *expect, bool repair, double from)
{
	struct step *k = &t->steps_of[c];
	struct cc_tn_proposal *p;

	memset(k, 0, sizeof(*k));
	k->cls = c;
	k->knob = kn;
	k->to = to;
	k->repair = repair;
	if (repair) {
		k->from = from;
	} else if (cc_tn_class_is_hosts(c)) {
		struct cc_tn_dcqcn d;

		cc_tn_class_dcqcn(t, c, &d);
		k->from = cc_tn_knob_get_dcqcn(&d, kn);
	} else {
		struct cc_tn_ecn e;

		cc_tn_class_ecn(t, c, &e);
		k->from = cc_tn_knob_get_ecn(&e, kn);
	}
	k->forced = forced;
	k->aggressive = aggressive;
	k->urgent = urgent;
	k->step = t->next_step++;
	t->steps++;
	p = proposal_new(t, k, CC_TN_CANARY);
	if (!p)
		return -ENOMEM;
	snprintf(p->reason, sizeof(p->reason), "%s", why);
	snprintf(p->expect, sizeof(p->expect), "%s", expect);
	sig_mean(t, t->nhist, &k->base);
	p->evidence = sig_json(t, &k->base);
	for (size_t i = 0; i < t->nm; i++)
		if (t->m[i]->cls == (int)c && member_moves(t, t->m[i], kn, k->from, to, t->xoff, repair))
			t->m[i]->movable = k->step;
	if (propose_changes(t, k, p, t->pol.canary_share, true) < 0)
		return -ENOMEM;
	if (!p->nchanges) { /* every member has the value already */
		p->state = CC_TN_APPLIED;
		step_end(t, k);
		return 0;
	}
	p->state = t->pol.mode == CC_TN_AUTO || forced ? CC_TN_APPROVED : CC_TN_WAITING;
	k->cur = p;
	k->st = p->state == CC_TN_WAITING ? ST_WAIT : ST_CANARY;
	watch_reset(k);
	baseline(t, k);
	return 1;
}

/* How long a class is not softened after a harder step is kept on it. */
static uint64_t soft_hold(const struct cc_tn_policy *p)
{
	return 2 * (uint64_t)p->tabu_intervals;
}

/* Whether a move is held back; urgent: a harder one made while ports pause. */
static bool tabu(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, bool up, bool urgent)
{
	return t->interval < t->tabu_until[c][k][up] || (!urgent && t->interval < t->nogain_until[c][k][up]);
}

/* Whether moving knob k up (or down) makes congestion control harder: marks more, or cuts
 * senders sooner and lets them recover slower. */
static bool harder(enum cc_tn_knob k, bool up)
{
	switch (k) {
	case CC_TN_PMAX:
	case CC_TN_TIME_RESET:
	case CC_TN_BYTE_RESET:
		return up;
	default: /* Kmin, Kmax, the CNP spacing, the rates; dce_tcp_g: alpha's weight is (1024 - g) / 1024 */
		return !up;
	}
}

/* The values of knob k the policy takes for member m: policy_range, and Kmax loop_bytes
 * below its XOFF, Kmin below its Kmax (at half of it, as the rules keep it, when it is not),
 * rpg_ai_rate not above its rpg_hai_rate. */
static void knob_range(const struct cc_tn *t, const struct member *m, enum cc_tn_knob k, double *lo, double *hi)
{
	uint64_t xoff = m->xoff ? m->xoff : t->xoff, loop = t->pol.loop_bytes;

	policy_range(&t->pol, k, lo, hi);
	if (k == CC_TN_KMIN && m->ecn.kmin_bytes >= m->ecn.kmax_bytes)
		*hi = floor((double)m->ecn.kmax_bytes / 2);
	else if (k == CC_TN_KMAX && xoff)
		*hi = fmin(*hi, xoff > loop ? (double)(xoff - loop) : 0);
	else if (k == CC_TN_AI_RATE)
		*hi = fmin(*hi, m->dc.rpg_hai_rate_mbps);
}

/* How many members of the class are at value v of knob k (seen, in no step); NAN: at any;
 * repaired: only those a repair cut short by a restart left there (member.repaired). */
static size_t count_at(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, double v, bool repaired)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nm; i++) {
		const struct member *m = t->m[i];

		n += m->cls == (int)c && member_at(m, k, isnan(v) ? member_value(m, k) : v) &&
		     (!repaired || (m->repaired & 1u << k));
	}
	return n;
}

/* Member m of a repair of knob k from `from`: at that value, outside the policy on k's rules. */
static bool repair_member(const struct cc_tn *t, const struct member *m, enum cc_tn_class c, enum cc_tn_knob k,
			  double from)
{
	return m->cls == (int)c && member_at(m, k, from) && (outside(t, m) & knob_bits(k));
}

/* The nearest value inside the policy of knob k for member m. */
static double nearest_inside(const struct cc_tn *t, const struct member *m, enum cc_tn_knob k)
{
	double lo, hi, v = member_value(m, k), to;

	knob_range(t, m, k, &lo, &hi);
	if (lo > hi)
		return NAN;
	to = clampd(v, lo, hi);
	return k == CC_TN_KMIN || k == CC_TN_KMAX ? (to > v ? ceil(to) : floor(to)) : to;
}

/* A repair's target: of its members' own nearest_inside values (a port's own XOFF, a host's
 * own rpg_hai_rate make them differ; the first TARGETS distinct ones), the nearest to `from`
 * that most of the class can take — the members outside whose own range holds it, with those
 * a cut-short repair left at it, more than half of the n_class members — and *ret_n, *ret_ex:
 * how many members outside it is for, the first of them (a partner may have to move before
 * they can).  Members whose own limit is narrower are left outside (one port's low XOFF does
 * not drag its class's Kmax down).  NAN: no value is most of the class's. */
#define TARGETS 16
static double repair_target(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, double from, size_t n_class,
			    size_t *ret_n, const struct member **ret_ex)
{
	double cand[TARGETS], best = NAN, lo, hi;
	size_t ncand = 0;

	*ret_n = 0;
	*ret_ex = NULL;
	for (size_t i = 0; i < t->nm && ncand < TARGETS; i++) {
		double v;
		size_t x;

		if (!repair_member(t, t->m[i], c, k, from) || isnan(v = nearest_inside(t, t->m[i], k)))
			continue;
		for (x = 0; x < ncand && cand[x] != v; x++)
			;
		if (x == ncand)
			cand[ncand++] = v;
	}
	for (size_t x = 0; x < ncand; x++) {
		const struct member *ex = NULL;
		size_t n = 0;

		for (size_t i = 0; i < t->nm; i++) {
			const struct member *m = t->m[i];

			if (!repair_member(t, m, c, k, from))
				continue;
			knob_range(t, m, k, &lo, &hi);
			if (cand[x] >= lo && cand[x] <= hi) {
				ex = ex ? ex : m;
				n++;
			}
		}
		if (2 * (n + count_at(t, c, k, cand[x], true)) > n_class &&
		    (isnan(best) || fabs(cand[x] - from) < fabs(best - from))) {
			best = cand[x];
			*ret_n = n;
			*ret_ex = ex;
		}
	}
	return best;
}
#undef TARGETS

/* A repair of knob k to `to` may need its partner moved first, as the rules keep them: Kmin
 * below a lower Kmax (half of it, not below the floor), Kmax above a higher Kmin (twice it, or
 * as high as its range goes), rpg_ai_rate not above a lower rpg_hai_rate, rpg_hai_rate not
 * below a higher rpg_ai_rate.  The partner's value is the one most of the repair's members
 * have; its target must make room and lie in the partner's range.  False: no such step. */
static bool partner_first(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, double from, double to,
			  const struct member *ex, enum cc_tn_knob *pk, double *pfrom, double *pto)
{
	const struct cc_tn_policy *p = &t->pol;
	double cand = NAN, lo, hi;
	size_t votes = 0;
	bool down;

	switch (k) {
	case CC_TN_KMAX:
		*pk = CC_TN_KMIN;
		*pto = fmax(floor(to / 2), (double)p->kmin_floor_bytes);
		down = true;
		break;
	case CC_TN_KMIN:
		*pk = CC_TN_KMAX;
		knob_range(t, ex, CC_TN_KMAX, &lo, &hi);
		*pto = floor(fmin(2 * to, hi));
		down = false;
		break;
	case CC_TN_HAI_RATE:
		*pk = CC_TN_AI_RATE;
		*pto = to;
		down = true;
		break;
	case CC_TN_AI_RATE:
		*pk = CC_TN_HAI_RATE;
		*pto = to;
		down = false;
		break;
	default:
		return false;
	}
	for (size_t i = 0; i < t->nm; i++) {
		const struct member *m = t->m[i];

		if (!repair_member(t, m, c, k, from))
			continue;
		if (!votes)
			cand = member_value(m, *pk);
		votes += member_value(m, *pk) == cand ? 1 : (size_t)-1;
	}
	*pfrom = cand;
	knob_range(t, ex, *pk, &lo, &hi);
	if (isnan(*pfrom) || *pto < lo || *pto > hi)
		return false;
	/* room made: Kmin below the new Kmax (AI not above the new HAI), Kmax above the new Kmin
	 * (HAI not below the new AI), moving toward it */
	if (down)
		return *pfrom >= to && *pto < *pfrom && (*pk == CC_TN_AI_RATE ? *pto <= to : *pto < to);
	return *pfrom <= to && *pto > *pfrom && (*pk == CC_TN_HAI_RATE ? *pto >= to : *pto > to);
}

/* The repair of knob k of the members at `from` outside the policy (repair_class), given the
 * class's n members and the nrep a cut-short repair left: its step, or its partner's first.
 * 1: a step started; 0: none possible. */
static int repair_value(struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k, double from, size_t n, size_t nrep,
			uint64_t xoff)
{
	const struct member *ex;
	enum cc_tn_knob pk;
	char why[320], expect[200];
	double to, pfrom, pto;
	size_t out = 0, moving = 0;

	/* no majority within reach: the outside members at this value and every one a cut-short
	 * repair left are not most of the class */
	for (size_t i = 0; i < t->nm; i++)
		out += repair_member(t, t->m[i], c, k, from);
	if (2 * (out + nrep) <= n)
		return 0;
	to = repair_target(t, c, k, from, n, &out, &ex);
	if (!ex || to == from || tabu(t, c, k, to > from, false))
		return 0;
	snprintf(why, sizeof(why), "%s: %zu of its members at %s %.15g are outside the policy (%s)", LBL(c), out,
		 knob_names[k], from, violation_why(ex, outside(t, ex) & knob_bits(k)));
	for (size_t i = 0; i < t->nm; i++)
		moving += repair_member(t, t->m[i], c, k, from) && member_moves(t, t->m[i], k, from, to, xoff, true);
	if (moving && !step_check(t, c, k, from, to, xoff, true)) {
		snprintf(expect, sizeof(expect), "%s back inside the policy: %s %.15g, the nearest value it takes",
			 LBL(c), knob_names[k], to);
		return start_step(t, c, k, to, harder(k, to > from), false, false, why, expect, true, from);
	}
	/* none of them can move yet: its partner first, if that makes room */
	if (!partner_first(t, c, k, from, to, ex, &pk, &pfrom, &pto) || tabu(t, c, pk, pto > pfrom, false) ||
	    step_check(t, c, pk, pfrom, pto, xoff, true))
		return 0;
	snprintf(expect, sizeof(expect), "room for %s %s %.15g: %s %.15g first", LBL(c), knob_names[k], to,
		 knob_names[pk], pto);
	return start_step(t, c, pk, pto, harder(pk, pto > pfrom), false, false, why, expect, true, pfrom);
}

/* A class whose setting is outside the policy — most of its members at one value of a knob
 * that the policy refuses, as when the policy was narrowed or XOFF lowered under Kmax — gets a
 * step of that knob to the nearest value inside, through canary and rollout like any other,
 * kept unless it hurts (it has no gain to show: it is what the operator's policy asks).  The
 * value: repair_target (most of the class, with those a repair cut short by a restart left
 * there; members whose own limit is narrower are not moved).  Members set apart at other
 * values, fewer, are listed outside the policy and left as they are.  A knob whose partner is
 * in the way (partner_first) has the partner moved first.  The first REPAIR_VALUES distinct
 * values of a knob outside are weighed (only one can be most of the class but for those a
 * restart left).  1: a step started; 0: none needed or possible. */
#define REPAIR_VALUES 64
static int repair_class(struct cc_tn *t, enum cc_tn_class c, uint64_t xoff)
{
	static const enum cc_tn_knob ecn_order[] = { CC_TN_KMAX, CC_TN_KMIN, CC_TN_PMAX };
	bool hosts = cc_tn_class_is_hosts(c);
	size_t nk = hosts ? CC_TN_NKNOBS - CC_TN_CNP_GAP : sizeof(ecn_order) / sizeof(ecn_order[0]);

	for (size_t j = 0; j < nk; j++) {
		enum cc_tn_knob k = hosts ? (enum cc_tn_knob)(CC_TN_CNP_GAP + j) : ecn_order[j];
		double tried[REPAIR_VALUES];
		size_t ntried = 0, n = count_at(t, c, k, NAN, false), nrep = 0;

		for (size_t i = 0; i < t->nm; i++)
			nrep += t->m[i]->cls == (int)c && (t->m[i]->repaired & 1u << k);
		for (size_t i = 0; i < t->nm && ntried < REPAIR_VALUES; i++) {
			double from = member_value(t->m[i], k);
			size_t x;
			int r;

			if (!repair_member(t, t->m[i], c, k, from))
				continue;
			for (x = 0; x < ntried && tried[x] != from; x++)
				;
			if (x < ntried)
				continue;
			tried[ntried++] = from;
			if ((r = repair_value(t, c, k, from, n, nrep, xoff)) != 0)
				return r;
		}
	}
	return 0;
}
#undef REPAIR_VALUES

/* Whether knob k is one relax_move undoes: those the rule against pauses moves on a switch class. */
static bool relax_knob(enum cc_tn_knob k)
{
	return k == CC_TN_KMAX || k == CC_TN_PMAX;
}

/* A step of switch class k->cls completed: a harder Kmax or Pmax move made against pauses
 * keeps the value before the first of them (relax.to); a step back to it, or any other kept
 * move of the knob (a rule's for another reason, a repair, a forced one), ends it. */
static void relax_done(struct cc_tn *t, const struct step *k)
{
	struct relax *r;

	if (cc_tn_class_is_hosts(k->cls) || !relax_knob(k->knob))
		return;
	r = &t->relax[k->cls][k->knob];
	if (k->urgent && k->aggressive && t->pol.relax_intervals) {
		if (isnan(r->to))
			r->to = k->from;
	} else if (!k->relax || k->to == r->to) {
		r->to = NAN;
	}
	r->at = k->to;
}

/* One bounded step of switch class c back toward where Kmax or Pmax was before the harder
 * moves made against pauses, once no port paused above pause_target for relax_intervals (and
 * the window of signals is quiet): *kn to *to, Pmax first, then Kmax.  Kept for good, such
 * moves piled up with each burst of pauses and slowed the long flows of every load after (on
 * the shifting workload the all-reduce phases' Kmax and Pmax moves stayed through the
 * WebSearch phases).  Not the hosts' CNP spacing: undone the same way, pauses came back
 * (docs/performance.md); it stays until the rules soften it.  A value set since by someone
 * else (an operator, by hand) is theirs: forgotten. */
static bool relax_move(struct cc_tn *t, enum cc_tn_class c, bool paused, uint64_t xoff, enum cc_tn_knob *kn,
		       double *to)
{
	static const enum cc_tn_knob order[] = { CC_TN_PMAX, CC_TN_KMAX };
	unsigned q = t->pol.relax_intervals;

	if (cc_tn_class_is_hosts(c))
		return false;
	for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++) {
		struct relax *r = &t->relax[c][order[i]];
		double now, v;
		bool up;

		if (isnan(r->to))
			continue;
		now = majority(t, c, order[i]);
		up = r->to > now;
		if (now != r->at || !q)
			r->to = NAN;
		if (isnan(r->to) || paused || t->interval < t->paused_at + q || harder(order[i], up) ||
		    isnan(v = step_value(t, c, order[i], up)))
			continue;
		/* one held back (rolled back lately: the softening brought pauses or harm) holds
		 * the class's others too; one the policy refuses now is forgotten */
		if (tabu(t, c, order[i], up, false))
			return false;
		v = up ? fmin(v, r->to) : fmax(v, r->to);
		if (candidate_check(t, c, order[i], v, xoff)) {
			r->to = NAN;
			continue;
		}
		*kn = order[i];
		*to = v;
		return true;
	}
	return false;
}

/* One move of class c, if the signals (g, the mean of the last intervals) call for one: the
 * rules, in order of urgency.  worst: the switch class with the deepest queues; hworst: the
 * host class whose hosts' ToR ports have the deepest queues, -1 when the hosts present are all
 * of one class (which then goes by the fabric's signals). */
static int choose_class(struct cc_tn *t, enum cc_tn_class c, const struct sig *g, int worst, int hworst,
			uint64_t xoff)
{
	const struct cc_tn_policy *p = &t->pol;
	char why[320], expect[200];
	bool paused = g->pause_share > p->pause_target;
	bool may_soften = t->interval >= t->soft_until[c]; /* no harder step kept on c lately */
	enum cc_tn_knob rk;
	double rto;
	int r;

#define TRY(kn, up, aggr, ...)                                                                             \
	do {                                                                                               \
		double nv_;                                                                                \
		if (!((aggr) && t->fault[0]) && !tabu(t, c, kn, up, (aggr) && paused) &&                  \
		    !isnan(nv_ = step_value(t, c, kn, up)) &&                                              \
		    !candidate_check(t, c, kn, nv_, xoff)) {                                               \
			snprintf(expect, sizeof(expect), __VA_ARGS__);                                     \
			return start_step(t, c, kn, nv_, aggr, false, (aggr) && paused, why, expect, false, \
					  0);                                                              \
		}                                                                                          \
	} while (0)

	if (!class_present(t, c))
		return 0;
	if ((r = repair_class(t, c, xoff)) != 0)
		return r;
	/* before the rules: the pauses harder moves were made against are gone, a step back (the
	 * soft hold does not apply: it waits out the load that called for a move, this its pauses) */
	if (relax_move(t, c, paused, xoff, &rk, &rto)) {
		snprintf(why, sizeof(why),
			 "no port paused above the target for %llu intervals: %s %s back toward %.15g, where it was "
			 "before the moves against pauses",
			 (unsigned long long)(t->interval - t->paused_at), class_names[c], knob_names[rk],
			 t->relax[c][rk].to);
		snprintf(expect, sizeof(expect), "softer marking on %s again: more throughput for long flows",
			 class_names[c]);
		if ((r = start_step(t, c, rk, rto, false, false, false, why, expect, false, 0)) > 0)
			t->steps_of[c].relax = true;
		return r;
	}
	if (cc_tn_class_is_hosts(c)) {
		int h = c - CC_TN_HOSTS;
		/* with several host classes, each goes by its own hosts: the queues of the ToR ports
		 * facing them, their CNPs and what they send; pauses on their edge links, or the
		 * fabric's pauses when its receivers' queues are the deepest */
		double qd = hworst < 0 ? g->qd_us[CC_TN_TOR_DOWN] : g->h_qd_us[h];
		double cnp = hworst < 0 ? g->cnp : g->h_cnp[h], hu = hworst < 0 ? g->host_util : g->h_util[h];

		if (hworst >= 0)
			paused = g->h_pause[h] > p->pause_target || (paused && h == hworst);
		/* 1. PFC pauses: congestion control reacts too late */
		if (paused && hworst < 0) {
			snprintf(why, sizeof(why),
				 "ports were paused %.3f %% of the time (target below %.3f %%); tor_down queue delay p90 %.1f us",
				 g->pause_share * 100, p->pause_target * 100, g->qd_us[CC_TN_TOR_DOWN]);
			TRY(CC_TN_CNP_GAP, false, true,
			    "more CNPs per congested receiver: senders slow down sooner, queues stay below XOFF, fewer pauses");
			return 0;
		}
		if (paused) {
			snprintf(why, sizeof(why),
				 "ports were paused %.3f %% of the time (target below %.3f %%); %s's edge links %.3f %%, "
				 "the queue delay p90 of the ToR ports facing its hosts %.1f us",
				 g->pause_share * 100, p->pause_target * 100, LBL(c), g->h_pause[h] * 100, qd);
			TRY(CC_TN_CNP_GAP, false, true,
			    "more CNPs per congested receiver of %s: its senders slow down sooner, fewer pauses", LBL(c));
			return 0;
		}
		/* 4. quiet fabric: let senders recover faster (long flows) */
		/* only where senders are cut back often while busy: elsewhere nothing is to gain */
		if (qd <= p->qdelay_target_us / 2 && cnp >= 2 && hu >= 0.3 && may_soften) {
			snprintf(why, sizeof(why),
				 "%s: no pauses and queue delay p90 %.1f us, yet %.1f CNPs per host per interval throttle "
				 "senders",
				 LBL(c), qd, cnp);
			TRY(CC_TN_AI_RATE, true, false, "throttled senders regain rate faster: more throughput");
			TRY(CC_TN_TIME_RESET, false, false, "rate increases come sooner after a cut: more throughput");
			TRY(CC_TN_HAI_RATE, true, false, "faster hyper increase: more throughput");
		}
		return 0;
	}
	/* 1. PFC pauses: the class with the deepest queues marks harder */
	if (paused && (int)c == worst) {
		snprintf(why, sizeof(why), "ports were paused %.3f %% of the time (target below %.3f %%); %s has the "
					   "deepest queues (p90 %.1f us)",
			 g->pause_share * 100, p->pause_target * 100, class_names[c], g->qd_us[c]);
		TRY(CC_TN_KMAX, false, true, "full marking sooner on %s: queues stay below XOFF, fewer pauses",
		    class_names[c]);
		TRY(CC_TN_PMAX, true, true, "more marking between Kmin and Kmax on %s: fewer pauses", class_names[c]);
	}
	/* 2. queues too deep for short flows */
	if (g->qd_us[c] > p->qdelay_target_us) {
		snprintf(why, sizeof(why), "%s queue delay p90 %.1f us is above the target %.1f us (%.1f %% marked)",
			 class_names[c], g->qd_us[c], p->qdelay_target_us, g->mark[c] * 100);
		TRY(CC_TN_KMIN, false, true, "marking starts at shallower queues on %s: shorter queues", class_names[c]);
		TRY(CC_TN_KMAX, false, true, "full marking sooner on %s: shorter queues", class_names[c]);
	}
	/* 3. marking where queues are short: throughput given away */
	if (!paused && g->qd_us[c] <= p->qdelay_target_us / 4 && g->mark[c] >= 0.05 && may_soften) {
		snprintf(why, sizeof(why), "%s marks %.1f %% of packets with queue delay p90 only %.1f us",
			 class_names[c], g->mark[c] * 100, g->qd_us[c]);
		TRY(CC_TN_KMIN, true, false, "less marking at shallow queues on %s: more throughput", class_names[c]);
	}
#undef TRY
	return 0;
}

/* A move for every class without a step in progress. */
static int choose(struct cc_tn *t, uint64_t xoff, bool hold_switch)
{
	struct sig g;
	int worst = 0, hworst = -1, n = 0, nhc = 0;

	sig_mean(t, t->nhist, &g);
	for (int c = 1; c < CC_TN_NSWITCH_CLASSES; c++)
		if (g.qd_us[c] > g.qd_us[worst])
			worst = c;
	for (int c = CC_TN_HOSTS; c < CC_TN_NCLASSES; c++)
		if (class_present(t, (enum cc_tn_class)c)) {
			int h = c - CC_TN_HOSTS;

			if (hworst < 0 || g.h_qd_us[h] > g.h_qd_us[hworst])
				hworst = h;
			nhc++;
		}
	if (nhc < 2)
		hworst = -1;
	for (int c = 0; c < CC_TN_NCLASSES; c++) {
		int r;

		if (t->steps_of[c].st != ST_IDLE || (hold_switch && !cc_tn_class_is_hosts((enum cc_tn_class)c)))
			continue;
		/* host classes: none while new ones wait to come in force, nor before a window of
		 * signals measured with those in force */
		if (c >= CC_TN_HOSTS && (classes_pending(t) || t->interval < t->classes_since + WINDOW))
			continue;
		if ((r = choose_class(t, (enum cc_tn_class)c, &g, worst, hworst, xoff)) < 0)
			return r;
		n += r;
	}
	return n;
}

/* Safety, fabric-wide, the intervals watched against before the step: NULL, or what got worse. */
static const char *unsafe(const struct cc_tn *t, const struct step *k, char *buf, size_t len)
{
	const struct cc_tn_policy *p = &t->pol;
	const struct sig *b = &k->base, *d = &k->during;
	/* fabric-wide, before against during: the workload moves these as much as any step, so
	 * only a blow-up counts here; the changed members against the rest in the same intervals
	 * (canary_worse) is the fine test */
	double tol = 8 * p->tolerance;
	/* the frames links lost in the intervals watched explain up to RETX_PER_LOST_FRAME
	 * retransmissions each (a lossy link rolled back a step for its retransmissions); those
	 * in which a link went down or up are left out (watch_add) */
	double lost = d->retx_hosts > 0 ? RETX_PER_LOST_FRAME * d->crc / d->retx_hosts : 0;

	if (d->pause_share > b->pause_share * (1 + tol) + 0.01) {
		snprintf(buf, len, "pause time rose from %.3f %% to %.3f %% of port time", b->pause_share * 100,
			 d->pause_share * 100);
		return buf;
	}
	if (d->drops > b->drops * (1 + tol) + 10) {
		snprintf(buf, len, "drops rose from %.2f to %.2f per port per interval", b->drops, d->drops);
		return buf;
	}
	if (k->nquiet && d->retx > b->retx * (1 + tol) + 10 + lost) {
		int n = snprintf(buf, len, "retransmissions rose from %.2f to %.2f per host per interval", b->retx,
				 d->retx);

		if (lost > 0 && n >= 0 && (size_t)n < len)
			snprintf(buf + n, len - (size_t)n, " (beyond the %.0f the frames lost on links explain)", lost);
		return buf;
	}
	if (b->probe_p99_us >= 0 && d->probe_p99_us >= 0 && d->probe_p99_us > b->probe_p99_us * (1 + tol)) {
		snprintf(buf, len, "the probes' p99 rose from %.1f us to %.1f us", b->probe_p99_us, d->probe_p99_us);
		return buf;
	}
	return NULL;
}

/* The changed members' (c) pause, against the rest's (r), worse beyond the verdict's margin at
 * Welch's t above tmin, and above the pause target now: the shares stop at 0, so a canary
 * that does not pause read as worse when a hot spot left the rest's ports ("the canary's
 * paused share went from 0.000 % to 0.000 %, the rest's from 23.1 % to 3.4 %": rolled back). */
static bool pause_worse(const struct cc_tn *t, const struct grp *c, const struct grp *r, double tmin)
{
	double margin = t->pol.tolerance * fmax(c->lvl_pause, r->lvl_pause) + t->pol.pause_target;

	return c->lvl_pause + stat_mean(&c->pause) > t->pol.pause_target &&
	       stat_worse_t(&c->pause, &r->pause, margin, tmin);
}

/* The same for the mean queue delay: not worse at a quarter of the target or below. */
static bool qdelay_worse(const struct cc_tn *t, const struct grp *c, const struct grp *r, double tmin)
{
	double margin = t->pol.tolerance * fmax(c->lvl_qd, r->lvl_qd) + t->pol.qdelay_target_us / 4;

	return c->lvl_qd + stat_mean(&c->qd) > t->pol.qdelay_target_us / 4 &&
	       stat_worse_t(&c->qd, &r->qd, margin, tmin);
}

/* The canary against the rest of its class over the same intervals: NULL when the move did
 * what it aimed at without harm, or why not (*nogain: only that it showed no clear gain). */
static const char *canary_worse(const struct cc_tn *t, const struct step *k, char *buf, size_t len, bool *nogain)
{
	const struct cc_tn_policy *p = &t->pol;
	double tol = p->tolerance;
	const struct grp *c = &k->g_canary, *r = &k->g_rest;
	/* the groups' levels now: before, plus the mean change */
	double qc = c->lvl_qd + stat_mean(&c->qd), qr = r->lvl_qd + stat_mean(&r->qd);
	double uc = c->lvl_util + stat_mean(&c->util), ur = r->lvl_util + stat_mean(&r->util);
	double pc = c->lvl_pause + stat_mean(&c->pause), pr = r->lvl_pause + stat_mean(&r->pause);
	double lq = fmax(c->lvl_qd, r->lvl_qd), lu = fmax(c->lvl_util, r->lvl_util);
	/* less sent: the change of the canary's share of capacity, negated */
	struct stat nc = { c->util.n, -c->util.s, c->util.ss }, nr = { r->util.n, -r->util.s, r->util.ss };

	if (pause_worse(t, c, r, 2)) {
		snprintf(buf, len, "the canary's paused share went from %.3f %% to %.3f %%, the rest of %s's from %.3f %% "
				   "to %.3f %%", c->lvl_pause * 100, pc * 100, LBL(k->cls), r->lvl_pause * 100, pr * 100);
		return buf;
	}
	if ((k->aggressive || k->forced) && qdelay_worse(t, c, r, 2)) {
		snprintf(buf, len, "the canary's mean queue delay went from %.1f to %.1f us, the rest's from %.1f to %.1f us",
			 c->lvl_qd, qc, r->lvl_qd, qr);
		return buf;
	}
	if (!k->aggressive || k->forced) {
		/* less sent where the queues are no shorter: throughput lost for nothing */
		if (stat_worse(&nc, &nr, tol / 4 * lu) && stat_mean(&c->qd) >= stat_mean(&r->qd)) {
			snprintf(buf, len, "the canary's share of capacity sent moved %+.1f points against the "
					   "rest's (from %.1f %% to %.1f %%; the rest's from %.1f %% to %.1f %%), its "
					   "queues no shorter",
				 (uc - c->lvl_util - (ur - r->lvl_util)) * 100, c->lvl_util * 100, uc * 100,
				 r->lvl_util * 100, ur * 100);
			return buf;
		}
		if (qc > p->qdelay_target_us && stat_worse(&c->qd, &r->qd, tol * lq)) {
			snprintf(buf, len, "the canary's mean queue delay %.1f us passed the target %.1f us", qc,
				 p->qdelay_target_us);
			return buf;
		}
	}
	/* a move stays only for a gain the canary shows clearly (a step that changes nothing
	 * measurable is a drift, and drifts add up): shorter queues or less pause for a move that
	 * marks harder, more sent for one that marks less.  A move against pauses is the
	 * exception: harder congestion control where PFC fires is kept unless it hurts (above) or
	 * costs throughput, since pauses spread and their gain shows fabric-wide, not on a canary */
	if (k->st == ST_CANARY && !k->forced && k->aggressive && stat_worse(&nc, &nr, tol / 4 * lu)) {
		snprintf(buf, len, "marking harder cost throughput: the canary's share of capacity sent moved "
				   "%+.1f points against the rest's (from %.1f %% to %.1f %%; the rest's from %.1f "
				   "%% to %.1f %%)",
			 (uc - c->lvl_util - (ur - r->lvl_util)) * 100, c->lvl_util * 100, uc * 100, r->lvl_util * 100,
			 ur * 100);
		return buf;
	}
	if (k->st == ST_CANARY && !k->forced && !k->repair && !k->relax &&
	    !(k->urgent && k->aggressive && !t->was_held)) {
		*nogain = k->aggressive; /* a softening move is never made against pauses */
		if (k->aggressive) {
			if (!stat_worse(&r->qd, &c->qd, 0) && !stat_worse(&r->pause, &c->pause, 0)) {
				snprintf(buf, len, "no clear gain: the canary's mean queue delay %.1f us (%.1f before) "
						   "against the rest's %.1f us (%.1f before): neither its queues nor "
						   "its pauses shorter beyond the noise (Welch's t)",
					 qc, c->lvl_qd, qr, r->lvl_qd);
				return buf;
			}
		} else if (!stat_worse(&c->util, &r->util, 0)) {
			snprintf(buf, len, "no clear gain: the canary sent %.1f %% of its capacity (%.1f %% before), the "
					   "rest %.1f %% (%.1f %% before): not more beyond the noise (Welch's t)",
				 uc * 100, c->lvl_util * 100, ur * 100, r->lvl_util * 100);
			return buf;
		}
		*nogain = false;
	}
	return NULL;
}

static int record_done(struct cc_tn *t, const struct step *k)
{
	struct done_step *ds;
	size_t n = 0;

	if (vec_room((void **)&t->done, &t->capdone, t->ndone, sizeof(*t->done)) < 0)
		return -ENOMEM;
	ds = &t->done[t->ndone];
	*ds = (struct done_step){ .step = k->step, .cls = k->cls, .knob = k->knob, .from = k->from, .to = k->to };
	for (size_t i = 0; i < t->nm; i++)
		n += t->m[i]->touched && t->m[i]->owner == k->step;
	ds->keys = calloc(n ? n : 1, sizeof(*ds->keys));
	if (!ds->keys)
		return -ENOMEM;
	for (size_t i = 0; i < t->nm; i++)
		if (t->m[i]->touched && t->m[i]->owner == k->step &&
		    (ds->keys[ds->nkeys++] = strdup(t->m[i]->key)) == NULL)
			return -ENOMEM;
	t->ndone++;
	for (size_t i = 0; k->repair && i < t->nm; i++) /* the repair a restart cut short is done */
		if (t->m[i]->cls == (int)k->cls)
			t->m[i]->repaired &= (uint16_t) ~(1u << k->knob);
	return 0;
}

static void watch_reset(struct step *k)
{
	k->watched = 0;
	k->nduring = 0;
	k->nquiet = 0;
	memset(&k->during, 0, sizeof(k->during));
	k->during.probe_p99_us = -1;
}

static void watch_add(struct step *k, const struct sig *g)
{
	struct sig *d = &k->during;
	/* an interval in which a link went down or up, and the next (its flows time out), and
	 * one with more ports down than before the step, are the links': left out of the
	 * retransmissions, and of the drops but those at full buffers (before, one carrier change
	 * anywhere suspended both tests for the whole step) */
	bool flap = g->link_event || g->down_ports > k->base.down_ports;
	double w;

	k->watched++;
	w = 1.0 / k->watched;
	d->pause_share += (g->pause_share - d->pause_share) * w;
	d->drops += ((flap ? g->buf_drops : g->drops) - d->drops) * w;
	if (!flap) {
		double q = 1.0 / ++k->nquiet;

		d->retx += (g->retx - d->retx) * q;
		d->retx_hosts += (g->retx_hosts - d->retx_hosts) * q;
		d->crc += (g->crc - d->crc) * q; /* what explains them */
	}
	if (g->probe_p99_us >= 0) {
		k->nduring++;
		if (d->probe_p99_us < 0)
			d->probe_p99_us = 0;
		d->probe_p99_us += (g->probe_p99_us - d->probe_p99_us) / k->nduring;
	}
}

/* The rest of the class after a good canary or rollout, max_share at a time; the step is done
 * when every member has the value. */
static int next_rollout(struct cc_tn *t, struct step *k, const char *verdict)
{
	struct cc_tn_proposal *p = proposal_new(t, k, CC_TN_ROLLOUT);

	if (!p)
		return -ENOMEM;
	if (propose_changes(t, k, p, t->pol.max_share, false) < 0)
		return -ENOMEM;
	if (!p->nchanges) {
		size_t moved = 0, left = 0;

		/* the rest could not follow: as many of the class that could take the step when it
		 * began left at the old value as moved (a policy changed since put them outside: a
		 * Kmin floor raised above them) — not a setting anyone chose, nor the class's:
		 * undone.  Those set apart before it (outside the policy then, an operator's) do
		 * not count: the step completes without them. */
		for (size_t i = 0; i < t->nm; i++) {
			const struct member *m = t->m[i];

			if (m->cls != (int)k->cls || m->snap_port < 0)
				continue;
			if (m->touched && m->owner == k->step && member_value(m, k->knob) == k->to)
				moved++;
			else if (m->movable == k->step && member_at(m, k->knob, k->from))
				left++;
		}
		p->state = CC_TN_APPLIED; /* (nothing to send) */
		if (left && left >= moved) {
			char why[200];

			snprintf(why, sizeof(why), "%zu members of the class at %.15g could not follow (outside the policy in "
				 "force), %zu moved", left, k->from, moved);
			snprintf(p->reason, sizeof(p->reason), "step %llu not rolled out: %s", (unsigned long long)k->step,
				 why);
			return propose_rollback(t, k, why);
		}
		snprintf(p->reason, sizeof(p->reason),
			 "step %llu complete: %s %s is %.15g on the class (its members inside the policy)",
			 (unsigned long long)k->step, LBL(k->cls), knob_names[k->knob], k->to);
		if (record_done(t, k) < 0)
			return -ENOMEM;
		/* going straight back would undo a good step: not before tabu_intervals; nor any
		 * softening of the class after a harder step, for twice that (measured on the
		 * shifting workload, docs/performance.md: 67 of 90 phase changes settled within 20
		 * intervals, 63 without; 1x: no better).  Undoing a move against pauses holds nothing:
		 * should they come back, that move is the one to make */
		if (!k->relax)
			t->tabu_until[k->cls][k->knob][!(k->to > k->from)] = t->interval + t->pol.tabu_intervals;
		relax_done(t, k);
		if (k->aggressive)
			t->soft_until[k->cls] = t->interval + soft_hold(&t->pol);
		step_end(t, k);
		return 0;
	}
	snprintf(p->reason, sizeof(p->reason), "step %llu (%s %s %.15g -> %.15g): %s", (unsigned long long)k->step,
		 LBL(k->cls), knob_names[k->knob], k->from, k->to, verdict);
	snprintf(p->expect, sizeof(p->expect), "%s", k->cur ? k->cur->expect : "");
	p->evidence = sig_json(t, &t->hist[0]);
	k->cur = p;
	k->st = ST_ROLLOUT;
	watch_reset(k);
	return 1;
}

/* A rollback that failed (an agent away, a change refused) is tried again after
 * canary_intervals (at least WINDOW) on the step's members that report the step's value still
 * (not one set to another value meanwhile: an operator's), up to ROLLBACK_TRIES times in all;
 * then, unless every member is back, the step is recorded as completed, so that an operator's
 * rollback (cc_tn_rollback_all) still undoes it once the members answer, and its class is
 * free again; a last rollback proposal, failed and never sent, names the members left and says
 * so.  Before, the first failure ended the step: its members stayed at the new value with no
 * step left to undo.  The wait (retry_wait) is set by cc_tn_applied on each failure. */
#define ROLLBACK_TRIES 5
static int rollback_again(struct cc_tn *t, struct step *k)
{
	struct cc_tn_proposal *p;
	bool give_up = k->tries >= ROLLBACK_TRIES;

	if (t->interval < k->retry_at)
		return 0;
	if (!(p = proposal_new(t, k, CC_TN_ROLLBACK)))
		return -ENOMEM;
	p->from = k->to;
	p->to = k->from;
	snprintf(p->reason, sizeof(p->reason), "step %llu (%s %s %.15g -> %.15g): its rollback failed, try %u of %u",
		 (unsigned long long)k->step, LBL(k->cls), knob_names[k->knob], k->from, k->to,
		 give_up ? k->tries : k->tries + 1, ROLLBACK_TRIES);
	snprintf(p->expect, sizeof(p->expect), "the class's %s back to %.15g on the members not back yet",
		 knob_names[k->knob], k->from);
	for (size_t i = 0; i < t->nm; i++) {
		struct member *m = t->m[i];

		if (m->touched && m->owner == k->step && member_value(m, k->knob) == k->to &&
		    !rollback_refused(t, k, m) && add_change(p, m, k->knob, k->from) < 0)
			return -ENOMEM;
	}
	k->cur = p;
	if (p->nchanges && give_up) {
		/* not sent (its changes name the members still at the step's value): they are the
		 * completed step's */
		p->state = CC_TN_FAILED;
		snprintf(p->error, sizeof(p->error),
			 "the rollback failed %u times: step %llu is kept as completed (POST /api/v1/cc/rollback "
			 "undoes it once its members answer)", k->tries, (unsigned long long)k->step);
		if (record_done(t, k) < 0)
			return -ENOMEM;
		t->done[t->ndone - 1].counted = true;
		step_end(t, k);
	} else if (!p->nchanges) { /* every member is back (or kept): the rollback is done */
		p->state = CC_TN_APPLIED;
		step_end(t, k);
	}
	return 1;
}
#undef ROLLBACK_TRIES

/* A canary not sent yet (waiting for an operator, or approved since the last decision) whose
 * members report another value than the step moves from — someone set them meanwhile — or,
 * with `invariants`, whose value would now break an invariant on one (its XOFF threshold
 * lowered, its other ECN knob or the policy changed since) is withdrawn (rejected, no hold:
 * made again from what they have, if still called for).  Sent as it was, it would set values
 * chosen for the setting before, and its rollback would restore that setting rather than what
 * the members had.  The values at each decision (a caller keeps the members' values as they
 * were while a change set of the tuner's is out: an approved canary compared so is not sent
 * yet), the invariants too where nothing of it can be out: as an operator approves it, as the
 * mode goes to auto, and when the caller is about to send it (cc_tn_sendable) — an approved
 * canary may be on its way at a decision, and one withdrawn then would land with no step to
 * undo it (a policy narrowed or an XOFF lowered meanwhile rolls the step back once it is
 * applied, step_run).
 * True: withdrawn. */
/* Whether change c of step k no longer fits its member: STALE_SET, set since to another value
 * than the step moves from (an operator's); STALE_BREAKS (invariants), the step's value would
 * now break an invariant on it (an XOFF threshold lowered); why in buf ("...'s kmin_bytes is
 * 15000 now, not 20000", "...'s kmax_bytes at 600000 would now break this: ...").  0: fits. */
enum { STALE_SET = 1, STALE_BREAKS };
static int change_stale(const struct cc_tn *t, const struct step *k, const struct cc_tn_change *c, bool invariants,
			char *buf, size_t len)
{
	const struct member *m = member_find(t, c->node, c->port, c->host);
	double v = m ? member_value(m, k->knob) : k->from;
	unsigned bad = 0;

	if (v == k->from && (!invariants || !m || !(bad = move_breaks(t, m, k->knob, k->to, t->xoff, k->repair))))
		return 0;
	if (bad)
		snprintf(buf, len, "%s%s%s's %s at %.15g would now break this: %s", c->node, c->host ? "" : " ",
			 c->host ? "" : c->port, knob_names[k->knob], k->to, violation_why(m, bad));
	else
		snprintf(buf, len, "%s%s%s's %s is %.15g now, not %.15g", c->node, c->host ? "" : " ",
			 c->host ? "" : c->port, knob_names[k->knob], v, k->from);
	return bad ? STALE_BREAKS : STALE_SET;
}

static bool canary_stale(struct cc_tn *t, struct step *k, bool invariants)
{
	struct cc_tn_proposal *p = k->cur;
	char why[240];

	/* one undoing moves against pauses while ports pause again: withdrawn (made again once
	 * they have been gone for relax_intervals) */
	if (p && k->relax && t->paused_at && t->paused_at == t->interval) {
		snprintf(p->error, sizeof(p->error), "withdrawn: ports paused above the target again; made again "
			 "once they have been gone for relax_intervals");
		p->state = CC_TN_REJECTED;
		step_end(t, k);
		return true;
	}
	/* a harder one while the fabric has a fault (made on the signals before it, or its
	 * pauses): withdrawn with the others' checks, as an operator approves it too (an
	 * operator's trial applied one in advise mode during a hold, unwarned) */
	if (p && invariants && k->aggressive && !k->forced && !k->repair && (t->fault[0] || t->was_held)) {
		snprintf(p->error, sizeof(p->error), "withdrawn: no harder step while the fabric has a fault "
			 "(%.180s); made again if still called for once it is over",
			 t->fault[0] ? t->fault : t->fault_last);
		p->state = CC_TN_REJECTED;
		step_end(t, k);
		return true;
	}

	for (size_t i = 0; p && i < p->nchanges; i++) {
		int stale = change_stale(t, k, &p->changes[i], invariants, why, sizeof(why));

		if (!stale)
			continue;
		snprintf(p->error, sizeof(p->error), "withdrawn: %s (%s since it was made; made again if still called "
			 "for)", why, stale == STALE_BREAKS ? "changed" : "set");
		p->state = CC_TN_REJECTED;
		step_end(t, k);
		return true;
	}
	return false;
}

/* One interval of a step in progress. */
static int step_run(struct cc_tn *t, struct step *k, const struct cc_tn_input *in, const struct sig *g)
{
	char buf[256];
	const char *why;
	bool nogain = false;

	switch (k->st) {
	case ST_IDLE:
		return 0;
	case ST_WAIT:
		canary_stale(t, k, true);
		return 0;
	case ST_ROLLBACK:
		if (k->cur && k->cur->state == CC_TN_FAILED)
			return rollback_again(t, k);
		if (k->cur && k->cur->state == CC_TN_APPLIED)
			step_end(t, k);
		return 0;
	case ST_CANARY:
	case ST_ROLLOUT:
		break;
	}
	if (k->cur && k->cur->state == CC_TN_APPROVED && k->cur->phase == CC_TN_CANARY && canary_stale(t, k, false))
		return 0;
	if (k->cur && k->cur->state != CC_TN_APPLIED)
		return 0; /* not applied yet: nothing to judge */
	for (size_t i = 0; i < t->nm; i++) {
		/* its value now breaks an invariant of its knob on a member it changed — a policy
		 * narrowed, an XOFF lowered within loop_bytes while its changes were on their way
		 * (the change path refuses only Kmax at XOFF or above) — they joined it breaking
		 * none: not judged, rolled out or left on them */
		const struct member *m = t->m[i];
		unsigned bad;

		if (!m->touched || m->owner != k->step || m->unsure ||
		    !(bad = violations(t, m, -1, 0, t->xoff) & knob_bits(k->knob)))
			continue;
		snprintf(buf, sizeof(buf), "%s%s%s's %s at %.15g breaks this now: %s", m->node, m->host ? "" : " ",
			 m->host ? "" : m->port, knob_names[k->knob], k->to, violation_why(m, bad));
		return propose_rollback(t, k, buf);
	}
	watch_add(k, g);
	grp_add(t, k, in);
	if (k->relax && t->paused_at == t->interval) {
		snprintf(buf, sizeof(buf), "ports paused above the target again (%.3f %% of port time)",
			 g->pause_share * 100);
		return rollback_held(t, k, buf, t->pol.tabu_intervals, false);
	}
	if ((why = unsafe(t, k, buf, sizeof(buf))))
		return rollback_held(t, k, why, unsafe_hold(t, k), false);
	/* a canary hurting beyond doubt (worse than the verdict's margins at Welch's t above 3)
	 * goes at once, without waiting for its verdict */
	{
		const struct grp *c = &k->g_canary, *r = &k->g_rest;

		if (pause_worse(t, c, r, 3)) {
			snprintf(buf, sizeof(buf), "the changed members were paused %.3f %% of the time, the rest %.3f %%",
				 (c->lvl_pause + stat_mean(&c->pause)) * 100, (r->lvl_pause + stat_mean(&r->pause)) * 100);
			return propose_rollback(t, k, buf);
		}
		if (qdelay_worse(t, c, r, 3)) {
			snprintf(buf, sizeof(buf), "the changed members' mean queue delay rose to %.1f us, the rest's is %.1f us",
				 c->lvl_qd + stat_mean(&c->qd), r->lvl_qd + stat_mean(&r->qd));
			return propose_rollback(t, k, buf);
		}
	}
	if (k->st == ST_CANARY && k->watched < t->pol.canary_intervals)
		return 0;
	/* the changed members against the rest of the class, over every interval of the step */
	if ((why = canary_worse(t, k, buf, sizeof(buf), &nogain)))
		return rollback_held(t, k, why, t->pol.tabu_intervals, nogain);
	if (k->st != ST_CANARY)
		return next_rollout(t, k, "the rollout did no harm");
	if (k->forced)
		return next_rollout(t, k, "the canary did no harm");
	if (k->repair)
		return next_rollout(t, k, "the canary did no harm (a step back inside the policy needs no gain to show)");
	if (k->urgent && k->aggressive && !t->was_held)
		return next_rollout(t, k, "the canary did no harm (a harder move against pauses needs no gain to show)");
	if (k->relax)
		return next_rollout(t, k, "the canary did no harm (undoing moves against pauses now gone needs "
				       "no gain to show)");
	return next_rollout(t, k, "the canary did no harm and showed a clear gain");
}

int cc_tn_run(struct cc_tn *t, const struct cc_tn_input *in)
{
	struct sig g;
	int r, n = 0;

	t->interval++;
	t->t_us = in->snap->t_us;
	t->xoff = in->xoff_bytes;
	snprintf(t->fault, sizeof(t->fault), "%s", in->fault ?: "");
	classify(t, in->snap);
	if ((r = measure(t, in, &g)) < 0)
		return r;
	memmove(&t->hist[1], &t->hist[0], (WINDOW - 1) * sizeof(t->hist[0]));
	t->hist[0] = g;
	if (g.pause_share > t->pol.pause_target)
		t->paused_at = t->interval;
	if (t->nhist < WINDOW)
		t->nhist++;
	for (int c = 0; c < CC_TN_NCLASSES; c++) {
		if ((r = step_run(t, &t->steps_of[c], in, &g)) < 0)
			return r;
		n += r;
	}
	adopt_classes(t); /* new host classes, once no step of one is out */
	history_add(t, in);
	if (!t->fault[0]) /* the detector's name for it first */
		host_pausing(t);
	fault_linger(t);
	t->was_held = t->fault[0];
	if (t->pol.mode == CC_TN_OFF || t->nhist < WINDOW)
		return n;
	if ((r = choose(t, in->xoff_bytes, in->hold_switch)) < 0)
		return r;
	return n + r;
}

struct cc_tn_proposal **cc_tn_pending(struct cc_tn *t, size_t *n)
{
	size_t k = 0;

	*n = 0;
	/* proposals may have come by the dozen since the last call (an operator's rollback of
	 * every step): room for all of them, not for one more */
	while (t->cappend <= t->nprops)
		if (vec_room((void **)&t->pend, &t->cappend, t->cappend, sizeof(*t->pend)) < 0)
			return NULL;
	for (size_t i = 0; i < t->nprops; i++)
		if (t->props[i]->state == CC_TN_APPROVED || t->props[i]->state == CC_TN_WAITING)
			t->pend[k++] = t->props[i];
	*n = k;
	return t->pend;
}

struct cc_tn_proposal **cc_tn_made_since(struct cc_tn *t, uint64_t after, size_t *n)
{
	size_t i = t->nprops;

	/* props is in the order made (ids rising): the new ones are at its end */
	while (i > 0 && t->props[i - 1]->id > after)
		i--;
	*n = t->nprops - i;
	return t->props + i;
}

struct cc_tn_proposal *cc_tn_find(struct cc_tn *t, uint64_t id)
{
	for (size_t i = 0; i < t->nprops; i++)
		if (t->props[i]->id == id)
			return t->props[i];
	return NULL;
}

/* off: every step under way is undone (its rollback needs no approval) and proposals waiting
 * are dropped — the brake an operator reaches for; auto: the canaries waiting go ahead. */
static void mode_changed(struct cc_tn *t, enum cc_tn_mode from)
{
	(void)from;
	for (int c = 0; c < CC_TN_NCLASSES; c++) {
		struct step *k = &t->steps_of[c];

		if (k->st == ST_WAIT && k->cur) {
			if (t->pol.mode == CC_TN_OFF) {
				k->cur->state = CC_TN_REJECTED;
				step_end(t, k);
			} else if (t->pol.mode == CC_TN_AUTO && !canary_stale(t, k, true)) {
				k->cur->state = CC_TN_APPROVED;
				k->st = ST_CANARY;
				watch_reset(k);
				baseline(t, k);
			}
		} else if (t->pol.mode == CC_TN_OFF && (k->st == ST_CANARY || k->st == ST_ROLLOUT)) {
			/* what is out now comes back; a proposal not yet applied goes nowhere, but its
			 * changes may be on their way (a caller that sent them): its members go back
			 * too, as after a failure — unless the caller said it did not send it: a
			 * canary then ends as a waiting one does, with nothing to undo */
			if (k->cur && k->cur->state == CC_TN_APPROVED) {
				for (size_t i = 0; !k->cur->unsent && i < k->cur->nchanges; i++) {
					const struct cc_tn_change *ch = &k->cur->changes[i];
					struct member *m = member_find(t, ch->node, ch->port, ch->host);

					if (m)
						m->unsure = m->touched;
				}
				k->cur->state = CC_TN_REJECTED;
				if (k->cur->unsent && k->cur->phase == CC_TN_CANARY) {
					step_end(t, k);
					continue;
				}
			}
			propose_rollback(t, k, "the tuner was turned off");
		}
	}
}

/* Proposal id in state st: 0 and *ret, else -ENOENT (no such one) or -EALREADY (another state). */
static int proposal_in(struct cc_tn *t, uint64_t id, enum cc_tn_pstate st, struct cc_tn_proposal **ret)
{
	if (!(*ret = cc_tn_find(t, id)))
		return -ENOENT;
	return (*ret)->state == st ? 0 : -EALREADY;
}

int cc_tn_not_sent(struct cc_tn *t, uint64_t id)
{
	struct cc_tn_proposal *p;
	int r = proposal_in(t, id, CC_TN_APPROVED, &p);

	if (r == 0)
		p->unsent = true;
	return r;
}

/* A rollout about to be sent (a pass or more after it was made: approved by an operator, or
 * sent again after its targets kept changing): a member set since it was made (an operator's
 * value, perhaps still on its way) keeps it — its change is left out, and it is no longer the
 * step's (its rollback leaves it too).  One that the value would now break (an XOFF threshold
 * lowered) is left out likewise. */
static void rollout_trim(struct cc_tn *t, struct step *k, struct cc_tn_proposal *p)
{
	size_t n = 0, out = 0;
	char first[200] = "", why[200];

	for (size_t i = 0; i < p->nchanges; i++) {
		const struct cc_tn_change *c = &p->changes[i];
		struct member *m;

		if (!change_stale(t, k, c, true, why, sizeof(why))) {
			p->changes[n++] = *c;
			continue;
		}
		if (!out++)
			memcpy(first, why, sizeof(first));
		if ((m = member_find(t, c->node, c->port, c->host)) && m->owner == k->step)
			m->touched = m->canary = false;
	}
	if (!out)
		return;
	p->nchanges = n;
	p->left_out += (unsigned)out; /* (sent again after its targets changed: those of each try) */
	snprintf(p->error, sizeof(p->error), "%u member%s left out (set since it was made, or the value would now break "
		 "an invariant on it): %s", p->left_out, p->left_out == 1 ? "" : "s", first);
}

int cc_tn_sendable(struct cc_tn *t, uint64_t id)
{
	struct cc_tn_proposal *p;
	struct step *k;
	int r;

	if ((r = proposal_in(t, id, CC_TN_APPROVED, &p)) < 0)
		return r;
	k = &t->steps_of[p->cls];
	if (p == k->cur && p->phase == CC_TN_ROLLOUT && k->st == ST_ROLLOUT) {
		rollout_trim(t, k, p);
		return 0;
	}
	if (p != k->cur || p->phase != CC_TN_CANARY || k->st != ST_CANARY)
		return 0; /* a rollback: made in the decision that sends it */
	return canary_stale(t, k, true) ? -ESTALE : 0;
}

int cc_tn_decide(struct cc_tn *t, uint64_t id, bool apply)
{
	struct cc_tn_proposal *p;
	struct step *k;
	int r;

	if ((r = proposal_in(t, id, CC_TN_WAITING, &p)) < 0)
		return r;
	if (apply && t->pol.mode == CC_TN_OFF)
		return -EPERM;
	k = &t->steps_of[p->cls];
	if (!apply) {
		p->state = CC_TN_REJECTED;
		if (p == k->cur) {
			/* an operator said no: not again for a while */
			t->tabu_until[k->cls][k->knob][k->to > k->from] = t->interval + t->pol.tabu_intervals;
			step_end(t, k);
		}
		return 0;
	}
	if (p == k->cur && k->st == ST_WAIT && canary_stale(t, k, true))
		return -ESTALE;
	p->state = CC_TN_APPROVED;
	if (p == k->cur && k->st == ST_WAIT) {
		k->st = ST_CANARY;
		watch_reset(k);
		baseline(t, k); /* the members as they are now */
		sig_mean(t, t->nhist, &k->base); /* judged against the fabric as it is now */
	}
	return 0;
}

int cc_tn_applied(struct cc_tn *t, uint64_t id, enum cc_tn_outcome how)
{
	bool ok = how == CC_TN_OUT_APPLIED;
	struct cc_tn_proposal *p;
	struct step *k;
	int r;

	if ((r = proposal_in(t, id, CC_TN_APPROVED, &p)) < 0)
		return r;
	p->state = ok ? CC_TN_APPLIED : CC_TN_FAILED;
	/* what the members have now; after a failure, not known; none sent, what they had */
	for (size_t i = 0; how != CC_TN_OUT_NOT_SENT && i < p->nchanges; i++) {
		const struct cc_tn_change *c = &p->changes[i];
		struct member *m = member_get(t, c->node, c->port, c->host);

		if (!m)
			return -ENOMEM;
		if (!ok)
			m->unsure = m->touched; /* its step's rollback names it (propose_rollback) */
		else if (c->host)
			m->dc = c->dc_to;
		else
			m->ecn = c->ecn_to;
		if (ok)
			m->repaired &= (uint16_t) ~(1u << p->knob);
	}
	k = &t->steps_of[p->cls];
	if (p != k->cur) {
		/* an operator's rollback of a completed step (cc_tn_rollback_all) that failed: the
		 * step stays to be undone by the next one, from the step's value (rollback_all took
		 * its members to the old one ahead: left so, the next would find none to undo) */
		if (ok || p->phase != CC_TN_ROLLBACK)
			return 0;
		for (size_t i = 0; i < p->nchanges; i++) {
			const struct cc_tn_change *c = &p->changes[i];
			struct member *m = member_find(t, c->node, c->port, c->host);

			if (m)
				member_set(m, p->knob, c->host ? cc_tn_knob_get_dcqcn(&c->dc_from, p->knob)
							       : cc_tn_knob_get_ecn(&c->ecn_from, p->knob));
		}
		for (size_t i = 0; i < t->ndone; i++) {
			struct done_step *d = &t->done[i];

			/* and the newer ones of its knob whose undos passed a member on (to this one,
			 * or to one before it: undone again they send no change) */
			if (d->step == p->step || (d->passed && d->cls == p->cls && d->knob == p->knob && d->step > p->step)) {
				d->undone = false;
				d->passed = false;
			}
		}
		return 0;
	}
	if (!ok && k->st == ST_ROLLBACK) {
		/* tried again (rollback_again) once the members' values are reported again */
		k->tries++;
		k->retry_at = t->interval + retry_wait(t);
		return 0;
	}
	if (!ok && (k->st == ST_CANARY || k->st == ST_ROLLOUT)) {
		/* some changes may have gone through: undo the step */
		r = propose_rollback(t, k, "a change of the step could not be applied");
		return r < 0 ? r : 0;
	}
	if (k->st == ST_CANARY || k->st == ST_ROLLOUT)
		watch_reset(k);
	return 0;
}

int cc_tn_force(struct cc_tn *t, enum cc_tn_class cls, enum cc_tn_knob knob, double value, const char **why)
{
	char reason[320];
	bool ecn = is_ecn_knob(knob);

	*why = NULL;
	if ((unsigned)cls >= CC_TN_NCLASSES || (unsigned)knob >= CC_TN_NKNOBS || ecn == cc_tn_class_is_hosts(cls)) {
		*why = "that knob does not belong to that class (ECN knobs: switch classes; DCQCN knobs: host classes)";
		return -EINVAL;
	}
	/* the raw value (a step keeps it: a rounded one on the members would never match it) */
	if (knob != CC_TN_PMAX && !(value >= 0 && value == floor(value))) {
		*why = "that knob takes whole numbers";
		return -EINVAL;
	}
	if (!in_policy(&t->pol, knob, value)) {
		*why = "the value is outside the policy's range for that knob";
		return -EINVAL;
	}
	if (t->steps_of[cls].st != ST_IDLE) {
		*why = "a step of that class is in progress";
		return -EBUSY;
	}
	if (cc_tn_class_is_hosts(cls) && classes_pending(t)) {
		*why = "new host classes wait to come in force";
		return -EBUSY;
	}
	if (!class_present(t, cls)) {
		*why = "the class has no member in the last snapshot";
		return -EINVAL;
	}
	if ((*why = candidate_check(t, cls, knob, value, t->xoff)))
		return -EINVAL;
	snprintf(reason, sizeof(reason), "forced: %s %s to %.15g", LBL(cls), knob_names[knob], value);
	return start_step(t, cls, knob, value, false, true, false, reason,
			  "none claimed: a forced step is judged like any other", false, 0)
		       < 0
		       ? -ENOMEM
		       : 0;
}

int cc_tn_rollback_all(struct cc_tn *t)
{
	struct step tmp, *k = &tmp;
	size_t refused;
	int n = 0;

	for (int c = 0; c < CC_TN_NCLASSES; c++)
		if (t->steps_of[c].st != ST_IDLE && t->steps_of[c].st != ST_WAIT)
			return -EBUSY;
	/* a canary waiting for an operator changed nothing: the operator who undoes every step
	 * does not want it either (rejected, not proposed again for a while) */
	reject_waiting(t, 0, true);
	for (size_t i = 0; i < t->nm; i++)
		t->m[i]->undo_passed = 0;
	for (size_t i = t->ndone; i-- > 0;) {
		struct done_step *ds = &t->done[i];
		struct cc_tn_proposal *p;

		if (ds->undone)
			continue;
		ds->passed = false;
		memset(k, 0, sizeof(*k));
		k->cls = ds->cls;
		k->knob = ds->knob;
		k->from = ds->to;
		k->to = ds->from;
		k->step = ds->step;
		p = proposal_new(t, k, CC_TN_ROLLBACK);
		if (!p)
			return -ENOMEM;
		snprintf(p->reason, sizeof(p->reason), "operator rollback of step %llu (%s %s %.15g -> %.15g)",
			 (unsigned long long)ds->step, LBL(ds->cls), knob_names[ds->knob], ds->from, ds->to);
		snprintf(p->expect, sizeof(p->expect), "the setting before step %llu", (unsigned long long)ds->step);
		refused = 0;
		for (size_t j = 0; j < ds->nkeys; j++) {
			struct member *m = hmap_get(&t->idx, ds->keys[j]);
			uint16_t bit = (uint16_t)(1u << ds->knob);

			/* a member set since (an operator's value: not the step's) is left as it is,
			 * and so by the older steps' undos too */
			if (!m || member_value(m, ds->knob) != ds->to)
				continue;
			if (undo_refused(t, m, ds->knob, ds->from)) {
				refused++;
				/* the old value not allowed any more (a floor raised above it): not sent,
				 * but the older undos go on from it — Kmin 100 KB back through 200 KB,
				 * below a floor of 400 KB, to the 400 KB before both steps */
				if (!(m->undo_passed & bit))
					m->undo_real[ds->knob] = member_value(m, ds->knob);
				m->undo_passed |= bit;
				ds->passed = true;
				member_set(m, ds->knob, ds->from);
				continue;
			}
			if (add_change(p, m, ds->knob, ds->from) < 0)
				return -ENOMEM;
			{
				/* from: what the member has (the tuner's belief until the change is
				 * applied), not a value passed through on the way */
				struct cc_tn_change *c = &p->changes[p->nchanges - 1];
				double from = m->undo_passed & bit ? m->undo_real[ds->knob] : ds->to;

				if (c->host)
					knob_set_dcqcn(&c->dc_from, ds->knob, from);
				else
					knob_set_ecn(&c->ecn_from, ds->knob, from);
			}
			/* the next undo of the same knob starts from this one's result */
			member_set(m, ds->knob, ds->from);
			m->undo_real[ds->knob] = ds->from;
		}
		ds->undone = true;
		/* members the policy keeps are said as they are, and an undo that sends nothing is
		 * applied as it is and counted as no rollback (before: "approved", then applied and
		 * counted, while nothing moved: an operator's trial, of repairs into the policy) */
		if (refused)
			snprintf(p->reason + strlen(p->reason), sizeof(p->reason) - strlen(p->reason),
				 ": %zu member%s not taken to %.15g: the policy refuses it", refused, refused == 1 ? "" : "s",
				 ds->from);
		if (!p->nchanges) {
			snprintf(p->reason + strlen(p->reason), sizeof(p->reason) - strlen(p->reason), "%s",
				 refused ? " (nothing sent)" : ": nothing sent (its members were set since)");
			p->state = CC_TN_APPLIED;
		}
		/* asked, not judged: counted all the same (rocefab_cc_rollbacks_total), once, when it
		 * sends something (one sending nothing now may undo the step later: counted then) */
		if (p->nchanges) {
			t->rolled_back += !ds->counted;
			ds->counted = true;
		}
		/* the operator undid it: not proposed again for a while; and the hold its keeping set
		 * on going straight back is over (it held a repair of that knob back for as long, with
		 * nothing saying why: an operator's trial) */
		t->tabu_until[ds->cls][ds->knob][ds->to > ds->from] = t->interval + t->pol.tabu_intervals;
		t->tabu_until[ds->cls][ds->knob][!(ds->to > ds->from)] = 0;
		if (!cc_tn_class_is_hosts(ds->cls))
			t->relax[ds->cls][ds->knob].to = NAN; /* back before the moves against pauses */
		n++;
	}
	/* a value passed through and sent by no older undo: the member keeps what it has */
	for (size_t i = 0; i < t->nm; i++)
		for (unsigned kn = 0; kn < CC_TN_NKNOBS; kn++)
			if (t->m[i]->undo_passed & (1u << kn))
				member_set(t->m[i], (enum cc_tn_knob)kn, t->m[i]->undo_real[kn]);
	return n;
}

/* --- state across restarts ------------------------------------------------------------- */


static json_t *keys_json(char *const *keys, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(keys[i]));
	return a;
}

/* The moves held back, as the intervals left: a move rolled back or undone (tabu_until) and a
 * class's softening after a harder step (soft_until, knob "soften").  A restart keeps them: a
 * move rolled back just before it would otherwise be tried again at once.  saved: on a clock of
 * tens of intervals shared by every hold (the end rounded up, now rounded down), so that the
 * saved state (which rocefabd rewrites whenever its text changes, and which holds up to 1,000
 * steps with their members) changes once every ten intervals at most for the holds, however
 * many there are; a hold taken back lasts up to 19 intervals longer, within the policy's. */
#define HOLD_SAVED_GRAIN 10
static uint64_t hold_left(uint64_t until, uint64_t now, uint64_t g)
{
	uint64_t end = (until + g - 1) / g * g;

	now = now / g * g;
	return end > now ? end - now : 0;
}

/* What relax_move goes back toward: class, knob, value, and (saved) where the tuner left it. */
static json_t *relax_json(const struct cc_tn *t, bool saved)
{
	json_t *a = json_array();

	for (int c = 0; a && c < CC_TN_NSWITCH_CLASSES; c++)
		for (int k = 0; k < CC_TN_NKNOBS; k++) {
			const struct relax *r = &t->relax[c][k];
			json_t *o;

			if (isnan(r->to))
				continue;
			o = json_pack("{s:s,s:s,s:f}", "class", class_names[c], "knob", knob_names[k], "value", r->to);
			if (saved)
				json_object_set_new(o, "left_at", json_real(r->at));
			json_array_append_new(a, o);
		}
	return a;
}

static json_t *holds_json(const struct cc_tn *t, bool saved)
{
	json_t *a = json_array();
	uint64_t g = saved ? HOLD_SAVED_GRAIN : 1;
#define LEFT(until) ((json_int_t)hold_left((until), t->interval, g))

	for (int c = 0; a && c < CC_TN_NCLASSES; c++) {
		if (!strcmp(LBL(c), "?"))
			continue;
		for (int k = 0; k < CC_TN_NKNOBS; k++)
			for (int up = 0; up < 2; up++) {
				json_int_t held = LEFT(t->tabu_until[c][k][up]), ng = LEFT(t->nogain_until[c][k][up]);

				if (held > 0)
					json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:I}", "class", LBL(c), "knob",
									   knob_names[k], "direction",
									   up ? "up" : "down", "intervals", held));
				/* held unless ports pause, and for longer */
				if (ng > held)
					json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:I,s:b}", "class", LBL(c),
									   "knob", knob_names[k], "direction",
									   up ? "up" : "down", "intervals", ng,
									   "unless_pausing", 1));
			}
		if (LEFT(t->soft_until[c]) > 0)
			json_array_append_new(a, json_pack("{s:s,s:s,s:I}", "class", LBL(c), "knob", "soften",
							   "intervals", LEFT(t->soft_until[c])));
	}
#undef LEFT
	return a;
}

/* A saved hold's class, knob (CC_TN_NKNOBS: the softening hold; its direction is not read),
 * direction and intervals left, capped at what the policy holds a move for now.  -ENOENT: a
 * class the policy no longer has; -EINVAL: malformed or unknown (a knob of a newer version).
 * Either way the hold is dropped: it only delays a move, and refusing the saved state for it
 * would lose the steps an operator may still want rolled back. */
static int saved_hold(const struct cc_tn *t, json_t *o, enum cc_tn_class *c, int *k, int *up, uint64_t *left)
{
	const char *kn = json_string_value(json_object_get(o, "knob")) ?: "",
		   *dir = json_string_value(json_object_get(o, "direction"));
	json_t *n = json_object_get(o, "intervals");
	uint64_t most;

	if (!json_is_string(json_object_get(o, "class")) || !json_is_integer(n) || json_integer_value(n) < 1 ||
	    (strcmp(kn, "soften") && (parse(knob_names, CC_TN_NKNOBS, kn, k) < 0 || !dir ||
				      (strcmp(dir, "up") && strcmp(dir, "down")))))
		return -EINVAL;
	if (!strcmp(kn, "soften"))
		*k = CC_TN_NKNOBS;
	*up = dir && !strcmp(dir, "up");
	most = *k == CC_TN_NKNOBS ? soft_hold(&t->pol) : t->pol.tabu_intervals;
	*left = (uint64_t)json_integer_value(n) < most ? (uint64_t)json_integer_value(n) : most;
	if (cc_tn_class_lookup(&t->live, json_string_value(json_object_get(o, "class")), c) < 0)
		return -ENOENT;
	if (*k < CC_TN_NKNOBS && is_ecn_knob((enum cc_tn_knob)*k) == cc_tn_class_is_hosts(*c))
		return -EINVAL;
	return 0;
}

/* Completed steps saved, the newest not undone (an undone one has nothing left to undo). */
#define DONE_SAVED 1000

json_t *cc_tn_state_json(const struct cc_tn *t)
{
	json_t *done = json_array(), *under = json_array(), *o;
	size_t first = t->ndone, kept = 0;

	while (first > 0 && kept < DONE_SAVED)
		kept += !t->done[--first].undone;
	for (size_t i = first; done && i < t->ndone; i++) {
		const struct done_step *ds = &t->done[i];

		if (ds->undone)
			continue;
		json_array_append_new(done, json_pack("{s:I,s:s,s:s,s:f,s:f,s:o}", "step", (json_int_t)ds->step,
						      "class", LBL(ds->cls), "knob", knob_names[ds->knob],
						      "from", ds->from, "to", ds->to, "members",
						      keys_json(ds->keys, ds->nkeys)));
	}
	for (int c = 0; under && c < CC_TN_NCLASSES; c++) {
		const struct step *k = &t->steps_of[c];
		json_t *keys;

		if (k->st == ST_IDLE || k->st == ST_WAIT)
			continue; /* nothing of a step waiting for an operator is applied */
		keys = json_array();
		/* the members it changed (a restored rollback's may be of other classes) */
		for (size_t i = 0; keys && i < t->nm; i++)
			if (t->m[i]->touched && t->m[i]->owner == k->step)
				json_array_append_new(keys, json_string(t->m[i]->key));
		json_array_append_new(under, json_pack("{s:I,s:s,s:s,s:s,s:f,s:f,s:o}", "step", (json_int_t)k->step,
						       "state", state_names[k->st], "class", step_label(t, k), "knob",
						       knob_names[k->knob], "from", k->from, "to", k->to, "members", keys));
	}
	o = json_pack("{s:I,s:I,s:I,s:I,s:o,s:o,s:o}", "next_id", (json_int_t)t->next_id, "next_step",
		      (json_int_t)t->next_step, "steps", (json_int_t)t->steps, "rolled_back", (json_int_t)t->rolled_back,
		      "done", done, "under_way", under, "holds", holds_json(t, true));
	json_object_set_new(o, "relax_to", relax_json(t, true));
	return o;
}

void cc_tn_ids_at_least(struct cc_tn *t, uint64_t next_id, uint64_t next_step)
{
	if (next_id > t->next_id)
		t->next_id = next_id;
	if (next_step > t->next_step)
		t->next_step = next_step;
}

/* A saved step's fields; false (err set) when one is missing or unknown. */
/* A host class the policy no longer has stands for "hosts": its members are found by name. */
static bool saved_step(const struct cc_tn *t, json_t *o, uint64_t *step, enum cc_tn_class *c, enum cc_tn_knob *k,
		       double *from, double *to, json_t **members, char *err, size_t len)
{
	const char *cn = json_string_value(json_object_get(o, "class"));
	enum cc_tn_class ci = CC_TN_HOSTS;
	int ki;

	if (!json_is_integer(json_object_get(o, "step")) || json_integer_value(json_object_get(o, "step")) < 1 ||
	    parse(knob_names, CC_TN_NKNOBS, json_string_value(json_object_get(o, "knob")) ?: "", &ki) < 0 || !cn ||
	    (cc_tn_class_lookup(&t->live, cn, &ci) < 0 && is_ecn_knob((enum cc_tn_knob)ki)) ||
	    !json_is_number(json_object_get(o, "from")) || !json_is_number(json_object_get(o, "to")) ||
	    !json_is_array(json_object_get(o, "members"))) {
		snprintf(err, len, "a saved step lacks step, class, knob, from, to or members, or names an unknown one");
		return false;
	}
	if (!isfinite(json_number_value(json_object_get(o, "from"))) ||
	    !isfinite(json_number_value(json_object_get(o, "to")))) {
		snprintf(err, len, "a saved step's from or to is not a finite number");
		return false;
	}
	if (is_ecn_knob((enum cc_tn_knob)ki) == cc_tn_class_is_hosts(ci)) {
		snprintf(err, len, "a saved step's knob %s is not one of class %s", knob_names[ki], cn);
		return false;
	}
	*step = (uint64_t)json_integer_value(json_object_get(o, "step"));
	*c = ci;
	*k = (enum cc_tn_knob)ki;
	*from = json_number_value(json_object_get(o, "from"));
	*to = json_number_value(json_object_get(o, "to"));
	*members = json_object_get(o, "members");
	return true;
}

int cc_tn_state_load(struct cc_tn *t, json_t *doc, char *err, size_t len)
{
	json_t *done = json_object_get(doc, "done"), *under = json_object_get(doc, "under_way"),
	       *holds = json_object_get(doc, "holds"), *it, *members, *key;
	static const char *const counters[] = { "next_id", "next_step", "steps", "rolled_back" };
	uint64_t *dst[] = { &t->next_id, &t->next_step, &t->steps, &t->rolled_back };
	size_t i, j, unread = 0, gone = 0;
	int n = 0;

	if (len)
		err[0] = '\0';
	if (!json_is_object(doc) || !json_is_array(done) || !json_is_array(under)) {
		snprintf(err, len, "the saved state is not an object with done and under_way arrays");
		return -EINVAL;
	}
	for (int c = 0; c < CC_TN_NCLASSES; c++)
		if (t->steps_of[c].st != ST_IDLE) {
			snprintf(err, len, "a step is in progress already");
			return -EBUSY;
		}
	/* all checked before anything is taken */
	for (size_t c = 0; c < sizeof(counters) / sizeof(*counters); c++) {
		json_t *v = json_object_get(doc, counters[c]);

		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (INT64_C(1) << 53)) {
			snprintf(err, len, "the saved state's %s is not a count", counters[c]);
			return -EINVAL;
		}
	}
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(pass ? under : done, i, it) {
			struct step tmp;

			if (!saved_step(t, it, &tmp.step, &tmp.cls, &tmp.knob, &tmp.from, &tmp.to, &members, err, len))
				return -EINVAL;
		}
	for (size_t c = 0; c < sizeof(counters) / sizeof(*counters); c++) {
		uint64_t v = (uint64_t)json_integer_value(json_object_get(doc, counters[c]));

		if (v > *dst[c]) /* never below what this tuner has used: ids stay unique */
			*dst[c] = v;
	}
	/* none in a state saved before holds were; anything but an array is not read (a hold only
	 * delays a move: not worth the steps an operator may still roll back) */
	json_array_foreach(holds, i, it) {
		enum cc_tn_class c;
		uint64_t left, *until;
		int k, up, r;

		if ((r = saved_hold(t, it, &c, &k, &up, &left)) < 0) {
			/* its class is gone, or it is not one this version reads */
			if (r == -ENOENT)
				gone++;
			else
				unread++;
			continue;
		}
		if (k == CC_TN_NKNOBS)
			until = &t->soft_until[c];
		else if (json_is_true(json_object_get(it, "unless_pausing")))
			until = &t->nogain_until[c][k][up];
		else
			until = &t->tabu_until[c][k][up];
		if (t->interval + left > *until)
			*until = t->interval + left;
	}
	/* none in a state saved before 2026-12-07; one not read, or outside the policy, leaves its
	 * moves as they are */
	json_array_foreach(json_object_get(doc, "relax_to"), i, it) {
		json_t *v = json_object_get(it, "value"), *at = json_object_get(it, "left_at");
		enum cc_tn_class c;
		int k;

		if (cc_tn_class_parse(json_string_value(json_object_get(it, "class")) ?: "", &c) < 0 ||
		    cc_tn_class_is_hosts(c) ||
		    parse(knob_names, CC_TN_NKNOBS, json_string_value(json_object_get(it, "knob")) ?: "", &k) < 0 ||
		    !relax_knob((enum cc_tn_knob)k) || !json_is_number(v) || !json_is_number(at) ||
		    !in_policy(&t->pol, (enum cc_tn_knob)k, json_number_value(v)) ||
		    !isfinite(json_number_value(at)))
			continue;
		t->relax[c][k] = (struct relax){ json_number_value(v), json_number_value(at) };
	}
	json_array_foreach(done, i, it) {
		struct done_step ds = { 0 };

		if (json_array_size(done) - i > DONE_SAVED)
			continue; /* the newest only, as saved */

		if (!saved_step(t, it, &ds.step, &ds.cls, &ds.knob, &ds.from, &ds.to, &members, err, len))
			return -EINVAL;
		ds.undone = json_is_true(json_object_get(it, "undone"));
		if (vec_room((void **)&t->done, &t->capdone, t->ndone, sizeof(*t->done)) < 0 ||
		    !(ds.keys = calloc(json_array_size(members) + 1, sizeof(*ds.keys))))
			return -ENOMEM;
		json_array_foreach(members, j, key)
			if (json_is_string(key) && !(ds.keys[ds.nkeys++] = strdup(json_string_value(key)))) {
				for (size_t x = 0; x + 1 < ds.nkeys; x++)
					free(ds.keys[x]);
				free(ds.keys);
				return -ENOMEM;
			}
		t->done[t->ndone++] = ds;
	}
	/* a step the previous run left half done: its changed members go back, whatever the mode,
	 * as the class's step in rollback (the class takes no other step until it is applied, and a
	 * restart before that rolls it back again).  Those of classes in force first; one of a
	 * host class no longer in force takes a host class's place that is free ("hosts" first),
	 * under its saved name: it is never dropped for want of its class */
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(under, i, it) {
			const char *was = json_string_value(json_object_get(it, "state")) ?: "canary";
			const char *name = json_string_value(json_object_get(it, "class"));
			struct step tmp = { 0 }, *k = NULL;
			struct cc_tn_proposal *p;
			enum cc_tn_class c;
			bool known = cc_tn_class_lookup(&t->live, name, &c) == 0;
			size_t kept = 0;

			if (known != !pass)
				continue;
			saved_step(t, it, &tmp.step, &tmp.cls, &tmp.knob, &tmp.from, &tmp.to, &members, err, len);
			if (known) {
				k = &t->steps_of[tmp.cls];
			} else {
				static const int order[] = { CC_TN_HOSTS, CC_TN_HOST_CLASS0 + 3, CC_TN_HOST_CLASS0 + 2,
							     CC_TN_HOST_CLASS0 + 1, CC_TN_HOST_CLASS0 };

				for (size_t x = 0; !k && x < sizeof(order) / sizeof(*order); x++)
					if (t->steps_of[order[x]].st == ST_IDLE)
						k = &t->steps_of[order[x]];
				if (!k)
					continue; /* more steps of host classes than places: damage */
				tmp.cls = (enum cc_tn_class)(k - t->steps_of);
				snprintf(tmp.label, sizeof(tmp.label), "%s", name);
			}
			if (k->st != ST_IDLE)
				continue; /* one step per class: a second one saved is damage */
			*k = tmp;
			if (!(p = proposal_new(t, k, CC_TN_ROLLBACK)))
				return -ENOMEM;
			p->from = k->to;
			p->to = k->from;
			snprintf(p->expect, sizeof(p->expect), "the setting before step %llu",
				 (unsigned long long)k->step);
			json_array_foreach(members, j, key) {
				struct member *m = json_is_string(key) ? hmap_get(&t->idx, json_string_value(key)) : NULL;

				/* a host back whatever its class now (the host classes may have been
				 * redefined since); a port of the step's class or not yet seen */
				if (!m || m->host != cc_tn_class_is_hosts(k->cls) ||
				    (!m->host && m->cls >= 0 && m->cls != (int)k->cls) ||
				    member_value(m, k->knob) != k->to)
					continue;
				if (undo_refused(t, m, k->knob, k->from)) {
					/* kept: the policy refuses the old value (a repair, cut short) */
					m->repaired |= (uint16_t)(1u << k->knob);
					kept++;
					continue;
				}
				if (add_change(p, m, k->knob, k->from) < 0)
					return -ENOMEM;
				member_set(m, k->knob, k->from); /* as for any rollback */
				if (!m->host)
					m->cls = (int)k->cls;
				/* no other step takes it until the rollback is applied (step_end) */
				m->touched = true;
				m->owner = k->step;
			}
			k->cur = p;
			k->st = ST_ROLLBACK;
			/* members kept are said as they are: "rolled back" with nothing sent read as an
			 * undo that did not happen (an operator's trial) */
			snprintf(p->reason, sizeof(p->reason),
				 "step %llu (%s %s %.15g -> %.15g) was under way when the tuner stopped: %s",
				 (unsigned long long)k->step, p->cls_name, knob_names[k->knob], k->from, k->to,
				 !kept ? "rolled back" : p->nchanges ? "rolled back, but " : "");
			if (kept)
				snprintf(p->reason + strlen(p->reason), sizeof(p->reason) - strlen(p->reason),
					 "%zu member%s left at %.15g: the policy refuses %.15g (a repair cut short; it "
					 "goes on after tabu_intervals)", kept, kept == 1 ? "" : "s", k->to, k->from);
			if (!p->nchanges)
				p->state = CC_TN_APPLIED; /* nothing of it was applied: nothing to undo */
			if (strcmp(was, "rollback")) {
				/* a rollback saved was counted when it began; one that undoes nothing is
				 * none */
				t->rolled_back += p->nchanges > 0;
				if (known)
					t->tabu_until[k->cls][k->knob][k->to > k->from] =
						t->interval + t->pol.tabu_intervals;
			}
			/* nothing to send: over now, not "rolling back" until the next decision (an
			 * operator's trial: "step 18 rolling back: ... -> 1600000", nothing moving) */
			if (!p->nchanges)
				step_end(t, k);
			n++;
		}
	if (holds && !json_is_array(holds))
		snprintf(err, len, "the saved state's holds are not an array: none taken back, held-back moves may "
				   "be tried sooner than held");
	else if (unread || gone)
		snprintf(err, len, "%zu held-back move%s of the saved state not taken back (%zu of a class the "
				   "policy no longer has, %zu not read): %s sooner than held",
			 unread + gone, unread + gone == 1 ? "" : "s", gone, unread,
			 unread + gone == 1 ? "it may be tried" : "they may be tried");
	return n;
}

/* --- views ------------------------------------------------------------------------------- */

/* The value of a knob most members of a class have: the majority's (Boyer-Moore vote, then a
 * count).  While a step of the knob is a canary (or waits for an operator, or is rolled back),
 * the class's setting is the one it moves from, whatever the canary's share; while it rolls
 * out, the majority's, or the one it moves from when no value has more than half.  A canary is
 * not the class's setting: the vote alone named a canary of half the class (the default
 * canary_share on an even class) by the members' order, in GET /api/v1/cc and the simulator's
 * timeline, so that a canary rolled back counted as two changes of setting.  Members outside
 * the policy have no vote unless all are (the rules' steps move them only back inside;
 * repair_class steps most of a class at one value back).  NAN: no member. */
static double majority(const struct cc_tn *t, enum cc_tn_class c, enum cc_tn_knob k)
{
	const struct step *st = &t->steps_of[c];
	bool moving = st->st != ST_IDLE && st->knob == k;
	double cand = NAN;

	for (int all = 0; all < 2 && isnan(cand); all++) {
		size_t votes = 0, n = 0, n_cand = 0, n_from = 0;

		for (size_t i = 0; i < t->nm; i++) {
			double v;

			if (t->m[i]->cls != (int)c || (!all && outside(t, t->m[i])))
				continue;
			v = member_value(t->m[i], k);
			if (!votes)
				cand = v;
			votes += v == cand ? 1 : (size_t)-1;
		}
		if (isnan(cand) || !moving)
			continue;
		for (size_t i = 0; i < t->nm; i++) {
			double v;

			if (t->m[i]->cls != (int)c || (!all && outside(t, t->m[i])))
				continue;
			v = member_value(t->m[i], k);
			n++;
			n_cand += v == cand;
			n_from += v == st->from;
		}
		if (n_from && (st->st != ST_ROLLOUT || 2 * n_cand <= n))
			return st->from;
	}
	return cand;
}

void cc_tn_class_ecn(const struct cc_tn *t, enum cc_tn_class c, struct cc_tn_ecn *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (int k = CC_TN_KMIN; k <= CC_TN_PMAX; k++) {
		double v = majority(t, c, (enum cc_tn_knob)k);

		if (!isnan(v))
			knob_set_ecn(ret, (enum cc_tn_knob)k, v);
	}
}

void cc_tn_class_dcqcn(const struct cc_tn *t, enum cc_tn_class c, struct cc_tn_dcqcn *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (int k = CC_TN_CNP_GAP; k < CC_TN_NKNOBS; k++) {
		double v = majority(t, c, (enum cc_tn_knob)k);

		if (!isnan(v))
			knob_set_dcqcn(ret, (enum cc_tn_knob)k, v);
	}
}

bool cc_tn_queues_changed(const struct cc_tn *t)
{
	for (int c = 0; c < CC_TN_NCLASSES; c++)
		if (!cc_tn_class_is_hosts((enum cc_tn_class)c) && t->steps_of[c].st != ST_IDLE)
			return true;
	for (size_t i = 0; i < t->ndone; i++)
		if (!t->done[i].undone && t->done[i].nkeys && !cc_tn_class_is_hosts(t->done[i].cls))
			return true;
	/* an undo of an operator's rollback waiting to go out, or out */
	for (size_t i = 0; i < t->nprops; i++)
		if ((t->props[i]->state == CC_TN_APPROVED || t->props[i]->state == CC_TN_WAITING) &&
		    !cc_tn_class_is_hosts(t->props[i]->cls))
			return true;
	return false;
}

uint64_t cc_tn_steps(const struct cc_tn *t, uint64_t *rolled_back)
{
	if (rolled_back)
		*rolled_back = t->rolled_back;
	return t->steps;
}

const char *cc_tn_harder_held(const struct cc_tn *t)
{
	return t->fault[0] && t->pol.mode != CC_TN_OFF ? t->fault : NULL;
}

static const char *const phase_names[] = { "canary", "rollout", "rollback" };
static const char *const pstate_names[] = { "waiting", "approved", "applied", "failed", "rejected" };

json_t *cc_tn_proposal_json(const struct cc_tn_proposal *p)
{
	json_t *ch = json_array(), *o;

	/* the first CC_TN_LISTED changes (nchanges says how many in all): a rollout over a large
	 * fabric touches thousands of ports, and the history keeps two thousand proposals */
	for (size_t i = 0; ch && i < p->nchanges && i < CC_TN_LISTED; i++) {
		const struct cc_tn_change *c = &p->changes[i];

		if (c->host)
			json_array_append_new(ch, json_pack("{s:s,s:s,s:f,s:f}", "node", c->node, "knob",
							    knob_names[p->knob], "from",
							    cc_tn_knob_get_dcqcn(&c->dc_from, p->knob), "to",
							    cc_tn_knob_get_dcqcn(&c->dc_to, p->knob)));
		else
			json_array_append_new(ch, json_pack("{s:s,s:s,s:s,s:f,s:f}", "node", c->node, "port",
							    c->port, "knob", knob_names[p->knob], "from",
							    cc_tn_knob_get_ecn(&c->ecn_from, p->knob), "to",
							    cc_tn_knob_get_ecn(&c->ecn_to, p->knob)));
	}
	o = json_pack("{s:I,s:I,s:s,s:s,s:s,s:s,s:f,s:f,s:b,s:I,s:s,s:s,s:o}", "id", (json_int_t)p->id, "step",
		      (json_int_t)p->step, "phase", phase_names[p->phase], "state", pstate_names[p->state], "class",
		      p->cls_name, "knob", knob_names[p->knob], "from", p->from, "to", p->to, "forced",
		      p->forced, "t_us", (json_int_t)p->t_us, "reason", p->reason, "expected_effect", p->expect,
		      "changes", ch ? ch : json_array());
	if (o && p->evidence)
		json_object_set(o, "evidence", p->evidence);
	if (o && p->error[0])
		json_object_set_new(o, "error", json_string(p->error));
	if (o)
		json_object_set_new(o, "nchanges", json_integer((json_int_t)p->nchanges));
	return o;
}


/* The members whose reported setting the policy refuses (a range, or Kmax too close to XOFF):
 * they have no vote in the class's setting, and unless most of their class is outside at one
 * value (repair_class steps it back) no step moves them, so an operator must see them.  How
 * many, and the first OUTSIDE_LISTED with the reason. */
#define OUTSIDE_LISTED 16
static json_t *outside_policy_json(const struct cc_tn *t)
{
	json_t *list = json_array();
	size_t n = 0;

	for (size_t i = 0; list && i < t->nm; i++) {
		const struct member *m = t->m[i];
		const char *why;

		if (m->cls < 0)
			continue;
		why = violation_why(m, outside(t, m));
		if (!why || n++ >= OUTSIDE_LISTED)
			continue;
		json_array_append_new(list, json_pack("{s:s,s:s*,s:s,s:s}", "node", m->node, "port",
						      m->host ? NULL : m->port, "class", LBL(m->cls), "why", why));
	}
	return json_pack("{s:I,s:o}", "members", (json_int_t)n, "first", list ? list : json_array());
}

/* The members inside the policy whose setting of a knob is not their class's (an operator's own,
 * or one a step cut short left): a step moves the members at the class's setting only, so these
 * keep theirs, and the class's setting (majority(): the value more than half the class has, or
 * the vote's pick) does not show them.  How many members and knobs, and the first
 * SET_APART_LISTED knobs with their value and the class's.  A knob a step of the
 * class moves now is left out: its canary differs by design; not while the step waits for an
 * operator (nothing moved yet), who deciding on it sees which members it leaves be. */
#define SET_APART_LISTED 16
static json_t *set_apart_json(const struct cc_tn *t)
{
	double cv[CC_TN_NCLASSES][CC_TN_NKNOBS];
	json_t *list = json_array();
	size_t n = 0, listed = 0;

	for (int c = 0; c < CC_TN_NCLASSES; c++)
		for (int k = 0; k < CC_TN_NKNOBS; k++)
			cv[c][k] = NAN;
	for (size_t i = 0; list && i < t->nm; i++) {
		const struct member *m = t->m[i];
		int lo = m->host ? CC_TN_CNP_GAP : CC_TN_KMIN, hi = m->host ? CC_TN_NKNOBS : CC_TN_PMAX + 1;
		bool apart = false;

		if (m->cls < 0 || outside(t, m))
			continue;
		for (int k = lo; k < hi; k++) {
			const struct step *st = &t->steps_of[m->cls];
			double v = member_value(m, (enum cc_tn_knob)k);

			if (st->st != ST_IDLE && st->st != ST_WAIT && st->knob == (enum cc_tn_knob)k)
				continue;
			if (isnan(cv[m->cls][k]))
				cv[m->cls][k] = majority(t, (enum cc_tn_class)m->cls, (enum cc_tn_knob)k);
			if (isnan(cv[m->cls][k]) || v == cv[m->cls][k])
				continue;
			apart = true;
			if (listed++ < SET_APART_LISTED)
				json_array_append_new(list, json_pack("{s:s,s:s*,s:s,s:s,s:f,s:f}", "node", m->node,
								      "port", m->host ? NULL : m->port, "class",
								      LBL(m->cls), "knob", knob_names[k], "value", v,
								      "class_value", cv[m->cls][k]));
		}
		n += apart;
	}
	return json_pack("{s:I,s:I,s:o}", "members", (json_int_t)n, "knobs", (json_int_t)listed, "first",
			 list ? list : json_array());
}

json_t *cc_tn_json(const struct cc_tn *t)
{
	json_t *classes = json_object(), *o;
	struct cc_tn_dcqcn d;

	for (int c = 0; classes && c < CC_TN_NSWITCH_CLASSES; c++) {
		struct cc_tn_ecn e;

		if (!class_present(t, (enum cc_tn_class)c))
			continue;
		cc_tn_class_ecn(t, (enum cc_tn_class)c, &e);
		json_object_set_new(classes, class_names[c],
				    json_pack("{s:I,s:I,s:f}", "kmin_bytes", (json_int_t)e.kmin_bytes, "kmax_bytes",
					      (json_int_t)e.kmax_bytes, "pmax", e.pmax));
	}
	for (int c = CC_TN_HOSTS; classes && c < CC_TN_NCLASSES; c++) {
		if (!class_present(t, (enum cc_tn_class)c))
			continue;
		cc_tn_class_dcqcn(t, (enum cc_tn_class)c, &d);
		json_object_set_new(classes, LBL(c),
				    json_pack("{s:f,s:f,s:f,s:f,s:I,s:I}", "min_time_between_cnps",
					      d.min_time_between_cnps_us, "rpg_time_reset", d.rpg_time_reset_us,
					      "rpg_ai_rate", d.rpg_ai_rate_mbps, "rpg_hai_rate", d.rpg_hai_rate_mbps,
					      "rpg_byte_reset", (json_int_t)d.rpg_byte_reset, "dce_tcp_g",
					      (json_int_t)d.dce_tcp_g));
	}
	o = json_pack("{s:s,s:I,s:I,s:I,s:o,s:o}", "mode", mode_names[t->pol.mode], "intervals",
		      (json_int_t)t->interval, "steps", (json_int_t)t->steps, "rolled_back",
		      (json_int_t)t->rolled_back, "signals", t->nhist ? sig_json(t, &t->hist[0]) : json_object(),
		      "settings", classes ? classes : json_object());
	if (o) {
		json_t *steps = json_array(), *empty = json_array();
		bool busy = false;

		for (int c = 0; c < CC_TN_NCLASSES; c++) {
			const struct step *k = &t->steps_of[c];

			if (k->st == ST_IDLE)
				continue;
			busy = true;
			/* proposal: its latest, the one an operator applies or rejects while it waits */
			json_array_append_new(steps, json_pack("{s:I,s:s,s:s,s:s,s:f,s:f,s:b,s:o?}", "id",
							       (json_int_t)k->step, "state", state_names[k->st], "class",
							       step_label(t, k), "knob", knob_names[k->knob], "from",
							       k->from, "to", k->to, "forced", k->forced, "proposal",
							       k->cur ? json_integer((json_int_t)k->cur->id) : NULL));
		}
		json_object_set_new(o, "state", json_string(busy ? "stepping" : "idle"));
		/* no harder step during a fault no congestion control cures */
		if (cc_tn_harder_held(t)) /* (off: no step at all) */
			json_object_set_new(o, "harder_held_for", json_string(t->fault));
		/* host classes set but not in force until no step of one is out */
		json_object_set_new(o, "host_classes_pending", json_boolean(classes_pending(t)));
		/* those in force whose pattern matches no host the tuner knows (a typo, or hosts not
		 * there yet): they step nothing */
		for (unsigned h = 0; t->nm && h < t->live.nhost_classes && h < CC_TN_MAX_HOST_CLASSES; h++) {
			bool any = false;

			for (size_t i = 0; i < t->nm && !any; i++)
				any = t->m[i]->host && t->m[i]->cls == (int)(CC_TN_HOST_CLASS0 + h);
			if (!any)
				json_array_append_new(empty, json_pack("{s:s,s:s}", "name", t->live.host_classes[h].name,
								       "hosts", t->live.host_classes[h].hosts));
		}
		json_object_set_new(o, "empty_host_classes", empty);
		json_object_set_new(o, "steps_in_progress", steps);
		json_object_set_new(o, "outside_policy", outside_policy_json(t));
		json_object_set_new(o, "set_apart", set_apart_json(t));
		/* why a move the signals call for is not made */
		json_object_set_new(o, "holds", holds_json(t, false));
		json_object_set_new(o, "relax_to", relax_json(t, false));
		json_object_set_new(o, "quiet_intervals",
				    json_integer((json_int_t)(t->interval - t->paused_at)));
	}
	return o;
}
