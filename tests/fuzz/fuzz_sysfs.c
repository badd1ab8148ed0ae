/* libFuzzer target: what the linux agent backend reads from a host (agents/linux.c,
 * linux-net.c, lldp.c, dcb.c) — sysfs attributes and counters, interface statistics, ethtool -S
 * text, lldpd's JSON, DCB netlink replies — through the agent that turns them into a report
 * (agents/agent.c), checked by rocefabd's report parser (daemon/report.c).
 *
 * The target builds a small recorded host tree at start (an mlx5 device with its DCQCN knobs,
 * an rxe device, an interface without RDMA, ethtool output, lldpd's neighbours, the boot id;
 * the layout of tests/data/hosts/README.md) and answers DCB requests with a fake kernel.  An
 * input is a byte of flags (bit 0: agent.all_counters) and records [index][length][bytes]:
 *   index < number of files   that file gets the bytes (length 255: the file is removed);
 *                             for a symbolic link (the driver), the bytes are its target
 *   0xf0, 0xf1, 0xf2          the DCB replies to the backend's 1st, 2nd, 3rd request
 *   0xf3, 0xf4                linux.devices, linux.interfaces (comma-separated lists)
 *   0xf5                      one more counter file in hw_counters/: NAME=VALUE
 * After each input the tree is put back as it was.  ROCEFAB_FUZZ_LIST=1 lists the indexes.
 *
 * Invariants: inventory, collection and reading the configuration succeed whatever the files
 * hold (garbage is reported in the report's errors, never fatal); the report the agent builds
 * from them is one rocefabd accepts (report_parse): one strange file must not make a host's
 * reports unusable. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agents/agent.h"
#include "agents/backend.h"
#include "agents/linux.h"
#include "daemon/report.h"
#include "lib/log.h"
#include "lib/params.h"
#include "tests/fuzz/fuzz-tmpdir.h"

#define MAX_FILES 160

struct tfile {
	char path[160];
	const char *def;
	char defbuf[16];
	bool link, dirty;
};

static struct tfile files[MAX_FILES];
static unsigned nfiles;
static struct reg *reg;
static struct {
	uint8_t data[3][512];
	size_t len[3];
	unsigned next;
} dcb;
static char extra[300]; /* the extra counter file, to remove */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void mkdirs(const char *path)
{
	char p[300];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
}

static void put(struct tfile *f, const void *bytes, size_t len)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, f->path);
	unlink(path);
	mkdirs(path);
	if (f->link) {
		char target[300];

		snprintf(target, sizeof(target), "%.*s", (int)len, (const char *)bytes);
		if (symlink(target[0] ? target : "x", path) < 0)
			abort();
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || write(fd, bytes, len) != (ssize_t)len || close(fd) < 0)
			abort();
	}
}

static void add(const char *path, const char *def, bool link)
{
	struct tfile *f = &files[nfiles++];

	if (nfiles > MAX_FILES)
		abort();
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->def = def;
	f->link = link;
	put(f, def, strlen(def));
}

