/* The reference for the REST benchmark: the smallest libmicrohttpd server that answers every
 * request with a fixed body (read from a file), using the same daemon flags, thread pool and
 * keep-alive-safe two-step handler as rocefabd.  usage: mhd_min ADDR PORT THREADS BODY_FILE */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

static char *body;
static size_t body_len;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *ver, const char *up, size_t *up_size,
			       void **con_cls)
{
	static int marker;
	struct MHD_Response *r;
	enum MHD_Result ok;

	(void)cls, (void)url, (void)method, (void)ver, (void)up;
	if (!*con_cls) {
		*con_cls = &marker;
		return MHD_YES;
	}
	if (*up_size) {
		*up_size = 0;
		return MHD_YES;
	}
	r = MHD_create_response_from_buffer(body_len, body, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ok = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ok;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct MHD_Daemon *d;
	sigset_t s;
	FILE *f;
	int sig;

	if (argc != 5)
		return 2;
	f = fopen(argv[4], "r");
	if (!f)
		return 1;
	fseek(f, 0, SEEK_END);
	body_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	body = malloc(body_len);
	if (fread(body, 1, body_len, f) != body_len)
		return 1;
	fclose(f);
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigprocmask(SIG_BLOCK, &s, NULL);
	d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
				     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO,
			     0, NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)atoi(argv[3]),
			     MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
	if (!d)
		return 1;
	sigwait(&s, &sig);
	MHD_stop_daemon(d);
	free(body);
	return 0;
}
