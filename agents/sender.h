/* Delivery of reports to rocefabd over HTTP(S) with libcurl, one kept-alive connection. */
#ifndef ROCEFAB_SENDER_H
#define ROCEFAB_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

struct sender;

struct sender_conf {
	const char *server; /* http://host:port */
	const char *token;
	const char *ca_file; /* for https; NULL: system store */
	const char *client_cert, *client_key; /* PEM, for rocefabd's api.client_ca; NULL: none */
	int64_t timeout_ns;
};

int sender_new(const struct sender_conf *c, struct sender **ret, struct rf_err *e);
void sender_free(struct sender *s);
/* Posts one report of agent_id (replay: one spooled under this id by an agent that has
 * another now: rocefabd hands it no commands).  0: stored by rocefabd, *ret_answer (when not
 * NULL) is its answer (a new reference, or NULL if it was not JSON).  -EAGAIN: try again
 * later (unreachable, 5xx, 429); e says why.  -EACCES: the token is refused (401); -EPERM:
 * refused as this agent (403: e's code says why, e.g. AGENT_NOT_BOUND, CLIENT_CERT_MISMATCH).  Other negative: rocefabd
 * refused the report for good (4xx); e has its problem detail. */
int sender_post(struct sender *s, const char *agent_id, bool replay, const char *body, size_t len,
		json_t **ret_answer, struct rf_err *e);
/* Posts a fast PFC report.  The same results, and -ENOENT when rocefabd has no fast lane. */
int sender_post_pfc(struct sender *s, const char *agent_id, const char *body, size_t len, struct rf_err *e);

#endif
