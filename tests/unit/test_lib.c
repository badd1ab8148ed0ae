/* Unit tests of lib/: SHA-256, time parsing, configuration files, hash map, JSON paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/conf.h"
#include "lib/hmap.h"
#include "lib/hash.h"
#include "lib/httpc.h"
#include "lib/httpd.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/probeops.h"
#include "lib/ratelimit.h"
#include "lib/router.h"
#include "lib/sha256.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "lib/tokenfile.h"
#include "tests/unit/unit.h"

static void sha_hex(const char *msg, size_t len, char out[65])
{
	uint8_t d[SHA256_DIGEST_LEN];

	sha256(msg, len, d);
	hex_encode(d, sizeof(d), out);
}

static void test_sha256_vectors(void **state)
{
	char hex[65];
	char *million;
	struct sha256 s;
	uint8_t d[SHA256_DIGEST_LEN];

	(void)state;
	/* FIPS 180-4 examples */
	sha_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* one million 'a', fed in uneven pieces */
	million = malloc(1000000);
	assert_non_null(million);
	memset(million, 'a', 1000000);
	sha256_init(&s);
	for (size_t off = 0; off < 1000000;) {
		size_t n = off % 7 == 0 ? 63 : 1001;

		if (n > 1000000 - off)
			n = 1000000 - off;
		sha256_update(&s, million + off, n);
		off += n;
	}
	sha256_final(&s, d);
	hex_encode(d, sizeof(d), hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

/* Natural order, as lists are shown: h2 before h10, leading zeros ignored, the rest by byte. */
static void test_natural_order(void **state)
{
	(void)state;
	assert_true(str_natcmp("h2", "h10") < 0);
	assert_true(str_natcmp("h10", "h2") > 0);
	assert_true(str_natcmp("Ethernet4", "Ethernet12") < 0);
	assert_true(str_natcmp("leaf0:leaf0:h3", "leaf0:leaf0:h12") < 0);
	assert_true(str_natcmp("h007", "h7") == 0);
	assert_true(str_natcmp("h1a", "h1b") < 0);
	assert_true(str_natcmp("h", "h1") < 0);
	assert_true(str_natcmp("spine0", "leaf9") > 0);
	assert_int_equal(str_natcmp("", ""), 0);
	assert_true(str_natcmp("99999999999999999999999", "100000000000000000000000") < 0); /* no overflow */
}

/* A glob pattern that leaves a bracket expression open (fnmatch takes the '[' as itself): where. */
static void test_glob_open_bracket(void **state)
{
	static const char *const closed[] = { "gpu*", "gpu[1-4]", "h[!0]*", "h[]]", "h[!]a]", "x[[:digit:]]y",
					      "a\\[b", "[a:]", "", "h[[:x]", "x[[:a]y:]", "h[\\]]",
					      "x[[:digit]" /* a set of '[', ':', 'd'... */, NULL };
	const char *bad = "gpu[1-4*";

	(void)state;
	for (int i = 0; closed[i]; i++)
		if (str_glob_open_bracket(closed[i]))
			fail_msg("'%s' is taken as left open", closed[i]);
	assert_ptr_equal(str_glob_open_bracket(bad), bad + 3);
	assert_non_null(str_glob_open_bracket("h[]"));
	assert_non_null(str_glob_open_bracket("gpu[\\]")); /* the '\\' escapes the ']' */
	assert_non_null(str_glob_open_bracket("x[[=]=]"));  /* an equivalence class of ']', then none */
	assert_null(str_glob_open_bracket("x[[=]=]]"));
	assert_null(str_glob_open_bracket("x[[.-.]a]"));
	assert_non_null(str_glob_open_bracket("a[b]c["));
	assert_null(str_glob_open_bracket("a\\"));
}

/* Bidirectional formatting characters (which reorder the text shown) are found, others not. */
static void test_bidi_controls(void **state)
{
	(void)state;
	assert_false(str_has_bidi_controls("maintenance window, ticket 7 \xc3\xa9t\xc3\xa9 \xe2\x80\x94 ok"));
	assert_true(str_has_bidi_controls("ok \xe2\x80\xae evil"));	  /* U+202E */
	assert_true(str_has_bidi_controls("\xe2\x81\xa6x\xe2\x81\xa9")); /* U+2066, U+2069 */
	assert_true(str_has_bidi_controls("a\xe2\x80\x8f"));		  /* U+200F */
	assert_true(str_has_bidi_controls("\xd8\x9c"));			  /* U+061C */
	assert_false(str_has_bidi_controls("\xe2\x80\xa9\xe2\x80\x8d")); /* U+2029, U+200D */
}

static void test_durations(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(tu_parse_duration("1s", &v), 0);
	assert_int_equal(v, NSEC_PER_SEC);
	assert_int_equal(tu_parse_duration("250ms", &v), 0);
	assert_int_equal(v, 250 * NSEC_PER_MSEC);
	assert_int_equal(tu_parse_duration("1.5", &v), 0);
	assert_int_equal(v, 1500 * NSEC_PER_MSEC);
	assert_int_equal(tu_parse_duration("2m", &v), 0);
	assert_int_equal(v, 120 * NSEC_PER_SEC);
	assert_int_equal(tu_parse_duration("100us", &v), 0);
	assert_int_equal(v, 100 * NSEC_PER_USEC);
	/* and back, in the largest unit that holds it whole */
	{
		static const char *const texts[] = { "14d", "6h", "2m", "90s", "250ms", "100us", "7ns", "1500ms" };
		char buf[32];

		for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
			assert_int_equal(tu_parse_duration(texts[i], &v), 0);
			assert_string_equal(tu_format_duration(v, buf, sizeof(buf)), texts[i]);
		}
		assert_string_equal(tu_format_duration(0, buf, sizeof(buf)), "0s");
	}
	assert_int_equal(tu_parse_duration("-1s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("1 s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("nan", &v), -EINVAL);
	/* the longest an int64 of nanoseconds holds is 106751 days and a bit; more is refused,
	 * never wrapped */
	assert_int_equal(tu_parse_duration("106751d", &v), 0);
	assert_true(v == INT64_C(106751) * 86400 * NSEC_PER_SEC);
	assert_int_equal(tu_parse_duration("106752d", &v), -ERANGE);
	assert_int_equal(tu_parse_duration("9223372036854775807ns", &v), -ERANGE); /* a double rounds it up */
	assert_int_equal(tu_parse_duration("99999999999999999999s", &v), -ERANGE);
	/* a number is plain decimal: what else strtod reads is refused */
	assert_int_equal(tu_parse_duration("1e30s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("1e400s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("inf", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("0x10", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("01s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("00", &v), -EINVAL);
	assert_int_equal(tu_parse_duration(".5s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("5.s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration(" 5s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("0.5s", &v), 0);
	assert_true(v == NSEC_PER_SEC / 2);
	assert_int_equal(tu_parse_duration("0", &v), 0);
	assert_true(v == 0);
	assert_int_equal(tu_parse_duration("10.25ms", &v), 0);
	assert_true(v == 10250000);
}

static void test_rfc3339(void **state)
{
	char buf[64];
	int64_t v;

	(void)state;
	assert_int_equal(tu_parse_rfc3339("1970-01-01T00:00:00Z", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(tu_parse_rfc3339("2026-11-30T14:49:55.123456Z", &v), 0);
	assert_int_equal(v, 1796050195123456000LL);
	assert_string_equal(tu_format_rfc3339(v, buf, sizeof(buf)), "2026-11-30T14:49:55.123456Z");
	assert_int_equal(tu_parse_rfc3339("2026-11-30T16:49:55+02:00", &v), 0);
	assert_int_equal(v, 1796050195000000000LL);
	assert_int_equal(tu_parse_rfc3339("2024-02-29T00:00:00Z", &v), 0);
	assert_int_equal(tu_parse_rfc3339("2023-02-29T00:00:00Z", &v), -EINVAL);
	assert_int_equal(tu_parse_rfc3339("2026-13-01T00:00:00Z", &v), -EINVAL);
	assert_int_equal(tu_parse_rfc3339("2026-11-30T14:49:55", &v), -EINVAL);
	assert_int_equal(tu_parse_rfc3339("2026-11-30T14:49:55Zjunk", &v), -EINVAL);
	/* beyond int64 nanoseconds: refused, not overflowed (found by tests/fuzz/fuzz_time.c) */
	assert_int_equal(tu_parse_rfc3339("2261-12-31T23:59:59.999999Z", &v), 0);
	assert_int_equal(v, 9214646399999999000LL);
	assert_int_equal(tu_parse_rfc3339("2262-04-12T00:00:00Z", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("9999-12-31T23:59:59Z", &v), -ERANGE);
	assert_int_equal(tu_parse_time("9999-12-31T23:59:59Z", 0, &v), -ERANGE);
	/* operator time arguments */
	assert_int_equal(tu_parse_time("now", 5 * NSEC_PER_SEC, &v), 0);
	assert_int_equal(v, 5 * NSEC_PER_SEC);
	assert_int_equal(tu_parse_time("-2s", 5 * NSEC_PER_SEC, &v), 0);
	assert_int_equal(v, 3 * NSEC_PER_SEC);
	assert_int_equal(tu_parse_time("1764514195.5", 0, &v), 0);
	assert_int_equal(v, 1764514195500000000LL);
	assert_int_equal(tu_parse_time("yesterday", 0, &v), -EINVAL);

	/* the times an int64 of nanoseconds holds, and no more (years 2262 on once overflowed) */
	assert_int_equal(tu_parse_rfc3339("2262-04-11T23:47:16.854775807Z", &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(tu_parse_rfc3339("2262-04-11T23:47:16.854775808Z", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("2262-04-12T00:00:00Z", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("2262-04-12T01:00:00+02:00", &v), 0);
	assert_int_equal(tu_parse_rfc3339("9999-12-31T23:59:59Z", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("9999-12-31T23:59:59.999999999-23:59", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("1677-09-21T00:12:43.145224192Z", &v), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(tu_parse_rfc3339("1677-09-21T00:12:43.145224191Z", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("0000-01-01T00:00:00Z", &v), -ERANGE);
	assert_int_equal(tu_parse_rfc3339("1969-12-31T23:59:59.5Z", &v), 0);
	assert_int_equal(v, -NSEC_PER_SEC / 2);
	/* an operator's time is after 1970 (rocefab's 0 means none) and before 2262 */
	assert_int_equal(tu_parse_time("9999-12-31T23:59:59Z", 0, &v), -ERANGE);
	assert_int_equal(tu_parse_time("1969-12-31T23:59:59Z", 0, &v), -ERANGE);
	assert_int_equal(tu_parse_time("9300000000", 0, &v), -ERANGE);
	assert_int_equal(tu_parse_time("1e30", 0, &v), -EINVAL);
	assert_int_equal(tu_parse_time("0x10", 0, &v), -EINVAL);
	assert_int_equal(tu_parse_time("00", 0, &v), -EINVAL);
	assert_int_equal(tu_parse_time("017", 0, &v), -EINVAL);
	assert_int_equal(tu_parse_time("9200000000", 0, &v), 0);
	assert_true(v == 9200000000LL * NSEC_PER_SEC);
	assert_int_equal(tu_parse_time("-10s", 5 * NSEC_PER_SEC, &v), -ERANGE);
	assert_int_equal(tu_parse_time("-99999999999999999999s", 5 * NSEC_PER_SEC, &v), -ERANGE);
	assert_int_equal(tu_parse_time("-1d", INT64_MIN + NSEC_PER_SEC, &v), -ERANGE);
	/* every text tu_parse_rfc3339 takes, with a space for the T too (found by fuzz_time) */
	assert_int_equal(tu_parse_time("2026-11-30 16:49:55+02:00", 0, &v), 0);
	assert_int_equal(v, 1796050195000000000LL);
}

static void test_canonical_integers(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(str_parse_uint("0", 7, &v), 0);
	assert_true(v == 0);
	assert_int_equal(str_parse_uint("3", 7, &v), 0);
	assert_true(v == 3);
	assert_int_equal(str_parse_uint("18446744073709551615", UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	/* one spelling per number: "03" and "+3" were once queue 3 */
	v = 42;
	static const char *const bad[] = { "03", "+3", "-3", " 3", "3 ", "0x3", "3.0", "", "00", "3a", "1e3",
					   "\t3", "99999999999999999999x" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (str_parse_uint(bad[i], UINT64_MAX, &v) != -EINVAL)
			fail_msg("'%s' was read as a number", bad[i]);
	assert_int_equal(str_parse_uint(NULL, 7, &v), -EINVAL);
	/* too large: for the caller, or for any uint64 */
	assert_int_equal(str_parse_uint("8", 7, &v), -ERANGE);
	assert_int_equal(str_parse_uint("18446744073709551616", UINT64_MAX, &v), -ERANGE);
	assert_int_equal(str_parse_uint("99999999999999999999", UINT64_MAX, &v), -ERANGE);
	assert_true(v == 42);
}

/* A token file of mode m holding text, in dir; its path in path. */
static void token_file(const char *dir, const char *name, mode_t m, const char *text, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, m), 0);
}

/* A line whose message already ends with its code (an rf_err_str() of the error) says the
 * code once: the agent's lines read "... [INVALID_TOKEN] [INVALID_TOKEN]". */
static void test_log_code_once(void **state)
{
	char path[] = "/tmp/rocefab-log-XXXXXX", text[1024];
	int fd = mkstemp(path), saved = dup(2), old = log_get_level();
	FILE *f;
	size_t n;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_true(dup2(fd, 2) == 2);
	log_set_target(LOG_TARGET_STDERR);
	log_set_level(LOG_INFO);
	log_msg(LOG_ERR, "t", "X_CODE", "refused: no [X_CODE]");
	log_msg(LOG_ERR, "t", "X_CODE", "plain");
	log_msg(LOG_ERR, "t", NULL, "no code [Y]");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	log_set_level(old);
	f = fdopen(fd, "r");
	assert_non_null(f);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(path);
	assert_non_null(strstr(text, "t: refused: no [X_CODE]\n"));
	assert_null(strstr(text, "[X_CODE] [X_CODE]"));
	assert_non_null(strstr(text, "t: plain [X_CODE]\n"));
	assert_non_null(strstr(text, "t: no code [Y]\n"));
}

static void test_token_files(void **state)
{
	static const struct {
		mode_t mode;
		int result;
		bool warned;
	} cases[] = {
		{ 0600, 0, false },	  { 0400, 0, false },	    { 0640, 0, true },
		{ 0620, 0, true },	  { 0660, 0, true },	    { 0604, -EACCES, false },
		{ 0644, -EACCES, false }, { 0602, -EACCES, false }, { 0666, -EACCES, false },
	};
	char dir[64] = "/tmp/rocefab-token-XXXXXX", path[128], cmd[160];
	struct rf_err e, w;
	bool warned;
	char *tok;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		token_file(dir, "t", cases[i].mode, "rfb_secret  # comment\nsecond line\n", path, sizeof(path));
		memset(&e, 0, sizeof(e));
		memset(&w, 0, sizeof(w));
		tok = NULL;
		if (tokenfile_read(path, &tok, &warned, &w, &e) != cases[i].result)
			fail_msg("mode %04o: %s", (unsigned)cases[i].mode, e.msg);
		if (cases[i].result == 0) {
			assert_string_equal(tok, "rfb_secret");
			assert_int_equal(warned, cases[i].warned);
			if (warned) {
				assert_string_equal(w.code, "TOKEN_FILE_MODE");
				assert_string_equal(w.where, path);
				assert_non_null(strstr(w.msg, "chmod 600"));
			}
		} else {
			/* refused, naming the file and the fix */
			assert_null(tok);
			assert_string_equal(e.code, "TOKEN_FILE_MODE");
			assert_string_equal(e.where, path);
			assert_non_null(strstr(e.msg, "chmod 600"));
			assert_non_null(strstr(e.msg, path));
		}
		free(tok);
	}
	/* after a blank line and spaces: the first word all the same (it was "empty") */
	token_file(dir, "blank", 0600, "\n  rfb_secret\n", path, sizeof(path));
	assert_int_equal(tokenfile_read(path, &tok, &warned, &w, &e), 0);
	assert_string_equal(tok, "rfb_secret");
	free(tok);
	/* a first word that fills what is read: refused, not cut short */
	{
		char big[400];

		memset(big, ' ', 100);
		memset(big + 100, 'x', 299);
		big[399] = '\0';
		token_file(dir, "long", 0600, big, path, sizeof(path));
		assert_int_equal(tokenfile_read(path, &tok, &warned, &w, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "runs past"));
	}
	/* blanks only, empty, missing */
	token_file(dir, "blanks", 0600, "\n", path, sizeof(path));
	assert_int_equal(tokenfile_read(path, &tok, &warned, &w, &e), -EINVAL);
	assert_string_equal(e.code, "TOKEN_UNREADABLE");
	assert_non_null(strstr(e.msg, "holds no token"));
	token_file(dir, "empty", 0600, "", path, sizeof(path));
	assert_int_equal(tokenfile_read(path, &tok, &warned, &w, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "is empty"));
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(tokenfile_read(path, &tok, &warned, &w, &e), -ENOENT);
	assert_string_equal(e.code, "TOKEN_UNREADABLE");
	assert_non_null(strstr(e.msg, "cannot read token file"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_sizes(void **state)
{
	struct settings2 {
		int64_t n;
		int64_t d;
		uint64_t b;
	} s2 = { 0 };
	static const struct conf_opt o2[] = {
		CONF_OPT("a.n", CONF_INT, struct settings2, n, "1", "n"),
		CONF_OPT("a.d", CONF_DURATION, struct settings2, d, "1s", "d"),
		CONF_OPT("a.b", CONF_SIZE, struct settings2, b, "1", "b"),
		CONF_OPT_END,
	};
	struct rf_err e = { 0 };
	uint64_t b;

	(void)state;
	assert_int_equal(conf_parse_size("64K", &b), 0);
	assert_true(b == 65536);
	assert_int_equal(conf_parse_size("1.5MiB", &b), 0);
	assert_true(b == 1572864);
	/* a store of a large fabric is sized in terabytes (store.max_bytes) */
	assert_int_equal(conf_parse_size("2TiB", &b), 0);
	assert_true(b == 2ULL << 40);
	assert_int_equal(conf_parse_size("1.5TB", &b), 0);
	assert_true(b == 1500000000000ULL);
	assert_int_equal(conf_parse_size("16777215T", &b), 0);
	assert_true(b == 16777215ULL << 40);
	assert_int_equal(conf_parse_size("16777216TiB", &b), -ERANGE);
	assert_int_equal(conf_parse_size("2PiB", &b), -EINVAL);
	/* as sizes are printed (rocefabctl switches: "400 kB..1.6 MB"), to be typed back */
	assert_int_equal(conf_parse_size("400 kB", &b), 0);
	assert_true(b == 400000);
	assert_int_equal(conf_parse_size("1.6 MB", &b), 0);
	assert_true(b == 1600000);
	assert_int_equal(conf_parse_size("400kB", &b), 0);
	assert_true(b == 400000);
	assert_int_equal(conf_parse_size("400  kB", &b), -EINVAL);
	assert_int_equal(conf_parse_size("400 ", &b), -EINVAL);
	assert_int_equal(conf_parse_size("400 parsecs", &b), -EINVAL);
	assert_int_equal(conf_parse_size("0.5", &b), -EINVAL);
	assert_int_equal(conf_parse_size("-1", &b), -EINVAL);
	/* no hexadecimal (strtod would take "0x10" as 16 and "0x1p4" as 16 too) */
	assert_int_equal(conf_parse_size("0x10", &b), -EINVAL);
	assert_int_equal(conf_parse_size("0x1p4", &b), -EINVAL);
	assert_int_equal(conf_parse_size("1.5e0x", &b), -EINVAL);
	/* whole numbers exactly, up to the last one a uint64 holds (a double lost digits) */
	assert_int_equal(conf_parse_size("9007199254740993", &b), 0);
	assert_true(b == 9007199254740993ULL);
	assert_int_equal(conf_parse_size("18446744073709551615", &b), 0);
	assert_true(b == UINT64_MAX);
	assert_int_equal(conf_parse_size("17179869183GiB", &b), 0);
	assert_true(b == UINT64_MAX - ((1ULL << 30) - 1));
	/* beyond it: refused, never wrapped */
	assert_int_equal(conf_parse_size("18446744073709551616", &b), -ERANGE);
	assert_int_equal(conf_parse_size("17179869184GiB", &b), -ERANGE);
	assert_int_equal(conf_parse_size("99999999999999999999", &b), -ERANGE);
	assert_int_equal(conf_parse_size("1e30MiB", &b), -ERANGE);
	assert_int_equal(conf_parse_size("1e400", &b), -ERANGE);

	/* and the settings that use them say so */
	assert_int_equal(conf_init(o2, &s2, &e), 0);
	assert_int_equal(conf_load_string(o2, &s2, "[a]\nb = 1e30MiB\n", "t.conf", &e), -ERANGE);
	assert_string_equal(e.code, "CONF_BAD_VALUE");
	assert_non_null(strstr(e.msg, "too large"));
	assert_int_equal(conf_load_string(o2, &s2, "[a]\nd = 99999999999999999999s\n", "t.conf", &e), -ERANGE);
	assert_non_null(strstr(e.msg, "a.d"));
	assert_int_equal(conf_load_string(o2, &s2, "[a]\nn = 99999999999999999999\n", "t.conf", &e), -ERANGE);
	assert_int_equal(s2.n, 1);
	assert_true(s2.b == 1);
	assert_true(s2.d == NSEC_PER_SEC);
	conf_fini(o2, &s2);
}

struct settings {
	char *listen;
	int64_t threads;
	bool flag;
	int64_t interval;
	uint64_t max_body;
	int mode;
	double ratio;
};

static const char *const modes[] = { "off", "advise", "auto", NULL };
static const struct conf_opt opts[] = {
	CONF_OPT("api.listen", CONF_STRING, struct settings, listen, "127.0.0.1:9750", "where"),
	CONF_OPT("api.threads", CONF_INT, struct settings, threads, "2", "n", .min = 1, .max = 64),
	CONF_OPT("api.flag", CONF_BOOL, struct settings, flag, "false", "f"),
	CONF_OPT("agent.interval", CONF_DURATION, struct settings, interval, "1s", "i",
		 .min = NSEC_PER_MSEC, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("api.max_body", CONF_SIZE, struct settings, max_body, "4MiB", "b"),
	CONF_OPT("tuner.mode", CONF_ENUM, struct settings, mode, "advise", "m", .choices = modes),
	CONF_OPT("tuner.ratio", CONF_DOUBLE, struct settings, ratio, "0.5", "r"),
	CONF_OPT_END,
};

static void test_conf(void **state)
{
	struct settings s = { 0 };
	struct rf_err e;
	struct conf_overrides o = { .n = 0 };

	(void)state;
	assert_int_equal(conf_init(opts, &s, &e), 0);
	assert_string_equal(s.listen, "127.0.0.1:9750");
	assert_int_equal(s.max_body, 4 << 20);
	assert_int_equal(s.mode, 1);
	assert_int_equal(conf_load_string(opts, &s,
					  "# comment\n\n[api]\nlisten = 0.0.0.0:80   # inline\n"
					  "threads=8\nflag = yes\n[agent]\ninterval = 250ms\n"
					  "[tuner]\nmode = auto\nratio = 0.25\n",
					  "t.conf", &e),
			 0);
	assert_string_equal(s.listen, "0.0.0.0:80");
	assert_int_equal(s.threads, 8);
	assert_true(s.flag);
	assert_int_equal(s.interval, 250 * NSEC_PER_MSEC);
	assert_int_equal(s.mode, 2);
	assert_true(s.ratio == 0.25);

	/* errors name file:line and the key */
	assert_int_equal(conf_load_string(opts, &s, "[api]\n\nbogus = 1\n", "t.conf", &e),
			 -ENOENT);
	assert_string_equal(e.where, "t.conf:3");
	assert_string_equal(e.code, "CONF_UNKNOWN_KEY");
	assert_non_null(strstr(e.msg, "bogus"));
	assert_int_equal(conf_load_string(opts, &s, "[api]\nthreads = 100\n", "t.conf", &e),
			 -ERANGE);
	assert_string_equal(e.where, "t.conf:2");
	/* a duration's range in units that read ("1ms..1h", not "0.001s..3600s") */
	assert_int_equal(conf_load_string(opts, &s, "[agent]\ninterval = 2h\n", "t.conf", &e), -ERANGE);
	assert_non_null(strstr(e.msg, "out of range 1ms..1h"));
	assert_int_equal(conf_load_string(opts, &s, "[api]\nthreads = ten\n", "t.conf", &e),
			 -EINVAL);
	assert_string_equal(e.code, "CONF_BAD_VALUE");
	assert_int_equal(conf_load_string(opts, &s, "[tuner]\nmode = yolo\n", "t.conf", &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "off, advise, auto"));
	assert_int_equal(conf_load_string(opts, &s, "listen = x\n", "t.conf", &e), -EINVAL);
	assert_int_equal(conf_load_string(opts, &s, "[api\n", "t.conf", &e), -EINVAL);
	assert_int_equal(conf_load_string(opts, &s, "[api]\nlisten\n", "t.conf", &e), -EINVAL);
	assert_int_equal(conf_load_string(opts, &s, "[api]\nthreads=2\nthreads=3\n", "t.conf", &e),
			 -EINVAL);
	assert_string_equal(e.code, "CONF_DUPLICATE_KEY");
	assert_int_equal(conf_load_string(opts, &s, "[api]\nlisten = \"a # b\"\n", "t.conf", &e),
			 0);
	assert_string_equal(s.listen, "a # b");
	/* --dump-config prints a file that loads into the same settings: values that need quotes
	 * get them, long ones come whole (found by fuzz_conf) */
	{
		static const char *const vals[] = { "a # b", " lead", "trail\t", "\"q\" \\ ;x", NULL };
		char long_v[700];

		memset(long_v, 'x', sizeof(long_v) - 1);
		long_v[sizeof(long_v) - 1] = '\0';
		for (int i = 0; i < 5; i++) {
			const char *v = vals[i] ? vals[i] : long_v;
			struct settings s2 = { 0 };
			char *text = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&text, &len);

			assert_int_equal(conf_set(opts, &s, "api.listen", v, "t", &e), 0);
			conf_dump(opts, &s, m);
			fclose(m);
			assert_int_equal(conf_init(opts, &s2, &e), 0);
			assert_int_equal(conf_load_string(opts, &s2, text, "dump", &e), 0);
			assert_string_equal(s2.listen, v);
			conf_fini(opts, &s2);
			free(text);
		}
	}

	/* command-line overrides win over the file */
	assert_int_equal(conf_override(&o, "api.listen", "[::1]:1", "--listen"), 0);
	assert_int_equal(conf_override(&o, NULL, "api.threads=3", "-o"), 0);
	assert_int_equal(conf_apply_overrides(opts, &s, &o, &e), 0);
	assert_string_equal(s.listen, "[::1]:1");
	assert_int_equal(s.threads, 3);
	o.n = 0;
	assert_int_equal(conf_override(&o, NULL, "api.nothing=3", "-o"), 0);
	assert_int_equal(conf_apply_overrides(opts, &s, &o, &e), -ENOENT);
	assert_string_equal(e.where, "-o");
	conf_fini(opts, &s);
}

static void test_hmap(void **state)
{
	struct hmap h;
	char (*keys)[16] = calloc(5000, 16);

	(void)state;
	hmap_init(&h);
	for (int i = 0; i < 5000; i++) {
		snprintf(keys[i], 16, "k%d", i);
		assert_int_equal(hmap_put(&h, keys[i], (void *)(intptr_t)(i + 1), NULL), 0);
	}
	assert_int_equal(h.len, 5000);
	for (int i = 0; i < 5000; i += 2)
		assert_int_equal((intptr_t)hmap_del(&h, keys[i]), i + 1);
	for (int i = 0; i < 5000; i++)
		assert_int_equal((intptr_t)hmap_get(&h, keys[i]), i % 2 ? i + 1 : 0);
	assert_int_equal(h.len, 2500);
	{
		size_t it = 0, n = 0;
		const char *k;
		void *v;

		while (hmap_next(&h, &it, &k, &v))
			n++;
		assert_int_equal(n, 2500);
	}
	hmap_fini(&h);
	free(keys);
}

struct sweep_ctx {
	unsigned *offered; /* per key index */
	unsigned mod, rem;
};

static bool sweep_drop(const char *key, void *val, void *ctx)
{
	struct sweep_ctx *c = ctx;
	intptr_t i = (intptr_t)val - 1;

	assert_int_equal(atoi(key + 1), i);
	c->offered[i]++;
	return c->mod && (unsigned)i % c->mod == c->rem;
}

/* hmap_sweep removes during its own walk: every member is offered once even where removals
 * shift probe runs (small full tables wrap their runs round the end), and what stays is found. */
static void test_hmap_sweep(void **state)
{
	static const unsigned sizes[] = { 1, 5, 12, 24, 97, 3000 };
	static const unsigned mods[][2] = { { 0, 0 }, { 1, 0 }, { 2, 0 }, { 3, 1 }, { 7, 3 } };
	char (*keys)[16] = calloc(3000, 16);
	unsigned *offered = calloc(3000, sizeof(*offered));

	(void)state;
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		for (size_t m = 0; m < sizeof(mods) / sizeof(mods[0]); m++) {
			struct sweep_ctx c = { offered, mods[m][0], mods[m][1] };
			unsigned n = sizes[z], kept = 0;
			struct hmap h;

			hmap_init(&h);
			memset(offered, 0, 3000 * sizeof(*offered));
			for (unsigned i = 0; i < n; i++) {
				snprintf(keys[i], 16, "k%u", i);
				assert_int_equal(hmap_put(&h, keys[i], (void *)(intptr_t)(i + 1), NULL), 0);
			}
			for (unsigned i = 0; i < n; i++)
				kept += !(c.mod && i % c.mod == c.rem);
			assert_int_equal(hmap_sweep(&h, sweep_drop, &c), n - kept);
			assert_int_equal(h.len, kept);
			for (unsigned i = 0; i < n; i++) {
				assert_int_equal(offered[i], 1);
				assert_int_equal((intptr_t)hmap_get(&h, keys[i]),
						 c.mod && i % c.mod == c.rem ? 0 : (intptr_t)i + 1);
			}
			hmap_fini(&h);
		}
	}
	free(offered);
	free(keys);
}

static void test_json_paths(void **state)
{
	json_t *doc = json_pack("{s:{s:[i,s]}}", "a/b", "c~d", 1, "x");
	struct js_path p;
	struct rf_err e;
	const char *s;
	int64_t v;

	(void)state;
	js_path_init(&p);
	assert_string_equal(js_path_str(&p), "/");
	js_path_push_key(&p, "a/b");
	js_path_push_key(&p, "c~d");
	js_path_push_idx(&p, 1);
	assert_string_equal(js_path_str(&p), "/a~1b/c~0d/1");
	js_path_init(&p);
	assert_int_equal(js_req_int(doc, "a/b", 0, 1, &p, &v, &e), -EINVAL);
	assert_string_equal(e.where, "/a~1b");
	assert_non_null(strstr(e.msg, "integer"));
	{
		json_t *bad = json_pack("{s:s}", "id", "../etc");

		assert_int_equal(js_req_str(bad, "id", 64, true, &p, &s, &e), -EINVAL);
		json_decref(bad);
	}
	assert_int_equal(js_parse("{\"a\":1,\"a\":2}", 13, &e), NULL);
	assert_string_equal(e.code, "BAD_JSON");
	json_decref(doc);
}

/* --- configuration groups: a module's own settings inside a program's ----------------------- */

struct inner {
	char *url;
	int64_t n;
};

struct outer {
	bool on;
	struct inner *in;
};

static const struct conf_opt inner_opts[] = {
	CONF_OPT("mod.url", CONF_STRING, struct inner, url, "http://x", "url"),
	CONF_OPT("mod.n", CONF_INT, struct inner, n, "3", "n", .min = 1, .max = 9),
	CONF_OPT_END,
};

static const struct conf_opt outer_opts[] = {
	CONF_OPT("main.on", CONF_BOOL, struct outer, on, "false", "on"),
	CONF_GROUP_OF("mod", inner_opts, struct inner, struct outer, in),
	CONF_OPT_END,
};

static const struct conf_opt dup_opts[] = {
	CONF_OPT("mod.n", CONF_BOOL, struct outer, on, "false", "the group's key again"),
	CONF_GROUP_OF("mod", inner_opts, struct inner, struct outer, in),
	CONF_OPT_END,
};

/* Text from a request in a JSON string: bytes that are not UTF-8 become '?' (found by
 * fuzz_simctl: a problem quoting such a path was no document at all). */
static void test_string_lossy(void **state)
{
	static const char *const cases[][2] = {
		{ "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80" },
		{ "\xf8" "a\xc3", "?a?" },
		{ "\xc0\xaf", "??" },			/* overlong '/' */
		{ "\xed\xa0\x80x", "???x" },		/* a surrogate */
		{ "\xf4\x90\x80\x80", "????" },	/* beyond U+10FFFF */
		/* control characters too: an escape sequence, a new line, DEL, C1 (NEL) */
		{ "v\x1b[2J\nx\x7f\xc2\x85y\xc2\xa0", "v?[2J?x???y\xc2\xa0" },
	};
	struct rf_err e = { 0 };
	json_t *v;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = js_string_lossy(cases[i][0]);
		assert_non_null(v);
		assert_string_equal(json_string_value(v), cases[i][1]);
		json_decref(v);
	}
	rf_err_set(&e, -ENOENT, "UNKNOWN_DEVICE", "/\xff", "no device '\xfe'");
	v = httpd_problem(404, &e);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "detail")), "no device '?'");
	assert_string_equal(json_string_value(json_object_get(v, "pointer")), "/?");
	json_decref(v);
}

static void test_conf_groups(void **state)
{
	struct outer o = { 0 };
	struct rf_err e = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	/* dumping before conf_init() (the group's settings not there yet) prints the rest */
	f = open_memstream(&text, &len);
	conf_dump(outer_opts, &o, f);
	fclose(f);
	assert_string_equal(text, "[main]\non = false\n");
	free(text);
	assert_int_equal(conf_init(outer_opts, &o, &e), 0);
	assert_non_null(o.in);
	assert_string_equal(o.in->url, "http://x");
	assert_int_equal(conf_load_string(outer_opts, &o, "[mod]\nn = 5\n[main]\non = yes\n", "t", &e), 0);
	assert_int_equal(o.in->n, 5);
	assert_true(o.on);
	assert_int_equal(conf_set(outer_opts, &o, "mod.n", "10", "-o", &e), -ERANGE);
	assert_int_equal(conf_set(outer_opts, &o, "mod.x", "1", "-o", &e), -ENOENT);
	f = open_memstream(&text, &len);
	conf_dump(outer_opts, &o, f);
	fclose(f);
	assert_string_equal(text, "[main]\non = true\n\n[mod]\nurl = http://x\nn = 5\n");
	free(text);
	conf_fini(outer_opts, &o);
	assert_null(o.in);
	/* a key defined in the program and in a group: refused */
	assert_int_equal(conf_init(dup_opts, &o, &e), -EEXIST);
	assert_string_equal(e.code, "CONF_DUPLICATE_KEY");
	assert_string_equal(e.where, "mod.n");
	conf_fini(dup_opts, &o);
}

/* --- the router (rocefabd's API and the simulator's control API share it) --------------------- */

struct test_route {
	struct route_pattern rp;
	int tag;
};

static const struct test_route table[] = {
	{ { "GET", "/api/v1/hosts" }, 0 },
	{ { "GET", "/api/v1/hosts/{id}" }, 1 },
	{ { "PUT", "/api/v1/hosts/{id}/dcqcn" }, 2 },
	{ { "GET", "/api/v1/hosts/{id}/dcqcn" }, 3 },
	{ { "GET", "/api/v1/switches/{id}/ports/{port}/queues/{q}/ecn" }, 4 },
	{ { "GET", "/v1/probes/{ids}" }, 5 },
	{ { NULL, NULL }, -1 },
};

static int match(const char *method, const char *path, size_t max, struct route_match *m)
{
	int r = router_match(table, sizeof(table[0]), method, path, max, m);

	router_match_fini(m); /* the parameters stay readable in m->small, not in the heap */
	return r;
}

static void test_router(void **state)
{
	struct route_match m;
	char longseg[400], path[5000];

	(void)state;
	assert_int_equal(match("GET", "/api/v1/hosts", 199, &m), 0);
	assert_int_equal(table[m.index].tag, 0);
	assert_int_equal(match("GET", "/api/v1/hosts/gpu-a1", 199, &m), 0);
	assert_int_equal(table[m.index].tag, 1);
	assert_int_equal(m.nparams, 1);
	assert_string_equal(m.params[0], "gpu-a1");
	assert_int_equal(match("HEAD", "/api/v1/hosts/x", 199, &m), 0);
	assert_int_equal(table[m.index].tag, 1);
	assert_int_equal(match("PUT", "/api/v1/hosts/h1/dcqcn", 199, &m), 0);
	assert_int_equal(table[m.index].tag, 2);
	assert_int_equal(match("GET", "/api/v1/switches/leaf1/ports/Eth1/queues/3/ecn", 199, &m), 0);
	assert_int_equal(m.nparams, 3);
	assert_string_equal(m.params[0], "leaf1");
	assert_string_equal(m.params[1], "Eth1");
	assert_string_equal(m.params[2], "3");

	/* 404: no such path; trailing slash and empty segments do not match */
	assert_int_equal(match("GET", "/api/v1/nothing", 199, &m), -ENOENT);
	assert_int_equal(m.index, -1);
	assert_int_equal(match("GET", "/api/v1/hosts/", 199, &m), -ENOENT);
	assert_int_equal(match("GET", "/api/v1/hosts//dcqcn", 199, &m), -ENOENT);
	assert_int_equal(match("GET", "/api/v1/hosts/a/b", 199, &m), -ENOENT);
	/* 405 with the allowed methods */
	assert_int_equal(match("DELETE", "/api/v1/hosts/h1/dcqcn", 199, &m), -EOPNOTSUPP);
	assert_string_equal(m.allow, "PUT, GET");
	assert_int_equal(match("POST", "/api/v1/hosts", 199, &m), -EOPNOTSUPP);
	assert_string_equal(m.allow, "GET");
	/* an oversized segment, with a limit; without one it matches (the parameter on the heap) */
	memset(longseg, 'x', sizeof(longseg) - 1);
	longseg[sizeof(longseg) - 1] = '\0';
	snprintf(path, sizeof(path), "/api/v1/hosts/%s", longseg);
	assert_int_equal(match("GET", path, 199, &m), -ENAMETOOLONG);
	snprintf(path, sizeof(path), "/v1/probes/");
	for (int i = 0; strlen(path) < 4000; i++)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%d", i ? "," : "", i);
	assert_int_equal(router_match(table, sizeof(table[0]), "GET", path, 0, &m), 0);
	assert_int_equal(table[m.index].tag, 5);
	assert_non_null(m.heap);
	assert_string_equal(m.params[0], path + strlen("/v1/probes/"));
	router_match_fini(&m);
	assert_null(m.heap);
}

/* --- shared vocabulary and hashing -------------------------------------------------------------- */

static void test_probe_ops(void **state)
{
	enum probe_op op;

	(void)state;
	for (int i = 0; i < PROBE_NOPS; i++) {
		assert_int_equal(probe_op_parse(probe_op_name((enum probe_op)i), &op), 0);
		assert_int_equal(op, i);
		assert_non_null(strstr(PROBE_OPS_TEXT, probe_op_name((enum probe_op)i)));
	}
	assert_true(probe_op_valid("write"));
	assert_false(probe_op_valid("WRITE"));
	assert_false(probe_op_valid(NULL));
	assert_int_equal(probe_op_parse("nope", &op), -EINVAL);
	assert_string_equal(probe_op_name(PROBE_NOPS), "?");
	assert_true(probe_op_is_verbs(PROBE_UD));
	assert_false(probe_op_is_verbs(PROBE_UDP));
}

static void test_hash(void **state)
{
	(void)state;
	/* FNV-1a 64 reference values */
	assert_true(hash_str64("") == HASH_FNV_OFFSET);
	assert_true(hash_str64("a") == UINT64_C(0xaf63dc4c8601ec8c));
	assert_true(hash_str64("foobar") == UINT64_C(0x85944171f73967e8));
	assert_true(hash_fnv1a64("foobar", 6, HASH_FNV_OFFSET) == hash_str64("foobar"));
	assert_true(hash_fnv1a64("bar", 3, hash_fnv1a64("foo", 3, HASH_FNV_OFFSET)) == hash_str64("foobar"));
	/* splitmix64: the first output of the generator seeded with 0 */
	assert_true(hash_mix64(0) == UINT64_C(0xe220a8397b1dcdaf));
}

/* --- the HTTP client's offline parts ------------------------------------------------------------- */

static void test_httpc_offline(void **state)
{
	struct httpc_conf c = { .base = "ftp://x", .what = "agent.server" };
	struct httpc *h = NULL;
	struct rf_err e = { 0 };
	char out[64];
	json_t *doc;

	(void)state;
	assert_int_equal(httpc_new(&c, &h, &e), -EINVAL);
	assert_string_equal(e.code, "BAD_SERVER_URL");
	assert_string_equal(e.where, "agent.server");
	c.base = "https://x";
	c.http_only = true;
	assert_int_equal(httpc_new(&c, &h, &e), -EINVAL);
	c.http_only = false;
	c.base = "http://127.0.0.1:1///";
	assert_int_equal(httpc_new(&c, &h, &e), 0);
	assert_string_equal(httpc_base(h), "http://127.0.0.1:1");
	httpc_free(h);

	doc = json_pack("{s:s,s:s,s:s}", "code", "BAD_VALUE", "detail", "kmin above kmax", "pointer", "/kmin");
	assert_int_equal(httpc_problem(&e, -EINVAL, doc, "400 ", NULL, NULL), -EINVAL);
	assert_string_equal(e.code, "BAD_VALUE");
	assert_string_equal(e.where, "/kmin");
	assert_string_equal(e.msg, "400 kmin above kmax");
	json_decref(doc);
	assert_int_equal(httpc_problem(&e, -EPROTO, NULL, NULL, NULL, NULL), -EPROTO);
	assert_string_equal(e.code, "HTTP_ERROR");
	assert_string_equal(e.msg, "no detail");
	assert_int_equal(httpc_problem(&e, -EINVAL, NULL, "x: ", "SIM_ERROR", "refused"), -EINVAL);
	assert_string_equal(e.code, "SIM_ERROR");
	assert_string_equal(e.msg, "x: refused");

	httpc_escape("leaf 0/Eth1:2,x", out, sizeof(out));
	assert_string_equal(out, "leaf%200%2FEth1:2,x");
}

/* A line per key per interval, counting what was held back; the table of keys stays bounded. */
static void test_ratelimit(void **state)
{
	struct ratelimit rl = RATELIMIT_INIT(3, 60 * NSEC_PER_SEC);
	int64_t t = 1000 * NSEC_PER_SEC;
	uint64_t more = 99;
	char key[32];

	(void)state;
	assert_true(ratelimit_due(&rl, "tok/h2", t, &more));
	assert_int_equal(more, 0);
	for (int i = 1; i <= 5; i++)
		assert_false(ratelimit_due(&rl, "tok/h2", t + i * NSEC_PER_SEC, &more));
	assert_true(ratelimit_due(&rl, "tok/h3", t + 30 * NSEC_PER_SEC, NULL)); /* its own line */
	assert_false(ratelimit_due(&rl, "tok/h2", t + 59 * NSEC_PER_SEC, NULL));
	assert_true(ratelimit_due(&rl, "tok/h2", t + 60 * NSEC_PER_SEC, &more));
	assert_int_equal(more, 6);
	/* full (3 keys seen within the interval): a new key gets no line... */
	assert_true(ratelimit_due(&rl, "tok/h4", t + 61 * NSEC_PER_SEC, NULL));
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "flood/%d", i);
		assert_false(ratelimit_due(&rl, key, t + 62 * NSEC_PER_SEC, NULL));
	}
	assert_int_equal(rl.keys.len, 3);
	/* ...until old keys may go: tok/h3's line was an interval ago */
	assert_true(ratelimit_due(&rl, "flood/0", t + 120 * NSEC_PER_SEC, NULL));
	assert_false(ratelimit_due(&rl, "flood/0", t + 121 * NSEC_PER_SEC, NULL));
	assert_true(rl.keys.len <= 3);
	ratelimit_fini(&rl);
	assert_true(ratelimit_due(&rl, "tok/h2", t + 122 * NSEC_PER_SEC, NULL));
	ratelimit_fini(&rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors), cmocka_unit_test(test_durations),
		cmocka_unit_test(test_rfc3339),	       cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_canonical_integers), cmocka_unit_test(test_natural_order),
		cmocka_unit_test(test_token_files), cmocka_unit_test(test_log_code_once),
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_hmap), cmocka_unit_test(test_hmap_sweep),	       cmocka_unit_test(test_json_paths),
		cmocka_unit_test(test_glob_open_bracket), cmocka_unit_test(test_bidi_controls),
		cmocka_unit_test(test_conf_groups),    cmocka_unit_test(test_string_lossy),    cmocka_unit_test(test_router),
		cmocka_unit_test(test_probe_ops),
		cmocka_unit_test(test_hash),	       cmocka_unit_test(test_httpc_offline),
		cmocka_unit_test(test_ratelimit),
	};

	return cmocka_run_group_tests_name("lib", tests, NULL, NULL);
}
