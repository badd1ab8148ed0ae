/* API tokens: see tokens.h. */
#include <stdio.h>
#include <string.h>
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

int tokens_add(struct store *s, const char *name, enum role role, char ret_token[TOKEN_LEN + 1],
	       struct rf_err *e)
{
	static const char sql[] = "INSERT INTO tokens(name, role, hash, created_ns) VALUES(?,?,?,?)";
	char hash[2 * SHA256_DIGEST_LEN + 1];
	uint8_t rnd[32];
	sqlite3_stmt *st;
	int rc;

	if (!js_is_id(name, 64))
		return rf_err_set(e, -EINVAL, "BAD_TOKEN_NAME", name,
				  "a token name uses letters, digits, '.', '_', '-' (at most 64)");
	if (role == ROLE_NONE)
		return rf_err_set(e, -EINVAL, "BAD_ROLE", NULL, "a token needs a role");
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
		return rf_err_set(e, -ENOENT, "TOKEN_NOT_FOUND", name, "no active token of that name");
	return 0;
}

int tokens_print(struct store *s, FILE *f, struct rf_err *e)
{
	static const char sql[] =
		"SELECT name, role, created_ns, revoked_ns FROM tokens ORDER BY revoked_ns IS NOT NULL, name";
	sqlite3_stmt *st = store_stmt(s, sql);
	int rc;

	if (!st)
		return rf_err_set(e, -EIO, "STORE_ERROR", NULL, "cannot read tokens");
	fprintf(f, "%-32s %-9s %-27s %s\n", "NAME", "ROLE", "CREATED", "REVOKED");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char created[40], revoked[40] = "-";

		tu_format_rfc3339(sqlite3_column_int64(st, 2), created, sizeof(created));
		if (sqlite3_column_type(st, 3) != SQLITE_NULL)
			tu_format_rfc3339(sqlite3_column_int64(st, 3), revoked, sizeof(revoked));
		fprintf(f, "%-32s %-9s %-27s %s\n", sqlite3_column_text(st, 0),
			sqlite3_column_text(st, 1), created, revoked);
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : rf_err_set(e, store_errno(rc), "STORE_ERROR", NULL, "%s",
						  sqlite3_errmsg(store_writer_db(s)));
}

int tokens_check(struct store_reader *r, const char *token, enum role *ret_role,
		 char ret_name[65])
{
	static const char sql[] =
		"SELECT name, role FROM tokens WHERE hash = ? AND revoked_ns IS NULL";
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
		if (x < 0)
			x = -ENOENT;
	} else if (rc != SQLITE_DONE) {
		x = store_errno(rc);
	}
	sqlite3_reset(st);
	return x;
}
