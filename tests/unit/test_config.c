/* Unit tests of configuration changes: validation (ranges, units, Kmin < Kmax < XOFF), the
 * DCB netlink messages of PFC against a fake kernel, the linux backend writing DCQCN knobs in
 * a sysfs tree, the simulator's control API, and an agent applying commands once and reporting
 * their outcomes until acknowledged. */
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/backend.h"
#include "agents/dcb.h"
#include "agents/linux.h"
#include "agents/lldp.h"
#include "agents/sim.h"
#include "lib/registry.h"
#include "lib/timeutil.h"
#include "lib/validate.h"
#include "sim/serve.h"
#include "tests/unit/unit.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rocefab-config-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
	return system(cmd);
}

/* --- validation ------------------------------------------------------------------------------ */

static void expect_bad(int r, const struct rf_err *e, const char *code, const char *where)
{
	assert_int_equal(r, -EINVAL);
	assert_string_equal(e->code, code);
	if (where)
		assert_string_equal(e->where, where);
}

static void test_validate_ecn(void **state)
{
	json_t *cur = json_pack("{s:b,s:i,s:i,s:f}", "enabled", 1, "kmin_bytes", 400000, "kmax_bytes",
				1600000, "pmax", 0.2);
	json_t *pfc = json_pack("{s:i,s:i}", "enable", 8, "xoff_threshold_bytes", 3000000);
	struct rf_err e = { 0 };
	json_t *p;

	(void)state;
	p = json_pack("{s:s,s:s}", "kmin_bytes", "100KB", "kmax_bytes", "0.5MiB");
	assert_int_equal(validate_ecn(p, cur, pfc, 3, &e), 0);
	/* sizes are normalized to bytes */
	assert_int_equal(json_integer_value(json_object_get(p, "kmin_bytes")), 100000);
	assert_int_equal(json_integer_value(json_object_get(p, "kmax_bytes")), 524288);
	json_decref(p);
	/* a port that reports its dynamic threshold's alpha and shared buffer, not the threshold
	 * (SONiC): checked against the threshold they give (1/8 of 30 MB: 3.33 MB); it was not
	 * checked at all */
	{
		json_t *sonic = json_pack("{s:i,s:s,s:i,s:i}", "enable", 8, "mode", "dynamic", "alpha_shift", -3,
					  "shared_bytes", 30000000);

		p = json_pack("{s:i}", "kmax_bytes", 3500000);
		expect_bad(validate_ecn(p, cur, sonic, 3, &e), &e, "BAD_THRESHOLD_ORDER", "/kmax_bytes");
		assert_non_null(strstr(e.msg, "(3333333 bytes, from its alpha and shared buffer)"));
		json_decref(p);
		p = json_pack("{s:i}", "kmax_bytes", 3000000);
		assert_int_equal(validate_ecn(p, cur, sonic, 3, &e), 0);
		json_decref(p);
		json_decref(sonic);
		/* a static profile (SONiC's static_th): its XOFF, said so */
		sonic = json_pack("{s:i,s:s,s:i}", "enable", 8, "mode", "static", "xoff_bytes", 2000000);
		p = json_pack("{s:i}", "kmax_bytes", 2500000);
		expect_bad(validate_ecn(p, cur, sonic, 3, &e), &e, "BAD_THRESHOLD_ORDER", "/kmax_bytes");
		assert_non_null(strstr(e.msg, "(2000000 bytes, its static XOFF)"));
		json_decref(p);
		json_decref(sonic);
	}
	/* garbage and overflow say which (an overflow read "not a size" with a short list of units) */
	p = json_pack("{s:s}", "kmin_bytes", "100 KB");
	assert_int_equal(validate_ecn(p, cur, pfc, 3, &e), 0);
	json_decref(p);
	p = json_pack("{s:s}", "kmin_bytes", "99999999TB");
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_VALUE", "/kmin_bytes");
	assert_string_equal(e.msg, "'99999999TB' is too large: at most 1099511627776 bytes");
	json_decref(p);
	p = json_pack("{s:s}", "kmin_bytes", "100 furlongs");
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_VALUE", "/kmin_bytes");
	assert_non_null(strstr(e.msg, "GiB"));
	json_decref(p);
	p = json_pack("{s:i}", "kmin_bytes", 1600000); /* = Kmax */
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_THRESHOLD_ORDER", "/kmin_bytes");
	json_decref(p);
	p = json_pack("{s:i}", "kmax_bytes", 3000000); /* = XOFF on lossless priority 3 */
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_THRESHOLD_ORDER", "/kmax_bytes");
	json_decref(p);
	/* the same on a lossy queue is fine: PFC does not act there */
	p = json_pack("{s:i}", "kmax_bytes", 3000000);
	assert_int_equal(validate_ecn(p, cur, pfc, 1, &e), 0);
	json_decref(p);
	p = json_pack("{s:f}", "pmax", 1.01);
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_VALUE", "/pmax");
	json_decref(p);
	p = json_pack("{s:s}", "kmin_bytes", "12 parsecs");
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_VALUE", "/kmin_bytes");
	json_decref(p);
	p = json_pack("{s:i}", "kmin_bytes", -5);
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_VALUE", "/kmin_bytes");
	json_decref(p);
	p = json_pack("{s:i}", "color", 5);
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "UNKNOWN_FIELD", "/color");
	json_decref(p);
	p = json_object();
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "NO_CHANGE", NULL);
	json_decref(p);
	p = json_pack("{s:i}", "enabled", 1);
	expect_bad(validate_ecn(p, cur, pfc, 3, &e), &e, "BAD_VALUE", "/enabled");
	json_decref(p);
	json_decref(cur);
	json_decref(pfc);
}

