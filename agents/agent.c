/* rocefab-agent core: see agent.h. */
#include <ctype.h>
#include <errno.h>
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
#include "lib/log.h"
#include "lib/registry.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

static const char *const log_levels[] = { "error", "warning", "notice", "info", "debug", NULL };
static const char *const log_targets[] = { "auto", "stderr", "journal", NULL };
static const char *const roles[] = { "host", "switch", NULL };
static const char *const net_sources[] = { "auto", "live", "files", NULL };

#define S struct agent_settings
const struct conf_opt agent_opts[] = {
	CONF_OPT("agent.log_level", CONF_ENUM, S, log_level_idx, "info",
		 "error, warning, notice, info or debug", .choices = log_levels),
	CONF_OPT("agent.log_target", CONF_ENUM, S, log_target, "auto",
		 "auto (journal under systemd), stderr or journal", .choices = log_targets),
	CONF_OPT("agent.id", CONF_STRING, S, id, "", "agent id shown by rocefab; empty: the host name"),
	CONF_OPT("agent.role", CONF_ENUM, S, role, "host", "host or switch", .choices = roles),
	CONF_OPT("agent.server", CONF_STRING, S, server, "http://127.0.0.1:9750",
		 "URL of rocefabd"),
	CONF_OPT("agent.token_file", CONF_STRING, S, token_file, "/etc/rocefab/agent.token",
		 "file holding the agent's bearer token (role agent)"),
	CONF_OPT("agent.interval", CONF_DURATION, S, interval, "1s", "time between reports",
		 .min = 10 * NSEC_PER_MSEC, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("agent.jitter", CONF_INT, S, jitter_pct, "10",
		 "random delay of each report, in percent of the interval", .min = 0, .max = 50),
	CONF_OPT("agent.timeout", CONF_DURATION, S, timeout, "5s", "HTTP timeout per report",
		 .min = 100 * NSEC_PER_MSEC, .max = 300 * NSEC_PER_SEC),
	CONF_OPT("agent.ca_file", CONF_STRING, S, ca_file, "",
		 "CA certificates for an https server; empty: the system's"),
	CONF_OPT("agent.backend", CONF_STRING, S, backend, "linux", "where counters come from: linux"),
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
	CONF_OPT("linux.sysfs_root", CONF_STRING, S, sysfs_root, "/",
		 "root of /sys (and /proc, ethtool/) to read; a recorded tree for tests"),
	CONF_OPT("linux.devices", CONF_STRING, S, devices, "",
		 "RDMA devices to report, comma-separated; empty: all"),
	CONF_OPT("linux.interfaces", CONF_STRING, S, interfaces, "",
		 "network interfaces without RDMA to report, comma-separated"),
	CONF_OPT("linux.net_source", CONF_ENUM, S, net_source, "auto",
		 "auto, live (rtnetlink and ethtool) or files (the recorded tree)",
		 .choices = net_sources),
	CONF_OPT_END,
};
#undef S

#define OUTBOX_MAX 4

struct agent {
	const struct agent_settings *s;
	struct reg *reg;
	struct backend *backend;
	struct agent_inventory inv;
	char id[65];
	char boot_id[37];
	char host_boot_id[65];
	char hostname[256];
	int64_t seq;

	/* delivery */
	bool deliver;
	struct sender *sender;
	struct spool *spool;
	pthread_t thread;
	bool thread_running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *outbox[OUTBOX_MAX];
	size_t outbox_len[OUTBOX_MAX];
	unsigned out_head, out_n;
	bool stopping;
	uint64_t delivered, rejected;
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
	char path[4200];
	FILE *f = NULL;

	out[0] = '\0';
	if (root && *root && strcmp(root, "/") != 0 &&
	    str_fmt(path, sizeof(path), "%s/proc/sys/kernel/random/boot_id", root) == 0)
		f = fopen(path, "re");
	if (!f)
		f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
	for (char *c = out; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-')
			*c = '\0';
}

static int read_token(const char *path, char **ret, struct rf_err *e)
{
	char buf[256];
	struct stat st;
	FILE *f = fopen(path, "re");

	if (!f)
		return rf_err_set(e, -errno, "TOKEN_UNREADABLE", path, "cannot read the token: %s",
				  strerror(errno));
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 0004))
		log_warning("agent", "%s is readable by everyone; chmod 600 it", path);
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return rf_err_set(e, -EINVAL, "TOKEN_UNREADABLE", path, "the token file is empty");
	}
	fclose(f);
	buf[strcspn(buf, " \r\n")] = '\0';
	if (!buf[0])
		return rf_err_set(e, -EINVAL, "TOKEN_UNREADABLE", path, "the token file is empty");
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

