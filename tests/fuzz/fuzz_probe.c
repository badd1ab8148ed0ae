/* libFuzzer target: the probe engine's wire protocol (agents/probe/), as a client anywhere on
 * the network can speak it to a host's probe server (rocefab-probe server, the agent's
 * probe.listen).  The server runs for real (probe_server_serve with once, on a thread) on a
 * loopback socket; the first byte of an input picks how the target talks to it:
 *
 *   0  the rest is the whole control channel (ctl.c: one JSON object per line): the session
 *      request (op, size, iters, paths, pingpong, timeout_ms), then the "done" message, or
 *      whatever the bytes are.  Verbs operations are refused here (no RDMA device), after
 *      their request was decoded and checked.
 *   1  a kernel-socket session (sock.c): the first line is the request, the rest goes to the
 *      data socket the server answers with (TCP: the whole 4-byte length frames it echoes;
 *      UDP: one datagram), then the target sends {"done": ...} and reads the verdict
 *   2  the end-of-session check of a verbs session (verbs.c pv_server_verify): bytes 1-3 give
 *      the session's op, size and mode, the rest is the client's "done" message
 *
 * The client's side (probe_client_run) is not here: the server's reply names a port that the
 * client then probes, so a fuzzed reply would send probes to whatever listens on this host.
 *
 * Invariants: a session never takes longer than its messages allow (libFuzzer's -timeout), the
 * server answers every request line it can parse with {"ok": ...} (mode 1) and the end of an
 * accepted session with {"verified": ...}. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agents/probe/internal.h"
#include "lib/log.h"
#include "lib/timeutil.h"

#define STEP_NS (2 * NSEC_PER_SEC)

static int lfd = -1;
static unsigned port;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct rf_err e = { 0 };
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	(void)argc;
	(void)argv;
	log_set_level(LOG_ERR); /* a refused session is logged at info */
	lfd = ctl_listen("127.0.0.1:0", &e);
	if (lfd < 0 || getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0)
		abort();
	port = ntohs(sa.sin_port);
	return 0;
}

static void *server(void *arg)
{
	struct probe_server_conf conf = { .listen = "127.0.0.1:0", .gid_index = -1, .once = true,
					  .timeout_ns = NSEC_PER_SEC };
	struct rf_err e = { 0 };
	int fd = dup(lfd); /* probe_server_serve closes the socket it serves */

	(void)arg;
	if (fd < 0 || probe_server_serve(&conf, fd, NULL, &e) < 0)
		abort();
	return NULL;
}

/* connect(), through libFuzzer's SIGALRM (its -timeout watchdog), which interrupts a blocking
 * connect that then goes on by itself. */
static int connect_to(int fd, const struct sockaddr_in *sa)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t sl = sizeof(int);
	int err = 0;

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 0;
	if (errno != EINTR && errno != EALREADY)
		return -errno;
	while (poll(&pfd, 1, 5000) < 0 && errno == EINTR)
		;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
		return -errno;
	return -err;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A socket whose close resets the connection.  Thousands of sessions a second must leave no
 * connection in TIME_WAIT, which holds its port for a minute and would soon take every
 * ephemeral port of the machine: the side that closes first keeps one, so the server closes
 * first whenever the protocol lets it, and a reset on this side's close ends the server's. */
static int client_socket(int type)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
		abort();
	return fd;
}

/* The data path of a udp or tcp session the server accepted with {"ok": true, "port": P}:
 * returns the socket, to be closed once the server is done with the session. */
static int data_path(json_t *hello, json_t *answer, const uint8_t *data, size_t size)
{
	const char *op = json_string_value(json_object_get(hello, "op"));
	json_int_t p = json_integer_value(json_object_get(answer, "port"));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool udp = op && !strcmp(op, "udp");
	int fd;

	if (p <= 0 || p > 65535)
		abort(); /* an accepted session names its data port */
	sa.sin_port = htons((uint16_t)p);
	fd = client_socket(udp ? SOCK_DGRAM : SOCK_STREAM);
	if (connect_to(fd, &sa) < 0)
		return fd;
	if (udp) {
		send(fd, data, size < 65000 ? size : 65000, MSG_NOSIGNAL);
	} else {
		/* the whole frames, then a length the server refuses, so that it ends the data path
		 * and closes first (no end of file from here: see client_socket()); a frame cut
		 * short would only make the server wait for the rest until its deadline */
		static const uint8_t end[4] = { 0xff, 0xff, 0xff, 0xff };
		size_t whole = 0;

		while (whole + 4 <= size) {
			uint32_t len;

			memcpy(&len, data + whole, 4);
			if (len > PROBE_MAX_SIZE || len > size - whole - 4)
				break;
			whole += 4 + len;
		}
		if (send_all(fd, data, whole) == 0)
			send_all(fd, end, sizeof(end));
	}
	return fd;
}