static void test_validate_dcqcn_and_pfc(void **state)
{
	json_t *cur = json_pack("{s:i,s:i}", "rpg_min_rate", 1, "rpg_max_rate", 0);
	json_t *pcur = json_pack("{s:i,s:s,s:i,s:i,s:i}", "enable", 8, "mode", "dynamic",
				 "alpha_shift", -3, "shared_bytes", 30000000, "xoff_bytes", 0);
	json_t *ecn = json_pack("[{s:i,s:b,s:i}]", "queue", 3, "enabled", 1, "kmax_bytes", 1600000);
	struct rf_err e = { 0 };
	json_t *p;

	(void)state;
	p = json_pack("{s:i,s:i}", "rpg_time_reset", 55, "rpg_ai_rate", 40);
	assert_int_equal(validate_dcqcn(p, cur, 100000, &e), 0);
	json_decref(p);
	/* ranges of the facts file; rates bounded by the line rate */
	p = json_pack("{s:i}", "rpg_time_reset", 131072);
	expect_bad(validate_dcqcn(p, cur, 100000, &e), &e, "BAD_VALUE", "/rpg_time_reset");
	json_decref(p);
	p = json_pack("{s:i}", "rpg_ai_rate", 100001);
	expect_bad(validate_dcqcn(p, cur, 100000, &e), &e, "BAD_VALUE", "/rpg_ai_rate");
	assert_non_null(strstr(e.msg, "line rate"));
	json_decref(p);
	p = json_pack("{s:i,s:i}", "rpg_max_rate", 1000, "rpg_min_rate", 2000);
	expect_bad(validate_dcqcn(p, cur, 100000, &e), &e, "BAD_THRESHOLD_ORDER", NULL);
	json_decref(p);
	/* the additive increase no faster than the hyper increase, as asked or as it is (the
	 * tuner calls a host with them so outside its policy); a device that holds them the
	 * other way round still takes other changes */
	p = json_pack("{s:i,s:i}", "rpg_ai_rate", 60, "rpg_hai_rate", 40);
	expect_bad(validate_dcqcn(p, cur, 100000, &e), &e, "BAD_THRESHOLD_ORDER", "/rpg_ai_rate");
	assert_string_equal(e.msg, "rpg_ai_rate (60 Mb/s) must not exceed rpg_hai_rate (40 Mb/s)");
	json_decref(p);
	{
		json_t *odd = json_pack("{s:i,s:i}", "rpg_ai_rate", 60, "rpg_hai_rate", 40);

		p = json_pack("{s:i}", "rpg_hai_rate", 50);
		expect_bad(validate_dcqcn(p, odd, 100000, &e), &e, "BAD_THRESHOLD_ORDER", "/rpg_hai_rate");
		json_decref(p);
		p = json_pack("{s:i}", "rpg_time_reset", 300);
		assert_int_equal(validate_dcqcn(p, odd, 100000, &e), 0);
		json_decref(p);
		p = json_pack("{s:i}", "rpg_hai_rate", 60);
		assert_int_equal(validate_dcqcn(p, odd, 100000, &e), 0);
		json_decref(p);
		json_decref(odd);
	}
	p = json_pack("{s:f}", "rpg_gd", 10.5);
	expect_bad(validate_dcqcn(p, cur, 100000, &e), &e, "BAD_VALUE", "/rpg_gd");
	json_decref(p);
	p = json_pack("{s:b}", "clamp_tgt_rate", 1); /* booleans for 0/1 knobs */
	assert_int_equal(validate_dcqcn(p, cur, 100000, &e), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "clamp_tgt_rate")), 1);
	json_decref(p);

	/* PFC: alpha 1/8 of 30 MB shared -> XOFF 3.33 MB > Kmax 1.6 MB; alpha 1/32 -> 0.9 MB */
	p = json_pack("{s:i}", "alpha_shift", -2);
	assert_int_equal(validate_pfc(p, pcur, ecn, true, &e), 0);
	json_decref(p);
	p = json_pack("{s:i}", "alpha_shift", -5);
	expect_bad(validate_pfc(p, pcur, ecn, true, &e), &e, "BAD_THRESHOLD_ORDER", "/alpha_shift");
	json_decref(p);
	p = json_pack("{s:i,s:i}", "xoff_bytes", 2000000, "xon_bytes", 2000000);
	expect_bad(validate_pfc(p, pcur, ecn, true, &e), &e, "BAD_THRESHOLD_ORDER", "/xon_bytes");
	json_decref(p);
	/* XON alone on a port whose threshold is dynamic: no static XOFF to be below (it read
	 * "must be below XOFF (0 bytes)") */
	p = json_pack("{s:i}", "xon_bytes", 1000000);
	expect_bad(validate_pfc(p, pcur, ecn, true, &e), &e, "BAD_VALUE", "/xon_bytes");
	assert_string_equal(e.msg, "the port has no static XOFF threshold (its threshold is dynamic): a static XON needs "
				   "one, so give xoff_bytes with it");
	/* the same when the agent says XOFF 0 but not the mode */
	{
		json_t *nomode = json_pack("{s:i,s:i}", "enable", 8, "xoff_bytes", 0);

		expect_bad(validate_pfc(p, nomode, ecn, true, &e), &e, "BAD_VALUE", "/xon_bytes");
		json_decref(nomode);
	}
	json_decref(p);
	p = json_pack("{s:i}", "xoff_bytes", 1000000); /* below Kmax */
	expect_bad(validate_pfc(p, pcur, ecn, true, &e), &e, "BAD_THRESHOLD_ORDER", "/xoff_bytes");
	json_decref(p);
	p = json_pack("{s:i}", "enable", 2); /* queue 3 no longer lossless: no constraint left */
	assert_int_equal(validate_pfc(p, pcur, ecn, true, &e), 0);
	json_decref(p);
	p = json_pack("{s:i}", "enable", 256);
	expect_bad(validate_pfc(p, pcur, ecn, true, &e), &e, "BAD_VALUE", "/enable");
	json_decref(p);
	p = json_pack("{s:i}", "xoff_bytes", 100000); /* a NIC has only enable */
	expect_bad(validate_pfc(p, NULL, NULL, false, &e), &e, "BAD_VALUE", "/xoff_bytes");
	json_decref(p);
	/* an agent may report any number: one beyond int64 is as good as none, and converting it
	 * was undefined (UBSan: float-cast-overflow; found by fuzz_query) */
	{
		json_t *odd = json_pack("{s:f,s:s,s:i,s:I}", "xoff_bytes", 1e300, "mode", "dynamic",
					"enable", 8, "alpha_shift", (json_int_t)1 << 40);
		json_t *odd_ecn = json_pack("[{s:i,s:b,s:f}]", "queue", 3, "enabled", 1, "kmax_bytes", -1e300);

		json_object_set_new(odd, "shared_bytes", json_integer(30000000));
		json_object_set_new(odd, "mode", json_string("static"));
		p = json_pack("{s:i}", "xon_bytes", 1000); /* against the reported XOFF */
		assert_int_equal(validate_pfc(p, odd, odd_ecn, true, &e), 0);
		json_decref(p);
		json_object_set_new(odd, "mode", json_string("dynamic"));
		p = json_pack("{s:i}", "enable", 8); /* the threshold from alpha_shift 2^40 */
		assert_int_equal(validate_pfc(p, odd, odd_ecn, true, &e), 0);
		json_decref(p);
		json_decref(odd);
		json_decref(odd_ecn);
	}
	json_decref(cur);
	json_decref(pcur);
	json_decref(ecn);
}

