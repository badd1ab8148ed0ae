/* Validation of configuration changes before anything is stored or sent (issue 4): ranges
 * and units from ../shared/reference/rdma-fabric-facts.md (lib/params.c), and the invariants
 * that keep a fabric lossless and well behaved: Kmin < Kmax < the PFC XOFF threshold of a
 * lossless priority, XON < XOFF, DCQCN rates within the port's line rate.
 *
 * params is the requested change (only the fields that change) and is normalized in place
 * (sizes like "400KB" become bytes).  current is the object's configuration as its agent last
 * reported it (NULL if none).  On failure e names the field as a JSON pointer into params and a
 * code: UNKNOWN_FIELD, BAD_VALUE, BAD_THRESHOLD_ORDER, NO_CHANGE.  Pure functions: no I/O. */
#ifndef ROCEFAB_VALIDATE_H
#define ROCEFAB_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

/* line_mbps: the port's speed, bounding rate parameters (0: unknown). */
int validate_dcqcn(json_t *params, const json_t *current, int64_t line_mbps, struct rf_err *e);
/* port_pfc: the PFC configuration of the queue's port (for its XOFF threshold), or NULL. */
int validate_ecn(json_t *params, const json_t *current, const json_t *port_pfc, int queue,
		 struct rf_err *e);
/* port_ecn: the ECN configurations of the port's queues (array), or NULL. */
int validate_pfc(json_t *params, const json_t *current, const json_t *port_ecn, bool is_switch,
		 struct rf_err *e);
/* The XOFF threshold of a PFC configuration as its agent reports it: static, alpha x shared /
 * (1 + alpha), or the agent's xoff_threshold_bytes; -1 when it does not say. */
int64_t validate_pfc_xoff(const json_t *pfc);
/* The XOFF threshold a port's Kmax is checked against: the one its agent reports, else
 * validate_pfc_xoff's; *from says which: "reported", "static" (its static XOFF) or "computed"
 * (from a dynamic threshold's alpha and the shared buffer: SONiC); -1 or 0 when unknown. */
int64_t validate_port_xoff(const json_t *pfc, const char **from);
/* pfc (a configuration as reported) with the PFC change params (validated, normalized) laid
 * over it: its mode follows the thresholds set, its xoff_threshold_bytes is the new one where
 * validate_pfc_xoff can tell it, and gone where it cannot (a dynamic threshold without the
 * shared buffer's size reported). */
void validate_pfc_merge(json_t *pfc, json_t *params);

#endif
