/* Reading small files whole, and writing result files whole or not at all: see fileutil.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileutil.h"

int file_read_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	char *data = NULL;
	size_t got = 0;
	int r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EISDIR;
		goto out;
	}
	if ((size_t)st.st_size > max) {
		r = -EFBIG;
		goto out;
	}
	if (!(data = malloc((size_t)st.st_size + 1))) {
		r = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)n;
	}
	data[got] = '\0';
	*ret = data;
	*ret_len = got;
	data = NULL;
out:
	free(data);
	close(fd);
	return r;
}

static void file_out_free(struct file_out *o)
{
	free(o->path);
	free(o->tmp);
	memset(o, 0, sizeof(*o));
}

/* path is this process's standard output or error (as /dev/stdout, /dev/fd/1, or the file
 * they were redirected to): its descriptor, or -1. */
static int std_fd_of(const struct stat *st)
{
	struct stat sf;

	for (int fd = 1; fd <= 2; fd++)
		if (fstat(fd, &sf) == 0 && sf.st_dev == st->st_dev && sf.st_ino == st->st_ino)
			return fd;
	return -1;
}

int file_out_open(struct file_out *o, const char *path)
{
	struct stat st;
	bool exists;
	mode_t mode;
	int fd, r;

	memset(o, 0, sizeof(*o));
	exists = stat(path, &st) == 0;
	if (exists && S_ISDIR(st.st_mode))
		return -EISDIR;
	/* standard output or error, whatever they were redirected to: written through their
	 * descriptor (opening /dev/stdout again would truncate a file appended to with >>,
	 * and resolving it would replace that file) */
	if (exists && (fd = std_fd_of(&st)) >= 0) {
		if ((fd = dup(fd)) < 0)
			return -errno;
		if (!(o->f = fdopen(fd, "w"))) {
			r = -errno;
			close(fd);
			return r;
		}
		return 0;
	}
	/* a FIFO, a device, another process's descriptor (/dev/fd/N, /proc/...): through */
	if ((exists && !S_ISREG(st.st_mode)) || !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6)) {
		if (!(o->f = fopen(path, "we")))
			return -errno;
		return 0;
	}
	/* a regular file, through a link or not, or a new name (a link to a name not there yet:
	 * the name resolved is not the link's, so it is written through to create its target) */
	if (!(o->path = realpath(path, NULL))) {
		if (errno != ENOENT)
			return -errno;
		if (lstat(path, &st) == 0) { /* a dangling link */
			if (!(o->f = fopen(path, "we")))
				return -errno;
			return 0;
		}
		if (!(o->path = strdup(path)))
			return -ENOMEM;
	}
	if (asprintf(&o->tmp, "%s.tmp-XXXXXX", o->path) < 0) {
		o->tmp = NULL;
		file_out_free(o);
		return -ENOMEM;
	}
	/* the mode of the file it replaces; a new one's: 0666 less the umask */
	if (exists) {
		mode = st.st_mode & 07777;
	} else {
		mode = umask(0);
		umask(mode);
		mode = 0666 & ~mode;
	}
	if ((fd = mkstemp(o->tmp)) < 0) {
		r = -errno;
		file_out_free(o);
		return r;
	}
	if (fchmod(fd, mode) < 0 || !(o->f = fdopen(fd, "w"))) {
		r = -errno;
		close(fd);
		unlink(o->tmp);
		file_out_free(o);
		return r;
	}
	return 0;
}

bool file_out_same(const struct file_out *a, const struct file_out *b)
{
	return a->path && b->path && !strcmp(a->path, b->path);
}

int file_out_commit(struct file_out *o)
{
	int r = 0;

	if (!o->f)
		return -EBADF;
	if (fflush(o->f) != 0)
		r = -errno;
	else if (ferror(o->f)) /* a write before failed (its errno is gone) */
		r = -EIO;
	if (fclose(o->f) != 0 && !r)
		r = -errno;
	o->f = NULL;
	if (!r && o->tmp && rename(o->tmp, o->path) < 0)
		r = -errno;
	if (r && o->tmp)
		unlink(o->tmp);
	file_out_free(o);
	return r;
}

void file_out_abort(struct file_out *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	file_out_free(o);
}
