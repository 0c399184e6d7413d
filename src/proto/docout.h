/* SPDX-License-Identifier: BSD-3-Clause */
/* docout: a bounded output buffer for a document (a listing, JSON, Prometheus text) that
 * remembers its first failure, so a renderer appends without checking every call. Used by
 * metrics.c's outputs and the dashboard's documents (dash_data.c). */
#ifndef SPUR_DOCOUT_H
#define SPUR_DOCOUT_H

#include <stddef.h>
#include <string.h>

#include "buf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DOCOUT_NO_MEMORY (-1) /* out of memory */
#define DOCOUT_TOO_LARGE (-2) /* the document would pass its byte limit */

struct json_t;

/* struct docout is a document being appended to a buf. */
struct docout {
    struct buf *b; /* where the document goes */
    int err;       /* 0, DOCOUT_NO_MEMORY or DOCOUT_TOO_LARGE: the first failure */
    size_t start;  /* buf_len(b) before the document */
    size_t max;    /* bytes the document may take, 0 = no limit */
};

/* docout_init starts a document at the end of b, of at most max bytes (0: no limit). */
struct docout docout_init(struct buf *b, size_t max);

/* docout_put appends s[0..n); nothing once a failure was recorded. */
void docout_put(struct docout *o, const char *s, size_t n);

/* docout_puts appends the string s. */
static inline void docout_puts(struct docout *o, const char *s) { docout_put(o, s, strlen(s)); }

/* docout_json appends v as compact JSON with reals of precision digits, and releases v (taken;
 * NULL means out of memory). */
void docout_json(struct docout *o, struct json_t *v, int precision);

#ifdef __cplusplus
}
#endif
#endif
