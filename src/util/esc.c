/* SPDX-License-Identifier: BSD-3-Clause */
/* esc: %XX escaping of names in the admin text listings (esc.h). */
#include "esc.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* hexval returns the value of hex digit c, or -1. */
static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* escape_at reports whether s[i..len) starts with an escape: '%' and two hex digits. */
static int escape_at(const char *s, size_t len, size_t i)
{
    return s[i] == '%' && i + 2 < len && hexval((unsigned char)s[i + 1]) >= 0 &&
           hexval((unsigned char)s[i + 2]) >= 0;
}

int esc_byte(const char *s, size_t len, size_t i, unsigned flags)
{
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f)
        return 1;
    if (c == ' ')
        return (flags & ESC_SPACE) != 0;
    return c == '%' && escape_at(s, len, i);
}

int esc_needed(const char *s, size_t len, unsigned flags)
{
    for (size_t i = 0; i < len; i++)
        if (esc_byte(s, len, i, flags))
            return 1;
    return 0;
}

size_t esc_encode(const char *s, size_t len, char *out, unsigned flags)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (esc_byte(s, len, i, flags)) {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else {
            out[o++] = (char)c;
        }
    }
    return o;
}

int esc_append(struct buf *b, const char *s, size_t len, unsigned flags)
{
    if (len == 0)
        return 0;
    if (buf_reserve(b, ESC_MAX(len)) != 0)
        return -1;
    buf_commit(b, esc_encode(s, len, buf_tail(b), flags));
    return 0;
}

size_t esc_decode(char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (escape_at(s, len, i)) {
            s[o++] = (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
            i += 2;
        } else {
            s[o++] = s[i];
        }
    }
    return o;
}

char *esc_decode_dup(const char *s, size_t len, size_t *out_len)
{
    char *d = malloc(len + 1);
    if (d == NULL)
        return NULL;
    if (len > 0)
        memcpy(d, s, len);
    *out_len = esc_decode(d, len);
    d[*out_len] = '\0';
    return d;
}
