/* Bearer token files: see tokenfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/tokenfile.h"

int tokenfile_read(const char *path, char **ret, bool *ret_warned, struct rf_err *warning,
		   struct rf_err *e)
{
	char buf[256];
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
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		r = rf_err_set(e, -EACCES, "TOKEN_FILE_MODE", path,
			       "other users can %s this token file (mode %04o); refusing it: chmod 600 %s",
			       st.st_mode & S_IROTH ? "read" : "write", (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = rf_err_set(e, -errno, "TOKEN_UNREADABLE", path, "cannot read token file: %s",
			       strerror(errno));
		goto out;
	}
	buf[n] = '\0';
	buf[strcspn(buf, " \t\r\n")] = '\0';
	if (!buf[0]) {
		r = rf_err_set(e, -EINVAL, "TOKEN_UNREADABLE", path, "the token file is empty");
		goto out;
	}
	if (!(*ret = strdup(buf))) {
		r = -ENOMEM;
		goto out;
	}
	if (st.st_mode & (S_IRGRP | S_IWGRP)) {
		*ret_warned = true;
		rf_err_set(warning, 0, "TOKEN_FILE_MODE", path,
			   "its group can %s this token file (mode %04o): chmod 600 %s unless the group "
			   "is meant to", st.st_mode & S_IRGRP ? "read" : "write",
			   (unsigned)(st.st_mode & 07777), path);
	}
	r = 0;
out:
	close(fd);
	return r;
}
