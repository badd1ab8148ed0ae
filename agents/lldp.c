/* Neighbours from lldpd: see lldp.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "agents/lldp.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

#define LLDP_MAX_OUTPUT (16u << 20) /* lldpcli's answer beyond this is cut (and fails to parse) */
#define LLDP_DEADLINE_NS (5 * NSEC_PER_SEC)

/* json0 wraps every value in a one-element array of objects: x[0].key[0].value */
static const char *value_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(o, key), 0), "value"));
}

int lldp_parse_json0(const char *text, size_t len, struct lldp_neighbor **ret, size_t *ret_n)
{
	json_t *doc = json_loadb(text, len, 0, NULL), *ifs, *it;
	struct lldp_neighbor *v = NULL;
	size_t n = 0, i;

	*ret = NULL;
	*ret_n = 0;
	if (!json_is_object(doc) || !json_is_array(json_object_get(doc, "lldp"))) {
		json_decref(doc);
		return -EBADMSG;
	}
	ifs = json_object_get(json_array_get(json_object_get(doc, "lldp"), 0), "interface");
	v = calloc(json_array_size(ifs) + 1, sizeof(*v));
	if (!v) {
		json_decref(doc);
		return -ENOMEM;
	}
	json_array_foreach(ifs, i, it) {
		json_t *chassis = json_array_get(json_object_get(it, "chassis"), 0);
		json_t *port = json_array_get(json_object_get(it, "port"), 0);
		json_t *id = json_array_get(json_object_get(port, "id"), 0);
		const char *name = json_string_value(json_object_get(it, "name"));
		const char *sys = value_of(chassis, "name");
		const char *idtype = json_string_value(json_object_get(id, "type"));
		const char *idval = json_string_value(json_object_get(id, "value"));
		const char *descr = value_of(port, "descr");
		const char *p = idval && idtype && (!strcmp(idtype, "ifname") || !strcmp(idtype, "local"))
					? idval
					: descr ? descr : idval;

		if (!name || !sys || !p)
			continue; /* a neighbour without a system name cannot be matched to an agent */
		str_copy(v[n].ifname, sizeof(v[n].ifname), name);
		str_copy(v[n].system, sizeof(v[n].system), sys);
		str_copy(v[n].port, sizeof(v[n].port), p);
		n++;
	}
	json_decref(doc);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* lldpcli [-u SOCKET] -f json0 show neighbors: its output (0 and *ret, to free), or 0 and
 * NULL when lldpcli is not installed or lldpd does not answer. */
static int run_lldpcli(const char *sock, char **ret, size_t *ret_len)
{
	const char *bin = access("/usr/sbin/lldpcli", X_OK) == 0 ? "/usr/sbin/lldpcli"
			  : access("/usr/bin/lldpcli", X_OK) == 0 ? "/usr/bin/lldpcli" : NULL;
	const char *argv[8];
	char *text = NULL, chunk[4096];
	size_t len = 0, n = 0;
	int fds[2], status = -1, devnull;
	FILE *m;
	ssize_t k;
	pid_t pid;

	*ret = NULL;
	*ret_len = 0;
	if (!bin)
		return 0;
	argv[n++] = "lldpcli";
	if (sock && *sock) {
		argv[n++] = "-u";
		argv[n++] = sock;
	}
	argv[n++] = "-f";
	argv[n++] = "json0";
	argv[n++] = "show";
	argv[n++] = "neighbors";
	argv[n] = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		sigset_t none;

		/* the agent blocks SIGTERM and ignores SIGPIPE: lldpcli gets the defaults */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		devnull = open("/dev/null", O_RDWR);
		dup2(fds[1], STDOUT_FILENO);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDERR_FILENO);
		}
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	if (!(m = open_memstream(&text, &len))) {
		close(fds[0]);
		waitpid(pid, &status, 0);
		return -ENOMEM;
	}
	/* lldpcli answers within a second; a hung lldpd must not hold the agent's reports */
	for (int64_t deadline = tu_mono_ns() + LLDP_DEADLINE_NS;;) {
		struct pollfd pf = { .fd = fds[0], .events = POLLIN };
		int64_t left = deadline - tu_mono_ns();

		if (left <= 0 || poll(&pf, 1, (int)(left / NSEC_PER_MSEC) + 1) <= 0) {
			if (left <= 0 || errno != EINTR) {
				kill(pid, SIGKILL);
				break;
			}
			continue;
		}
		k = read(fds[0], chunk, sizeof(chunk));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (len < LLDP_MAX_OUTPUT)
			fwrite(chunk, 1, (size_t)k, m);
	}
	fclose(m);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -1;
			break;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { /* lldpd not running */
		free(text);
		return 0;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

int lldp_neighbors(const char *root, const char *sock, struct lldp_neighbor **ret, size_t *ret_n)
{
	char path[4200], *text = NULL;
	size_t len = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	if (root && *root && strcmp(root, "/")) {
		if (str_fmt(path, sizeof(path), "%s/lldp/neighbors.json0", root) < 0)
			return -ENAMETOOLONG;
		text = str_slurp(path, &len);
		if (!text)
			return 0; /* recorded without lldpd */
	} else if ((r = run_lldpcli(sock, &text, &len)) < 0 || !text) {
		return r;
	}
	r = lldp_parse_json0(text, len, ret, ret_n);
	free(text);
	return r;
}
