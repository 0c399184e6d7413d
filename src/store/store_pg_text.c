/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg_text: see store_pg_text.h. */
#include "store_pg_text.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int store_pg_valid_ident(const char *name)
{
    size_t n = name != NULL ? strlen(name) : 0;
    if (n == 0 || n > STORE_PG_IDENT_MAX || isdigit((unsigned char)name[0]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isascii((unsigned char)name[i]) && (isalnum((unsigned char)name[i]) || name[i] == '_')))
            return 0;
    return 1;
}

char *store_pg_redact(const char *conninfo, char *out, size_t len)
{
    size_t o = 0;
    const char *p = conninfo;
    if (len == 0)
        return out;
    if (strncmp(p, "postgres://", 11) == 0 || strncmp(p, "postgresql://", 13) == 0) {
        /* URI: scheme://[user[:password]@]host...[?...password=...&...] */
        const char *auth = strstr(p, "://") + 3;
        const char *at = strchr(auth, '@'), *slash = strchr(auth, '/');
        if (at != NULL && slash != NULL && slash < at)
            at = NULL; /* an @ in the path or query, not in the authority */
        for (; *p && o + 1 < len; p++) {
            int hide = 0;
            if (at != NULL && p > auth && p < at && *p == ':' && memchr(auth, ':', (size_t)(p - auth)) == NULL) {
                out[o++] = ':';
                p = at - 1; /* skip the password */
                hide = 1;
            } else if ((*p == '?' || *p == '&') && strncmp(p + 1, "password=", 9) == 0) {
                for (size_t i = 0; i < 10 && o + 1 < len; i++)
                    out[o++] = p[i];
                p += 10;
                while (*p && *p != '&')
                    p++;
                p--;
                hide = 1;
            } else {
                out[o++] = *p;
            }
            for (size_t i = 0; hide && i < 3 && o + 1 < len; i++)
                out[o++] = '*';
        }
        out[o] = '\0';
        return out;
    }
    /* keyword = value pairs, values possibly single-quoted with backslash escapes */
    while (*p && o + 1 < len) {
        while (isspace((unsigned char)*p))
            p++;
        const char *k = p;
        while (*p && *p != '=' && !isspace((unsigned char)*p))
            p++;
        size_t klen = (size_t)(p - k);
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '=')
            p++;
        while (isspace((unsigned char)*p))
            p++;
        const char *v = p;
        if (*p == '\'') {
            p++;
            while (*p && *p != '\'') {
                if (*p == '\\' && p[1])
                    p++;
                p++;
            }
            if (*p == '\'')
                p++;
        } else {
            while (*p && !isspace((unsigned char)*p))
                p++;
        }
        if (klen == 0)
            break;
        int secret = klen == 8 && strncmp(k, "password", 8) == 0;
        int w = snprintf(out + o, len - o, "%s%.*s=%.*s", o ? " " : "", (int)klen, k,
                         secret ? 3 : (int)(p - v), secret ? "***" : v);
        o += w > 0 ? (size_t)w : 0;
        if (o >= len)
            o = len - 1;
    }
    out[o] = '\0';
    return out;
}

int store_pg_valid_server_id(const char *id)
{
    size_t n = 0;
    if (id == NULL)
        return 0;
    for (const char *p = id; *p; p++, n++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 strchr("._:@-", ch) != NULL;
        if (!ok || n >= STORE_PG_SERVER_ID_MAX)
            return 0;
    }
    return n > 0;
}
