/* Handler: POST /api/v1/agents/{id}/report.
 *
 * The report is parsed and validated completely on the HTTP thread; then the connection is
 * suspended and the report handed to the store writer.  The writer resumes the connection once
 * the report is committed (or failed), and the second call of this handler answers.  So a 200
 * means "stored durably"; on 503 the agent keeps the report in its spool and sends it again
 * (which is safe: reports are idempotent on agent, boot_id and seq).
 *
 * A report carries the agent's data, its probe results and the outcomes of its configuration
 * changes, and its answer carries the agent's pending commands: so an agent token may post only
 * as the agents it is bound to (daemon/tokens.h), checked first, before the body is looked at. */
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>

#include "api/internal.h"
#include "daemon/detector.h"
#include "daemon/idguard.h"
#include "daemon/ingest.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/log.h"
#include "lib/probeops.h"
#include "lib/ratelimit.h"
#include "lib/timeutil.h"

/* One warning a minute per token, however often and as whatever agents it is refused (keyed
 * by the token alone: tokens are the operator's, so one token cannot fill the table with made-up
 * agent ids and hide another token's refusals; the log's, like the process's: one for every
 * API in the process). */
static struct ratelimit refusals_log = RATELIMIT_INIT(1024, 60 * NSEC_PER_SEC);
/* Reports from a clock far ahead: one warning a minute per agent (the agent is known: its
 * token may report as it). */
static struct ratelimit ahead_log = RATELIMIT_INIT(1024, 60 * NSEC_PER_SEC);

/* Reports of an agent id that another agent holds: one warning a minute per id. */
static struct ratelimit shared_log = RATELIMIT_INIT(1024, 60 * NSEC_PER_SEC);

/* A report (or a sample of it) this far ahead of rocefabd's clock is refused, as the fast PFC
 * lane's readings are: stored, it would hold the port's later samples at a baseline (no delta,
 * no rate) until the clock passed it, for as long as the clock was ahead. */
#define REPORT_FUTURE_NS (60 * NSEC_PER_SEC)

/* The id as it may go into a log line: characters outside those of agent ids become '?'. */
static void printable_id(const char *id, char out[API_PARAM_MAX + 1])
{
	static const char id_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "0123456789._-";
	size_t i;

	for (i = 0; id[i] && i < API_PARAM_MAX; i++)
		out[i] = strchr(id_chars, id[i]) ? id[i] : '?';
	out[i] = '\0';
}

/* 403 AGENT_NOT_BOUND for a token of role agent that is not bound to the agent id. */
static int refuse_unbound(struct api_req *req, const char *id)
{
	char shown[API_PARAM_MAX + 1];
	struct rf_err e = { 0 };
	uint64_t more = 0;

	printable_id(id, shown);
	if (ratelimit_due(&refusals_log, req->token_name, tu_mono_ns(), &more))
		log_msg(LOG_WARNING, "api", "AGENT_NOT_BOUND",
			"token '%s' (bound to %s) tried to report as agent '%s': refused, and %llu "
			"more of its reports since its last line (logged once a minute per token)",
			req->token_name, req->token_agents, shown, (unsigned long long)more);
	rf_err_set(&e, -EACCES, "AGENT_NOT_BOUND", NULL,
		   "token '%s' may report only as agents %.100s, not as '%s'", req->token_name,
		   req->token_agents, shown);
	return api_reply_problem_ext(
		req, 403, &e, json_pack("{s:s,s:s}", "token", req->token_name, "agent", shown));
}

/* A warning for key at most once a minute (rl's interval), saying how many went unsaid. */
static void __attribute__((format(printf, 4, 5)))
warn_limited(struct ratelimit *rl, const char *key, const char *code, const char *fmt, ...)
{
	char msg[600], also[80] = "";
	uint64_t more = 0;
	va_list ap;

	if (!ratelimit_due(rl, key, tu_mono_ns(), &more))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (more)
		snprintf(also, sizeof(also), " (and %llu more of its reports since the last such line)",
			 (unsigned long long)more);
	log_msg(LOG_WARNING, "api", code, "%s%s", msg, also);
}

/* -EUSERS (e filled, logged once a minute per id) when another agent holds the report's agent
 * id (daemon/idguard.h; full: a full report, else a fast PFC one); -ENOMEM is no refusal.  An
 * id first seen in this process starts from the boot the store holds for it. */
