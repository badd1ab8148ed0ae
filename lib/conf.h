/* Configuration files: "key = value" lines grouped in [sections], '#' or ';' comments.
 *
 * A program describes its settings once, as a table of struct conf_opt that points into its
 * settings struct.  Values come from, in increasing precedence: the table's defaults, the
 * configuration file, and command-line overrides (a named flag such as --listen, or
 * -o section.key=value for any key).  An unknown key or a bad value is an error naming
 * file:line (or the flag) and the key. */
#ifndef ROCEFAB_CONF_H
#define ROCEFAB_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/err.h"

enum conf_type {
	CONF_STRING,   /* char * (owned, may be "") */
	CONF_INT,      /* int64_t */
	CONF_BOOL,     /* bool: true/false/yes/no/on/off/1/0 */
	CONF_DURATION, /* int64_t nanoseconds: "1s", "250ms", ... */
	CONF_SIZE,     /* uint64_t bytes: "4096", "64K", "4MiB", "1G" */
	CONF_ENUM,     /* int: index into choices */
	CONF_DOUBLE,   /* double */
	CONF_GROUP,    /* another table (group) over its own settings struct of size bytes, which
			* the field (a void *) points to: conf_init() allocates it, conf_fini() frees
			* it.  Its keys are looked up, dumped and listed as if they were here.  A module
			* (an agent backend) keeps its settings to itself this way. */
};

struct conf_opt {
	const char *name; /* "section.key" */
	enum conf_type type;
	size_t offset; /* offsetof(settings struct, field) */
	const char *def;
	const char *help;
	int64_t min, max;	    /* checked when min < max (INT, DURATION, SIZE) */
	const char *const *choices; /* CONF_ENUM: NULL-terminated */
	const struct conf_opt *group; /* CONF_GROUP: the table */
	size_t size;		      /* CONF_GROUP: of its settings struct */
};

/* CONF_OPT("api.threads", CONF_INT, struct settings, threads, "2", "help", .min = 1, .max = 64) */
#define CONF_OPT(n, t, st, field, d, h, ...)                                                      \
	{                                                                                          \
		.name = (n), .type = (t), .offset = offsetof(st, field), .def = (d), .help = (h),  \
		__VA_ARGS__                                                                        \
	}
/* CONF_GROUP_OF("linux", linux_opts, struct linux_settings, struct settings, linux) */
#define CONF_GROUP_OF(n, tbl, gst, st, field)                                                    \
	{                                                                                          \
		.name = (n), .type = CONF_GROUP, .offset = offsetof(st, field), .group = (tbl),    \
		.size = sizeof(gst)                                                                 \
	}
#define CONF_OPT_END { .name = NULL }

/* The settings struct of a group entry of base (conf_init() allocated it), or NULL. */
void *conf_group_base(const struct conf_opt *group_opt, const void *base);

/* Applies every default (allocating the settings of groups).  0 or -ENOMEM / -EINVAL (a bad
 * default is a programming error) / -EEXIST (a key defined twice, groups included: ditto). */
int conf_init(const struct conf_opt *opts, void *base, struct rf_err *e);
/* Frees the strings of base. */
void conf_fini(const struct conf_opt *opts, void *base);
/* Sets one key ("section.key") from text; origin names where the text came from. */
int conf_set(const struct conf_opt *opts, void *base, const char *name, const char *value,
	     const char *origin, struct rf_err *e);
/* Parses "section.key=value" (the -o form). */
int conf_set_assignment(const struct conf_opt *opts, void *base, const char *assignment,
			const char *origin, struct rf_err *e);
int conf_load_file(const struct conf_opt *opts, void *base, const char *path, struct rf_err *e);
int conf_load_string(const struct conf_opt *opts, void *base, const char *text,
		     const char *origin, struct rf_err *e);
/* The effective settings, as a configuration file. */
void conf_dump(const struct conf_opt *opts, const void *base, FILE *f);
/* Every key with its default and help, for --help-config and the man page. */
void conf_help(const struct conf_opt *opts, FILE *f);

/* Command-line overrides collected before the configuration file is read. */
struct conf_overrides {
	struct {
		const char *name; /* section.key, or NULL for an "-o a=b" assignment */
		const char *value;
		const char *origin;
	} item[64];
	int n;
};
int conf_override(struct conf_overrides *o, const char *name, const char *value,
		  const char *origin);
int conf_apply_overrides(const struct conf_opt *opts, void *base,
			 const struct conf_overrides *o, struct rf_err *e);
/* For a program's start: the defaults, the file (when path is set), then the command line's
 * overrides.  On an error prints "prog: the error" on stderr, frees base and returns it. */
int conf_load_all(const struct conf_opt *opts, void *base, const char *path,
		  const struct conf_overrides *o, const char *prog);

/* "4096", "64K", "1.5MiB", "1G", "400 kB" (one space before a unit, as sizes are printed):
 * K, M, G, T and KiB... are powers of 1024, KB (kB), MB, GB, TB of 1000.  0, -EINVAL (garbage,
 * a fraction of a byte) or -ERANGE (2^64 bytes or more: refused, never wrapped). */
int conf_parse_size(const char *s, uint64_t *ret);
/* What conf_parse_size takes, for messages. */
#define CONF_SIZE_UNITS "B, KB (kB), MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (of 1024)"
int conf_parse_bool(const char *s, bool *ret);

#endif
