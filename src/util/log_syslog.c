/* SPDX-License-Identifier: BSD-3-Clause */
/* log_syslog: the syslog(3) destination of log. */
#include "log_syslog.h"

#include <syslog.h>

void log_syslog_open(void) { openlog("spurd", LOG_PID | LOG_NDELAY, LOG_DAEMON); }

void log_syslog_write(int level, const char *msg, const char *suffix)
{
    syslog(LOG_MAKEPRI(LOG_DAEMON, level & LOG_PRIMASK), "%s%s", msg, suffix);
}

void log_syslog_close(void) { closelog(); }
