/* Prometheus remote-write: see rwrite.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <snappy-c.h>

#include "daemon/codec.h"
#include "daemon/rwrite.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/timeutil.h"

#define BACKOFF_MIN_NS (500 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (30 * NSEC_PER_SEC)
#define FLUSH_NS NSEC_PER_SEC
#define PENDING_MAX (256u << 20) /* samples waiting in memory beyond this are dropped */
#define ANSWER_MAX 512

struct qfile {
	uint64_t seq;
	uint32_t n;
	uint64_t bytes;
};

struct target {
	struct rwrite *rw;
	char *url, *dir;
	pthread_t thread;
	bool started;

	pthread_mutex_t lock; /* pending, stop, st */
	pthread_cond_t cond;
	struct buf pending;
	size_t pending_n;
	bool stop;
	struct rwrite_stats st;

	/* the queue on disk: the thread's */
	struct qfile *q;
	size_t nq, capq;
	uint64_t next_seq;
	int64_t backoff_ns, next_try_ns; /* monotonic */
	int64_t rejected_logged_ns;
	int64_t spill_at; /* monotonic: when a request in flight writes the samples waiting */
	struct buf spill_buf;
	CURL *curl;
};

struct rwrite {
	bool curl_init;
	struct rwrite_conf c;
	struct target *t;
	size_t nt;
};

/* --- the protocol ------------------------------------------------------------------------ */

static size_t vlen(uint64_t v)
{
	size_t n = 1;

	while (v > 0x7f) {
		v >>= 7;
		n++;
	}
	return n;
}

static int put_len(struct buf *b, uint8_t tag, const char *s, size_t len)
{
	int r = buf_append(b, &tag, 1);

	if (r == 0)
		r = codec_put_varint(b, len);
	if (r == 0)
		r = buf_append(b, s, len);
	return r;
}

/* WriteRequest { repeated TimeSeries timeseries = 1; }
 * TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
 * Label { string name = 1; string value = 2; }  Sample { double value = 1; int64 timestamp = 2; } */
int rwrite_series(struct buf *out, const char *const *labels, size_t nlabels, double value,
		  int64_t t_ns)
{
	uint64_t ts = (uint64_t)(t_ns / NSEC_PER_MSEC);
	size_t sample_len = 1 + 8 + 1 + vlen(ts), ts_len = 1 + vlen(sample_len) + sample_len;
	uint8_t tag = 0x0a, f64[9] = { 0x09 };
	uint64_t bits;
	int r;

	for (size_t i = 0; i < nlabels; i++) {
		size_t n = strlen(labels[2 * i]), v = strlen(labels[2 * i + 1]);
		size_t l = 1 + vlen(n) + n + 1 + vlen(v) + v;

		ts_len += 1 + vlen(l) + l;
	}
	r = buf_append(out, &tag, 1);
	if (r == 0)
		r = codec_put_varint(out, ts_len);
	for (size_t i = 0; r == 0 && i < nlabels; i++) {
		size_t n = strlen(labels[2 * i]), v = strlen(labels[2 * i + 1]);

		r = buf_append(out, &tag, 1);
		if (r == 0)
			r = codec_put_varint(out, 1 + vlen(n) + n + 1 + vlen(v) + v);
		if (r == 0)
			r = put_len(out, 0x0a, labels[2 * i], n);
		if (r == 0)
			r = put_len(out, 0x12, labels[2 * i + 1], v);
	}
	memcpy(&bits, &value, sizeof(bits));
	for (int i = 0; i < 8; i++)
		f64[1 + i] = (uint8_t)(bits >> (8 * i));
	if (r == 0)
		r = buf_append(out, &(uint8_t){ 0x12 }, 1);
	if (r == 0)
		r = codec_put_varint(out, sample_len);
	if (r == 0)
		r = buf_append(out, f64, sizeof(f64));
	if (r == 0)
		r = buf_append(out, &(uint8_t){ 0x10 }, 1);
	if (r == 0)
		r = codec_put_varint(out, ts);
	return r;
}

