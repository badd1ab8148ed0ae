/* libFuzzer target: configuration files (lib/conf.c) with the real tables of rocefabd
 * (rocefabd_opts) and rocefab-agent (agent_opts, with every backend's group: linux.*, probe.*,
 * sim.*), each line as a -o section.key=value override too, and, for an input that starts with
 * '{', a counter registry file (lib/registry.c reg_load: ingest.registry, agent.registry).
 *
 * Invariants: a refusal always names a code; a file that loads dumps (conf_dump, what
 * --dump-config prints) into a file that loads again and dumps to the same text; a registry
 * that loads has counters whose ids are their positions and which reg_find finds by name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/agent.h"
#include "lib/conf.h"
#include "lib/registry.h"
#include "rocefabd/rocefabd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dump(const struct conf_opt *opts, const void *base)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		abort();
	conf_dump(opts, base, m);
	fclose(m);
	return text;
}

static void one_table(const struct conf_opt *opts, size_t settings_size, const char *text)
{
	struct rf_err e = { 0 };
	void *base = calloc(1, settings_size), *again = calloc(1, settings_size);
	char *d1 = NULL, *d2 = NULL;
	int r;

	if (!base || !again || conf_init(opts, base, &e) < 0 || conf_init(opts, again, &e) < 0)
		abort();
	r = conf_load_string(opts, base, text, "fuzz.conf", &e);
	if (r < 0) {
		if (!e.code[0] && r != -ENOMEM)
			abort();
		goto out;
	}
	d1 = dump(opts, base);
	if (conf_load_string(opts, again, d1, "dump", &e) < 0) {
		fprintf(stderr, "the dump does not load: %s: %s\n%s", e.where, e.msg, d1);
		abort();
	}
	d2 = dump(opts, again);
	if (strcmp(d1, d2)) {
		fprintf(stderr, "the dump loads into other settings:\n%s\n---\n%s", d1, d2);
		abort();
	}
out:
	free(d1);
	free(d2);
	conf_fini(opts, base);
	conf_fini(opts, again);
	free(base);
	free(again);
}

/* Every line as a command-line override (-o section.key=value). */
static void overrides(const struct conf_opt *opts, size_t settings_size, char *text)
{
	struct rf_err e = { 0 };
	void *base = calloc(1, settings_size);

	if (!base || conf_init(opts, base, &e) < 0)
		abort();
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		e = (struct rf_err){ 0 };
		if (conf_set_assignment(opts, base, line, "-o", &e) < 0 && !e.code[0])
			abort();
	}
	conf_fini(opts, base);
	free(base);
}

static void registry(const char *text, size_t len)
{
	struct rf_err e = { 0 };
	struct reg *reg = NULL;

	if (reg_load(text, len, "fuzz.json", &reg, &e) < 0) {
		if (!e.code[0])
			abort();
		return;
	}
	for (size_t i = 0; i < reg_size(reg); i++) {
		const struct reg_counter *c = reg_counter(reg, (unsigned)i);

		if (!c || c->id != i || reg_find(reg, c->name) != c)
			abort();
	}
	reg_free(reg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0'; /* conf_load_file refuses a NUL byte: the text ends at the first one */
	if (size && data[0] == '{') {
		registry(text, size);
	} else {
		one_table(rocefabd_opts, sizeof(struct rocefabd_settings), text);
		one_table(agent_opts, sizeof(struct agent_settings), text);
		overrides(agent_opts, sizeof(struct agent_settings), text);
	}
	free(text);
	return 0;
}
