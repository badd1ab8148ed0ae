/* The counter registry (schemas/counters.json): the one vocabulary of counters.  Backends read
 * counters under their device's own names; the registry maps each (group, driver, source name)
 * to a normalized counter, a priority for per-priority counters, a scale into the counter's
 * unit, and the source's bit width and wrap behaviour.  Immutable once loaded, so it is shared
 * by threads without locking. */
#ifndef ROCEFAB_REGISTRY_H
#define ROCEFAB_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

enum reg_scope { REG_SCOPE_PORT, REG_SCOPE_PORT_PRIO, REG_SCOPE_QUEUE, REG_SCOPE_QP };
enum reg_kind { REG_KIND_COUNTER, REG_KIND_GAUGE };
enum reg_wrap { REG_WRAP, REG_SATURATE };

/* The version of the agents' reports (schemas/agent-report.schema.json, pfc-report.schema.json
 * "schema"): what agents write and rocefabd reads. */
#define REPORT_SCHEMA 1

#define REG_MAX_PRIO 8
#define REG_NO_PRIO  0xff

struct reg_counter {
	uint16_t id; /* 0..reg_size()-1, in file order */
	const char *name;
	const char *unit;
	const char *help;
	enum reg_scope scope;
	enum reg_kind kind;
	uint8_t width;
	/* Prometheus family name without the rocefab_port_ prefix and _total suffix, and the
	 * factor that turns the counter's unit into the metric's base unit (µs -> seconds). */
	char metric[80];
	double metric_scale;
};

struct reg_source {
	const struct reg_counter *counter;
	uint8_t prio; /* REG_NO_PRIO unless the counter is per priority */
	uint8_t width;
	uint8_t wrap; /* enum reg_wrap */
	uint8_t rank; /* position in the counter's source list; the lowest present wins */
	uint32_t scale;
};

struct reg;

int reg_load(const char *text, size_t len, const char *origin, struct reg **ret,
	     struct rf_err *e);
int reg_load_file(const char *path, struct reg **ret, struct rf_err *e);
/* The copy of schemas/counters.json built into the binary. */
int reg_load_builtin(struct reg **ret, struct rf_err *e);
void reg_free(struct reg *r);

size_t reg_size(const struct reg *r);
const struct reg_counter *reg_counter(const struct reg *r, unsigned id);
const struct reg_counter *reg_find(const struct reg *r, const char *name);
/* Maps a counter as a device names it; driver may be NULL.  NULL when the registry does not
 * know it. */
const struct reg_source *reg_lookup(const struct reg *r, const char *group, const char *driver,
				    const char *name);
bool reg_group_known(const struct reg *r, const char *group);
/* The registry document as loaded (a borrowed jansson reference). */
void *reg_document(const struct reg *r);
const char *reg_scope_name(enum reg_scope s);
const char *reg_kind_name(enum reg_kind k);

extern const char reg_builtin_json[];
extern const char reg_builtin_json_end[];

#endif