/* The end of the record (one TimeSeries) at p, or NULL. */
static const uint8_t *record_end(const uint8_t *p, const uint8_t *end)
{
	uint64_t len;

	if (p >= end || *p != 0x0a)
		return NULL;
	p++;
	if (codec_get_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
		return NULL;
	return p + len;
}

/* (credentials end at the last '@' before the query: a password may hold '/'; the query is
 * left out, as it may hold a token) */
static void redact_n(const char *url, size_t n, char *out, size_t len)
{
	const char *s = memmem(url, n, "://", 3), *end = url + n, *host, *p, *q;

	if (!s) {
		snprintf(out, len, "(a URL)");
		return;
	}
	s += 3;
	host = s;
	for (p = s; p < end && *p != '?' && *p != '#'; p++)
		if (*p == '@')
			host = p + 1;
	for (p = host; p < end && *p != '/' && *p != '?' && *p != '#'; p++)
		;
	for (q = p; q < end && *q != '?' && *q != '#'; q++)
		;
	snprintf(out, len, "%.*s%.*s%s", (int)(s - url), url, (int)(q - host), host,
		 q < end ? "?..." : "");
}

void rwrite_redact(const char *url, char *out, size_t len)
{
	redact_n(url, strlen(url), out, len);
}

struct check_ctx {
	struct rf_err *e;
	char seen[64][256]; /* without credentials: a queue each */
	size_t n;
};

static int check_one(const char *u, size_t n, struct check_ctx *c)
{
	const char *host;
	char shown[256];

	redact_n(u, n, shown, sizeof(shown));
	if (n >= 7 && !strncmp(u, "http://", 7))
		host = u + 7;
	else if (n >= 8 && !strncmp(u, "https://", 8))
		host = u + 8;
	else
		return rf_err_set(c->e, -EINVAL, "BAD_REMOTE_WRITE_URL", "remote_write.urls",
				  "remote_write.urls: '%s' is not an http:// or https:// URL", shown);
	if (memchr(host, '@', n - (size_t)(host - u)))
		host = (const char *)memrchr(host, '@', n - (size_t)(host - u)) + 1;
	if (host == u + n || *host == '/' || *host == ':' || *host == '?' || memchr(u, ' ', n))
		return rf_err_set(c->e, -EINVAL, "BAD_REMOTE_WRITE_URL", "remote_write.urls",
				  "remote_write.urls: '%s' names no host", shown);
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->seen[i], shown))
			return rf_err_set(c->e, -EINVAL, "BAD_REMOTE_WRITE_URL", "remote_write.urls",
					  "remote_write.urls: '%s' is listed twice", shown);
	if (c->n == 64)
		return rf_err_set(c->e, -EINVAL, "BAD_REMOTE_WRITE_URL", "remote_write.urls",
				  "remote_write.urls: more than 64 URLs");
	snprintf(c->seen[c->n++], sizeof(c->seen[0]), "%s", shown);
	return 0;
}

