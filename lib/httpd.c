/* JSON-over-HTTP server for tools: see httpd.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "lib/buf.h"
#include "lib/httpd.h"
#include "lib/jsonutil.h"
#include "lib/log.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

struct httpd {
	struct MHD_Daemon *mhd;
	struct httpd_conf c;
	unsigned port;
};

struct conn_state {
	struct buf body;
	bool too_big;
};

int net_parse_listen(const char *listen, const char *what, struct sockaddr_storage *ss,
		     bool *v6, struct rf_err *e)
{
	char host[256];
	const char *colon = strrchr(listen, ':');
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM },
			*res = NULL;
	size_t hlen;
	int r;

	if (!colon || !colon[1])
		return rf_err_set(e, -EINVAL, "BAD_LISTEN", what,
				  "'%s' is not ADDRESS:PORT (for example 127.0.0.1:9750 or [::1]:9750)",
				  listen);
	/* (getaddrinfo takes 99999 and listens on 99999 mod 65536) */
	if (strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 5 || atol(colon + 1) > 65535)
		return rf_err_set(e, -EINVAL, "BAD_LISTEN", what, "'%s': the port must be a number from 0 to 65535",
				  listen);
	hlen = (size_t)(colon - listen);
	if (hlen >= sizeof(host))
		return rf_err_set(e, -EINVAL, "BAD_LISTEN", what, "address too long");
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	if (host[0] == '[' && hlen >= 2 && host[hlen - 1] == ']') {
		memmove(host, host + 1, hlen - 2);
		host[hlen - 2] = '\0';
	}
	r = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
	if (r != 0)
		return rf_err_set(e, -EINVAL, "BAD_LISTEN", what, "'%s': %s", listen,
				  gai_strerror(r));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	return 0;
}

json_t *httpd_problem(int status, const struct rf_err *e)
{
	const char *title = status == 400   ? "Bad Request"
			    : status == 404 ? "Not Found"
			    : status == 405 ? "Method Not Allowed"
			    : status == 409 ? "Conflict"
			    : status == 413 ? "Content Too Large"
			    : status == 503 ? "Service Unavailable"
					    : "Error";
	/* detail and pointer may quote the request, which need not be UTF-8 */
	json_t *p = json_pack("{s:s,s:s,s:i,s:s,s:o}", "type", "about:blank", "title", title, "status",
			      status, "code", e->code[0] ? e->code : "ERROR", "detail",
			      js_string_lossy(e->msg));

	if (p && e->where[0])
		js_set(p, "pointer", js_string_lossy(e->where));
	return p;
}

const char *httpd_arg(const struct httpd_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static MHD_RESULT send_doc(struct MHD_Connection *conn, int status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	struct MHD_Response *resp;
	MHD_RESULT ret;
	bool problem = status >= 400 && json_object_get(doc, "code");

	json_decref(doc);
	if (!text)
		text = strdup("{}");
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
				problem ? "application/problem+json" : "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	ret = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static MHD_RESULT access_handler(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct httpd *h = cls;
	struct conn_state *cs = *con_cls;
	struct rf_err e = { 0 };
	struct httpd_req req;
	json_t *doc = NULL;
	int status;

	(void)version;
	if (!cs) {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return MHD_NO;
		buf_init(&cs->body);
		*con_cls = cs;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (cs->body.len + *upload_data_size > h->c.max_body)
			cs->too_big = true;
		else
			buf_append(&cs->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (cs->too_big) {
		rf_err_set(&e, -E2BIG, "BODY_TOO_LARGE", NULL, "the request body is over %zu bytes",
			   h->c.max_body);
		return send_doc(conn, 413, httpd_problem(413, &e));
	}
	req = (struct httpd_req){ .method = method, .path = url, .conn = conn };
	if (cs->body.len) {
		json_error_t je;

		req.body = json_loadb(cs->body.data, cs->body.len, JSON_REJECT_DUPLICATES, &je);
		if (!req.body) {
			rf_err_set(&e, -EINVAL, "MALFORMED_JSON", NULL,
				   "the body is not JSON: line %d column %d: %s", je.line, je.column,
				   je.text);
			return send_doc(conn, 400, httpd_problem(400, &e));
		}
	}
	status = h->c.handler(h->c.ctx, &req, &doc);
	json_decref(req.body);
	return send_doc(conn, status, doc);
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct conn_state *cs = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (cs) {
		buf_fini(&cs->body);
		free(cs);
		*con_cls = NULL;
	}
}

int httpd_start(const struct httpd_conf *c, struct httpd **ret, struct rf_err *e)
{
	struct sockaddr_storage ss = { 0 };
	const union MHD_DaemonInfo *info;
	struct httpd *h;
	bool v6 = false;
	int r;

	if ((r = net_parse_listen(c->listen, c->what, &ss, &v6, e)) < 0)
		return r;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->c = *c;
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
					  (v6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, access_handler, h, MHD_OPTION_SOCK_ADDR,
				  (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
				  c->threads ? c->threads : 2u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
				  MHD_OPTION_NOTIFY_COMPLETED, request_completed, h,
				  MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
	if (!h->mhd) {
		free(h);
		return rf_err_set(e, -EADDRINUSE, "LISTEN_FAILED", c->what,
				  "cannot listen on %s (address in use or not local)", c->listen);
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	*ret = h;
	return 0;
}

unsigned httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	free(h);
}
