/* Backend registry, default slots and inventory helpers: see backend.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/backend.h"
#include "agents/linux.h"
#include "agents/sim.h"
#include "agents/sonic.h"
#include "lib/jsonutil.h"

static int stub_open(struct backend *b, struct rf_err *e)
{
	(void)b;
	(void)e;
	return 0;
}

static void stub_close(struct backend *b)
{
	(void)b;
}

static int stub_default_id(const void *settings, char id[65], struct rf_err *e)
{
	(void)settings;
	(void)id;
	(void)e;
	return -ENOENT;
}

static const char *stub_host_root(const void *settings)
{
	(void)settings;
	return NULL;
}

static int stub_inventory(struct backend *b, struct agent_inventory *inv, json_t *errors)
{
	(void)b;
	(void)inv;
	(void)errors;
	return -EOPNOTSUPP;
}

static int stub_collect(struct backend *b, const struct agent_inventory *inv, json_t *samples,
			json_t *errors)
{
	(void)b;
	(void)inv;
	(void)samples;
	(void)errors;
	return -EOPNOTSUPP;
}

static int stub_read_config(struct backend *b, json_t **ret)
{
	(void)b;
	(void)ret;
	return -EOPNOTSUPP;
}

static int stub_apply(struct backend *b, json_t *command, json_t **ret_outcome)
{
	(void)b;
	(void)command;
	(void)ret_outcome;
	return -EOPNOTSUPP;
}

static int stub_is_switch(struct backend *b)
{
	(void)b;
	return -EOPNOTSUPP;
}

static int stub_probe_endpoint(struct backend *b, const char **ret_endpoint)
{
	(void)b;
	(void)ret_endpoint;
	return -EOPNOTSUPP;
}

static int stub_qps(struct backend *b, json_t **ret, json_t *errors)
{
	(void)b;
	(void)ret;
	(void)errors;
	return -EOPNOTSUPP;
}

static int stub_probe_round(struct backend *b, json_t *plan, json_t **ret_results)
{
	(void)b;
	(void)plan;
	(void)ret_results;
	return -EOPNOTSUPP;
}

/* --- the backends of this build ----------------------------------------------------------------
 * A backend is added in both tables, at the same index: its ops, and its settings' keys. */

const struct backend_ops *const backend_list[] = { &backend_linux_ops, &backend_sim_ops,
						    &backend_sonic_ops, NULL };

#define NBACKENDS (ARRAY_SIZE(backend_list) - 1)
_Static_assert(NBACKENDS <= BACKENDS_MAX, "raise BACKENDS_MAX");

const struct conf_opt backend_conf_opts[] = {
	CONF_GROUP_OF("linux", backend_linux_opts, struct linux_settings, struct backend_settings, of[0]),
	CONF_GROUP_OF("sim", backend_sim_opts, struct sim_settings, struct backend_settings, of[1]),
	CONF_GROUP_OF("sonic", backend_sonic_opts, struct sonic_settings, struct backend_settings, of[2]),
	CONF_OPT_END,
};

_Static_assert(ARRAY_SIZE(backend_conf_opts) == ARRAY_SIZE(backend_list),
	       "every backend has its settings in backend_conf_opts");

const struct backend_ops *backend_find(const char *name)
{
	for (size_t i = 0; name && backend_list[i]; i++)
		if (!strcmp(backend_list[i]->name, name))
			return backend_list[i];
	return NULL;
}

