/* On-disk spool: see spool.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/spool.h"
#include "lib/fileutil.h"
#include "lib/log.h"
#include "lib/strutil.h"

/* The count of reports dropped, in the spool directory beside them */
#define DROPPED_FILE "spool-dropped"

struct spool_entry {
	uint64_t id;
	uint64_t size;
};

struct spool {
	char *dir;
	int dfd;
	uint64_t max_bytes, bytes, dropped, next_id;
	bool fsync_each;
	bool count_unkept; /* the count of dropped reports could not be written (said once) */
	struct spool_entry *e; /* ring of entries, oldest at head */
	size_t head, n, cap;
};

/* Creates path and the directories above it that are missing, the owner's alone (0700): the
 * spooled reports describe the host's devices and fabric. */
static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct spool_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct spool_entry *at(const struct spool *s, size_t i)
{
	return &s->e[(s->head + i) % s->cap];
}

static int grow(struct spool *s)
{
	size_t nc = s->cap ? s->cap * 2 : 64;
	struct spool_entry *ne = malloc(nc * sizeof(*ne));

	if (!ne)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		ne[i] = *at(s, i);
	free(s->e);
	s->e = ne;
	s->cap = nc;
	s->head = 0;
	return 0;
}

static void file_name(uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%020" PRIu64 ".json", id);
}

int spool_open(const char *dir, uint64_t max_bytes, bool fsync_each, struct spool **ret,
	       struct rf_err *e)
{
	struct spool *s = calloc(1, sizeof(*s));
	struct dirent *de;
	DIR *d;
	int r;

	if (!s)
		return -ENOMEM;
	s->dfd = -1;
	s->max_bytes = max_bytes;
	s->fsync_each = fsync_each;
	s->dir = strdup(dir);
	if (!s->dir) {
		r = -ENOMEM;
		goto fail;
	}
	if ((r = mkdir_p(dir)) < 0) {
		rf_err_set(e, r, "SPOOL_UNAVAILABLE", dir, "cannot create the spool directory: %s",
			   strerror(-r));
		goto fail;
	}
	s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dfd < 0 || faccessat(s->dfd, ".", W_OK, AT_EACCESS) < 0) {
		r = rf_err_set(e, -errno, "SPOOL_UNAVAILABLE", dir, "cannot write the spool: %s",
			       strerror(errno));
		goto fail;
	}
	{
		/* one made before (by an older agent, or by hand) is left as it is, with a word */
		struct stat st;

		if (fstat(s->dfd, &st) == 0 && (st.st_mode & 077))
			log_msg(LOG_WARNING, "spool", "SPOOL_DIR_MODE",
				"%s is open to other users (mode %04o), and stays so: chmod 700 %s", dir,
				(unsigned)(st.st_mode & 07777), dir);
	}
	d = fdopendir(dup(s->dfd));
	if (!d) {
		r = -errno;
		goto fail;
	}
	while ((de = readdir(d))) {
		uint64_t id;
		char *end;
		struct stat st;

		if (de->d_name[0] == '.') {
			if (strncmp(de->d_name, ".tmp-", 5) == 0)
				unlinkat(s->dfd, de->d_name, 0); /* a write cut short by a crash */
			continue;
		}
		errno = 0;
		id = strtoull(de->d_name, &end, 10);
		if (errno || strcmp(end, ".json") != 0 || fstatat(s->dfd, de->d_name, &st, 0) < 0)
			continue;
		if (s->n == s->cap && (r = grow(s)) < 0) {
			closedir(d);
			goto fail;
		}
		s->e[s->n++] = (struct spool_entry){ .id = id, .size = (uint64_t)st.st_size };
		s->bytes += (uint64_t)st.st_size;
		if (id >= s->next_id)
			s->next_id = id + 1;
	}
	closedir(d);
	{
		/* the count of an earlier run goes on */
		char *text = NULL, *end;
		size_t tlen = 0;

		if (file_read_at(s->dfd, DROPPED_FILE, 64, &text, &tlen) == 0) {
			uint64_t v;

			errno = 0;
			v = strtoull(text, &end, 10);
			/* garbage (or past what a report carries) is no count: it starts anew */
			if (isdigit((unsigned char)text[0]) && !errno && (*end == '\n' || !*end) && v <= INT64_MAX)
				s->dropped = v;
			else
				log_warning("spool", "%s/%s is not a count of dropped reports: counting anew", dir,
					    DROPPED_FILE);
			free(text);
		}
	}
	if (s->n)
		qsort(s->e, s->n, sizeof(*s->e), entry_cmp);
	if (s->n)
		log_info("spool", "%zu undelivered reports (%" PRIu64 " bytes) found in %s", s->n,
			 s->bytes, dir);
	*ret = s;
	return 0;
fail:
	spool_close(s);
	return r;
}

void spool_close(struct spool *s)
{
	if (!s)
		return;
	if (s->dfd >= 0)
		close(s->dfd);
	free(s->e);
	free(s->dir);
	free(s);
}

