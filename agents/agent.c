/* rocefab-agent core: see agent.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/backend.h"
#include "agents/sender.h"
#include "agents/spool.h"
#include "lib/fileutil.h"
#include "lib/hash.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/lane.h"
#include "lib/ratelimit.h"
#include "lib/tokenfile.h"
#include "lib/registry.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "lib/tlscheck.h"
#include "lib/validate.h"

static const char *const roles[] = { "host", "switch", NULL };

#define S struct agent_settings
const struct conf_opt agent_opts[] = {
	CONF_OPT("agent.log_level", CONF_ENUM, S, log_level_idx, "info",
		 "error, warning, notice, info or debug", .choices = log_level_choices),
	CONF_OPT("agent.log_target", CONF_ENUM, S, log_target, "auto",
		 "auto (journal under systemd), stderr or journal", .choices = log_target_choices),
	CONF_OPT("agent.id", CONF_STRING, S, id, "", "agent id shown by rocefab; empty: the host name"),
	CONF_OPT("agent.role", CONF_ENUM, S, role, "host", "host or switch", .choices = roles),
	CONF_OPT("agent.server", CONF_STRING, S, server, "http://127.0.0.1:9750",
		 "URL of rocefabd"),
	CONF_OPT("agent.token_file", CONF_STRING, S, token_file, "/etc/rocefab/agent.token",
		 "file holding the agent's bearer token (role agent)"),
	CONF_OPT("agent.interval", CONF_DURATION, S, interval, "1s", "time between reports",
		 .min = 10 * NSEC_PER_MSEC, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("agent.pfc_interval", CONF_DURATION, S, pfc_interval, "200ms",
		 "time between fast PFC reports (the lossless priorities' pause counters, states, "
		 "queue depths and traffic only) for rocefabd's deadlock and storm detector; 0 "
		 "sends none", .min = 0, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("agent.jitter", CONF_INT, S, jitter_pct, "10",
		 "random delay of each report, in percent of the interval", .min = 0, .max = 50),
	CONF_OPT("agent.timeout", CONF_DURATION, S, timeout, "5s", "HTTP timeout per report",
		 .min = 100 * NSEC_PER_MSEC, .max = 300 * NSEC_PER_SEC),
	CONF_OPT("agent.ca_file", CONF_STRING, S, ca_file, "",
		 "CA certificates for an https server; empty: the system's"),
	CONF_OPT("agent.tls_cert", CONF_STRING, S, tls_cert, "",
		 "PEM client certificate naming this agent's id (subject CN or a DNS "
		 "subjectAltName), for a rocefabd with api.client_ca; empty: none"),
	CONF_OPT("agent.tls_key", CONF_STRING, S, tls_key, "",
		 "PEM private key of agent.tls_cert; empty: in agent.tls_cert's file"),
	CONF_OPT("agent.backend", CONF_STRING, S, backend, "linux",
		 "where counters come from: linux (this host), sim (a rocefab-sim device) or sonic (a "
		 "SONiC switch's redis)"),
	CONF_OPT("agent.spool_dir", CONF_STRING, S, spool_dir, "/var/lib/rocefab-agent/spool",
		 "where undelivered reports wait"),
	CONF_OPT("agent.spool_max", CONF_SIZE, S, spool_max, "64MiB",
		 "spool bound; the oldest reports are dropped (and counted) beyond it",
		 .min = 4096, .max = 1LL << 40),
	CONF_OPT("agent.spool_fsync", CONF_BOOL, S, spool_fsync, "false",
		 "fsync every spooled report (survives power loss)"),
	CONF_OPT("agent.registry", CONF_STRING, S, registry, "",
		 "counter registry JSON file; empty uses the built-in copy"),
	CONF_OPT("agent.all_counters", CONF_BOOL, S, all_counters, "false",
		 "also send counters the registry does not know"),
	/* each backend's own keys (linux.*, probe.*, sim.*) */
	CONF_GROUP_OF("backends", backend_conf_opts, struct backend_settings, S, backends),
	CONF_OPT_END,
};
#undef S


#define OUTBOX_MAX 4
#define RESULTS_MAX 64 /* command outcomes waiting to be acknowledged */
/* ... kept in the spool directory too, until acknowledged: an agent restarted between a
 * change it applied and the report that says so reports it still (rocefabd would have it in
 * doubt, or, were it sent again after its deadline, refused as timed out: applied all the
 * same).  {"agent": ID, "outcomes": [...]}: those of another id (agent.id changed) are not
 * reported as this one's. */
#define RESULTS_FILE "command-outcomes"
#define RESULTS_FILE_MAX (4u << 20)
#define SEEN_MAX 256   /* command ids already handled */
#define ANSWER_COMMANDS_MAX 64 /* of one answer (rocefabd sends 64 at most: ORDER BY id LIMIT 64) */
#define CONFIG_EVERY 30 /* reports between two copies of an unchanged configuration */
/* probe results per report (rocefabd's limit, schemas/agent-report.schema.json); a round with
 * more goes out over the next reports, up to PROBE_BACKLOG_MAX waiting */
#define PROBE_RESULTS_PER_REPORT 4096
#define PROBE_BACKLOG_MAX (16 * PROBE_RESULTS_PER_REPORT)

/* The fleet's two delivery queues: full reports (with their spools) and fast PFC reports. */
enum { Q_REPORTS, Q_PFC, NQUEUES };

struct result {
	json_t *doc;	   /* the outcome (command_results[] item) */
	int64_t first_seq; /* the first report that carried it; 0: none yet */
};

struct agent {
	char id[65];
	enum agent_role role;
	char backend_name[32];
	struct backend *backend;
	struct agent_inventory inv;
	char boot_id[37];
	char host_boot_id[65];
	char hostname[256];
	int64_t interval_ns, pfc_interval_ns;

	/* under blk: the backend, the sequence, command results and the configuration copy */
	pthread_mutex_t blk;
	int64_t seq;
	struct result results[RESULTS_MAX];
	unsigned nresults;
	bool results_unsaved; /* the last try to keep them failed (said once) */
	char seen[SEEN_MAX][65];
	unsigned seen_next;
	uint64_t cfg_hash;
	unsigned cfg_age;
	uint8_t lossless;    /* PFC priorities of any port, from the configuration (0: unknown) */
	int64_t pfc_seq;
	uint64_t applied, failed;
	/* pingmesh: the probe plan rocefabd gave (params of a probe_plan command) and its id */
	json_t *plan;
	char plan_id[65];
	json_t *probe_backlog; /* results of finished rounds not reported yet */
	uint64_t probe_results_dropped;
	/* the errors of the last report ("CODE where"), to log those that come and go */
	char **errs;
	unsigned nerrs;

	/* delivery, under the fleet's lock */
	struct fleet *fleet;
	struct spool *spool;
	char *outbox[OUTBOX_MAX];
	size_t outbox_len[OUTBOX_MAX];
	unsigned out_head, out_n;
	bool queued, busy, was_down;
	char down_code[sizeof(((struct rf_err *)0)->code)]; /* why, while was_down: its error's code */
	int64_t retry_at, backoff; /* monotonic ns; 0: not waiting */
	struct agent *next[NQUEUES]; /* in the fleet's queues */
	int64_t base_tick, next_tick;
	uint64_t built, delivered, rejected;
	/* the fast PFC lane: only the latest report waits; an undelivered one is dropped */
	char *pfc_data;
	size_t pfc_len;
	bool pfc_queued, pfc_busy, pfc_off;
	int64_t pfc_tick;
	uint64_t pfc_built, pfc_sent, pfc_dropped, pfc_bytes;
};

