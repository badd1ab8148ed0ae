/* Unit tests of remote-write's pieces that need no receiver (tests/system/test_remote_write.py
 * has a real Prometheus): the protobuf of a sample, read back by a small protobuf reader; the
 * URLs accepted and refused; credentials kept out of what is shown. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/codec.h"
#include "daemon/rwrite.h"
#include "tests/unit/unit.h"

/* One length-delimited field of tag `want` at *p: its bytes. */
static const uint8_t *field(const uint8_t **p, const uint8_t *end, uint8_t want, size_t *len)
{
	uint64_t n;
	const uint8_t *at;

	assert_true(*p < end);
	assert_int_equal(**p, want);
	(*p)++;
	assert_int_equal(codec_get_varint(p, end, &n), 0);
	assert_true(n <= (uint64_t)(end - *p));
	at = *p;
	*p += n;
	*len = (size_t)n;
	return at;
}

static void test_series(void **state)
{
	const char *labels[] = { "__name__", "rocefab_port_roce_tx_bytes_total", "device", "mlx5_0",
				 "host", "gpu-a1", "port", "1" };
	const uint8_t *p, *end, *ts, *q, *qe;
	struct buf b;
	size_t len, n;
	uint64_t v;
	double d;

	(void)state;
	buf_init(&b);
	assert_int_equal(rwrite_series(&b, labels, 4, 12345678.5, 1764514140123456789LL), 0);
	assert_int_equal(rwrite_series(&b, labels, 1, 0.25, 1000000), 0);
	p = (const uint8_t *)b.data;
	end = p + b.len;
	/* WriteRequest.timeseries (1): labels (1) x 4, samples (2) x 1 */
	ts = field(&p, end, 0x0a, &len);
	q = ts;
	qe = ts + len;
	for (int i = 0; i < 4; i++) {
		const uint8_t *l = field(&q, qe, 0x0a, &n), *le = l + n, *s;
		size_t sn;

		s = field(&l, le, 0x0a, &sn);
		assert_int_equal(sn, strlen(labels[2 * i]));
		assert_memory_equal(s, labels[2 * i], sn);
		s = field(&l, le, 0x12, &sn);
		assert_int_equal(sn, strlen(labels[2 * i + 1]));
		assert_memory_equal(s, labels[2 * i + 1], sn);
		assert_ptr_equal(l, le);
	}
	{
		const uint8_t *s = field(&q, qe, 0x12, &n), *se = s + n;
		uint64_t bits = 0;

		assert_int_equal(*s++, 0x09); /* value: fixed64 */
		for (int i = 0; i < 8; i++)
			bits |= (uint64_t)s[i] << (8 * i);
		s += 8;
		memcpy(&d, &bits, sizeof(d));
		assert_true(d == 12345678.5);
		assert_int_equal(*s++, 0x10); /* timestamp: varint, milliseconds */
		assert_int_equal(codec_get_varint(&s, se, &v), 0);
		assert_true(v == 1764514140123ULL);
		assert_ptr_equal(s, se);
	}
	assert_ptr_equal(q, qe);
	/* the second record follows, whole */
	ts = field(&p, end, 0x0a, &len);
	assert_ptr_equal(p, end);
	buf_fini(&b);
}

static void test_urls(void **state)
{
	struct rf_err e = { 0 };
	char out[128];

	(void)state;
	assert_int_equal(rwrite_check("", &e), 0);
	assert_int_equal(rwrite_check(NULL, &e), 0);
	assert_int_equal(rwrite_check("http://a:9090/api/v1/write, https://u:p@b/w", &e), 0);
	assert_int_equal(rwrite_check("http://a/w,ftp://b/w", &e), -EINVAL);
	assert_string_equal(e.code, "BAD_REMOTE_WRITE_URL");
	assert_non_null(strstr(e.msg, "ftp://b/w"));
	assert_int_equal(rwrite_check("http:///w", &e), -EINVAL);
	assert_int_equal(rwrite_check("https://:443/w", &e), -EINVAL);
	assert_int_equal(rwrite_check("a.example/w", &e), -EINVAL);
	rwrite_redact("https://user:secret@tsdb.example:8428/api/v1/write", out, sizeof(out));
	assert_string_equal(out, "https://tsdb.example:8428/api/v1/write");
	rwrite_redact("http://tsdb/api/v1/write?a=b@c", out, sizeof(out));
	assert_string_equal(out, "http://tsdb/api/v1/write?..."); /* a query may hold a token */
	rwrite_redact("https://u:ab/c@tsdb/w", out, sizeof(out));
	assert_string_equal(out, "https://tsdb/w");
	/* a malformed URL's error does not show its password */
	assert_int_equal(rwrite_check("htps://u:hunter2@h/w", &e), -EINVAL);
	assert_null(strstr(e.msg, "hunter2"));
	assert_int_equal(rwrite_check("http://u:a@h/w, http://u:b@h/w", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "listed twice"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_urls),
	};

	return cmocka_run_group_tests_name("rwrite", tests, NULL, NULL);
}
