/* Unit tests of agent pieces: ethtool -S parsing, the spool, and the linux backend reading
 * recorded trees (tests/data/hosts), including garbage in sysfs and absent devices. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/backend.h"
#include "agents/linux.h"
#include "agents/sim.h"
#include "agents/linux-net.h"
#include "agents/spool.h"
#include "daemon/report.h"
#include "lib/conf.h"
#include "lib/timeutil.h"
#include "tests/unit/unit.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rocefab-agent-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static bool want_all(void *ctx, const char *group, const char *name)
{
	(void)ctx;
	(void)group;
	return strcmp(name, "skip_me") != 0;
}

static void test_ethtool_text(void **state)
{
	json_t *v = json_object(), *errors = json_array();

	(void)state;
	assert_int_equal(ethtool_parse_text("NIC statistics:\n"
					    "     rx_prio3_pause: 12\n"
					    "     tx_pause_storm_warning_events : 4\n"
					    "     skip_me: 1\n"
					    "     negative: -1\n"
					    "     words: abc\n"
					    "     big: 18446744073709551615\n"
					    "no colon here\n"
					    "     last: 7",
					    v, want_all, NULL, errors, "ethtool/eth0"),
			 3);
	/* what was left out is said, once for the file (it vanished silently) */
	assert_int_equal(json_array_size(errors), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "code")), "ETHTOOL_GARBAGE");
	assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "message")),
			    "4 lines are not \"name: counter\" (a decimal number up to 2^63-1), left out; the first: "
			    "'     negative: -1'");
	assert_int_equal(json_integer_value(json_object_get(v, "rx_prio3_pause")), 12);
	/* the trailing space some kernels print is not part of the name */
	assert_int_equal(json_integer_value(json_object_get(v, "tx_pause_storm_warning_events")), 4);
	assert_null(json_object_get(v, "skip_me"));
	assert_null(json_object_get(v, "negative"));
	assert_null(json_object_get(v, "words"));
	assert_null(json_object_get(v, "big")); /* beyond int64: not representable in a report */
	assert_int_equal(json_integer_value(json_object_get(v, "last")), 7);
	/* CRLF lines and a header with a trailing space are no garbage */
	json_array_clear(errors);
	assert_int_equal(ethtool_parse_text("NIC statistics: \r\n     rx_queue_0_packets: 5\r\n\r\n", v, want_all, NULL,
					    errors, "ethtool/eth0"),
			 1);
	assert_int_equal(json_array_size(errors), 0);
	assert_int_equal(json_integer_value(json_object_get(v, "rx_queue_0_packets")), 5);
	json_decref(v);
	/* a name given twice (a driver's bug): which value is which cannot be told, left out and
	 * said (the last won, silently) */
	v = json_object();
	assert_int_equal(ethtool_parse_text("NIC statistics:\n     rx_pause: 5\n     tx_pause: 1\n     rx_pause: 9\n"
					    "     rx_pause: 11\n",
					    v, want_all, NULL, errors, "ethtool/eth0"),
			 1);
	assert_null(json_object_get(v, "rx_pause"));
	assert_int_equal(json_integer_value(json_object_get(v, "tx_pause")), 1);
	assert_int_equal(json_array_size(errors), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "code")), "ETHTOOL_DUPLICATE");
	assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "message")),
			    "1 name is given more than once in the statistics, left out (which value is which counter "
			    "cannot be told); the first: 'rx_pause'");
	json_decref(v);
	json_decref(errors);
}

