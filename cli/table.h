/* Aligned text tables for rocefabctl (the -j output is the REST JSON itself). */
#ifndef ROCEFAB_CLI_TABLE_H
#define ROCEFAB_CLI_TABLE_H

#include <stdio.h>

struct table;

struct table *table_new(const char *const *headers);
/* Adds a row; cells are copied, made printable (str_make_printable).  NULL cells print as
 * "-". */
void table_row(struct table *t, const char *const *cells);
void table_print(struct table *t, FILE *f);
/* The table, or the line none when it has no row (a list with nothing in it: "no alerts", not
 * a header alone). */
void table_print_or(struct table *t, FILE *f, const char *none);
void table_free(struct table *t);

/* "12.3G" with SI prefixes; unit appended ("B/s"). */
void fmt_si(double v, const char *unit, char *out, size_t len);

#endif
