/* Bearer token files: see tokenfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/tokenfile.h"

/* The rule of tokenfile.h on a file's mode: -EACCES (others), 1 with warning filled (its
 * group), 0 (its owner's alone).  code names the kind of secret, what says it in words. */
static int secret_mode(const struct stat *st, const char *path, const char *code, const char *what,
		       struct rf_err *warning, struct rf_err *e)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);

	if (S_ISDIR(st->st_mode)) /* (its mode is no file's: it read as one others may read) */
		return rf_err_set(e, -EISDIR, code, path, "a directory, not a %s", what);
	if (st->st_mode & (S_IROTH | S_IWOTH))
		return rf_err_set(e, -EACCES, code, path,
				  "other users can %s this %s (mode %04o); refusing it: chmod 600 %s",
				  st->st_mode & S_IROTH ? "read" : "write", what, mode, path);
	if (st->st_mode & (S_IRGRP | S_IWGRP)) {
		rf_err_set(warning, 0, code, path,
			   "its group can %s this %s (mode %04o): chmod 600 %s unless the group is "
			   "meant to", st->st_mode & S_IRGRP ? "read" : "write", what, mode, path);
		return 1;
	}
	return 0;
}

int keyfile_check_stat(const struct stat *st, const char *path, bool *ret_warned,
		       struct rf_err *warning, struct rf_err *e)
{
	int r = secret_mode(st, path, "KEY_FILE_MODE", "private key", warning, e);

	*ret_warned = r == 1;
	return r < 0 ? r : 0;
}

int keyfile_check(const char *path, bool *ret_warned, struct rf_err *warning, struct rf_err *e)
{
	struct stat st;

	*ret_warned = false;
	if (stat(path, &st) < 0)
		return rf_err_set(e, -errno, "KEY_UNREADABLE", path, "cannot read private key: %s",
				  strerror(errno));
	return keyfile_check_stat(&st, path, ret_warned, warning, e);
}

int tokenfile_read(const char *path, char **ret, bool *ret_warned, struct rf_err *warning,
		   struct rf_err *e)
{
	char buf[256], *tok;
	struct stat st;
	ssize_t n;
	int fd, r;

	*ret_warned = false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return rf_err_set(e, -errno, "TOKEN_UNREADABLE", path, "cannot read token file: %s",
				  strerror(errno));
	if (fstat(fd, &st) < 0) {
		r = rf_err_set(e, -errno, "TOKEN_UNREADABLE", path, "cannot read token file: %s",
			       strerror(errno));
		goto out;
	}
	/* checked on the file opened, not on a name that could change in between */
	if ((r = secret_mode(&st, path, "TOKEN_FILE_MODE", "token file", warning, e)) < 0)
		goto out;
	*ret_warned = r == 1;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = rf_err_set(e, -errno, "TOKEN_UNREADABLE", path, "cannot read token file: %s",
			       strerror(errno));
		goto out;
	}
	buf[n] = '\0';
	/* the first word: a token pasted after a blank line or with spaces before it is one too */
	tok = buf + strspn(buf, " \t\r\n");
	if (tok + strcspn(tok, " \t\r\n") == buf + sizeof(buf) - 1) {
		/* it may go on beyond what was read: never a token cut short */
		r = rf_err_set(e, -EINVAL, "TOKEN_UNREADABLE", path,
			       "the token file's first word runs past %zu bytes: no token is that long",
			       sizeof(buf) - 1);
		goto out;
	}
	tok[strcspn(tok, " \t\r\n")] = '\0';
	if (!tok[0]) {
		r = rf_err_set(e, -EINVAL, "TOKEN_UNREADABLE", path, n ? "the token file holds no token (only blanks)"
								     : "the token file is empty");
		goto out;
	}
	if (!(*ret = strdup(tok))) {
		r = -ENOMEM;
		goto out;
	}
	r = 0;
out:
	close(fd);
	return r;
}