static void write_file(const char *root, const char *rel, const char *text)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_spool(void **state)
{
	char path[128], *data;
	struct rf_err e;
	struct spool *s;
	size_t len;

	(void)state;
	snprintf(path, sizeof(path), "%s/spool", dir);
	assert_int_equal(spool_open(path, 100, false, &s, &e), 0);
	assert_int_equal(spool_peek(s, &data, &len), -ENOENT);
	assert_int_equal(spool_push(s, "report-1-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 39), 0);
	assert_int_equal(spool_push(s, "report-2-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 39), 0);
	assert_int_equal(spool_count(s), 2);
	/* the bound (100 bytes) drops the oldest, and counts it */
	assert_int_equal(spool_push(s, "report-3-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 39), 0);
	assert_int_equal(spool_count(s), 2);
	assert_int_equal(spool_dropped(s), 1);
	assert_int_equal(spool_bytes(s), 78);
	/* bigger than the bound: refused and counted */
	{
		char big[200];

		memset(big, 'x', sizeof(big));
		assert_int_equal(spool_push(s, big, sizeof(big)), -EFBIG);
		assert_int_equal(spool_dropped(s), 2);
	}
	spool_close(s);

	/* a new agent process finds the reports, in order; a half-written file is cleaned up */
	{
		char tmp[160];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s/.tmp-99", path);
		f = fopen(tmp, "w");
		fputs("half", f);
		fclose(f);
		assert_int_equal(spool_open(path, 100, false, &s, &e), 0);
		assert_int_equal(access(tmp, F_OK), -1);
	}
	assert_int_equal(spool_count(s), 2);
	/* and the count of those dropped goes on (a restart reported only its own) */
	assert_int_equal(spool_dropped(s), 2);
	assert_int_equal(spool_peek(s, &data, &len), 0);
	assert_int_equal(len, 39);
	assert_memory_equal(data, "report-2", 8);
	free(data);
	assert_int_equal(spool_pop(s), 0);
	assert_int_equal(spool_push(s, "report-4", 8), 0);
	assert_int_equal(spool_peek(s, &data, &len), 0);
	assert_memory_equal(data, "report-3", 8);
	free(data);
	assert_int_equal(spool_pop(s), 0);
	assert_int_equal(spool_peek(s, &data, &len), 0);
	assert_memory_equal(data, "report-4", 8);
	free(data);
	assert_int_equal(spool_pop(s), 0);
	assert_int_equal(spool_count(s), 0);
	assert_int_equal(spool_bytes(s), 0);
	spool_close(s);
	/* a count that is no count (edited by hand: -1 was read as 2^64 - 1, and every report
	 * refused) starts anew */
	write_file(path, "spool-dropped", "-1\n");
	assert_int_equal(spool_open(path, 100, false, &s, &e), 0);
	assert_int_equal(spool_dropped(s), 0);
	spool_close(s);

	/* an unwritable place is a clear error */
	assert_int_equal(spool_open("/proc/rocefab-spool", 100, false, &s, &e) < 0, 1);
	assert_string_equal(e.code, "SPOOL_UNAVAILABLE");
}

static unsigned mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (unsigned)(st.st_mode & 07777);
}

/* The spool is the agent's alone: the directories it makes 0700, the reports 0600, whatever the
 * umask (they were 0750 and 0640).  A directory that exists keeps its mode (a warning says so). */
static void test_spool_modes(void **state)
{
	char path[200], parent[128], file[260];
	mode_t um = umask(022);
	struct rf_err e;
	struct spool *s;

	(void)state;
	snprintf(parent, sizeof(parent), "%s/modes", dir);
	snprintf(path, sizeof(path), "%s/spool", parent);
	assert_int_equal(spool_open(path, 1000, false, &s, &e), 0);
	assert_int_equal(spool_push(s, "report-1", 8), 0);
	spool_close(s);
	assert_int_equal(mode_of(parent), 0700);
	assert_int_equal(mode_of(path), 0700);
	snprintf(file, sizeof(file), "%s/%020d.json", path, 0);
	assert_int_equal(mode_of(file), 0600);

	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(spool_open(path, 1000, false, &s, &e), 0);
	assert_int_equal(spool_count(s), 1);
	spool_close(s);
	assert_int_equal(mode_of(path), 0755);
	umask(um);
}

static json_t *find_sample(json_t *samples, const char *dev, const char *source)
{
	size_t i;
	json_t *s;

	json_array_foreach(samples, i, s)
		if (!strcmp(json_string_value(json_object_get(s, "device")), dev) &&
		    !strcmp(json_string_value(json_object_get(s, "source")), source))
			return s;
	return NULL;
}

static void collect(const char *root, const char *devices, const char *ifaces,
		    struct agent_inventory *inv, json_t **samples, json_t **errors)
{
	struct linux_settings ls = { .sysfs_root = (char *)root, .devices = (char *)devices,
				     .interfaces = (char *)ifaces };
	struct backend_env env = { .settings = &ls };
	struct backend *b;
	struct rf_err e;
	struct reg *reg;

	assert_int_equal(reg_load_builtin(&reg, &e), 0);
	env.reg = reg;
	assert_int_equal(backend_new("linux", &env, &b, &e), 0);
	*samples = json_array();
	*errors = json_array();
	assert_int_equal(b->ops->inventory(b, inv, *errors), 0);
	assert_int_equal(b->ops->collect(b, inv, *samples, *errors), 0);
	/* a recorded tree without DCQCN knobs or DCB: an empty configuration, and changes fail
	 * with the reason */
	{
		json_t *cfg = NULL, *out = NULL;
		json_t *cmd = json_pack("{s:s,s:s,s:{s:s,s:i}}", "id", "c1", "kind", "set_dcqcn",
					"params", "port", "1", "rpg_ai_rate", 10);

		assert_int_equal(b->ops->read_config(b, &cfg), 0);
		assert_int_equal(json_array_size(json_object_get(cfg, "dcqcn")), 0);
		assert_int_equal(json_array_size(json_object_get(cfg, "pfc")), 0);
		assert_int_equal(b->ops->apply(b, cmd, &out), 0);
		assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
		json_decref(cfg);
		json_decref(out);
		json_decref(cmd);
	}
	backend_free(b);
	reg_free(reg);
}

static void test_linux_tree(void **state)
{
	struct agent_inventory inv = { 0 };
	json_t *samples, *errors, *s;

	(void)state;
	collect("tests/data/hosts/gpu-a1", "", "", &inv, &samples, &errors);
	assert_int_equal(inv.ndevs, 2);
	assert_string_equal(inv.devs[0].name, "mlx5_0");
	assert_string_equal(inv.devs[0].driver, "mlx5");
	assert_string_equal(inv.devs[0].ports[0].netdev, "enp65s0f0np0");
	assert_string_equal(inv.devs[0].ports[0].state, "up");
	assert_int_equal(inv.devs[0].ports[0].speed_mbps, 400000);
	assert_int_equal(inv.devs[0].ports[0].mtu, 4200);
	s = find_sample(samples, "mlx5_0", "ib_counters");
	assert_non_null(s);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "values"),
							    "port_xmit_data")),
			 1750000000);
	s = find_sample(samples, "mlx5_0", "ethtool");
	assert_non_null(json_object_get(json_object_get(s, "values"), "rx_prio3_pause"));
	/* counters the registry does not know are not sent */
	assert_null(json_object_get(json_object_get(s, "values"), "rx_csum_complete"));
	assert_null(json_object_get(json_object_get(find_sample(samples, "mlx5_0", "hw_counters"),
						    "values"),
				    "lifespan"));
	assert_int_equal(json_array_size(errors), 0);
	json_decref(samples);
	json_decref(errors);
	inventory_clear(&inv);

	/* rxe: driver from the name, netdev from "parent", no PMA counters */
	collect("tests/data/hosts/stor-b1", "", "", &inv, &samples, &errors);
	assert_string_equal(inv.devs[0].driver, "rxe");
	assert_string_equal(inv.devs[0].ports[0].netdev, "eth1");
	assert_null(find_sample(samples, "rxe0", "ib_counters"));
	assert_non_null(json_object_get(json_object_get(find_sample(samples, "rxe0", "hw_counters"),
							"values"),
					"sent_pkts"));
	json_decref(samples);
	json_decref(errors);
	inventory_clear(&inv);
}

static void test_linux_garbage(void **state)
{
	struct agent_inventory inv = { 0 };
	json_t *samples, *errors, *s;
	char root[160], cmd[400], path[300];
	FILE *f;

	(void)state;
	snprintf(root, sizeof(root), "%s/tree", dir);
	snprintf(cmd, sizeof(cmd), "cp -a tests/data/hosts/gpu-a2 '%s'", root);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent",
		 root);
	f = fopen(path, "w");
	fputs("N/A\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
		 root);
	f = fopen(path, "w");
	fputs("-12\n", f);
	fclose(f);
	write_file(root, "sys/class/net/ens1f0np0/statistics/rx_bytes", "garbage\n");
	/* a FIFO in a counter's place (a read that would block, as a hung driver's): not waited
	 * on (the agent hung there, deaf to SIGTERM) */
	snprintf(path, sizeof(path), "%s/sys/class/net/ens1f0np0/statistics/tx_errors", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	/* what strtoull would take but sysfs never writes, a NUL inside, more than a counter
	 * holds, and a file that cannot be opened: each an error, none a value (an attacker's
	 * review: "+7" read 7, "12\0 34" 12, 201 zeros and a 5 read 0, and a dangling link was
	 * left out without a word) */
	{
		static const char *const junk[][2] = { { "out_of_sequence", "+7\n" },
						       { "packet_seq_err", " 7\n" },
						       { "duplicate_request", NULL } };
		char zeros[220];

		for (int k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), "sys/class/infiniband/mlx5_0/ports/1/hw_counters/%s", junk[k][0]);
			write_file(root, path, junk[k][1]);
		}
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/hw_counters/%s", root,
			 "duplicate_request");
		f = fopen(path, "w");
		fwrite("12\0 34\n", 1, 7, f);
		fclose(f);
		memset(zeros, '0', 200);
		zeros[200] = '5';
		zeros[201] = '\n';
		zeros[202] = '\0';
		write_file(root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", zeros);
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/hw_counters/%s", root,
			 "rx_read_requests");
		assert_int_equal(unlink(path), 0);
		assert_int_equal(symlink("nowhere", path), 0);
	}
	collect(root, "mlx5_0,mlx5_9", "ens1f0np0,eth42", &inv, &samples, &errors);
	/* garbage is reported as a collection error, the rest of the port still comes through
	 * (a netdev counter's was left out silently) */
	{
		static const char *const gone[] = { "out_of_sequence", "packet_seq_err", "duplicate_request",
						    "out_of_buffer", "rx_read_requests" };
		json_t *hw = json_object_get(find_sample(samples, "mlx5_0", "hw_counters"), "values");
		size_t i;
		json_t *x;

		for (size_t k = 0; k < ARRAY_SIZE(gone); k++) {
			bool said = false;

			assert_null(json_object_get(hw, gone[k]));
			json_array_foreach(errors, i, x)
				said |= strstr(json_string_value(json_object_get(x, "where")) ?: "", gone[k]) != NULL;
			if (!said)
				fail_msg("%s: no error", gone[k]);
		}
		/* (taken out of the count below: the four of before) */
		for (i = json_array_size(errors); i-- > 0;)
			for (size_t k = 0; k < ARRAY_SIZE(gone); k++)
				if (strstr(json_string_value(json_object_get(json_array_get(errors, i), "where")) ?: "",
					   gone[k])) {
					json_array_remove(errors, i);
					break;
				}
	}
	assert_int_equal(json_array_size(errors), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 2), "message")),
			    "'garbage' is not a counter value (a decimal number up to 2^63-1)");
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(errors, 3), "where")), "tx_errors"));
	assert_null(json_object_get(json_object_get(find_sample(samples, "mlx5_0", "netdev"), "values"), "rx_bytes"));
	assert_non_null(
		json_object_get(json_object_get(find_sample(samples, "mlx5_0", "netdev"), "values"), "tx_bytes"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "code")),
			    "SYSFS_GARBAGE");
	s = find_sample(samples, "mlx5_0", "hw_counters");
	assert_null(json_object_get(json_object_get(s, "values"), "np_cnp_sent"));
	assert_non_null(json_object_get(json_object_get(s, "values"), "rp_cnp_handled"));
	assert_null(json_object_get(json_object_get(find_sample(samples, "mlx5_0", "ib_counters"),
						    "values"),
				    "port_rcv_data"));
	/* devices and interfaces that are not there are absent, not errors */
	assert_int_equal(inv.nabsent, 2);
	assert_string_equal(inv.absent[0], "mlx5_9");
	assert_string_equal(inv.absent[1], "eth42");
	/* an interface without RDMA is its own device */
	assert_int_equal(inv.ndevs, 2);
	assert_string_equal(inv.devs[1].kind, "netdev");
	assert_non_null(find_sample(samples, "ens1f0np0", "netdev"));
	json_decref(samples);
	json_decref(errors);
	inventory_clear(&inv);
}

