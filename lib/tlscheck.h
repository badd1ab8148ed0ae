/* TLS files checked when a program starts, so that a certificate that is not the key's, or a
 * file that holds no certificate, is said then, naming the configuration key and the path (the
 * HTTP library said only "cannot listen" or failed the first send, its reason at info level). */
#ifndef ROCEFAB_TLSCHECK_H
#define ROCEFAB_TLSCHECK_H

#include <stdint.h>

#include "lib/err.h"

/* cert (PEM, a chain: the first is the program's own) and key (PEM): TLS_BAD_CERT (no
 * certificate in it, or one that cannot be parsed), TLS_BAD_KEY, TLS_KEY_MISMATCH (the key is
 * not the first certificate's), with cert_key / key_key (the configuration keys) as where.  On
 * success, *not_after (may be NULL) is when the first certificate expires (seconds since the
 * epoch). */
int tls_check_pair(const char *cert_key, const char *cert, const char *key_key, const char *key,
		   int64_t *not_after, struct rf_err *e);

/* A CA file (PEM) that must hold at least one certificate: TLS_BAD_CERT (one that holds
 * OpenSSL's TRUSTED CERTIFICATEs passes: GnuTLS does not read them, OpenSSL does). */
int tls_check_ca(const char *ca_key, const char *ca, struct rf_err *e);

#endif
