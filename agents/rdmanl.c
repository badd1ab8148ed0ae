/* RDMA netlink: see rdmanl.h.  The messages (include/uapi/rdma/rdma_netlink.h):
 *   RDMA_NLDEV_CMD_GET (dump)          one message per device: DEV_INDEX, DEV_NAME, ...
 *   RDMA_NLDEV_CMD_RES_QP_GET (dump,   DEV_INDEX, DEV_NAME and RES_QP, a table of RES_QP_ENTRY
 *     DEV_INDEX required)              (LQPN, RQPN, TYPE, STATE, PORT_INDEX, PID or KERN_NAME)
 *   RDMA_NLDEV_CMD_STAT_GET (dump,     DEV_INDEX, DEV_NAME and STAT_COUNTER, a table of
 *     DEV_INDEX, PORT_INDEX,           STAT_COUNTER_ENTRY (STAT_COUNTER_ID, PORT_INDEX,
 *     STAT_RES = RES_QP)               STAT_HWCOUNTERS of HWCOUNTER_ENTRY {NAME, VALUE}, RES_QP
 *                                      of RES_QP_ENTRY {LQPN})
 * There is no family header after the netlink header. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <linux/netlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>

#include "agents/rdmanl.h"
#include "lib/strutil.h"

#define NA RDMA_NLDEV_ATTR_MAX

static struct nla_policy policy[NA] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_DEV_NAME] = { .type = NLA_STRING, .maxlen = 64 },
	[RDMA_NLDEV_ATTR_PORT_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_QP] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_RES_QP_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_RES_LQPN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_RQPN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_TYPE] = { .type = NLA_U8 },
	[RDMA_NLDEV_ATTR_RES_STATE] = { .type = NLA_U8 },
	[RDMA_NLDEV_ATTR_RES_PID] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_KERN_NAME] = { .type = NLA_STRING, .maxlen = 256 },
	[RDMA_NLDEV_ATTR_STAT_COUNTER] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ID] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME] = { .type = NLA_STRING, .maxlen = 256 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE] = { .type = NLA_U64 },
};

void rdmanl_qps_clear(struct rdmanl_qps *q)
{
	for (size_t i = 0; i < q->ncounters; i++)
		free(q->counters[i].lqpns);
	free(q->counters);
	free(q->qps);
	memset(q, 0, sizeof(*q));
}

const char *rdmanl_qp_type(uint8_t type)
{
	static const char *const names[] = { "SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE",
					     "UNKNOWN", "RAW_PACKET", "XRC_INI", "XRC_TGT" };

	if (type == 0xff)
		return "DRIVER";
	return type < ARRAY_SIZE(names) ? names[type] : "UNKNOWN";
}

const char *rdmanl_qp_state(uint8_t state)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return state < ARRAY_SIZE(names) ? names[state] : "UNKNOWN";
}

static int garbage(struct rf_err *e, const char *what)
{
	return rf_err_set(e, -EBADMSG, "RDMANL_GARBAGE", "rdma netlink", "not an answer of the kernel's: %s", what);
}

/* Walks the messages of an answer: calls fn for each data message.  NLMSG_DONE ends it; an
 * NLMSG_ERROR with an error is the kernel's refusal. */
static int walk(const void *buf, size_t len, uint16_t cmd,
		int (*fn)(struct nlmsghdr *nlh, void *ctx, struct rf_err *e), void *ctx, struct rf_err *e)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	int rem = len > (size_t)INT32_MAX ? INT32_MAX : (int)len, r;
	bool done = false;

	if (!buf || len < sizeof(struct nlmsghdr))
		return garbage(e, "shorter than a netlink header");
	for (; nlmsg_ok(nlh, rem); nlh = nlmsg_next(nlh, &rem)) {
		if (nlh->nlmsg_type == NLMSG_DONE) {
			/* a dump that failed part way ends with DONE carrying the errno */
			if (nlmsg_datalen(nlh) >= (int)sizeof(int)) {
				int err;

				memcpy(&err, nlmsg_data(nlh), sizeof(err));
				if (err < 0 && err >= -4095)
					return rf_err_set(e, err, "RDMANL_KERNEL_ERROR", "rdma netlink",
							  "the kernel's dump failed: %s", strerror(-err));
			}
			done = true;
			break;
		}
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *err = nlmsg_data(nlh);

			if (nlmsg_datalen(nlh) < (int)sizeof(*err))
				return garbage(e, "a truncated error message");
			if (err->error == 0) /* an acknowledgement */
				continue;
			if (err->error > 0 || err->error < -4095)
				return garbage(e, "an error message with no errno");
			return rf_err_set(e, err->error, "RDMANL_KERNEL_ERROR", "rdma netlink",
					  "the kernel refused: %s", strerror(-err->error));
		}
		if (RDMA_NL_GET_CLIENT(nlh->nlmsg_type) != RDMA_NL_NLDEV)
			return garbage(e, "a message of another netlink client");
		if (RDMA_NL_GET_OP(nlh->nlmsg_type) != cmd)
			return garbage(e, "the answer to another command");
		if ((r = fn(nlh, ctx, e)) < 0)
			return r;
	}
	if (!done && rem != 0)
		return garbage(e, "a truncated or malformed message");
	return 0;
}

