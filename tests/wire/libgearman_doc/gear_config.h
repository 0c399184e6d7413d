/* SPDX-License-Identifier: BSD-3-Clause */
/* The libgearman-doc example programs include gearmand's build-time "gear_config.h"; they need
 * nothing from it. Used by tests/wire/test_libgearman_examples.py only. */
#pragma once
