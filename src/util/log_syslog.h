/* SPDX-License-Identifier: BSD-3-Clause */
/* log_syslog: the syslog(3) destination of log, kept apart because <syslog.h> defines macros
 * (LOG_INFO, LOG_DEBUG, ...) that clash with log.h's level names. */
#ifndef SPUR_LOG_SYSLOG_H
#define SPUR_LOG_SYSLOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* log_syslog_open connects to syslog as "spurd" with the pid, facility daemon. */
void log_syslog_open(void);

/* log_syslog_write sends one message at priority level (log.h's levels are syslog's 0..7). */
void log_syslog_write(int level, const char *msg, const char *suffix);

/* log_syslog_close disconnects from syslog. */
void log_syslog_close(void);

#ifdef __cplusplus
}
#endif
#endif