static int error_count(json_t *doc, const char *code)
{
	size_t i;
	json_t *x;
	int n = 0;

	json_array_foreach(json_object_get(doc, "errors"), i, x)
		n += !strcmp(json_string_value(json_object_get(x, "code")), code);
	return n;
}

static int refusing_kernel(void *ctx, const void *req, size_t len, void *reply, size_t cap,
			   size_t *ret_len)
{
	(void)ctx;
	(void)req;
	(void)len;
	(void)reply;
	(void)cap;
	(void)ret_len;
	return -EIO;
}

/* Names rocefabd does not take (an interface name Linux allows, a neighbour's system name with a
 * space, a typo in linux.devices, a boot id that is none) are left out of the report with an error, and the report is
 * still one rocefabd accepts; a refused change's message quotes such a name safely.  Each made
 * rocefabd refuse the host's every report, or lost the change's outcome (found by fuzz_sysfs). */
static void test_linux_odd_names(void **state)
{
	struct linux_settings ls = { .devices = (char *)"mlx5_0,mlx5;1", .net_source = LINUX_NET_FILES };
	struct backend_env env = { .settings = &ls };
	struct agent_conf ac = { .id = "gpu-a2", .role = AGENT_HOST, .backend_name = "linux",
				 .interval_ns = 1000000000 };
	char root[160], cmd[400], *text;
	struct rf_err e = { 0 };
	struct report *r = NULL;
	struct agent *a = NULL;
	json_t *doc = NULL, *out = NULL, *c;
	struct reg *reg;

	(void)state;
	ac.host_boot_root = root;
	snprintf(root, sizeof(root), "%s/odd", dir);
	snprintf(cmd, sizeof(cmd), "cp -a tests/data/hosts/gpu-a2 '%s' && mkdir -p '%s/lldp'", root, root);
	assert_int_equal(system(cmd), 0);
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens1f0np0\xff\n");
	write_file(root, "proc/sys/kernel/random/boot_id", "-\n"); /* no boot id: none sent */
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/rate", "1e30 Gb/sec\n"); /* UBSan */
	write_file(root, "sys/class/net/ens1f0np0/mtu", "99999999\n");
	/* an 8-bit counter beyond its width: rocefabd refuses such a report; the agent leaves
	 * the value out (found when the fuzz target met the registry's widths) */
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "1750000000\n");
	write_file(root, "lldp/neighbors.json0",
		   "{\"lldp\":[{\"interface\":[{\"name\":\"ens1f0np0\\u00ff\",\"chassis\":[{\"name\":"
		   "[{\"value\":\"TOR 1\"}]}],\"port\":[{\"id\":[{\"type\":\"ifname\",\"value\":\"Ethernet8\"}]}]}]}]}");
	ls.sysfs_root = root;
	assert_int_equal(reg_load_builtin(&reg, &e), 0);
	env.reg = reg;
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(agent_build_report(a, &doc), 0);
	text = json_dumps(doc, JSON_COMPACT);
	if (report_parse(text, strlen(text), reg, &r, &e) < 0)
		fail_msg("rocefabd refuses the report: %s at %s: %s", e.code, e.where, e.msg);
	report_free(r);
	free(text);
	assert_int_equal(error_count(doc, "BAD_NAME"), 2); /* the netdev, the absent "mlx5;1" */
	text = json_dumps(json_object_get(doc, "errors"), 0);
	assert_non_null(strstr(text, "link_downed read 1750000000"));
	free(text);
	json_decref(doc);
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "3\n");
	/* the neighbour's system name (the netdev that matches it was the odd one: now plain), and
	 * the netdev's MTU */
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens1f0np0\n");
	write_file(root, "lldp/neighbors.json0",
		   "{\"lldp\":[{\"interface\":[{\"name\":\"ens1f0np0\",\"chassis\":[{\"name\":"
		   "[{\"value\":\"TOR 1\"}]}],\"port\":[{\"id\":[{\"type\":\"ifname\",\"value\":\"Ethernet8\"}]}]}]}]}");
	agent_destroy(a);
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(agent_build_report(a, &doc), 0);
	text = json_dumps(doc, JSON_COMPACT);
	assert_int_equal(report_parse(text, strlen(text), reg, &r, &e), 0);
	report_free(r);
	free(text);
	assert_int_equal(error_count(doc, "BAD_NAME"), 2); /* the neighbour, the absent "mlx5;1" */
	assert_int_equal(error_count(doc, "BAD_VALUE"), 1); /* the MTU */
	json_decref(doc);
	agent_destroy(a);
	/* a change refused with a message that quotes a netdev which is not UTF-8 */
	write_file(root, "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth\xff\n");
	ls.dcb_xfer = refusing_kernel;
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(agent_build_report(a, &doc), 0);
	json_decref(doc);
	c = json_pack("{s:s,s:s,s:{s:s,s:s,s:i}}", "id", "c1", "kind", "set_pfc", "params", "device",
		      "mlx5_0", "port", "1", "enable", 8);
	assert_int_equal(ac.backend->ops->apply(ac.backend, c, &out), 0);
	assert_non_null(out);
	assert_string_equal(json_string_value(json_object_get(out, "outcome")), "failed");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(out, "error"), "message")),
			       "eth?"));
	json_decref(out);
	json_decref(c);
	agent_destroy(a);
	reg_free(reg);
}

