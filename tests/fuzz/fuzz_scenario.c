/* libFuzzer target: simulator scenarios (sim/scenario.c, workload.c, fault.c through sim_load),
 * then the first events of the accepted ones (sim/core.c, switch.c, nic.c, port.c) and the
 * summary.  Relative file names (a CDF, a flow list) resolve in a directory the target fills
 * at start with one of each.
 *
 * Invariants: a refusal names the code BAD_SCENARIO (or is out of memory); an accepted
 * scenario has devices whose ports' peers point back at them, and its clock never goes back
 * nor past its stop time.
 *
 * Scenarios bigger than the harness's bound (see too_big()) are skipped: they are valid, and
 * building a 1024 x 1024 leaf-spine is the benchmark's business, not a parser's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/sim.h"
#include "tests/fuzz/fuzz-tmpdir.h"

#define MAX_NODES 300
#define MAX_EVENTS 3000


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_dir_make("scenario");
	put("sizes.cdf", "1000 0\n10000 50\n100000 100\n");
	put("flows.txt", "# src dst size_bytes start_us [priority]\nh0 h1 10000 0\nh1 h0 5000 1.5 3\n");
	return 0;
}

/* The hosts and switches a topology asks for, from the JSON (before sim_load builds it). */
static bool too_big(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	json_t *t = json_object_get(doc, "topology");
	json_int_t sp = json_integer_value(json_object_get(t, "spines"));
	json_int_t lv = json_integer_value(json_object_get(t, "leaves"));
	json_int_t hpl = json_integer_value(json_object_get(t, "hosts_per_leaf"));
	bool big = sp > MAX_NODES || lv > MAX_NODES || hpl > MAX_NODES ||
		   sp + lv + lv * hpl > MAX_NODES || sp * lv > MAX_NODES;

	json_decref(doc);
	return big;
}

static void check_peers(const struct sim *s)
{
	int n = sim_device_count(s);

	if (n <= 0)
		abort();
	for (int d = 0; d < n; d++) {
		if (!sim_device_name(s, d) || sim_device_find(s, sim_device_name(s, d)) != d)
			abort();
		for (int p = 0; p < sim_port_count(s, d); p++) {
			int pd = -1, pp = -1, bd = -1, bp = -1;

			if (sim_port_peer(s, d, p, &pd, &pp) < 0)
				continue;
			if (sim_port_peer(s, pd, pp, &bd, &bp) < 0 || bd != d || bp != p)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rf_err e = { 0 };
	struct sim *s = NULL;
	int64_t last = 0;
	json_t *sum;
	int r;

	if (too_big(data, size))
		return -1; /* not added to the corpus */
	r = sim_load((const char *)data, size, "fuzz.json", fuzz_dir, -1, -1, &s, &e);
	if (r < 0) {
		if (strcmp(e.code, "BAD_SCENARIO") && r != -ENOMEM)
			abort();
		return 0;
	}
	check_peers(s);
	for (int i = 0; i < MAX_EVENTS / 100 && !sim_done(s); i++) {
		sim_step(s, 100);
		if (sim_now(s) < last || (sim_until(s) > 0 && sim_now(s) > sim_until(s)))
			abort();
		last = sim_now(s);
	}
	sum = sim_summary(s, false, 0);
	if (!sum)
		abort();
	json_decref(sum);
	sim_free(s);
	return 0;
}