static int parse_top(struct nlmsghdr *nlh, struct nlattr **tb, struct rf_err *e)
{
	if (nlmsg_parse(nlh, 0, tb, NA - 1, policy) < 0)
		return garbage(e, "attributes of the wrong type or length");
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return garbage(e, "a message without its device");
	return 0;
}

struct devs_ctx {
	struct rdmanl_dev *v;
	size_t n;
};

static int dev_msg(struct nlmsghdr *nlh, void *ctx, struct rf_err *e)
{
	struct devs_ctx *c = ctx;
	struct nlattr *tb[NA] = { 0 };
	struct rdmanl_dev *nv;
	int r;

	if ((r = parse_top(nlh, tb, e)) < 0)
		return r;
	if (c->n >= 4096 || !(nv = realloc(c->v, (c->n + 1) * sizeof(*nv))))
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "too many RDMA devices");
	c->v = nv;
	nv[c->n].index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	str_copy(nv[c->n].name, sizeof(nv[c->n].name), nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]));
	c->n++;
	return 0;
}

int rdmanl_parse_devs(const void *buf, size_t len, struct rdmanl_dev **ret, size_t *ret_n,
		      struct rf_err *e)
{
	struct devs_ctx c = { 0 };
	int r = walk(buf, len, RDMA_NLDEV_CMD_GET, dev_msg, &c, e);

	if (r < 0) {
		free(c.v);
		return r;
	}
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}

