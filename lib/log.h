/* Logging: levels with meaning, a subsystem tag on every line, stderr or the journal.
 *
 * Policy (STYLE.md): library code returns errors and logs at debug only; the caller that
 * decides logs once.  error = harm beyond the call, warning = repaired by itself,
 * info = a state change that is also visible in REST, debug = for developers. */
#ifndef ROCEFAB_LOG_H
#define ROCEFAB_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>

enum log_target {
	LOG_TARGET_AUTO,    /* journal when stderr is connected to it, else stderr */
	LOG_TARGET_STDERR,
	LOG_TARGET_JOURNAL,
};

/* Program name shown on stderr lines and as SYSLOG_IDENTIFIER. */
void log_init(const char *ident);
void log_set_level(int level);
int log_get_level(void);
/* Parses "error", "warning", "notice", "info", "debug"; returns 0 or -EINVAL. */
int log_parse_level(const char *s, int *ret_level);
int log_parse_target(const char *s, enum log_target *ret_target);
void log_set_target(enum log_target t);
/* The choices of a log-level and a log-target setting (CONF_ENUM), and applying them by index. */
extern const char *const log_level_choices[];
extern const char *const log_target_choices[];
void log_configure(int level_choice, int target_choice);
bool log_enabled(int level);

/* code: a stable error code (e.g. "STORE_UNAVAILABLE") or NULL; it appears on the line and
 * as the journal field ROCEFAB_CODE so that operators can grep and alert on it. */
void log_msg(int level, const char *subsys, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void log_vmsg(int level, const char *subsys, const char *code, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

#define log_error(sub, ...)   log_msg(LOG_ERR, sub, NULL, __VA_ARGS__)
#define log_warning(sub, ...) log_msg(LOG_WARNING, sub, NULL, __VA_ARGS__)
#define log_notice(sub, ...)  log_msg(LOG_NOTICE, sub, NULL, __VA_ARGS__)
#define log_info(sub, ...)    log_msg(LOG_INFO, sub, NULL, __VA_ARGS__)
#define log_debug(sub, ...)                                                                        \
	do {                                                                                       \
		if (log_enabled(LOG_DEBUG))                                                        \
			log_msg(LOG_DEBUG, sub, NULL, __VA_ARGS__);                                \
	} while (0)

#endif
