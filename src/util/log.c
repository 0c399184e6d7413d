/* SPDX-License-Identifier: BSD-3-Clause */
/* log: leveled logging to stderr or a file, with rate limiting for floods. */
#include "log.h"
#include "log_syslog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *const level_names[] = {
    "FATAL", "ALERT", "CRITICAL", "ERROR", "WARNING", "NOTICE", "INFO", "DEBUG",
};

static enum log_level cur_level = LOG_ERROR; /* gearmand's default */
static FILE *out;                           /* NULL means stderr */
static int disabled;                        /* "none" */
static char *path;                          /* file destination, NULL otherwise */
static int to_syslog;                       /* also send every line to syslog(3) */
static int quiet;                           /* write nothing to the file/stderr destination */
int log_max_level = LOG_ERROR;              /* see log.h: recomputed by update() */

/* update recomputes log_max_level after the level or a destination changed. */
static void update(void)
{
    log_max_level = (to_syslog || (!disabled && !quiet)) ? (int)cur_level : -1;
}

int log_level_parse(const char *name)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *log_level_name(enum log_level level)
{
    if ((unsigned)level >= sizeof level_names / sizeof level_names[0])
        return "UNKNOWN";
    return level_names[level];
}

static int open_path(void)
{
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return -1;
    setvbuf(f, NULL, _IOLBF, 0);
    if (out != NULL)
        fclose(out);
    out = f;
    return 0;
}

int log_open(const char *dest)
{
    log_close();
    if (dest == NULL || strcmp(dest, "stderr") == 0)
        return 0;
    if (strcmp(dest, "none") == 0) {
        disabled = 1;
        update();
        return 0;
    }
    path = strdup(dest);
    if (path == NULL || open_path() != 0) {
        int e = errno; /* the caller reports it */
        free(path);
        path = NULL;
        errno = e;
        return -1;
    }
    return 0;
}

int log_reopen(void)
{
    if (path == NULL)
        return 0;
    return open_path();
}

void log_close(void)
{
    if (out != NULL)
        fclose(out);
    out = NULL;
    free(path);
    path = NULL;
    disabled = 0;
    update();
}

void log_set_syslog(int on)
{
    if (on && !to_syslog)
        log_syslog_open();
    else if (!on && to_syslog)
        log_syslog_close();
    to_syslog = on;
    update();
}

int log_on_stderr(void)
{
    return !disabled && !quiet && out == NULL;
}

void log_set_quiet(int on)
{
    quiet = on;
    update();
}

void log_set_level(enum log_level level)
{
    cur_level = level;
    update();
}

enum log_level log_get_level(void) { return cur_level; }

static void vwrite(enum log_level level, const char *file, int line, const char *suffix,
                   const char *fmt, va_list ap)
{
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);

    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (to_syslog)
        log_syslog_write((int)level, msg, suffix);
    if (disabled || quiet)
        return;
    FILE *f = out ? out : stderr;
#ifdef SPUR_DEBUG
    fprintf(f, "%s.%06ld %s %s:%d: %s%s\n", stamp, ts.tv_nsec / 1000, level_names[level], file,
            line, msg, suffix);
#else
    (void)file;
    (void)line;
    fprintf(f, "%s.%06ld %s %s%s\n", stamp, ts.tv_nsec / 1000, level_names[level], msg, suffix);
#endif
}

void log_msg(enum log_level level, const char *file, int line, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    vwrite(level, file, line, "", fmt, ap);
    va_end(ap);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void log_limited(struct log_limit *lim, enum log_level level, const char *file, int line,
                 const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    double now = mono_now();
    if (lim->last != 0 && now - lim->last < lim->interval) {
        if (lim->used >= (lim->burst > 0 ? lim->burst : 1)) {
            lim->dropped++;
            return;
        }
    } else {
        lim->last = now; /* a new window */
        lim->used = 0;
    }
    lim->used++;
    char suffix[64] = "";
    if (lim->dropped > 0)
        snprintf(suffix, sizeof suffix, " (%llu similar suppressed)",
                 (unsigned long long)lim->dropped);
    lim->dropped = 0;
    va_list ap;
    va_start(ap, fmt);
    vwrite(level, file, line, suffix, fmt, ap);
    va_end(ap);
}