static int qp_msg(struct nlmsghdr *nlh, void *ctx, struct rf_err *e)
{
	struct rdmanl_qps *q = ctx;
	struct nlattr *tb[NA] = { 0 }, *ent;
	const char *dev;
	int r, rem;

	if ((r = parse_top(nlh, tb, e)) < 0)
		return r;
	dev = nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	if (!tb[RDMA_NLDEV_ATTR_RES_QP])
		return 0; /* a device without QPs */
	nla_for_each_nested(ent, tb[RDMA_NLDEV_ATTR_RES_QP], rem) {
		struct nlattr *line[NA] = { 0 };
		struct rdmanl_qp *qp;

		if (nla_type(ent) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
			continue;
		if (nla_parse_nested(line, NA - 1, ent, policy) < 0)
			return garbage(e, "a QP of the wrong shape");
		/* (a user QP whose creating thread is gone has no owner: the kernel leaves the pid
		 * out; it is still a QP) */
		if (!line[RDMA_NLDEV_ATTR_RES_LQPN] || !line[RDMA_NLDEV_ATTR_RES_TYPE] ||
		    !line[RDMA_NLDEV_ATTR_RES_STATE])
			return garbage(e, "a QP without its number, type or state");
		if (q->n == q->cap) {
			size_t nc = q->cap ? q->cap * 2 : 64;
			struct rdmanl_qp *nq;

			if (nc > RDMANL_MAX_QPS)
				nc = RDMANL_MAX_QPS;
			if (q->n >= RDMANL_MAX_QPS || !(nq = realloc(q->qps, nc * sizeof(*nq))))
				return rf_err_set(e, -E2BIG, "RDMANL_TOO_MANY", "rdma netlink",
						  "more than %d QPs", RDMANL_MAX_QPS);
			q->qps = nq;
			q->cap = nc;
		}
		qp = &q->qps[q->n++];
		memset(qp, 0, sizeof(*qp));
		qp->counter = -1;
		str_copy(qp->dev, sizeof(qp->dev), dev);
		qp->lqpn = nla_get_u32(line[RDMA_NLDEV_ATTR_RES_LQPN]);
		qp->type = nla_get_u8(line[RDMA_NLDEV_ATTR_RES_TYPE]);
		qp->state = nla_get_u8(line[RDMA_NLDEV_ATTR_RES_STATE]);
		if (line[RDMA_NLDEV_ATTR_PORT_INDEX])
			qp->port = nla_get_u32(line[RDMA_NLDEV_ATTR_PORT_INDEX]);
		if (line[RDMA_NLDEV_ATTR_RES_RQPN]) {
			qp->rqpn = nla_get_u32(line[RDMA_NLDEV_ATTR_RES_RQPN]);
			qp->has_rqpn = true;
		}
		if (line[RDMA_NLDEV_ATTR_RES_PID])
			qp->pid = nla_get_u32(line[RDMA_NLDEV_ATTR_RES_PID]);
		else if (line[RDMA_NLDEV_ATTR_RES_KERN_NAME])
			str_copy(qp->comm, sizeof(qp->comm), nla_get_string(line[RDMA_NLDEV_ATTR_RES_KERN_NAME]));
		else
			qp->orphan = true;
	}
	if (rem != 0)
		return garbage(e, "a truncated QP table");
	return 0;
}

int rdmanl_parse_qps(const void *buf, size_t len, struct rdmanl_qps *q, struct rf_err *e)
{
	return walk(buf, len, RDMA_NLDEV_CMD_RES_QP_GET, qp_msg, q, e);
}

static int counter_entry(struct rdmanl_qps *q, const char *dev, struct nlattr *ent, struct rf_err *e)
{
	struct nlattr *line[NA] = { 0 }, *x;
	struct rdmanl_counter *c, *nc;
	int rem;

	if (nla_parse_nested(line, NA - 1, ent, policy) < 0)
		return garbage(e, "a counter of the wrong shape");
	if (!line[RDMA_NLDEV_ATTR_STAT_COUNTER_ID] || !line[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS] ||
	    !line[RDMA_NLDEV_ATTR_RES_QP])
		return garbage(e, "a counter without its id, values or QPs");
	if (q->ncounters >= 65536 || !(nc = realloc(q->counters, (q->ncounters + 1) * sizeof(*nc))))
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "too many counters");
	q->counters = nc;
	c = &nc[q->ncounters++];
	memset(c, 0, sizeof(*c));
	str_copy(c->dev, sizeof(c->dev), dev);
	c->id = nla_get_u32(line[RDMA_NLDEV_ATTR_STAT_COUNTER_ID]);
	if (line[RDMA_NLDEV_ATTR_PORT_INDEX])
		c->port = nla_get_u32(line[RDMA_NLDEV_ATTR_PORT_INDEX]);
	nla_for_each_nested(x, line[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], rem) {
		struct nlattr *hw[NA] = { 0 };

		if (nla_parse_nested(hw, NA - 1, x, policy) < 0 || !hw[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME] ||
		    !hw[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE])
			return garbage(e, "a counter value without its name or value");
		if (c->nvalues == RDMANL_QP_COUNTERS)
			continue;
		str_copy(c->names[c->nvalues], sizeof(c->names[0]),
			 nla_get_string(hw[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME]));
		c->values[c->nvalues++] = nla_get_u64(hw[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE]);
	}
	nla_for_each_nested(x, line[RDMA_NLDEV_ATTR_RES_QP], rem) {
		struct nlattr *ql[NA] = { 0 };
		uint32_t *nl;

		if (nla_parse_nested(ql, NA - 1, x, policy) < 0 || !ql[RDMA_NLDEV_ATTR_RES_LQPN])
			return garbage(e, "a counter's QP without its number");
		if (c->nlqpns >= RDMANL_MAX_QPS || !(nl = realloc(c->lqpns, (c->nlqpns + 1) * sizeof(*nl))))
			return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "too many QPs on a counter");
		c->lqpns = nl;
		nl[c->nlqpns++] = nla_get_u32(ql[RDMA_NLDEV_ATTR_RES_LQPN]);
	}
	return 0;
}

static int counter_msg(struct nlmsghdr *nlh, void *ctx, struct rf_err *e)
{
	struct nlattr *tb[NA] = { 0 }, *ent;
	int r, rem;

	if ((r = parse_top(nlh, tb, e)) < 0)
		return r;
	if (!tb[RDMA_NLDEV_ATTR_STAT_COUNTER])
		return 0;
	nla_for_each_nested(ent, tb[RDMA_NLDEV_ATTR_STAT_COUNTER], rem)
		if (nla_type(ent) == RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY &&
		    (r = counter_entry(ctx, nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), ent, e)) < 0)
			return r;
	return 0;
}

