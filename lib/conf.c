/* Configuration files and command-line overrides: see conf.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/conf.h"
#include "lib/timeutil.h"

#define FIELD(base, o, type) ((type *)((char *)(base) + (o)->offset))

void *conf_group_base(const struct conf_opt *group_opt, const void *base)
{
	return *(void *const *)((const char *)base + group_opt->offset);
}

/* The key's entry and the settings it points into (groups searched too). */
static const struct conf_opt *find_opt(const struct conf_opt *opts, void *base, const char *name,
				       void **ret_base)
{
	for (; opts->name; opts++) {
		if (opts->type == CONF_GROUP) {
			void *gbase = conf_group_base(opts, base);
			const struct conf_opt *o = gbase ? find_opt(opts->group, gbase, name, ret_base) : NULL;

			if (o)
				return o;
		} else if (strcmp(opts->name, name) == 0) {
			*ret_base = base;
			return opts;
		}
	}
	return NULL;
}

int conf_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

int conf_parse_size(const char *s, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 },	      { "B", 1 },	       { "K", 1ULL << 10 },
		{ "KB", 1000 },	      { "kB", 1000 },	       { "KiB", 1ULL << 10 },   { "M", 1ULL << 20 },
		{ "MB", 1000000 },    { "MiB", 1ULL << 20 },   { "G", 1ULL << 30 },
		{ "GB", 1000000000 }, { "GiB", 1ULL << 30 },   { "T", 1ULL << 40 },
		{ "TB", 1000000000000 }, { "TiB", 1ULL << 40 },
	};
	const char *digits_end = s;
	bool whole;
	char *end;
	double v = 0;
	uint64_t n = 0;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	while (isdigit((unsigned char)*digits_end))
		digits_end++;
	/* a whole number is read as one, exactly (a double loses digits beyond 2^53);
	 * "1.5MiB" and "1e3" go through strtod, but not "0x10" or "0x1p4" (strtod's hexadecimal
	 * forms: read as "0" with the unit "x10", refused) */
	whole = !*digits_end || !strchr(".eE", *digits_end);
	errno = 0;
	if (whole)
		n = strtoull(s, &end, 10);
	else
		v = strtod(s, &end);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || (!whole && (!isfinite(v) || v < 0)))
		return -EINVAL;
	/* one space before a unit, as sizes are printed ("1.6 MB") */
	if (end[0] == ' ' && end[1] && end[1] != ' ')
		end++;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			double b;

			if (whole)
				return __builtin_mul_overflow(n, units[i].mult, ret) ? -ERANGE : 0;
			b = v * (double)units[i].mult;
			/* 2^64 and more does not fit (and would wrap in the conversion) */
			if (b >= 18446744073709551616.0)
				return -ERANGE;
			if (b != floor(b))
				return -EINVAL;
			*ret = (uint64_t)b;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *type_hint(const struct conf_opt *o)
{
	switch (o->type) {
	case CONF_INT:
		return "an integer";
	case CONF_BOOL:
		return "true or false";
	case CONF_DURATION:
		return "a duration such as 500ms, 1s, 5m";
	case CONF_SIZE:
		return "a size such as 4096, 64K, 4MiB, 2TiB";
	case CONF_DOUBLE:
		return "a number";
	default:
		return "a value";
	}
}

static int set_opt(const struct conf_opt *o, void *base, const char *value, const char *where,
		   struct rf_err *e)
{
	char *end;

