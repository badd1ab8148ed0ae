/* Counter registry: loading and lookups.  See registry.h and schemas/counters.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/registry.h"

struct reg_entry {
	char *key; /* "group\x1f" "driver\x1f" "name" */
	struct reg_source src;
};

struct reg {
	json_t *doc; /* owns every string the counters point to */
	struct reg_counter *counters;
	size_t n;
	struct hmap by_name;   /* name -> struct reg_counter */
	struct hmap by_source; /* key -> struct reg_entry */
	struct reg_entry **entries;
	size_t nentries, capentries;
	char **groups;
	size_t ngroups;
};

static const char *const scope_names[] = { "port", "port_prio", "queue", "qp", NULL };
static const char *const kind_names[] = { "counter", "gauge", NULL };
static const char *const wrap_names[] = { "wrap", "saturate", NULL };

const char *reg_scope_name(enum reg_scope s)
{
	return scope_names[s];
}

const char *reg_kind_name(enum reg_kind k)
{
	return kind_names[k];
}

void reg_free(struct reg *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nentries; i++) {
		free(r->entries[i]->key);
		free(r->entries[i]);
	}
	for (size_t i = 0; i < r->ngroups; i++)
		free(r->groups[i]);
	free(r->groups);
	free(r->entries);
	hmap_fini(&r->by_name);
	hmap_fini(&r->by_source);
	free(r->counters);
	json_decref(r->doc);
	free(r);
}

