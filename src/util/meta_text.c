/* SPDX-License-Identifier: BSD-3-Clause */
/* meta_text: see meta_text.h. */
#include "meta_text.h"

#include <stdlib.h>
#include <string.h>

const char *meta_find(const char *m, size_t len, const char *key)
{
    size_t kl = strlen(key);
    const char *end = m + len;
    for (const char *p = m; p + kl + 2 <= end; p++) {
        if (*p != '"' || memcmp(p + 1, key, kl) != 0 || p[kl + 1] != '"')
            continue;
        const char *q = p + kl + 2;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q < end && *q == ':') {
            q++;
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            return q;
        }
    }
    return NULL;
}

double meta_number(const char *p, const char *end)
{
    char b[40];
    size_t n = 0;
    while (p < end && n < sizeof b - 1 && *p != '\0' && strchr("0123456789.eE+-", *p) != NULL)
        b[n++] = *p++;
    b[n] = '\0';
    return n ? strtod(b, NULL) : 0;
}
