/* Reading small files whole; writing a result file whole or not at all. */
#ifndef ROCEFAB_FILEUTIL_H
#define ROCEFAB_FILEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Reads name (relative to dirfd, or absolute) whole: malloc'ed and NUL-terminated, the caller
 * frees it.  The descriptor is checked, not the name (no race).  Opened without blocking and
 * without becoming a terminal: a FIFO or a device put in its place is refused (-EISDIR, as
 * anything not a regular file), never waited on.  -EFBIG when larger than max bytes; else 0 or
 * a negative errno. */
int file_read_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);

/* A result file written so that a run that fails or is stopped leaves the one before: a
 * regular file (or a name not there yet) is written beside it (NAME.tmp-XXXXXX, with the mode
 * of the file it replaces, or 0666 less the umask) and renamed over it at file_out_commit;
 * through a symbolic link, its target is.  The program's standard output or error (as
 * /dev/stdout, or the file it was redirected to) is written through its descriptor; anything
 * else that is no regular file, or any name under /dev/ or /proc/ (a FIFO, /dev/null, a
 * process substitution's /dev/fd/N), is written through, never replaced; a directory is
 * refused (-EISDIR). */
struct file_out {
	FILE *f;
	char *path; /* what the temporary is renamed over (a link's target) */
	char *tmp;  /* NULL: written through */
};
/* 0 or a negative errno (nothing left behind). */
int file_out_open(struct file_out *o, const char *path);
/* Whether two, both opened, would be renamed over the same file (the later would win). */
bool file_out_same(const struct file_out *a, const struct file_out *b);
/* Flushes, closes and puts the file in its place: 0, or a negative errno (a write that failed,
 * the disk full: -EIO or -ENOSPC), and then the one before stays. */
int file_out_commit(struct file_out *o);
/* Closes, and drops what was written if it went to a temporary.  Safe on one committed, closed
 * or never opened (zeroed). */
void file_out_abort(struct file_out *o);

#endif
