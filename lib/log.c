/* Logging to stderr or to the systemd journal (structured fields). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "lib/log.h"

static const char *log_ident = "rocefab";
static int log_level = LOG_INFO;
static enum log_target log_target = LOG_TARGET_AUTO;
static bool log_to_journal;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg",	 [LOG_ALERT] = "alert",	  [LOG_CRIT] = "crit",
	[LOG_ERR] = "error",	 [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",	 [LOG_DEBUG] = "debug",
};

/* systemd sets JOURNAL_STREAM=dev:ino when stderr goes to the journal. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void log_update_target(void)
{
	switch (log_target) {
	case LOG_TARGET_JOURNAL:
		log_to_journal = true;
		break;
	case LOG_TARGET_STDERR:
		log_to_journal = false;
		break;
	case LOG_TARGET_AUTO:
	default:
		log_to_journal = stderr_is_journal();
		break;
	}
}

void log_init(const char *ident)
{
	const char *lvl = getenv("ROCEFAB_LOG_LEVEL");
	int l;

	if (ident)
		log_ident = ident;
	if (lvl && log_parse_level(lvl, &l) == 0)
		log_level = l;
	log_update_target();
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

bool log_enabled(int level)
{
	return level <= log_level;
}

int log_parse_level(const char *s, int *ret_level)
{
	static const struct {
		const char *name;
		int level;
	} map[] = {
		{ "error", LOG_ERR },	{ "err", LOG_ERR },	  { "warning", LOG_WARNING },
		{ "warn", LOG_WARNING }, { "notice", LOG_NOTICE }, { "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(s, map[i].name) == 0) {
			*ret_level = map[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

int log_parse_target(const char *s, enum log_target *ret_target)
{
	if (strcmp(s, "auto") == 0)
		*ret_target = LOG_TARGET_AUTO;
	else if (strcmp(s, "stderr") == 0)
		*ret_target = LOG_TARGET_STDERR;
	else if (strcmp(s, "journal") == 0)
		*ret_target = LOG_TARGET_JOURNAL;
	else
		return -EINVAL;
	return 0;
}

void log_set_target(enum log_target t)
{
	log_target = t;
	log_update_target();
}

const char *const log_level_choices[] = { "error", "warning", "notice", "info", "debug", NULL };
const char *const log_target_choices[] = { "auto", "stderr", "journal", NULL };

void log_configure(int level_choice, int target_choice)
{
	static const int levels[] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG };
	static const enum log_target targets[] = { LOG_TARGET_AUTO, LOG_TARGET_STDERR, LOG_TARGET_JOURNAL };

	if (level_choice >= 0 && level_choice < 5)
		log_set_level(levels[level_choice]);
	if (target_choice >= 0 && target_choice < 3)
		log_set_target(targets[target_choice]);
}

void log_vmsg(int level, const char *subsys, const char *code, const char *fmt, va_list ap)
{
	char msg[2048];
	int saved_errno = errno;

	if (!log_enabled(level))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One message, one line: a control character (from a request's path, a file's content)
	 * must not start a fake line or drive the terminal reading the log. */
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	/* a message that already ends with " [CODE]" (an rf_err_str() of the same error) gets it
	 * once, not twice (the journal keeps it in its own field all the same) */
	if (code && *code) {
		size_t n = strlen(msg), k = strlen(code);

		if (n >= k + 3 && msg[n - 1] == ']' && !strncmp(msg + n - 1 - k, code, k) &&
		    !strncmp(msg + n - 3 - k, " [", 2))
			msg[n - 3 - k] = '\0';
	}

	if (log_to_journal) {
		if (code)
			sd_journal_send("MESSAGE=%s: %s [%s]", subsys, msg, code, "PRIORITY=%d", level,
					"SYSLOG_IDENTIFIER=%s", log_ident, "ROCEFAB_SUBSYSTEM=%s",
					subsys, "ROCEFAB_CODE=%s", code, NULL);
		else
			sd_journal_send("MESSAGE=%s: %s", subsys, msg, "PRIORITY=%d", level,
					"SYSLOG_IDENTIFIER=%s", log_ident, "ROCEFAB_SUBSYSTEM=%s",
					subsys, NULL);
	} else {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		pthread_mutex_lock(&log_lock);
		fprintf(stderr, "%s.%03ldZ %s[%d] %-7s %s: %s%s%s%s\n", when, ts.tv_nsec / 1000000,
			log_ident, (int)getpid(),
			level >= 0 && level <= LOG_DEBUG ? level_names[level] : "?", subsys, msg,
			code ? " [" : "", code ? code : "", code ? "]" : "");
		pthread_mutex_unlock(&log_lock);
	}
	errno = saved_errno;
}

void log_msg(int level, const char *subsys, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, subsys, code, fmt, ap);
	va_end(ap);
}
