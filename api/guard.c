/* Abuse limits of the REST server: see guard.h.
 *
 * The deadline is enforced by a reaper thread that shuts down (never closes) the socket of a
 * connection past it; libmicrohttpd then sees the connection fail and closes it itself.  The
 * reaper and libmicrohttpd's CLOSED notification hold the same lock, and libmicrohttpd closes a
 * socket only after that notification, so the reaper never touches a descriptor that may have
 * been reused. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/guard.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/timeutil.h"

/* Client addresses kept; beyond it the idle ones (no connection, bucket full) are forgotten,
 * and the table may grow to twice the clients still active before it is pruned again. */
#define GUARD_CLIENTS_MAX 16384
#define CLIENT_ADDR_LEN GUARD_ADDR_LEN
#define GUARD_LOG_WINDOW_NS (10 * NSEC_PER_SEC)

struct guard_conn {
	struct guard_conn *prev, *next;
	int fd;
	bool reading; /* waiting for (the rest of) a request: the deadline runs */
	bool reaped;
	int64_t t_ref; /* accept, or the end of the previous answer (monotonic ns) */
	char addr[CLIENT_ADDR_LEN];
};

/* What is known of one client address. */
struct client {
	char addr[CLIENT_ADDR_LEN];
	unsigned conns; /* open */
	double tokens;	 /* of its rate bucket */
	int64_t t;	 /* of the last refill, monotonic ns */
	uint64_t unread; /* bytes of answers built for it and not yet taken */
};

struct guard {
	struct guard_conf c;

	pthread_mutex_t lock; /* the connection list and the buckets */
	struct guard_conn head;
	struct hmap clients; /* address -> struct client */
	size_t prune_at;     /* clients.len that makes the next new client prune the table */

	pthread_t reaper;
	pthread_cond_t stop_cond;
	bool stop, reaper_started;

	atomic_uint_least64_t started, refused, open, reaped, rate_limited;
	atomic_bool closing; /* guard_close: every new connection refused */
	atomic_uint_least64_t messages, messages_dropped;

	pthread_mutex_t log_lock;
	int64_t log_window;
	unsigned log_lines;
	uint64_t log_dropped; /* in the current window */
};

static struct client *client_get(struct guard *g, const char *addr, int64_t now);

/* The client's address as the limits count it: an IPv4 address, or an IPv6 /64 (one host's
 * share of a subnet: a client holding a /64 has 2^64 addresses to spread its connections). */
static void addr_string(const struct sockaddr *sa, char out[CLIENT_ADDR_LEN])
{
	out[0] = '\0';
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, CLIENT_ADDR_LEN);
	} else if (sa->sa_family == AF_INET6) {
		struct in6_addr a = ((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(&a)) {
			inet_ntop(AF_INET, &a.s6_addr[12], out, CLIENT_ADDR_LEN);
			return;
		}
		memset(&a.s6_addr[8], 0, 8);
		if (inet_ntop(AF_INET6, &a, out, CLIENT_ADDR_LEN - 3))
			strcat(out, "/64");
	}
}

/* --- the reaper ---------------------------------------------------------------------------- */

static int64_t reap_period(const struct guard *g)
{
	int64_t p = g->c.request_timeout_ns / 4;

	if (p > NSEC_PER_SEC)
		p = NSEC_PER_SEC;
	if (p < 50 * NSEC_PER_MSEC)
		p = 50 * NSEC_PER_MSEC;
	return p;
}