static const char lldp_json0[] =
	"{\"lldp\":[{\"interface\":[{\"name\":\"eth0\",\"chassis\":[{\"name\":[{\"value\":\"tor1\"}]}],"
	"\"port\":[{\"id\":[{\"type\":\"ifname\",\"value\":\"Ethernet8\"}],"
	"\"descr\":[{\"value\":\"to gpu-a1\"}]}]},{\"name\":\"eth1\",\"chassis\":[{\"name\":"
	"[{\"value\":\"tor2\"}]}],\"port\":[{\"id\":[{\"type\":\"mac\",\"value\":\"aa:bb\"}],"
	"\"descr\":[{\"value\":\"Ethernet9\"}]}]}]}]}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const ib_counters[] = { "port_xmit_data", "port_rcv_data",
						   "port_xmit_packets", "port_rcv_packets",
						   "excessive_buffer_overrun_errors", "link_downed" };
	static const char *const hw_counters[] = { "np_cnp_sent", "rp_cnp_handled",
						   "out_of_sequence", "np_ecn_marked_roce_packets",
						   "lifespan" };
	static const char *const stats[] = { "rx_bytes", "tx_bytes", "rx_errors", "rx_dropped" };
	static char knob_paths[64][96];
	struct rf_err e = { 0 };
	char path[160];
	unsigned nk = 0;

	(void)argc;
	(void)argv;
	log_set_level(LOG_ERR);
	if (reg_load_builtin(&reg, &e) < 0)
		abort();
	fuzz_dir_make("sysfs");
	add("sys/class/infiniband/mlx5_0/fw_ver", "28.39.1002\n", false);
	add("sys/class/infiniband/mlx5_0/node_guid", "b859:9f03:00d4:2a10\n", false);
	add("sys/class/infiniband/mlx5_0/device/driver", "../../../bus/pci/drivers/mlx5_core", true);
	add("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n", false);
	add("sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n", false);
	add("sys/class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n", false);
	add("sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth0\n", false);
	for (size_t i = 0; i < sizeof(ib_counters) / sizeof(ib_counters[0]); i++) {
		snprintf(path, sizeof(path), "sys/class/infiniband/mlx5_0/ports/1/counters/%s", ib_counters[i]);
		add(path, "1750000000\n", false);
	}
	for (size_t i = 0; i < sizeof(hw_counters) / sizeof(hw_counters[0]); i++) {
		snprintf(path, sizeof(path), "sys/class/infiniband/mlx5_0/ports/1/hw_counters/%s", hw_counters[i]);
		add(path, "42\n", false);
	}
	add("sys/class/infiniband/rxe0/parent", "eth1\n", false);
	add("sys/class/infiniband/rxe0/ports/1/state", "1: DOWN\n", false);
	add("sys/class/infiniband/rxe0/ports/1/rate", "10 Gb/sec (1X QDR)\n", false);
	add("sys/class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n", false);
	add("sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "7\n", false);
	for (int n = 0; n < 3; n++) {
		static const char *const ifs[] = { "eth0", "eth1", "eth2" };

		snprintf(path, sizeof(path), "sys/class/net/%s/operstate", ifs[n]);
		add(path, "up\n", false);
		snprintf(path, sizeof(path), "sys/class/net/%s/mtu", ifs[n]);
		add(path, "4200\n", false);
		snprintf(path, sizeof(path), "sys/class/net/%s/speed", ifs[n]);
		add(path, "400000\n", false);
		snprintf(path, sizeof(path), "sys/class/net/%s/carrier_changes", ifs[n]);
		add(path, "3\n", false);
		for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
			snprintf(path, sizeof(path), "sys/class/net/%s/statistics/%s", ifs[n], stats[i]);
			add(path, "123456\n", false);
		}
	}
	/* MLNX_OFED's DCQCN knobs under eth0 (ecn/roce_rp/params/, ecn/roce_np/params/, enable/P) */
	for (unsigned i = 0; i < dcqcn_nparams; i++) {
		const struct dcqcn_param *p = &dcqcn_params[i];

		if (!strcmp(p->name, DCQCN_RP_ENABLE) || !strcmp(p->name, DCQCN_NP_ENABLE)) {
			for (int pr = 0; pr < 8 && nk < 64; pr++, nk++) {
				snprintf(knob_paths[nk], sizeof(knob_paths[nk]), "sys/class/net/eth0/ecn/roce_%s/enable/%d",
					 p->node, pr);
				add(knob_paths[nk], pr == 3 ? "1\n" : "0\n", false);
			}
		} else if (nk < 64) {
			snprintf(knob_paths[nk], sizeof(knob_paths[nk]), "sys/class/net/eth0/ecn/roce_%s/params/%s",
				 p->node, p->name);
			snprintf(files[nfiles].defbuf, sizeof(files[nfiles].defbuf), "%lld\n",
				 (long long)p->def);
			add(knob_paths[nk], files[nfiles].defbuf, false);
			nk++;
		}
	}
	add("ethtool/eth0", "NIC statistics:\n     rx_prio3_pause: 12\n     tx_prio3_pause: 3\n"
			    "     rx_prio3_pause_duration: 400\n     rx_discards_phy: 0\n", false);
	add("ethtool/eth2", "NIC statistics:\n     rx_pause_ctrl_phy: 280\n", false);
	add("lldp/neighbors.json0", lldp_json0, false);
	add("proc/sys/kernel/random/boot_id", "8c6bd0e4-6d0e-4b3a-9f1e-2b61bb3f3c11\n", false);
	if (getenv("ROCEFAB_FUZZ_LIST")) /* the indexes, for writing seeds */
		for (unsigned i = 0; i < nfiles; i++)
			fprintf(stderr, "%u %s\n", i, files[i].path);
	return 0;
}

/* The fake kernel: the input's replies, in turn. */
static int fake_xfer(void *ctx, const void *req, size_t len, void *reply, size_t cap,
		     size_t *ret_len)
{
	unsigned k = dcb.next++ % 3;

	(void)ctx;
	(void)req;
	(void)len;
	*ret_len = dcb.len[k] < cap ? dcb.len[k] : cap;
	memcpy(reply, dcb.data[k], *ret_len);
	return 0;
}

