/* A JSON-over-HTTP client on libcurl, one kept-alive connection per client: rocefabctl and the
 * agents talk to rocefabd with it, the sim backend to rocefab-sim's control API.
 *
 * Errors: a server that cannot be reached is -EHOSTUNREACH (code SERVER_UNREACHABLE, or the
 * client's own code); an answer of status >= 400 carries an RFC 9457 problem whose code,
 * detail and pointer httpc_problem() turns into an rf_err. */
#ifndef ROCEFAB_HTTPC_H
#define ROCEFAB_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

struct httpc;

struct httpc_conf {
	const char *base;	  /* http://host:port (https:// too unless http_only) */
	const char *what;	  /* the setting that names base, for errors ("agent.server") */
	bool http_only;
	const char *token;	  /* bearer token; NULL or "": none */
	const char *ca_file;	  /* for https; NULL or "": the system's store */
	const char *client_cert;  /* PEM client certificate for https (mTLS); NULL or "": none */
	const char *client_key;	  /* its PEM private key; NULL or "": in client_cert's file */
	const char *user_agent;	  /* "rocefabctl/VERSION" */
	int64_t timeout_ns;	  /* per request; 0: 30 s */
	int64_t connect_timeout_ns; /* 0: the request's timeout */
	size_t max_response;	  /* bytes of an answer kept (the rest is dropped); 0: no limit */
	const char *unreachable_code; /* code of an unreachable server; NULL: SERVER_UNREACHABLE */
};

/* -EINVAL (code BAD_SERVER_URL, where = what) for a base that is not an http(s):// URL. */
int httpc_new(const struct httpc_conf *c, struct httpc **ret, struct rf_err *e);
void httpc_free(struct httpc *h);
/* The base URL as used (without trailing slashes). */
const char *httpc_base(const struct httpc *h);

/* One request: body (len bytes, may be NULL) is sent as application/json.  0, the HTTP status
 * in *ret_status and, when ret_doc is not NULL, the answer parsed as JSON (NULL when empty or
 * not JSON) in *ret_doc; -EHOSTUNREACH with e filled when the server did not answer. */
int httpc_send(struct httpc *h, const char *method, const char *path, const char *body,
	       size_t len, long *ret_status, json_t **ret_doc, struct rf_err *e);

/* JSON in and out: body (NULL: none) is serialized; a 2xx answer's document goes to *ret (a
 * new reference; -EBADMSG BAD_RESPONSE when it is not JSON); an answer >= 400 returns -EPROTO
 * with e holding the problem ("STATUS detail").  *ret_status gets the status either way. */
int httpc_json(struct httpc *h, const char *method, const char *path, json_t *body, json_t **ret,
	       long *ret_status, struct rf_err *e);

/* The problem document of an error answer into e: its code (else code_else, HTTP_ERROR when
 * NULL), its pointer, and the message prefix + its detail (else detail_else, "no detail" when
 * NULL).  Returns err. */
int httpc_problem(struct rf_err *e, int err, const json_t *doc, const char *prefix,
		  const char *code_else, const char *detail_else);

/* URL-encodes s (a path segment or query value) into out; ':' and ',' are kept. */
void httpc_escape(const char *s, char *out, size_t len);

#endif