/* --- DCB netlink against a fake kernel --------------------------------------------------------- */

struct fake_kernel {
	struct ieee_pfc pfc;
	int set_errno; /* what the next set fails with (0: succeeds) */
	int gets, sets;
	bool no_dcb;
};

static size_t reply(void *out, uint16_t type, const void *attr_payload, uint16_t attr_type,
		    size_t plen, bool nested_pfc)
{
	uint8_t *b = out;
	struct nlmsghdr *h = (struct nlmsghdr *)b;
	struct dcbmsg *d = (struct dcbmsg *)(b + NLMSG_HDRLEN);
	struct nlattr *a = (struct nlattr *)(b + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*d)));
	size_t len;

	memset(b, 0, 512);
	h->nlmsg_type = type;
	d->cmd = type == RTM_GETDCB ? DCB_CMD_IEEE_GET : DCB_CMD_IEEE_SET;
	if (nested_pfc) {
		struct nlattr *in = (struct nlattr *)((uint8_t *)a + NLA_HDRLEN);

		in->nla_type = DCB_ATTR_IEEE_PFC;
		in->nla_len = (uint16_t)(NLA_HDRLEN + plen);
		memcpy((uint8_t *)in + NLA_HDRLEN, attr_payload, plen);
		a->nla_type = DCB_ATTR_IEEE | NLA_F_NESTED;
		a->nla_len = (uint16_t)(NLA_HDRLEN + NLA_ALIGN(in->nla_len));
	} else {
		a->nla_type = attr_type;
		a->nla_len = (uint16_t)(NLA_HDRLEN + plen);
		memcpy((uint8_t *)a + NLA_HDRLEN, attr_payload, plen);
	}
	len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*d)) + NLA_ALIGN(a->nla_len);
	h->nlmsg_len = (uint32_t)len;
	return len;
}

/* Checks the request as the kernel's dcbnl would parse it, and answers. */
static int fake_xfer(void *ctx, const void *req, size_t len, void *out, size_t cap, size_t *ret_len)
{
	struct fake_kernel *k = ctx;
	const struct nlmsghdr *h = req;
	const struct dcbmsg *d = (const struct dcbmsg *)((const uint8_t *)req + NLMSG_HDRLEN);
	const struct nlattr *a = (const struct nlattr *)((const uint8_t *)d + NLMSG_ALIGN(sizeof(*d)));

	assert_true(cap >= 512);
	assert_int_equal(h->nlmsg_len, len);
	assert_true(h->nlmsg_flags & NLM_F_REQUEST);
	assert_int_equal(d->dcb_family, AF_UNSPEC);
	/* the first attribute names the interface, NUL-terminated */
	assert_int_equal(a->nla_type, DCB_ATTR_IFNAME);
	assert_string_equal((const char *)a + NLA_HDRLEN, "eth0");
	assert_int_equal(a->nla_len, NLA_HDRLEN + 5);
	if (k->no_dcb) {
		uint8_t *b = out;
		struct nlmsghdr *eh = (struct nlmsghdr *)b;
		struct nlmsgerr *err = (struct nlmsgerr *)(b + NLMSG_HDRLEN);

		eh->nlmsg_type = NLMSG_ERROR;
		eh->nlmsg_len = NLMSG_HDRLEN + sizeof(*err);
		err->error = -EOPNOTSUPP;
		*ret_len = eh->nlmsg_len;
		return 0;
	}
	if (h->nlmsg_type == RTM_GETDCB) {
		assert_int_equal(d->cmd, DCB_CMD_IEEE_GET);
		k->gets++;
		*ret_len = reply(out, RTM_GETDCB, &k->pfc, 0, sizeof(k->pfc), true);
		return 0;
	}
	assert_int_equal(h->nlmsg_type, RTM_SETDCB);
	assert_int_equal(d->cmd, DCB_CMD_IEEE_SET);
	{
		const struct nlattr *nest = (const struct nlattr *)((const uint8_t *)a + NLA_ALIGN(a->nla_len));
		const struct nlattr *pa = (const struct nlattr *)((const uint8_t *)nest + NLA_HDRLEN);
		struct ieee_pfc got;
		uint8_t e8;

		assert_int_equal(nest->nla_type & NLA_TYPE_MASK, DCB_ATTR_IEEE);
		assert_true(nest->nla_type & NLA_F_NESTED);
		assert_int_equal(pa->nla_type, DCB_ATTR_IEEE_PFC);
		assert_int_equal(pa->nla_len, NLA_HDRLEN + sizeof(struct ieee_pfc));
		memcpy(&got, (const uint8_t *)pa + NLA_HDRLEN, sizeof(got));
		k->sets++;
		e8 = (uint8_t)(int8_t)k->set_errno;
		if (!k->set_errno) {
			/* read-modify-write: everything but pfc_en is what was read */
			assert_int_equal(got.pfc_cap, k->pfc.pfc_cap);
			assert_int_equal(got.mbc, k->pfc.mbc);
			assert_int_equal(got.delay, k->pfc.delay);
			k->pfc.pfc_en = got.pfc_en;
		}
		*ret_len = reply(out, RTM_SETDCB, &e8, DCB_ATTR_IEEE, 1, false);
	}
	return 0;
}

