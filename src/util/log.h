/* SPDX-License-Identifier: BSD-3-Clause */
/* log: leveled logging to stderr or a file, with rate limiting for floods. */
#ifndef SPUR_LOG_H
#define SPUR_LOG_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Levels use gearmand's names and order (its --verbose values). */
enum log_level {
    LOG_FATAL = 0,
    LOG_ALERT,
    LOG_CRITICAL,
    LOG_ERROR,
    LOG_WARNING,
    LOG_NOTICE,
    LOG_INFO,
    LOG_DEBUG,
};

/* log_level_parse maps a level name (case-insensitive) to its value; returns -1 if unknown. */
int log_level_parse(const char *name);

/* log_level_name returns the upper-case name of level (a static string). */
const char *log_level_name(enum log_level level);

/* log_open sets the destination: "stderr", "none", or a file path opened for append.
 * Returns 0, or -1 with errno set if the file cannot be opened (logging then goes to stderr). */
int log_open(const char *dest);

/* log_reopen reopens the current file destination (on SIGHUP). Returns 0 or -1. */
int log_reopen(void);

/* log_close closes the destination file, if any. */
void log_close(void);

/* log_set_syslog turns sending every line to syslog(3) (ident "spurd", facility daemon) on or
 * off, in addition to the destination of log_open. */
void log_set_syslog(int on);

/* log_on_stderr says whether log lines are written to stderr now (no log file, not "none",
 * not quiet): a message also printed there for the user need not be logged there too. */
int log_on_stderr(void);

/* log_set_quiet stops (or resumes) writing to the log_open destination; syslog is unaffected.
 * A daemon whose stderr became /dev/null uses it. */
void log_set_quiet(int on);

/* log_set_level sets the most verbose level that is written. */
void log_set_level(enum log_level level);

/* log_get_level returns the current level. */
enum log_level log_get_level(void);

/* log_max_level is the most verbose level written anywhere, -1 when nothing is (level "none"
 * and no syslog, or quiet). Read it through log_enabled; only log.c writes it. */
extern int log_max_level;

/* log_enabled reports whether messages at level are written: one comparison, so a caller can
 * skip formatting (or gathering) a message for free when its level is off. */
static inline int log_enabled(enum log_level level) { return (int)level <= log_max_level; }

/* log_msg writes one line at level, with file:line in debug builds. */
void log_msg(enum log_level level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* struct log_limit rate-limits one kind of message: at most burst lines (1 if 0) per interval;
 * the first line after a suppression says how many were suppressed. */
struct log_limit {
    double interval;   /* seconds of one window */
    double last;       /* monotonic time the current window began, 0 if none */
    uint64_t dropped;  /* messages suppressed since the last line */
    uint32_t burst;    /* lines allowed per window; 0 means 1 */
    uint32_t used;     /* lines written in the current window */
};

/* log_limited writes the message if lim allows it now, appending how many were suppressed. */
void log_limited(struct log_limit *lim, enum log_level level, const char *file, int line,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define log_error(...) log_msg(LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) \
    do { if (log_enabled(LOG_DEBUG)) log_msg(LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__); } while (0)

/* log_debug_limited is log_debug through the limiter lim: nothing is formatted when DEBUG is off. */
#define log_debug_limited(lim, ...) \
    do { if (log_enabled(LOG_DEBUG)) log_limited((lim), LOG_DEBUG, __FILE__, __LINE__, \
                                                 __VA_ARGS__); } while (0)

#ifdef __cplusplus
}
#endif
#endif
