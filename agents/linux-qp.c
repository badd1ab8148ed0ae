/* The QPs of a real host: see linux-qp.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_netlink.h>

#include "agents/backend.h"
#include "agents/linux-qp.h"
#include "agents/rdmanl.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

#define PROCESSES_LISTED 16
#define ERRORS_LISTED 32
#define ERR_STATE 6 /* IB_QPS_ERR */

/* A QP as the last read saw it: "DEV|LQPN|PID|TYPE" (a new QP reusing the number of an old
 * one is another QP) -> in the error state or not. */
struct seen {
	char key[96];
	bool err;
};

struct lqp {
	char root[PATH_MAX]; /* "" for the kernel */
	char record[PATH_MAX];
	unsigned max_items;
	struct rdmanl *nl;
	bool said_unavailable;
	/* the QPs of the last read, to tell which entered the error state since */
	struct seen *seen;
	size_t nseen;
	struct hmap by_key; /* of seen */
	bool have_seen;
	int64_t interval_ns, last_ns;
};

void lqp_set_interval(struct lqp *q, int64_t interval_ns)
{
	q->interval_ns = interval_ns;
}

int lqp_new(const char *root, const char *record, unsigned max_items, struct lqp **ret)
{
	struct lqp *q = calloc(1, sizeof(*q));

	*ret = NULL;
	if (!q)
		return -ENOMEM;
	if (str_copy(q->root, sizeof(q->root), root && strcmp(root, "/") ? root : "") < 0 ||
	    str_copy(q->record, sizeof(q->record), record ?: "") < 0) {
		free(q);
		return -ENAMETOOLONG;
	}
	q->max_items = max_items;
	hmap_init(&q->by_key);
	*ret = q;
	return 0;
}

void lqp_free(struct lqp *q)
{
	if (!q)
		return;
	rdmanl_close(q->nl);
	hmap_fini(&q->by_key);
	free(q->seen);
	free(q);
}

/* The name of the file an answer is recorded in. */
static int answer_file(char *out, size_t len, const char *dir, uint16_t cmd, const uint32_t vals[3],
		       const char *devname)
{
	if (cmd == RDMA_NLDEV_CMD_GET)
		return str_fmt(out, len, "%s/devs.bin", dir);
	if (cmd == RDMA_NLDEV_CMD_RES_QP_GET)
		return str_fmt(out, len, "%s/qp-%s.bin", dir, devname);
	return str_fmt(out, len, "%s/stat-%s-%u.bin", dir, devname, vals[1]);
}

struct qctx {
	struct lqp *q;
	struct rdmanl_dev *devs; /* from the first answer, to name files by device */
	size_t ndevs;
};

static const char *dev_name(struct qctx *c, uint32_t index)
{
	for (size_t i = 0; i < c->ndevs; i++)
		if (c->devs[i].index == index)
			return c->devs[i].name;
	return "unknown";
}

static int query(void *ctx, uint16_t cmd, const uint16_t attrs[3], const uint32_t vals[3], void **ret_buf,
		 size_t *ret_len, struct rf_err *e)
{
	struct qctx *c = ctx;
	const char *dev = attrs ? dev_name(c, vals[0]) : "";
	char path[PATH_MAX + 64], dir[PATH_MAX + 16];
	int r;

	if (c->q->root[0]) {
		/* a recorded tree */
		size_t len = 0;
		char *text;

		if (str_fmt(dir, sizeof(dir), "%s/rdma-netlink", c->q->root) < 0 ||
		    answer_file(path, sizeof(path), dir, cmd, vals, dev) < 0)
			return -ENAMETOOLONG;
		if (!(text = str_slurp(path, &len)))
			return rf_err_set(e, -ENOENT, "RDMANL_UNAVAILABLE", path, "not recorded");
		*ret_buf = text;
		*ret_len = len;
	} else if ((r = rdmanl_query(c->q->nl, cmd, attrs, vals, ret_buf, ret_len, e)) < 0) {
		return r;
	}
	if (cmd == RDMA_NLDEV_CMD_GET) {
		struct rf_err pe = { 0 };

		free(c->devs);
		c->devs = NULL;
		rdmanl_parse_devs(*ret_buf, *ret_len, &c->devs, &c->ndevs, &pe);
	}
	if (c->q->record[0] && answer_file(path, sizeof(path), c->q->record, cmd, vals, dev) == 0) {
		FILE *f = fopen(path, "we");

		if (!f || fwrite(*ret_buf, 1, *ret_len, f) != *ret_len)
			log_warning("agent", "cannot record the RDMA netlink answer in %s: %m", path);
		if (f)
			fclose(f);
	}
	return 0;
}

/* /proc/ID/FILE of the host (or of the recorded tree) into buf; its length or -1. */
static ssize_t read_small(struct lqp *q, uint32_t id, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd;

	if (str_fmt(path, sizeof(path), "%s/proc/%u/%s", q->root, id, file) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0) /* (never waited on) */
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* The kernel names the thread that created a QP: its process (the Tgid of /proc/TID/status,
 * the thread itself when that cannot be read) and the process's name, made printable (a
 * process names itself, and a report must not be refused for it): "?" when none. */