/* --- building reports ------------------------------------------------------------------------- */

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
					       "link_layer", p->link_layer);

			if (p->netdev[0])
				json_object_set_new(jp, "netdev", json_string(p->netdev));
			if (p->speed_mbps >= 0)
				json_object_set_new(jp, "speed_mbps", json_integer(p->speed_mbps));
			if (p->mtu >= 0)
				json_object_set_new(jp, "mtu", json_integer(p->mtu));
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

int agent_build_report(struct agent *a, json_t **ret)
{
	json_t *samples = json_array(), *errors = json_array(), *agent, *doc;
	int r;

	if (!samples || !errors) {
		json_decref(samples);
		json_decref(errors);
		return -ENOMEM;
	}
	r = a->backend->ops->inventory(a->backend, &a->inv, errors);
	if (r < 0 && r != -EOPNOTSUPP)
		collect_error(errors, "INVENTORY_FAILED", NULL, "%s", strerror(-r));
	r = a->backend->ops->collect(a->backend, &a->inv, samples, errors);
	if (r < 0 && r != -EOPNOTSUPP)
		collect_error(errors, "COLLECT_FAILED", NULL, "%s", strerror(-r));
	agent = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", a->id, "role", roles[a->s->role],
			  "boot_id", a->boot_id, "version", ROCEFAB_VERSION, "backend",
			  a->s->backend);
	if (a->host_boot_id[0])
		json_object_set_new(agent, "host_boot_id", json_string(a->host_boot_id));
	if (a->hostname[0])
		json_object_set_new(agent, "hostname", json_string(a->hostname));
	doc = json_pack("{s:i,s:o,s:I,s:I,s:I,s:o,s:o}", "schema", 1, "agent", agent, "seq",
			(json_int_t)++a->seq, "time_ns", (json_int_t)tu_now_ns(), "interval_ms",
			(json_int_t)(a->s->interval / NSEC_PER_MSEC), "inventory",
			inventory_json(&a->inv), "samples", samples);
	if (!doc) {
		json_decref(errors);
		return -ENOMEM;
	}
	if (a->spool) {
		pthread_mutex_lock(&a->lock);
		json_object_set_new(doc, "spool",
				    json_pack("{s:I,s:I}", "dropped_reports",
					      (json_int_t)spool_dropped(a->spool), "queued_reports",
					      (json_int_t)(spool_count(a->spool) + a->out_n)));
		pthread_mutex_unlock(&a->lock);
	}
	if (json_array_size(errors))
		json_object_set_new(doc, "errors", errors);
	else
		json_decref(errors);
	*ret = doc;
	return 0;
}

/* --- delivery ---------------------------------------------------------------------------------- */

/* With a->lock held: moves the outbox, oldest first, to the spool. */
static void outbox_to_spool(struct agent *a)
{
	while (a->out_n) {
		unsigned i = a->out_head;

		if (spool_push(a->spool, a->outbox[i], a->outbox_len[i]) < 0)
			log_warning("spool", "cannot spool a report; it is lost (counted)");
		free(a->outbox[i]);
		a->outbox[i] = NULL;
		a->out_head = (a->out_head + 1) % OUTBOX_MAX;
		a->out_n--;
	}
}

static void log_rejected(struct agent *a, const struct rf_err *e)
{
	char buf[700];

	a->rejected++;
	log_msg(LOG_ERR, "agent", e->code, "rocefabd refused a report for good (dropped): %s",
		rf_err_str(e, buf, sizeof(buf)));
}