int rdmanl_parse_counters(const void *buf, size_t len, struct rdmanl_qps *q, struct rf_err *e)
{
	return walk(buf, len, RDMA_NLDEV_CMD_STAT_GET, counter_msg, q, e);
}

static int by_dev_lqpn(const void *a, const void *b)
{
	const struct rdmanl_qp *x = *(const struct rdmanl_qp *const *)a, *y = *(const struct rdmanl_qp *const *)b;
	int c = strcmp(x->dev, y->dev);

	return c ? c : (x->lqpn > y->lqpn) - (x->lqpn < y->lqpn);
}

/* (sorted by device and number, each bound QP found by a binary search) */
void rdmanl_bind_counters(struct rdmanl_qps *q)
{
	struct rdmanl_qp **idx = calloc(q->n + 1, sizeof(*idx));

	if (!idx)
		return;
	for (size_t i = 0; i < q->n; i++)
		idx[i] = &q->qps[i];
	qsort(idx, q->n, sizeof(*idx), by_dev_lqpn);
	for (size_t c = 0; c < q->ncounters; c++)
		for (size_t k = 0; k < q->counters[c].nlqpns; k++) {
			struct rdmanl_qp key = { .lqpn = q->counters[c].lqpns[k] }, *kp = &key, **hit;

			snprintf(key.dev, sizeof(key.dev), "%s", q->counters[c].dev);
			hit = bsearch(&kp, idx, q->n, sizeof(*idx), by_dev_lqpn);
			if (hit)
				(*hit)->counter = (int)c;
		}
	free(idx);
}

/* --- live -------------------------------------------------------------------------------------- */

struct rdmanl {
	struct nl_sock *sk;
};

int rdmanl_open(struct rdmanl **ret, struct rf_err *e)
{
	struct rdmanl *nl = calloc(1, sizeof(*nl));
	struct timeval tv = { .tv_sec = 1 };
	int r;

	*ret = NULL;
	if (!nl || !(nl->sk = nl_socket_alloc())) {
		free(nl);
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	}
	if ((r = nl_connect(nl->sk, NETLINK_RDMA)) < 0) {
		nl_socket_free(nl->sk);
		free(nl);
		return rf_err_set(e, -EPROTONOSUPPORT, "RDMANL_UNAVAILABLE", "rdma netlink",
				  "cannot open NETLINK_RDMA (%s): this kernel has no RDMA core", nl_geterror(r));
	}
	setsockopt(nl_socket_get_fd(nl->sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	nl_socket_set_buffer_size(nl->sk, 1 << 20, 0);
	*ret = nl;
	return 0;
}

void rdmanl_close(struct rdmanl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->sk);
	free(nl);
}

int rdmanl_query(struct rdmanl *nl, uint16_t cmd, const uint16_t attrs[3], const uint32_t vals[3],
		 void **ret_buf, size_t *ret_len, struct rf_err *e)
{
	struct nl_msg *msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), NLM_F_REQUEST | NLM_F_DUMP);
	char *out = NULL;
	size_t len = 0;
	uint32_t seq;
	int r;

	*ret_buf = NULL;
	*ret_len = 0;
	if (!msg)
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	for (int i = 0; i < 3 && attrs && attrs[i]; i++)
		nla_put_u32(msg, attrs[i], vals[i]);
	r = nl_send_auto(nl->sk, msg);
	seq = nlmsg_hdr(msg)->nlmsg_seq;
	nlmsg_free(msg);
	if (r < 0)
		return rf_err_set(e, -EIO, "RDMANL_FAILED", "rdma netlink", "cannot send: %s", nl_geterror(r));
	for (;;) {
		unsigned char *chunk = NULL;
		struct sockaddr_nl from;
		struct nlmsghdr *nlh;
		int n = nl_recv(nl->sk, &from, &chunk, NULL), rem;
		bool over = false;

		if (n <= 0) {
			free(out);
			return rf_err_set(e, n == 0 ? -ETIMEDOUT : -EIO, "RDMANL_FAILED", "rdma netlink",
					  "no answer from the kernel: %s", n == 0 ? "closed" : nl_geterror(n));
		}
		if (from.nl_pid != 0) { /* only the kernel answers */
			free(chunk);
			continue;
		}
		/* the messages of this request only (what an earlier, abandoned dump left queued
		 * is skipped); they end with DONE or an error */
		for (nlh = (struct nlmsghdr *)chunk, rem = n; nlmsg_ok(nlh, rem); nlh = nlmsg_next(nlh, &rem)) {
			char *grown;

			if (nlh->nlmsg_seq != seq)
				continue;
			if (len + nlh->nlmsg_len > RDMANL_MAX_REPLY || !(grown = realloc(out, len + nlh->nlmsg_len))) {
				free(chunk);
				free(out);
				return rf_err_set(e, -E2BIG, "RDMANL_TOO_MANY", "rdma netlink",
						  "the answer is larger than %u bytes", RDMANL_MAX_REPLY);
			}
			out = grown;
			memcpy(out + len, nlh, nlh->nlmsg_len);
			len += nlh->nlmsg_len;
			if (nlh->nlmsg_type == NLMSG_DONE || nlh->nlmsg_type == NLMSG_ERROR || !(nlh->nlmsg_flags & NLM_F_MULTI))
				over = true;
		}
		free(chunk);
		if (over || rem != 0)
			break; /* (a malformed rest: the parser says so) */
	}
	if (!out)
		return rf_err_set(e, -EBADMSG, "RDMANL_GARBAGE", "rdma netlink", "an empty answer");
	*ret_buf = out;
	*ret_len = len;
	return 0;
}