static void drop_oldest(struct spool *s)
{
	struct spool_entry *e = at(s, 0);
	char name[32];

	file_name(e->id, name, sizeof(name));
	unlinkat(s->dfd, name, 0);
	s->bytes -= e->size;
	s->head = (s->head + 1) % s->cap;
	s->n--;
}

/* Writes name whole: to a temporary name, then renamed (a crash leaves the old one or the new
 * one, never half of one); fsync'ed with agent.spool_fsync. */
static int write_whole(struct spool *s, const char *name, const char *data, size_t len)
{
	char tmp[80];
	ssize_t w = 0;
	int fd, r = 0;

	if (str_fmt(tmp, sizeof(tmp), ".tmp-%s", name) < 0)
		return -ENAMETOOLONG;
	fd = openat(s->dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while ((size_t)w < len) {
		ssize_t n = write(fd, data + w, len - (size_t)w);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		w += n;
	}
	if (r == 0 && s->fsync_each && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(s->dfd, tmp, s->dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(s->dfd, tmp, 0);
	return r;
}

/* The reports dropped so far, kept in the spool directory (a restart goes on counting: they
 * are reported until the spool is emptied by hand), and said in the log at the first and at
 * each tenfold. */
static void dropped_more(struct spool *s, uint64_t n, const char *why)
{
	uint64_t before = s->dropped;
	char text[32];
	int len, r;

	s->dropped += n;
	for (uint64_t p = 1; p && p <= s->dropped; p = p <= UINT64_MAX / 10 ? p * 10 : 0)
		if (p > before) {
			log_warning("spool", "%s: %" PRIu64 " report%s dropped so far (%s)", s->dir, s->dropped,
				    s->dropped == 1 ? "" : "s", why);
			break;
		}
	len = snprintf(text, sizeof(text), "%" PRIu64 "\n", s->dropped);
	if ((r = write_whole(s, DROPPED_FILE, text, (size_t)len)) < 0 && !s->count_unkept) {
		s->count_unkept = true; /* (said once) */
		log_warning("spool", "%s: cannot keep the count of dropped reports (%s): a restart counts anew",
			    s->dir, strerror(-r));
	}
}

int spool_push(struct spool *s, const char *data, size_t len)
{
	uint64_t oldest = 0;
	char name[32];
	int r = 0;

	if (len > s->max_bytes) {
		dropped_more(s, 1, "one larger than agent.spool_max");
		return -EFBIG;
	}
	while (s->n && s->bytes + len > s->max_bytes) {
		drop_oldest(s);
		oldest++;
	}
	if (oldest)
		dropped_more(s, oldest, "the oldest, beyond agent.spool_max");
	if (s->n == s->cap && (r = grow(s)) < 0) {
		dropped_more(s, 1, "out of memory");
		return r;
	}
	file_name(s->next_id, name, sizeof(name));
	if ((r = write_whole(s, name, data, len)) < 0) {
		dropped_more(s, 1, strerror(-r));
		return r;
	}
	s->e[(s->head + s->n) % s->cap] = (struct spool_entry){ .id = s->next_id, .size = len };
	s->n++;
	s->bytes += len;
	s->next_id++;
	return 0;
}

int spool_peek(struct spool *s, char **ret_data, size_t *ret_len)
{
	while (s->n) {
		struct spool_entry *e = at(s, 0);
		char name[32], *data = NULL;
		size_t len = 0;

		file_name(e->id, name, sizeof(name));
		if (file_read_at(s->dfd, name, e->size, &data, &len) == 0 && len == e->size) {
			*ret_data = data;
			*ret_len = len;
			return 0;
		}
		free(data);
		/* unreadable (removed behind our back, disk error): skip it, counted */
		log_warning("spool", "cannot read spooled report %s/%s; dropping it", s->dir, name);
		drop_oldest(s);
		dropped_more(s, 1, "unreadable");
	}
	return -ENOENT;
}

int spool_pop(struct spool *s)
{
	struct spool_entry *e;
	char name[32];

	if (!s->n)
		return -ENOENT;
	e = at(s, 0);
	file_name(e->id, name, sizeof(name));
	unlinkat(s->dfd, name, 0);
	s->bytes -= e->size;
	s->head = (s->head + 1) % s->cap;
	s->n--;
	return 0;
}

size_t spool_count(const struct spool *s)
{
	return s->n;
}

uint64_t spool_bytes(const struct spool *s)
{
	return s->bytes;
}

uint64_t spool_dropped(const struct spool *s)
{
	return s->dropped;
}

int spool_keep(struct spool *s, const char *name, const char *data, size_t len)
{
	if (!len)
		return unlinkat(s->dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	return write_whole(s, name, data, len);
}

int spool_kept(struct spool *s, const char *name, size_t max, char **ret_data, size_t *ret_len)
{
	return file_read_at(s->dfd, name, max, ret_data, ret_len);
}