static void *reaper_main(void *arg)
{
	struct guard *g = arg;
	int64_t period = reap_period(g);

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec until;
		int64_t now = tu_mono_ns();

		for (struct guard_conn *c = g->head.next; c != &g->head; c = c->next) {
			if (!c->reading || c->reaped || now - c->t_ref < g->c.request_timeout_ns)
				continue;
			c->reaped = true;
			shutdown(c->fd, SHUT_RDWR);
			atomic_fetch_add(&g->reaped, 1);
			log_debug("api", "closing a connection from %s: no complete request within %.1f s",
				  c->addr, (double)g->c.request_timeout_ns / NSEC_PER_SEC);
		}
		/* the condition variable uses CLOCK_MONOTONIC (guard_new) */
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += period % NSEC_PER_SEC;
		until.tv_sec += period / NSEC_PER_SEC + until.tv_nsec / NSEC_PER_SEC;
		until.tv_nsec %= NSEC_PER_SEC;
		pthread_cond_timedwait(&g->stop_cond, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int guard_new(const struct guard_conf *c, struct guard **ret)
{
	struct guard *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return -ENOMEM;
	g->c = *c;
	g->head.next = g->head.prev = &g->head;
	hmap_init(&g->clients);
	g->prune_at = GUARD_CLIENTS_MAX;
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->log_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->stop_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (c->request_timeout_ns > 0) {
		if (pthread_create(&g->reaper, NULL, reaper_main, g) != 0) {
			guard_free(g);
			return -EAGAIN;
		}
		g->reaper_started = true;
	}
	*ret = g;
	return 0;
}

void guard_free(struct guard *g)
{
	size_t it = 0;
	void *v;

	if (!g)
		return;
	if (g->reaper_started) {
		pthread_mutex_lock(&g->lock);
		g->stop = true;
		pthread_cond_signal(&g->stop_cond);
		pthread_mutex_unlock(&g->lock);
		pthread_join(g->reaper, NULL);
	}
	/* libmicrohttpd has closed every connection; anything left is a leak of its own */
	while (g->head.next != &g->head) {
		struct guard_conn *c = g->head.next;

		g->head.next = c->next;
		free(c);
	}
	while (hmap_next(&g->clients, &it, NULL, &v))
		free(v);
	hmap_fini(&g->clients);
	pthread_cond_destroy(&g->stop_cond);
	pthread_mutex_destroy(&g->log_lock);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* --- libmicrohttpd callbacks ------------------------------------------------------------------ */

enum MHD_Result guard_accept_cb(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct guard *g = cls;
	char a[CLIENT_ADDR_LEN];
	struct client *cl;
	bool ok = true;

	(void)addrlen;
	if (atomic_load(&g->closing))
		return MHD_NO;
	if (!g->c.max_client_conns)
		return MHD_YES;
	/* Counted when the connection starts (guard_connection_cb): the accepting threads may
	 * let a few more through than the limit, never many. */
	addr_string(addr, a);
	pthread_mutex_lock(&g->lock);
	cl = hmap_get(&g->clients, a);
	if (cl && cl->conns >= g->c.max_client_conns)
		ok = false;
	pthread_mutex_unlock(&g->lock);
	if (ok)
		return MHD_YES;
	atomic_fetch_add(&g->refused, 1);
	return MHD_NO;
}

void guard_close(struct guard *g)
{
	atomic_store(&g->closing, true);
}

void guard_connection_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe)
{
	struct guard *g = cls;
	struct guard_conn *c = *socket_context;
	struct client *cl;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ad =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		atomic_fetch_add(&g->started, 1);
		atomic_fetch_add(&g->open, 1);
		c = calloc(1, sizeof(*c));
		if (!c || !fd) { /* untracked: no deadline for it, and no rate bucket */
			free(c);
			*socket_context = NULL;
			return;
		}
		c->fd = fd->connect_fd;
		c->reading = true;
		c->t_ref = tu_mono_ns();
		addr_string(ad ? ad->client_addr : NULL, c->addr);
		pthread_mutex_lock(&g->lock);
		if (c->addr[0] && (cl = client_get(g, c->addr, c->t_ref)))
			cl->conns++;
		c->next = &g->head;
		c->prev = g->head.prev;
		g->head.prev->next = c;
		g->head.prev = c;
		pthread_mutex_unlock(&g->lock);
		*socket_context = c;
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	atomic_fetch_sub(&g->open, 1);
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	if (c->addr[0] && (cl = hmap_get(&g->clients, c->addr)) && cl->conns)
		cl->conns--;
	pthread_mutex_unlock(&g->lock);
	free(c);
	*socket_context = NULL;
}

void guard_logger_cb(void *cls, const char *fmt, va_list ap)
{
	struct guard *g = cls;
	int64_t now = tu_mono_ns();
	uint64_t dropped = 0;
	bool write;
	char line[512];
	size_t n;

	atomic_fetch_add(&g->messages, 1);
	pthread_mutex_lock(&g->log_lock);
	if (now - g->log_window >= GUARD_LOG_WINDOW_NS) {
		dropped = g->log_dropped;
		g->log_window = now;
		g->log_lines = 0;
		g->log_dropped = 0;
	}
	write = g->log_lines < GUARD_LOG_BURST;
	if (write)
		g->log_lines++;
	else
		g->log_dropped++;
	pthread_mutex_unlock(&g->log_lock);
	if (dropped)
		log_notice("api", "%llu more messages of the HTTP library were not logged "
				  "(rocefab_http_server_messages_total counts them all)",
			   (unsigned long long)dropped);
	if (!write) {
		atomic_fetch_add(&g->messages_dropped, 1);
		return;
	}
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	log_info("api", "libmicrohttpd: %s", line);
}

/* --- per request --------------------------------------------------------------------------- */

struct guard_conn *guard_conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

void guard_request_read(struct guard *g, struct guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->reading = false;
	pthread_mutex_unlock(&g->lock);
}

void guard_request_done(struct guard *g, struct guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->reading = true;
	c->t_ref = tu_mono_ns();
	pthread_mutex_unlock(&g->lock);
}

static double bucket_level(const struct guard *g, const struct client *cl, int64_t now)
{
	double t = cl->tokens + (double)(now - cl->t) / NSEC_PER_SEC * g->c.rate;

	return t > g->c.burst ? g->c.burst : t;
}

/* Forgets the clients with no connection and no answer held whose bucket is full again.
 * Under g->lock. */
static void clients_prune(struct guard *g, int64_t now)
{
	struct hmap keep;
	size_t it = 0;
	void *v;

	hmap_init(&keep);
	while (hmap_next(&g->clients, &it, NULL, &v)) {
		struct client *cl = v;

		if ((!cl->conns && !cl->unread && bucket_level(g, cl, now) >= g->c.burst) ||
		    hmap_put(&keep, cl->addr, cl, NULL) < 0)
			free(cl);
	}
	hmap_fini(&g->clients);
	g->clients = keep;
}

/* The client of addr, made when new; NULL without memory.  Under g->lock. */
static struct client *client_get(struct guard *g, const char *addr, int64_t now)
{
	struct client *cl = hmap_get(&g->clients, addr);

	if (cl)
		return cl;
	if (g->clients.len >= g->prune_at) {
		clients_prune(g, now);
		g->prune_at = 2 * g->clients.len > GUARD_CLIENTS_MAX ? 2 * g->clients.len
								     : GUARD_CLIENTS_MAX;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	snprintf(cl->addr, sizeof(cl->addr), "%s", addr);
	cl->tokens = g->c.burst;
	cl->t = now;
	if (hmap_put(&g->clients, cl->addr, cl, NULL) < 0) {
		free(cl);
		return NULL;
	}
	return cl;
}

bool guard_rate_take(struct guard *g, struct guard_conn *c)
{
	int64_t now = tu_mono_ns();
	struct client *cl;
	bool ok = true;

	if (g->c.rate <= 0 || !c || !c->addr[0])
		return true;
	pthread_mutex_lock(&g->lock);
	cl = client_get(g, c->addr, now);
	if (cl) { /* without memory for it the request goes through */
		cl->tokens = bucket_level(g, cl, now);
		cl->t = now;
		if (cl->tokens >= 1.0)
			cl->tokens -= 1.0;
		else
			ok = false;
	}
	pthread_mutex_unlock(&g->lock);
	if (!ok)
		atomic_fetch_add(&g->rate_limited, 1);
	return ok;
}

const char *guard_conn_addr(const struct guard_conn *c)
{
	return c && c->addr[0] ? c->addr : "?";
}

bool guard_unread_take(struct guard *g, struct guard_conn *c, uint64_t len, uint64_t limit, uint64_t *held,
		       char addr[GUARD_ADDR_LEN])
{
	struct client *cl;
	bool ok = true;

	addr[0] = '\0';
	if (!c || !c->addr[0])
		return true;
	pthread_mutex_lock(&g->lock);
	cl = client_get(g, c->addr, tu_mono_ns());
	if (cl) { /* (without memory for it the answer goes uncounted here) */
		*held = cl->unread;
		ok = cl->unread <= limit && len <= limit - cl->unread;
		if (ok) {
			cl->unread += len;
			memcpy(addr, c->addr, GUARD_ADDR_LEN);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return ok;
}

void guard_unread_put(struct guard *g, const char *addr, uint64_t len)
{
	struct client *cl;

	if (!addr[0])
		return;
	pthread_mutex_lock(&g->lock);
	if ((cl = hmap_get(&g->clients, addr))) /* (kept while it holds any: never pruned) */
		cl->unread = cl->unread > len ? cl->unread - len : 0;
	pthread_mutex_unlock(&g->lock);
}

void guard_render_metrics(struct guard *g, struct buf *out)
{

	buf_printf(out,
		   "# HELP rocefab_http_connections_open Open connections to the REST API.\n"
		   "# TYPE rocefab_http_connections_open gauge\n"
		   "rocefab_http_connections_open %llu\n"
		   "# HELP rocefab_http_connections_total Connections accepted by the REST API.\n"
		   "# TYPE rocefab_http_connections_total counter\n"
		   "rocefab_http_connections_total %llu\n"
		   "# HELP rocefab_http_connections_refused_total Connections closed at once: the "
		   "client address had api.max_client_connections open.\n"
		   "# TYPE rocefab_http_connections_refused_total counter\n"
		   "rocefab_http_connections_refused_total %llu\n"
		   "# HELP rocefab_http_connections_timed_out_total Connections closed because a "
		   "request had not arrived completely within api.request_timeout.\n"
		   "# TYPE rocefab_http_connections_timed_out_total counter\n"
		   "rocefab_http_connections_timed_out_total %llu\n"
		   "# HELP rocefab_http_rate_limited_total Requests without a valid token refused "
		   "with 429 (api.rate_limit per client address).\n"
		   "# TYPE rocefab_http_rate_limited_total counter\n"
		   "rocefab_http_rate_limited_total %llu\n"
		   "# HELP rocefab_http_server_messages_total Messages of the HTTP library (aborted "
		   "connections, refusals), logged or not.\n"
		   "# TYPE rocefab_http_server_messages_total counter\n"
		   "rocefab_http_server_messages_total %llu\n"
		   "# HELP rocefab_http_server_messages_dropped_total Messages of the HTTP library "
		   "not logged (more than %d in 10 s).\n"
		   "# TYPE rocefab_http_server_messages_dropped_total counter\n"
		   "rocefab_http_server_messages_dropped_total %llu\n",
		   (unsigned long long)atomic_load(&g->open),
		   (unsigned long long)atomic_load(&g->started),
		   (unsigned long long)atomic_load(&g->refused),
		   (unsigned long long)atomic_load(&g->reaped),
		   (unsigned long long)atomic_load(&g->rate_limited),
		   (unsigned long long)atomic_load(&g->messages), GUARD_LOG_BURST,
		   (unsigned long long)atomic_load(&g->messages_dropped));
}
