/* SPDX-License-Identifier: BSD-3-Clause */
/* notify: the sd_notify messages of a Type=notify service; no-ops without libsystemd. */
#include "spur_config.h"
#include "notify.h"

#include <errno.h>
#include <stdint.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>

/* send_state sends one state string; maps sd_notify's result to 1, 0 or -1 (errno set). */
static int send_state(const char *state)
{
    int rc = sd_notify(0, state);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return rc > 0 ? 1 : 0;
}

int notify_ready(void)
{
    return send_state("READY=1\nSTATUS=accepting connections");
}

int notify_watchdog(void)
{
    return send_state("WATCHDOG=1");
}

int notify_stopping(void)
{
    return send_state("STOPPING=1\nSTATUS=shutting down");
}

double notify_watchdog_interval(void)
{
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return 0;
    return (double)usec / 2e6;
}

#else /* !HAVE_LIBSYSTEMD */

int notify_ready(void)
{
    return 0;
}

int notify_watchdog(void)
{
    return 0;
}

int notify_stopping(void)
{
    return 0;
}

double notify_watchdog_interval(void)
{
    return 0;
}

#endif
