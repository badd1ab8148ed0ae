/* The dashboard's static files, loaded at start.  See web.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/web.h"
#include "lib/fileutil.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/sha256.h"

struct web {
	struct hmap files; /* path -> struct web_file */
	size_t bytes;
};

static const struct {
	const char *ext, *type;
} types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".mjs", "text/javascript; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".svg", "image/svg+xml" },
	{ ".png", "image/png" },
	{ ".ico", "image/x-icon" },
	{ ".json", "application/json" },
	{ ".txt", "text/plain; charset=utf-8" },
	{ ".list", "text/plain; charset=utf-8" },
};

static const char *type_of(const char *name)
{
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

static void file_free(struct web_file *f)
{
	if (f) {
		free(f->path);
		free(f->data);
		free(f);
	}
}

static int add_file(struct web *w, const char *path, char *data, size_t len)
{
	struct web_file *f = calloc(1, sizeof(*f));
	uint8_t d[SHA256_DIGEST_LEN];
	char hex[17];
	void *old = NULL;

	if (!f || !(f->path = strdup(path))) {
		free(f);
		free(data);
		return -ENOMEM;
	}
	f->data = data;
	f->len = len;
	f->type = type_of(path);
	f->html = strcmp(f->type, types[0].type) == 0;
	sha256(data, len, d);
	hex_encode(d, 8, hex);
	f->etag[0] = '"';
	memcpy(f->etag + 1, hex, 16);
	f->etag[17] = '"';
	f->etag[18] = '\0';
	if (hmap_put(&w->files, f->path, f, &old) < 0) {
		file_free(f);
		return -ENOMEM;
	}
	if (old)
		w->bytes -= ((struct web_file *)old)->len;
	file_free(old);
	w->bytes += len;
	return 0;
}

static int load_dir(struct web *w, int dfd, const char *prefix, int depth, struct rf_err *e)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d)) && r == 0) {
		char path[1024];
		char *data;
		size_t len;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", prefix, de->d_name) >= (int)sizeof(path))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* a symbolic link may name a file (read as that file), never a directory: the tree
		 * served is the one under api.web_root */
		if (S_ISLNK(st.st_mode) && (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))) {
			log_warning("api", "api.web_root: %s is a link to no regular file; not served", path);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub;

			if (depth >= 4)
				continue;
			sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				r = load_dir(w, sub, path, depth + 1, e);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (w->files.len >= WEB_MAX_FILES) {
			r = rf_err_set(e, -EFBIG, "WEB_TOO_LARGE", "api.web_root",
				       "more than %d files", WEB_MAX_FILES);
			break;
		}
		r = file_read_at(dirfd(d), de->d_name, WEB_MAX_BYTES - w->bytes, &data, &len);
		if (r == -EFBIG) {
			rf_err_set(e, r, "WEB_TOO_LARGE", "api.web_root",
				   "the files exceed %u bytes in all", WEB_MAX_BYTES);
		} else if (r < 0) {
			/* one file that cannot be read is left out, said, and the rest served */
			log_warning("api", "api.web_root: %s: %s; not served", path, strerror(-r));
			r = 0;
		} else {
			r = add_file(w, path, data, len);
		}
	}
	closedir(d);
	return r;
}

/* A line of javascript.list: a relative path without "." or ".." components. */
static bool lib_path_ok(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");

		if (n == 0 || s[0] == '.')
			return false;
		s += n;
		if (*s == '/')
			s++;
	}
	return true;
}

static void load_libs(struct web *w, const char *jsroot)
{
	const struct web_file *list = hmap_get(&w->files, "/javascript.list");
	char *copy, *save = NULL;
	int root;

	if (!list)
		return;
	root = open(jsroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		log_warning("api", "api.javascript_root %s: %s; the dashboard's libraries are "
				   "missing (install its libjs-* packages)", jsroot, strerror(errno));
		return;
	}
	copy = strdup(list->data);
	for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char path[1024];
		char *data;
		size_t len;
		int r;

		line[strcspn(line, " \t\r#")] = '\0';
		if (!*line)
			continue;
		if (!lib_path_ok(line)) {
			log_warning("api", "javascript.list: '%s' is not a plain relative path; skipped",
				    line);
			continue;
		}
		snprintf(path, sizeof(path), "/javascript/%s", line);
		if (w->files.len >= WEB_MAX_FILES) {
			log_warning("api", "javascript.list: more than %d files with the dashboard's; %s "
					   "and the rest not served", WEB_MAX_FILES, line);
			break;
		}
		r = file_read_at(root, line, WEB_MAX_BYTES - w->bytes, &data, &len);
		if (r < 0)
			log_warning("api", "the dashboard's library %s/%s: %s (install its libjs-* "
					   "package)", jsroot, line, strerror(-r));
		else
			add_file(w, path, data, len);
	}
	free(copy);
	close(root);
}

int web_load(const char *root, const char *jsroot, struct web **ret, struct rf_err *e)
{
	struct web *w = calloc(1, sizeof(*w));
	int fd, r;

	if (!w)
		return -ENOMEM;
	hmap_init(&w->files);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = rf_err_set(e, -errno, "WEB_UNREADABLE", "api.web_root", "%s: %s", root,
			       strerror(errno));
		goto fail;
	}
	if ((r = load_dir(w, fd, "", 0, e)) < 0)
		goto fail;
	if (!hmap_get(&w->files, "/index.html")) {
		r = rf_err_set(e, -ENOENT, "WEB_UNREADABLE", "api.web_root", "%s has no index.html",
			       root);
		goto fail;
	}
	load_libs(w, jsroot);
	*ret = w;
	return 0;
fail:
	web_free(w);
	return r;
}

void web_free(struct web *w)
{
	size_t it = 0;
	void *v;

	if (!w)
		return;
	while (hmap_next(&w->files, &it, NULL, &v))
		file_free(v);
	hmap_fini(&w->files);
	free(w);
}

const struct web_file *web_find(const struct web *w, const char *url)
{
	if (!w)
		return NULL;
	return hmap_get(&w->files, strcmp(url, "/") == 0 ? "/index.html" : url);
}

size_t web_count(const struct web *w)
{
	return w ? w->files.len : 0;
}
