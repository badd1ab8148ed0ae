/* sysfs-replay: makes a recorded host tree (tests/data/hosts/) look alive, for `make demo`
 * and benchmarks, until the simulator (issue 4) replaces it.
 *
 *   sysfs-replay copy SRC DST [--nics N]   copy a tree; with --nics, N copies of its first RDMA
 *                                          device (mlx5_0..mlx5_N-1) and their netdevs
 *   sysfs-replay run DIR... [--interval DUR] [--seed S] [--duration DUR]
 *                                          advance every counter of the trees each interval
 *
 * Counters advance by a rate chosen from their name (bytes at a few GB/s, packets, pauses in
 * bursts, errors rarely), wrap at 32 bits where the mlx5 Q-counters do, and are written with
 * write-to-temporary + rename so that a reader never sees half a number. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/strutil.h"
#include "lib/timeutil.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double urand(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static int copy_tree(const char *src, const char *dst, const char *from_name, const char *to_name)
{
	char s[PATH_MAX], d[PATH_MAX];
	struct dirent *de;
	DIR *dir = opendir(src);

	if (!dir)
		return -errno;
	if (mkdir(dst, 0755) < 0 && errno != EEXIST) {
		closedir(dir);
		return -errno;
	}
	while ((de = readdir(dir))) {
		struct stat st;
		const char *name = de->d_name;
		char renamed[NAME_MAX + 1];

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (from_name && strcmp(name, from_name) == 0)
			name = to_name;
		snprintf(renamed, sizeof(renamed), "%s", name);
		if (str_fmt(s, sizeof(s), "%s/%s", src, de->d_name) < 0 ||
		    str_fmt(d, sizeof(d), "%s/%s", dst, renamed) < 0 || lstat(s, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlink(s, target, sizeof(target) - 1);

			if (n > 0) {
				target[n] = '\0';
				unlink(d);
				if (symlink(target, d) < 0)
					return -errno;
			}
		} else if (S_ISDIR(st.st_mode)) {
			int r = copy_tree(s, d, from_name, to_name);

			if (r < 0) {
				closedir(dir);
				return r;
			}
		} else {
			FILE *in = fopen(s, "re"), *out = fopen(d, "we");
			char buf[8192];
			size_t n;

			if (!in || !out) {
				if (in)
					fclose(in);
				if (out)
					fclose(out);
				closedir(dir);
				return -EIO;
			}
			while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
				fwrite(buf, 1, n, out);
			fclose(in);
			if (fclose(out) != 0) {
				closedir(dir);
				return -EIO;
			}
		}
	}
	closedir(dir);
	return 0;
}

/* Rewrites a gid_attrs/ndevs/0 file so a copied device points at its copied netdev. */
static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
	}
}

static int cmd_copy(const char *src, const char *dst, int nics)
{
	char ib[PATH_MAX], p[PATH_MAX], nd[64] = "", buf[64];
	int r = copy_tree(src, dst, NULL, NULL);

	if (r < 0 || nics <= 0)
		return r;
	/* template: the first device's netdev */
	if (str_fmt(p, sizeof(p), "%s/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", src) ==
	    0) {
		FILE *f = fopen(p, "re");

		if (!f || !fgets(nd, sizeof(nd), f)) {
			fprintf(stderr, "sysfs-replay: %s has no mlx5_0 with a netdev\n", src);
			if (f)
				fclose(f);
			return -ENOENT;
		}
		fclose(f);
		nd[strcspn(nd, "\n")] = '\0';
	}
	for (int i = 1; i < nics; i++) {
		char name[32], ndname[80], from[PATH_MAX], to[PATH_MAX];

		snprintf(name, sizeof(name), "mlx5_%d", i);
		snprintf(ndname, sizeof(ndname), "%.60s_%d", nd, i);
		if (str_fmt(from, sizeof(from), "%s/sys/class/infiniband/mlx5_0", src) < 0 ||
		    str_fmt(to, sizeof(to), "%s/sys/class/infiniband/%s", dst, name) < 0 ||
		    (r = copy_tree(from, to, NULL, NULL)) < 0)
			return r;
		if (str_fmt(ib, sizeof(ib), "%s/ports/1/gid_attrs/ndevs/0", to) == 0)
			write_text(ib, ndname);
		if (str_fmt(from, sizeof(from), "%s/sys/class/net/%s", src, nd) < 0 ||
		    str_fmt(to, sizeof(to), "%s/sys/class/net/%s", dst, ndname) < 0 ||
		    (r = copy_tree(from, to, NULL, NULL)) < 0)
			return r;
		if (str_fmt(from, sizeof(from), "%s/ethtool/%s", src, nd) == 0 &&
		    str_fmt(to, sizeof(to), "%s/ethtool/%s", dst, ndname) == 0) {
			FILE *in = fopen(from, "re"), *out = fopen(to, "we");

			while (in && out && fgets(buf, sizeof(buf), in))
				fputs(buf, out);
			if (in)
				fclose(in);
			if (out)
				fclose(out);
		}
	}
	return 0;
}

