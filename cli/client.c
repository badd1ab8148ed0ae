/* rocefabctl HTTP client: see client.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli/client.h"
#include "lib/buf.h"

struct client {
	CURL *curl;
	struct curl_slist *headers;
	char *server;
	struct buf body;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	buf_append(arg, ptr, size * nmemb);
	return size * nmemb;
}

int client_new(const char *server, const char *token, struct client **ret, struct rf_err *e)
{
	struct client *c = calloc(1, sizeof(*c));
	size_t n;

	if (!c)
		return -ENOMEM;
	buf_init(&c->body);
	if (strncmp(server, "http://", 7) != 0 && strncmp(server, "https://", 8) != 0) {
		free(c);
		return rf_err_set(e, -EINVAL, "BAD_SERVER_URL", "--server",
				  "'%s' must start with http:// or https://", server);
	}
	c->server = strdup(server);
	c->curl = curl_easy_init();
	if (!c->server || !c->curl) {
		client_free(c);
		return -ENOMEM;
	}
	n = strlen(c->server);
	while (n && c->server[n - 1] == '/')
		c->server[--n] = '\0';
	c->headers = curl_slist_append(NULL, "Accept: application/json");
	if (token && *token) {
		char auth[256];

		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		c->headers = curl_slist_append(c->headers, auth);
	}
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->body);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "rocefabctl/" ROCEFAB_VERSION);
	*ret = c;
	return 0;
}

void client_free(struct client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	buf_fini(&c->body);
	free(c->server);
	free(c);
}

void client_escape(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == ':' || ch == ',') {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

int client_get(struct client *c, const char *path, json_t **ret, long *ret_status,
	       struct rf_err *e)
{
	return client_request(c, "GET", path, NULL, ret, ret_status, e);
}

int client_request(struct client *c, const char *method, const char *path, json_t *body,
		   json_t **ret, long *ret_status, struct rf_err *e)
{
	struct curl_slist *h = NULL;
	char url[2048], *text = NULL;
	long status = 0;
	json_error_t je;
	CURLcode cc;
	json_t *doc;

	snprintf(url, sizeof(url), "%s%s", c->server, path);
	buf_reset(&c->body);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		for (struct curl_slist *x = c->headers; x; x = x->next)
			h = curl_slist_append(h, x->data);
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text ? text : "{}");
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	} else {
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
	}
	cc = curl_easy_perform(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_slist_free_all(h);
	free(text);
	if (cc != CURLE_OK)
		return rf_err_set(e, -EHOSTUNREACH, "SERVER_UNREACHABLE", c->server, "%s",
				  curl_easy_strerror(cc));
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	*ret_status = status;
	doc = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0, &je);
	if (status >= 400) {
		const char *code = json_string_value(json_object_get(doc, "code"));
		const char *detail = json_string_value(json_object_get(doc, "detail"));

		rf_err_set(e, -EPROTO, code ? code : "HTTP_ERROR", NULL, "%ld %s", status,
			   detail ? detail : "error without detail");
		json_decref(doc);
		return -EPROTO;
	}
	if (!doc)
		return rf_err_set(e, -EBADMSG, "BAD_RESPONSE", url, "not JSON: %s", je.text);
	*ret = doc;
	return 0;
}
