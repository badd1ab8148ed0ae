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
#include <time.h>

#include <sqlite3.h>

#include "daemon/codec.h"
#include "daemon/rollup.h"
#include "lib/registry.h"

#define COPIES 10
/* samples of the run a bucket stands for: the run is seconds of fabric time, a few samples a
 * port, so minutes (hours) are made of SLOT_SAMPLES each, to see how buckets differ */
#define SLOT_SAMPLES 2

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
	int64_t raw_pages, samples, nports = 0, block_bytes = 0, nslot_total = 0, entries = 0;
	int64_t scratch_pages, encode_ns = 0;
	struct timespec t1, t2;
	static struct rollup slots[ROLLUP_BLOCK_MAX_SLOTS];
	struct buf blob;
	struct codec_chain chain;
	int64_t undecoded = 0, nrows = 0, nnext = 0;

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
	sqlite3_prepare_v2(scratch, "INSERT INTO rollups VALUES(-60, ?, ?, ?, ?)", -1, &ins, NULL);
	buf_init(&blob);
	codec_chain_init(&chain);
	while (sqlite3_step(ports) == SQLITE_ROW) {
		struct fold f = { .gauge = gauge, .max_id = 4095 };
		int64_t id = sqlite3_column_int64(ports, 0);
		size_t nslots = 0, in_slot = 0;

		/* every SLOT_SAMPLES rows of the port a bucket, the way a minute (an hour) is */
		rollup_init(&f.r, 0);
		codec_chain_reset(&chain);
		sqlite3_bind_int64(rows, 1, id);
		while (sqlite3_step(rows) == SQLITE_ROW) {
			f.t_ns = sqlite3_column_int64(rows, 0);
			if (codec_decode_row(&chain, f.t_ns, sqlite3_column_blob(rows, 1),
					     (size_t)sqlite3_column_bytes(rows, 1), fold_one, &f) < 0)
				undecoded++;
			nrows++;
			if (sqlite3_column_bytes(rows, 1) >= 2 &&
			    ((const uint8_t *)sqlite3_column_blob(rows, 1))[0] == CODEC_VERSION_2 &&
			    ((const uint8_t *)sqlite3_column_blob(rows, 1))[1] == CODEC_NEXT)
				nnext++;
			if (++in_slot == SLOT_SAMPLES && nslots < ROLLUP_BLOCK_MAX_SLOTS) {
				f.r.t_ns = (int64_t)nslots * ROLLUP_1M_NS;
				slots[nslots++] = f.r;
				rollup_init(&f.r, 0);
				in_slot = 0;
			}
		}
		sqlite3_reset(rows);
		rollup_fini(&f.r);
		buf_reset(&blob);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (nslots && rollup_block_encode(slots, nslots, 0, ROLLUP_1M_NS, &blob) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t2);
		encode_ns += (t2.tv_sec - t1.tv_sec) * 1000000000LL + (t2.tv_nsec - t1.tv_nsec);
		for (int k = 0; nslots && k < COPIES; k++) {
			sqlite3_bind_int64(ins, 1, id);
			sqlite3_bind_int64(ins, 2, (int64_t)(k + 1) * ROLLUP_1H_NS);
			sqlite3_bind_int64(ins, 3, (sqlite3_int64)nslots);
			sqlite3_bind_blob(ins, 4, blob.data, (int)blob.len, SQLITE_STATIC);
			sqlite3_step(ins);
			sqlite3_reset(ins);
		}
		for (size_t k = 0; k < nslots; k++) {
			entries += (int64_t)slots[k].n;
			rollup_fini(&slots[k]);
		}
		block_bytes += (int64_t)blob.len;
		nslot_total += (int64_t)nslots;
		nports++;
	}
	sqlite3_exec(scratch, "COMMIT", NULL, NULL, NULL);
	if (undecoded) {
		fprintf(stderr, "bench_storage: %lld of %lld sample rows did not decode\n",
			(long long)undecoded, (long long)nrows);
		return 1;
	}
	/* the table and its unique index */
	scratch_pages = one(scratch, "SELECT sum(pgsize) FROM dbstat WHERE name = 'rollups' OR "
				     "name LIKE 'sqlite_autoindex_rollups%'");
	if (!nslot_total) {
		fprintf(stderr, "bench_storage: fewer than %d samples a port: no bucket\n", SLOT_SAMPLES);
		return 1;
	}
	{
		double per_sample = (double)raw_pages / (double)samples;
		double per_slot = (double)scratch_pages / (double)(nslot_total * COPIES);
		double raw = per_sample * rate * keep[0];
		double minutes = per_slot * (double)nports * keep[1] / 60;
		double hours = per_slot * (double)nports * keep[2] / 3600;
		double total = raw + minutes + hours;

		printf("storage      raw samples %.2f bytes per sample on disk (%lld samples, %.1f MB of "
		       "pages; %lld rows, %.0f %% of them written as what changed since the row before)\n",
		       per_sample, (long long)samples, (double)raw_pages / 1e6, (long long)nrows,
		       100.0 * (double)nnext / (double)(nrows ? nrows : 1));
		printf("             rollups: a bucket of a port %.0f bytes on disk in a block of %.1f "
		       "(%.0f bytes a block compressed in %.0f us, %.1f entries a bucket, %.2f bytes an "
		       "entry), %lld ports\n",
		       per_slot, (double)nslot_total / (double)nports, (double)block_bytes / (double)nports,
		       (double)encode_ns / 1e3 / (double)nports,
		       (double)entries / (double)nslot_total, per_slot * (double)nslot_total / (double)entries,
		       (long long)nports);
		printf("             projected at %.0f samples/s: raw %.0f h %.1f GB + minutes %.0f d "
		       "%.1f GB + hours %.0f d %.1f GB = %.1f GB (target <= 50 GB: %s)\n",
		       rate, keep[0] / 3600, raw / 1e9, keep[1] / 86400, minutes / 1e9, keep[2] / 86400,
		       hours / 1e9, total / 1e9, total <= 50e9 ? "met" : "NOT MET");
		printf("             raw samples alone for 7 d, as before the rollups: %.0f GB\n",
		       per_sample * rate * 7 * 86400 / 1e9);
	}
	buf_fini(&blob);
	codec_chain_fini(&chain);
	sqlite3_finalize(ports);
	sqlite3_finalize(rows);
	sqlite3_finalize(ins);
	sqlite3_close(db);
	sqlite3_close(scratch);
	reg_free(reg);
	return 0;
}
