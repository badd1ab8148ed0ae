/* Reading small files whole. */
#ifndef ROCEFAB_FILEUTIL_H
#define ROCEFAB_FILEUTIL_H

#include <stddef.h>

/* Reads name (relative to dirfd, or absolute) whole: malloc'ed and NUL-terminated, the caller
 * frees it.  The descriptor is checked, not the name (no race).  Opened without blocking and
 * without becoming a terminal: a FIFO or a device put in its place is refused (-EISDIR, as
 * anything not a regular file), never waited on.  -EFBIG when larger than max bytes; else 0 or
 * a negative errno. */
int file_read_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);

#endif
