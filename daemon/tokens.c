/* API tokens: see tokens.h. */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "daemon/tokens.h"
#include "lib/jsonutil.h"
#include "lib/sha256.h"
#include "lib/timeutil.h"

static const char *const role_names[] = { "none", "viewer", "operator", "agent", "admin", NULL };

const char *role_name(enum role r)
{
	return r <= ROLE_ADMIN ? role_names[r] : "?";
}

int role_parse(const char *s, enum role *ret)
{
	for (int i = ROLE_VIEWER; role_names[i]; i++) {
		if (strcmp(s, role_names[i]) == 0) {
			*ret = (enum role)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool role_allows(enum role have, enum role need)
{
	switch (need) {
	case ROLE_NONE:
		return true;
	case ROLE_VIEWER:
		return have == ROLE_VIEWER || have == ROLE_OPERATOR || have == ROLE_ADMIN;
	case ROLE_OPERATOR:
		return have == ROLE_OPERATOR || have == ROLE_ADMIN;
	case ROLE_AGENT:
		return have == ROLE_AGENT || have == ROLE_ADMIN;
	case ROLE_ADMIN:
		return have == ROLE_ADMIN;
	}
	return false;
}

static void token_hash(const char *token, char out[2 * SHA256_DIGEST_LEN + 1])
{
	uint8_t d[SHA256_DIGEST_LEN];

	sha256(token, strlen(token), d);
	hex_encode(d, sizeof(d), out);
}

static void base64url(const uint8_t *in, size_t len, char *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t o = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t n = len - i;

		if (n > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (n > 2)
			v |= in[i + 2];
		out[o++] = a[(v >> 18) & 63];
		out[o++] = a[(v >> 12) & 63];
		if (n > 1)
			out[o++] = a[(v >> 6) & 63];
		if (n > 2)
			out[o++] = a[v & 63];
	}
	out[o] = '\0';
}

/* --- agent bindings ---------------------------------------------------------------------- */

static bool pattern_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '*' || c == '?';
}

int tokens_agents_parse(const char *list, char ret[TOKEN_AGENTS_MAX + 1], struct rf_err *e)
{
	char out[TOKEN_AGENTS_MAX + 1];
	size_t o = 0;
	const char *p = list;

	for (;;) {
		const char *a, *b;
		bool bad;
		size_t n;

		while (*p == ' ' || *p == '\t')
			p++;
		a = p;
		while (*p && *p != ',')
			p++;
		b = p;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		n = (size_t)(b - a);
		if (n == 0)
			return rf_err_set(e, -EINVAL, "BAD_AGENT_PATTERN", NULL,
					  "'%s': an empty entry; give agent ids or patterns "
					  "separated by commas",
					  list);
		bad = n > TOKEN_PATTERN_MAX || a[0] == '.' || a[0] == '-';
		for (size_t i = 0; i < n && !bad; i++)
			bad = !pattern_char(a[i]);
		if (bad)
			return rf_err_set(e, -EINVAL, "BAD_AGENT_PATTERN", NULL,
					  "'%.*s': an agent id or pattern uses letters, digits, "
					  "'.', '_', '-' and the wildcards '*' (any characters) "
					  "and '?' (one), does not start with '.' or '-', and "
					  "has at most %d characters",
					  (int)(n > 80 ? 80 : n), a, TOKEN_PATTERN_MAX);
		if (o + (o ? 1 : 0) + n > TOKEN_AGENTS_MAX)
			return rf_err_set(
				e, -E2BIG, "AGENTS_TOO_LONG", NULL,
				"the list of agents is longer than %d characters; use patterns",
				TOKEN_AGENTS_MAX);
		if (o)
			out[o++] = ',';
		memcpy(out + o, a, n);
		o += n;
		if (!*p)
			break;
		p++; /* the comma */
	}
	out[o] = '\0';
	memcpy(ret, out, o + 1);
	return 0;
}

bool tokens_agent_allowed(const char *agents, const char *id)
{
	const char *p = agents;

	if (!agents || !*agents)
		return true; /* unbound: the warning is given elsewhere */
	while (*p) {
		char pat[TOKEN_PATTERN_MAX + 1];
		size_t n = strcspn(p, ",");

		/* entries were checked when stored; a longer one (a damaged row) matches nothing */
		if (n <= TOKEN_PATTERN_MAX) {
			memcpy(pat, p, n);
			pat[n] = '\0';
			if (fnmatch(pat, id, FNM_NOESCAPE) == 0)
				return true;
		}
		p += n;
		if (*p)
			p++;
	}
	return false;
}

/* --- the tokens table ---------------------------------------------------------------------- */

/* The normalized binding of a token of role in buf: NULL for none, or an error. */
static int binding_of(enum role role, const char *agents, char buf[TOKEN_AGENTS_MAX + 1],
		      const char **ret, struct rf_err *e)
{
	int r;

	*ret = NULL;
	if (!agents)
		return 0;
	if (role != ROLE_AGENT)
		return rf_err_set(
			e, -EINVAL, "AGENTS_NEED_AGENT_ROLE", NULL,
			"only a token of role agent is bound to agents (this one has role %s)",
			role_name(role));
	if ((r = tokens_agents_parse(agents, buf, e)) < 0)
		return r;
	*ret = buf;
	return 0;
}

int tokens_add(struct store *s, const char *name, enum role role, const char *agents,
	       char ret_token[TOKEN_LEN + 1], struct rf_err *e)
{
	static const char sql[] =
		"INSERT INTO tokens(name, role, hash, created_ns, agents) VALUES(?,?,?,?,?)";
	char hash[2 * SHA256_DIGEST_LEN + 1], abuf[TOKEN_AGENTS_MAX + 1];
	const char *bound;
	uint8_t rnd[32];
	sqlite3_stmt *st;
	int rc, r;

	if (!js_is_id(name, 64))
		return rf_err_set(e, -EINVAL, "BAD_TOKEN_NAME", name,
				  "a token name uses letters, digits, '.', '_', '-' (at most 64)");
	/* the actors of rocefabd's own changes in the audit log: a token of that name would pass
	 * for them (the tuner takes changes by "tuner" for its own), or read as them ("Tuner") */
	if (!strcasecmp(name, "tuner") || !strcasecmp(name, "detector"))
		return rf_err_set(e, -EINVAL, "BAD_TOKEN_NAME", name,
				  "'%s' names rocefabd's own changes in the audit log: choose another name", name);
	if (role == ROLE_NONE)
		return rf_err_set(e, -EINVAL, "BAD_ROLE", NULL, "a token needs a role");
	if ((r = binding_of(role, agents, abuf, &bound, e)) < 0)
		return r;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return rf_err_set(e, -EIO, "NO_RANDOMNESS", NULL, "getrandom failed");
	memcpy(ret_token, "rfb_", 4);
	base64url(rnd, sizeof(rnd), ret_token + 4);
	token_hash(ret_token, hash);
	st = store_stmt(s, sql);
	if (!st)
		return rf_err_set(e, -EIO, "STORE_ERROR", NULL, "%s",
				  sqlite3_errmsg(store_writer_db(s)));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, role_name(role), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, hash, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, tu_now_ns());
	store_bind_text_or_null(st, 5, bound);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return rf_err_set(e, -EEXIST, "TOKEN_EXISTS", name,
				  "a token with this name exists; revoke it or pick another name");
	if (rc != SQLITE_DONE)
		return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "%s",
				  sqlite3_errmsg(store_writer_db(s)));
	return 0;
}