	switch (o->type) {
	case CONF_STRING: {
		char *s = strdup(value);

		if (!s)
			return -ENOMEM;
		free(*FIELD(base, o, char *));
		*FIELD(base, o, char *) = s;
		return 0;
	}
	case CONF_INT: {
		long long v;

		errno = 0;
		v = strtoll(value, &end, 10);
		if (end == value || *end)
			goto bad;
		if (errno == ERANGE)
			goto too_large;
		if (errno)
			goto bad;
		if (o->min < o->max && (v < o->min || v > o->max))
			return rf_err_set(e, -ERANGE, "CONF_BAD_VALUE", where,
					  "%s = %s is out of range %" PRId64 "..%" PRId64, o->name,
					  value, o->min, o->max);
		*FIELD(base, o, int64_t) = v;
		return 0;
	}
	case CONF_BOOL:
		if (conf_parse_bool(value, FIELD(base, o, bool)) < 0)
			goto bad;
		return 0;
	case CONF_DURATION: {
		int64_t v;
		int r = tu_parse_duration(value, &v);

		if (r == -ERANGE)
			goto too_large;
		if (r < 0)
			goto bad;
		if (o->min < o->max && (v < o->min || v > o->max)) {
			char lo[32], hi[32];

			return rf_err_set(e, -ERANGE, "CONF_BAD_VALUE", where, "%s = %s is out of range %s..%s",
					  o->name, value, tu_format_duration(o->min, lo, sizeof(lo)),
					  tu_format_duration(o->max, hi, sizeof(hi)));
		}
		*FIELD(base, o, int64_t) = v;
		return 0;
	}
	case CONF_SIZE: {
		uint64_t v;
		int r = conf_parse_size(value, &v);

		if (r == -ERANGE)
			goto too_large;
		if (r < 0)
			goto bad;
		if (o->min < o->max && (v < (uint64_t)o->min || v > (uint64_t)o->max))
			return rf_err_set(e, -ERANGE, "CONF_BAD_VALUE", where,
					  "%s = %s is out of range %" PRId64 "..%" PRId64 " bytes",
					  o->name, value, o->min, o->max);
		*FIELD(base, o, uint64_t) = v;
		return 0;
	}
	case CONF_DOUBLE: {
		double v;

		errno = 0;
		v = strtod(value, &end);
		if (errno || end == value || *end || !isfinite(v))
			goto bad;
		*FIELD(base, o, double) = v;
		return 0;
	}
	case CONF_GROUP:
		return -EINVAL; /* a group has no value */
	case CONF_ENUM:
		for (int i = 0; o->choices[i]; i++) {
			if (strcmp(o->choices[i], value) == 0) {
				*FIELD(base, o, int) = i;
				return 0;
			}
		}
		{
			char list[256] = "";
			size_t n = 0;

			for (int i = 0; o->choices[i] && n < sizeof(list); i++)
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
						      i ? ", " : "", o->choices[i]);
			return rf_err_set(e, -EINVAL, "CONF_BAD_VALUE", where,
					  "bad value '%s' for %s: expected one of %s", value,
					  o->name, list);
		}
	}
bad:
	return rf_err_set(e, -EINVAL, "CONF_BAD_VALUE", where, "bad value '%s' for %s: expected %s",
			  value, o->name, type_hint(o));
too_large:
	return rf_err_set(e, -ERANGE, "CONF_BAD_VALUE", where, "%s = %s is too large to hold", o->name,
			  value);
}

