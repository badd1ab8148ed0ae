/* Delivery of reports to rocefabd over HTTP(S) with libcurl, one kept-alive connection. */
#ifndef ROCEFAB_SENDER_H
#define ROCEFAB_SENDER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

struct sender;

struct sender_conf {
	const char *server; /* http://host:port */
	const char *token;
	const char *agent_id;
	const char *ca_file; /* for https; NULL: system store */
	int64_t timeout_ns;
};

int sender_new(const struct sender_conf *c, struct sender **ret, struct rf_err *e);
void sender_free(struct sender *s);
/* 0: stored by rocefabd.  -EAGAIN: try again later (unreachable, 5xx, 429); e says why.
 * Other negative: rocefabd refused the report for good (4xx); e has its problem detail. */
int sender_post(struct sender *s, const char *body, size_t len, struct rf_err *e);

#endif
