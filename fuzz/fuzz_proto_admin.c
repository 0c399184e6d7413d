/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_proto_admin: pa_find_line, pa_split and pa_token_is on arbitrary bytes, consumed line after
 * line as peer.c does, checked against their documented contracts and a simple reference split.
 *
 * Input: byte 0 picks max_line (small values or the 8192 default), byte 1 picks how many tokens
 * pa_split may fill; the rest is the byte stream. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto_admin.h"

/* struct ref_tok is one token of the reference split. */
struct ref_tok {
    size_t start; /* offset in the line */
    size_t len;   /* bytes */
};

/* ref_split is the reference for pa_split, written from its comment: words separated by runs of
 * spaces; a leading space gives an empty first token; trailing spaces give nothing. Fills up to
 * max and returns the total count. */
static size_t ref_split(const char *s, size_t len, struct ref_tok *out, size_t max)
{
    size_t count = 0;
    if (len > 0 && s[0] == ' ') {
        if (count < max)
            out[count] = (struct ref_tok){0, 0};
        count++;
    }
    size_t i = 0;
    for (;;) {
        while (i < len && s[i] == ' ')
            i++;
        if (i >= len)
            break;
        size_t st = i;
        while (i < len && s[i] != ' ')
            i++;
        if (count < max)
            out[count] = (struct ref_tok){st, i - st};
        count++;
    }
    return count;
}

/* ref_token_is compares ignoring ASCII case, like pa_token_is promises. */
static int ref_token_is(const char *p, size_t len, const char *word)
{
    if (strlen(word) != len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char a = (unsigned char)p[i], b = (unsigned char)word[i];
        if (a >= 'A' && a <= 'Z')
            a = (unsigned char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z')
            b = (unsigned char)(b - 'A' + 'a');
        if (a != b)
            return 0;
    }
    return 1;
}

static const char *const words[] = {"workers", "status", "show", "jobs", "unique", "cancel",
                                    "job", "maxqueue", "shutdown", "graceful", "version", "",
                                    "create", "function", "drop", "getpid", "verbose",
                                    "prioritystatus"};

/* check_split runs pa_split on one line into an array of exactly max tokens (so a write past it
 * is an AddressSanitizer report) and compares with the reference. */
static void check_split(const char *line, size_t len, size_t max)
{
    /* the line itself in an exact-size allocation: a read past it is reported too */
    char *copy = malloc(len ? len : 1);
    FUZZ_CHECK(copy != NULL, "malloc");
    memcpy(copy, line, len);
    struct pa_token *tok = max ? malloc(sizeof *tok * max) : NULL;
    struct ref_tok ref[64];
    size_t n = pa_split(copy, len, tok, max);
    size_t rn = ref_split(copy, len, ref, 64);
    FUZZ_CHECK(n == rn, "pa_split counted %zu tokens, reference %zu", n, rn);
    FUZZ_CHECK(n <= len + 1, "more tokens than bytes");
    size_t filled = n < max ? n : max;
    const char *prev_end = copy;
    for (size_t i = 0; i < filled; i++) {
        FUZZ_CHECK(tok[i].ptr >= copy && tok[i].ptr + tok[i].len <= copy + len,
                   "token %zu outside the line", i);
        if (i < 64)
            FUZZ_CHECK((size_t)(tok[i].ptr - copy) == ref[i].start && tok[i].len == ref[i].len,
                       "token %zu differs from the reference", i);
        FUZZ_CHECK(memchr(tok[i].ptr, ' ', tok[i].len) == NULL, "space inside token %zu", i);
        FUZZ_CHECK(tok[i].ptr >= prev_end, "token %zu overlaps the previous one", i);
        FUZZ_CHECK(tok[i].len > 0 || (i == 0 && len > 0 && copy[0] == ' '),
                   "empty token %zu that is not a leading-space token", i);
        prev_end = tok[i].ptr + tok[i].len;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
            FUZZ_CHECK(pa_token_is(&tok[i], words[w]) ==
                           ref_token_is(tok[i].ptr, tok[i].len, words[w]),
                       "pa_token_is disagrees for '%s'", words[w]);
    }
    free(tok);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    uint8_t a = rd_u8(&r);
    uint8_t b = rd_u8(&r);
    size_t max_line = (a & 0x80) ? 8192 : a;  /* 0..127 or the default */
    size_t max_tok = b % (PA_MAX_TOKENS + 3);  /* 0 .. PA_MAX_TOKENS + 2 */
    size_t n;
    const char *buf = (const char *)rd_bytes(&r, rd_left(&r), &n);

    size_t off = 0;
    int skipping = 0; /* dropping the rest of an over-long line, as peer.c does */
    while (off < n) {
        const char *p = buf + off;
        size_t left = n - off;
        if (skipping) {
            const char *nl = memchr(p, '\n', left);
            if (nl == NULL)
                break;
            off += (size_t)(nl - p) + 1;
            skipping = 0;
            continue;
        }
        size_t line_len = 777777, consumed = 888888;
        enum pa_status st = pa_find_line(p, left, max_line, &line_len, &consumed);
        size_t scan = left < max_line ? left : max_line;
        const char *nl = memchr(p, '\n', scan);
        switch (st) {
        case PA_OK:
            FUZZ_CHECK(nl != NULL, "OK without a newline within max_line");
            FUZZ_CHECK(consumed == (size_t)(nl - p) + 1, "consumed %zu, newline at %zu", consumed,
                       (size_t)(nl - p));
            FUZZ_CHECK(consumed <= left && consumed <= max_line, "line longer than allowed");
            FUZZ_CHECK(line_len == consumed - 1 ||
                           (line_len == consumed - 2 && consumed >= 2 && p[consumed - 2] == '\r'),
                       "line_len %zu for consumed %zu", line_len, consumed);
            FUZZ_CHECK(!(line_len == consumed - 1 && consumed >= 2 && p[consumed - 2] == '\r'),
                       "a trailing CR was kept");
            check_split(p, line_len, max_tok);
            off += consumed;
            break;
        case PA_NEED_MORE:
            FUZZ_CHECK(nl == NULL && left < max_line, "NEED_MORE with a newline or a full line");
            FUZZ_CHECK(line_len == 777777 && consumed == 888888, "NEED_MORE wrote outputs");
            off = n;
            break;
        case PA_TOO_LONG:
            FUZZ_CHECK(nl == NULL && left >= max_line, "TOO_LONG with a newline in range");
            FUZZ_CHECK(line_len == 777777 && consumed == 888888, "TOO_LONG wrote outputs");
            skipping = 1;
            off += scan;
            if (scan == 0)
                off = n; /* max_line 0: nothing can ever fit */
            break;
        default:
            FUZZ_CHECK(0, "unknown status %d", (int)st);
        }
    }
    /* also split the whole input as one line (no newline needed), to reach long token lists */
    check_split(buf, n, max_tok);
    return 0;
}
