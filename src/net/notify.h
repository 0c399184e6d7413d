/* SPDX-License-Identifier: BSD-3-Clause */
/* notify: tells systemd (Type=notify) when spurd is ready, alive and stopping, through
 * libsystemd's sd_notify. Every call is a no-op that returns 0 when spurd is built without
 * libsystemd (configure --without-systemd) or runs without $NOTIFY_SOCKET. No libev, no state. */
#ifndef SPUR_NOTIFY_H
#define SPUR_NOTIFY_H

#ifdef __cplusplus
extern "C" {
#endif

/* notify_ready sends READY=1 (and a STATUS= line). Call it once, after every listener
 * is bound and the store replay is done. Returns 1 if the message was sent, 0 if there is no
 * $NOTIFY_SOCKET (or no libsystemd), -1 on a send error (errno set). */
int notify_ready(void);

/* notify_watchdog sends WATCHDOG=1, the keep-alive systemd expects more often than WatchdogSec.
 * Returns as notify_ready. */
int notify_watchdog(void);

/* notify_stopping sends STOPPING=1 when shutdown begins. Returns as notify_ready. */
int notify_stopping(void);

/* notify_watchdog_interval returns the period, in seconds, at which notify_watchdog should be
 * called: half of $WATCHDOG_USEC when systemd set it for this process ($WATCHDOG_PID, if set,
 * must be ours), otherwise 0 (no watchdog: arm no timer). */
double notify_watchdog_interval(void);

#ifdef __cplusplus
}
#endif

#endif