/* The outcomes of commands an agent applied, kept in its spool directory until rocefabd
 * acknowledges a report that carried them: a restart in between lost them (the change stayed
 * in doubt, or, sent again after its deadline, was said timed out though applied). */
static int outcomes_of(struct agent *a, const char *id, int64_t *seq)
{
	json_t *doc = NULL, *it;
	size_t i;
	int n = 0;

	assert_int_equal(agent_build_report(a, &doc), 0);
	json_array_foreach(json_object_get(doc, "command_results"), i, it)
		n += !strcmp(json_string_value(json_object_get(it, "id")), id);
	*seq = json_integer_value(json_object_get(doc, "seq"));
	json_decref(doc);
	return n;
}

static void test_outcomes_kept(void **state)
{
	struct linux_settings ls = { .devices = (char *)"mlx5_0", .net_source = LINUX_NET_FILES,
				     .sysfs_root = (char *)"tests/data/hosts/gpu-a2", .dcb_xfer = refusing_kernel };
	struct backend_env env = { .settings = &ls };
	struct agent_conf ac = { .id = "gpu-a2", .role = AGENT_HOST, .backend_name = "linux",
				 .interval_ns = 1000000000, .spool_max = 1u << 20 };
	char spool[128], file[160];
	struct rf_err e = { 0 };
	struct agent *a = NULL;
	struct reg *reg;
	json_t *cmd, *ack;
	int64_t seq;

	(void)state;
	snprintf(spool, sizeof(spool), "%s/outcomes", dir);
	snprintf(file, sizeof(file), "%s/command-outcomes", spool);
	ac.spool_dir = spool;
	assert_int_equal(reg_load_builtin(&reg, &e), 0);
	env.reg = reg;
	cmd = json_pack("{s:[{s:s,s:s,s:I,s:{s:s,s:s,s:i}}]}", "commands", "id", "c41", "kind", "set_pfc",
			"deadline_ns", (json_int_t)(tu_now_ns() + 60 * NSEC_PER_SEC), "params", "device", "mlx5_0",
			"port", "1", "enable", 8);
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	agent_handle_answer(a, cmd);
	agent_destroy(a); /* stopped before a report said it */
	assert_int_equal(access(file, F_OK), 0);
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(outcomes_of(a, "c41", &seq), 1);
	/* acknowledged: gone, from the disk too */
	ack = json_pack("{s:I}", "seq", (json_int_t)seq);
	agent_handle_answer(a, ack);
	json_decref(ack);
	assert_int_equal(outcomes_of(a, "c41", &seq), 0);
	assert_int_equal(access(file, F_OK), -1);
	/* kept by an agent whose id was changed since: not reported as the new one's */
	agent_handle_answer(a, cmd);
	agent_destroy(a);
	ac.id = "gpu-a2-new";
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(outcomes_of(a, "c41", &seq), 0);
	assert_int_equal(access(file, F_OK), -1);
	agent_destroy(a);
	ac.id = "gpu-a2";
	/* the file's first form (a bare list): this agent's */
	write_file(spool, "command-outcomes", "[{\"id\":\"c42\",\"outcome\":\"applied\"}]");
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(outcomes_of(a, "c42", &seq), 1);
	agent_destroy(a);
	/* garbage in the file: said, removed, and the agent starts */
	write_file(spool, "command-outcomes", "{\"agent\":\"gpu-a2\",\"outcomes\":[{\"id\":");
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(outcomes_of(a, "c41", &seq), 0);
	assert_int_equal(access(file, F_OK), -1);
	agent_destroy(a);
	json_decref(cmd);
	reg_free(reg);
}