int rdmanl_query_live(void *nl, uint16_t cmd, const uint16_t attrs[3], const uint32_t vals[3],
		      void **ret_buf, size_t *ret_len, struct rf_err *e)
{
	return rdmanl_query(nl, cmd, attrs, vals, ret_buf, ret_len, e);
}

int rdmanl_read_qps(rdmanl_query_fn query, void *ctx, struct rdmanl_qps *q,
		    const char **ret_counters_why, struct rf_err *e)
{
	struct rdmanl_dev *devs = NULL;
	size_t ndevs = 0, len;
	void *buf = NULL;
	int r;

	*ret_counters_why = NULL;
	if ((r = query(ctx, RDMA_NLDEV_CMD_GET, NULL, NULL, &buf, &len, e)) < 0)
		return r;
	r = rdmanl_parse_devs(buf, len, &devs, &ndevs, e);
	free(buf);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ndevs && r == 0; i++) {
		static const uint16_t qa[3] = { RDMA_NLDEV_ATTR_DEV_INDEX };
		uint32_t qv[3] = { devs[i].index };

		if ((r = query(ctx, RDMA_NLDEV_CMD_RES_QP_GET, qa, qv, &buf, &len, e)) == 0) {
			r = rdmanl_parse_qps(buf, len, q, e);
			free(buf);
		}
	}
	/* the counters bound to QPs, per port of every device that has QPs on it */
	for (size_t i = 0; i < ndevs && r == 0; i++) {
		uint32_t ports[16];
		size_t np = 0;

		for (size_t k = 0; k < q->n; k++) {
			bool seen = false;

			if (strcmp(q->qps[k].dev, devs[i].name) || !q->qps[k].port)
				continue;
			for (size_t j = 0; j < np; j++)
				seen |= ports[j] == q->qps[k].port;
			if (!seen && np < ARRAY_SIZE(ports))
				ports[np++] = q->qps[k].port;
		}
		for (size_t j = 0; j < np; j++) {
			static const uint16_t sa[3] = { RDMA_NLDEV_ATTR_DEV_INDEX, RDMA_NLDEV_ATTR_PORT_INDEX,
							RDMA_NLDEV_ATTR_STAT_RES };
			uint32_t sv[3] = { devs[i].index, ports[j], RDMA_NLDEV_ATTR_RES_QP };
			struct rf_err ce = { 0 };
			int c;

			if ((c = query(ctx, RDMA_NLDEV_CMD_STAT_GET, sa, sv, &buf, &len, &ce)) == 0) {
				c = rdmanl_parse_counters(buf, len, q, &ce);
				free(buf);
			}
			if (c == -EOPNOTSUPP || c == -EINVAL || c == -ENOENT) {
				*ret_counters_why = "the driver keeps no per-QP counters (rdma statistic qp)";
			} else if (c < 0) {
				*e = ce;
				r = c;
				break;
			}
		}
	}
	rdmanl_bind_counters(q);
	free(devs);
	return r;
}
