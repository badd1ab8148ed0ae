/* rocefabctl's commands: one table entry per command (its usage, how many arguments it takes,
 * the request it makes, how its answer is printed), the request built from a command line, and
 * running it against rocefabd.  main.c only parses the global options. */
#ifndef ROCEFAB_CLI_COMMANDS_H
#define ROCEFAB_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "cli/print.h"
#include "lib/err.h"

/* The options the commands read; NULL or 0 when not given. */
struct cli_opts {
	const char *host, *device; /* ports; --device also set dcqcn's, and a set pattern's */
	const char *state;         /* ports, alerts, changes */
	const char *from, *to;     /* counters */
	const char *priority;      /* counters: one priority's series */
	const char *step;          /* counters */
	const char *window;        /* probes */
	const char *op, *size;     /* probes */
	const char *agent;         /* changes */
	const char *port;          /* set dcqcn */
	const char *reason;        /* set, cc apply/reject/rollback/policy, mitigate */
	const char *max_targets;   /* set with a pattern: the body's "max_targets" */
	const char *limit;         /* changes, settings-log: the entries listed at most */
	const char *batch;         /* changes: one batch's (a proposal's change_batch) */
	double wait_s;             /* set --wait: seconds to follow the batch */
	bool json;                 /* -j: the answer as JSON */
	bool all;                  /* cc proposals --all */
};

/* The options above a command reads (struct cli_cmd's opts): any other given is refused, where
 * rocefabctl used to ignore it ("changes --all" listed every change as if it meant something). */
enum {
	CLI_OPT_HOST = 1 << 0,
	CLI_OPT_DEVICE = 1 << 1,
	CLI_OPT_STATE = 1 << 2,
	CLI_OPT_FROM = 1 << 3,
	CLI_OPT_TO = 1 << 4,
	CLI_OPT_PRIORITY = 1 << 5,
	CLI_OPT_STEP = 1 << 6,
	CLI_OPT_WINDOW = 1 << 7,
	CLI_OPT_OP = 1 << 8,
	CLI_OPT_SIZE = 1 << 9,
	CLI_OPT_AGENT = 1 << 10,
	CLI_OPT_PORT = 1 << 11,
	CLI_OPT_REASON = 1 << 12,
	CLI_OPT_MAX_TARGETS = 1 << 13,
	CLI_OPT_WAIT = 1 << 14,
	CLI_OPT_ALL = 1 << 15,
	CLI_OPT_LIMIT = 1 << 16,
	CLI_OPT_BATCH = 1 << 17,
};

/* The command options, one table (commands.c) that main.c's getopt table, the check of the
 * options a command takes and --list-options all read. */
struct cli_opt_def {
	unsigned bit;     /* CLI_OPT_* */
	const char *name; /* the long option, without its "--" */
	int has_arg;      /* getopt's no_argument, required_argument, optional_argument */
	size_t off;       /* its value in struct cli_opts: a string, but --wait's and --all's */
};
#define CLI_NOPT_DEFS 18 /* one a CLI_OPT_* bit */
extern const struct cli_opt_def cli_opt_defs[CLI_NOPT_DEFS];

/* Sets the option of d from its argument (NULL: none given) into o; -EINVAL with e->msg when
 * the argument is not one the option takes. */
int cli_opt_set(struct cli_opts *o, const struct cli_opt_def *d, const char *arg, struct rf_err *e);

struct cli_request;

enum {
	CLI_FOLLOW_BATCH = 1 << 0, /* with --wait, follow the batch of changes until settled */
	CLI_WITH_ALERTS = 1 << 1,  /* the text output also shows the active alerts */
};

struct cli_cmd {
	const char *name;
	const char *synopsis; /* usage lines, from the name on ("hosts [HOST]") */
	const char *help;     /* what it does, lines of usage; NULL: none */
	int min_args;         /* positional arguments after the name */
	int max_args;         /* -1: any number */
	const char *path;     /* the resource it starts from; NULL: build() makes it all */
	/* The request from the positional arguments (their number is checked) and the options. */
	int (*build)(const struct cli_cmd *c, char *const *args, int nargs,
		     const struct cli_opts *o, struct cli_request *req, struct rf_err *e);
	print_fn *print;     /* the answer as text; NULL: as JSON */
	print_fn *print_one; /* the same when a positional argument named one ("hosts X") */
	unsigned flags;      /* CLI_* */
	unsigned opts;       /* CLI_OPT_*: the options it reads (-j, -s, -t, -w, --cacert: every one) */
	int timeout_s;       /* how long the answer may take; 0: 30 s */
};

struct cli_request {
	const struct cli_cmd *cmd;
	const char *method;
	char path[2048]; /* with its query */
	json_t *body;    /* owned; NULL: none */
	print_fn *print; /* the answer as text (NULL: JSON) */
	bool then_outside; /* the text output also says which members the tuner's policy leaves
			    * outside now (a policy changed: GET /api/v1/cc) */
};

/* The command called name; NULL when there is none. */
const struct cli_cmd *cli_cmd_find(const char *name);

/* The usage text, the command list made from the table. */
void cli_usage(FILE *f);
/* One command's usage; -ENOENT when there is no such command. */
int cli_usage_cmd(FILE *f, const char *name);
/* The commands' names, one a line (shell completion). */
void cli_list_commands(FILE *f);
/* The options of a command's own (not those every command takes), one a line (shell
 * completion); -ENOENT when there is no such command. */
int cli_list_options(FILE *f, const char *name);

/* The request of command line "name args..." (nargs positional arguments after the name) into
 * *req, which the caller releases with cli_request_fini() when this returns 0.  -EINVAL for an
 * unknown command (e->code "UNKNOWN_COMMAND"), a wrong number of arguments or an option the
 * command does not take (e->code "USAGE": show the command's usage too) and for
 * arguments the command rejects (e->msg says why), -ENAMETOOLONG when the request's path would
 * not fit; *req is then untouched. */
int cli_request_build(const char *name, char *const *args, int nargs, const struct cli_opts *o,
		      struct cli_request *req, struct rf_err *e);
void cli_request_fini(struct cli_request *req);

/* How cli_run() reaches rocefabd: httpc_json() in rocefabctl, a fake in tests.  json() returns
 * 0 and a document in *ret (a new reference), or a negative errno with e filled. */
struct cli_transport {
	int (*json)(void *ctx, const char *method, const char *path, json_t *body, json_t **ret,
		    struct rf_err *e);
	void *ctx;
};

/* Sends req, prints the answer on out and the errors on err ("rocefabctl: ..."), and returns
 * the exit status: 0; 1 when rocefabd could not be reached or answered with an error; 3 when
 * a followed batch (set --wait) has a change that was not applied. */
int cli_run(const struct cli_request *req, const struct cli_opts *o, const struct cli_transport *t,
	    FILE *out, FILE *err);

#endif
