/* DCB netlink PFC: see dcb.h. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "agents/dcb.h"

struct builder {
	uint8_t *buf;
	size_t cap, len;
};

static void *put(struct builder *b, size_t n)
{
	size_t at = b->len;

	if (at + NLMSG_ALIGN(n) > b->cap)
		return NULL;
	memset(b->buf + at, 0, NLMSG_ALIGN(n));
	b->len += NLMSG_ALIGN(n);
	return b->buf + at;
}

static struct nlattr *put_attr(struct builder *b, uint16_t type, const void *data, size_t n)
{
	struct nlattr *a = put(b, NLA_HDRLEN + n);

	if (!a)
		return NULL;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + n);
	if (n)
		memcpy((uint8_t *)a + NLA_HDRLEN, data, n);
	return a;
}

static int build(uint16_t type, uint8_t cmd, const char *ifname, const struct ieee_pfc *pfc,
		 uint32_t seq, void *buf, size_t cap)
{
	struct builder b = { .buf = buf, .cap = cap };
	struct nlmsghdr *h = put(&b, NLMSG_HDRLEN);
	struct dcbmsg *d = put(&b, sizeof(*d));
	size_t nest_at;
	struct nlattr *nest;

	if (!h || !d || strlen(ifname) >= 16)
		return -EINVAL;
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST; /* the kernel answers every DCB request itself */
	h->nlmsg_seq = seq;
	d->dcb_family = AF_UNSPEC;
	d->cmd = cmd;
	if (!put_attr(&b, DCB_ATTR_IFNAME, ifname, strlen(ifname) + 1))
		return -ENOBUFS;
	if (pfc) {
		nest_at = b.len;
		if (!(nest = put_attr(&b, DCB_ATTR_IEEE | NLA_F_NESTED, NULL, 0)) ||
		    !put_attr(&b, DCB_ATTR_IEEE_PFC, pfc, sizeof(*pfc)))
			return -ENOBUFS;
		nest = (struct nlattr *)(b.buf + nest_at);
		nest->nla_len = (uint16_t)(b.len - nest_at);
	}
	h = (struct nlmsghdr *)b.buf;
	h->nlmsg_len = (uint32_t)b.len;
	return (int)b.len;
}

int dcb_build_get(const char *ifname, uint32_t seq, void *buf, size_t cap)
{
	return build(RTM_GETDCB, DCB_CMD_IEEE_GET, ifname, NULL, seq, buf, cap);
}

int dcb_build_set_pfc(const char *ifname, const struct ieee_pfc *pfc, uint32_t seq, void *buf,
		      size_t cap)
{
	return build(RTM_SETDCB, DCB_CMD_IEEE_SET, ifname, pfc, seq, buf, cap);
}

/* The attributes after the dcbmsg header of a reply, or an errno from NLMSG_ERROR. */
static int reply_attrs(const void *msg, size_t len, const struct nlattr **ret, size_t *ret_len)
{
	const struct nlmsghdr *h = msg;

	if (len < NLMSG_HDRLEN || h->nlmsg_len > len || h->nlmsg_len < NLMSG_HDRLEN)
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		if ((size_t)h->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
			return -EBADMSG;
		return e->error < 0 ? e->error : -EBADMSG;
	}
	if (h->nlmsg_len < NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct dcbmsg)))
		return -EBADMSG;
	*ret = (const struct nlattr *)((const uint8_t *)msg + NLMSG_HDRLEN +
				       NLMSG_ALIGN(sizeof(struct dcbmsg)));
	*ret_len = h->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(sizeof(struct dcbmsg));
	return 0;
}

static const struct nlattr *find(const struct nlattr *a, size_t len, uint16_t type)
{
	while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len) {
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		if ((size_t)NLA_ALIGN(a->nla_len) >= len)
			break;
		len -= (size_t)NLA_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const uint8_t *)a + NLA_ALIGN(a->nla_len));
	}
	return NULL;
}

int dcb_parse_pfc(const void *msg, size_t len, struct ieee_pfc *ret)
{
	const struct nlattr *attrs, *ieee, *pfc;
	size_t alen;
	int r = reply_attrs(msg, len, &attrs, &alen);

	if (r < 0)
		return r;
	ieee = find(attrs, alen, DCB_ATTR_IEEE);
	if (!ieee)
		return -EOPNOTSUPP;
	pfc = find((const struct nlattr *)((const uint8_t *)ieee + NLA_HDRLEN),
		   ieee->nla_len - NLA_HDRLEN, DCB_ATTR_IEEE_PFC);
	if (!pfc)
		return -EOPNOTSUPP;
	if (pfc->nla_len - NLA_HDRLEN != sizeof(*ret))
		return -EBADMSG; /* as iproute2: the payload must be exactly a struct ieee_pfc */
	memcpy(ret, (const uint8_t *)pfc + NLA_HDRLEN, sizeof(*ret));
	return 0;
}

int dcb_parse_set_reply(const void *msg, size_t len)
{
	const struct nlattr *attrs, *ieee;
	size_t alen;
	int r = reply_attrs(msg, len, &attrs, &alen);
	int8_t err;

	if (r < 0)
		return r;
	ieee = find(attrs, alen, DCB_ATTR_IEEE);
	if (!ieee || ieee->nla_len < NLA_HDRLEN + 1)
		return -EBADMSG;
	/* the kernel puts the (negative) errno in a u8 */
	err = (int8_t) * ((const uint8_t *)ieee + NLA_HDRLEN);
	return err < 0 ? err : err > 0 ? -err : 0;
}

int dcb_get_pfc(dcb_xfer_fn xfer, void *ctx, const char *ifname, struct ieee_pfc *ret)
{
	uint8_t req[DCB_MSG_MAX], rep[4096];
	size_t n = 0;
	int len = dcb_build_get(ifname, 1, req, sizeof(req)), r;

	if (len < 0)
		return len;
	if ((r = xfer(ctx, req, (size_t)len, rep, sizeof(rep), &n)) < 0)
		return r;
	return dcb_parse_pfc(rep, n, ret);
}

int dcb_set_pfc_enable(dcb_xfer_fn xfer, void *ctx, const char *ifname, uint8_t pfc_en,
		       struct ieee_pfc *before, struct ieee_pfc *after)
{
	uint8_t req[DCB_MSG_MAX], rep[4096];
	struct ieee_pfc pfc;
	size_t n = 0;
	int len, r;

	if ((r = dcb_get_pfc(xfer, ctx, ifname, &pfc)) < 0)
		return r;
	*before = pfc;
	pfc.pfc_en = pfc_en;
	/* the counters are the device's; a set carries the struct as read, as iproute2 does */
	len = dcb_build_set_pfc(ifname, &pfc, 2, req, sizeof(req));
	if (len < 0)
		return len;
	if ((r = xfer(ctx, req, (size_t)len, rep, sizeof(rep), &n)) < 0)
		return r;
	if ((r = dcb_parse_set_reply(rep, n)) < 0)
		return r;
	return dcb_get_pfc(xfer, ctx, ifname, after);
}

int dcb_xfer_netlink(void *ctx, const void *req, size_t len, void *reply, size_t cap,
		     size_t *ret_len)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	ssize_t n;

	(void)ctx;
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, req, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	n = recv(fd, reply, cap, 0);
	if (n < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	*ret_len = (size_t)n;
	return 0;
}