const char *backend_names(char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0, n = 0; backend_list[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", backend_list[i]->name);
	return buf;
}

int backend_default_id(const char *name, const void *settings, char id[65], struct rf_err *e)
{
	const struct backend_ops *o = backend_find(name);

	return (o && o->default_id ? o->default_id : stub_default_id)(settings, id, e);
}

const char *backend_host_root(const char *name, const void *settings)
{
	const struct backend_ops *o = backend_find(name);

	return (o && o->host_root ? o->host_root : stub_host_root)(settings);
}

const void *backend_settings_of(const struct backend_settings *bs, const char *name)
{
	for (size_t i = 0; bs && i < NBACKENDS; i++)
		if (!strcmp(backend_list[i]->name, name) && !strcmp(backend_conf_opts[i].name, name))
			return bs->of[i];
	return NULL;
}

int backend_new(const char *name, const struct backend_env *env, struct backend **ret,
		struct rf_err *e)
{
	const struct backend_ops *found = backend_find(name);
	struct backend_ops *ops;
	struct backend *b;
	int r;

	if (!found) {
		char names[128];

		return rf_err_set(e, -ENOENT, "UNKNOWN_BACKEND", "agent.backend",
				  "no backend '%s' (this build has: %s)", name ? name : "",
				  backend_names(names, sizeof(names)));
	}
	b = calloc(1, sizeof(*b));
	ops = calloc(1, sizeof(*ops));
	if (!b || !ops) {
		free(b);
		free(ops);
		return -ENOMEM;
	}
	*ops = *found;
#define DEFAULT(slot)                                                                              \
	do {                                                                                       \
		if (!ops->slot)                                                                    \
			ops->slot = stub_##slot;                                                   \
	} while (0)
	DEFAULT(default_id);
	DEFAULT(host_root);
	DEFAULT(open);
	DEFAULT(close);
	DEFAULT(inventory);
	DEFAULT(collect);
	DEFAULT(read_config);
	DEFAULT(apply);
	DEFAULT(is_switch);
	DEFAULT(probe_endpoint);
	DEFAULT(probe_round);
	DEFAULT(qps);
#undef DEFAULT
	b->ops = ops;
	b->env = *env;
	r = ops->open(b, e);
	if (r < 0) {
		ops->close(b); /* open may have left half of its state */
		free(ops);
		free(b);
		return r;
	}
	*ret = b;
	return 0;
}

void backend_free(struct backend *b)
{
	if (!b)
		return;
	b->ops->close(b);
	free((void *)b->ops);
	free(b);
}

void inventory_clear(struct agent_inventory *inv)
{
	for (size_t i = 0; i < inv->ndevs; i++)
		free(inv->devs[i].ports);
	free(inv->devs);
	free(inv->absent);
	memset(inv, 0, sizeof(*inv));
}

struct agent_device *inventory_add_device(struct agent_inventory *inv)
{
	struct agent_device *n = realloc(inv->devs, (inv->ndevs + 1) * sizeof(*n));

	if (!n)
		return NULL;
	inv->devs = n;
	memset(&n[inv->ndevs], 0, sizeof(*n));
	return &n[inv->ndevs++];
}

struct agent_port *inventory_add_port(struct agent_device *d)
{
	struct agent_port *n = realloc(d->ports, (d->nports + 1) * sizeof(*n));

	if (!n)
		return NULL;
	d->ports = n;
	memset(&n[d->nports], 0, sizeof(*n));
	n[d->nports].speed_mbps = -1;
	n[d->nports].mtu = -1;
	snprintf(n[d->nports].state, sizeof(n->state), "unknown");
	snprintf(n[d->nports].link_layer, sizeof(n->link_layer), "unknown");
	return &n[d->nports++];
}

int inventory_add_absent(struct agent_inventory *inv, const char *name)
{
	char(*n)[64] = realloc(inv->absent, (inv->nabsent + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	inv->absent = n;
	snprintf(n[inv->nabsent++], 64, "%s", name);
	return 0;
}

#define MAX_ERRORS 64

void collect_error(json_t *errors, const char *code, const char *where, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	size_t i;
	json_t *x;

	if (!errors || json_array_size(errors) >= MAX_ERRORS)
		return;
	json_array_foreach(errors, i, x) {
		if (strcmp(json_string_value(json_object_get(x, "code")), code) == 0 &&
		    where && strcmp(json_string_value(json_object_get(x, "where")) ?: "", where) == 0)
			return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the message and where quote what was read, which need not be UTF-8 */
	x = json_pack("{s:s,s:o}", "code", code, "message", js_string_lossy(msg[0] ? msg : code));
	if (x && where) {
		char w[256];

		snprintf(w, sizeof(w), "%s", where);
		js_set(x, "where", js_string_lossy(w));
	}
	json_array_append_new(errors, x);
}

json_t *config_entry(json_t *list, const char *port, json_int_t queue)
{
	json_t *x;
	size_t i;

	json_array_foreach(list, i, x)
		if (!strcmp(json_string_value(json_object_get(x, "port")) ?: "", port) &&
		    (queue < 0 || json_integer_value(json_object_get(x, "queue")) == queue))
			return x;
	return NULL;
}
