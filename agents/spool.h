/* The agent's on-disk spool: reports that could not be delivered yet, kept in order and sent
 * oldest first when rocefabd is reachable again.  One file per report (NNN.json, written to a
 * temporary name and renamed, so a crash never leaves half a report).  Bounded in bytes: when a
 * new report does not fit, the oldest ones are dropped and counted.  Reports left by an earlier
 * run of the agent are found and sent too.  The directory (and any missing above it) is created
 * 0700 and the files 0600; an existing directory open to other users is warned about
 * (SPOOL_DIR_MODE), not changed.  The agent keeps a file of its own there too (spool_keep). */
#ifndef ROCEFAB_SPOOL_H
#define ROCEFAB_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

struct spool;

int spool_open(const char *dir, uint64_t max_bytes, bool fsync_each, struct spool **ret,
	       struct rf_err *e);
void spool_close(struct spool *s);
/* Appends a report.  Returns 0 or a negative errno (the report is then lost and counted). */
int spool_push(struct spool *s, const char *data, size_t len);
/* The oldest report (malloc'ed, the caller frees it); -ENOENT when empty. */
int spool_peek(struct spool *s, char **ret_data, size_t *ret_len);
/* Removes the oldest report. */
int spool_pop(struct spool *s);
size_t spool_count(const struct spool *s);
uint64_t spool_bytes(const struct spool *s);
/* Reports dropped by the bound (or lost to write errors) since the agent started. */
uint64_t spool_dropped(const struct spool *s);
/* A file of the agent's own kept beside the reports (its name is none of theirs, and begins
 * with a letter): written whole, or removed when len is 0.  0 or a negative errno. */
int spool_keep(struct spool *s, const char *name, const char *data, size_t len);
/* That file (malloc'ed and NUL-terminated, the caller frees it): -ENOENT when there is none,
 * -EFBIG when it is larger than max bytes, -EISDIR when not a regular file. */
int spool_kept(struct spool *s, const char *name, size_t max, char **ret_data, size_t *ret_len);

#endif
