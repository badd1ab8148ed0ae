/* Bearer token files (rocefab-agent's agent.token_file, rocefab-sim's --token-file,
 * rocefabctl's --token-file): one reader, so that every program applies the same rule to a
 * file holding a secret, as ssh does with a private key:
 *   - others (not the owner, not the group) may read or write it: refused;
 *   - the group may read or write it: used, with a warning (a root-owned file of mode 0640
 *     whose group is the agent's is a deliberate setup, but should be one);
 *   - otherwise (0600, 0400): used. */
#ifndef ROCEFAB_TOKENFILE_H
#define ROCEFAB_TOKENFILE_H

#include <stdbool.h>

#include "lib/err.h"

/* The token: the file's first line up to a space or the line's end, in *ret (malloc'd).
 * 0, with *ret_warned set and warning filled (code TOKEN_FILE_MODE, where the path) when the
 * group may read or write the file; or -EACCES (TOKEN_FILE_MODE: others may read or write
 * it, "chmod 600 FILE"), -ENOENT and other errnos (TOKEN_UNREADABLE: cannot open or read
 * it), -EINVAL (TOKEN_UNREADABLE: empty) with e filled.  Logs nothing: the caller says it. */
int tokenfile_read(const char *path, char **ret, bool *ret_warned, struct rf_err *warning,
		   struct rf_err *e);

/* A TLS private key file (rocefabd's api.tls_key, rocefab-agent's agent.tls_key) under the
 * same rule: 0 (with *ret_warned set and warning filled, code KEY_FILE_MODE, when its group may
 * read or write it), -EACCES (KEY_FILE_MODE: others may), or -errno (KEY_UNREADABLE: it cannot
 * be looked at), with e filled.  The TLS library reads the file itself afterwards. */
int keyfile_check(const char *path, bool *ret_warned, struct rf_err *warning, struct rf_err *e);
/* The same on the status of a file already open (fstat), for a program that reads the key. */
struct stat;
int keyfile_check_stat(const struct stat *st, const char *path, bool *ret_warned,
		       struct rf_err *warning, struct rf_err *e);

#endif
