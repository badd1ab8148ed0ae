/* TLS files checked at a start: see tlscheck.h.  GnuTLS parses them (libmicrohttpd's TLS
 * library; the agent's libcurl may use another, which reads PEM the same). */
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "lib/tlscheck.h"

/* The certificates of the PEM file path (*ret, *ret_n; the caller frees them). */
static int load_certs(const char *what, const char *path, gnutls_x509_crt_t **ret, unsigned *ret_n,
		      struct rf_err *e)
{
	gnutls_datum_t d = { NULL, 0 };
	int g = gnutls_load_file(path, &d);

	*ret = NULL;
	*ret_n = 0;
	if (g < 0)
		return rf_err_set(e, -EINVAL, "TLS_BAD_CERT", what, "%s: cannot read: %s", path,
				  gnutls_strerror(g));
	g = gnutls_x509_crt_list_import2(ret, ret_n, &d, GNUTLS_X509_FMT_PEM, 0);
	gnutls_free(d.data);
	if (g < 0 || *ret_n == 0) {
		*ret = NULL;
		*ret_n = 0;
		return rf_err_set(e, -EINVAL, "TLS_BAD_CERT", what, "%s holds no certificate in PEM (%s)", path,
				  g < 0 ? gnutls_strerror(g) : "none found");
	}
	return 0;
}

static void free_certs(gnutls_x509_crt_t *crts, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
}

int tls_check_pair(const char *cert_key, const char *cert, const char *key_key, const char *key,
		   int64_t *not_after, struct rf_err *e)
{
	unsigned char cid[64], kid[64];
	size_t clen = sizeof(cid), klen = sizeof(kid);
	gnutls_x509_privkey_t pk = NULL;
	gnutls_datum_t d = { NULL, 0 };
	gnutls_x509_crt_t *crts;
	unsigned n;
	int g, r;

	if ((r = load_certs(cert_key, cert, &crts, &n, e)) < 0)
		return r;
	if ((g = gnutls_load_file(key, &d)) < 0) {
		r = rf_err_set(e, -EINVAL, "TLS_BAD_KEY", key_key, "%s: cannot read: %s", key, gnutls_strerror(g));
		goto out;
	}
	if ((g = gnutls_x509_privkey_init(&pk)) < 0 ||
	    (g = gnutls_x509_privkey_import2(pk, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		r = rf_err_set(e, -EINVAL, "TLS_BAD_KEY", key_key,
			       "%s holds no private key in PEM that can be read without a password (%s)", key,
			       gnutls_strerror(g));
		goto out;
	}
	if ((g = gnutls_x509_crt_get_key_id(crts[0], 0, cid, &clen)) < 0 ||
	    (g = gnutls_x509_privkey_get_key_id(pk, 0, kid, &klen)) < 0) {
		r = rf_err_set(e, -EINVAL, "TLS_BAD_KEY", key_key, "%s with %s: %s", key, cert, gnutls_strerror(g));
		goto out;
	}
	if (clen != klen || memcmp(cid, kid, clen) != 0) {
		r = rf_err_set(e, -EINVAL, "TLS_KEY_MISMATCH", key_key,
			       "%s is not the key of the certificate in %s (%s): a key and a certificate of two "
			       "different pairs", key, cert, cert_key);
		goto out;
	}
	if (not_after)
		*not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crts[0]);
out:
	gnutls_free(d.data);
	if (pk)
		gnutls_x509_privkey_deinit(pk);
	free_certs(crts, n);
	return r;
}

int tls_check_ca(const char *ca_key, const char *ca, struct rf_err *e)
{
	gnutls_x509_crt_t *crts;
	gnutls_datum_t d = { NULL, 0 };
	unsigned n;
	int r = load_certs(ca_key, ca, &crts, &n, e);

	if (r == 0) {
		free_certs(crts, n);
		return 0;
	}
	/* OpenSSL's "TRUSTED CERTIFICATE" (a certificate with its trust settings), which GnuTLS
	 * does not read and the agent's libcurl with OpenSSL does: left to it */
	if (gnutls_load_file(ca, &d) == 0 && memmem(d.data, d.size, "-----BEGIN TRUSTED CERTIFICATE-----", 35)) {
		rf_err_clear(e);
		r = 0;
	}
	gnutls_free(d.data);
	return r;
}