/* Calls fn for each URL of the list (trimmed, non-empty). */
static int each_url(const char *urls, int (*fn)(const char *u, size_t n, void *ctx), void *ctx)
{
	const char *p = urls ? urls : "";

	while (*p) {
		const char *end = strchr(p, ',');
		size_t n;
		int r;

		if (!end)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		n = (size_t)(end - p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n && (r = fn(p, n, ctx)) < 0)
			return r;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int check_fn(const char *u, size_t n, void *ctx)
{
	return check_one(u, n, ctx);
}

int rwrite_check(const char *urls, struct rf_err *e)
{
	struct check_ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->e = e;
	r = each_url(urls, check_fn, c);
	free(c);
	return r;
}

/* --- the queue on disk -------------------------------------------------------------------- */

static void qpath(const struct target *t, const struct qfile *f, char *out, size_t len)
{
	snprintf(out, len, "%s/%020" PRIu64 "-%" PRIu32 ".req", t->dir, f->seq, f->n);
}

static void set_queue_stats(struct target *t)
{
	uint64_t bytes = 0, n = 0;

	for (size_t i = 0; i < t->nq; i++) {
		bytes += t->q[i].bytes;
		n += t->q[i].n;
	}
	pthread_mutex_lock(&t->lock);
	t->st.queue_bytes = bytes;
	t->st.queue_samples = n;
	pthread_mutex_unlock(&t->lock);
}

static void q_drop_oldest(struct target *t, bool full)
{
	char path[4096];

	qpath(t, &t->q[0], path, sizeof(path));
	unlink(path);
	pthread_mutex_lock(&t->lock);
	if (full)
		t->st.dropped_full += t->q[0].n;
	else
		t->st.dropped_rejected += t->q[0].n;
	pthread_mutex_unlock(&t->lock);
	memmove(&t->q[0], &t->q[1], (t->nq - 1) * sizeof(*t->q));
	t->nq--;
}

/* The oldest requests go while the queue is over its bound. */
static void q_bound(struct target *t)
{
	uint64_t bytes = 0, dropped = 0;

	for (size_t i = 0; i < t->nq; i++)
		bytes += t->q[i].bytes;
	while (t->nq && bytes > t->rw->c.max_queue_bytes) {
		bytes -= t->q[0].bytes;
		dropped += t->q[0].n;
		q_drop_oldest(t, true);
	}
	if (dropped)
		log_warning("remote-write", "%s: the queue is over remote_write.max_queue_bytes "
					    "(%" PRIu64 " bytes); dropped its oldest %" PRIu64 " samples%s",
			    t->st.url, t->rw->c.max_queue_bytes, dropped,
			    t->nq ? "" : " (one request is larger than the bound: lower remote_write.batch)");
	if (dropped) {
		pthread_mutex_lock(&t->lock);
		t->st.last_dropped_ns = tu_now_ns();
		pthread_mutex_unlock(&t->lock);
	}
	set_queue_stats(t);
}

static int q_reserve(struct target *t)
{
	size_t cap;
	struct qfile *q;

	if (t->nq < t->capq)
		return 0;
	cap = t->capq ? t->capq * 2 : 64;
	if (!(q = realloc(t->q, cap * sizeof(*q))))
		return -ENOMEM;
	t->q = q;
	t->capq = cap;
	return 0;
}

static int q_add(struct target *t, const void *data, size_t len, uint32_t n)
{
	struct qfile f = { .seq = t->next_seq++, .n = n, .bytes = len };
	char path[4096], tmp[4120];
	int fd, r = 0;

	if (q_reserve(t) < 0)
		return -ENOMEM;
	qpath(t, &f, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && r == 0;) {
		ssize_t w = write(fd, (const char *)data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r = w < 0 ? -errno : -EIO;
		else
			off += (size_t)w;
	}
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	t->q[t->nq++] = f;
	return 0;
}

static int qfile_cmp(const void *a, const void *b)
{
	const struct qfile *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The requests a run before left (a restart loses none of them). */
static int q_load(struct target *t)
{
	DIR *d = opendir(t->dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct qfile f;
		char path[4096], end[8];
		struct stat sb;

		snprintf(path, sizeof(path), "%s/%s", t->dir, de->d_name);
		if (strlen(de->d_name) > 4 && !strcmp(de->d_name + strlen(de->d_name) - 4, ".tmp")) {
			unlink(path); /* a request being written when the last run stopped */
			continue;
		}
		if (sscanf(de->d_name, "%20" SCNu64 "-%" SCNu32 "%7s", &f.seq, &f.n, end) != 3 ||
		    strcmp(end, ".req") != 0)
			continue;
		if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		f.bytes = (uint64_t)sb.st_size;
		if (q_reserve(t) < 0) {
			closedir(d);
			return -ENOMEM;
		}
		t->q[t->nq++] = f;
		if (f.seq >= t->next_seq)
			t->next_seq = f.seq + 1;
	}
	closedir(d);
	qsort(t->q, t->nq, sizeof(*t->q), qfile_cmp);
	if (t->nq)
		log_info("remote-write", "%s: %zu requests queued by the last run resume", t->st.url,
			 t->nq);
	return 0;
}

/* Samples from memory into requests of at most batch samples on disk. */
static void spill(struct target *t, const struct buf *b)
{
	const uint8_t *p = (const uint8_t *)b->data, *end = p + b->len;
	char *z = NULL;
	size_t zcap = 0;

	while (p < end) {
		const uint8_t *start = p, *next;
		uint32_t n = 0;
		size_t zlen;
		int r;

		while (p < end && n < t->rw->c.batch && (next = record_end(p, end))) {
			p = next;
			n++;
		}
		if (n == 0)
			break; /* (cannot be: rwrite_series wrote them) */
		zlen = snappy_max_compressed_length((size_t)(p - start));
		if (zlen > zcap) {
			char *nz = realloc(z, zlen);

			if (!nz) {
				r = -ENOMEM;
				goto failed;
			}
			z = nz;
			zcap = zlen;
		}
		if (snappy_compress((const char *)start, (size_t)(p - start), z, &zlen) != SNAPPY_OK) {
			r = -EIO;
			goto failed;
		}
		if ((r = q_add(t, z, zlen, n)) == 0)
			continue;
failed:
		log_warning("remote-write", "%s: cannot queue %" PRIu32 " samples in %s: %s; dropped",
			    t->st.url, n, t->dir, strerror(-r));
		pthread_mutex_lock(&t->lock);
		t->st.dropped_full += n;
		pthread_mutex_unlock(&t->lock);
	}
	free(z);
	q_bound(t);
}

/* --- sending ----------------------------------------------------------------------------- */

struct answer {
	char text[ANSWER_MAX];
	size_t len;
};

static size_t answer_fn(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	struct answer *a = ctx;
	size_t n = size * nmemb, room = sizeof(a->text) - 1 - a->len;

	memcpy(a->text + a->len, ptr, n < room ? n : room);
	a->len += n < room ? n : room;
	a->text[a->len] = '\0';
	return n;
}

enum sent { SENT_OK, SENT_RETRY, SENT_REJECTED };

static void spill_pending(struct target *t, struct buf *local);

static int progress_fn(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct target *t = ctx;
	int64_t now = tu_mono_ns();
	bool stop;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	pthread_mutex_lock(&t->lock);
	stop = t->stop;
	pthread_mutex_unlock(&t->lock);
	if (stop)
		return 1; /* aborts the request: it stays queued for the next run */
	if (now >= t->spill_at) {
		spill_pending(t, &t->spill_buf);
		t->spill_at = now + FLUSH_NS;
	}
	return 0;
}

static enum sent send_one(struct target *t, const struct qfile *f, char *err, size_t errlen)
{
	struct curl_slist *h = NULL;
	struct answer a = { .len = 0 };
	char path[4096], cerr[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode cc;
	FILE *fp;
	char *body;
	enum sent res;

	qpath(t, f, path, sizeof(path));
	if (!(body = malloc(f->bytes ? f->bytes : 1))) {
		snprintf(err, errlen, "out of memory");
		return SENT_RETRY;
	}
	if (!(fp = fopen(path, "rbe")) || fread(body, 1, f->bytes, fp) != f->bytes) {
		int gone = !fp && errno == ENOENT;

		snprintf(err, errlen, "cannot read %.160s: %s", path, fp ? "short file" : strerror(errno));
		if (fp)
			fclose(fp);
		free(body);
		/* a file that is gone or short never will be whole; out of files or memory: later */
		return gone || fp ? SENT_REJECTED : SENT_RETRY;
	}
	fclose(fp);
	if (!t->curl && !(t->curl = curl_easy_init())) {
		free(body);
		snprintf(err, errlen, "libcurl: out of memory");
		return SENT_RETRY;
	}
	curl_easy_reset(t->curl);
	h = curl_slist_append(h, "Content-Type: application/x-protobuf");
	h = curl_slist_append(h, "Content-Encoding: snappy");
	h = curl_slist_append(h, "X-Prometheus-Remote-Write-Version: 0.1.0");
	curl_easy_setopt(t->curl, CURLOPT_URL, t->url);
	curl_easy_setopt(t->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(t->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)f->bytes);
	curl_easy_setopt(t->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(t->curl, CURLOPT_USERAGENT, t->rw->c.user_agent);
	curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->curl, CURLOPT_TIMEOUT_MS, (long)(t->rw->c.timeout_ns / NSEC_PER_MSEC));
	curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, answer_fn);
	curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, cerr);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	/* while a request is out: new samples still go to disk, and a stop ends it */
	curl_easy_setopt(t->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(t->curl, CURLOPT_XFERINFOFUNCTION, progress_fn);
	curl_easy_setopt(t->curl, CURLOPT_XFERINFODATA, t);
	cc = curl_easy_perform(t->curl);
	if (cc == CURLE_OK)
		curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(h);
	free(body);
	for (size_t i = 0; i < a.len; i++)
		if (a.text[i] == '\n' || a.text[i] == '\r')
			a.text[i] = ' ';
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(cc));
		res = SENT_RETRY;
	} else if (status >= 200 && status < 300) {
		err[0] = '\0';
		res = SENT_OK;
	} else if (status >= 500 || status == 429) {
		snprintf(err, errlen, "HTTP %ld: %.200s", status, a.text);
		res = SENT_RETRY;
	} else if (status >= 300 && status < 400) {
		snprintf(err, errlen, "HTTP %ld: a redirect (not followed: give the receiver's own URL "
				      "in remote_write.urls)", status);
		res = SENT_RETRY;
	} else {
		snprintf(err, errlen, "HTTP %ld: %.200s", status, a.text);
		res = SENT_REJECTED;
	}
	return res;
}

static void send_oldest(struct target *t)
{
	char err[256];
	int64_t now = tu_mono_ns();
	enum sent s = send_one(t, &t->q[0], err, sizeof(err));
	bool was_failing;
	uint32_t n = t->q[0].n;

	pthread_mutex_lock(&t->lock);
	was_failing = t->st.failing_since_ns != 0;
	snprintf(t->st.last_error, sizeof(t->st.last_error), "%s", err);
	if (s == SENT_OK) {
		t->st.sent += n;
		t->st.last_success_ns = tu_now_ns();
		t->st.failing_since_ns = 0;
	} else if (s == SENT_RETRY) {
		t->st.retries++;
		t->st.failures++;
		if (!was_failing)
			t->st.failing_since_ns = tu_now_ns();
	} else {
		t->st.failures++;
		t->st.last_rejected_ns = tu_now_ns();
		snprintf(t->st.last_rejection, sizeof(t->st.last_rejection), "%s", err);
	}
	pthread_mutex_unlock(&t->lock);
	if (s == SENT_OK) {
		char path[4096];

		if (was_failing)
			log_info("remote-write", "%s: sending again", t->st.url);
		qpath(t, &t->q[0], path, sizeof(path));
		unlink(path);
		memmove(&t->q[0], &t->q[1], (t->nq - 1) * sizeof(*t->q));
		t->nq--;
		t->backoff_ns = 0;
		t->next_try_ns = 0;
	} else if (s == SENT_RETRY) {
		t->backoff_ns = t->backoff_ns ? t->backoff_ns * 2 : BACKOFF_MIN_NS;
		if (t->backoff_ns > BACKOFF_MAX_NS)
			t->backoff_ns = BACKOFF_MAX_NS;
		t->next_try_ns = now + t->backoff_ns;
		if (!was_failing)
			log_warning("remote-write", "%s: %s; keeping %zu requests queued and retrying "
						    "(backoff up to 30 s)", t->st.url, err, t->nq);
	} else {
		/* the receiver refuses the data: sending it again would not help */
		if (now - t->rejected_logged_ns > 10 * NSEC_PER_SEC || !t->rejected_logged_ns) {
			log_warning("remote-write", "%s refused %" PRIu32 " samples (%s); dropped",
				    t->st.url, n, err);
			t->rejected_logged_ns = now;
		}
		q_drop_oldest(t, false);
	}
	set_queue_stats(t);
}

/* What waits in memory to disk (the thread's, also from within a request). */
static void spill_pending(struct target *t, struct buf *local)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->pending_n;
	if (n) {
		struct buf tmp = *local;

		*local = t->pending;
		t->pending = tmp;
		buf_reset(&t->pending);
		t->pending_n = 0;
	}
	pthread_mutex_unlock(&t->lock);
	if (n) {
		spill(t, local);
		buf_reset(local);
	}
}

static void *target_main(void *arg)
{
	struct target *t = arg;
	int64_t flush_at = tu_mono_ns() + FLUSH_NS;

	for (;;) {
		bool stop, due;
		int64_t now, wake;

		pthread_mutex_lock(&t->lock);
		for (;;) {
			now = tu_mono_ns();
			wake = flush_at;
			if (t->nq && t->next_try_ns < wake)
				wake = t->next_try_ns;
			if (t->stop || wake <= now || t->pending_n >= t->rw->c.batch)
				break;
			{
				struct timespec ts = { .tv_sec = wake / NSEC_PER_SEC,
						       .tv_nsec = wake % NSEC_PER_SEC };

				pthread_cond_timedwait(&t->cond, &t->lock, &ts);
			}
		}
		stop = t->stop;
		due = stop || now >= flush_at || t->pending_n >= t->rw->c.batch;
		pthread_mutex_unlock(&t->lock);
		if (due)
			spill_pending(t, &t->spill_buf);
		t->spill_at = now + FLUSH_NS;
		if (now >= flush_at)
			flush_at = now + FLUSH_NS;
		if (stop)
			break;
		if (t->nq && tu_mono_ns() >= t->next_try_ns)
			send_oldest(t);
	}
	buf_fini(&t->spill_buf);
	return NULL;
}

/* --- the module -------------------------------------------------------------------------- */

struct add_ctx {
	struct rwrite *rw;
	int err;
};

static int add_fn(const char *u, size_t n, void *arg)
{
	struct add_ctx *a = arg;
	struct rwrite *rw = a->rw;
	struct target *nt = realloc(rw->t, (rw->nt + 1) * sizeof(*nt)), *t;

	if (!nt)
		return -ENOMEM;
	rw->t = nt;
	t = &rw->t[rw->nt];
	*t = (struct target){ .rw = rw };
	if (!(t->url = strndup(u, n)))
		return -ENOMEM;
	rwrite_redact(t->url, t->st.url, sizeof(t->st.url));
	/* the queue by the URL without credentials: a new password keeps it */
	if (asprintf(&t->dir, "%s/%016" PRIx64, rw->c.queue_dir,
		     hash_str64(t->st.url)) < 0) {
		free(t->url);
		return -ENOMEM;
	}
	rw->nt++;
	pthread_mutex_init(&t->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&t->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	buf_init(&t->pending);
	return 0;
}

int rwrite_new(const struct rwrite_conf *c, struct rwrite **ret, struct rf_err *e)
{
	struct rwrite *rw;
	struct add_ctx a;
	int r;

	*ret = NULL;
	if ((r = rwrite_check(c->urls, e)) < 0)
		return r;
	if (!c->urls || !*c->urls)
		return 0;
	if (!(rw = calloc(1, sizeof(*rw))))
		return -ENOMEM;
	rw->c = *c;
	if (!rw->c.batch)
		rw->c.batch = 5000;
	if (!rw->c.timeout_ns)
		rw->c.timeout_ns = 30 * NSEC_PER_SEC;
	a = (struct add_ctx){ .rw = rw };
	if ((r = each_url(c->urls, add_fn, &a)) < 0) {
		rwrite_free(rw);
		return r;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rw->curl_init = true;
	if (mkdir(c->queue_dir, 0700) < 0 && errno != EEXIST) {
		r = rf_err_set(e, -errno, "REMOTE_WRITE_QUEUE", "remote_write.queue_dir",
			       "cannot create remote_write.queue_dir %s: %s", c->queue_dir,
			       strerror(errno));
		rwrite_free(rw);
		return r;
	}
	for (size_t i = 0; i < rw->nt; i++) {
		struct target *t = &rw->t[i];

		if ((mkdir(t->dir, 0700) < 0 && errno != EEXIST) || (r = q_load(t)) < 0) {
			r = rf_err_set(e, r < 0 ? r : -errno, "REMOTE_WRITE_QUEUE",
				       "remote_write.queue_dir", "cannot use the queue %s: %s", t->dir,
				       strerror(r < 0 ? -r : errno));
			rwrite_free(rw);
			return r;
		}
		q_bound(t);
		if (pthread_create(&t->thread, NULL, target_main, t) != 0) {
			rwrite_free(rw);
			return -ENOMEM;
		}
		t->started = true;
		log_info("remote-write", "sending every sample to %s (queue %s, at most %" PRIu64
					 " bytes)", t->st.url, t->dir, c->max_queue_bytes);
	}
	*ret = rw;
	return 0;
}

void rwrite_free(struct rwrite *rw)
{
	if (!rw)
		return;
	for (size_t i = 0; i < rw->nt; i++) {
		struct target *t = &rw->t[i];

		if (t->started) {
			pthread_mutex_lock(&t->lock);
			t->stop = true;
			pthread_cond_signal(&t->cond);
			pthread_mutex_unlock(&t->lock);
		}
	}
	for (size_t i = 0; i < rw->nt; i++) {
		struct target *t = &rw->t[i];

		if (t->started)
			pthread_join(t->thread, NULL);
		if (t->curl)
			curl_easy_cleanup(t->curl);
		buf_fini(&t->pending);
		pthread_mutex_destroy(&t->lock);
		pthread_cond_destroy(&t->cond);
		free(t->q);
		free(t->url);
		free(t->dir);
	}
	free(rw->t);
	if (rw->curl_init)
		curl_global_cleanup();
	free(rw);
}

void rwrite_enqueue(struct rwrite *rw, const struct buf *series, size_t nsamples)
{
	if (!rw || !nsamples)
		return;
	for (size_t i = 0; i < rw->nt; i++) {
		struct target *t = &rw->t[i];

		pthread_mutex_lock(&t->lock);
		if (t->pending.len + series->len > PENDING_MAX ||
		    buf_append(&t->pending, series->data, series->len) < 0) {
			t->st.dropped_full += nsamples;
		} else {
			t->pending_n += nsamples;
			if (t->pending_n >= rw->c.batch)
				pthread_cond_signal(&t->cond);
		}
		pthread_mutex_unlock(&t->lock);
	}
}

size_t rwrite_targets(const struct rwrite *rw)
{
	return rw ? rw->nt : 0;
}

void rwrite_get_stats(struct rwrite *rw, size_t i, struct rwrite_stats *ret)
{
	struct target *t = &rw->t[i];

	pthread_mutex_lock(&t->lock);
	*ret = t->st;
	ret->queue_samples += t->pending_n;
	pthread_mutex_unlock(&t->lock);
}
