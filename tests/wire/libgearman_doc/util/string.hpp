/* SPDX-License-Identifier: BSD-3-Clause */
/* Stand-in for gearmand's util/string.hpp as far as the libgearman-doc examples use it: a string
 * literal followed by its length (without the NUL), for gearman_execute(). */
#pragma once
#define util_literal_param(X) (X), (sizeof(X) - 1)
