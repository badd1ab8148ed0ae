/* API tokens.  A token is "rfb_" + 43 base64url characters (256 random bits); only its SHA-256
 * is stored.  Each token has a name (unique) and a role:
 *   viewer    read everything
 *   operator  viewer + change configuration
 *   agent     post agent reports (and nothing else)
 *   admin     everything */
#ifndef ROCEFAB_TOKENS_H
#define ROCEFAB_TOKENS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/store.h"
#include "lib/err.h"

enum role { ROLE_NONE = 0, ROLE_VIEWER, ROLE_OPERATOR, ROLE_AGENT, ROLE_ADMIN };

#define TOKEN_LEN 47 /* "rfb_" + 43 */

const char *role_name(enum role r);
int role_parse(const char *s, enum role *ret);
/* Whether a token of role have may do what needs role need. */
bool role_allows(enum role have, enum role need);

/* On the writer connection (tools, or a writer job).  ret_token receives the token, NUL
 * terminated, to show once. */
int tokens_add(struct store *s, const char *name, enum role role, char ret_token[TOKEN_LEN + 1],
	       struct rf_err *e);
int tokens_revoke(struct store *s, const char *name, struct rf_err *e);
/* Prints a table of name, role, created, revoked. */
int tokens_print(struct store *s, FILE *f, struct rf_err *e);

/* On a reader connection.  0 and the role (and name) of a valid, unrevoked token; -ENOENT when
 * unknown or revoked; another negative errno when the database failed. */
int tokens_check(struct store_reader *r, const char *token, enum role *ret_role,
		 char ret_name[65]);

#endif
