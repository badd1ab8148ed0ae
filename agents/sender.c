/* Report delivery with libcurl: see sender.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "agents/sender.h"
#include "lib/buf.h"

struct sender {
	CURL *curl;
	struct curl_slist *headers;
	char *base; /* the server URL without a trailing slash */
	char url[1024];
	struct buf resp;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;

	if (b->len < (16u << 20))
		buf_append(b, ptr, n);
	return n;
}

int sender_new(const struct sender_conf *c, struct sender **ret, struct rf_err *e)
{
	struct sender *s = calloc(1, sizeof(*s));
	char auth[128];
	size_t n;

	if (!s)
		return -ENOMEM;
	buf_init(&s->resp);
	if (strncmp(c->server, "http://", 7) != 0 && strncmp(c->server, "https://", 8) != 0) {
		free(s);
		return rf_err_set(e, -EINVAL, "BAD_SERVER_URL", "agent.server",
				  "'%s' must start with http:// or https://", c->server);
	}
	n = strlen(c->server);
	while (n && c->server[n - 1] == '/')
		n--;
	s->base = strndup(c->server, n);
	s->curl = curl_easy_init();
	if (!s->base || !s->curl) {
		sender_free(s);
		return -ENOMEM;
	}
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->token ? c->token : "");
	s->headers = curl_slist_append(s->headers, "Content-Type: application/json");
	s->headers = curl_slist_append(s->headers, "Expect:");
	if (c->token)
		s->headers = curl_slist_append(s->headers, auth);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->headers);
	curl_easy_setopt(s->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ns / 1000000));
	curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(c->timeout_ns / 1000000 < 3000 ? c->timeout_ns / 1000000 : 3000));
	curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, &s->resp);
	curl_easy_setopt(s->curl, CURLOPT_USERAGENT, "rocefab-agent/" ROCEFAB_VERSION);
	if (c->ca_file && *c->ca_file)
		curl_easy_setopt(s->curl, CURLOPT_CAINFO, c->ca_file);
	*ret = s;
	return 0;
}

void sender_free(struct sender *s)
{
	if (!s)
		return;
	if (s->curl)
		curl_easy_cleanup(s->curl);
	curl_slist_free_all(s->headers);
	buf_fini(&s->resp);
	free(s->base);
	free(s);
}

int sender_post(struct sender *s, const char *agent_id, const char *body, size_t len,
		json_t **ret_answer, struct rf_err *e)
{
	long status = 0;
	CURLcode cc;

	if (ret_answer)
		*ret_answer = NULL;
	snprintf(s->url, sizeof(s->url), "%s/api/v1/agents/%s/report", s->base, agent_id);
	curl_easy_setopt(s->curl, CURLOPT_URL, s->url);
	buf_reset(&s->resp);
	curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	cc = curl_easy_perform(s->curl);
	if (cc != CURLE_OK)
		return rf_err_set(e, -EAGAIN, "SERVER_UNREACHABLE", s->url, "%s",
				  curl_easy_strerror(cc));
	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300) {
		if (ret_answer && s->resp.len)
			*ret_answer = json_loadb(s->resp.data, s->resp.len, 0, NULL);
		return 0;
	}
	{
		json_t *p = s->resp.data ? json_loads(s->resp.data, 0, NULL) : NULL;
		const char *code = json_string_value(json_object_get(p, "code"));
		const char *detail = json_string_value(json_object_get(p, "detail"));
		const char *pointer = json_string_value(json_object_get(p, "pointer"));
		bool retry = status >= 500 || status == 429 || status == 408;
		int r = rf_err_set(e, retry ? -EAGAIN : (status == 401 || status == 403 ? -EACCES : -EINVAL),
				   code ? code : "HTTP_ERROR", pointer,
				   "rocefabd answered %ld: %s", status, detail ? detail : "no detail");

		json_decref(p);
		return r;
	}
}