static void test_dcb_pfc_read_modify_write(void **state)
{
	struct fake_kernel k = { .pfc = { .pfc_cap = 8, .pfc_en = 0x08, .mbc = 1, .delay = 7,
					  .requests = { 5 } } };
	struct ieee_pfc before, after, got;
	uint8_t buf[DCB_MSG_MAX];

	(void)state;
	/* the request's bytes: nlmsghdr, dcbmsg, IFNAME, nest IEEE { IEEE_PFC: struct } */
	{
		int n = dcb_build_set_pfc("eth0", &k.pfc, 9, buf, sizeof(buf));
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

		assert_int_equal(n, NLMSG_HDRLEN + 4 + NLA_ALIGN(NLA_HDRLEN + 5) +
					    NLA_HDRLEN + NLA_ALIGN(NLA_HDRLEN + sizeof(struct ieee_pfc)));
		assert_int_equal(h->nlmsg_type, 79);
		assert_int_equal(buf[NLMSG_HDRLEN + 1], 20); /* DCB_CMD_IEEE_SET */
		assert_int_equal(h->nlmsg_seq, 9);
	}
	assert_int_equal(dcb_build_get("an-interface-name-too-long", 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(dcb_get_pfc(fake_xfer, &k, "eth0", &got), 0);
	assert_int_equal(got.pfc_en, 0x08);
	assert_int_equal(got.requests[0], 5);
	assert_int_equal(dcb_set_pfc_enable(fake_xfer, &k, "eth0", 0x18, &before, &after), 0);
	assert_int_equal(before.pfc_en, 0x08);
	assert_int_equal(after.pfc_en, 0x18);
	assert_int_equal(k.pfc.pfc_en, 0x18);
	assert_int_equal(k.gets, 3); /* read, write, read back */
	assert_int_equal(k.sets, 1);
	/* the kernel's u8 errno */
	k.set_errno = -EINVAL;
	assert_int_equal(dcb_set_pfc_enable(fake_xfer, &k, "eth0", 0x01, &before, &after), -EINVAL);
	assert_int_equal(k.pfc.pfc_en, 0x18);
	/* a device without DCB */
	k.no_dcb = true;
	assert_int_equal(dcb_get_pfc(fake_xfer, &k, "eth0", &got), -EOPNOTSUPP);
	/* garbage */
	memset(buf, 0xff, 16);
	assert_int_equal(dcb_parse_pfc(buf, 8, &got), -EBADMSG);
}

/* --- the linux backend applying commands ---------------------------------------------------- */

static void write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(s, f);
	fclose(f);
}

static void mkdirs(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static char *read_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, (int)len, f));
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* A host tree with one mlx5 port whose netdev has MLNX_OFED's ecn/roce_rp and roce_np. */
static void make_tree(const char *root)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs", root);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", root);
	write_str(p, "eth0\n");
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/mlx5_0/ports/1/state", root);
	write_str(p, "4: ACTIVE\n");
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/mlx5_0/ports/1/rate", root);
	write_str(p, "100 Gb/sec (4X EDR)\n");
	for (int n = 0; n < 2; n++) {
		const char *node = n ? "roce_np" : "roce_rp";

		snprintf(p, sizeof(p), "%s/sys/class/net/eth0/ecn/%s/enable", root, node);
		mkdirs(p);
		for (int pr = 0; pr < 8; pr++) {
			snprintf(p, sizeof(p), "%s/sys/class/net/eth0/ecn/%s/enable/%d", root, node, pr);
			write_str(p, pr == 3 ? "1\n" : "0\n");
		}
	}
	snprintf(p, sizeof(p), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_time_reset", root);
	write_str(p, "300\n");
	snprintf(p, sizeof(p), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_ai_rate", root);
	write_str(p, "5\n");
	snprintf(p, sizeof(p), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_hai_rate", root);
	write_str(p, "50\n");
	snprintf(p, sizeof(p), "%s/sys/class/net/eth0/ecn/roce_np/min_time_between_cnps", root);
	write_str(p, "4\n");
	/* lldpd's view: eth0 is cabled to leaf0's Ethernet12 */
	snprintf(p, sizeof(p), "%s/lldp", root);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/lldp/neighbors.json0", root);
	write_str(p, "{\"lldp\":[{\"interface\":[{\"name\":\"eth0\",\"via\":\"LLDP\",\"rid\":\"1\","
		     "\"age\":\"0 day, 00:10:00\",\"chassis\":[{\"id\":[{\"type\":\"mac\",\"value\":"
		     "\"0c:42:a1:00:00:01\"}],\"name\":[{\"value\":\"leaf0\"}]}],\"port\":[{\"id\":[{"
		     "\"type\":\"ifname\",\"value\":\"Ethernet12\"}],\"descr\":[{\"value\":\"h3\"}]}]}]}]}\n");
}

static json_t *command(const char *kind, json_t *params)
{
	return json_pack("{s:i,s:s,s:s,s:s,s:o,s:I}", "schema", 1, "id", "c1", "target", "h",
			 "kind", kind, "params", params, "deadline_ns",
			 (json_int_t)(tu_now_ns() + NSEC_PER_SEC * 60));
}

static void test_linux_apply(void **state)
{
	struct fake_kernel k = { .pfc = { .pfc_cap = 8, .pfc_en = 0x08 } };
	struct linux_settings ls = { .sysfs_root = (char *)dir, .net_source = LINUX_NET_FILES,
				     .dcb_xfer = fake_xfer, .dcb_ctx = &k };
	struct backend_env env = { .settings = &ls };
	struct agent_inventory inv = { 0 };
	struct backend *b = NULL;
	struct rf_err e = { 0 };
	struct reg *reg = NULL;
	json_t *errors = json_array(), *cfg = NULL, *out = NULL, *cmd, *dq;
	char path[512], buf[64];

	(void)state;
	make_tree(dir);
	assert_int_equal(reg_load_builtin(&reg, &e), 0);
	env.reg = reg;
	assert_int_equal(backend_new("linux", &env, &b, &e), 0);
	assert_int_equal(b->ops->inventory(b, &inv, errors), 0);
	/* the neighbour from lldpd */
	assert_string_equal(inv.devs[0].ports[0].peer_system, "leaf0");
	assert_string_equal(inv.devs[0].ports[0].peer_port, "Ethernet12");
	assert_int_equal(b->ops->read_config(b, &cfg), 0);
	dq = json_array_get(json_object_get(cfg, "dcqcn"), 0);
	assert_string_equal(json_string_value(json_object_get(dq, "device")), "mlx5_0");
	assert_int_equal(json_integer_value(json_object_get(dq, "rpg_time_reset")), 300);
	assert_int_equal(json_integer_value(json_object_get(dq, "rp_enable")), 8);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(cfg, "pfc"), 0), "enable")), 8);
	json_decref(cfg);

	/* DCQCN: files written, read back, previous values reported */
	cmd = command("set_dcqcn", json_pack("{s:s,s:s,s:i,s:i,s:i}", "device", "mlx5_0", "port", "1",
					     "rpg_time_reset", 55, "rpg_ai_rate", 40, "rp_enable", 24));
	assert_int_equal(b->ops->apply(b, cmd, &out), 0);
	assert_string_equal(json_string_value(json_object_get(out, "outcome")), "applied");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "previous"), "rpg_time_reset")), 300);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "values"), "rpg_time_reset")), 55);
	snprintf(path, sizeof(path), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_time_reset", dir);
	assert_string_equal(read_str(path, buf, sizeof(buf)), "55");
	snprintf(path, sizeof(path), "%s/sys/class/net/eth0/ecn/roce_rp/enable/4", dir);
	assert_string_equal(read_str(path, buf, sizeof(buf)), "1");
	json_decref(cmd);
	json_decref(out);

	/* a write the device refuses: failed, and what was written before it is restored */
	snprintf(path, sizeof(path), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_hai_rate", dir);
	chmod(path, 0444);
	if (access(path, W_OK) != 0) { /* not when the tests run as root */
		cmd = command("set_dcqcn", json_pack("{s:s,s:i,s:i}", "port", "1", "rpg_ai_rate", 7,
						     "rpg_hai_rate", 70));
		assert_int_equal(b->ops->apply(b, cmd, &out), 0);
		assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
		assert_string_equal(json_string_value(json_object_get(json_object_get(out, "error"), "code")),
				    "DEVICE_REFUSED");
		snprintf(path, sizeof(path), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_ai_rate", dir);
		assert_string_equal(read_str(path, buf, sizeof(buf)), "40");
		json_decref(cmd);
		json_decref(out);
	}
	/* a knob that is a link (a recorded tree pointing out of itself): not written through */
	{
		char victim[600], out_path[512];
		FILE *vf;

		snprintf(victim, sizeof(victim), "%s/victim", dir);
		vf = fopen(victim, "w");
		assert_non_null(vf);
		fputs("7\n", vf);
		fclose(vf);
		snprintf(out_path, sizeof(out_path), "%s/sys/class/net/eth0/ecn/roce_rp/rpg_time_reset", dir);
		unlink(out_path);
		assert_int_equal(symlink(victim, out_path), 0);
		cmd = command("set_dcqcn", json_pack("{s:s,s:s,s:i}", "device", "mlx5_0", "port", "1", "rpg_time_reset", 60));
		assert_int_equal(b->ops->apply(b, cmd, &out), 0);
		assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
		assert_string_equal(read_str(victim, buf, sizeof(buf)), "7");
		json_decref(cmd);
		json_decref(out);
		unlink(out_path);
		vf = fopen(out_path, "w");
		assert_non_null(vf);
		fputs("55\n", vf);
		fclose(vf);
	}
	/* a knob this device does not have */
	cmd = command("set_dcqcn", json_pack("{s:s,s:i}", "port", "1", "dce_tcp_g", 1000));
	assert_int_equal(b->ops->apply(b, cmd, &out), 0);
	assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(out, "error"), "code")),
			    "NOT_SUPPORTED");
	json_decref(cmd);
	json_decref(out);

	/* PFC through DCB: read-modify-write of pfc_en */
	cmd = command("set_pfc", json_pack("{s:s,s:s,s:i}", "device", "mlx5_0", "port", "1", "enable", 0x18));
	assert_int_equal(b->ops->apply(b, cmd, &out), 0);
	assert_string_equal(json_string_value(json_object_get(out, "outcome")), "applied");
	assert_int_equal(k.pfc.pfc_en, 0x18);
	json_decref(cmd);
	json_decref(out);
	cmd = command("set_pfc", json_pack("{s:s,s:i}", "port", "1", "xoff_bytes", 1000));
	assert_int_equal(b->ops->apply(b, cmd, &out), 0);
	assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
	json_decref(cmd);
	json_decref(out);
	k.set_errno = -EPERM;
	cmd = command("set_pfc", json_pack("{s:s,s:i}", "port", "eth0", "enable", 0));
	assert_int_equal(b->ops->apply(b, cmd, &out), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(out, "error"), "code")),
			    "PERMISSION_DENIED");
	assert_int_equal(k.pfc.pfc_en, 0x18);
	json_decref(cmd);
	json_decref(out);
	cmd = command("set_ecn", json_pack("{s:s,s:i,s:i}", "port", "1", "queue", 3, "kmin_bytes", 1));
	assert_int_equal(b->ops->apply(b, cmd, &out), 0);
	assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
	json_decref(cmd);
	json_decref(out);

	inventory_clear(&inv);
	json_decref(errors);
	backend_free(b);
	reg_free(reg);
}