static void restore(void)
{
	for (unsigned i = 0; i < nfiles; i++)
		if (files[i].dirty) {
			put(&files[i], files[i].def, strlen(files[i].def));
			files[i].dirty = false;
		}
	if (extra[0]) {
		unlink(extra);
		extra[0] = '\0';
	}
}

static void one_report(bool all_counters, const char *devices, const char *interfaces)
{
	struct linux_settings ls = { .sysfs_root = fuzz_dir, .devices = (char *)devices,
				     .interfaces = (char *)interfaces, .net_source = LINUX_NET_FILES,
				     .dcb_xfer = fake_xfer };
	struct backend_env env = { .reg = reg, .all_counters = all_counters, .settings = &ls };
	struct agent_conf ac = { .id = "gpu-a1", .role = AGENT_HOST, .backend_name = "linux",
				 .interval_ns = 1000000000, .host_boot_root = fuzz_dir };
	struct rf_err e = { 0 };
	struct report *r = NULL;
	struct agent *a = NULL;
	json_t *doc = NULL, *cmd, *out = NULL;
	char *text;

	if (backend_new("linux", &env, &ac.backend, &e) < 0) {
		fprintf(stderr, "backend_new: %s %s\n", e.code, e.msg);
		abort();
	}
	if (agent_create(&ac, &a, &e) < 0)
		abort();
	if (agent_build_report(a, &doc) < 0)
		abort();
	text = json_dumps(doc, JSON_COMPACT);
	if (!text)
		abort();
	if (report_parse(text, strlen(text), reg, &r, &e) < 0) {
		fprintf(stderr, "rocefabd refuses the agent's report: %s at %s: %s\n%s\n", e.code,
			e.where, e.msg, text);
		abort();
	}
	report_free(r);
	free(text);
	json_decref(doc);
	/* a PFC change: read-modify-write through DCB (the replies above) */
	cmd = json_pack("{s:s,s:s,s:{s:s,s:s,s:i}}", "id", "c1", "kind", "set_pfc", "params", "device",
			"mlx5_0", "port", "1", "enable", 24);
	dcb.next = 0;
	if (ac.backend->ops->apply(ac.backend, cmd, &out) < 0 ||
	    !json_string_value(json_object_get(out, "outcome")))
		abort();
	json_decref(out);
	json_decref(cmd);
	agent_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char devices[256] = "", interfaces[256] = "eth2";
	size_t off = 1;

	if (!size)
		return 0;
	memset(&dcb, 0, sizeof(dcb));
	while (off + 2 <= size) {
		unsigned idx = data[off], len = data[off + 1];
		const uint8_t *bytes = data + off + 2;
		size_t n = len == 255 ? 0 : len;

		if (n > size - off - 2)
			n = size - off - 2;
		off += 2 + n;
		if (idx < nfiles) {
			char path[300];

			files[idx].dirty = true;
			snprintf(path, sizeof(path), "%s/%s", fuzz_dir, files[idx].path);
			if (len == 255)
				unlink(path);
			else
				put(&files[idx], bytes, n);
		} else if (idx >= 0xf0 && idx <= 0xf2) {
			memcpy(dcb.data[idx - 0xf0], bytes, n);
			dcb.len[idx - 0xf0] = n;
		} else if (idx == 0xf3 || idx == 0xf4) {
			char *s = idx == 0xf3 ? devices : interfaces;

			snprintf(s, 256, "%.*s", (int)n, (const char *)bytes);
		} else if (idx == 0xf5 && !extra[0]) {
			const uint8_t *eq = memchr(bytes, '=', n);
			char name[200];
			int fd;

			if (!eq || eq == bytes || memchr(bytes, '/', (size_t)(eq - bytes)) ||
			    memchr(bytes, '\0', (size_t)(eq - bytes)))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(eq - bytes), (const char *)bytes);
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			snprintf(extra, sizeof(extra), "%s/sys/class/infiniband/mlx5_0/ports/1/hw_counters/%s",
				 fuzz_dir, name);
			fd = open(extra, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0) {
				extra[0] = '\0';
				continue;
			}
			if (write(fd, eq + 1, n - (size_t)(eq + 1 - bytes)) < 0)
				abort();
			close(fd);
		}
	}
	one_report(data[0] & 1, devices, interfaces);
	restore();
	return 0;
}
