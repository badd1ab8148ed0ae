/* Agent benchmark: CPU time per collection (inventory + counters of every port + the report
 * JSON) and peak RSS.
 *   bench_agent TREE [ITERATIONS]                      the linux backend on a recorded tree
 *   bench_agent --sonic REDIS PID [ITERATIONS]          the sonic backend on a SONiC switch's
 *                                                      redis (redis-server's PID: its CPU too) */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/resource.h>

#include "agents/agent.h"
#include "lib/log.h"
#include "lib/registry.h"

/* CPU seconds a process has used (utime + stime of /proc/PID/stat), or -1. */
static double proc_cpu(const char *pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's closing parenthesis: state, then fields 4-13, then utime stime */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int main(int argc, char **argv)
{
	struct agent_settings s = { 0 };
	struct rusage r0, r1;
	struct agent *a;
	struct reg *reg;
	struct rf_err e;
	bool sonic = argc > 3 && !strcmp(argv[1], "--sonic");
	const char *redis_pid = sonic ? argv[3] : NULL;
	int iters = sonic ? (argc > 4 ? atoi(argv[4]) : 200) : (argc > 2 ? atoi(argv[2]) : 500);
	double cpu, rcpu0 = -1, rcpu1 = -1;
	size_t bytes = 0, values = 0, nports = 8;

	if (argc < 2)
		return 2;
	log_set_level(LOG_WARNING);
	if (conf_init(agent_opts, &s, &e) < 0 ||
	    (sonic ? conf_set(agent_opts, &s, "agent.backend", "sonic", "argv", &e) < 0 ||
			     conf_set(agent_opts, &s, "sonic.redis", argv[2], "argv", &e) < 0
		   : conf_set(agent_opts, &s, "linux.sysfs_root", argv[1], "argv", &e) < 0) ||
	    conf_set(agent_opts, &s, "agent.id", "bench", "argv", &e) < 0 ||
	    agent_from_settings(&s, false, &reg, &a, &e) < 0) {
		fprintf(stderr, "bench_agent: %s\n", e.msg);
		return 1;
	}
	if (redis_pid)
		rcpu0 = proc_cpu(redis_pid);
	getrusage(RUSAGE_SELF, &r0);
	for (int i = 0; i < iters; i++) {
		json_t *doc, *smp;
		char *text;
		size_t k;

		if (agent_build_report(a, &doc) < 0)
			return 1;
		text = json_dumps(doc, JSON_COMPACT);
		bytes = strlen(text);
		values = 0;
		json_array_foreach(json_object_get(doc, "samples"), k, smp)
			values += json_object_size(json_object_get(smp, "values"));
		if (sonic) {
			json_t *dev = json_array_get(json_object_get(json_object_get(doc, "inventory"), "devices"), 0);

			nports = json_array_size(json_object_get(dev, "ports"));
		}
		free(text);
		json_decref(doc);
	}
	getrusage(RUSAGE_SELF, &r1);
	if (redis_pid)
		rcpu1 = proc_cpu(redis_pid);
	cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
	      (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	printf("%-12s %d collections of %zu ports (%zu values, %zu-byte reports): "
	       "%.3f ms CPU each, peak RSS %.1f MB\n",
	       sonic ? "agent sonic" : "agent", iters, nports, values, bytes, cpu * 1e3 / iters,
	       (double)r1.ru_maxrss / 1024);
	printf("             %.2f us CPU per value reported\n", values ? cpu * 1e6 / iters / (double)values : 0);
	if (sonic && rcpu0 >= 0 && rcpu1 >= 0)
		printf("             the switch's redis-server: %.3f ms CPU per collection (its own, next to the agent's)\n",
		       (rcpu1 - rcpu0) * 1e3 / iters);
	if (!sonic) /* the targets of a host's agent (issue 1) */
		printf("             targets <= 5 ms and <= 10 MB: %s\n",
		       cpu * 1e3 / iters <= 5 && r1.ru_maxrss <= 10 * 1024 ? "met" : "NOT MET");
	agent_destroy(a);
	reg_free(reg);
	conf_fini(agent_opts, &s);
	return 0;
}
