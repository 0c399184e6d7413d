/* SPDX-License-Identifier: BSD-3-Clause */
/* esc: the escaping of names (functions, client ids, uniques) in the admin text listings, and
 * its inverse for names given to admin commands (docs/ADMIN.md, "Names in listings"). Pure. */
#ifndef SPUR_ESC_H
#define SPUR_ESC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of esc_encode and esc_byte. */
enum {
    ESC_SPACE = 1, /* also escape ' ' (listings whose columns are separated by spaces) */
};

/* ESC_MAX is the most bytes esc_encode writes for len input bytes. */
#define ESC_MAX(len) (3 * (len))

/* esc_byte reports whether the byte at s[i] (of s[0..len)) is written as %XX: a control byte
 * (0x00-0x1f, 0x7f), a space with ESC_SPACE, or a '%' followed by two hex digits (so that it
 * cannot be read as an escape). Every other byte, '%' elsewhere and bytes >= 0x80 included, is
 * written as it is, so an ordinary name is listed exactly as gearmand lists it. */
int esc_byte(const char *s, size_t len, size_t i, unsigned flags);

/* esc_needed reports whether esc_encode would change s[0..len). */
int esc_needed(const char *s, size_t len, unsigned flags);

/* esc_encode writes s[0..len) escaped into out (room for ESC_MAX(len) bytes) and returns the
 * bytes written. Not NUL-terminated. */
size_t esc_encode(const char *s, size_t len, char *out, unsigned flags);

struct buf;

/* esc_append appends s[0..len) escaped (esc_encode) to b. Returns 0, or -1 when out of memory. */
int esc_append(struct buf *b, const char *s, size_t len, unsigned flags);

/* esc_decode turns every %XX (two hex digits, either case) of s[0..len) into its byte, in place,
 * and returns the new length (never more than len). A '%' not followed by two hex digits stays
 * as it is, so esc_decode(esc_encode(x)) == x for every x and any flags. */
size_t esc_decode(char *s, size_t len);

/* esc_decode_dup returns s[0..len) decoded (esc_decode), malloc'd and NUL-terminated, its
 * length in *out_len: a name given to an admin command in the form the listings print it (%09 is
 * a TAB). NULL when out of memory; the caller frees it. */
char *esc_decode_dup(const char *s, size_t len, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