static int says_switch(struct backend *b)
{
	(void)b;
	return 1;
}

/* The fast lane's reports carry the role the backend knows, as the full reports do: the lane's
 * first report may come before the first full one, and a switch standing in for the simulator's
 * (--backend sim, no --role) was taken for a host by rocefabd, its ports labelled DEVICE:PORT. */
static void test_pfc_report_role_from_backend(void **state)
{
	struct linux_settings ls = { .devices = (char *)"mlx5_0", .net_source = LINUX_NET_FILES,
				     .sysfs_root = (char *)"tests/data/hosts/gpu-a2" };
	struct backend_env env = { .settings = &ls };
	struct agent_conf ac = { .id = "leaf9", .role = AGENT_HOST, .backend_name = "linux",
				 .interval_ns = 1000000000, .pfc_interval_ns = 200000000 };
	struct backend_ops *ops;
	struct rf_err e = { 0 };
	struct agent *a = NULL;
	struct reg *reg;
	json_t *doc = NULL;

	(void)state;
	assert_int_equal(reg_load_builtin(&reg, &e), 0);
	env.reg = reg;
	assert_int_equal(backend_new("linux", &env, &ac.backend, &e), 0);
	/* (each backend's slots are its own copy: backend_new fills in the defaults) */
	ops = (struct backend_ops *)ac.backend->ops;
	ops->is_switch = says_switch;
	assert_int_equal(agent_create(&ac, &a, &e), 0);
	assert_int_equal(agent_build_pfc_report(a, &doc), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "agent"), "role")), "switch");
	json_decref(doc);
	agent_destroy(a);
	reg_free(reg);
}