static void random_uuid(char out[37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = (uint64_t)tu_mono_ns() ^ ((uint64_t)getpid() << 32);

		memcpy(b, &t, 8);
		memcpy(b + 8, &t, 8);
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

/* The kernel's boot id: a change tells rocefabd that device counters restarted. */
static void read_host_boot_id(const char *root, char *out, size_t len)
{
	char path[4200], *text = NULL;
	size_t n;
	int r = -ENOENT;

	out[0] = '\0';
	if (!root)
		return;
	/* (file_read_at: a FIFO put in its place is refused, never waited on) */
	if (*root && strcmp(root, "/") != 0 &&
	    str_fmt(path, sizeof(path), "%s/proc/sys/kernel/random/boot_id", root) == 0)
		r = file_read_at(AT_FDCWD, path, 256, &text, &n);
	if (r < 0)
		r = file_read_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 256, &text, &n);
	if (r < 0)
		return;
	snprintf(out, len, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	for (char *c = out; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-')
			*c = '\0';
	if (!js_is_id(out, 64))
		out[0] = '\0'; /* not a boot id ("-"): none, rather than a report rocefabd refuses */
}

int agent_read_token(const char *path, char **ret, struct rf_err *e)
{
	struct rf_err w = { 0 };
	bool warned;
	int r = tokenfile_read(path, ret, &warned, &w, e);

	if (r == 0 && warned)
		log_msg(LOG_WARNING, "agent", w.code, "%s: %s", w.where, w.msg);
	return r;
}

static int check_id(const char *id, struct rf_err *e)
{
	for (const char *c = id; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
			return rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "agent.id",
					  "'%s': use letters, digits, '.', '_' and '-'", id);
	if (!id[0] || id[0] == '.' || id[0] == '-' || strlen(id) > 64)
		return rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "agent.id", "'%s' is not a valid id", id);
	return 0;
}

/* With blk held: the outcomes not acknowledged yet (new references). */
static json_t *results_list(const struct agent *a)
{
	json_t *list = json_array();

	for (unsigned i = 0; list && i < a->nresults; i++)
		json_array_append(list, a->results[i].doc);
	return list;
}

/* --- building reports ------------------------------------------------------------------------- */

/* rocefabd takes devices, ports, interfaces, drivers and neighbours by name: letters, digits,
 * '.', '_', '-' (report_parse).  A name that is none (a recorded tree, an interface name Linux
 * allows, a neighbour's system name with a space, a typo in linux.devices) would make rocefabd
 * refuse the whole report: instead a device or port so named is left out, and a netdev,
 * driver, neighbour or absent name dropped, each said in the report's errors.  So is a speed or
 * an MTU beyond what rocefabd takes (a garbled sysfs file). */
static bool bad_name(json_t *errors, const char *what, const char *name)
{
	if (js_is_id(name, 64))
		return false;
	collect_error(errors, "BAD_NAME", what, "'%s' is not a name rocefab takes (letters, digits, '.', '_', '-'): left out",
		      name);
	return true;
}

static void inventory_sanitize(struct agent_inventory *inv, json_t *errors)
{
	size_t nd = 0, na = 0;

	for (size_t i = 0; i < inv->ndevs; i++) {
		struct agent_device *d = &inv->devs[i];
		size_t np = 0;

		if (bad_name(errors, "device", d->name)) {
			free(d->ports);
			continue;
		}
		if (d->driver[0] && bad_name(errors, "driver", d->driver))
			d->driver[0] = '\0';
		/* free text read from files: shown to operators, so no control characters */
		str_make_printable(d->fw_version);
		str_make_printable(d->node_guid);
		for (size_t k = 0; k < d->nports; k++) {
			struct agent_port *p = &d->ports[k];

			if (bad_name(errors, "port", p->port))
				continue;
			if (p->netdev[0] && bad_name(errors, "netdev", p->netdev))
				p->netdev[0] = '\0';
			if (p->peer_system[0] && bad_name(errors, "neighbor", p->peer_system))
				p->peer_system[0] = p->peer_port[0] = '\0';
			str_make_printable(p->peer_port);
			if (p->speed_mbps > PORT_MAX_SPEED_MBPS || p->mtu > PORT_MAX_MTU) {
				collect_error(errors, "BAD_VALUE", p->netdev[0] ? p->netdev : d->name,
					      "a speed of %lld Mb/s or an MTU of %lld is not believable: left out",
					      (long long)p->speed_mbps, (long long)p->mtu);
				if (p->speed_mbps > PORT_MAX_SPEED_MBPS)
					p->speed_mbps = -1;
				if (p->mtu > PORT_MAX_MTU)
					p->mtu = -1;
			}
			d->ports[np++] = *p;
		}
		d->nports = np;
		inv->devs[nd++] = *d;
	}
	inv->ndevs = nd;
	for (size_t i = 0; i < inv->nabsent; i++)
		if (!bad_name(errors, "absent", inv->absent[i]))
			memmove(inv->absent[na++], inv->absent[i], sizeof(inv->absent[i]));
	inv->nabsent = na;
}

/* The entries of arr (samples, configuration) of a device or port whose name rocefab does not
 * take: inventory_sanitize left that port out (a SONiC alias such as "fortyGigE0/0"), and
 * rocefabd would refuse the whole report for one entry naming it. */
static void entries_sanitize(json_t *arr, json_t *errors)
{
	for (size_t i = json_array_size(arr); i-- > 0;) {
		json_t *e = json_array_get(arr, i);
		const char *dev = json_string_value(json_object_get(e, "device"));
		const char *port = json_string_value(json_object_get(e, "port"));

		if ((dev && bad_name(errors, "device", dev)) || (port && bad_name(errors, "port", port)))
			json_array_remove(arr, i);
	}
}

static json_t *inventory_json(const struct agent_inventory *inv)
{
	json_t *devs = json_array(), *doc;

	for (size_t i = 0; i < inv->ndevs; i++) {
		const struct agent_device *d = &inv->devs[i];
		json_t *ports = json_array();
		json_t *jd = json_pack("{s:s,s:s}", "name", d->name, "kind", d->kind);

		if (d->driver[0])
			json_object_set_new(jd, "driver", json_string(d->driver));
		if (d->fw_version[0])
			json_object_set_new(jd, "fw_version", json_string(d->fw_version));
		if (d->node_guid[0])
			json_object_set_new(jd, "node_guid", json_string(d->node_guid));
		for (size_t k = 0; k < d->nports; k++) {
			const struct agent_port *p = &d->ports[k];
			json_t *jp = json_pack("{s:s,s:s,s:s}", "port", p->port, "state", p->state,
					       "link_layer", p->link_layer[0] ? p->link_layer : "unknown");

			if (p->netdev[0])
				json_object_set_new(jp, "netdev", json_string(p->netdev));
			if (p->speed_mbps >= 0)
				json_object_set_new(jp, "speed_mbps", json_integer(p->speed_mbps));
			if (p->mtu >= 0)
				json_object_set_new(jp, "mtu", json_integer(p->mtu));
			if (p->peer_system[0] && p->peer_port[0])
				json_object_set_new(jp, "neighbor",
						    json_pack("{s:s,s:s}", "system", p->peer_system,
							      "port", p->peer_port));
			json_array_append_new(ports, jp);
		}
		json_object_set_new(jd, "ports", ports);
		json_array_append_new(devs, jd);
	}
	doc = json_pack("{s:o}", "devices", devs);
	if (inv->nabsent) {
		json_t *absent = json_array();

		for (size_t i = 0; i < inv->nabsent; i++)
			json_array_append_new(absent, json_string(inv->absent[i]));
		json_object_set_new(doc, "absent", absent);
	}
	return doc;
}

/* A finished round's results (taken) join those waiting; past PROBE_BACKLOG_MAX the oldest go,
 * counted and said once. */
static void probe_backlog_add(struct agent *a, json_t *results)
{
	size_t n, drop;

	if (!a->probe_backlog) {
		a->probe_backlog = results;
	} else {
		json_array_extend(a->probe_backlog, results);
		json_decref(results);
	}
	n = json_array_size(a->probe_backlog);
	if (n <= PROBE_BACKLOG_MAX)
		return;
	drop = n - PROBE_BACKLOG_MAX;
	if (!a->probe_results_dropped)
		log_warning("probe", "%s: more probe results than reports can carry; the oldest are dropped "
			    "(fewer ops, sizes, paths or targets per round would do)", a->id);
	a->probe_results_dropped += drop;
	{
		json_t *keep = json_array();

		for (size_t i = drop; i < n; i++)
			json_array_append(keep, json_array_get(a->probe_backlog, i));
		json_decref(a->probe_backlog);
		a->probe_backlog = keep;
	}
}

/* The results for this report: all that wait, or the oldest PROBE_RESULTS_PER_REPORT; NULL
 * when none wait. */
static json_t *probe_backlog_take(struct agent *a)
{
	size_t n = json_array_size(a->probe_backlog);
	json_t *out, *rest;

	if (!n)
		return NULL;
	if (n <= PROBE_RESULTS_PER_REPORT) {
		out = a->probe_backlog;
		a->probe_backlog = NULL;
		return out;
	}
	out = json_array();
	rest = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append(i < PROBE_RESULTS_PER_REPORT ? out : rest, json_array_get(a->probe_backlog, i));
	json_decref(a->probe_backlog);
	a->probe_backlog = rest;
	return out;
}

/* With blk held: the configuration, when it changed or has not been sent for a while. */
static json_t *config_for_report(struct agent *a, json_t *errors)
{
	json_t *cfg = NULL;
	char *text;
	uint64_t h;
	int r = a->backend->ops->read_config(a->backend, &cfg);

	if (r == -EOPNOTSUPP)
		return NULL;
	if (r < 0 || !cfg) {
		collect_error(errors, "CONFIG_UNREADABLE", NULL, "cannot read the configuration: %s",
			      strerror(-r));
		return NULL;
	}
	{
		/* the lossless priorities, for the fast PFC lane */
		json_t *pfc = json_object_get(cfg, "pfc"), *it;
		size_t i;
		unsigned m = 0;

		entries_sanitize(json_object_get(cfg, "dcqcn"), errors);
		entries_sanitize(json_object_get(cfg, "ecn"), errors);
		entries_sanitize(pfc, errors);

		json_array_foreach(pfc, i, it)
			m |= (unsigned)json_integer_value(json_object_get(it, "enable")) & 0xff;
		a->lossless = (uint8_t)m;
	}
	text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
	h = text ? hash_str64(text) : 0;
	free(text);
	if (h == a->cfg_hash && a->cfg_age < CONFIG_EVERY) {
		a->cfg_age++;
		json_decref(cfg);
		return NULL;
	}
	a->cfg_hash = h;
	a->cfg_age = 0;
	return cfg;
}

/* A value beyond the width the registry gives its source cannot come from the device (a
 * garbled file, a driver bug): rocefabd would refuse the whole report for it, so it is left
 * out with an error naming it, and the host's other counters still arrive. */
static void samples_sanitize(const struct agent *a, json_t *samples, json_t *errors)
{
	const struct reg *reg = a->backend->env.reg;
	size_t i;
	json_t *s;

	entries_sanitize(samples, errors);
	if (!reg)
		return;
	json_array_foreach(samples, i, s) {
		const char *group = json_string_value(json_object_get(s, "source"));
		const char *driver = json_string_value(json_object_get(s, "driver"));
		json_t *values = json_object_get(s, "values"), *v;
		const char *name;
		void *tmp;

		if (!group)
			continue;
		json_object_foreach_safe(values, tmp, name, v) {
			const struct reg_source *src = reg_lookup(reg, group, driver, name);
			json_int_t n = json_integer_value(v);

			if (!src || src->width >= 64 || !json_is_integer(v) || n < 0 ||
			    (uint64_t)n < (UINT64_C(1) << src->width))
				continue;
			collect_error(errors, "BAD_VALUE", name,
				      "%s counter %s read %lld, beyond its source's %u bits: left out",
				      group, name, (long long)n, src->width);
			json_object_del(values, name);
		}
	}
}

/* "CODE where" of an error of a report. */
static char *error_key(json_t *x)
{
	const char *where = json_string_value(json_object_get(x, "where"));
	char *k;

	if (asprintf(&k, "%s%s%s", json_string_value(json_object_get(x, "code")), where ? " " : "",
		     where ? where : "") < 0)
		return NULL;
	return k;
}

#define ERRORS_LOGGED 5 /* new (gone) errors logged a report; the rest counted */

/* The agent's own log says what went wrong in its collection (rocefabd has it in the report's
 * errors; on the host nothing did): an error when it first comes, a notice when it goes, not
 * each report. */
static void errors_log(struct agent *a, json_t *errors)
{
	size_t n = json_array_size(errors), i;
	char **now = n ? calloc(n, sizeof(*now)) : NULL;
	unsigned fresh = 0, gone = 0;
	json_t *x;

	if (n && !now)
		return; /* (the old set is kept: said again at the next report) */
	json_array_foreach(errors, i, x) {
		bool known = false;

		if (!(now[i] = error_key(x))) {
			while (i)
				free(now[--i]);
			free(now);
			return;
		}
		for (unsigned j = 0; j < a->nerrs && !known; j++)
			known = strcmp(a->errs[j], now[i]) == 0;
		if (!known && fresh++ < ERRORS_LOGGED)
			log_msg(LOG_WARNING, "agent", json_string_value(json_object_get(x, "code")), "%s: %s%s%s",
				a->id, json_string_value(json_object_get(x, "where")) ?: "",
				json_object_get(x, "where") ? ": " : "",
				json_string_value(json_object_get(x, "message")));
	}
	for (unsigned j = 0; j < a->nerrs; j++) {
		bool still = false;

		for (i = 0; i < n && !still; i++)
			still = strcmp(a->errs[j], now[i]) == 0;
		if (!still && gone++ < ERRORS_LOGGED)
			log_notice("agent", "%s: no longer: %s", a->id, a->errs[j]);
		free(a->errs[j]);
	}
	if (fresh > ERRORS_LOGGED || gone > ERRORS_LOGGED)
		log_notice("agent", "%s: and %u more new, %u more gone (the report's errors have them all: "
				    "rocefabctl hosts %s)", a->id, fresh > ERRORS_LOGGED ? fresh - ERRORS_LOGGED : 0,
			   gone > ERRORS_LOGGED ? gone - ERRORS_LOGGED : 0, a->id);
	free(a->errs);
	a->errs = now;
	a->nerrs = (unsigned)n;
}

/* The role the backend knows the device by, once it does (the simulator's device, once read);
 * else the role setting's.  Under blk. */
static void role_refresh(struct agent *a)
{
	int sw = a->backend->ops->is_switch(a->backend);

	if (sw >= 0)
		a->role = sw ? AGENT_SWITCH : AGENT_HOST;
}

int agent_build_report(struct agent *a, json_t **ret)
{
	json_t *samples = json_array(), *errors = json_array(), *agent, *doc, *cfg;
	const char *endpoint = NULL;
	int r;

	if (!samples || !errors) {
		json_decref(samples);
		json_decref(errors);
		return -ENOMEM;
	}
	pthread_mutex_lock(&a->blk);
	r = a->backend->ops->inventory(a->backend, &a->inv, errors);
	if (r < 0 && r != -EOPNOTSUPP && r != -EHOSTUNREACH)
		collect_error(errors, "INVENTORY_FAILED", NULL, "%s", strerror(-r));
	inventory_sanitize(&a->inv, errors);
	r = a->backend->ops->collect(a->backend, &a->inv, samples, errors);
	if (r < 0 && r != -EOPNOTSUPP && r != -EHOSTUNREACH)
		collect_error(errors, "COLLECT_FAILED", NULL, "%s", strerror(-r));
	samples_sanitize(a, samples, errors);
	cfg = config_for_report(a, errors);
	role_refresh(a);
	agent = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", a->id, "role",
			  a->role == AGENT_SWITCH ? "switch" : "host", "boot_id", a->boot_id,
			  "version", ROCEFAB_VERSION, "backend", a->backend_name);
	if (a->host_boot_id[0])
		json_object_set_new(agent, "host_boot_id", json_string(a->host_boot_id));
	if (a->hostname[0])
		json_object_set_new(agent, "hostname", json_string(a->hostname));
	doc = json_pack("{s:i,s:o,s:I,s:I,s:I,s:o,s:o}", "schema", REPORT_SCHEMA, "agent", agent, "seq",
			(json_int_t)++a->seq, "time_ns", (json_int_t)tu_now_ns(), "interval_ms",
			(json_int_t)(a->interval_ns / NSEC_PER_MSEC), "inventory",
			inventory_json(&a->inv), "samples", samples);
	if (!doc) {
		pthread_mutex_unlock(&a->blk);
		json_decref(errors);
		json_decref(cfg);
		return -ENOMEM;
	}
	if (cfg)
		json_object_set_new(doc, "config", cfg);
	if (a->role == AGENT_HOST) {
		json_t *qps = NULL;

		if (a->backend->ops->qps(a->backend, &qps, errors) == 0 && qps)
			json_object_set_new(doc, "qps", qps);
	}
	if (a->role == AGENT_HOST && a->backend->ops->probe_endpoint(a->backend, &endpoint) == 0) {
		/* advertise what plan we run (none yet: "") and where we answer probes, and report
		 * the last round */
		json_t *pr = json_pack("{s:s}", "plan", a->plan_id), *results = NULL;

		if (endpoint)
			json_object_set_new(pr, "endpoint", json_string(endpoint));

		if (a->plan && a->backend->ops->probe_round(a->backend, a->plan, &results) == 0 && results)
			probe_backlog_add(a, results);
		if ((results = probe_backlog_take(a)))
			json_object_set_new(pr, "results", results);
		json_object_set_new(doc, "probes", pr);
	}
	if (a->nresults) {
		for (unsigned i = 0; i < a->nresults; i++)
			if (!a->results[i].first_seq)
				a->results[i].first_seq = a->seq;
		json_object_set_new(doc, "command_results", results_list(a));
	}
	errors_log(a, errors);
	pthread_mutex_unlock(&a->blk);
	if (a->fleet && a->spool) {
		/* a snapshot, without the fleet's lock: a report or two off is fine */
		json_object_set_new(doc, "spool",
				    json_pack("{s:I,s:I}", "dropped_reports",
					      (json_int_t)spool_dropped(a->spool), "queued_reports",
					      (json_int_t)(spool_count(a->spool) + a->out_n)));
	}
	if (json_array_size(errors))
		json_object_set_new(doc, "errors", errors);
	else
		json_decref(errors);
	*ret = doc;
	return 0;
}

int agent_build_pfc_report(struct agent *a, json_t **ret)
{
	json_t *samples = json_array(), *errors = json_array(), *doc, *s;
	const struct reg *reg = a->backend->env.reg;
	size_t i;
	int r;

	if (!samples || !errors || !reg) {
		json_decref(samples);
		json_decref(errors);
		return samples && errors ? -EOPNOTSUPP : -ENOMEM;
	}
	pthread_mutex_lock(&a->blk);
	if (!a->inv.ndevs)
		a->backend->ops->inventory(a->backend, &a->inv, errors);
	r = a->backend->ops->collect(a->backend, &a->inv, samples, errors);
	if (r < 0) {
		pthread_mutex_unlock(&a->blk);
		json_decref(errors);
		json_decref(samples);
		return r;
	}
	samples_sanitize(a, samples, errors);
	json_decref(errors); /* the full reports carry the errors */
	/* (the lane's first reports may come before the first full one: a switch standing in for
	 * the simulator's was taken for a host, its ports labelled DEVICE:PORT, for good) */
	role_refresh(a);
	/* only the lane's counters, of the lossless priorities (all while they are unknown) */
	json_array_foreach(samples, i, s) {
		const char *group = json_string_value(json_object_get(s, "source"));
		const char *driver = json_string_value(json_object_get(s, "driver"));
		json_t *values = json_object_get(s, "values"), *v;
		const char *name;
		void *tmp;

		json_object_foreach_safe(values, tmp, name, v) {
			const struct reg_source *src = group ? reg_lookup(reg, group, driver, name) : NULL;

			if (!src || lane_field_of(src->counter->name, src->prio != REG_NO_PRIO) < 0 ||
			    (src->prio != REG_NO_PRIO && a->lossless && !(a->lossless & (1u << src->prio))))
				json_object_del(values, name);
		}
	}
	for (i = json_array_size(samples); i-- > 0;)
		if (!json_object_size(json_object_get(json_array_get(samples, i), "values")))
			json_array_remove(samples, i);
	doc = json_pack("{s:i,s:{s:s,s:s,s:s,s:s,s:s},s:I,s:I,s:I,s:o}", "schema", REPORT_SCHEMA, "agent", "id", a->id,
			"role", a->role == AGENT_SWITCH ? "switch" : "host", "boot_id", a->boot_id, "version",
			ROCEFAB_VERSION, "backend", a->backend_name, "seq", (json_int_t)++a->pfc_seq, "time_ns",
			(json_int_t)tu_now_ns(), "interval_ms", (json_int_t)(a->pfc_interval_ns / NSEC_PER_MSEC),
			"samples", samples);
	pthread_mutex_unlock(&a->blk);
	if (!doc)
		return -ENOMEM;
	*ret = doc;
	return 0;
}

/* --- commands ------------------------------------------------------------------------------------ */

/* With blk held. */
static bool seen(struct agent *a, const char *id)
{
	for (unsigned i = 0; i < SEEN_MAX; i++)
		if (a->seen[i][0] && !strcmp(a->seen[i], id))
			return true;
	return false;
}

/* With blk held: the outcomes not acknowledged yet to the spool directory (none: its file
 * removed).  A failure is said once; they are reported from memory all the same.  (A small
 * file, written only when a command came or an outcome was acknowledged.) */
static void results_save(struct agent *a)
{
	json_t *list;
	char *text = NULL;
	int r = -ENOMEM;

	if (!a->spool)
		return;
	if (!a->nresults) {
		r = spool_keep(a->spool, RESULTS_FILE, NULL, 0);
	} else if ((list = results_list(a))) {
		json_t *doc = json_pack("{s:s,s:o}", "agent", a->id, "outcomes", list);

		text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
		if (text)
			r = spool_keep(a->spool, RESULTS_FILE, text, strlen(text));
		free(text);
	}
	if (r < 0 && !a->results_unsaved)
		log_msg(LOG_WARNING, "agent", "OUTCOMES_NOT_KEPT",
			"%s: command outcomes cannot be kept in the spool directory (%s): they are reported, but "
			"lost if the agent stops before rocefabd has them", a->id, strerror(-r));
	a->results_unsaved = r < 0;
}

/* The outcomes an earlier run of the agent kept and rocefabd did not acknowledge: reported
 * again.  Their commands are not taken as seen: one sent again is applied again (its values
 * are absolute), so a command of the same id from another database (rocefabd's made anew) is
 * never skipped. */
static void results_load(struct agent *a)
{
	json_t *doc, *list, *it;
	const char *who;
	char *text = NULL;
	size_t len, i;
	int r;

	if (!a->spool || (r = spool_kept(a->spool, RESULTS_FILE, RESULTS_FILE_MAX, &text, &len)) == -ENOENT)
		return;
	doc = r == 0 ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	/* (a bare list: the first form of the file, this agent's) */
	list = json_is_array(doc) ? doc : json_object_get(doc, "outcomes");
	who = json_is_array(doc) ? a->id : json_string_value(json_object_get(doc, "agent"));
	if (!json_is_array(list) || !who) {
		log_msg(LOG_WARNING, "agent", "OUTCOMES_UNREADABLE",
			"%s: the command outcomes kept by its previous run cannot be read (%s): they are not "
			"reported, and changes rocefabd sent it then may stay in doubt", a->id,
			r < 0 ? strerror(-r) : "not what this agent writes");
		json_decref(doc);
		spool_keep(a->spool, RESULTS_FILE, NULL, 0);
		return;
	}
	if (strcmp(who, a->id)) {
		/* reported as this id, rocefabd would take them for none of its changes */
		log_msg(LOG_WARNING, "agent", "OUTCOMES_OF_FORMER_ID",
			"%s: %zu command outcomes kept by its previous run, as agent '%s' (agent.id changed since), "
			"are not reported: changes rocefabd sent '%s' then may stay in doubt (rocefabctl changes "
			"--agent %s; rocefabctl settle)", a->id, json_array_size(list), who, who, who);
		json_decref(doc);
		spool_keep(a->spool, RESULTS_FILE, NULL, 0);
		return;
	}
	json_array_foreach(list, i, it) {
		const char *id = json_string_value(json_object_get(it, "id"));

		if (!json_is_object(it) || !id || !*id || strlen(id) > 64 ||
		    !json_is_string(json_object_get(it, "outcome")) || a->nresults == RESULTS_MAX)
			continue;
		a->results[a->nresults++] = (struct result){ .doc = json_incref(it) };
	}
	json_decref(doc);
	if (a->nresults)
		log_info("agent", "%s: the outcomes of %u commands applied by its previous run to report", a->id,
			 a->nresults);
}

static void add_result(struct agent *a, json_t *outcome)
{
	if (a->nresults == RESULTS_MAX) {
		/* never acknowledged (rocefabd keeps refusing the reports?): drop the oldest */
		json_decref(a->results[0].doc);
		memmove(a->results, a->results + 1, (RESULTS_MAX - 1) * sizeof(a->results[0]));
		a->nresults--;
	}
	json_object_set_new(outcome, "time_ns", json_integer(tu_now_ns()));
	a->results[a->nresults++] = (struct result){ .doc = outcome };
	results_save(a);
}

/* A configuration change as rocefabd validates it, checked again before any backend touches
 * a device (rocefabd's word is not enough: a bug, or a server that is not rocefabd, could send
 * a value out of the facts file's ranges, a string where a number goes, or a device name that
 * walks out of sysfs): its target names and queue, then its settings' ranges and order (without
 * the device's current settings, which rocefabd checked against).  The settings are taken as
 * validated (sizes such as "400KB" in bytes). */
static int command_check(const struct agent *a, const char *kind, json_t *params, struct rf_err *e)
{
	static const char *const target[] = { "device", "port", "queue", NULL };
	json_t *knobs, *q;
	int r;

	if (strcmp(kind, "set_dcqcn") && strcmp(kind, "set_ecn") && strcmp(kind, "set_pfc"))
		return 0; /* the backend says what it does not apply */
	if (!json_is_object(params))
		return rf_err_set(e, -EINVAL, "BAD_COMMAND", "/params", "a change needs its params");
	for (int i = 0; i < 2; i++) {
		const char *v = json_string_value(json_object_get(params, target[i]));

		if (!v || !js_is_id(v, 64))
			return rf_err_set(e, -EINVAL, "BAD_COMMAND", target[i],
					  "the %s must be a name of letters, digits, '.', '_' and '-' (at most 64, "
					  "not starting with '.')", target[i]);
	}
	q = json_object_get(params, "queue");
	if (!strcmp(kind, "set_ecn") != (q != NULL) ||
	    (q && (!json_is_integer(q) || json_integer_value(q) < 0 || json_integer_value(q) > 7)))
		return rf_err_set(e, -EINVAL, "BAD_COMMAND", "queue",
				  "an ECN change names its queue, 0 to 7; other changes none");
	if (!(knobs = json_deep_copy(params)))
		return -ENOMEM;
	for (int i = 0; target[i]; i++)
		json_object_del(knobs, target[i]);
	if (!strcmp(kind, "set_dcqcn"))
		r = validate_dcqcn(knobs, NULL, 0, e);
	else if (!strcmp(kind, "set_ecn"))
		r = validate_ecn(knobs, NULL, NULL, (int)json_integer_value(q), e);
	else
		r = validate_pfc(knobs, NULL, NULL, a->role == AGENT_SWITCH, e);
	if (r == 0)
		json_object_update(params, knobs);
	json_decref(knobs);
	return r;
}

static void apply_command(struct agent *a, json_t *cmd)
{
	const char *id = json_string_value(json_object_get(cmd, "id"));
	const char *kind = json_string_value(json_object_get(cmd, "kind"));
	json_t *deadline = json_object_get(cmd, "deadline_ns"), *outcome = NULL;
	struct rf_err ce = { 0 };

	if (!id || !kind || strlen(id) > 64) {
		log_warning("agent", "%s: ignoring a command without id or kind", a->id);
		return;
	}
	if (seen(a, id))
		return; /* applied before; its outcome goes (or went) out with the reports */
	snprintf(a->seen[a->seen_next], sizeof(a->seen[0]), "%s", id);
	a->seen_next = (a->seen_next + 1) % SEEN_MAX;
	if (!strcmp(kind, "probe_plan")) {
		/* a plan is the agent's, not the device's: kept and run from the next report on */
		json_t *params = json_object_get(cmd, "params");

		if (!json_is_array(json_object_get(params, "targets"))) {
			outcome = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", "failed", "error",
					    "code", "BAD_COMMAND", "message", "a probe plan needs targets");
		} else {
			json_decref(a->plan);
			a->plan = json_deep_copy(params);
			snprintf(a->plan_id, sizeof(a->plan_id), "%s", id);
			log_info("agent", "%s: probe plan %s: %zu targets", a->id, id,
				 json_array_size(json_object_get(params, "targets")));
			/* plans change every rotation: their outcomes are not worth a report each */
			return;
		}
	} else if (!json_is_integer(deadline) || json_integer_value(deadline) < tu_now_ns()) {
		outcome = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", "timed_out", "error",
				    "code", "DEADLINE_PASSED", "message",
				    "the command reached the agent after its deadline; not applied");
	} else if (command_check(a, kind, json_object_get(cmd, "params"), &ce) < 0) {
		outcome = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", "failed", "error", "code",
				    ce.code[0] ? ce.code : "BAD_COMMAND", "message", ce.msg);
		if (outcome && ce.where[0])
			json_object_set_new(json_object_get(outcome, "error"), "field", json_string(ce.where));
	} else if (a->backend->ops->apply(a->backend, cmd, &outcome) < 0 || !outcome) {
		json_decref(outcome);
		outcome = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", "failed", "error",
				    "code", "NOT_SUPPORTED", "message",
				    "this agent's backend cannot apply configuration changes");
	}
	if (!strcmp(json_string_value(json_object_get(outcome, "outcome")) ?: "", "applied")) {
		a->applied++;
		log_info("agent", "%s: applied %s %s", a->id, kind, id);
	} else {
		a->failed++;
		log_warning("agent", "%s: %s %s not applied: %s", a->id, kind, id,
			    json_string_value(json_object_get(json_object_get(outcome, "error"), "message")) ?: "?");
	}
	add_result(a, outcome);
}

