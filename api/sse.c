/* GET /api/v1/events: server-sent events (alerts, changes, proposals) from daemon/events.
 *
 * A stream is a response of unknown length whose content reader copies the events not yet
 * sent; when there are none it suspends its connection (libmicrohttpd then neither polls nor
 * times it out) and returns 0.  A publish resumes every suspended stream; so does a keepalive
 * tick every SSE_KEEPALIVE, which writes a comment: that is how a client that went away is
 * found (a suspended connection sees no disconnect), and it keeps idle proxies and
 * api.connection_timeout from closing a quiet stream.  At shutdown every stream is resumed and
 * ends, before libmicrohttpd stops (it must not stop with a connection suspended). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "daemon/events.h"
#include "lib/log.h"
#include "lib/timeutil.h"

#define SSE_KEEPALIVE_S 15
#define SSE_CHUNK (64u << 10)

struct sse_stream {
	struct sse_hub *hub;
	struct MHD_Connection *conn;
	uint64_t last;	  /* seq of the last event sent */
	bool reset;	  /* tell the client to reload before the next events */
	bool keepalive;	  /* a comment is due */
	bool suspended;
	struct buf pend;  /* rendered, not yet handed to libmicrohttpd */
	size_t off;
	struct sse_stream *prev, *next;
	struct api *api;
	char *token;	  /* the stream's bearer token, checked again before what it sends (NULL: none) */
	char name[65];	  /* its name */
	enum role need;
};

struct sse_hub {
	struct events *ev;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sse_stream *head;
	unsigned n;
	uint64_t opened, resets;
	bool stopping;
	bool thread_running;
	pthread_t thread;
};

static void resume_all(struct sse_hub *h, bool keepalive)
{
	for (struct sse_stream *s = h->head; s; s = s->next) {
		if (keepalive)
			s->keepalive = true;
		if (s->suspended) {
			s->suspended = false;
			MHD_resume_connection(s->conn);
		}
	}
}

static void on_publish(void *ctx)
{
	struct sse_hub *h = ctx;

	pthread_mutex_lock(&h->lock);
	resume_all(h, false);
	pthread_mutex_unlock(&h->lock);
}

static void *keepalive_main(void *arg)
{
	struct sse_hub *h = arg;

	pthread_mutex_lock(&h->lock);
	while (!h->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += SSE_KEEPALIVE_S;
		if (pthread_cond_timedwait(&h->cond, &h->lock, &until) == ETIMEDOUT && !h->stopping)
			resume_all(h, true);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int sse_hub_new(struct events *ev, struct sse_hub **ret)
{
	struct sse_hub *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;

	if (!h)
		return -ENOMEM;
	h->ev = ev;
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&h->thread, NULL, keepalive_main, h) != 0) {
		sse_hub_free(h);
		return -EAGAIN;
	}
	h->thread_running = true;
	events_set_wake(ev, on_publish, h);
	*ret = h;
	return 0;
}

void sse_hub_stop(struct sse_hub *h)
{
	if (!h)
		return;
	events_set_wake(h->ev, NULL, NULL);
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	resume_all(h, false);
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	if (h->thread_running) {
		pthread_join(h->thread, NULL);
		h->thread_running = false;
	}
}