int tokens_bind(struct store *s, const char *name, const char *agents, struct rf_err *e)
{
	static const char sql[] = "UPDATE tokens SET agents = ? "
				  "WHERE name = ? AND role = 'agent' AND revoked_ns IS NULL";
	char abuf[TOKEN_AGENTS_MAX + 1];
	const char *bound;
	sqlite3_stmt *st;
	int r;

	if (!agents)
		return rf_err_set(e, -EINVAL, "BAD_AGENT_PATTERN", NULL, "bind to which agents?");
	if ((r = binding_of(ROLE_AGENT, agents, abuf, &bound, e)) < 0)
		return r;
	if (!(st = store_stmt(s, sql)))
		return rf_err_set(e, -EIO, "STORE_ERROR", NULL, "%s",
				  sqlite3_errmsg(store_writer_db(s)));
	sqlite3_bind_text(st, 1, bound, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if ((r = store_step(st)) < 0)
		return rf_err_set(e, r, "STORE_ERROR", NULL, "%s",
				  sqlite3_errmsg(store_writer_db(s)));
	if (sqlite3_changes(store_writer_db(s)) == 0)
		return rf_err_set(e, -ENOENT, "TOKEN_NOT_FOUND", name,
				  "no active token of role agent of that name");
	return 0;
}

int tokens_revoke(struct store *s, const char *name, struct rf_err *e)
{
	/* The row stays (with a new random hash) so that the audit of who had access remains,
	 * and the name becomes free for a new token. */
	static const char sql[] =
		"UPDATE tokens SET revoked_ns = ?, name = name || '~revoked~' || ?, hash = ? "
		"WHERE name = ? AND revoked_ns IS NULL";
	char hash[2 * SHA256_DIGEST_LEN + 1], suffix[24];
	uint8_t rnd[SHA256_DIGEST_LEN];
	int64_t now = tu_now_ns();
	sqlite3_stmt *st;
	int rc;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return rf_err_set(e, -EIO, "NO_RANDOMNESS", NULL, "getrandom failed");
	hex_encode(rnd, sizeof(rnd), hash);
	snprintf(suffix, sizeof(suffix), "%lld", (long long)(now / NSEC_PER_SEC));
	st = store_stmt(s, sql);
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_text(st, 2, suffix, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "%s",
				  sqlite3_errmsg(store_writer_db(s)));
	if (sqlite3_changes(store_writer_db(s)) == 0)
		return rf_err_set(e, -ENOENT, "TOKEN_NOT_FOUND", name,
				  "no active token of that name");
	return 0;
}

int tokens_print(struct store *s, FILE *f, struct rf_err *e)
{
	static const char sql[] = "SELECT name, role, created_ns, revoked_ns, agents FROM tokens "
				  "ORDER BY revoked_ns IS NOT NULL, name";
	sqlite3_stmt *st = store_stmt(s, sql);
	int rc;

	if (!st)
		return rf_err_set(e, -EIO, "STORE_ERROR", NULL, "cannot read tokens");
	fprintf(f, "%-32s %-9s %-27s %-27s %s\n", "NAME", "ROLE", "CREATED", "REVOKED", "AGENTS");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *role = (const char *)sqlite3_column_text(st, 1);
		const char *agents = (const char *)sqlite3_column_text(st, 4);
		char created[40], revoked[40] = "-";

		tu_format_rfc3339(sqlite3_column_int64(st, 2), created, sizeof(created));
		if (sqlite3_column_type(st, 3) != SQLITE_NULL)
			tu_format_rfc3339(sqlite3_column_int64(st, 3), revoked, sizeof(revoked));
		if (!agents || !*agents)
			agents = strcmp(role, "agent") == 0 ? "(unbound)" : "-";
		fprintf(f, "%-32s %-9s %-27s %-27s %s\n", sqlite3_column_text(st, 0), role, created,
			revoked, agents);
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0
				 : rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "%s",
					      sqlite3_errmsg(store_writer_db(s)));
}

