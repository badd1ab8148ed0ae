/* The probe control channel: see internal.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agents/probe/internal.h"
#include "lib/httpd.h"
#include "lib/timeutil.h"

static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left = deadline - tu_mono_ns();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(left / 1000000 + 1));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int ctl_listen(const char *where, struct rf_err *e)
{
	struct sockaddr_storage ss = { 0 };
	bool v6 = false;
	int fd, one = 1, r;

	if ((r = net_parse_listen(where, "--listen", &ss, &v6, e)) < 0)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rf_err_set(e, -errno, "LISTEN_FAILED", where, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) < 0 ||
	    listen(fd, 16) < 0) {
		r = rf_err_set(e, -errno, "LISTEN_FAILED", where, "cannot listen: %s", strerror(errno));
		close(fd);
		return r;
	}
	return fd;
}

int ctl_accept(int lfd, int64_t timeout_ns, struct ctl *c)
{
	int r = wait_fd(lfd, POLLIN, tu_mono_ns() + timeout_ns), fd, one = 1;

	if (r < 0)
		return r;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*c = (struct ctl){ .fd = fd };
	return 0;
}

int ctl_connect(const char *host, unsigned port, int64_t timeout_ns, struct ctl *c, struct rf_err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	char ports[16];
	int64_t deadline = tu_mono_ns() + timeout_ns;
	int r, last = -ECONNREFUSED;

	snprintf(ports, sizeof(ports), "%u", port);
	r = getaddrinfo(host, ports, &hints, &res);
	if (r)
		return rf_err_set(e, -EHOSTUNREACH, "UNKNOWN_HOST", host, "cannot resolve %s: %s", host,
				  gai_strerror(r));
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
		socklen_t sl = sizeof(r);

		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			last = -errno;
			close(fd);
			continue;
		}
		if ((r = wait_fd(fd, POLLOUT, deadline)) < 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &sl) < 0 || r) {
			last = r > 0 ? -r : r < 0 ? r : -ECONNREFUSED;
			close(fd);
			continue;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		*c = (struct ctl){ .fd = fd };
		freeaddrinfo(res);
		return 0;
	}
	freeaddrinfo(res);
	return rf_err_set(e, last, last == -ETIMEDOUT ? "PEER_TIMEOUT" : "PEER_UNREACHABLE", host,
			  "cannot reach rocefab-probe server %s port %u: %s", host, port, strerror(-last));
}

int ctl_send(struct ctl *c, json_t *msg, int64_t timeout_ns)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	int64_t deadline = tu_mono_ns() + timeout_ns;
	size_t len, off = 0;
	int r = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	text[len] = '\n'; /* json_dumps leaves room for the NUL we overwrite: send len + 1 */
	while (off < len + 1) {
		ssize_t n;

		if ((r = wait_fd(c->fd, POLLOUT, deadline)) < 0)
			break;
		n = send(c->fd, text + off, len + 1 - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)n;
	}
	free(text);
	return r;
}

int ctl_recv(struct ctl *c, json_t **ret, int64_t timeout_ns)
{
	int64_t deadline = tu_mono_ns() + timeout_ns;

	*ret = NULL;
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		ssize_t n;
		int r;

		if (nl) {
			size_t line = (size_t)(nl - c->buf);

			*ret = json_loadb(c->buf, line, 0, NULL);
			memmove(c->buf, nl + 1, c->len - line - 1);
			c->len -= line + 1;
			return *ret ? 0 : -EBADMSG;
		}
		if (c->len == sizeof(c->buf))
			return -EBADMSG; /* a line longer than any message of the protocol */
		if ((r = wait_fd(c->fd, POLLIN, deadline)) < 0)
			return r;
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		c->len += (size_t)n;
	}
}

bool ctl_readable(struct ctl *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	return memchr(c->buf, '\n', c->len) || poll(&pfd, 1, timeout_ms) > 0;
}

void ctl_close(struct ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}