static int init(const struct conf_opt *opts, void *base, struct rf_err *e)
{
	for (const struct conf_opt *o = opts; o->name; o++) {
		int r;

		if (o->type == CONF_GROUP) {
			void **g = FIELD(base, o, void *);

			if (!*g && !(*g = calloc(1, o->size)))
				return -ENOMEM;
			r = init(o->group, *g, e);
		} else {
			r = set_opt(o, base, o->def ? o->def : (o->type == CONF_STRING ? "" : "0"),
				    "default", e);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* How many keys called name the table has, groups included. */
static unsigned count_key(const struct conf_opt *opts, const char *name)
{
	unsigned n = 0;

	for (const struct conf_opt *o = opts; o->name; o++)
		n += o->type == CONF_GROUP ? count_key(o->group, name) : !strcmp(o->name, name);
	return n;
}

/* A key that two entries (in different groups, say) claim: the second would never be set. */
static const char *duplicate_key(const struct conf_opt *opts, const struct conf_opt *root)
{
	for (const struct conf_opt *o = opts; o->name; o++) {
		const char *d = o->type == CONF_GROUP ? duplicate_key(o->group, root)
			      : count_key(root, o->name) > 1 ? o->name : NULL;

		if (d)
			return d;
	}
	return NULL;
}

int conf_init(const struct conf_opt *opts, void *base, struct rf_err *e)
{
	const char *dup = duplicate_key(opts, opts);

	if (dup)
		return rf_err_set(e, -EEXIST, "CONF_DUPLICATE_KEY", dup, "the key '%s' is defined twice", dup);
	return init(opts, base, e);
}

int conf_load_all(const struct conf_opt *opts, void *base, const char *path,
		  const struct conf_overrides *o, const char *prog)
{
	struct rf_err e = { 0 };
	char buf[700];
	int r;

	if ((r = conf_init(opts, base, &e)) < 0 || (path && (r = conf_load_file(opts, base, path, &e)) < 0) ||
	    (r = conf_apply_overrides(opts, base, o, &e)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, rf_err_str(&e, buf, sizeof(buf)));
		conf_fini(opts, base);
	}
	return r;
}

void conf_fini(const struct conf_opt *opts, void *base)
{
	for (const struct conf_opt *o = opts; o->name; o++) {
		if (o->type == CONF_STRING) {
			free(*FIELD(base, o, char *));
			*FIELD(base, o, char *) = NULL;
		} else if (o->type == CONF_GROUP && *FIELD(base, o, void *)) {
			conf_fini(o->group, *FIELD(base, o, void *));
			free(*FIELD(base, o, void *));
			*FIELD(base, o, void *) = NULL;
		}
	}
}

int conf_set(const struct conf_opt *opts, void *base, const char *name, const char *value,
	     const char *origin, struct rf_err *e)
{
	void *obase = NULL;
	const struct conf_opt *o = find_opt(opts, base, name, &obase);

	if (!o)
		return rf_err_set(e, -ENOENT, "CONF_UNKNOWN_KEY", origin, "unknown key '%s'",
				  name);
	return set_opt(o, obase, value, origin, e);
}

int conf_set_assignment(const struct conf_opt *opts, void *base, const char *assignment,
			const char *origin, struct rf_err *e)
{
	const char *eq = strchr(assignment, '=');
	char name[128];

	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(name))
		return rf_err_set(e, -EINVAL, "CONF_BAD_VALUE", origin,
				  "expected section.key=value, got '%s'", assignment);
	memcpy(name, assignment, (size_t)(eq - assignment));
	name[eq - assignment] = '\0';
	return conf_set(opts, base, name, eq + 1, origin, e);
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Value: bare text up to a " #" comment, or a double-quoted string with \" and \\ escapes. */
static int parse_value(char *v, const char *where, struct rf_err *e)
{
	if (*v == '"') {
		char *out = v, *in = v + 1;

		for (; *in && *in != '"'; in++) {
			if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
				in++;
			*out++ = *in;
		}
		if (*in != '"')
			return rf_err_set(e, -EINVAL, "CONF_SYNTAX", where,
					  "unterminated quoted value");
		in = trim(in + 1);
		if (*in && *in != '#' && *in != ';')
			return rf_err_set(e, -EINVAL, "CONF_SYNTAX", where,
					  "text after the closing quote");
		*out = '\0';
		return 0;
	}
	for (char *p = v; *p; p++) {
		if ((*p == '#' || *p == ';') && (p == v || isspace((unsigned char)p[-1]))) {
			*p = '\0';
			break;
		}
	}
	trim(v);
	return 0;
}

int conf_load_string(const struct conf_opt *opts, void *base, const char *text,
		     const char *origin, struct rf_err *e)
{
	char section[64] = "";
	char *copy = strdup(text), *line, *next;
	/* Keys set by this file, to reject duplicates (a duplicate is almost always a mistake). */
	const char *seen[256];
	int nseen = 0, lineno = 0, r = 0;

	if (!copy)
		return -ENOMEM;
	for (line = copy; line; line = next) {
		char where[160], name[160], *s, *eq, *val;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		snprintf(where, sizeof(where), "%s:%d", origin, lineno);
		s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (!end || trim(end + 1)[0] != '\0' || end - s - 1 <= 0 ||
			    (size_t)(end - s - 1) >= sizeof(section)) {
				r = rf_err_set(e, -EINVAL, "CONF_SYNTAX", where,
					       "bad section header '%s'", s);
				goto out;
			}
			*end = '\0';
			snprintf(section, sizeof(section), "%s", trim(s + 1));
			continue;
		}
		eq = strchr(s, '=');
		if (!eq) {
			r = rf_err_set(e, -EINVAL, "CONF_SYNTAX", where,
				       "expected 'key = value', got '%s'", s);
			goto out;
		}
		*eq = '\0';
		val = trim(eq + 1);
		s = trim(s);
		if (!*s) {
			r = rf_err_set(e, -EINVAL, "CONF_SYNTAX", where, "missing key before '='");
			goto out;
		}
		if (!section[0]) {
			r = rf_err_set(e, -EINVAL, "CONF_SYNTAX", where,
				       "key '%s' is outside of any [section]", s);
			goto out;
		}
		r = parse_value(val, where, e);
		if (r < 0)
			goto out;
		snprintf(name, sizeof(name), "%s.%s", section, s);
		{
			void *obase = NULL;
			const struct conf_opt *o = find_opt(opts, base, name, &obase);

			if (!o) {
				r = rf_err_set(e, -ENOENT, "CONF_UNKNOWN_KEY", where,
					       "unknown key '%s' in section [%s]", s, section);
				goto out;
			}
			for (int i = 0; i < nseen; i++) {
				if (seen[i] == o->name) {
					r = rf_err_set(e, -EINVAL, "CONF_DUPLICATE_KEY", where,
						       "key '%s' is set twice", name);
					goto out;
				}
			}
			if (nseen < (int)ARRAY_SIZE(seen))
				seen[nseen++] = o->name;
			r = set_opt(o, obase, val, where, e);
			if (r < 0)
				goto out;
		}
	}
out:
	free(copy);
	return r;
}

int conf_load_file(const struct conf_opt *opts, void *base, const char *path, struct rf_err *e)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!f)
		return rf_err_set(e, -errno, "CONF_UNREADABLE", path, "cannot open: %s",
				  strerror(errno));
	/* A file any user may write decides what a service reads and writes as its user (the
	 * database, the TLS key, the dashboard's files): refused, checked on the file opened.  One
	 * others may read is fine: a configuration holds no secrets, only their files' paths. */
	{
		struct stat st;

		if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
			fclose(f);
			return rf_err_set(e, -EISDIR, "CONF_UNREADABLE", path, "a directory, not a configuration file");
		}
		if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IWOTH)) {
			fclose(f);
			return rf_err_set(e, -EACCES, "CONF_FILE_MODE", path,
					  "other users can write this configuration file (mode %04o); "
					  "refusing it: chmod o-w %s",
					  (unsigned)(st.st_mode & 07777), path);
		}
	}
	{
		FILE *m = open_memstream(&text, &len);
		char chunk[4096];
		size_t n;

		if (!m) {
			fclose(f);
			return -ENOMEM;
		}
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		r = ferror(f) ? -EIO : 0;
		fclose(m);
	}
	fclose(f);
	if (r < 0) {
		free(text);
		return rf_err_set(e, r, "CONF_UNREADABLE", path, "read error");
	}
	if (memchr(text, '\0', len)) {
		free(text);
		return rf_err_set(e, -EINVAL, "CONF_SYNTAX", path, "file contains a NUL byte");
	}
	r = conf_load_string(opts, base, text, path, e);
	free(text);
	return r;
}

