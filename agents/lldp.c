/* Neighbours from lldpd: see lldp.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agents/lldp.h"
#include "lib/strutil.h"

/* json0 wraps every value in a one-element array of objects: x[0].key[0].value */
static const char *value_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(o, key), 0), "value"));
}

int lldp_parse_json0(const char *text, size_t len, struct lldp_neighbor **ret, size_t *ret_n)
{
	json_t *doc = json_loadb(text, len, 0, NULL), *ifs, *it;
	struct lldp_neighbor *v = NULL;
	size_t n = 0, i;

	*ret = NULL;
	*ret_n = 0;
	if (!json_is_object(doc) || !json_is_array(json_object_get(doc, "lldp"))) {
		json_decref(doc);
		return -EBADMSG;
	}
	ifs = json_object_get(json_array_get(json_object_get(doc, "lldp"), 0), "interface");
	v = calloc(json_array_size(ifs) + 1, sizeof(*v));
	if (!v) {
		json_decref(doc);
		return -ENOMEM;
	}
	json_array_foreach(ifs, i, it) {
		json_t *chassis = json_array_get(json_object_get(it, "chassis"), 0);
		json_t *port = json_array_get(json_object_get(it, "port"), 0);
		json_t *id = json_array_get(json_object_get(port, "id"), 0);
		const char *name = json_string_value(json_object_get(it, "name"));
		const char *sys = value_of(chassis, "name");
		const char *idtype = json_string_value(json_object_get(id, "type"));
		const char *idval = json_string_value(json_object_get(id, "value"));
		const char *descr = value_of(port, "descr");
		const char *p = idval && idtype && (!strcmp(idtype, "ifname") || !strcmp(idtype, "local"))
					? idval
					: descr ? descr : idval;

		if (!name || !sys || !p)
			continue; /* a neighbour without a system name cannot be matched to an agent */
		str_copy(v[n].ifname, sizeof(v[n].ifname), name);
		str_copy(v[n].system, sizeof(v[n].system), sys);
		str_copy(v[n].port, sizeof(v[n].port), p);
		n++;
	}
	json_decref(doc);
	*ret = v;
	*ret_n = n;
	return 0;
}

int lldp_neighbors(const char *root, struct lldp_neighbor **ret, size_t *ret_n)
{
	char path[4200], *text = NULL;
	size_t len = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	if (root && *root && strcmp(root, "/")) {
		if (str_fmt(path, sizeof(path), "%s/lldp/neighbors.json0", root) < 0)
			return -ENAMETOOLONG;
		text = str_slurp(path, &len);
		if (!text)
			return 0; /* recorded without lldpd */
	} else {
		FILE *f;

		if (access("/usr/sbin/lldpcli", X_OK) != 0 && access("/usr/bin/lldpcli", X_OK) != 0)
			return 0;
		f = popen("lldpcli -f json0 show neighbors 2>/dev/null", "re");
		if (!f)
			return 0;
		{
			FILE *m = open_memstream(&text, &len);
			char chunk[4096];
			size_t k;

			if (!m) {
				pclose(f);
				return -ENOMEM;
			}
			while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
				fwrite(chunk, 1, k, m);
			fclose(m);
		}
		if (pclose(f) != 0) { /* lldpd not running */
			free(text);
			return 0;
		}
	}
	r = lldp_parse_json0(text, len, ret, ret_n);
	free(text);
	return r;
}
