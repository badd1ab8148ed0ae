/* A fuzz target's temporary directory: made once in LLVMFuzzerInitialize, removed when the
 * run ends (a finding's abort leaves it for a look; libFuzzer may end a run from another
 * thread while an input still writes there: best effort). */
#ifndef ROCEFAB_FUZZ_TMPDIR_H
#define ROCEFAB_FUZZ_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char fuzz_dir[64];

static void fuzz_dir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' 2>/dev/null", fuzz_dir);
	if (system(cmd) != 0)
		return;
}

/* /tmp/rocefab-fuzz-NAME-XXXXXX, made; aborts when it cannot be. */
static const char *fuzz_dir_make(const char *name)
{
	snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/rocefab-fuzz-%s-XXXXXX", name);
	if (!mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_dir_remove);
	return fuzz_dir;
}

#endif