static int add_group(struct reg *r, const char *group)
{
	char **n;

	for (size_t i = 0; i < r->ngroups; i++)
		if (strcmp(r->groups[i], group) == 0)
			return 0;
	n = realloc(r->groups, (r->ngroups + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	r->groups = n;
	r->groups[r->ngroups] = strdup(group);
	if (!r->groups[r->ngroups])
		return -ENOMEM;
	r->ngroups++;
	return 0;
}

static int add_entry(struct reg *r, const char *group, const char *driver, const char *name,
		     const struct reg_source *src, const struct js_path *p, struct rf_err *e)
{
	struct reg_entry *ent;
	char key[256];
	int n = snprintf(key, sizeof(key), "%s\x1f%s\x1f%s", group, driver, name);

	if (n < 0 || (size_t)n >= sizeof(key))
		return js_fail(e, p, "name", "source name is too long");
	if (hmap_get(&r->by_source, key))
		return js_fail(e, p, "name",
			       "source '%s' of group '%s' (driver %s) is mapped twice", name, group,
			       driver);
	if (r->nentries == r->capentries) {
		size_t nc = r->capentries ? r->capentries * 2 : 128;
		struct reg_entry **ne = realloc(r->entries, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		r->entries = ne;
		r->capentries = nc;
	}
	ent = calloc(1, sizeof(*ent));
	if (!ent)
		return -ENOMEM;
	ent->key = strdup(key);
	if (!ent->key) {
		free(ent);
		return -ENOMEM;
	}
	ent->src = *src;
	r->entries[r->nentries++] = ent;
	if (hmap_put(&r->by_source, ent->key, ent, NULL) < 0)
		return -ENOMEM;
	return add_group(r, group);
}

static int load_source(struct reg *r, struct reg_counter *c, json_t *js, unsigned rank,
		       struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "group", "name", "driver", "scale", "width",
					    "wrap", "note", NULL };
	const char *group, *name, *driver = "*";
	int64_t scale = 1, width = c->width;
	int wrap = REG_WRAP;
	struct reg_source src;
	const char *pct;
	int r2;

	if (!json_is_object(js))
		return js_fail(e, p, NULL, "a source must be an object");
	if ((r2 = js_check_keys(js, keys, p, e)) < 0 ||
	    (r2 = js_req_str(js, "group", 32, true, p, &group, e)) < 0 ||
	    (r2 = js_req_str(js, "name", 64, false, p, &name, e)) < 0 ||
	    (r2 = js_opt_str(js, "driver", 32, true, p, &driver, e)) < 0 ||
	    (r2 = js_opt_int(js, "scale", 1, 1 << 20, p, &scale, e)) < 0 ||
	    (r2 = js_opt_int(js, "width", 1, 64, p, &width, e)) < 0)
		return r2;
	if (json_object_get(js, "wrap") && (r2 = js_req_enum(js, "wrap", wrap_names, p, &wrap, e)) < 0)
		return r2;
	if (rank > 255)
		return js_fail(e, p, NULL, "too many sources");
	if (c->kind == REG_KIND_GAUGE && scale != 1)
		return js_fail(e, p, "scale", "sources of gauges cannot be scaled");
	src = (struct reg_source){ .counter = c, .prio = REG_NO_PRIO, .width = (uint8_t)width,
				   .wrap = (uint8_t)wrap, .rank = (uint8_t)rank,
				   .scale = (uint32_t)scale };
	pct = strstr(name, "%d");
	if ((pct != NULL) != (c->scope == REG_SCOPE_PORT_PRIO))
		return js_fail(e, p, "name",
			       "'%%d' (the priority) must appear exactly in sources of per-priority "
			       "counters");
	if (!pct)
		return add_entry(r, group, driver, name, &src, p, e);
	if (strstr(pct + 2, "%"))
		return js_fail(e, p, "name", "only one '%%d' is allowed");
	for (unsigned prio = 0; prio < REG_MAX_PRIO; prio++) {
		char expanded[96];

		snprintf(expanded, sizeof(expanded), "%.*s%u%s", (int)(pct - name), name, prio,
			 pct + 2);
		src.prio = (uint8_t)prio;
		if ((r2 = add_entry(r, group, driver, expanded, &src, p, e)) < 0)
			return r2;
	}
	return 0;
}

static int load_counter(struct reg *r, struct reg_counter *c, json_t *jc, struct js_path *p,
			struct rf_err *e)
{
	static const char *const keys[] = { "name", "scope", "unit", "kind", "width",
					    "help", "sources", NULL };
	int64_t width = 64;
	int scope, kind, r2;
	json_t *sources, *js;
	size_t i;

	if (!json_is_object(jc))
		return js_fail(e, p, NULL, "a counter must be an object");
	if ((r2 = js_check_keys(jc, keys, p, e)) < 0 ||
	    (r2 = js_req_str(jc, "name", 64, true, p, &c->name, e)) < 0 ||
	    (r2 = js_req_enum(jc, "scope", scope_names, p, &scope, e)) < 0 ||
	    (r2 = js_req_str(jc, "unit", 32, true, p, &c->unit, e)) < 0 ||
	    (r2 = js_req_enum(jc, "kind", kind_names, p, &kind, e)) < 0 ||
	    (r2 = js_opt_int(jc, "width", 1, 64, p, &width, e)) < 0 ||
	    (r2 = js_req_str(jc, "help", 1024, false, p, &c->help, e)) < 0 ||
	    (r2 = js_req_arr(jc, "sources", 64, p, &sources, e)) < 0)
		return r2;
	for (const char *s = c->name; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return js_fail(e, p, "name",
				       "'%s': counter names use lower-case letters, digits and '_'",
				       c->name);
	if (hmap_get(&r->by_name, c->name))
		return js_fail(e, p, "name", "counter '%s' is defined twice", c->name);
	c->scope = scope;
	c->kind = kind;
	c->width = (uint8_t)width;
	c->metric_scale = 1.0;
	snprintf(c->metric, sizeof(c->metric), "%s", c->name);
	if (strcmp(c->unit, "microseconds") == 0) {
		size_t n = strlen(c->name);

		if (n < 4 || strcmp(c->name + n - 3, "_us") != 0)
			return js_fail(e, p, "name",
				       "'%s' is in microseconds, so its name must end in _us", c->name);
		snprintf(c->metric, sizeof(c->metric), "%.*s_seconds", (int)(n - 3), c->name);
		c->metric_scale = 1e-6;
	}
	if (hmap_put(&r->by_name, c->name, c, NULL) < 0)
		return -ENOMEM;
	json_array_foreach(sources, i, js) {
		size_t a = js_path_push_key(p, "sources");

		js_path_push_idx(p, i);
		r2 = load_source(r, c, js, (unsigned)i, p, e);
		js_path_pop(p, a);
		if (r2 < 0)
			return r2;
	}
	return 0;
}

int reg_load(const char *text, size_t len, const char *origin, struct reg **ret,
	     struct rf_err *e)
{
	struct reg *r = calloc(1, sizeof(*r));
	json_t *counters, *jc;
	struct js_path p;
	int64_t schema;
	size_t i;
	int r2;

	if (!r)
		return -ENOMEM;
	hmap_init(&r->by_name);
	hmap_init(&r->by_source);
	r->doc = js_parse(text, len, e);
	if (!r->doc) {
		r2 = -EINVAL;
		goto fail;
	}
	js_path_init(&p);
	if (!json_is_object(r->doc)) {
		r2 = js_fail(e, &p, NULL, "the registry must be a JSON object");
		goto fail;
	}
	if ((r2 = js_req_int(r->doc, "schema", 1, 1, &p, &schema, e)) < 0 ||
	    (r2 = js_req_arr(r->doc, "counters", 4096, &p, &counters, e)) < 0)
		goto fail;
	r->n = json_array_size(counters);
	r->counters = calloc(r->n ? r->n : 1, sizeof(*r->counters));
	if (!r->counters) {
		r2 = -ENOMEM;
		goto fail;
	}
	json_array_foreach(counters, i, jc) {
		size_t a = js_path_push_key(&p, "counters");

		js_path_push_idx(&p, i);
		r->counters[i].id = (uint16_t)i;
		r2 = load_counter(r, &r->counters[i], jc, &p, e);
		js_path_pop(&p, a);
		if (r2 < 0)
			goto fail;
	}
	*ret = r;
	return 0;
fail:
	if (e && e->err && origin)
		rf_err_prefix_where(e, origin);
	reg_free(r);
	return r2;
}

int reg_load_file(const char *path, struct reg **ret, struct rf_err *e)
{
	FILE *f = fopen(path, "re");
	char *text;
	long len;
	int r;

	if (!f)
		return rf_err_set(e, -errno, "REGISTRY_UNREADABLE", path, "cannot open: %s",
				  strerror(errno));
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
	    len > (64L << 20)) {
		fclose(f);
		return rf_err_set(e, -EINVAL, "REGISTRY_UNREADABLE", path, "unreadable or too large");
	}
	text = malloc((size_t)len + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	if (fread(text, 1, (size_t)len, f) != (size_t)len) {
		free(text);
		fclose(f);
		return rf_err_set(e, -EIO, "REGISTRY_UNREADABLE", path, "read error");
	}
	fclose(f);
	r = reg_load(text, (size_t)len, path, ret, e);
	free(text);
	return r;
}

int reg_load_builtin(struct reg **ret, struct rf_err *e)
{
	return reg_load(reg_builtin_json, (size_t)(reg_builtin_json_end - reg_builtin_json),
			"builtin:counters.json", ret, e);
}

size_t reg_size(const struct reg *r)
{
	return r->n;
}

const struct reg_counter *reg_counter(const struct reg *r, unsigned id)
{
	return id < r->n ? &r->counters[id] : NULL;
}

const struct reg_counter *reg_find(const struct reg *r, const char *name)
{
	return hmap_get(&r->by_name, name);
}

const struct reg_source *reg_lookup(const struct reg *r, const char *group, const char *driver,
				    const char *name)
{
	struct reg_entry *ent = NULL;
	char key[256];
	int n;

	if (driver && *driver) {
		n = snprintf(key, sizeof(key), "%s\x1f%s\x1f%s", group, driver, name);
		if (n > 0 && (size_t)n < sizeof(key))
			ent = hmap_get(&r->by_source, key);
	}
	if (!ent) {
		n = snprintf(key, sizeof(key), "%s\x1f*\x1f%s", group, name);
		if (n > 0 && (size_t)n < sizeof(key))
			ent = hmap_get(&r->by_source, key);
	}
	return ent ? &ent->src : NULL;
}

bool reg_group_known(const struct reg *r, const char *group)
{
	for (size_t i = 0; i < r->ngroups; i++)
		if (strcmp(r->groups[i], group) == 0)
			return true;
	return false;
}

void *reg_document(const struct reg *r)
{
	return r->doc;
}