static void test_lldp_json0(void **state)
{
	static const char doc[] =
		"{\"lldp\":[{\"interface\":[{\"name\":\"eth1\",\"chassis\":[{\"name\":[{\"value\":"
		"\"spine1\"}]}],\"port\":[{\"id\":[{\"type\":\"mac\",\"value\":\"0c:42:a1:00:00:02\"}],"
		"\"descr\":[{\"value\":\"swp7\"}]}]},{\"name\":\"eth2\",\"chassis\":[{\"id\":[{"
		"\"type\":\"mac\",\"value\":\"x\"}]}],\"port\":[{\"id\":[{\"type\":\"ifname\","
		"\"value\":\"p1\"}]}]}]}]}";
	struct lldp_neighbor *nb = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(lldp_parse_json0(doc, strlen(doc), &nb, &n), 0);
	/* a MAC port id: the description names the port; no system name: not a usable neighbour */
	assert_int_equal(n, 1);
	assert_string_equal(nb[0].ifname, "eth1");
	assert_string_equal(nb[0].system, "spine1");
	assert_string_equal(nb[0].port, "swp7");
	free(nb);
	assert_int_equal(lldp_parse_json0("[1,2]", 5, &nb, &n), -EBADMSG);
	assert_int_equal(lldp_parse_json0("{\"lldp\":", 8, &nb, &n), -EBADMSG);
	/* a tree recorded without lldpd: no neighbours, no error */
	assert_int_equal(lldp_neighbors("/nonexistent-tree", NULL, &nb, &n), 0);
	assert_int_equal(n, 0);
	free(nb);
}

