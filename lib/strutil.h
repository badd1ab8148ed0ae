/* Checked string formatting and copying into fixed-size buffers (STYLE.md: snprintf with
 * checked results; both always NUL-terminate and report truncation), and the one reader of
 * integers that people and programs type (path and query parameters, options). */
#ifndef ROCEFAB_STRUTIL_H
#define ROCEFAB_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0, or -ENAMETOOLONG when the result did not fit (dst then holds a truncated string). */
int str_fmt(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 0, or -E2BIG when src did not fit. */
int str_copy(char *dst, size_t size, const char *src);
/* A canonical decimal integer: digits only, no sign, no spaces, no leading zero (except "0"
 * itself), so that every number has one spelling ("03", "+3", " 3", "3 " and "0x3" are not 3).
 * 0 and *ret when s is one and at most max; -EINVAL when it is not one; -ERANGE when it is
 * larger than max (or than any uint64).  *ret is untouched on failure. */
int str_parse_uint(const char *s, uint64_t max, uint64_t *ret);
/* Whether s is text that may be shown: valid UTF-8 without control characters (C0, DEL, C1,
 * which could drive a terminal or break a log line). */
bool str_is_printable(const char *s);
/* Whether s holds a bidirectional formatting character (U+061C, U+200E-200F, U+202A-202E,
 * U+2066-2069), which makes text read in another order than it is stored (an audit entry
 * showing other words than it holds). */
bool str_has_bidi_controls(const char *s);
/* The longest prefix of s of at most max bytes that does not end inside a UTF-8 sequence
 * (its length), for cutting text where a reader sees whole characters. */
size_t str_utf8_prefix(const char *s, size_t max);
/* Natural order: runs of digits compare by their value ("h2" < "h10"), the rest byte by byte. */
int str_natcmp(const char *a, const char *b);
/* The same of la and lb bytes (not NUL-terminated). */
int str_natcmp_n(const char *a, size_t la, const char *b, size_t lb);
/* Makes s such text in place: each byte of a control character, and each byte that is not part
 * of valid UTF-8, becomes '?'. */
void str_make_printable(char *s);
/* Whether a glob pattern (fnmatch(3) without FNM_NOESCAPE, as glibc reads it: a '\' escapes
 * inside a set too, "[:name:]" with a lowercase name is a class) closes each bracket expression
 * it opens: fnmatch takes a lone '[' as itself ("gpu[1-4" matches only that name), which is
 * more likely a typo than meant; NULL when it does, else where the one left open starts. */
const char *str_glob_open_bracket(const char *pat);
/* A whole file (at most 64 MiB) as a NUL-terminated string; NULL with errno on failure. */
char *str_slurp(const char *path, size_t *ret_len);

#endif
