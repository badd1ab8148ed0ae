/* The probe vocabulary: see probeops.h. */
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