/* --- the simulator's control API, and an agent on it ------------------------------------------ */

#define FABRIC                                                                                      \
	"{\"schema\":1,\"topology\":{\"type\":\"leaf_spine\",\"spines\":1,\"leaves\":1,"          \
	"\"hosts_per_leaf\":3,\"host_link\":{\"rate_gbps\":100},\"fabric_link\":{\"rate_gbps\":100}}," \
	"\"workloads\":[{\"type\":\"incast\",\"receiver\":\"h0\",\"senders\":2,\"size_bytes\":100000," \
	"\"loop\":true,\"interval_us\":50}]}"

static int call(void *ctx, const char *method, const char *path, json_t *body, json_t **ret)
{
	return simctl_call(ctx, method, path, body, ret);
}

static void test_sim_control_api(void **state)
{
	struct simctl c;
	struct sim *s = NULL;
	struct rf_err e = { 0 };
	json_t *doc = NULL, *body;

	(void)state;
	assert_int_equal(sim_load(FABRIC, strlen(FABRIC), "t", NULL, -1, -1, &s, &e), 0);
	sim_keep_running(s);
	simctl_init(&c, s, "t", 0.01);
	sim_run_until(s, 2000 * 1000000LL);
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices", NULL, &doc), 200);
	assert_int_equal(json_array_size(json_object_get(doc, "devices")), 5);
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/leaf0/counters", NULL, &doc), 200);
	assert_true(json_integer_value(json_object_get(json_object_get(json_object_get(doc, "ports"), "h0"),
						       "tx_bytes")) > 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "fabric_time_ns")), 2000000);
	json_decref(doc);
	/* a bad change: the simulator's problem, nothing changed */
	body = json_pack("{s:i,s:i}", "kmin_bytes", 500, "kmax_bytes", 100);
	assert_int_equal(simctl_call(&c, "PUT", "/v1/devices/leaf0/ports/h0/queues/3/ecn", body, &doc), 400);
	assert_string_equal(json_string_value(json_object_get(doc, "code")), "BAD_THRESHOLD_ORDER");
	json_decref(doc);
	json_decref(body);
	body = json_pack("{s:i}", "kmin_bytes", 5);
	assert_int_equal(simctl_call(&c, "PUT", "/v1/devices/leaf0/ports/h7/queues/3/ecn", body, &doc), 404);
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "PUT", "/v1/devices/leaf0/ports/h0/queues/8/ecn", body, &doc), 404);
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "PUT", "/v1/devices/h0/dcqcn", NULL, &doc), 400);
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "DELETE", "/v1/devices", NULL, &doc), 405);
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "GET", "/v2/devices", NULL, &doc), 404);
	json_decref(doc);
	json_decref(body);
	/* faults: injected now when at_us is left out, cleared by id */
	body = json_pack("{s:s,s:s}", "type", "link_down", "link", "leaf0-spine0");
	assert_int_equal(simctl_call(&c, "POST", "/v1/faults", body, &doc), 201);
	json_decref(doc);
	sim_run_until(s, 2100 * 1000000LL);
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/spine0", NULL, &doc), 200);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "ports"), 0),
							      "state")), "down");
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "DELETE", "/v1/faults/0", NULL, &doc), 200);
	json_decref(doc);
	assert_int_equal(simctl_call(&c, "DELETE", "/v1/faults/7", NULL, &doc), 404);
	json_decref(doc);
	json_decref(body);
	body = json_pack("{s:f}", "pace", -1.0);
	assert_int_equal(simctl_call(&c, "PUT", "/v1/clock", body, &doc), 400);
	json_decref(doc);
	json_decref(body);
	simctl_fini(&c);
	sim_free(s);
}

/* An agent for device dev of the scenario, on the sim backend, talking to the simulator's
 * control API in-process (the simulator keeps running until the test frees it). */
static struct agent *sim_agent(const char *scenario, const char *dev, enum agent_role role, struct sim **s,
			       struct simctl *c)
{
	struct sim_settings ss = { .device = (char *)dev, .call = call, .ctx = c };
	struct backend_env env = { .settings = &ss };
	struct agent_conf ac = { .id = dev, .role = role, .backend_name = "sim", .interval_ns = NSEC_PER_SEC };
	struct rf_err e = { 0 };
	struct backend *b = NULL;
	struct agent *a = NULL;

	assert_int_equal(sim_load(scenario, strlen(scenario), "t", NULL, -1, -1, s, &e), 0);
	sim_keep_running(*s);
	simctl_init(c, *s, "t", 0.01);
	assert_int_equal(backend_new("sim", &env, &b, &e), 0);
	ac.backend = b;
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	return a;
}

