/* Checked string formatting and copying into fixed-size buffers (STYLE.md: snprintf with
 * checked results).  Both always NUL-terminate and report truncation. */
#ifndef ROCEFAB_STRUTIL_H
#define ROCEFAB_STRUTIL_H

#include <stddef.h>

/* 0, or -ENAMETOOLONG when the result did not fit (dst then holds a truncated string). */
int str_fmt(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 0, or -E2BIG when src did not fit. */
int str_copy(char *dst, size_t size, const char *src);
/* A whole file (at most 64 MiB) as a NUL-terminated string; NULL with errno on failure. */
char *str_slurp(const char *path, size_t *ret_len);

#endif