void agent_handle_answer(struct agent *a, json_t *answer)
{
	json_t *cmds = json_object_get(answer, "commands"), *c;
	json_t *seq = json_object_get(answer, "seq");
	size_t i;

	pthread_mutex_lock(&a->blk);
	if (json_is_integer(seq)) {
		/* outcomes carried by an acknowledged report are recorded: forget them */
		int64_t acked = json_integer_value(seq);
		unsigned k = 0;

		for (unsigned j = 0; j < a->nresults; j++) {
			if (a->results[j].first_seq && a->results[j].first_seq <= acked)
				json_decref(a->results[j].doc);
			else
				a->results[k++] = a->results[j];
		}
		if (k != a->nresults) {
			a->nresults = k;
			results_save(a);
		}
	}
	/* more than rocefabd ever sends (a server that is not rocefabd): the rest is not applied,
	 * nor the same ones again and again once they left the ring of ids seen */
	if (json_array_size(cmds) > ANSWER_COMMANDS_MAX)
		log_warning("agent", "%s: an answer with %zu commands, more than rocefabd sends (%d): only the "
			    "first %d are taken",
			    a->id, json_array_size(cmds), ANSWER_COMMANDS_MAX, ANSWER_COMMANDS_MAX);
	json_array_foreach(cmds, i, c) {
		if (i >= ANSWER_COMMANDS_MAX)
			break;
		apply_command(a, c);
	}
	pthread_mutex_unlock(&a->blk);
}

