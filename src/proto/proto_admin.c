/* SPDX-License-Identifier: BSD-3-Clause */
/* proto_admin: the pure parser for admin text lines. */
#include "proto_admin.h"

#include <string.h>
#include <strings.h>

enum pa_status pa_find_line(const char *buf, size_t n, size_t max_line, size_t *line_len,
                            size_t *consumed)
{
    size_t scan = n < max_line ? n : max_line;
    const char *nl = memchr(buf, '\n', scan);
    if (nl == NULL)
        return n >= max_line ? PA_TOO_LONG : PA_NEED_MORE;
    size_t len = (size_t)(nl - buf);
    *consumed = len + 1;
    if (len > 0 && buf[len - 1] == '\r')
        len--;
    *line_len = len;
    return PA_OK;
}

size_t pa_split(const char *line, size_t len, struct pa_token *tok, size_t max)
{
    size_t count = 0;
    size_t i = 0;
    if (len > 0 && line[0] == ' ') {
        /* gearmand: a leading space makes an empty first token */
        if (count < max)
            tok[count] = (struct pa_token){line, 0};
        count++;
    }
    while (i < len) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        size_t start = i;
        while (i < len && line[i] != ' ')
            i++;
        if (count < max)
            tok[count] = (struct pa_token){line + start, i - start};
        count++;
    }
    return count;
}

int pa_token_is(const struct pa_token *tok, const char *word)
{
    size_t wl = strlen(word);
    return tok->len == wl && strncasecmp(tok->ptr, word, wl) == 0;
}
