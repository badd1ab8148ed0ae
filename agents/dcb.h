/* PFC of a network interface through DCB netlink, as iproute2's `dcb pfc` does it
 * (../shared/reference/rdma-fabric-facts.md sections 2.4 and 2.5): RTM_GETDCB/RTM_SETDCB with
 * DCB_CMD_IEEE_GET/SET, DCB_ATTR_IFNAME, and a DCB_ATTR_IEEE nest holding DCB_ATTR_IEEE_PFC
 * (a struct ieee_pfc).  A set is read-modify-write: the whole struct is read, pfc_en changed
 * and written back; the kernel answers with the errno in a u8 DCB_ATTR_IEEE.
 *
 * Message building and parsing are separate from the transport so that tests can check the
 * bytes against a fake kernel; the real transport is a NETLINK_ROUTE socket (CAP_NET_ADMIN for
 * sets). */
#ifndef ROCEFAB_DCB_H
#define ROCEFAB_DCB_H

#include <stddef.h>
#include <stdint.h>

#include <linux/dcbnl.h>

#define DCB_MSG_MAX 512

/* Sends one request and returns the kernel's reply (up to cap bytes in reply). */
typedef int (*dcb_xfer_fn)(void *ctx, const void *req, size_t len, void *reply, size_t cap,
			   size_t *ret_len);

/* Builds RTM_GETDCB/DCB_CMD_IEEE_GET for ifname into buf; returns its length or -errno. */
int dcb_build_get(const char *ifname, uint32_t seq, void *buf, size_t cap);
/* Builds RTM_SETDCB/DCB_CMD_IEEE_SET carrying pfc. */
int dcb_build_set_pfc(const char *ifname, const struct ieee_pfc *pfc, uint32_t seq, void *buf,
		      size_t cap);
/* The ieee_pfc of a GET reply: 0, -EOPNOTSUPP (the device has no IEEE PFC), -EBADMSG, or the
 * errno of an NLMSG_ERROR reply. */
int dcb_parse_pfc(const void *msg, size_t len, struct ieee_pfc *ret);
/* A SET reply: 0, or the negative errno the kernel put in its u8 DCB_ATTR_IEEE (or in an
 * NLMSG_ERROR). */
int dcb_parse_set_reply(const void *msg, size_t len);

int dcb_get_pfc(dcb_xfer_fn xfer, void *ctx, const char *ifname, struct ieee_pfc *ret);
/* Read-modify-write of pfc_en, then read back into *after. */
int dcb_set_pfc_enable(dcb_xfer_fn xfer, void *ctx, const char *ifname, uint8_t pfc_en,
		       struct ieee_pfc *before, struct ieee_pfc *after);

/* The real transport (ctx unused): a NETLINK_ROUTE socket per call. */
int dcb_xfer_netlink(void *ctx, const void *req, size_t len, void *reply, size_t cap,
		     size_t *ret_len);

#endif
