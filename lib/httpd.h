/* A small JSON-over-HTTP server on libmicrohttpd, for the control endpoints of tools
 * (rocefab-sim serve's control API).  rocefabd's REST API has its own, fuller server (api/).
 *
 * Every request body is read completely (up to max_body; larger ones get 413) before the
 * handler runs, on one of the server's threads.  The handler returns an HTTP status and a JSON
 * document; a document with a "code" member and a status >= 400 goes out as
 * application/problem+json. */
#ifndef ROCEFAB_HTTPD_H
#define ROCEFAB_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <jansson.h>

#include "lib/err.h"

struct httpd;

struct httpd_req {
	const char *method;
	const char *path;   /* without the query */
	json_t *body;	    /* parsed body, NULL when empty */
	void *conn;	    /* for httpd_arg() */
};

/* A query argument, or NULL. */
const char *httpd_arg(const struct httpd_req *r, const char *name);

typedef int (*httpd_handler)(void *ctx, const struct httpd_req *r, json_t **ret_doc);

struct httpd_conf {
	const char *listen; /* ADDRESS:PORT; port 0 picks a free one */
	const char *what;   /* the setting's name, for errors */
	size_t max_body;
	unsigned threads;
	httpd_handler handler;
	void *ctx;
};

int httpd_start(const struct httpd_conf *c, struct httpd **ret, struct rf_err *e);
/* The bound port (useful with port 0). */
unsigned httpd_port(const struct httpd *h);
void httpd_stop(struct httpd *h);

/* An RFC 9457 problem document: {"type","title","status","code","detail"[,"pointer"]}. */
json_t *httpd_problem(int status, const struct rf_err *e);

/* ADDRESS:PORT or [V6]:PORT, numeric only. */
int net_parse_listen(const char *listen, const char *what, struct sockaddr_storage *ss,
		     bool *v6, struct rf_err *e);

#endif