static void test_agent_applies_commands_once(void **state)
{
	struct simctl c;
	struct sim *s = NULL;
	struct agent *a;
	json_t *rep = NULL, *answer, *doc = NULL, *res;

	(void)state;
	a = sim_agent(FABRIC, "leaf0", AGENT_SWITCH, &s, &c);
	assert_int_equal(agent_build_report(a, &rep), 0);
	/* the switch's configuration goes out with its first report */
	assert_int_equal(json_array_size(json_object_get(json_object_get(rep, "config"), "ecn")), 4 * 8);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(
				    json_object_get(json_array_get(json_object_get(rep, "inventory") ? json_object_get(json_object_get(rep, "inventory"), "devices") : NULL, 0), "ports"), 0),
				    "neighbor"), "system")), "h0");
	json_decref(rep);
	answer = json_pack("{s:I,s:[{s:i,s:s,s:s,s:s,s:{s:s,s:s,s:i,s:i,s:i},s:I},"
			   "{s:i,s:s,s:s,s:s,s:{s:s,s:s,s:i,s:i},s:I}]}",
			   "seq", (json_int_t)1, "commands", "schema", 1, "id", "c7", "target", "leaf0",
			   "kind", "set_ecn", "params", "device", "leaf0", "port", "h0", "queue", 3, "kmin_bytes",
			   20000, "kmax_bytes", 100000, "deadline_ns", (json_int_t)(tu_now_ns() + NSEC_PER_SEC),
			   "schema", 1, "id", "c8", "target", "leaf0", "kind", "set_ecn", "params", "device", "leaf0",
			   "port", "h1", "queue", 3, "kmin_bytes", 5000, "deadline_ns", (json_int_t)1000);
	agent_handle_answer(a, answer);
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/leaf0/config", NULL, &doc), 200);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(json_object_get(
				json_object_get(doc, "ports"), "h0"), "ecn"), 3), "kmin_bytes")), 20000);
	/* c8 came after its deadline: not applied */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(json_object_get(
				json_object_get(doc, "ports"), "h1"), "ecn"), 3), "kmin_bytes")), 400000);
	json_decref(doc);
	/* the same commands again (rocefabd had not seen the outcome yet): not applied twice */
	doc = json_pack("{s:i}", "kmin_bytes", 30000);
	{
		json_t *ans = NULL;

		assert_int_equal(simctl_call(&c, "PUT", "/v1/devices/leaf0/ports/h0/queues/3/ecn", doc, &ans), 200);
		json_decref(ans);
	}
	json_decref(doc);
	agent_handle_answer(a, answer);
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/leaf0/config", NULL, &doc), 200);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(json_object_get(
				json_object_get(doc, "ports"), "h0"), "ecn"), 3), "kmin_bytes")), 30000);
	json_decref(doc);
	json_decref(answer);
	/* the outcomes go out with the next reports until one is acknowledged */
	assert_int_equal(agent_build_report(a, &rep), 0);
	res = json_object_get(rep, "command_results");
	assert_int_equal(json_array_size(res), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "outcome")), "applied");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(res, 0), "values"),
							    "kmin_bytes")), 20000);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 1), "outcome")), "timed_out");
	/* the configuration changed: it goes out again */
	assert_non_null(json_object_get(rep, "config"));
	json_decref(rep);
	assert_int_equal(agent_build_report(a, &rep), 0);
	assert_int_equal(json_array_size(json_object_get(rep, "command_results")), 2);
	json_decref(rep);
	answer = json_pack("{s:I,s:[]}", "seq", (json_int_t)2, "commands");
	agent_handle_answer(a, answer); /* report 2 carried them: acknowledged */
	json_decref(answer);
	assert_int_equal(agent_build_report(a, &rep), 0);
	assert_null(json_object_get(rep, "command_results"));
	assert_null(json_object_get(rep, "config")); /* unchanged: not sent every time */
	json_decref(rep);
	agent_destroy(a);
	simctl_fini(&c);
	sim_free(s);
}

/* A change out of the facts file's ranges, of the wrong type, or naming a device that walks out
 * of sysfs is refused by the agent itself, before its backend touches the device (an attacker's
 * review: the backends wrote rpg_gd -7 to sysfs, turned PFC off for enable "3", took queue
 * 4294967299 as queue 3 and pmax 5 as 500 %, all reported applied). */
static void test_agent_refuses_changes_out_of_range(void **state)
{
	static const char *const bad[][2] = {
		{ "set_pfc", "{'device': 'leaf0', 'port': 'h0', 'enable': '3'}" },
		{ "set_pfc", "{'device': 'leaf0', 'port': 'h0', 'enable': -1}" },
		{ "set_ecn", "{'device': 'leaf0', 'port': 'h0', 'queue': 4294967299, 'kmin_bytes': 1000}" },
		{ "set_ecn", "{'device': 'leaf0', 'port': 'h0', 'kmin_bytes': 1000}" },
		{ "set_ecn", "{'device': 'leaf0', 'port': 'h0', 'queue': 3, 'pmax': 5.0}" },
		{ "set_ecn", "{'device': 'leaf0', 'port': 'h0', 'queue': 3, 'kmin_bytes': -200}" },
		{ "set_ecn", "{'device': 'leaf0', 'port': 'h0', 'queue': 3, 'kmin_bytes': 'abc'}" },
		{ "set_ecn", "{'device': 'leaf0', 'port': 'h0', 'queue': 3, 'kmin_bytes': 9000, 'kmax_bytes': 8000}" },
		{ "set_ecn", "{'device': '../../etc', 'port': 'h0', 'queue': 3, 'kmin_bytes': 1000}" },
		{ "set_pfc", "{'device': 'leaf0', 'port': 'h0', 'alpha_shift': 1000}" },
		{ "set_dcqcn", "{'device': 'leaf0', 'port': 'h0', 'rpg_gd': -7}" },
	};
	struct simctl c;
	struct sim *s = NULL;
	struct agent *a;
	json_t *rep = NULL, *before = NULL, *after = NULL, *res;

	(void)state;
	a = sim_agent(FABRIC, "leaf0", AGENT_SWITCH, &s, &c);
	assert_int_equal(agent_build_report(a, &rep), 0);
	json_decref(rep);
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/leaf0/config", NULL, &before), 200);
	for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
		char *q = strdup(bad[k][1]);
		json_t *params, *answer;
		char id[16];

		snprintf(id, sizeof(id), "b%zu", k);
		for (char *x = q; *x; x++)
			*x = *x == '\'' ? '"' : *x;
		params = json_loads(q, 0, NULL);
		free(q);
		assert_non_null(params);
		answer = json_pack("{s:[{s:i,s:s,s:s,s:s,s:o,s:I}]}", "commands", "schema", 1, "id", id, "target", "leaf0",
				   "kind", bad[k][0], "params", params, "deadline_ns", (json_int_t)(tu_now_ns() + NSEC_PER_SEC));
		agent_handle_answer(a, answer);
		json_decref(answer);
	}
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/leaf0/config", NULL, &after), 200);
	assert_true(json_equal(before, after)); /* nothing touched */
	assert_int_equal(agent_build_report(a, &rep), 0);
	res = json_object_get(rep, "command_results");
	assert_int_equal(json_array_size(res), ARRAY_SIZE(bad));
	for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
		const char *code = json_string_value(json_object_get(json_object_get(json_array_get(res, k), "error"), "code"));

		assert_string_equal(json_string_value(json_object_get(json_array_get(res, k), "outcome")), "failed");
		assert_true(!strcmp(code, "BAD_VALUE") || !strcmp(code, "BAD_COMMAND") ||
			    !strcmp(code, "BAD_THRESHOLD_ORDER"));
	}
	json_decref(rep);
	json_decref(after);
	/* more commands in one answer than rocefabd sends (64): the first 64 are taken */
	{
		json_t *answer = json_pack("{s:[]}", "commands");

		for (int k = 0; k < 100; k++) {
			char id[16];

			snprintf(id, sizeof(id), "m%d", k);
			json_array_append_new(json_object_get(answer, "commands"),
					      json_pack("{s:i,s:s,s:s,s:s,s:{s:s,s:s,s:i,s:i},s:I}", "schema", 1, "id", id,
							"target", "leaf0", "kind", "set_ecn", "params", "device", "leaf0",
							"port", "h1", "queue", 3, "kmin_bytes", 10000 + k, "deadline_ns",
							(json_int_t)(tu_now_ns() + 10 * NSEC_PER_SEC)));
		}
		agent_handle_answer(a, answer);
		json_decref(answer);
	}
	assert_int_equal(simctl_call(&c, "GET", "/v1/devices/leaf0/config", NULL, &after), 200);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(json_object_get(
				json_object_get(after, "ports"), "h1"), "ecn"), 3), "kmin_bytes")), 10063);
	json_decref(after);
	json_decref(before);
	agent_destroy(a);
	simctl_fini(&c);
	sim_free(s);
}

