/* SPDX-License-Identifier: BSD-3-Clause */
/* proto_admin: the pure parser for admin text lines. No I/O, no allocation. */
#ifndef SPUR_PROTO_ADMIN_H
#define SPUR_PROTO_ADMIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PA_MAX_TOKENS 8 /* tokens pa_split returns at most */

/* enum pa_status is the result of pa_find_line. */
enum pa_status {
    PA_OK = 0,    /* a whole line was found */
    PA_NEED_MORE, /* no newline yet, and fewer than max_line bytes so far */
    PA_TOO_LONG,  /* no newline within max_line bytes */
};

/* pa_find_line looks for the '\n' that ends the line at buf[0..n). The line, newline included,
 * may be at most max_line bytes. On PA_OK, *line_len is the length of the line without its '\n'
 * and without one trailing '\r', and *consumed the bytes through the '\n'. */
enum pa_status pa_find_line(const char *buf, size_t n, size_t max_line, size_t *line_len,
                            size_t *consumed);

/* struct pa_token is one space-separated word of a line; ptr borrows from the line. */
struct pa_token {
    const char *ptr; /* first byte */
    size_t len;      /* length in bytes */
};

/* pa_split splits line[0..len) on runs of spaces, as gearmand does: a leading space yields an empty
 * first token, trailing spaces yield nothing. Fills at most max tokens and returns how many the line
 * has (which may exceed max; only the first max are filled). */
size_t pa_split(const char *line, size_t len, struct pa_token *tok, size_t max);

/* pa_token_is reports whether tok equals word, ignoring ASCII case. */
int pa_token_is(const struct pa_token *tok, const char *word);

#ifdef __cplusplus
}
#endif
#endif