/* Increments per second for a counter, from its name. */
static double rate_of(const char *name, bool *wrap32)
{
	*wrap32 = false;
	if (strstr(name, "pause_duration"))
		return urand() < 0.3 ? 20000 * urand() : 0;
	if (strstr(name, "pause_transition"))
		return urand() < 0.3 ? 50 : 0;
	if (strstr(name, "pause"))
		return urand() < 0.3 ? 400 * urand() : 0;
	if (strstr(name, "cnp") || strstr(name, "ecn_marked"))
		return 2000 + 3000 * urand();
	if (!strcmp(name, "port_xmit_data") || !strcmp(name, "port_rcv_data"))
		return 6.0e9 / 4 * (0.8 + 0.4 * urand()); /* 4-byte words */
	if (strstr(name, "bytes") || strstr(name, "data"))
		return 6.0e9 * (0.8 + 0.4 * urand());
	if (strstr(name, "packets") || strstr(name, "pkts") || strstr(name, "requests")) {
		*wrap32 = strstr(name, "requests") != NULL;
		return 1.5e6 * (0.8 + 0.4 * urand());
	}
	if (strstr(name, "out_of_sequence") || strstr(name, "duplicate")) {
		*wrap32 = true;
		return urand() < 0.05 ? 3 : 0;
	}
	return 0;
}

static void advance_file(int dfd, const char *name, double dt)
{
	char buf[64], tmp[NAME_MAX + 8];
	unsigned long long v;
	bool wrap32;
	double add;
	ssize_t n;
	int fd;

	if (!strcmp(name, "lifespan"))
		return;
	add = rate_of(name, &wrap32) * dt;
	if (add < 1)
		return;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	v = strtoull(buf, NULL, 10) + (unsigned long long)add;
	if (wrap32)
		v &= 0xffffffffULL;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%llu\n", v);
	if (write(fd, buf, (size_t)n) == n)
		renameat(dfd, tmp, dfd, name);
	close(fd);
}

static void advance_dir(const char *dir, double dt)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			advance_file(dirfd(d), de->d_name, dt);
	closedir(d);
}

static void advance_ethtool(const char *path, double dt)
{
	char line[256], tmp[PATH_MAX + 8];
	FILE *in = fopen(path, "re"), *out;

	if (!in || str_fmt(tmp, sizeof(tmp), "%s.tmp", path) < 0 || !(out = fopen(tmp, "we"))) {
		if (in)
			fclose(in);
		return;
	}
	while (fgets(line, sizeof(line), in)) {
		char *colon = strrchr(line, ':');
		char name[200];
		bool wrap32;

		if (!colon || sscanf(line, " %199[^:]", name) != 1) {
			fputs(line, out);
			continue;
		}
		for (size_t k = strlen(name); k && name[k - 1] == ' '; k--)
			name[k - 1] = '\0';
		fprintf(out, "%.*s: %llu\n", (int)(colon - line), line,
			strtoull(colon + 1, NULL, 10) + (unsigned long long)(rate_of(name, &wrap32) * dt));
	}
	fclose(in);
	if (fclose(out) == 0)
		rename(tmp, path);
}

static void advance_tree(const char *root, double dt)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct dirent *de, *pe;
	DIR *d;

	if (str_fmt(p, sizeof(p), "%s/sys/class/infiniband", root) == 0 && (d = opendir(p))) {
		while ((de = readdir(d))) {
			DIR *ports;

			if (de->d_name[0] == '.' ||
			    str_fmt(q, sizeof(q), "%s/%s/ports", p, de->d_name) < 0 ||
			    !(ports = opendir(q)))
				continue;
			while ((pe = readdir(ports))) {
				char c[PATH_MAX];

				if (pe->d_name[0] == '.')
					continue;
				if (str_fmt(c, sizeof(c), "%s/%s/counters", q, pe->d_name) == 0)
					advance_dir(c, dt);
				if (str_fmt(c, sizeof(c), "%s/%s/hw_counters", q, pe->d_name) == 0)
					advance_dir(c, dt);
			}
			closedir(ports);
		}
		closedir(d);
	}
	if (str_fmt(p, sizeof(p), "%s/sys/class/net", root) == 0 && (d = opendir(p))) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' &&
			    str_fmt(q, sizeof(q), "%s/%s/statistics", p, de->d_name) == 0)
				advance_dir(q, dt);
		closedir(d);
	}
	if (str_fmt(p, sizeof(p), "%s/ethtool", root) == 0 && (d = opendir(p))) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' && !strstr(de->d_name, ".tmp") &&
			    str_fmt(q, sizeof(q), "%s/%s", p, de->d_name) == 0)
				advance_ethtool(q, dt);
		closedir(d);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sysfs-replay copy SRC DST [--nics N]\n"
		   "       sysfs-replay run DIR... [--interval DUR] [--seed N] [--duration DUR]\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nics", required_argument, NULL, 'n' },     { "interval", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },     { "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
	};
	int64_t interval = NSEC_PER_SEC, duration = 0;
	int nics = 0, c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			nics = atoi(optarg);
			break;
		case 'i':
			if (tu_parse_duration(optarg, &interval) < 0 || interval <= 0) {
				fprintf(stderr, "sysfs-replay: bad interval '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 10) * 2654435761ULL + 1;
			break;
		case 'd':
			if (tu_parse_duration(optarg, &duration) < 0) {
				fprintf(stderr, "sysfs-replay: bad duration '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 3 == argc && strcmp(argv[optind], "copy") == 0) {
		int r = cmd_copy(argv[optind + 1], argv[optind + 2], nics);

		if (r < 0)
			fprintf(stderr, "sysfs-replay: copy failed: %s\n", strerror(-r));
		return r < 0;
	}
	if (optind + 2 <= argc && strcmp(argv[optind], "run") == 0) {
		int64_t start = tu_mono_ns(), next = start;

		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		while (!stop && (!duration || tu_mono_ns() - start < duration)) {
			next += interval;
			for (int i = optind + 1; i < argc; i++)
				advance_tree(argv[i], (double)interval / 1e9);
			tu_sleep_until_mono(next);
		}
		return 0;
	}
	usage(stderr);
	return 2;
}