static uint32_t owner_of(struct lqp *q, uint32_t tid, char *out, size_t len)
{
	char buf[2048], *t;
	uint32_t pid = tid;

	if (read_small(q, tid, "status", buf, sizeof(buf)) > 0 && (t = strstr(buf, "\nTgid:")))
		pid = (uint32_t)strtoul(t + 6, NULL, 10) ?: tid;
	snprintf(out, len, "?");
	if (read_small(q, pid, "comm", buf, 64) <= 0)
		return pid;
	buf[strcspn(buf, "\n")] = '\0';
	str_make_printable(buf);
	/* only printable ASCII: a name cut inside a UTF-8 character would be no string */
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p >= 0x7f)
			*p = '?';
	if (buf[0])
		snprintf(out, len, "%.63s", buf);
	return pid;
}

static void seen_key(const struct rdmanl_qp *qp, char key[96])
{
	snprintf(key, 96, "%s|%u|%u|%u", qp->dev, qp->lqpn, qp->pid, qp->type);
}

/* How busy a QP is by its counters: bytes first, then packets, then everything. */
static double busy(const struct rdmanl_qps *all, const struct rdmanl_qp *qp)
{
	const struct rdmanl_counter *c;
	double bytes = 0, pkts = 0, any = 0;

	if (qp->counter < 0)
		return -1;
	c = &all->counters[qp->counter];
	for (size_t i = 0; i < c->nvalues; i++) {
		if (strstr(c->names[i], "bytes"))
			bytes += (double)c->values[i];
		else if (strstr(c->names[i], "packets") || strstr(c->names[i], "requests"))
			pkts += (double)c->values[i];
		any += (double)c->values[i];
	}
	return bytes * 1e6 + pkts * 1e3 + any;
}

static int by_interest(const void *a, const void *b, void *all)
{
	const struct rdmanl_qp *x = *(const struct rdmanl_qp *const *)a, *y = *(const struct rdmanl_qp *const *)b;
	double bx, by;

	if ((x->state == ERR_STATE) != (y->state == ERR_STATE))
		return x->state == ERR_STATE ? -1 : 1;
	bx = busy(all, x);
	by = busy(all, y);
	if (bx != by)
		return bx > by ? -1 : 1;
	if (strcmp(x->dev, y->dev))
		return strcmp(x->dev, y->dev);
	return x->lqpn < y->lqpn ? -1 : x->lqpn > y->lqpn;
}

static void count(json_t *o, const char *key)
{
	json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + 1));
}