static int shared_id(const struct api_deps *d, const struct report *rep, bool full, struct rf_err *e)
{
	struct idguard *g = ingest_idguard(d->ingest);
	char held[65], dur[32] = "";
	int64_t since = 0, mono;
	struct store_reader *rd;

	if (!idguard_knows(g, rep->agent_id) && (rd = store_reader_get(d->store))) {
		sqlite3_stmt *st = store_reader_stmt(rd, "SELECT boot_id FROM agents WHERE id = ?");

		if (st) {
			sqlite3_bind_text(st, 1, rep->agent_id, -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
				idguard_seed(g, rep->agent_id, (const char *)sqlite3_column_text(st, 0));
			sqlite3_reset(st);
		}
		store_reader_put(d->store, rd);
	}
	mono = tu_mono_ns();
	if (idguard_check(g, rep->agent_id, rep->boot_id, full, mono, held, &since) != -EUSERS)
		return 0;
	warn_limited(&shared_log, rep->agent_id, "AGENT_ID_SHARED",
		     "two agents report as '%s' (agent boots %s and %s, taking turns): the second is refused; give "
		     "one of them another agent.id", rep->agent_id, held, rep->boot_id);
	/* (how long, once it is a second or more: the first refusal said "for 0 s") */
	if (mono - since >= NSEC_PER_SEC)
		snprintf(dur, sizeof(dur), " for %.0f s", (double)(mono - since) / 1e9);
	return rf_err_set(e, -EUSERS, "AGENT_ID_SHARED", "/agent/id",
			  "another agent (boot %s) reports as '%s' too%s: this one (boot %s) is refused, nothing "
			  "stored; give it its own agent.id (a cloned host keeps its host name, the default)",
			  held, rep->agent_id, dur, rep->boot_id);
}

static void report_done(void *ctx, const struct ingest_result *res)
{
	struct api_req *req = ctx;

	/* Runs on the writer thread.  Nothing may touch req after api_resume(). */
	req->ingest_res = *res;
	req->async_done = true;
	api_resume(req);
}

static int reply(struct api_req *req)
{
	const struct ingest_result *res = &req->ingest_res;
	struct rf_err e = { 0 };

	json_t *commands = res->commands;

	api_async_done(req);
	req->ingest_res.commands = NULL;
	if (req->async_err < 0 || res->status < 0)
		json_decref(commands);
	if (req->async_err == -EAGAIN) {
		rf_err_set(&e, -EAGAIN, "QUEUE_FULL", NULL,
			   "rocefabd is busy storing other reports; retry shortly");
		return api_reply_problem(req, 0, &e);
	}
	if (req->async_err < 0 || res->status < 0) {
		rf_err_set(&e, -EAGAIN, "STORE_UNAVAILABLE", NULL,
			   "the report could not be stored (%s); retry later",
			   strerror(-(req->async_err < 0 ? req->async_err : res->status)));
		return api_reply_problem(req, 0, &e);
	}
	return api_reply_json(req, 200,
			      json_pack("{s:b,s:b,s:I,s:I,s:I,s:I,s:o}", "accepted", 1,
					"duplicate", res->duplicate, "seq", (json_int_t)res->seq,
					"samples", (json_int_t)res->samples, "baseline",
					(json_int_t)res->baseline, "ignored_values",
					(json_int_t)res->ignored, "commands",
					commands ? commands : json_array()));
}

/* A replay is stored only for an agent rocefabd knows: one forgotten is not made anew by its
 * former agent's spool (nor one never seen, whose id its agent no longer has). */
static bool known_agent(const struct api_deps *d, const char *id, struct rf_err *e)
{
	struct store_reader *rd = store_reader_get(d->store);
	sqlite3_stmt *st = rd ? store_reader_stmt(rd, "SELECT 1 FROM agents WHERE id = ?") : NULL;
	int rc = SQLITE_ERROR;

	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	if (rd)
		store_reader_put(d->store, rd);
	if (rc == SQLITE_ROW)
		return true;
	if (rc == SQLITE_DONE)
		rf_err_set(e, -ENOENT, "UNKNOWN_AGENT", NULL,
			   "no agent '%s' (forgotten, or never seen): a report spooled under it by an agent that has "
			   "another id now is not stored", id);
	else
		rf_err_set(e, -EAGAIN, "STORE_UNAVAILABLE", NULL, "the store could not be read; retry later");
	return false;
}


/* Whether the request came over loopback (the agent runs on rocefabd's machine). */
static bool client_on_loopback(struct api_req *req)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (sa && sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
	}
	return false;
}

