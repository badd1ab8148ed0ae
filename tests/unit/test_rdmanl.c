/* RDMA netlink (agents/rdmanl.c, agents/linux-qp.c): the QP table as real rxe answered it in the
 * soft-RoCE guest (tests/data/rdma-netlink/rxe-qps, recorded with linux.rdma_record while
 * qp-hold held an RC QP in INIT and a UD QP in RTS), counters bound to QPs as a driver that
 * keeps them answers, and garbage: cut, flipped, from another client, a kernel error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "agents/linux-qp.h"
#include "agents/rdmanl.h"
#include "lib/strutil.h"
#include "tests/unit/unit.h"

#define REC "tests/data/rdma-netlink/rxe-qps"

static char *slurp(const char *name, size_t *len)
{
	char path[256];
	char *t;

	snprintf(path, sizeof(path), REC "/rdma-netlink/%s", name);
	t = str_slurp(path, len);
	assert_non_null(t);
	return t;
}

static void test_recorded_rxe(void **state)
{
	struct rdmanl_qps q = { 0 };
	struct rdmanl_dev *devs = NULL;
	struct rf_err e = { 0 };
	size_t len, n = 0;
	char *buf;

	(void)state;
	buf = slurp("devs.bin", &len);
	assert_int_equal(rdmanl_parse_devs(buf, len, &devs, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(devs[0].name, "rxe0");
	free(devs);
	free(buf);
	buf = slurp("qp-rxe0.bin", &len);
	assert_int_equal(rdmanl_parse_qps(buf, len, &q, &e), 0);
	free(buf);
	assert_int_equal(q.n, 3);
	/* rxe's GSI QP (a kernel QP, owned by ib_core), and qp-hold's two, in the kernel's order */
	{
		const struct rdmanl_qp *gsi = NULL, *rc = NULL, *ud = NULL;

		for (size_t i = 0; i < q.n; i++) {
			if (q.qps[i].lqpn == 1)
				gsi = &q.qps[i];
			if (q.qps[i].lqpn == 50)
				rc = &q.qps[i];
			if (q.qps[i].lqpn == 51)
				ud = &q.qps[i];
		}
		assert_non_null(gsi);
		assert_non_null(rc);
		assert_non_null(ud);
		assert_string_equal(rdmanl_qp_type(gsi->type), "GSI");
		assert_int_equal(gsi->pid, 0);
		assert_string_equal(gsi->comm, "ib_core");
		assert_string_equal(rdmanl_qp_type(rc->type), "RC");
		assert_string_equal(rdmanl_qp_state(rc->state), "INIT");
		assert_int_equal(rc->pid, 235);
		assert_int_equal(rc->port, 1);
		assert_string_equal(rdmanl_qp_type(ud->type), "UD");
		assert_string_equal(rdmanl_qp_state(ud->state), "RTS");
	}
	/* rxe keeps no per-QP counters: the answer holds none */
	buf = slurp("stat-rxe0-1.bin", &len);
	assert_int_equal(rdmanl_parse_counters(buf, len, &q, &e), 0);
	free(buf);
	assert_int_equal(q.ncounters, 0);
	rdmanl_qps_clear(&q);
}

/* Every cut of a real answer and every byte flipped: an error or fewer QPs, never a crash
 * (the sanitizer build runs this too), never a QP made up of garbage beyond the first 3. */
static void test_garbage(void **state)
{
	size_t len;
	char *buf = slurp("qp-rxe0.bin", &len), *copy = malloc(len);

	(void)state;
	assert_non_null(copy);
	for (size_t cut = 0; cut < len; cut++) {
		struct rdmanl_qps q = { 0 };
		struct rf_err e = { 0 };
		int r;

		memcpy(copy, buf, cut);
		r = rdmanl_parse_qps(copy, cut, &q, &e);
		if (r < 0)
			assert_string_equal(e.code, "RDMANL_GARBAGE");
		assert_true(q.n <= 3);
		rdmanl_qps_clear(&q);
	}
	for (size_t at = 0; at < len; at++)
		for (int bit = 0; bit < 8; bit++) {
			struct rdmanl_qps q = { 0 };
			struct rf_err e = { 0 };

			memcpy(copy, buf, len);
			copy[at] ^= (char)(1 << bit);
			rdmanl_parse_qps(copy, len, &q, &e);
			assert_true(q.n <= 3);
			rdmanl_qps_clear(&q);
		}
	free(copy);
	free(buf);
}

/* A message as the kernel would send it, built with libnl. */
static struct nl_msg *msg(uint16_t cmd, uint16_t type_override)
{
	struct nl_msg *m = nlmsg_alloc_simple(type_override ? type_override : RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd),
					      NLM_F_MULTI);

	assert_non_null(m);
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
	return m;
}

