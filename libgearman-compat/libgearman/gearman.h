/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: a pure-C Gearman client and worker library with libgearman 1.1's API.
 * Programs written against <libgearman/gearman.h> build unchanged with
 * `-I <prefix>/include/libgearman-compat` (see `pkg-config --cflags libgearman-compat`).
 * Compiles as C (C99 or later) and as C++. */
#ifndef LIBGEARMAN_COMPAT_GEARMAN_H
#define LIBGEARMAN_COMPAT_GEARMAN_H

/* Identifies this implementation, for code that needs to tell it from libgearman. */
#define LIBGEARMAN_COMPAT 1
#define LIBGEARMAN_VERSION_STRING "1.1.20"
#define LIBGEARMAN_VERSION_HEX 0x01001020

#include <libgearman/constants.h>
#include <libgearman/return.h>
#include <libgearman/task.h>
#include <libgearman/job.h>
#include <libgearman/client.h>
#include <libgearman/worker.h>
#include <libgearman/spur.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gearman_strerror returns the name of rc, e.g. "GEARMAN_TIMEOUT" (never NULL). */
const char *gearman_strerror(gearman_return_t rc);

/* gearman_version returns the libgearman API version this library follows ("1.1.20"). */
const char *gearman_version(void);

/* gearman_bugreport returns where to report problems. */
const char *gearman_bugreport(void);

/* gearman_verbose_name returns the name of a verbosity level ("ERROR"), or "UNKNOWN". */
const char *gearman_verbose_name(gearman_verbose_t verbose);

#ifdef __cplusplus
}
#endif
#endif
