/* SPDX-License-Identifier: BSD-3-Clause */
/* meta_text: reading the flat JSON objects features store beside a job ("meta": retries' state,
 * lifetimes), without a JSON library on the restore path. */
#ifndef SPUR_META_TEXT_H
#define SPUR_META_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* meta_find returns the position just after `"key"` and its colon (spaces or tabs allowed
 * around the colon) in m[0..len), or NULL when the key is not there. */
const char *meta_find(const char *m, size_t len, const char *key);

/* meta_number reads the decimal number at p (before end; at most 39 characters of
 * "0123456789.eE+-"), 0 when there is none. */
double meta_number(const char *p, const char *end);

#ifdef __cplusplus
}
#endif
#endif
