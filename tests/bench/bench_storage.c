/* Storage benchmark: the bytes a fabric's counters take on disk, measured on a database that
 * rocefabd filled (make bench's 1,104-device fabric), and the disk the default retentions
 * would take at that fabric's sample rate.
 *
 *   bench_storage DB SAMPLES_PER_S [RAW_S MINUTE_S HOUR_S]
 *
 * Raw: the samples table's pages (sqlite's dbstat) over the samples its rows hold.  Rollups:
 * the run is seconds of fabric time, so no minute closed in it; each port's samples are folded
 * into the rollup the writer would keep (daemon/rollup.c, the same code), written 10 times per
 * port into a scratch table shaped as rocefabd's (so sqlite's row and page overhead count),
 * and that table's pages measured.  A minute's or an hour's row holds one entry per counter
 * and priority whatever the samples in it, so the size does not depend on the run's length.
 * The projection multiplies those measured sizes by the retentions (default 6 h, 14 d, 400 d). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "daemon/codec.h"
#include "daemon/rollup.h"
#include "lib/registry.h"

#define COPIES 10

struct fold {
	struct rollup r;
	const bool *gauge; /* by db counter id */
	uint32_t max_id;
	int64_t t_ns;
};

static int fold_one(const struct sample_entry *se, void *ctx)
{
	struct fold *f = ctx;

	return rollup_add_sample(&f->r, se, f->t_ns, se->counter <= f->max_id && f->gauge[se->counter]);
}