static void test_backend_lookup(void **state)
{
	struct linux_settings ls = { .sysfs_root = (char *)"/nonexistent/tree" };
	struct backend_env env = { 0 };
	struct backend *b = NULL;
	struct rf_err e;

	(void)state;
	assert_int_equal(backend_new("nonsense", &env, &b, &e), -ENOENT);
	assert_string_equal(e.code, "UNKNOWN_BACKEND");
	/* the message names every backend of the build */
	for (size_t i = 0; backend_list[i]; i++) {
		assert_non_null(strstr(e.msg, backend_list[i]->name));
		assert_ptr_equal(backend_find(backend_list[i]->name), backend_list[i]);
		assert_non_null(backend_list[i]->summary);
	}
	assert_null(backend_find("nonsense"));
	env.settings = &ls;
	assert_true(backend_new("linux", &env, &b, &e) < 0);
	assert_string_equal(e.code, "BAD_SYSFS_ROOT");
}

/* Every slot of an opened backend has a default: what a backend leaves out fails with
 * -EOPNOTSUPP (or says "none") instead of crashing the agent. */
static void test_backend_defaults(void **state)
{
	struct sim_settings ss = { .device = (char *)"h1", .url = (char *)"http://127.0.0.1:1" };
	struct linux_settings ls = { .sysfs_root = (char *)"tests/data/hosts/gpu-a1" };
	struct backend_env env = { .settings = &ss };
	struct agent_inventory inv = { 0 };
	struct backend *b = NULL;
	struct rf_err e = { 0 };
	const char *ep = "x";
	json_t *res = NULL;
	char id[65];

	(void)state;
	/* sim: no host boot of its own (it stands in for a simulated device, whose name it is) */
	assert_int_equal(backend_new("sim", &env, &b, &e), 0); /* nothing listens there: fine */
	assert_null(b->ops->host_root(&ss));
	assert_int_equal(b->ops->default_id(&ss, id, &e), 0);
	assert_string_equal(id, "h1");
	assert_int_equal(backend_default_id("sim", &ss, id, &e), 0);
	assert_null(backend_host_root("sim", &ss));
	ss.device = (char *)"a-name-of-more-than-sixty-four-characters-is-no-agent-id-for-rocefab";
	assert_int_equal(backend_default_id("sim", &ss, id, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_AGENT_ID");
	assert_string_equal(e.where, "sim.device");
	ss.device = (char *)"h1";
	assert_int_equal(b->ops->probe_endpoint(b, &ep), 0);
	assert_null(ep);
	assert_int_equal(b->ops->inventory(b, &inv, NULL), -EHOSTUNREACH);
	backend_free(b);
	/* linux: no id of its own, no role of its own, no probing without probe.listen */
	env.settings = &ls;
	assert_int_equal(backend_new("linux", &env, &b, &e), 0);
	assert_int_equal(b->ops->default_id(&ls, id, &e), -ENOENT);
	assert_int_equal(backend_default_id("linux", &ls, id, &e), -ENOENT);
	assert_int_equal(backend_default_id("nonsense", &ls, id, &e), -ENOENT);
	assert_string_equal(b->ops->host_root(&ls), "tests/data/hosts/gpu-a1");
	assert_int_equal(b->ops->is_switch(b), -EOPNOTSUPP);
	assert_int_equal(b->ops->probe_endpoint(b, &ep), -EOPNOTSUPP);
	assert_int_equal(b->ops->probe_round(b, NULL, &res), -EOPNOTSUPP);
	assert_null(res);
	backend_free(b);
	inventory_clear(&inv);
}

/* Each backend's keys are the agent's, through the backends group: set, dumped, listed. */
static void test_backend_settings(void **state)
{
	struct agent_settings s = { 0 };
	const struct linux_settings *ls;
	const struct sim_settings *ss;
	struct rf_err e = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(conf_init(agent_opts, &s, &e), 0);
	assert_int_equal(conf_load_string(agent_opts, &s, "[agent]\nbackend = sim\n[sim]\ndevice = leaf0\n"
				 "[linux]\nsysfs_root = /tmp/tree\n[probe]\ncpu_percent = 7\n", "t.conf", &e), 0);
	ls = backend_settings_of(s.backends, "linux");
	ss = backend_settings_of(s.backends, "sim");
	assert_non_null(ls);
	assert_non_null(ss);
	assert_null(backend_settings_of(s.backends, "nonsense"));
	assert_string_equal(ss->device, "leaf0");
	assert_string_equal(ss->url, "http://127.0.0.1:9760"); /* the default */
	assert_string_equal(ls->sysfs_root, "/tmp/tree");
	assert_int_equal(ls->probe_cpu_pct, 7);
	assert_int_equal(conf_set(agent_opts, &s, "sim.nonsense", "1", "-o", &e), -ENOENT);
	assert_int_equal(conf_set(agent_opts, &s, "probe.cpu_percent", "0", "-o", &e), -ERANGE);
	f = open_memstream(&text, &len);
	conf_dump(agent_opts, &s, f);
	fclose(f);
	assert_non_null(strstr(text, "[sim]\nurl = http://127.0.0.1:9760\ndevice = leaf0\n"));
	assert_non_null(strstr(text, "[probe]\nlisten = \n"));
	free(text);
	f = open_memstream(&text, &len);
	conf_help(agent_opts, f);
	fclose(f);
	assert_non_null(strstr(text, "linux.net_source"));
	assert_non_null(strstr(text, "sim.device"));
	free(text);
	conf_fini(agent_opts, &s);
	assert_null(s.backends);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ethtool_text),  cmocka_unit_test(test_spool),
		cmocka_unit_test(test_spool_modes),
		cmocka_unit_test(test_linux_tree),    cmocka_unit_test(test_linux_garbage),
		cmocka_unit_test(test_pfc_report_role_from_backend),
		cmocka_unit_test(test_backend_lookup), cmocka_unit_test(test_backend_defaults),
		cmocka_unit_test(test_backend_settings), cmocka_unit_test(test_linux_odd_names),
		cmocka_unit_test(test_outcomes_kept),
	};

	return cmocka_run_group_tests_name("agent", tests, setup, teardown);
}
