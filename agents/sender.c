/* Report delivery: see sender.h.  The HTTP is lib/httpc's; this file is the policy of what an
 * answer means for the report (stored, retry later, refused for good). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/sender.h"
#include "lib/httpc.h"

struct sender {
	struct httpc *http;
	char path[160];
};

int sender_new(const struct sender_conf *c, struct sender **ret, struct rf_err *e)
{
	int64_t ctmo = c->timeout_ns < 3 * INT64_C(1000000000) ? c->timeout_ns : 3 * INT64_C(1000000000);
	struct httpc_conf hc = { .base = c->server, .what = "agent.server", .token = c->token,
				 .ca_file = c->ca_file, .client_cert = c->client_cert,
				 .client_key = c->client_key, .user_agent = "rocefab-agent/" ROCEFAB_VERSION,
				 .timeout_ns = c->timeout_ns, .connect_timeout_ns = ctmo,
				 .max_response = 16u << 20 };
	struct sender *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	if ((r = httpc_new(&hc, &s->http, e)) < 0) {
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void sender_free(struct sender *s)
{
	if (!s)
		return;
	httpc_free(s->http);
	free(s);
}

static int post(struct sender *s, const char *agent_id, const char *what, const char *body, size_t len,
		json_t **ret_answer, struct rf_err *e)
{
	json_t *doc = NULL;
	char prefix[48];
	long status;
	bool retry;
	int r;

	if (ret_answer)
		*ret_answer = NULL;
	snprintf(s->path, sizeof(s->path), "/api/v1/agents/%s/%s", agent_id, what);
	if ((r = httpc_send(s->http, "POST", s->path, body, len, &status, &doc, e)) < 0) {
		e->err = -EAGAIN; /* unreachable: try again later */
		return -EAGAIN;
	}
	if (status >= 200 && status < 300 && ret_answer && !json_is_object(doc)) {
		/* not rocefabd (a web server's welcome page at agent.server): the report was not
		 * taken, whatever the status says, and stays to be sent again */
		json_decref(doc);
		return rf_err_set(e, -EAGAIN, "NOT_ROCEFABD", NULL,
				  "the server answered %ld without rocefabd's JSON answer: is agent.server rocefabd's "
				  "address? (the report is kept)", status);
	}
	if (status >= 200 && status < 300) {
		if (ret_answer)
			*ret_answer = doc;
		else
			json_decref(doc);
		return 0;
	}
	if (status >= 300 && status < 400) {
		/* a redirect (http to https, a proxy's): not followed with the token, and the report
		 * is not lost for it */
		json_decref(doc);
		return rf_err_set(e, -EAGAIN, "REDIRECTED", NULL,
				  "the server answered %ld (a redirect, not followed): set agent.server to rocefabd's "
				  "own address (the report is kept)", status);
	}
	retry = status >= 500 || status == 429 || status == 408;
	if (status == 404 && !strcmp(what, "pfc")) {
		json_decref(doc);
		return rf_err_set(e, -ENOENT, "NO_PFC_LANE", NULL, "rocefabd has no fast PFC lane (404)");
	}
	snprintf(prefix, sizeof(prefix), "rocefabd answered %ld: ", status);
	r = httpc_problem(e, retry ? -EAGAIN : status == 401 ? -EACCES : status == 403 ? -EPERM : -EINVAL,
			  doc, prefix, NULL, NULL);
	json_decref(doc);
	return r;
}

int sender_post(struct sender *s, const char *agent_id, bool replay, const char *body, size_t len,
		json_t **ret_answer, struct rf_err *e)
{
	return post(s, agent_id, replay ? "report?replay=true" : "report", body, len, ret_answer, e);
}

int sender_post_pfc(struct sender *s, const char *agent_id, const char *body, size_t len, struct rf_err *e)
{
	return post(s, agent_id, "pfc", body, len, NULL, e);
}