static void test_errors_and_other_clients(void **state)
{
	struct rdmanl_qps q = { 0 };
	struct rf_err e = { 0 };
	struct nl_msg *m;
	char buf[64];

	(void)state;
	/* the kernel's refusal (a driver without QP counters) */
	{
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		struct nlmsgerr *err = (struct nlmsgerr *)(h + 1);

		memset(buf, 0, sizeof(buf));
		h->nlmsg_len = NLMSG_LENGTH(sizeof(*err));
		h->nlmsg_type = NLMSG_ERROR;
		err->error = -EOPNOTSUPP;
		assert_int_equal(rdmanl_parse_counters(buf, h->nlmsg_len, &q, &e), -EOPNOTSUPP);
		assert_string_equal(e.code, "RDMANL_KERNEL_ERROR");
		/* an "error" that is no errno */
		err->error = 5;
		assert_int_equal(rdmanl_parse_counters(buf, h->nlmsg_len, &q, &e), -EBADMSG);
	}
	/* a message of another netlink client */
	m = msg(RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NL_GET_TYPE(RDMA_NL_LS, 1));
	assert_int_equal(rdmanl_parse_qps(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &q, &e), -EBADMSG);
	nlmsg_free(m);
	/* a QP without its state */
	m = msg(RDMA_NLDEV_CMD_RES_QP_GET, 0);
	{
		struct nlattr *t = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP), *x = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);

		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 7);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, 2);
		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, 10);
		nla_nest_end(m, x);
		nla_nest_end(m, t);
	}
	assert_int_equal(rdmanl_parse_qps(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &q, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "without its number, type or state"));
	nlmsg_free(m);
	/* a QP whose creating thread is gone (no pid, no kernel name): still a QP, the rest read */
	m = msg(RDMA_NLDEV_CMD_RES_QP_GET, 0);
	{
		struct nlattr *t = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP), *x = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);

		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 8);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, 2);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, 6);
		nla_nest_end(m, x);
		nla_nest_end(m, t);
	}
	assert_int_equal(rdmanl_parse_qps(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &q, &e), 0);
	assert_int_equal(q.n, 1);
	assert_true(q.qps[0].orphan && q.qps[0].pid == 0);
	nlmsg_free(m);
	/* the QP table where the device list was asked for: the answer to another command */
	m = msg(RDMA_NLDEV_CMD_RES_QP_GET, 0);
	{
		struct rdmanl_dev *devs = NULL;
		size_t n = 0;

		assert_int_equal(rdmanl_parse_devs(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &devs, &n, &e), -EBADMSG);
		assert_non_null(strstr(e.msg, "another command"));
		free(devs);
	}
	nlmsg_free(m);
	/* a dump that failed part way: DONE carrying the errno */
	{
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		int err = -EINVAL;

		memset(buf, 0, sizeof(buf));
		h->nlmsg_len = NLMSG_LENGTH(sizeof(err));
		h->nlmsg_type = NLMSG_DONE;
		memcpy(h + 1, &err, sizeof(err));
		assert_int_equal(rdmanl_parse_qps(buf, h->nlmsg_len, &q, &e), -EINVAL);
		assert_string_equal(e.code, "RDMANL_KERNEL_ERROR");
	}
	/* a device name that is no string (not NUL-terminated) */
	m = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), NLM_F_MULTI);
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	nla_put(m, RDMA_NLDEV_ATTR_DEV_NAME, 4, "rxe0");
	{
		struct rdmanl_dev *devs = NULL;
		size_t n = 0;

		assert_int_equal(rdmanl_parse_devs(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &devs, &n, &e), -EBADMSG);
		free(devs);
	}
	nlmsg_free(m);
	rdmanl_qps_clear(&q);
}

