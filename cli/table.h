/* Aligned text tables for rocefabctl (the -j output is the REST JSON itself). */
#ifndef ROCEFAB_CLI_TABLE_H
#define ROCEFAB_CLI_TABLE_H

#include <stdio.h>

struct table;

struct table *table_new(const char *const *headers);
/* Adds a row; cells are copied, made printable (table_clean).  NULL cells print as "-". */
void table_row(struct table *t, const char *const *cells);
void table_print(struct table *t, FILE *f);
void table_free(struct table *t);

/* Whether s has a control character: C0, DEL, or C1 (U+0080-U+009F, UTF-8 C2 80..C2 9F). */
int table_needs_cleaning(const char *s);
/* Replaces each control character of s with '?' (C1: both bytes), in place. */
void table_clean(char *s);

/* "12.3G" with SI prefixes; unit appended ("B/s"). */
void fmt_si(double v, const char *unit, char *out, size_t len);

#endif
