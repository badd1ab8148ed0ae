/* libFuzzer target: the simulator's control API (sim/control.c simctl_call: the route table
 * through lib/router.c, the path's parameters, the JSON bodies of the handlers, and what they
 * call: sim/config.c sim_set_dcqcn/ecn/pfc, sim/fault.c sim_fault and sim_fault_clear, the
 * probes), called as rocefab-sim serve's HTTP server calls it, on a small fabric built afresh
 * for each input, which then runs a few hundred events after every request.
 *
 * An input is up to 8 requests separated by NUL bytes, each "METHOD PATH\nBODY": the body is
 * JSON (a request whose body does not parse is answered 400 by lib/httpd.c and never reaches
 * the control API: skipped), or empty.
 *
 * Invariants: the status is one the API documents (schemas/sim-control.yaml) with a document,
 * a problem (status >= 400) has a code and a detail; a refused change (PUT dcqcn, pfc, ecn:
 * 400 or 404) changes nothing (all-or-nothing, sim/config.c), nor does a refused fault. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim/serve.h"

#define MAX_REQUESTS 8

static const char scenario[] =
	"{\"schema\":1,\"until_us\":100000,\"topology\":{\"type\":\"explicit\","
	"\"hosts\":[\"h0\",\"h1\",\"h2\"],\"switches\":[\"s0\"],\"links\":["
	"{\"a\":\"h0\",\"b\":\"s0\",\"rate_gbps\":100},{\"a\":\"h1\",\"b\":\"s0\",\"rate_gbps\":100},"
	"{\"a\":\"h2\",\"b\":\"s0\",\"rate_gbps\":25}]},\"workloads\":[{\"type\":\"flows\",\"flows\":["
	"{\"src\":\"h0\",\"dst\":\"h1\",\"size_bytes\":10000000},"
	"{\"src\":\"h2\",\"dst\":\"h1\",\"size_bytes\":1000000}]}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every device's configuration and the faults: what a refused request must leave alone. */
static json_t *state_of(struct simctl *c)
{
	json_t *all = json_object(), *doc = NULL;
	static const char *const devs[] = { "h0", "h1", "h2", "s0" };
	char path[64];

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		snprintf(path, sizeof(path), "/v1/devices/%s/config", devs[i]);
		if (simctl_call(c, "GET", path, NULL, &doc) != 200)
			abort();
		json_object_set_new(all, devs[i], doc);
	}
	if (simctl_call(c, "GET", "/v1/faults", NULL, &doc) != 200)
		abort();
	json_object_set_new(all, "faults", doc);
	return all;
}

static void request(struct simctl *c, char *req)
{
	char *nl = strchr(req, '\n'), *sp, *body_text = nl ? nl + 1 : NULL;
	const char *method = req, *path;
	json_t *body = NULL, *doc = NULL, *before = NULL, *after;
	int status;

	if (nl)
		*nl = '\0';
	sp = strchr(req, ' ');
	if (!sp)
		return;
	*sp = '\0';
	path = sp + 1;
	if (body_text && *body_text) {
		body = json_loads(body_text, JSON_REJECT_DUPLICATES, NULL);
		if (!body)
			return; /* 400 MALFORMED_JSON in lib/httpd.c */
	}
	if (!strcmp(method, "PUT") || !strcmp(method, "POST"))
		before = state_of(c);
	status = simctl_call(c, method, path, body, &doc);
	if (!doc)
		abort();
	switch (status) {
	case 200:
	case 201:
		break;
	case 400:
	case 404:
	case 405:
		if (!json_string_value(json_object_get(doc, "code")) ||
		    !json_string_value(json_object_get(doc, "detail")))
			abort();
		break;
	default:
		fprintf(stderr, "%s %s: status %d\n", method, path, status);
		abort();
	}
	/* a refused change or fault changes nothing (POST /v1/probes is neither) */
	if (before && status >= 400 && !strstr(path, "probes")) {
		after = state_of(c);
		if (!json_equal(before, after)) {
			char *b = json_dumps(before, JSON_COMPACT), *a = json_dumps(after, JSON_COMPACT);

			fprintf(stderr, "%s %s refused (%d) but changed the fabric:\n%s\n%s\n", method,
				path, status, b, a);
			abort();
		}
		json_decref(after);
	}
	json_decref(before);
	json_decref(doc);
	json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rf_err e = { 0 };
	struct simctl c;
	struct sim *s;
	char *text = malloc(size + 1), *req;
	size_t off = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (sim_load(scenario, sizeof(scenario) - 1, "fuzz", NULL, -1, -1, &s, &e) < 0)
		abort();
	simctl_init(&c, s, "fuzz", 1.0);
	for (int n = 0; n < MAX_REQUESTS && off <= size; n++) {
		req = text + off;
		off += strlen(req) + 1;
		request(&c, req);
		sim_step(s, 300);
	}
	simctl_fini(&c);
	sim_free(s);
	free(text);
	return 0;
}
