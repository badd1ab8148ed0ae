/* Unit tests of lib/: SHA-256, time parsing, configuration files, hash map, JSON paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/conf.h"
#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/sha256.h"
#include "lib/timeutil.h"
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
	assert_int_equal(tu_parse_duration("-1s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("1 s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("1e30s", &v), -EINVAL);
	assert_int_equal(tu_parse_duration("nan", &v), -EINVAL);
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
	/* operator time arguments */
	assert_int_equal(tu_parse_time("now", 5 * NSEC_PER_SEC, &v), 0);
	assert_int_equal(v, 5 * NSEC_PER_SEC);
	assert_int_equal(tu_parse_time("-2s", 5 * NSEC_PER_SEC, &v), 0);
	assert_int_equal(v, 3 * NSEC_PER_SEC);
	assert_int_equal(tu_parse_time("1764514195.5", 0, &v), 0);
	assert_int_equal(v, 1764514195500000000LL);
	assert_int_equal(tu_parse_time("yesterday", 0, &v), -EINVAL);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors), cmocka_unit_test(test_durations),
		cmocka_unit_test(test_rfc3339),	       cmocka_unit_test(test_conf),
		cmocka_unit_test(test_hmap),	       cmocka_unit_test(test_json_paths),
	};

	return cmocka_run_group_tests_name("lib", tests, NULL, NULL);
}