int lqp_read(struct lqp *q, json_t **ret, json_t *errors)
{
	struct rdmanl_qps all = { 0 };
	struct qctx c = { .q = q };
	const struct rdmanl_qp **order = NULL;
	const char *why = NULL;
	struct rf_err e = { 0 };
	json_t *out = NULL, *by_type, *by_state, *procs, *items, *errs;
	json_int_t entered = 0;
	struct seen *seen;
	int r;

	*ret = NULL;
	/* a QP dump is a firmware command per QP on some drivers: not on every report */
	if (q->have_seen && q->interval_ns > 0 && tu_mono_ns() - q->last_ns < q->interval_ns)
		return -EAGAIN;
	{
		/* a host without RDMA (or a tree recorded without its QPs) has no QPs to report */
		char path[PATH_MAX + 32];

		if (str_fmt(path, sizeof(path), "%s%s", q->root, q->root[0] ? "/rdma-netlink" : "/sys/class/infiniband") < 0 ||
		    access(path, F_OK) != 0)
			return -EOPNOTSUPP;
	}
	if (!q->root[0] && !q->nl && (r = rdmanl_open(&q->nl, &e)) < 0) {
		collect_error(errors, e.code, "qps", "%s", e.msg);
		return r;
	}
	if ((r = rdmanl_read_qps(query, &c, &all, &why, &e)) < 0) {
		collect_error(errors, e.code, "qps", "%s", e.msg);
		/* a fresh socket next time: nothing of this answer is left queued on it */
		rdmanl_close(q->nl);
		q->nl = NULL;
		goto out;
	}
	by_type = json_object();
	by_state = json_object();
	procs = json_object();
	items = json_array();
	errs = json_array();
	seen = calloc(all.n + 1, sizeof(*seen));
	order = calloc(all.n + 1, sizeof(*order));
	if (!seen || !order) {
		free(seen);
		json_decref(by_type);
		json_decref(by_state);
		json_decref(procs);
		json_decref(items);
		json_decref(errs);
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < all.n; i++) {
		struct rdmanl_qp *qp = &all.qps[i];
		bool err = qp->state == ERR_STATE;
		char key[96];

		if (qp->pid)
			qp->pid = owner_of(q, qp->pid, qp->comm, sizeof(qp->comm));
		else if (qp->orphan)
			snprintf(qp->comm, sizeof(qp->comm), "?");
		else
			str_make_printable(qp->comm);
		count(by_type, rdmanl_qp_type(qp->type));
		count(by_state, rdmanl_qp_state(qp->state));
		/* processes by pid (kernel QPs by their owner's name) */
		if (qp->pid)
			snprintf(key, sizeof(key), "%u", qp->pid);
		else
			snprintf(key, sizeof(key), "kernel:%s", qp->comm);
		if (!json_object_get(procs, key))
			json_object_set_new(procs, key,
					    qp->pid ? json_pack("{s:i,s:s,s:i}", "pid", (int)qp->pid, "comm", qp->comm, "qps", 0)
						    : json_pack("{s:s,s:b,s:i}", "comm", qp->comm, "kernel", 1, "qps", 0));
		{
			json_t *p = json_object_get(procs, key);

			json_object_set_new(p, "qps", json_integer(json_integer_value(json_object_get(p, "qps")) + 1));
		}
		/* entered the error state since the last read: in error now, and not then (sampled:
		 * a QP that went into error and away between two reads is not seen; one moved to
		 * the error state to be flushed before it is destroyed is) */
		seen_key(qp, seen[i].key);
		seen[i].err = err;
		struct seen *was = q->have_seen ? hmap_get(&q->by_key, seen[i].key) : NULL;

		if (err && q->have_seen && !(was && was->err)) {
			entered++;
			if (json_array_size(errs) < ERRORS_LISTED)
				json_array_append_new(errs, json_pack("{s:s,s:i,s:I}", "device", qp->dev, "port",
								      (int)qp->port, "lqpn", (json_int_t)qp->lqpn));
		}
		order[i] = qp;
	}
	qsort_r(order, all.n, sizeof(*order), by_interest, &all);
	for (size_t i = 0; i < all.n && i < q->max_items; i++) {
		const struct rdmanl_qp *qp = order[i];
		json_t *it = json_pack("{s:s,s:i,s:I,s:s,s:s,s:s}", "device", qp->dev, "port", (int)qp->port, "lqpn",
				       (json_int_t)qp->lqpn, "type", rdmanl_qp_type(qp->type), "state",
				       rdmanl_qp_state(qp->state), "comm", qp->comm);

		if (qp->has_rqpn)
			json_object_set_new(it, "rqpn", json_integer(qp->rqpn));
		if (qp->pid)
			json_object_set_new(it, "pid", json_integer(qp->pid));
		else
			json_object_set_new(it, "kernel", json_true());
		if (qp->counter >= 0) {
			const struct rdmanl_counter *ct = &all.counters[qp->counter];
			json_t *vals = json_object();

			for (size_t k = 0; k < ct->nvalues; k++)
				json_object_set_new(vals, ct->names[k],
						    json_integer(ct->values[k] > INT64_MAX ? INT64_MAX : (json_int_t)ct->values[k]));
			json_object_set_new(it, "counter_id", json_integer(ct->id));
			json_object_set_new(it, "counters", vals);
		}
		json_array_append_new(items, it);
	}
	/* the processes with the most QPs */
	{
		json_t *list = json_array(), *p;
		const char *k;

		json_object_foreach(procs, k, p)
			json_array_append(list, p);
		for (size_t i = 1; i < json_array_size(list); i++) /* insertion sort: few processes */
			for (size_t j = i; j > 0 && json_integer_value(json_object_get(json_array_get(list, j), "qps")) >
							    json_integer_value(json_object_get(json_array_get(list, j - 1), "qps"));
			     j--) {
				json_t *a = json_incref(json_array_get(list, j - 1));

				json_array_set(list, j - 1, json_array_get(list, j));
				json_array_set_new(list, j, a);
			}
		while (json_array_size(list) > PROCESSES_LISTED)
			json_array_remove(list, json_array_size(list) - 1);
		json_decref(procs);
		procs = list;
	}
	out = json_pack("{s:I,s:o,s:o,s:o,s:o,s:b}", "total", (json_int_t)all.n, "by_type", by_type, "by_state",
			by_state, "processes", procs, "items", items, "truncated", all.n > q->max_items);
	if (q->have_seen) {
		json_object_set_new(out, "entered_error", json_integer(entered));
		json_object_set_new(out, "entered_error_qps", errs);
	} else {
		json_decref(errs);
	}
	/* whether the QPs carry counters, and why not */
	json_object_set_new(out, "counters",
			    why ? json_pack("{s:s,s:s}", "state", "unsupported", "note", why)
			    : all.ncounters ? json_pack("{s:s,s:I}", "state", "bound", "bound", (json_int_t)all.ncounters)
					    : json_pack("{s:s,s:s}", "state", "none", "note",
							"no counter is bound to a QP: rdma statistic qp set link DEV/PORT auto type on"));
	hmap_fini(&q->by_key);
	hmap_init(&q->by_key);
	free(q->seen);
	q->seen = seen;
	q->nseen = all.n;
	for (size_t i = 0; i < all.n; i++)
		hmap_put(&q->by_key, seen[i].key, &seen[i], NULL);
	q->have_seen = true;
	q->last_ns = tu_mono_ns();
	*ret = out;
	r = 0;
out:
	free(order);
	free(c.devs);
	rdmanl_qps_clear(&all);
	return r;
}
