/* Client certificates of agents (api.client_ca): see api_client_cert_check() in internal.h.
 *
 * libmicrohttpd asks every TLS client for a certificate once api.client_ca is given to it as
 * its trust (MHD_OPTION_HTTPS_MEM_TRUST), but lets a connection without one, or with one it
 * cannot verify, through: the verdict is taken here, per request, on the GnuTLS session. */
#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "api/internal.h"

/* Whether the certificate names id: a DNS subjectAltName, or the subject's CN, equal to it. */
static bool cert_names(gnutls_x509_crt_t crt, const char *id, char *cn, size_t cn_len)
{
	size_t idlen = strlen(id);
	char name[256];

	for (unsigned i = 0;; i++) {
		size_t len = sizeof(name);
		int t = gnutls_x509_crt_get_subject_alt_name(crt, i, name, &len, NULL);

		if (t == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			break;
		if (t == GNUTLS_SAN_DNSNAME && len == idlen && memcmp(name, id, idlen) == 0)
			return true;
	}
	cn[0] = '\0';
	if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cn_len) < 0)
		cn[0] = '\0';
	return strcmp(cn, id) == 0;
}

int api_client_cert_check(struct api_req *req, const char *id, struct rf_err *e)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	const gnutls_datum_t *peers;
	gnutls_x509_crt_t crt;
	unsigned n = 0, status = 0;
	char cn[256];
	bool ok;

	peers = s ? gnutls_certificate_get_peers(s, &n) : NULL;
	if (!peers || !n)
		return rf_err_set(e, -EACCES, "CLIENT_CERT_REQUIRED", NULL,
				  "rocefabd takes reports only with a client certificate (api.client_ca) "
				  "naming the agent '%s'",
				  id);
	if (gnutls_certificate_verify_peers2(s, &status) < 0 || status) {
		gnutls_datum_t why = { 0 };
		int r;

		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
		r = rf_err_set(e, -EACCES, "CLIENT_CERT_INVALID", NULL,
			       "the client certificate does not verify against api.client_ca: %s",
			       why.data ? (const char *)why.data : "unknown reason");
		gnutls_free(why.data);
		return r;
	}
	if (gnutls_x509_crt_init(&crt) < 0)
		return rf_err_set(e, -ENOMEM, "OUT_OF_MEMORY", NULL, "out of memory");
	if (gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER) < 0) {
		gnutls_x509_crt_deinit(crt);
		return rf_err_set(e, -EACCES, "CLIENT_CERT_INVALID", NULL,
				  "the client certificate cannot be read");
	}
	ok = cert_names(crt, id, cn, sizeof(cn));
	gnutls_x509_crt_deinit(crt);
	if (ok)
		return 0;
	return rf_err_set(e, -EACCES, "CLIENT_CERT_MISMATCH", NULL,
			  "the client certificate names '%.64s', not the agent '%s' (its subject CN "
			  "or a DNS subjectAltName must be the agent's id)",
			  cn[0] ? cn : "no CN", id);
}