static void session(int mode, const uint8_t *data, size_t size)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)port) };
	struct ctl c = { .fd = client_socket(SOCK_STREAM) };
	const uint8_t *nl = memchr(data, '\n', size);
	json_t *hello = NULL, *answer = NULL, *done, *verdict = NULL;
	pthread_t th;
	int dfd = -1, r;

	if (pthread_create(&th, NULL, server, NULL))
		abort();
	if ((r = connect_to(c.fd, &sa)) < 0) {
		fprintf(stderr, "cannot connect to the probe server: %s\n", strerror(-r));
		abort();
	}
	if (mode == 0 || !nl) {
		/* the whole control channel, then a reset: the server reads what was sent, then
		 * ECONNRESET, which it takes as the end of file it is */
		send_all(c.fd, data, size);
		goto out_reset;
	}
	hello = json_loadb((const char *)data, (size_t)(nl - data), 0, NULL);
	if (send_all(c.fd, data, (size_t)(nl - data) + 1) < 0 || !json_is_object(hello))
		goto out_reset;
	/* a request the server could read is answered, yes or no */
	if (ctl_recv(&c, &answer, STEP_NS) < 0 || !json_is_boolean(json_object_get(answer, "ok")))
		abort();
	if (!json_is_true(json_object_get(answer, "ok")))
		goto out; /* the server closes after a refusal */
	dfd = data_path(hello, answer, nl + 1, size - (size_t)(nl + 1 - data));
	done = json_pack("{s:b,s:i,s:i}", "done", 1, "ok", 1, "last", 0);
	if (ctl_send(&c, done, STEP_NS) == 0 && ctl_recv(&c, &verdict, STEP_NS) == 0 &&
	    !json_is_boolean(json_object_get(verdict, "verified")))
		abort();
	json_decref(done);
	goto out; /* the server closes after its verdict */
out_reset:
	ctl_close(&c);
out:
	pthread_join(th, NULL);
	ctl_close(&c);
	if (dfd >= 0)
		close(dfd);
	json_decref(hello);
	json_decref(answer);
	json_decref(verdict);
}

/* pv_server_verify on a session that exists only as far as it reads it (its op, size, mode
 * and memory pool); no device is needed for that. */
static void verify(const uint8_t *data, size_t size)
{
	static uint8_t *pool;
	struct pv_ctx p = { 0 };
	struct pv_session s = { .p = &p };
	char detail[128];
	json_t *done;

	if (size < 4)
		return;
	if (!pool && !(pool = calloc(1, PV_POOL)))
		abort();
	p.pool = pool;
	s.op = (enum probe_op)(data[1] % PROBE_UDP); /* the verbs operations */
	s.size = PROBE_MIN_SIZE + (unsigned)((data[2] << 8 | data[3]) % (PROBE_MAX_SIZE - PROBE_MIN_SIZE + 1));
	s.pingpong = s.op == PROBE_WRITE && (data[1] & 0x80);
	if (s.op == PROBE_CAS || s.op == PROBE_FAA)
		s.size = 8;
	pv_pattern(pool + PV_OFF_TARGET, PV_BUF, data[2]);
	done = json_loadb((const char *)data + 4, size - 4, 0, NULL);
	pv_server_verify(&s, done, detail, sizeof(detail));
	if (!memchr(detail, '\0', sizeof(detail)))
		abort();
	json_decref(done);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
	case 1:
		session(data[0] % 3, data + 1, size - 1);
		break;
	default:
		verify(data, size);
		break;
	}
	return 0;
}