int tokens_check(struct store_reader *r, const char *token, enum role *ret_role, char ret_name[65],
		 char ret_agents[TOKEN_AGENTS_MAX + 1])
{
	static const char sql[] =
		"SELECT name, role, agents FROM tokens WHERE hash = ? AND revoked_ns IS NULL";
	char hash[2 * SHA256_DIGEST_LEN + 1];
	sqlite3_stmt *st;
	int rc, x = -ENOENT;

	if (strlen(token) != TOKEN_LEN || strncmp(token, "rfb_", 4) != 0)
		return -ENOENT;
	token_hash(token, hash);
	st = store_reader_stmt(r, sql);
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		x = role_parse((const char *)sqlite3_column_text(st, 1), ret_role);
		if (x == 0 && ret_name)
			snprintf(ret_name, 65, "%s", (const char *)sqlite3_column_text(st, 0));
		if (x == 0 && ret_agents) {
			const char *a = (const char *)sqlite3_column_text(st, 2);

			/* cut, a binding could widen ("h*x" to "h*"): refuse the token */
			if (a && strlen(a) > TOKEN_AGENTS_MAX)
				x = -ENOENT;
			else
				snprintf(ret_agents, TOKEN_AGENTS_MAX + 1, "%s", a ? a : "");
		}
		if (x < 0)
			x = -ENOENT;
	} else if (rc != SQLITE_DONE) {
		x = store_errno(rc);
	}
	sqlite3_reset(st);
	return x;
}

static json_t *name_row(sqlite3_stmt *st, const void *ctx)
{
	(void)ctx;
	return store_col_text(st, 0);
}

int tokens_unbound(struct store_reader *r, json_t **ret)
{
	static const char sql[] =
		"SELECT name FROM tokens WHERE role = 'agent' AND (agents IS NULL OR agents = '') "
		"AND revoked_ns IS NULL ORDER BY name";
	struct rf_err e = { 0 };

	return store_rows(store_reader_stmt(r, sql), name_row, NULL, ret, &e);
}
