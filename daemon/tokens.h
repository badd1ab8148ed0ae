/* API tokens.  A token is "rfb_" + 43 base64url characters (256 random bits); only its SHA-256
 * is stored.  Each token has a name (unique) and a role:
 *   viewer    read everything
 *   operator  viewer + change configuration
 *   agent     post agent reports (and nothing else), as the agents it is bound to
 *   admin     everything
 *
 * A token of role agent is bound to the agent ids it may report as (rocefabd token add NAME
 * --role agent --agent LIST): LIST is a comma-separated list of agent ids or glob patterns
 * ("h7", "leaf*", "h1,h2,spine?"), '*' matching any run of characters and '?' one, the other
 * characters those of agent ids (letters, digits, '.', '_', '-'; not first '.' or '-'),
 * matched with fnmatch(3).  An agent token without a binding (every token made before store
 * schema 6, and one made without --agent) is "unbound": it may still report as any agent, for
 * one release, with a warning at start-up and in GET /api/v1/health. */
#ifndef ROCEFAB_TOKENS_H
#define ROCEFAB_TOKENS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/store.h"
#include "lib/err.h"

enum role { ROLE_NONE = 0, ROLE_VIEWER, ROLE_OPERATOR, ROLE_AGENT, ROLE_ADMIN };

#define TOKEN_LEN         47   /* "rfb_" + 43 */
#define TOKEN_AGENTS_MAX  1024 /* the longest agent binding (normalized list) */
#define TOKEN_PATTERN_MAX 64   /* the longest id or pattern in it, as an agent id */

const char *role_name(enum role r);
int role_parse(const char *s, enum role *ret);
/* Whether a token of role have may do what needs role need. */
bool role_allows(enum role have, enum role need);

/* Checks an agent binding and writes it normalized (blanks around entries dropped) to ret (which
 * may be list): 0, or -EINVAL with e naming the bad entry (BAD_AGENT_PATTERN) or -E2BIG
 * (AGENTS_TOO_LONG). */
int tokens_agents_parse(const char *list, char ret[TOKEN_AGENTS_MAX + 1], struct rf_err *e);
/* Whether a token bound to agents (a normalized list; NULL or "": unbound) may report as id. */
bool tokens_agent_allowed(const char *agents, const char *id);

/* On the writer connection (tools, or a writer job).  agents: the binding of a token of role
 * agent (NULL: unbound; refused for other roles).  ret_token receives the token, NUL
 * terminated, to show once. */
int tokens_add(struct store *s, const char *name, enum role role, const char *agents,
	       char ret_token[TOKEN_LEN + 1], struct rf_err *e);
/* Binds an active agent token, replacing its binding: an unbound token can be bound in place. */
int tokens_bind(struct store *s, const char *name, const char *agents, struct rf_err *e);
int tokens_revoke(struct store *s, const char *name, struct rf_err *e);
/* Prints a table of name, role, created, revoked and the agents a token is bound to. */
int tokens_print(struct store *s, FILE *f, struct rf_err *e);

/* On a reader connection.  0 and the role, name and agent binding ("" when none) of a valid,
 * unrevoked token (ret_name, ret_agents may be NULL); -ENOENT when unknown or revoked; another
 * negative errno when the database failed. */
int tokens_check(struct store_reader *r, const char *token, enum role *ret_role, char ret_name[65],
		 char ret_agents[TOKEN_AGENTS_MAX + 1]);
/* The names of the active agent tokens without a binding, by name: a new array in *ret; 0 or a
 * negative errno. */
int tokens_unbound(struct store_reader *r, json_t **ret);

#endif
