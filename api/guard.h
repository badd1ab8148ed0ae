/* Abuse limits of the REST server, around libmicrohttpd (api/server.c wires them):
 *
 *   per client address   (an IPv4 address, or an IPv6 /64)
 *                        at most max_client_conns open connections (more are closed as
 *                        soon as they are accepted, and counted), and a token
 *                        bucket of rate requests/s (burst) for requests that carry no valid
 *                        token: the anonymous ones and the ones whose token is refused;
 *                        and the bytes of large answers built for it and not yet taken,
 *                        which the server holds to a bound (guard_unread_take)
 *   per connection       a deadline: from its accept (or from the end of its previous answer)
 *                        the whole request, head and body, must have arrived within
 *                        request_timeout.  Bytes trickled in do not extend it, unlike
 *                        libmicrohttpd's idle timeout.  A connection past it is shut down.
 *   library messages     libmicrohttpd's log lines (one per aborted connection) are counted
 *                        and at most GUARD_LOG_BURST of them are written per 10 s
 *
 * All of it is visible in /metrics (guard_render_metrics). */
#ifndef ROCEFAB_API_GUARD_H
#define ROCEFAB_API_GUARD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "lib/buf.h"

#define GUARD_LOG_BURST 5
/* A client address as the limits count it: "192.0.2.7", "2001:db8:1:2::/64". */
#define GUARD_ADDR_LEN (INET6_ADDRSTRLEN + 3)

struct guard_conf {
	unsigned max_client_conns;  /* per address; 0: no limit */
	double rate;		    /* requests/s without a valid token, per address; 0: no limit */
	unsigned burst;		    /* bucket size */
	int64_t request_timeout_ns; /* 0: no deadline */
};

struct guard;
struct guard_conn;

int guard_new(const struct guard_conf *c, struct guard **ret);
/* After MHD_stop_daemon (every connection has been closed and forgotten). */
void guard_free(struct guard *g);
/* From now on every new connection is refused (closed as it is accepted): rocefabd stopping. */
void guard_close(struct guard *g);

/* libmicrohttpd callbacks; cls is the struct guard. */
enum MHD_Result guard_accept_cb(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void guard_connection_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe);
void guard_logger_cb(void *cls, const char *fmt, va_list ap);

/* The connection's state, or NULL (a connection libmicrohttpd did not tell us about). */
struct guard_conn *guard_conn_of(struct MHD_Connection *conn);
/* c's client address as the limits count it ("?" for none). */
const char *guard_conn_addr(const struct guard_conn *c);
/* The request on c has been read completely (or answered early): its deadline stops. */
void guard_request_read(struct guard *g, struct guard_conn *c);
/* Its answer is done: the next request's deadline starts now. */
void guard_request_done(struct guard *g, struct guard_conn *c);
/* Takes one request from the bucket of the connection's address; false when it is empty. */
bool guard_rate_take(struct guard *g, struct guard_conn *c);

/* Counts len bytes of an answer built for c's address and not yet taken, unless the address
 * would then hold more than limit: false, nothing counted, and *held what it holds.  addr gets
 * the address to give the bytes back to (guard_unread_put); "" when c is not tracked (nothing
 * counted: true). */
bool guard_unread_take(struct guard *g, struct guard_conn *c, uint64_t len, uint64_t limit, uint64_t *held,
		       char addr[GUARD_ADDR_LEN]);
/* The answer of guard_unread_take's len bytes is taken, or its connection gone. */
void guard_unread_put(struct guard *g, const char *addr, uint64_t len);

void guard_render_metrics(struct guard *g, struct buf *out);

#endif