static void format_value(const struct conf_opt *o, const void *base, char *buf, size_t len)
{
	switch (o->type) {
	case CONF_STRING: /* put_string(): a string can be longer than buf */
	case CONF_GROUP:
		buf[0] = '\0';
		break;
	case CONF_INT:
		snprintf(buf, len, "%" PRId64, *FIELD(base, o, const int64_t));
		break;
	case CONF_BOOL:
		snprintf(buf, len, "%s", *FIELD(base, o, const bool) ? "true" : "false");
		break;
	case CONF_DURATION:
		tu_format_duration(*FIELD(base, o, const int64_t), buf, len);
		break;
	case CONF_SIZE:
		snprintf(buf, len, "%" PRIu64, *FIELD(base, o, const uint64_t));
		break;
	case CONF_DOUBLE:
		snprintf(buf, len, "%g", *FIELD(base, o, const double));
		break;
	case CONF_ENUM:
		snprintf(buf, len, "%s", o->choices[*FIELD(base, o, const int)]);
		break;
	}
}

/* A string value as parse_value() reads it back: bare when it can be, else double-quoted with
 * \" and \\ escaped (spaces at either end, a leading quote, a comment character). */
static void put_string(const char *s, FILE *f)
{
	size_t n = strlen(s);

	if (!n || (!isspace((unsigned char)s[0]) && !isspace((unsigned char)s[n - 1]) &&
		   s[0] != '"' && !strpbrk(s, "#;"))) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void dump(const struct conf_opt *opts, const void *base, char *section, size_t len, FILE *f)
{
	for (const struct conf_opt *o = opts; o->name; o++) {
		const char *dot = strchr(o->name, '.');
		char val[512];

		if (o->type == CONF_GROUP) {
			if (conf_group_base(o, base)) /* NULL before conf_init() */
				dump(o->group, conf_group_base(o, base), section, len, f);
			continue;
		}
		if (strncmp(section, o->name, (size_t)(dot - o->name)) != 0 ||
		    section[dot - o->name] != '\0') {
			fprintf(f, "%s[%.*s]\n", section[0] ? "\n" : "", (int)(dot - o->name), o->name);
			snprintf(section, len, "%.*s", (int)(dot - o->name), o->name);
		}
		fprintf(f, "%s = ", dot + 1);
		if (o->type == CONF_STRING) {
			put_string(*FIELD(base, o, char *const) ?: "", f);
		} else {
			format_value(o, base, val, sizeof(val));
			fputs(val, f);
		}
		fputc('\n', f);
	}
}

void conf_dump(const struct conf_opt *opts, const void *base, FILE *f)
{
	char section[64] = "";

	dump(opts, base, section, sizeof(section), f);
}

void conf_help(const struct conf_opt *opts, FILE *f)
{
	for (const struct conf_opt *o = opts; o->name; o++) {
		if (o->type == CONF_GROUP)
			conf_help(o->group, f);
		else
			fprintf(f, "  %-28s %s (default: %s)\n", o->name, o->help ? o->help : "",
				o->def && *o->def ? o->def : "none");
	}
}

int conf_override(struct conf_overrides *o, const char *name, const char *value,
		  const char *origin)
{
	if (o->n >= (int)ARRAY_SIZE(o->item))
		return -E2BIG;
	o->item[o->n].name = name;
	o->item[o->n].value = value;
	o->item[o->n].origin = origin;
	o->n++;
	return 0;
}

int conf_apply_overrides(const struct conf_opt *opts, void *base,
			 const struct conf_overrides *o, struct rf_err *e)
{
	for (int i = 0; i < o->n; i++) {
		int r = o->item[i].name ? conf_set(opts, base, o->item[i].name, o->item[i].value,
						   o->item[i].origin, e)
					: conf_set_assignment(opts, base, o->item[i].value,
							      o->item[i].origin, e);
		if (r < 0)
			return r;
	}
	return 0;
}