void sse_hub_free(struct sse_hub *h)
{
	if (!h)
		return;
	sse_hub_stop(h);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void sse_render_metrics(struct sse_hub *h, struct buf *out)
{
	unsigned n;
	uint64_t opened, resets;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	n = h->n;
	opened = h->opened;
	resets = h->resets;
	pthread_mutex_unlock(&h->lock);
	buf_printf(out,
		   "# HELP rocefab_events_streams Open event streams (GET /api/v1/events).\n"
		   "# TYPE rocefab_events_streams gauge\nrocefab_events_streams %u\n"
		   "# HELP rocefab_events_streams_opened_total Event streams opened.\n"
		   "# TYPE rocefab_events_streams_opened_total counter\n"
		   "rocefab_events_streams_opened_total %llu\n"
		   "# HELP rocefab_events_resets_total Streams told to reload: the event they "
		   "resumed from was of another run or no longer kept.\n"
		   "# TYPE rocefab_events_resets_total counter\nrocefab_events_resets_total %llu\n",
		   n, (unsigned long long)opened, (unsigned long long)resets);
}

/* Renders what is due into s->pend (under the hub's lock). */
static void fill(struct sse_stream *s)
{
	struct sse_hub *h = s->hub;
	int r;

	if (!s->reset) {
		r = events_since(h->ev, s->last, SSE_CHUNK, &s->pend, &s->last);
		if (r == -ESTALE)
			s->reset = true;
	}
	if (s->reset) {
		char id[64];

		s->reset = false;
		s->last = events_last(h->ev);
		h->resets++;
		/* with the id of the newest event: a client that reconnects after it resumes from
		 * there, and is not told to reset again */
		events_format_id(h->ev, s->last, id, sizeof(id));
		buf_printf(&s->pend, "id: %s\nevent: reset\ndata: {\"last\":%llu}\n\n", id,
			   (unsigned long long)s->last);
	}
	if (!s->pend.len && s->keepalive)
		buf_puts(&s->pend, ": keepalive\n\n");
	s->keepalive = false;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct sse_stream *s = cls;
	struct sse_hub *h = s->hub;
	size_t n;

	(void)pos;
	/* a token revoked (or its role lowered) while its stream is open: the stream ends (a
	 * client that comes back gets 401); checked on each read, through the token cache */
	if (s->token && !api_token_allows(s->api, s->token, s->need)) {
		log_info("api", "an event stream of token '%s' ends: the token is revoked", s->name);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_lock(&h->lock);
	if (s->off == s->pend.len) {
		buf_reset(&s->pend);
		s->off = 0;
		if (!h->stopping)
			fill(s);
	}
	if (s->off < s->pend.len) {
		n = s->pend.len - s->off < max ? s->pend.len - s->off : max;
		memcpy(out, s->pend.data + s->off, n);
		s->off += n;
		pthread_mutex_unlock(&h->lock);
		return (ssize_t)n;
	}
	if (h->stopping || s->pend.oom) {
		pthread_mutex_unlock(&h->lock);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	s->suspended = true;
	MHD_suspend_connection(s->conn);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static void sse_free(void *cls)
{
	struct sse_stream *s = cls;
	struct sse_hub *h = s->hub;

	pthread_mutex_lock(&h->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		h->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	h->n--;
	pthread_mutex_unlock(&h->lock);
	buf_fini(&s->pend);
	free(s->token);
	free(s);
}

int h_events(struct api_req *req)
{
	struct sse_hub *h = api_sse_hub(req);
	const char *last_id = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
							  "Last-Event-ID");
	struct MHD_Response *resp;
	struct sse_stream *s;
	struct rf_err e;

	if (!h) {
		rf_err_set(&e, -EAGAIN, "NO_EVENTS", NULL, "the event stream is not running");
		return api_reply_problem(req, 503, &e);
	}
	/* HEAD: the headers only (a stream of unknown length would still end with a chunk) */
	if (!strcmp(req->method, "HEAD"))
		return api_queue(req, 200, MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT),
				 "text/event-stream");
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->hub = h;
	s->conn = req->conn;
	s->api = req->api;
	s->need = (enum role)req->route->need_role;
	snprintf(s->name, sizeof(s->name), "%s", req->token_name);
	if (req->token_valid && !(s->token = strdup(api_bearer(req)))) {
		free(s);
		return -ENOMEM;
	}
	buf_init(&s->pend);
	/* the retry delay for EventSource clients, and a first line so that the client knows
	 * the stream is open */
	buf_puts(&s->pend, "retry: 3000\n: rocefab events: alert, change, proposal, cc\n\n");
	if (last_id && *last_id)
		s->reset = events_parse_id(h->ev, last_id, &s->last) < 0;
	else
		s->last = events_last(h->ev);
	pthread_mutex_lock(&h->lock);
	if (h->stopping) {
		pthread_mutex_unlock(&h->lock);
		buf_fini(&s->pend);
		free(s->token);
		free(s);
		rf_err_set(&e, -ESHUTDOWN, "SHUTTING_DOWN", NULL, "rocefabd is stopping");
		return api_reply_problem(req, 503, &e);
	}
	s->next = h->head;
	if (h->head)
		h->head->prev = s;
	h->head = s;
	h->n++;
	h->opened++;
	pthread_mutex_unlock(&h->lock);
	/* from here on the stream is freed by sse_free, when libmicrohttpd is done with it */
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, s, sse_free);
	if (!resp) {
		sse_free(s);
		return -ENOMEM;
	}
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	return api_queue(req, 200, resp, "text/event-stream");
}
