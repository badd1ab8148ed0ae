/* Handler: the dashboard's static files (api/web.h), with a strict Content-Security-Policy:
 * scripts, styles and connections from this origin only, nothing inline, no framing. */
#include <string.h>

#include "api/internal.h"
#include "api/web.h"

#define CSP                                                                                  \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "     \
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "          \
	"frame-ancestors 'none'"

int h_web(struct api_req *req)
{
	const struct web_file *f = req->web_file; /* found when the request was routed */
	const char *inm;
	struct MHD_Response *resp;
	unsigned status = 200;
	struct rf_err e;

	if (!f) {
		rf_err_set(&e, -ENOENT, "NO_DASHBOARD", "api.web_root",
			   "the dashboard is not installed: api.web_root names no directory with "
			   "an index.html (see rocefabd's log); the REST API is under /api/v1/");
		return api_reply_problem(req, 404, &e);
	}
	inm = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
					  MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm && (strstr(inm, f->etag) || strcmp(inm, "*") == 0)) {
		status = 304;
		resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	} else {
		/* the files live as long as the API: no copy */
		resp = MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_PERSISTENT);
	}
	if (!resp)
		return -ENOMEM;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, f->etag);
	/* revalidated at every load: a new release's files are never mixed with old ones */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "Content-Security-Policy", CSP);
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	return api_queue(req, status, resp, status == 304 ? NULL : f->type);
}