/* --- agents ---------------------------------------------------------------------------------------- */

int agent_create(const struct agent_conf *c, struct agent **ret, struct rf_err *e)
{
	struct agent *a = calloc(1, sizeof(*a));
	int r;

	if (!a) {
		backend_free(c->backend);
		return -ENOMEM;
	}
	pthread_mutex_init(&a->blk, NULL);
	a->backend = c->backend;
	a->role = c->role;
	a->interval_ns = c->interval_ns;
	a->pfc_interval_ns = c->pfc_interval_ns;
	snprintf(a->backend_name, sizeof(a->backend_name), "%s", c->backend_name);
	if ((r = check_id(c->id, e)) < 0)
		goto fail;
	snprintf(a->id, sizeof(a->id), "%s", c->id);
	if (c->use_hostname) {
		gethostname(a->hostname, sizeof(a->hostname) - 1);
		str_make_printable(a->hostname);
	}
	random_uuid(a->boot_id);
	read_host_boot_id(c->host_boot_root, a->host_boot_id, sizeof(a->host_boot_id));
	if (c->spool_dir &&
	    (r = spool_open(c->spool_dir, c->spool_max, c->spool_fsync, &a->spool, e)) < 0)
		goto fail;
	results_load(a);
	*ret = a;
	return 0;
fail:
	agent_destroy(a);
	return r;
}

