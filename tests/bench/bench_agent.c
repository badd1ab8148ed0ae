/* Agent benchmark: CPU time per collection (inventory + counters of every port + the report
 * JSON) and peak RSS, on a recorded tree.  usage: bench_agent TREE [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "agents/agent.h"
#include "lib/log.h"
#include "lib/registry.h"

int main(int argc, char **argv)
{
	struct agent_settings s = { 0 };
	struct rusage r0, r1;
	struct agent *a;
	struct reg *reg;
	struct rf_err e;
	int iters = argc > 2 ? atoi(argv[2]) : 500;
	double cpu;
	size_t bytes = 0, values = 0;

	if (argc < 2)
		return 2;
	log_set_level(LOG_WARNING);
	if (conf_init(agent_opts, &s, &e) < 0 || conf_set(agent_opts, &s, "linux.sysfs_root", argv[1], "argv", &e) < 0 ||
	    conf_set(agent_opts, &s, "agent.id", "bench", "argv", &e) < 0 ||
	    agent_from_settings(&s, false, &reg, &a, &e) < 0) {
		fprintf(stderr, "bench_agent: %s\n", e.msg);
		return 1;
	}
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
		free(text);
		json_decref(doc);
	}
	getrusage(RUSAGE_SELF, &r1);
	cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
	      (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	printf("agent        %d collections of %zu ports (%zu values, %zu-byte reports): "
	       "%.3f ms CPU each, peak RSS %.1f MB\n",
	       iters, (size_t)8, values, bytes, cpu * 1e3 / iters, (double)r1.ru_maxrss / 1024);
	printf("             targets <= 5 ms and <= 10 MB: %s\n",
	       cpu * 1e3 / iters <= 5 && r1.ru_maxrss <= 10 * 1024 ? "met" : "NOT MET");
	agent_destroy(a);
	reg_free(reg);
	conf_fini(agent_opts, &s);
	return 0;
}
