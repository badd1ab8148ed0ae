/* Text tables: see table.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"
#include "lib/strutil.h"

struct table {
	size_t ncols, nrows;
	char **cells; /* nrows+1 rows (the header first) x ncols */
};

struct table *table_new(const char *const *headers)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	while (headers[t->ncols])
		t->ncols++;
	table_row(t, headers);
	return t;
}

void table_row(struct table *t, const char *const *cells)
{
	char **n = realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof(*n));

	if (!n)
		return;
	t->cells = n;
	for (size_t i = 0; i < t->ncols; i++) {
		char *c = strdup(cells[i] ? cells[i] : "-");

		if (c)
			str_make_printable(c);
		n[t->nrows * t->ncols + i] = c;
	}
	t->nrows++;
}

void table_print(struct table *t, FILE *f)
{
	size_t *w = calloc(t->ncols, sizeof(*w));

	if (!w)
		return;
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t n = s ? strlen(s) : 0;

			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		size_t last = t->ncols; /* the row's last cell with text: none after it padded */

		while (last > 1 && !(t->cells[r * t->ncols + last - 1] ?: "")[0])
			last--;
		for (size_t c = 0; c < last; c++) {
			const char *s = t->cells[r * t->ncols + c];

			if (c + 1 == last)
				fprintf(f, "%s", s ? s : "");
			else
				fprintf(f, "%-*s  ", (int)w[c], s ? s : "");
		}
		fputc('\n', f);
	}
	free(w);
}

void table_print_or(struct table *t, FILE *f, const char *none)
{
	if (t->nrows > 1)
		table_print(t, f);
	else
		fprintf(f, "%s\n", none);
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

void fmt_si(double v, const char *unit, char *out, size_t len)
{
	static const char *const pfx[] = { "", "k", "M", "G", "T", "P" };
	int i = 0;

	if (isnan(v)) {
		snprintf(out, len, "-");
		return;
	}
	while (fabs(v) >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	/* symbols take the prefix ("6.6 GB/s"), words follow it ("3.9k packets/s") */
	if (i == 0)
		snprintf(out, len, v == floor(v) ? "%.0f%s%s" : "%.3g%s%s", v, unit[0] ? " " : "",
			 unit);
	else if (strlen(unit) <= 4)
		snprintf(out, len, "%.3g %s%s", v, pfx[i], unit);
	else
		snprintf(out, len, "%.3g%s %s", v, pfx[i], unit);
}
