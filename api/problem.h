/* Errors on the wire: RFC 9457 problem details (application/problem+json) with a stable code.
 *
 *   {"type": "urn:rocefab:problem:bad-json", "title": "Bad Request", "status": 400,
 *    "code": "BAD_JSON", "detail": "...", "instance": "/api/v1/...", "pointer": "/samples/3"}
 *
 * api_status_from_errno() is the one place where an errno becomes an HTTP status. */
#ifndef ROCEFAB_PROBLEM_H
#define ROCEFAB_PROBLEM_H

#include <jansson.h>

#include "lib/err.h"

unsigned api_status_from_errno(int err);
const char *api_status_title(unsigned status);
/* A new reference.  When e has no code, one is derived from the status. */
json_t *problem_new(unsigned status, const struct rf_err *e, const char *instance);

#endif
