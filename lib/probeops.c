/* The probe vocabulary: see probeops.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "lib/probeops.h"

static const char *const op_names[] = { "write", "read", "send", "cas", "faa", "ud", "udp", "tcp" };

const char *probe_op_name(enum probe_op op)
{
	return op < PROBE_NOPS ? op_names[op] : "?";
}

int probe_op_parse(const char *s, enum probe_op *ret)
{
	for (int i = 0; i < PROBE_NOPS; i++)
		if (s && !strcmp(s, op_names[i])) {
			*ret = (enum probe_op)i;
			return 0;
		}
	return -EINVAL;
}

bool probe_op_valid(const char *s)
{
	enum probe_op op;

	return probe_op_parse(s, &op) == 0;
}

bool probe_op_is_verbs(enum probe_op op)
{
	return op <= PROBE_UD;
}

unsigned probe_op_max_size(enum probe_op op)
{
	return op == PROBE_UD ? 4096 : op == PROBE_UDP ? 65000 : PROBE_MAX_SIZE;
}

/* The address of "ADDR" or "[ADDR6]" (len bytes) as 16 bytes (IPv4: in the first 4; IPv4-mapped
 * IPv6 taken as IPv4); *v4 says which.  false: not an address in digits. */
static bool endpoint_parse(const char *a, size_t len, unsigned char b[16], bool *v4)
{
	char buf[64];

	if (len >= sizeof(buf) || len < 1)
		return false;
	if (a[0] == '[') {
		if (len < 3 || a[len - 1] != ']')
			return false;
		memcpy(buf, a + 1, len - 2);
		buf[len - 2] = '\0';
		if (inet_pton(AF_INET6, buf, b) != 1)
			return false;
		*v4 = !memcmp(b, (unsigned char[12]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff }, 12);
		if (*v4)
			memmove(b, b + 12, 4);
		return true;
	}
	memcpy(buf, a, len);
	buf[len] = '\0';
	*v4 = true;
	return inet_pton(AF_INET, buf, b) == 1;
}

bool probe_endpoint_address_ok(const char *a, size_t len)
{
	unsigned char b[16];
	bool v4;

	if (!endpoint_parse(a, len, b, &v4))
		return false;
	if (!v4)
		return memcmp(b, (unsigned char[16]){ 0 }, 16) && b[0] != 0xff &&
		       !(b[0] == 0xfe && (b[1] & 0xc0) == 0x80);
	return b[0] != 0 && !(b[0] == 169 && b[1] == 254) && b[0] < 224;
}

bool probe_endpoint_is_loopback(const char *a, size_t len)
{
	unsigned char b[16];
	bool v4;

	if (!endpoint_parse(a, len, b, &v4))
		return false;
	return v4 ? b[0] == 127 : !memcmp(b, (unsigned char[16]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 16);
}
