/* rocefabctl's HTTP client: GET a REST resource as JSON, or a problem. */
#ifndef ROCEFAB_CLI_CLIENT_H
#define ROCEFAB_CLI_CLIENT_H

#include <jansson.h>

#include "lib/err.h"

struct client;

int client_new(const char *server, const char *token, struct client **ret, struct rf_err *e);
void client_free(struct client *c);
/* GET path (with query) -> *ret (new reference) and 0; on an HTTP error e carries the problem's
 * code and detail and the status is returned as a negative errno-like value (-EPROTO). */
int client_get(struct client *c, const char *path, json_t **ret, long *ret_status,
	       struct rf_err *e);
/* Any method, with a JSON body when body is not NULL; results as client_get(). */
int client_request(struct client *c, const char *method, const char *path, json_t *body,
		   json_t **ret, long *ret_status, struct rf_err *e);
/* URL-encodes s into out. */
void client_escape(const char *s, char *out, size_t len);

#endif
