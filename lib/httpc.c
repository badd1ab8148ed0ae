/* JSON-over-HTTP client: see httpc.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "lib/buf.h"
#include "lib/httpc.h"

struct httpc {
	CURL *curl;
	struct curl_slist *headers, *body_headers;
	char *base;
	char url[2048];
	struct buf resp;
	size_t max_response;
	const char *unreachable_code;
	char errbuf[CURL_ERROR_SIZE]; /* curl's own words of the last failure: the TLS library's reason */
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct httpc *h = arg;
	size_t n = size * nmemb;

	if (!h->max_response || h->resp.len < h->max_response)
		buf_append(&h->resp, ptr, n);
	return n;
}

int httpc_new(const struct httpc_conf *c, struct httpc **ret, struct rf_err *e)
{
	const char *base = c->base ? c->base : "";
	int64_t tmo = c->timeout_ns > 0 ? c->timeout_ns : 30 * INT64_C(1000000000);
	int64_t ctmo = c->connect_timeout_ns > 0 ? c->connect_timeout_ns : tmo;
	struct httpc *h;
	size_t n;

	if (strncmp(base, "http://", 7) != 0 && (c->http_only || strncmp(base, "https://", 8) != 0))
		return rf_err_set(e, -EINVAL, "BAD_SERVER_URL", c->what, "'%s' must start with %s",
				  base, c->http_only ? "http://" : "http:// or https://");
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	buf_init(&h->resp);
	h->max_response = c->max_response;
	h->unreachable_code = c->unreachable_code ? c->unreachable_code : "SERVER_UNREACHABLE";
	n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	h->base = strndup(base, n);
	h->curl = curl_easy_init();
	if (!h->base || !h->curl) {
		httpc_free(h);
		return -ENOMEM;
	}
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	h->headers = curl_slist_append(NULL, "Accept: application/json");
	h->headers = curl_slist_append(h->headers, "Expect:"); /* no 100-continue round trip */
	if (c->token && *c->token) {
		char auth[320];

		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->token);
		h->headers = curl_slist_append(h->headers, auth);
	}
	for (struct curl_slist *x = h->headers; x; x = x->next)
		h->body_headers = curl_slist_append(h->body_headers, x->data);
	h->body_headers = curl_slist_append(h->body_headers, "Content-Type: application/json");
	if (!h->headers || !h->body_headers) {
		httpc_free(h);
		return -ENOMEM;
	}
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)(tmo / 1000000));
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(ctmo / 1000000));
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	if (c->user_agent)
		curl_easy_setopt(h->curl, CURLOPT_USERAGENT, c->user_agent);
	if (c->ca_file && *c->ca_file)
		curl_easy_setopt(h->curl, CURLOPT_CAINFO, c->ca_file);
	if (c->client_cert && *c->client_cert) {
		curl_easy_setopt(h->curl, CURLOPT_SSLCERT, c->client_cert);
		if (c->client_key && *c->client_key)
			curl_easy_setopt(h->curl, CURLOPT_SSLKEY, c->client_key);
	}
	*ret = h;
	return 0;
}

void httpc_free(struct httpc *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->headers);
	curl_slist_free_all(h->body_headers);
	buf_fini(&h->resp);
	free(h->base);
	free(h);
}

const char *httpc_base(const struct httpc *h)
{
	return h->base;
}

int httpc_send(struct httpc *h, const char *method, const char *path, const char *body,
	       size_t len, long *ret_status, json_t **ret_doc, struct rf_err *e)
{
	CURLcode cc;

	*ret_status = 0;
	if (ret_doc)
		*ret_doc = NULL;
	if ((size_t)snprintf(h->url, sizeof(h->url), "%s%s", h->base, path) >= sizeof(h->url))
		return rf_err_set(e, -ENAMETOOLONG, "URL_TOO_LONG", path, "the request's URL is too long");
	buf_reset(&h->resp);
	curl_easy_setopt(h->curl, CURLOPT_URL, h->url);
	if (body) {
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->body_headers);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, strcmp(method, "POST") ? method : NULL);
	} else {
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
		curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
	}
	h->errbuf[0] = '\0';
	cc = curl_easy_perform(h->curl);
	switch (cc) {
	case CURLE_OK:
		break;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		/* the server answers, but not as one we trust: said as what it is (the errno
		 * stays: an agent spools as for a server it cannot reach) */
		/* (the detail is the TLS library's: "certificate has expired", "unable to get local
		 * issuer certificate", a CA file's path; curl's summary names SSH keys) */
		return rf_err_set(e, -EHOSTUNREACH, "TLS_FAILED", h->url, "TLS: %s",
				  h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc));
	default:
		return rf_err_set(e, -EHOSTUNREACH, h->unreachable_code, h->url, "%s",
				  h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc));
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, ret_status);
	if (ret_doc && h->resp.len)
		*ret_doc = json_loadb(h->resp.data, h->resp.len, 0, NULL);
	return 0;
}

int httpc_problem(struct rf_err *e, int err, const json_t *doc, const char *prefix,
		  const char *code_else, const char *detail_else)
{
	const char *code = json_string_value(json_object_get(doc, "code"));
	const char *detail = json_string_value(json_object_get(doc, "detail"));
	const char *pointer = json_string_value(json_object_get(doc, "pointer"));

	return rf_err_set(e, err, code ? code : code_else ? code_else : "HTTP_ERROR", pointer, "%s%s",
			  prefix ? prefix : "", detail ? detail : detail_else ? detail_else : "no detail");
}

int httpc_json(struct httpc *h, const char *method, const char *path, json_t *body, json_t **ret,
	       long *ret_status, struct rf_err *e)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL, prefix[32];
	json_error_t je;
	json_t *doc;
	int r;

	if (body && !text)
		return -ENOMEM;
	r = httpc_send(h, method, path, text, text ? strlen(text) : 0, ret_status, NULL, e);
	free(text);
	if (r < 0)
		return r;
	doc = json_loadb(h->resp.data ? h->resp.data : "", h->resp.len, 0, &je);
	if (*ret_status >= 400) {
		snprintf(prefix, sizeof(prefix), "%ld ", *ret_status);
		httpc_problem(e, -EPROTO, doc, prefix, NULL, "error without detail");
		/* the field the server refused, in the message: the caller's where is its own (a
		 * server, a file), not a JSON pointer into what it sent */
		if (e->where[0] && strcmp(e->where, "/")) {
			size_t n = strlen(e->msg);

			snprintf(e->msg + n, sizeof(e->msg) - n, " (at %s)", e->where);
		}
		e->where[0] = '\0';
		json_decref(doc);
		return -EPROTO;
	}
	if (!doc)
		return rf_err_set(e, -EBADMSG, "BAD_RESPONSE", h->url, "not JSON: %s", je.text);
	*ret = doc;
	return 0;
}

void httpc_escape(const char *s, char *out, size_t len)
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