void agent_destroy(struct agent *a)
{
	if (!a)
		return;
	for (unsigned i = 0; i < OUTBOX_MAX; i++)
		free(a->outbox[i]);
	free(a->pfc_data);
	for (unsigned i = 0; i < a->nresults; i++)
		json_decref(a->results[i].doc);
	json_decref(a->plan);
	json_decref(a->probe_backlog);
	for (unsigned i = 0; i < a->nerrs; i++)
		free(a->errs[i]);
	free(a->errs);
	spool_close(a->spool);
	backend_free(a->backend);
	inventory_clear(&a->inv);
	pthread_mutex_destroy(&a->blk);
	free(a);
}

const char *agent_id(const struct agent *a)
{
	return a->id;
}

int agent_from_settings(const struct agent_settings *s, bool deliver, struct reg **ret_reg,
			struct agent **ret, struct rf_err *e)
{
	const void *settings = backend_settings_of(s->backends, s->backend);
	char hostname[256] = "", id[65];
	struct backend_env env;
	struct backend *b = NULL;
	struct reg *reg = NULL;
	int r;

	if (s->id && *s->id) {
		if (str_copy(id, sizeof(id), s->id) < 0)
			return rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "agent.id", "longer than 64");
	} else if ((r = backend_default_id(s->backend, settings, id, e)) == -ENOENT) {
		/* the short host name, as an id */
		size_t n = 0;

		gethostname(hostname, sizeof(hostname) - 1);
		for (const char *c = hostname; *c && *c != '.' && n < 64; c++)
			id[n++] = isalnum((unsigned char)*c) || *c == '-' || *c == '_' ? *c : '_';
		id[n] = '\0';
	} else if (r < 0) {
		return r; /* the backend's id (a simulated device's name) does not fit */
	}
	if ((r = check_id(id, e)) < 0)
		return r;
	if (s->pfc_interval > 0 && s->pfc_interval < 10 * NSEC_PER_MSEC)
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "agent.pfc_interval",
				  "0 (no fast PFC reports) or at least 10ms (rocefabd's lower bound)");
	r = s->registry && *s->registry ? reg_load_file(s->registry, &reg, e)
					: reg_load_builtin(&reg, e);
	if (r < 0)
		return r;
	env = (struct backend_env){ .reg = reg, .all_counters = s->all_counters, .settings = settings };
	if ((r = backend_new(s->backend, &env, &b, e)) < 0) {
		reg_free(reg);
		return r;
	}
	{
		struct agent_conf c = {
			.id = id,
			.role = s->role == 1 ? AGENT_SWITCH : AGENT_HOST,
			.backend_name = s->backend,
			.backend = b,
			.spool_dir = deliver ? s->spool_dir : NULL,
			.spool_max = s->spool_max,
			.spool_fsync = s->spool_fsync,
			.interval_ns = s->interval,
			.pfc_interval_ns = s->pfc_interval,
			.host_boot_root = backend_host_root(s->backend, settings),
			.use_hostname = true,
		};

		r = agent_create(&c, ret, e); /* owns the backend from now on, even on failure */
	}
	if (r < 0) {
		reg_free(reg);
		return r;
	}
	*ret_reg = reg;
	return 0;
}

/* --- the fleet --------------------------------------------------------------------------------- */

struct fifo {
	struct agent *head, *tail;
};

