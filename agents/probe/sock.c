/* Kernel socket probes: UDP and TCP ping-pong (the server echoes).  The same measurement as
 * the verbs probes, for hosts without RDMA and to show what the kernel path costs. */
#include <errno.h>
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
#include "lib/timeutil.h"

int sock_server_open(enum probe_op op, const char *bind_host, int *ret_fd, unsigned *ret_port)
{
	struct addrinfo hints = { .ai_socktype = op == PROBE_UDP ? SOCK_DGRAM : SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST },
			*res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, one = 1;

	if (getaddrinfo(bind_host, "0", &hints, &res))
		return -EINVAL;
	fd = socket(res->ai_family, hints.ai_socktype | SOCK_CLOEXEC, 0);
	if (fd < 0 || (op == PROBE_TCP && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || (op == PROBE_TCP && listen(fd, 1) < 0) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		int r = -errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return r;
	}
	freeaddrinfo(res);
	*ret_fd = fd;
	*ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

static int read_full(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - tu_mono_ns();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)(left / 1000000 + 1)) <= 0)
			continue;
		n = recv(fd, buf + off, len - off, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

int sock_server_serve(enum probe_op op, int fd, struct ctl *c, uint64_t *echoed)
{
	static uint8_t buf[PROBE_MAX_SIZE + 4];
	int cfd = -1;

	if (op == PROBE_TCP) {
		struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = c->fd, .events = POLLIN } };

		/* the client connects, or gives up and says so on the control channel */
		if (poll(pfd, 2, 10000) <= 0 || !(pfd[0].revents & POLLIN))
			return 0;
		cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			return -errno;
		{
			int one = 1;

			setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = op == PROBE_TCP ? cfd : fd, .events = POLLIN },
					 { .fd = c->fd, .events = POLLIN } };

		if (ctl_readable(c, 0))
			break;
		if (poll(pfd, 2, 1000) <= 0)
			continue;
		if (pfd[1].revents)
			break;
		if (op == PROBE_UDP) {
			struct sockaddr_storage from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);

			if (n > 0 && sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) == n)
				(*echoed)++;
		} else {
			/* frames: 4-byte length, then the payload */
			uint32_t len;

			if (read_full(cfd, (uint8_t *)&len, 4, tu_mono_ns() + 5000000000LL) < 0 || len > PROBE_MAX_SIZE ||
			    read_full(cfd, buf + 4, len, tu_mono_ns() + 5000000000LL) < 0)
				break;
			memcpy(buf, &len, 4);
			if (send(cfd, buf, len + 4, MSG_NOSIGNAL) != (ssize_t)(len + 4))
				break;
			(*echoed)++;
		}
	}
	if (cfd >= 0)
		close(cfd);
	return 0;
}

int sock_client_loop(enum probe_op op, const char *host, unsigned port, unsigned size,
		     unsigned iters, int64_t timeout_ns, double *samples, size_t *ret_n,
		     uint64_t errors[PE_NERRS], uint64_t *ret_data_errors)
{
	struct addrinfo hints = { .ai_socktype = op == PROBE_UDP ? SOCK_DGRAM : SOCK_STREAM }, *res = NULL;
	static uint8_t out[PROBE_MAX_SIZE + 4], in[PROBE_MAX_SIZE + 4];
	char ports[16];
	size_t n = 0;
	int fd, one = 1;

	*ret_n = 0;
	*ret_data_errors = 0;
	snprintf(ports, sizeof(ports), "%u", port);
	if (getaddrinfo(host, ports, &hints, &res))
		return -EHOSTUNREACH;
	fd = socket(res->ai_family, hints.ai_socktype | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		int r = -errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return r;
	}
	freeaddrinfo(res);
	if (op == PROBE_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (uint32_t seq = 0; seq < iters; seq++) {
		int64_t t0 = tu_mono_ns(), deadline = t0 + timeout_ns;
		uint8_t *payload = op == PROBE_TCP ? out + 4 : out;
		uint32_t len = size;
		bool ok = false;

		pv_pattern(payload, size, seq);
		if (op == PROBE_TCP)
			memcpy(out, &len, 4);
		if (send(fd, out, size + (op == PROBE_TCP ? 4 : 0), MSG_NOSIGNAL) < 0) {
			errors[PE_LOCAL]++;
			if (op == PROBE_TCP)
				break;
			continue;
		}
		if (op == PROBE_UDP) {
			/* wait for the echo of this sequence number; older ones are late duplicates */
			for (;;) {
				struct pollfd pfd = { .fd = fd, .events = POLLIN };
				int64_t left = deadline - tu_mono_ns();
				ssize_t k;

				if (left <= 0 || poll(&pfd, 1, (int)(left / 1000000 + 1)) <= 0) {
					if (tu_mono_ns() >= deadline)
						break;
					continue;
				}
				k = recv(fd, in, sizeof(in), 0);
				if (k >= 4 && pv_pattern_ok(in, 4, seq)) {
					ok = true;
					if ((size_t)k != size || !pv_pattern_ok(in, size, seq))
						(*ret_data_errors)++;
					break;
				}
			}
			if (!ok) {
				errors[PE_TIMEOUT]++;
				continue;
			}
		} else {
			int r = read_full(fd, in, size + 4, deadline);

			if (r < 0) {
				errors[r == -ETIMEDOUT ? PE_TIMEOUT : PE_OTHER]++;
				break; /* a stream that lost sync cannot go on */
			}
			if (memcmp(in, &len, 4) || !pv_pattern_ok(in + 4, size, seq))
				(*ret_data_errors)++;
		}
		samples[n++] = (double)(tu_mono_ns() - t0) / 1000.0;
	}
	close(fd);
	*ret_n = n;
	return 0;
}