/* Counters bound to QPs (what mlx5 answers to rdma statistic qp show in auto mode). */
static void test_counters_bound(void **state)
{
	struct rdmanl_qps q = { 0 };
	struct rf_err e = { 0 };
	struct nl_msg *m = msg(RDMA_NLDEV_CMD_RES_QP_GET, 0);
	struct nlattr *t, *x, *h, *hx, *qt, *qx;

	(void)state;
	t = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP);
	for (uint32_t qpn = 100; qpn < 103; qpn++) {
		x = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
		nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, qpn);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, 2);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, 3);
		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, 4242);
		nla_nest_end(m, x);
	}
	nla_nest_end(m, t);
	assert_int_equal(rdmanl_parse_qps(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &q, &e), 0);
	nlmsg_free(m);
	m = msg(RDMA_NLDEV_CMD_STAT_GET, 0);
	t = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_COUNTER);
	x = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY);
	nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	nla_put_u32(m, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 4);
	h = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
	hx = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
	nla_put_string(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "out_of_sequence");
	nla_put_u64(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 17);
	nla_nest_end(m, hx);
	nla_nest_end(m, h);
	qt = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP);
	qx = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 101);
	nla_nest_end(m, qx);
	nla_nest_end(m, qt);
	nla_nest_end(m, x);
	nla_nest_end(m, t);
	assert_int_equal(rdmanl_parse_counters(nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, &q, &e), 0);
	nlmsg_free(m);
	assert_int_equal(q.ncounters, 1);
	rdmanl_bind_counters(&q);
	assert_int_equal(q.qps[0].counter, -1);
	assert_int_equal(q.qps[1].counter, 0);
	assert_string_equal(q.counters[0].names[0], "out_of_sequence");
	assert_int_equal(q.counters[0].values[0], 17);
	rdmanl_qps_clear(&q);
}

/* The report's "qps" from the recorded tree: totals, processes by name, and a QP entering the
 * error state between two reads counted once. */
static void test_report_section(void **state)
{
	struct lqp *lq = NULL;
	json_t *errors = json_array(), *doc = NULL;

	(void)state;
	assert_int_equal(lqp_new(REC, "", 64, &lq), 0);
	assert_int_equal(lqp_read(lq, &doc, errors), 0);
	assert_int_equal(json_array_size(errors), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "total")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "by_type"), "RC")), 1);
	assert_null(json_object_get(doc, "entered_error")); /* a first read */
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "comm")),
			    "qp-hold");
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "counters"), "state")), "none");
	json_decref(doc);
	/* the second read: nothing entered the error state */
	assert_int_equal(lqp_read(lq, &doc, errors), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "entered_error")), 0);
	json_decref(doc);
	lqp_free(lq);
	/* at most one QP listed: the list says it is cut */
	assert_int_equal(lqp_new(REC, "", 1, &lq), 0);
	assert_int_equal(lqp_read(lq, &doc, errors), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
	assert_true(json_is_true(json_object_get(doc, "truncated")));
	json_decref(doc);
	lqp_free(lq);
	/* the creating thread's process (its Tgid) and name; a name that is empty or not
	 * printable never makes a report the daemon would refuse */
	{
		char dir[] = "/tmp/rocefab-qp-XXXXXX", path[256], cwd[256];
		FILE *f;

		assert_non_null(mkdtemp(dir));
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		snprintf(path, sizeof(path), "%s/rdma-netlink", dir);
		{
			char target[400];

			snprintf(target, sizeof(target), "%s/" REC "/rdma-netlink", cwd);
			assert_int_equal(symlink(target, path), 0);
		}
		snprintf(path, sizeof(path), "%s/proc", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/proc/235", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/proc/230", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/proc/235/status", dir);
		assert_non_null(f = fopen(path, "w"));
		fputs("Name:\tworker\nUmask:\t0022\nTgid:\t230\nPid:\t235\n", f);
		fclose(f);
		snprintf(path, sizeof(path), "%s/proc/230/comm", dir);
		assert_non_null(f = fopen(path, "w"));
		fputs("\x01\xc2\x9btrain\n", f);
		fclose(f);
		assert_int_equal(lqp_new(dir, "", 64, &lq), 0);
		assert_int_equal(lqp_read(lq, &doc, errors), 0);
		{
			json_t *p0 = json_array_get(json_object_get(doc, "processes"), 0);

			assert_int_equal(json_integer_value(json_object_get(p0, "pid")), 230);
			assert_string_equal(json_string_value(json_object_get(p0, "comm")), "???train");
		}
		json_decref(doc);
		lqp_free(lq);
		/* an empty name */
		assert_non_null(f = fopen(path, "w"));
		fclose(f);
		assert_int_equal(lqp_new(dir, "", 64, &lq), 0);
		assert_int_equal(lqp_read(lq, &doc, errors), 0);
		assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "processes"), 0),
								       "comm")), "?");
		json_decref(doc);
		lqp_free(lq);
		snprintf(cwd, sizeof(cwd), "rm -rf %s", dir);
		assert_int_equal(system(cwd), 0);
	}
	/* a tree without rdma-netlink/: no section, no error */
	assert_int_equal(lqp_new("tests/data/hosts/gpu-a1", "", 64, &lq), 0);
	assert_int_equal(lqp_read(lq, &doc, errors), -EOPNOTSUPP);
	assert_int_equal(json_array_size(errors), 0);
	lqp_free(lq);
	json_decref(errors);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_rxe),	  cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_errors_and_other_clients), cmocka_unit_test(test_counters_bound),
		cmocka_unit_test(test_report_section),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
