/* A growable byte buffer, always NUL-terminated, for rendering text (metrics, tables). */
#ifndef ROCEFAB_BUF_H
#define ROCEFAB_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
	bool oom; /* an append failed; the content is truncated */
};

void buf_init(struct buf *b);
void buf_fini(struct buf *b);
void buf_reset(struct buf *b);
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hands the data to the caller (who frees it) and resets the buffer. */
char *buf_steal(struct buf *b, size_t *ret_len);

#endif