struct fleet {
	struct fleet_conf c;
	char *server, *token, *token_file, *ca_file, *client_cert, *client_key;
	pthread_mutex_t lock;
	pthread_cond_t work;  /* delivery threads wait on it */
	pthread_cond_t sched; /* the scheduler waits on it */
	struct agent **agents;
	size_t n, cap;
	struct fifo q[NQUEUES]; /* agents with reports to send; with a fast PFC report to send */
	bool pfc_turn;
	pthread_t *workers;
	unsigned nworkers;
	pthread_t scheduler;
	bool sched_running;
	bool stopping;
	bool behind_logged; /* said that agents cannot deliver, until none is behind (ndown 0) */
	size_t ndown;	    /* agents whose reports wait (was_down) */
	struct ratelimit rejected_log; /* a report refused for good: a line a minute */
};

static int64_t random_below(int64_t n)
{
	uint64_t r;

	if (n <= 0 || getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return 0;
	return (int64_t)(r % (uint64_t)n);
}

/* With the lock held. */
static bool has_pending(const struct agent *a)
{
	return a->out_n || spool_count(a->spool);
}

/* With the lock held: an agent at the end of queue q, and a worker woken for it. */
static void fifo_push(struct fleet *f, int q, struct agent *a)
{
	a->next[q] = NULL;
	if (f->q[q].tail)
		f->q[q].tail->next[q] = a;
	else
		f->q[q].head = a;
	f->q[q].tail = a;
	pthread_cond_signal(&f->work);
}

/* With the lock held: the agent at the head of queue q (not empty), taken off. */
static struct agent *fifo_pop(struct fleet *f, int q)
{
	struct agent *a = f->q[q].head;

	f->q[q].head = a->next[q];
	if (!f->q[q].head)
		f->q[q].tail = NULL;
	return a;
}

/* With the lock held: queue the agent for delivery if it has something and may send. */
static void make_ready(struct fleet *f, struct agent *a)
{
	if (a->queued || a->busy || a->retry_at || !has_pending(a))
		return;
	a->queued = true;
	fifo_push(f, Q_REPORTS, a);
}

/* With the lock held: queue the agent's fast PFC report for delivery. */
static void pfc_ready(struct fleet *f, struct agent *a)
{
	if (a->pfc_queued || a->pfc_busy || !a->pfc_data)
		return;
	a->pfc_queued = true;
	fifo_push(f, Q_PFC, a);
}

/* Sends one fast PFC report (the lock held on entry and on return). */
static void pfc_send(struct fleet *f, struct sender *snd)
{
	struct agent *a = fifo_pop(f, Q_PFC);
	struct rf_err e = { 0 };
	char *data;
	size_t len;
	int r;

	a->pfc_queued = false;
	a->pfc_busy = true;
	data = a->pfc_data;
	len = a->pfc_len;
	a->pfc_data = NULL;
	pthread_mutex_unlock(&f->lock);
	r = sender_post_pfc(snd, a->id, data, len, &e);
	pthread_mutex_lock(&f->lock);
	a->pfc_busy = false;
	if (r == 0) {
		a->pfc_sent++;
		a->pfc_bytes += len;
	} else {
		/* a late fast report is worth nothing: never spooled, only counted */
		a->pfc_dropped++;
		if (r == -ENOENT && !a->pfc_off) {
			log_warning("agent", "%s: rocefabd has no fast PFC lane (an older version, or "
					     "detector.interval = 0); trying again in a minute", a->id);
			a->pfc_off = true;
			a->pfc_tick = tu_mono_ns() + 60 * NSEC_PER_SEC;
		}
	}
	free(data);
	pfc_ready(f, a);
}

/* With the lock held: moves the outbox, oldest first, to the spool. */
static void outbox_to_spool(struct agent *a)
{
	while (a->out_n) {
		unsigned i = a->out_head;

		if (spool_push(a->spool, a->outbox[i], a->outbox_len[i]) < 0)
			log_warning("spool", "%s: cannot spool a report; it is lost (counted)", a->id);
		free(a->outbox[i]);
		a->outbox[i] = NULL;
		a->out_head = (a->out_head + 1) % OUTBOX_MAX;
		a->out_n--;
	}
}

/* With the lock held. */
static void outbox_put(struct fleet *f, struct agent *a, char *data, size_t len)
{
	if (a->out_n == OUTBOX_MAX || a->retry_at || spool_count(a->spool)) {
		/* behind (rocefabd unreachable, or slow): keep the order through the spool */
		outbox_to_spool(a);
		if (spool_push(a->spool, data, len) < 0)
			log_warning("spool", "%s: cannot spool a report; it is lost (counted)", a->id);
		free(data);
	} else {
		unsigned i = (a->out_head + a->out_n) % OUTBOX_MAX;

		a->outbox[i] = data;
		a->outbox_len[i] = len;
		a->out_n++;
	}
	make_ready(f, a);
}

/* rocefabd refused the token a delivery thread sends: the token file read again, and when it
 * holds another token (an operator replaced a revoked or mistaken one), the thread's sender
 * made anew with it.  Without the fleet's lock (the file's path and the sender's settings do
 * not change after fleet_new; snd and tok are the thread's).  A file that cannot be taken is
 * logged once per problem (logged: the last one's code, the thread's). */
static void token_renew(struct fleet *f, struct sender **snd, char **tok, char logged[40])
{
	struct sender_conf sc = { .server = f->server, .ca_file = f->ca_file, .client_cert = f->client_cert,
				  .client_key = f->client_key, .timeout_ns = f->c.timeout_ns };
	struct rf_err w = { 0 }, e = { 0 };
	struct sender *n = NULL;
	char *t = NULL, buf[700];
	bool warned = false;

	if (!f->token_file)
		return;
	if (tokenfile_read(f->token_file, &t, &warned, &w, &e) == 0 && (!*tok || strcmp(t, *tok))) {
		sc.token = t;
		if (sender_new(&sc, &n, &e) == 0) {
			if (warned)
				log_msg(LOG_WARNING, "agent", w.code, "%s: %s", w.where, w.msg);
			sender_free(*snd);
			*snd = n;
			free(*tok);
			*tok = t;
			logged[0] = '\0';
			log_notice("agent", "%s holds another token: using it", f->token_file);
			return;
		}
	}
	free(t);
	if (e.code[0] && strcmp(e.code, logged)) {
		snprintf(logged, 40, "%s", e.code);
		log_msg(LOG_WARNING, "agent", e.code, "reading the token file again (the token in use stays): %s",
			rf_err_str(&e, buf, sizeof(buf)));
	}
}

/* The agent a spooled report was made as: this one's id, or the one it had before its id was
 * changed (the spool stays where it was).  A report begins {"schema":1,"agent":{"id":"...":
 * its id is read from there, and the whole report is parsed only when it is another's.
 * Returns own when the report names none usable (rocefabd says what is wrong with it). */
static const char *spooled_as(const char *data, size_t len, const char *own, char *buf, size_t size)
{
	static const char head[] = "{\"schema\":1,\"agent\":{\"id\":\"";
	size_t n = strlen(own);
	const char *id;
	json_t *doc;

	if (len > sizeof(head) - 1 + n && !memcmp(data, head, sizeof(head) - 1) &&
	    !memcmp(data + sizeof(head) - 1, own, n) && data[sizeof(head) - 1 + n] == '"')
		return own;
	if (!(doc = json_loadb(data, len, 0, NULL)))
		return own;
	id = json_string_value(json_object_get(json_object_get(doc, "agent"), "id"));
	if (!id || !strcmp(id, own) || check_id(id, &(struct rf_err){ 0 }) < 0 || str_copy(buf, size, id) < 0)
		id = own;
	else
		id = buf;
	json_decref(doc);
	return id;
}

/* The schema a report says it is of (it begins {"schema":N,...); 0 when it does not say. */
static long schema_of(const char *data, size_t len)
{
	static const char head[] = "{\"schema\":";
	size_t n = sizeof(head) - 1;

	return len > n && !memcmp(data, head, n) && isdigit((unsigned char)data[n]) ? strtol(data + n, NULL, 10) : 0;
}

/* Whether a spooled report is of this run of the agent: its boot id, in the agent's head
 * (the first few hundred bytes of what it writes). */
static bool of_this_run(const struct agent *a, const char *data, size_t len)
{
	char key[64];
	int n = snprintf(key, sizeof(key), "\"boot_id\":\"%s\"", a->boot_id);

	return n > 0 && (size_t)n < sizeof(key) && memmem(data, len < 1024 ? len : 1024, key, (size_t)n);
}

static void *worker_main(void *arg)
{
	struct fleet *f = arg;
	struct sender *snd = NULL;
	struct rf_err e = { 0 };
	struct sender_conf sc = { .server = f->server, .token = f->token, .ca_file = f->ca_file,
				  .client_cert = f->client_cert, .client_key = f->client_key,
				  .timeout_ns = f->c.timeout_ns };
	char *tok = f->token ? strdup(f->token) : NULL, renew_logged[40] = "";

	if (sender_new(&sc, &snd, &e) < 0) {
		char buf[700];

		log_msg(LOG_ERR, "agent", e.code, "delivery thread: %s", rf_err_str(&e, buf, sizeof(buf)));
		free(tok);
		return NULL;
	}
	pthread_mutex_lock(&f->lock);
	while (!f->stopping) {
		struct agent *a;
		json_t *answer = NULL;
		char *data = NULL;
		size_t len = 0;
		const char *as;
		char former[sizeof(a->id)];
		bool from_spool;
		int r;

		/* the fast lane and the full reports take turns: neither starves the other */
		if (f->q[Q_PFC].head && (!f->q[Q_REPORTS].head || f->pfc_turn)) {
			f->pfc_turn = false;
			pfc_send(f, snd);
			continue;
		}
		f->pfc_turn = true;
		a = f->q[Q_REPORTS].head;
		if (!a) {
			/* nothing ready: wait for a report, or for the earliest retry */
			int64_t now = tu_mono_ns(), earliest = 0;

			for (size_t i = 0; i < f->n; i++) {
				struct agent *x = f->agents[i];

				if (!x->retry_at)
					continue;
				if (x->retry_at <= now) {
					x->retry_at = 0;
					make_ready(f, x);
				} else if (!earliest || x->retry_at < earliest) {
					earliest = x->retry_at;
				}
			}
			if (f->q[Q_REPORTS].head || f->q[Q_PFC].head)
				continue;
			if (earliest) {
				struct timespec until;
				int64_t t = tu_now_ns() + (earliest - now);

				until.tv_sec = t / NSEC_PER_SEC;
				until.tv_nsec = t % NSEC_PER_SEC;
				pthread_cond_timedwait(&f->work, &f->lock, &until);
			} else {
				pthread_cond_wait(&f->work, &f->lock);
			}
			continue;
		}
		fifo_pop(f, Q_REPORTS);
		a->queued = false;
		a->busy = true;
		from_spool = spool_count(a->spool) > 0;
		if (from_spool) {
			if (spool_peek(a->spool, &data, &len) < 0) {
				a->busy = false;
				continue;
			}
		} else {
			data = a->outbox[a->out_head];
			len = a->outbox_len[a->out_head];
			a->outbox[a->out_head] = NULL;
			a->out_head = (a->out_head + 1) % OUTBOX_MAX;
			a->out_n--;
		}
		pthread_mutex_unlock(&f->lock);
		/* one spooled under a former id goes as that agent, a replay (posted as this one,
		 * rocefabd would refuse it: AGENT_ID_MISMATCH) */
		as = from_spool ? spooled_as(data, len, a->id, former, sizeof(former)) : a->id;
		r = sender_post(snd, as, as != a->id, data, len, &answer, &e);
		if (r == 0 && answer && as == a->id) {
			/* a report of a run before acknowledges none of this run's outcomes (its seq is
			 * of that run's) */
			if (from_spool && !of_this_run(a, data, len))
				json_object_del(answer, "seq");
			agent_handle_answer(a, answer); /* commands: outside the fleet's lock */
		}
		json_decref(answer);
		/* a token or certificate for this id alone refuses the former one's for good (403):
		 * not kept (one refused for another reason, an expired certificate, is kept) */
		if (r == -EPERM && as != a->id &&
		    (!strcmp(e.code, "AGENT_NOT_BOUND") || !strcmp(e.code, "CLIENT_CERT_MISMATCH")))
			r = -EINVAL;
		/* refused for its schema: by a rocefabd older than the report (upgraded after its
		 * agents), which takes it once it is upgraded too: kept, as in an outage; one older
		 * than this agent (spooled before it was upgraded) a newer rocefabd never takes:
		 * dropped as any report refused */
		if (r == -EINVAL && !strcmp(e.code, "UNSUPPORTED_SCHEMA") && schema_of(data, len) >= REPORT_SCHEMA)
			r = e.err = -EAGAIN;
		if (r == -EACCES || r == -EPERM)
			token_renew(f, &snd, &tok, renew_logged);
		pthread_mutex_lock(&f->lock);
		a->busy = false;
		if (r == 0) {
			if (from_spool)
				spool_pop(a->spool);
			a->delivered++;
			if (a->was_down) {
				if (f->n == 1 || f->ndown == 1)
					log_info("agent", "%s: rocefabd takes reports again; %zu spooled to send",
						 f->n == 1 ? a->id : "every agent", spool_count(a->spool));
				a->was_down = false;
				if (--f->ndown == 0)
					f->behind_logged = false;
			}
			a->backoff = 0;
			free(data);
			make_ready(f, a);
			continue;
		}
		if (r != -EAGAIN && r != -EACCES && r != -EPERM) {
			char buf[700];
			uint64_t more = 0;

			if (from_spool)
				spool_pop(a->spool);
			a->rejected++;
			/* one line per agent and problem would flood a fleet's log: a line a minute */
			if (ratelimit_due(&f->rejected_log, "rejected", tu_mono_ns(), &more)) {
				char since[80] = "";

				if (more)
					snprintf(since, sizeof(since), "; and %" PRIu64 " more since the last such line",
						 more);
				log_msg(LOG_ERR, "agent", e.code, "%s: rocefabd refused a report%s%s%s for good "
					"(dropped%s): %s", a->id, as != a->id ? " spooled as '" : "",
					as != a->id ? as : "", as != a->id ? "'" : "", since,
					rf_err_str(&e, buf, sizeof(buf)));
			}
			free(data);
			make_ready(f, a);
			continue;
		}
		/* unreachable or busy, or the token refused (an operator's mistake, mended by
		 * writing the token file: read again before each try): keep the report (and the
		 * ones behind it) on disk */
		if (!from_spool) {
			if (spool_push(a->spool, data, len) < 0)
				log_warning("spool", "%s: cannot spool a report; it is lost (counted)", a->id);
			outbox_to_spool(a);
		}
		free(data);
		if (!a->was_down) {
			char buf[700];

			if (f->n == 1 || !f->behind_logged)
				log_msg(LOG_WARNING, "agent", e.code, "%s: cannot deliver reports, spooling%s: %s",
					a->id,
					(r == -EACCES || r == -EPERM) && f->token_file
						? " (the token file is read again before each try)"
						: "",
					rf_err_str(&e, buf, sizeof(buf)));
			f->behind_logged = true;
			a->was_down = true;
			f->ndown++;
		} else if (f->n == 1 && strcmp(a->down_code, e.code)) {
			/* the cause changed while down (unreachable, then the token refused, then
			 * bound to another agent): said once more, or the first cause stays the
			 * only one in this host's log (a host's agent; a simulator's fleet says its
			 * first) */
			char buf[700];

			log_msg(LOG_WARNING, "agent", e.code, "%s: still cannot deliver reports, now: %s", a->id,
				rf_err_str(&e, buf, sizeof(buf)));
		}
		snprintf(a->down_code, sizeof(a->down_code), "%s", e.code);
		a->backoff = a->backoff ? a->backoff * 2 : 250 * NSEC_PER_MSEC;
		if (a->backoff > 5 * NSEC_PER_SEC)
			a->backoff = 5 * NSEC_PER_SEC;
		a->retry_at = tu_mono_ns() + a->backoff;
	}
	pthread_mutex_unlock(&f->lock);
	sender_free(snd);
	free(tok);
	return NULL;
}

static void *scheduler_main(void *arg)
{
	struct fleet *f = arg;
	int64_t jitter = f->c.interval_ns * f->c.jitter_pct / 100;

	pthread_mutex_lock(&f->lock);
	while (!f->stopping) {
		int64_t now = tu_mono_ns(), earliest = INT64_MAX;

		for (size_t i = 0; i < f->n && !f->stopping; i++) {
			struct agent *a = f->agents[i];
			json_t *doc = NULL;
			char *text = NULL;

			if (a->pfc_off && a->pfc_tick <= now)
				a->pfc_off = false; /* a minute later: rocefabd may have the lane now */
			if (a->pfc_interval_ns > 0 && !a->pfc_off) {
				if (a->pfc_tick <= now) {
					pthread_mutex_unlock(&f->lock);
					if (agent_build_pfc_report(a, &doc) == 0) {
						text = json_dumps(doc, JSON_COMPACT);
						json_decref(doc);
						doc = NULL;
					}
					pthread_mutex_lock(&f->lock);
					if (text) {
						a->pfc_built++;
						if (a->pfc_data) { /* the previous one never left */
							free(a->pfc_data);
							a->pfc_dropped++;
						}
						a->pfc_data = text;
						a->pfc_len = strlen(text);
						text = NULL;
						pfc_ready(f, a);
					}
					a->pfc_tick += a->pfc_interval_ns;
					now = tu_mono_ns();
					if (a->pfc_tick < now)
						a->pfc_tick = now + a->pfc_interval_ns;
				}
				if (a->pfc_tick < earliest)
					earliest = a->pfc_tick;
			}
			if (a->next_tick > now) {
				if (a->next_tick < earliest)
					earliest = a->next_tick;
				continue;
			}
			pthread_mutex_unlock(&f->lock);
			if (agent_build_report(a, &doc) == 0) {
				text = json_dumps(doc, JSON_COMPACT);
				json_decref(doc);
			}
			pthread_mutex_lock(&f->lock);
			if (text) {
				a->built++;
				outbox_put(f, a, text, strlen(text));
			}
			a->base_tick += f->c.interval_ns;
			now = tu_mono_ns();
			if (a->base_tick + f->c.interval_ns < now) {
				if (f->n == 1)
					log_warning("agent", "collection fell %.3gs behind; skipping to now",
						    (double)(now - a->base_tick) / 1e9);
				a->base_tick = now;
			}
			a->next_tick = a->base_tick + random_below(jitter);
			if (a->next_tick < earliest)
				earliest = a->next_tick;
		}
		if (f->stopping)
			break;
		now = tu_mono_ns();
		if (earliest > now) {
			struct timespec until;
			int64_t t = tu_now_ns() + (earliest == INT64_MAX ? NSEC_PER_SEC : earliest - now);

			until.tv_sec = t / NSEC_PER_SEC;
			until.tv_nsec = t % NSEC_PER_SEC;
			pthread_cond_timedwait(&f->sched, &f->lock, &until);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int fleet_new(const struct fleet_conf *c, struct fleet **ret, struct rf_err *e)
{
	struct fleet *f = calloc(1, sizeof(*f));
	bool https;

	if (!f)
		return -ENOMEM;
	f->c = *c;
	if (strncmp(c->server, "http://", 7) != 0 && strncmp(c->server, "https://", 8) != 0) {
		free(f);
		return rf_err_set(e, -EINVAL, "BAD_SERVER_URL", "agent.server",
				  "'%s' must start with http:// or https://", c->server);
	}
	/* the TLS files are read at the first send: one not there is said at the start (it was
	 * "Problem with the SSL CA cert (path? access rights?)" at the first report, the path not
	 * named) */
	{
		const char *const files[][2] = { { "agent.ca_file", c->ca_file },
						 { "agent.tls_cert", c->client_cert },
						 { "agent.tls_key", c->client_key } };

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			if (files[i][1] && *files[i][1] && access(files[i][1], R_OK) < 0) {
				int r = rf_err_set(e, -errno, "TLS_FILE_UNREADABLE", files[i][0], "%s: %s", files[i][1],
						   strerror(errno));

				free(f);
				return r;
			}
	}
	if (c->client_key && *c->client_key) {
		struct rf_err w = { 0 };
		bool warned;
		int r = keyfile_check(c->client_key, &warned, &w, e);

		if (r < 0) {
			free(f);
			return r;
		}
		if (warned)
			log_msg(LOG_WARNING, "agent", w.code, "agent.tls_key %s: %s", w.where, w.msg);
	}
	/* and what they hold, for https: a key of another pair failed every send ("unable to set
	 * private key file"); without agent.tls_key the key is read from the certificate's file */
	https = strncmp(c->server, "https://", 8) == 0;
	if (https && c->client_cert && *c->client_cert) {
		const char *key = c->client_key && *c->client_key ? c->client_key : c->client_cert;
		int64_t not_after = 0;
		char when[40];
		int r = tls_check_pair("agent.tls_cert", c->client_cert, key == c->client_key ? "agent.tls_key"
											    : "agent.tls_cert",
				       key, &not_after, e);

		if (r < 0) {
			free(f);
			return r;
		}
		if (not_after > 0 && not_after < tu_now_ns() / NSEC_PER_SEC)
			log_msg(LOG_WARNING, "agent", "TLS_CERT_EXPIRED",
				"agent.tls_cert %s expired on %s: rocefabd will refuse it", c->client_cert,
				tu_format_rfc3339(not_after * NSEC_PER_SEC, when, sizeof(when)));
	}
	if (https && c->ca_file && *c->ca_file) {
		int r = tls_check_ca("agent.ca_file", c->ca_file, e);

		if (r < 0) {
			free(f);
			return r;
		}
	}
	f->server = strdup(c->server);
	f->token = c->token ? strdup(c->token) : NULL;
	f->token_file = c->token_file ? strdup(c->token_file) : NULL;
	f->ca_file = c->ca_file ? strdup(c->ca_file) : NULL;
	f->client_cert = c->client_cert ? strdup(c->client_cert) : NULL;
	f->client_key = c->client_key ? strdup(c->client_key) : NULL;
	if (!f->c.threads)
		f->c.threads = 1;
	f->rejected_log = (struct ratelimit)RATELIMIT_INIT(1, 60 * NSEC_PER_SEC);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->sched, NULL);
	*ret = f;
	return 0;
}

int fleet_add(struct fleet *f, struct agent *a, struct rf_err *e)
{
	if (!a->spool)
		return rf_err_set(e, -EINVAL, "NO_SPOOL", a->id, "an agent of a fleet needs a spool");
	if (f->n == f->cap) {
		size_t nc = f->cap ? f->cap * 2 : 16;
		struct agent **n = realloc(f->agents, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		f->agents = n;
		f->cap = nc;
	}
	a->fleet = f;
	f->agents[f->n++] = a;
	return 0;
}

int fleet_start(struct fleet *f, struct rf_err *e)
{
	int64_t now = tu_mono_ns();

	for (size_t i = 0; i < f->n; i++) {
		struct agent *a = f->agents[i];

		a->base_tick = a->next_tick =
			now + (f->c.spread && f->n > 1 ? f->c.interval_ns * (int64_t)i / (int64_t)f->n : 0);
		a->pfc_tick = now + (f->c.spread && f->n > 1 && a->pfc_interval_ns > 0
					     ? a->pfc_interval_ns * (int64_t)i / (int64_t)f->n
					     : 0);
		/* reports left by an earlier run go first */
		pthread_mutex_lock(&f->lock);
		make_ready(f, a);
		pthread_mutex_unlock(&f->lock);
	}
	f->workers = calloc(f->c.threads, sizeof(*f->workers));
	if (!f->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < f->c.threads; i++) {
		if (pthread_create(&f->workers[i], NULL, worker_main, f) != 0)
			return rf_err_set(e, -EAGAIN, "THREAD_FAILED", NULL, "cannot start a delivery thread");
		f->nworkers++;
	}
	if (pthread_create(&f->scheduler, NULL, scheduler_main, f) != 0)
		return rf_err_set(e, -EAGAIN, "THREAD_FAILED", NULL, "cannot start the scheduler thread");
	f->sched_running = true;
	return 0;
}

void fleet_free(struct fleet *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	pthread_cond_broadcast(&f->work);
	pthread_cond_broadcast(&f->sched);
	pthread_mutex_unlock(&f->lock);
	if (f->sched_running)
		pthread_join(f->scheduler, NULL);
	for (unsigned i = 0; i < f->nworkers; i++)
		pthread_join(f->workers[i], NULL);
	free(f->workers);
	for (size_t i = 0; i < f->n; i++) {
		/* whatever was not delivered stays on disk for the next run */
		outbox_to_spool(f->agents[i]);
		agent_destroy(f->agents[i]);
	}
	free(f->agents);
	pthread_cond_destroy(&f->sched);
	pthread_cond_destroy(&f->work);
	pthread_mutex_destroy(&f->lock);
	free(f->server);
	free(f->token);
	free(f->token_file);
	ratelimit_fini(&f->rejected_log);
	free(f->ca_file);
	free(f->client_cert);
	free(f->client_key);
	free(f);
}

json_t *fleet_status(struct fleet *f)
{
	uint64_t built = 0, delivered = 0, rejected = 0, waiting = 0, dropped = 0, down = 0;
	uint64_t applied = 0, failed = 0, pfc_sent = 0, pfc_dropped = 0, pfc_bytes = 0, host_sent = 0, host_bytes = 0;
	json_t *o;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++) {
		struct agent *a = f->agents[i];

		built += a->built;
		delivered += a->delivered;
		rejected += a->rejected;
		waiting += a->out_n + spool_count(a->spool);
		dropped += spool_dropped(a->spool);
		down += a->was_down;
		applied += a->applied;
		failed += a->failed;
		pfc_sent += a->pfc_sent;
		pfc_dropped += a->pfc_dropped;
		pfc_bytes += a->pfc_bytes;
		if (a->role == AGENT_HOST) {
			host_sent += a->pfc_sent;
			host_bytes += a->pfc_bytes;
		}
	}
	pthread_mutex_unlock(&f->lock);
	o = json_pack("{s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "agents", (json_int_t)f->n,
			 "server", f->server, "reports_built", (json_int_t)built, "delivered",
			 (json_int_t)delivered, "refused", (json_int_t)rejected, "waiting",
			 (json_int_t)waiting, "spool_dropped", (json_int_t)dropped, "cannot_deliver",
			 (json_int_t)down, "commands_applied", (json_int_t)applied, "commands_failed",
			 (json_int_t)failed);
	if (o)
		json_object_set_new(o, "pfc_lane",
				    json_pack("{s:I,s:I,s:I,s:I,s:I}", "sent", (json_int_t)pfc_sent, "dropped",
					      (json_int_t)pfc_dropped, "bytes", (json_int_t)pfc_bytes, "host_sent",
					      (json_int_t)host_sent, "host_bytes", (json_int_t)host_bytes));
	return o;
}