static void *sender_main(void *arg)
{
	struct agent *a = arg;
	int64_t backoff = 0;
	bool was_down = false;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct rf_err e = { 0 };
		char *data = NULL;
		size_t len = 0;
		bool from_spool;
		int r;

		while (!a->stopping && !a->out_n && !spool_count(a->spool))
			pthread_cond_wait(&a->cond, &a->lock);
		if (a->stopping)
			break;
		from_spool = spool_count(a->spool) > 0;
		if (from_spool) {
			if (spool_peek(a->spool, &data, &len) < 0)
				continue;
		} else {
			data = a->outbox[a->out_head];
			len = a->outbox_len[a->out_head];
			a->outbox[a->out_head] = NULL;
			a->out_head = (a->out_head + 1) % OUTBOX_MAX;
			a->out_n--;
		}
		pthread_mutex_unlock(&a->lock);
		r = sender_post(a->sender, data, len, &e);
		pthread_mutex_lock(&a->lock);
		if (r == 0) {
			if (from_spool)
				spool_pop(a->spool);
			a->delivered++;
			if (was_down) {
				log_info("agent", "rocefabd reachable again; %zu spooled reports to send",
					 spool_count(a->spool));
				was_down = false;
			}
			backoff = 0;
			free(data);
			continue;
		}
		if (r != -EAGAIN) {
			if (from_spool)
				spool_pop(a->spool);
			log_rejected(a, &e);
			free(data);
			continue;
		}
		/* Unreachable or busy: keep the report (and the ones behind it) on disk. */
		if (!from_spool) {
			if (spool_push(a->spool, data, len) < 0)
				log_warning("spool", "cannot spool a report; it is lost (counted)");
			outbox_to_spool(a);
		}
		free(data);
		if (!was_down) {
			char buf[700];

			log_msg(LOG_WARNING, "agent", e.code, "cannot deliver reports, spooling: %s",
				rf_err_str(&e, buf, sizeof(buf)));
			was_down = true;
		}
		backoff = backoff ? backoff * 2 : 250 * NSEC_PER_MSEC;
		if (backoff > 5 * NSEC_PER_SEC)
			backoff = 5 * NSEC_PER_SEC;
		{
			struct timespec until;
			int64_t t;

			clock_gettime(CLOCK_REALTIME, &until);
			t = (int64_t)until.tv_sec * NSEC_PER_SEC + until.tv_nsec + backoff;
			until.tv_sec = t / NSEC_PER_SEC;
			until.tv_nsec = t % NSEC_PER_SEC;
			while (!a->stopping &&
			       pthread_cond_timedwait(&a->cond, &a->lock, &until) != ETIMEDOUT)
				;
		}
	}
	/* Whatever was not delivered stays on disk for the next run. */
	outbox_to_spool(a);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static void outbox_put(struct agent *a, char *data, size_t len)
{
	pthread_mutex_lock(&a->lock);
	if (a->out_n == OUTBOX_MAX) {
		/* the sender is stuck on a slow delivery: the oldest waiting report goes to disk */
		unsigned i = a->out_head;

		if (spool_push(a->spool, a->outbox[i], a->outbox_len[i]) < 0)
			log_warning("spool", "cannot spool a report; it is lost (counted)");
		free(a->outbox[i]);
		a->out_head = (a->out_head + 1) % OUTBOX_MAX;
		a->out_n--;
	}
	{
		unsigned i = (a->out_head + a->out_n) % OUTBOX_MAX;

		a->outbox[i] = data;
		a->outbox_len[i] = len;
		a->out_n++;
	}
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

/* --- life cycle ------------------------------------------------------------------------------------ */

int agent_new(const struct agent_settings *s, bool deliver, struct agent **ret,
	      struct rf_err *e)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct backend_env env;
	char *token = NULL;
	int r;

	if (!a)
		return -ENOMEM;
	a->s = s;
	a->deliver = deliver;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	gethostname(a->hostname, sizeof(a->hostname) - 1);
	if (s->id && *s->id) {
		if (str_copy(a->id, sizeof(a->id), s->id) < 0) {
			r = rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "agent.id", "longer than 64");
			goto fail;
		}
	} else {
		/* the short host name, as an id */
		size_t n = 0;

		for (const char *c = a->hostname; *c && *c != '.' && n < 64; c++)
			a->id[n++] = isalnum((unsigned char)*c) || *c == '-' || *c == '_' ? *c : '_';
		a->id[n] = '\0';
	}
	for (const char *c = a->id; *c; c++) {
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-') {
			r = rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "agent.id",
				       "'%s': use letters, digits, '.', '_' and '-'", a->id);
			goto fail;
		}
	}
	if (!a->id[0] || a->id[0] == '.' || a->id[0] == '-') {
		r = rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "agent.id", "'%s' is not a valid id",
			       a->id);
		goto fail;
	}
	random_uuid(a->boot_id);
	read_host_boot_id(s->sysfs_root, a->host_boot_id, sizeof(a->host_boot_id));

	r = s->registry && *s->registry ? reg_load_file(s->registry, &a->reg, e)
					: reg_load_builtin(&a->reg, e);
	if (r < 0)
		goto fail;
	env = (struct backend_env){ .reg = a->reg, .all_counters = s->all_counters,
				    .sysfs_root = s->sysfs_root, .devices = s->devices,
				    .interfaces = s->interfaces, .net_source = s->net_source };
	if ((r = backend_new(s->backend, &env, &a->backend, e)) < 0)
		goto fail;
	if (!deliver) {
		*ret = a;
		return 0;
	}
	if ((r = read_token(s->token_file, &token, e)) < 0)
		goto fail;
	{
		struct sender_conf sc = { .server = s->server, .token = token, .agent_id = a->id,
					  .ca_file = s->ca_file, .timeout_ns = s->timeout };

		r = sender_new(&sc, &a->sender, e);
	}
	free(token);
	if (r < 0)
		goto fail;
	if ((r = spool_open(s->spool_dir, s->spool_max, s->spool_fsync, &a->spool, e)) < 0)
		goto fail;
	if (pthread_create(&a->thread, NULL, sender_main, a) != 0) {
		r = rf_err_set(e, -EAGAIN, "THREAD_FAILED", NULL, "cannot start the sender thread");
		goto fail;
	}
	a->thread_running = true;
	*ret = a;
	return 0;