/* A probe round with more results than a report may carry (4,096): 19 targets x 4 ops x 4 sizes
 * x 16 paths = 4,864 runs, started on the simulator in two requests, reported over two reports
 * with nothing lost or sent twice. */
static void test_agent_reports_a_large_round_in_pieces(void **state)
{
	static const char big[] = "{\"schema\":1,\"topology\":{\"type\":\"leaf_spine\",\"spines\":1,"
				  "\"leaves\":1,\"hosts_per_leaf\":20,\"host_link\":{\"rate_gbps\":100},"
				  "\"fabric_link\":{\"rate_gbps\":100}},\"workloads\":[],\"until_us\":1000000}";
	struct simctl c;
	struct sim *s = NULL;
	struct agent *a;
	json_t *rep = NULL, *targets = json_array(), *answer, *seen = json_object();
	size_t total = 0;

	(void)state;
	a = sim_agent(big, "h0", AGENT_HOST, &s, &c);
	assert_int_equal(agent_build_report(a, &rep), 0);
	json_decref(rep);
	for (int i = 1; i < 20; i++)
		json_array_append_new(targets, json_sprintf("h%d", i));
	answer = json_pack("{s:I,s:[{s:i,s:s,s:s,s:s,s:{s:o,s:[ssss],s:[iiii],s:i,s:i,s:f},s:I}]}", "seq",
			   (json_int_t)1, "commands", "schema", 1, "id", "p1", "target", "h0", "kind", "probe_plan",
			   "params", "targets", targets, "ops", "write", "read", "send", "cas", "sizes", 64, 128,
			   256, 512, "iterations", 1, "paths", 16, "timeout_us", 1000.0, "deadline_ns",
			   (json_int_t)(tu_now_ns() + NSEC_PER_SEC));
	agent_handle_answer(a, answer);
	json_decref(answer);
	/* this report starts the round (4,864 runs: more than one request to the simulator takes) */
	assert_int_equal(agent_build_report(a, &rep), 0);
	assert_null(json_object_get(json_object_get(rep, "probes"), "results"));
	json_decref(rep);
	sim_run_until(s, sim_now(s) + 50 * 1000000000LL); /* 50 ms of fabric time: every run done */
	for (int r = 0; r < 2; r++) {
		json_t *res, *x;
		size_t i;

		assert_int_equal(agent_build_report(a, &rep), 0);
		res = json_object_get(json_object_get(rep, "probes"), "results");
		assert_int_equal(json_array_size(res), r == 0 ? 4096 : 4864 - 4096);
		json_array_foreach(res, i, x) {
			char key[128];

			snprintf(key, sizeof(key), "%s/%s/%lld/%lld", json_string_value(json_object_get(x, "target")),
				 json_string_value(json_object_get(x, "op")),
				 (long long)json_integer_value(json_object_get(x, "size")),
				 (long long)json_integer_value(json_object_get(x, "label")));
			assert_null(json_object_get(seen, key)); /* none twice */
			json_object_set_new(seen, key, json_true());
			assert_int_equal(json_integer_value(json_object_get(x, "ok")), 1);
		}
		total += json_array_size(res);
		json_decref(rep);
	}
	assert_int_equal(total, 4864);
	assert_int_equal(json_object_size(seen), 4864);
	json_decref(seen);
	agent_destroy(a);
	simctl_fini(&c);
	sim_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate_ecn),
		cmocka_unit_test(test_validate_dcqcn_and_pfc),
		cmocka_unit_test(test_dcb_pfc_read_modify_write),
		cmocka_unit_test_setup_teardown(test_linux_apply, setup, teardown),
		cmocka_unit_test(test_lldp_json0),
		cmocka_unit_test(test_sim_control_api),
		cmocka_unit_test(test_agent_applies_commands_once),
		cmocka_unit_test(test_agent_refuses_changes_out_of_range),
		cmocka_unit_test(test_agent_reports_a_large_round_in_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
