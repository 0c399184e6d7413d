/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: libgearman also installs its API as <libgearman-1.0/gearman.h>. */
#ifndef LIBGEARMAN_COMPAT_GEARMAN_1_0_H
#define LIBGEARMAN_COMPAT_GEARMAN_1_0_H
#include <libgearman/gearman.h>
#endif