int h_report(struct api_req *req)
{
	const struct api_deps *d = api_deps(req);
	struct report *rep = NULL;
	struct rf_err e = { 0 };
	int r;

	if (req->async_done)
		return reply(req);
	/* an admin token may post as any agent; anonymous requests never get here (nor bodies
	 * that are not application/json: api/server.c refused them) */
	if (req->role == ROLE_AGENT &&
	    !tokens_agent_allowed(req->token_agents, req->match.params[0]))
		return refuse_unbound(req, req->match.params[0]);
	if (api_conf(req)->client_ca && *api_conf(req)->client_ca &&
	    api_client_cert_check(req, req->match.params[0], &e) < 0)
		return api_reply_problem(req, 403, &e);
	r = report_parse(req->body.data ? req->body.data : "", req->body.len, d->reg, &rep, &e);
	if (r == -ENOMEM && !e.err) /* for now: the agent sends it again */
		rf_err_set(&e, -EAGAIN, "OUT_OF_MEMORY", NULL, "out of memory; retry later");
	if (r < 0)
		return api_finish(req, NULL, r, NULL, &e, 200);
	if (strcmp(rep->agent_id, req->match.params[0]) != 0) {
		rf_err_set(&e, -EINVAL, "AGENT_ID_MISMATCH", "/agent/id",
			   "the report is from agent '%s' but was posted to agent '%s'",
			   rep->agent_id, req->match.params[0]);
		report_free(rep);
		return api_reply_problem(req, 0, &e);
	}
	if (rep->probe_endpoint &&
	    probe_endpoint_is_loopback(rep->probe_endpoint,
				       (size_t)(strrchr(rep->probe_endpoint, ':') - rep->probe_endpoint)) &&
	    !client_on_loopback(req)) {
		/* every prober would connect to a service of its own host */
		rep->probe_endpoint_refused = rep->probe_endpoint;
		rep->probe_endpoint = NULL;
	}
	if (api_bool_arg(req, "replay", &rep->replay, &e) < 0 || (rep->replay && !known_agent(d, rep->agent_id, &e))) {
		report_free(rep);
		return api_reply_problem(req, 0, &e);
	}
	{
		int64_t now = tu_now_ns(), t = rep->time_ns;

		for (uint32_t i = 0; i < rep->nsamples; i++)
			if (rep->samples[i].t_ns > t)
				t = rep->samples[i].t_ns;
		if (t - now > REPORT_FUTURE_NS) {
			warn_limited(&ahead_log, rep->agent_id, "CLOCK_AHEAD",
				     "agent '%s' reports times %.0f s ahead of this clock: refused; check its clock "
				     "(NTP)", rep->agent_id, (double)(t - now) / 1e9);
			rf_err_set(&e, -EINVAL, "CLOCK_AHEAD", NULL,
				   "the report's times are %.0f s ahead of rocefabd's clock (more than %d s): "
				   "nothing stored; check this host's clock (NTP)", (double)(t - now) / 1e9,
				   (int)(REPORT_FUTURE_NS / NSEC_PER_SEC));
			report_free(rep);
			return api_reply_problem(req, 0, &e);
		}
	}
	if (shared_id(d, rep, !rep->replay, &e) < 0) {
		report_free(rep);
		return api_reply_problem(req, 0, &e);
	}
	/* Suspend before handing over: the writer may finish before we return. */
	if (!api_suspend(req)) {
		report_free(rep);
		rf_err_set(&e, -EAGAIN, "SHUTTING_DOWN", NULL,
			   "rocefabd is shutting down; send the report again later");
		return api_reply_problem(req, 0, &e);
	}
	r = ingest_submit(d->ingest, rep, report_done, req);
	if (r < 0) {
		report_free(rep);
		req->async_err = r;
		req->async_done = true;
		api_resume(req);
	}
	return 0;
}

/* POST /api/v1/agents/{id}/pfc: a fast PFC report, kept in memory for the detector (nothing
 * is stored, so the answer comes at once).  The same identity checks as a full report. */
int h_pfc_report(struct api_req *req)
{
	const struct api_deps *d = api_deps(req);
	struct report *rep = NULL;
	struct rf_err e = { 0 };
	int r;

	if (req->role == ROLE_AGENT && !tokens_agent_allowed(req->token_agents, req->match.params[0]))
		return refuse_unbound(req, req->match.params[0]);
	if (api_conf(req)->client_ca && *api_conf(req)->client_ca &&
	    api_client_cert_check(req, req->match.params[0], &e) < 0)
		return api_reply_problem(req, 403, &e);
	if (!d->detector) {
		rf_err_set(&e, -ENOENT, "NO_PFC_LANE", NULL, "this rocefabd runs no PFC detector");
		return api_reply_problem(req, 404, &e);
	}
	r = report_parse_pfc(req->body.data ? req->body.data : "", req->body.len, d->reg, &rep, &e);
	if (r == -ENOMEM && !e.err)
		rf_err_set(&e, -EAGAIN, "OUT_OF_MEMORY", NULL, "out of memory; retry later");
	if (r < 0)
		return api_reply_problem(req, 0, &e);
	if (strcmp(rep->agent_id, req->match.params[0]) != 0) {
		rf_err_set(&e, -EINVAL, "AGENT_ID_MISMATCH", "/agent/id",
			   "the report is from agent '%s' but was posted to agent '%s'", rep->agent_id,
			   req->match.params[0]);
		report_free(rep);
		return api_reply_problem(req, 0, &e);
	}
	if (shared_id(d, rep, false, &e) < 0) {
		report_free(rep);
		return api_reply_problem(req, 0, &e);
	}
	{
		unsigned refused = 0;
		json_t *ans;

		r = detector_put(d->detector, rep, req->body.len, &refused);
		ans = json_pack("{s:b,s:I,s:I}", "accepted", r != -ENOMEM, "ports", (json_int_t)rep->nports,
				"refused", (json_int_t)refused);
		report_free(rep);
		if (r == -ENOMEM) {
			json_decref(ans);
			rf_err_set(&e, -EAGAIN, "OUT_OF_MEMORY", NULL, "out of memory; retry later");
			return api_reply_problem(req, 0, &e);
		}
		return api_reply_json(req, 200, ans);
	}
}