static int64_t one(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "bench_storage: %s: %s\n", sql, sqlite3_errmsg(db));
		exit(1);
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int main(int argc, char **argv)
{
	double rate, keep[3] = { 6 * 3600.0, 14 * 86400.0, 400 * 86400.0 };
	sqlite3 *db, *scratch;
	sqlite3_stmt *ports, *rows, *ins, *names;
	struct reg *reg = NULL;
	struct rf_err e = { 0 };
	bool gauge[4096] = { false };
	int64_t raw_pages, samples, nports = 0, rollup_bytes = 0, entries = 0, scratch_pages;
	struct buf blob;

	if (argc != 3 && argc != 6) {
		fprintf(stderr, "usage: bench_storage DB SAMPLES_PER_S [RAW_S MINUTE_S HOUR_S]\n");
		return 2;
	}
	rate = atof(argv[2]);
	if (argc == 6)
		for (int i = 0; i < 3; i++)
			keep[i] = atof(argv[3 + i]);
	if (reg_load_builtin(&reg, &e) < 0 ||
	    sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_open(":memory:", &scratch) != SQLITE_OK) {
		fprintf(stderr, "bench_storage: cannot open %s or the registry\n", argv[1]);
		return 1;
	}
	/* the counters' kinds by their ids in this database */
	if (sqlite3_prepare_v2(db, "SELECT id, name FROM counters", -1, &names, NULL) != SQLITE_OK)
		return 1;
	while (sqlite3_step(names) == SQLITE_ROW) {
		const struct reg_counter *rc = reg_find(reg, (const char *)sqlite3_column_text(names, 1));
		int64_t id = sqlite3_column_int64(names, 0);

		if (rc && id >= 0 && id < 4096)
			gauge[id] = rc->kind == REG_KIND_GAUGE;
	}
	sqlite3_finalize(names);
	raw_pages = one(db, "SELECT sum(pgsize) FROM dbstat WHERE name = 'samples'");
	samples = one(db, "SELECT sum(n) FROM samples");
	if (raw_pages <= 0 || samples <= 0) {
		fprintf(stderr, "bench_storage: no samples in %s\n", argv[1]);
		return 1;
	}
	{
		/* the scratch table in pages of the database's size */
		char sql[64];

		snprintf(sql, sizeof(sql), "PRAGMA page_size=%lld", (long long)one(db, "PRAGMA page_size"));
		sqlite3_exec(scratch, sql, NULL, NULL, NULL);
	}
	sqlite3_exec(scratch, "CREATE TABLE rollups(res INTEGER NOT NULL, port_id INTEGER NOT NULL, "
			      "t_ns INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, "
			      "UNIQUE(res, port_id, t_ns)); BEGIN",
		     NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "SELECT DISTINCT port_id FROM samples", -1, &ports, NULL);
	sqlite3_prepare_v2(db, "SELECT t_ns, data FROM samples WHERE port_id = ? ORDER BY t_ns", -1, &rows, NULL);
	sqlite3_prepare_v2(scratch, "INSERT INTO rollups VALUES(60, ?, ?, ?, ?)", -1, &ins, NULL);
	buf_init(&blob);
	while (sqlite3_step(ports) == SQLITE_ROW) {
		struct fold f = { .gauge = gauge, .max_id = 4095 };
		int64_t id = sqlite3_column_int64(ports, 0);

		rollup_init(&f.r, 0);
		sqlite3_bind_int64(rows, 1, id);
		while (sqlite3_step(rows) == SQLITE_ROW) {
			f.t_ns = sqlite3_column_int64(rows, 0);
			if (!f.r.t_ns)
				f.r.t_ns = rollup_bucket(f.t_ns, ROLLUP_1M_NS);
			codec_decode(sqlite3_column_blob(rows, 1), (size_t)sqlite3_column_bytes(rows, 1),
				     fold_one, &f);
		}
		sqlite3_reset(rows);
		buf_reset(&blob);
		if (rollup_encode(&f.r, &blob) < 0)
			return 1;
		for (int k = 0; k < COPIES; k++) {
			sqlite3_bind_int64(ins, 1, id);
			sqlite3_bind_int64(ins, 2, f.r.t_ns + k * ROLLUP_1M_NS);
			sqlite3_bind_int64(ins, 3, (sqlite3_int64)f.r.n);
			sqlite3_bind_blob(ins, 4, blob.data, (int)blob.len, SQLITE_STATIC);
			sqlite3_step(ins);
			sqlite3_reset(ins);
		}
		rollup_bytes += (int64_t)blob.len;
		entries += (int64_t)f.r.n;
		nports++;
		rollup_fini(&f.r);
	}
	sqlite3_exec(scratch, "COMMIT", NULL, NULL, NULL);
	/* the table and its unique index */
	scratch_pages = one(scratch, "SELECT sum(pgsize) FROM dbstat WHERE name = 'rollups' OR "
				     "name LIKE 'sqlite_autoindex_rollups%'");
	{
		double per_sample = (double)raw_pages / (double)samples;
		double per_row = (double)scratch_pages / (double)(nports * COPIES);
		double raw = per_sample * rate * keep[0];
		double minutes = per_row * (double)nports * keep[1] / 60;
		double hours = per_row * (double)nports * keep[2] / 3600;
		double total = raw + minutes + hours;

		printf("storage      raw samples %.2f bytes per sample on disk (%lld samples, %.1f MB of "
		       "pages); a rollup row %.0f bytes on disk (%.0f in its blob, %.1f entries, %.2f "
		       "bytes an entry), %lld ports\n",
		       per_sample, (long long)samples, (double)raw_pages / 1e6, per_row,
		       (double)rollup_bytes / (double)nports, (double)entries / (double)nports,
		       per_row * (double)nports / (double)entries, (long long)nports);
		printf("             projected at %.0f samples/s: raw %.0f h %.1f GB + minutes %.0f d "
		       "%.1f GB + hours %.0f d %.1f GB = %.1f GB (target <= 50 GB: %s)\n",
		       rate, keep[0] / 3600, raw / 1e9, keep[1] / 86400, minutes / 1e9, keep[2] / 86400,
		       hours / 1e9, total / 1e9, total <= 50e9 ? "met" : "NOT MET");
		printf("             before rollups (raw samples for 7 d): %.0f GB\n",
		       per_sample * rate * 7 * 86400 / 1e9);
	}
	buf_fini(&blob);
	sqlite3_finalize(ports);
	sqlite3_finalize(rows);
	sqlite3_finalize(ins);
	sqlite3_close(db);
	sqlite3_close(scratch);
	reg_free(reg);
	return 0;
}