fail:
	agent_free(a);
	return r;
}

void agent_free(struct agent *a)
{
	if (!a)
		return;
	if (a->thread_running) {
		pthread_mutex_lock(&a->lock);
		a->stopping = true;
		pthread_cond_broadcast(&a->cond);
		pthread_mutex_unlock(&a->lock);
		pthread_join(a->thread, NULL);
	}
	for (unsigned i = 0; i < OUTBOX_MAX; i++)
		free(a->outbox[i]);
	spool_close(a->spool);
	sender_free(a->sender);
	backend_free(a->backend);
	inventory_clear(&a->inv);
	reg_free(a->reg);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static int64_t random_below(int64_t n)
{
	uint64_t r;

	if (n <= 0 || getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return 0;
	return (int64_t)(r % (uint64_t)n);
}

int agent_run(struct agent *a)
{
	int64_t interval = a->s->interval;
	int64_t jitter = interval * a->s->jitter_pct / 100;
	int64_t next = tu_mono_ns();
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	log_info("agent", "agent %s reporting to %s every %.3gs (backend %s, boot %s)", a->id,
		 a->s->server, (double)interval / 1e9, a->s->backend, a->boot_id);
	for (;;) {
		json_t *doc;
		char *text;
		int64_t wake, now;

		if (agent_build_report(a, &doc) == 0) {
			text = json_dumps(doc, JSON_COMPACT);
			json_decref(doc);
			if (text)
				outbox_put(a, text, strlen(text));
		}
		next += interval;
		now = tu_mono_ns();
		if (next < now) {
			log_warning("agent", "collection fell %.3gs behind; skipping to now",
				    (double)(now - next) / 1e9);
			next = now;
		}
		wake = next + random_below(jitter);
		for (;;) {
			int64_t left = wake - tu_mono_ns();
			struct timespec to;
			int sig;

			if (left <= 0)
				break;
			to.tv_sec = left / NSEC_PER_SEC;
			to.tv_nsec = left % NSEC_PER_SEC;
			sig = sigtimedwait(&sigs, NULL, &to);
			if (sig == SIGTERM || sig == SIGINT) {
				log_info("agent", "stopping; %" PRIu64 " reports delivered, "
						  "undelivered ones stay in %s",
					 a->delivered, a->s->spool_dir);
				return 0;
			}
		}
	}
}
