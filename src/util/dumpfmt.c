/* SPDX-License-Identifier: BSD-3-Clause */
/* dumpfmt: the dump file's JSON lines (see dumpfmt.h). Written by hand (a 1 MB payload is one
 * base64 pass into the buffer), read with jansson. */
#define _POSIX_C_SOURCE 200809L /* getline, also under -std=c11 (spuradmin) */
#include "dumpfmt.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ base64 */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t dump_b64_len(size_t n) { return (n + 2) / 3 * 4; }

void dump_b64_encode(const void *in, size_t n, char *out)
{
    const unsigned char *s = in;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *out++ = b64[v >> 18];
        *out++ = b64[(v >> 12) & 63];
        *out++ = b64[(v >> 6) & 63];
        *out++ = b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *out++ = b64[v >> 18];
        *out++ = b64[(v >> 12) & 63];
        *out++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        *out++ = '=';
    }
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

long dump_b64_decode(const char *in, size_t n, void *outp)
{
    unsigned char *out = outp;
    if (n % 4 != 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int pad = 0;
        if (last && in[i + 3] == '=')
            pad = in[i + 2] == '=' ? 2 : 1;
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = b64_val((unsigned char)in[i + k])) < 0)
                return -1;
        for (int k = 4 - pad; k < 4; k++)
            v[k] = 0;
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
                     (uint32_t)v[3];
        /* canonical: the bits padding drops must be zero */
        if ((pad == 1 && (w & 0xff) != 0) || (pad == 2 && (w & 0xffff) != 0))
            return -1;
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
    }
    return (long)o;
}

/* ------------------------------------------------------------ writing */

/* utf8_ok reports whether s[0..n) is valid UTF-8 without NUL (so a JSON string keeps it). */
static int utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i <= k)
            return 0;
        for (size_t m = 1; m <= k; m++) {
            if ((p[i + m] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + m] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

static int put(struct buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

/* put_str appends s[0..n) as a JSON string (quotes included); s is valid UTF-8. */
static int put_str(struct buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n * 6 + 2) != 0)
        return -1;
    char *o = buf_tail(b), *o0 = o;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            memcpy(o, "\\u00", 4);
            o[4] = hex[c >> 4];
            o[5] = hex[c & 15];
            o += 6;
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    buf_commit(b, (size_t)(o - o0));
    return 0;
}

/* put_b64 appends "…" holding s[0..n) in base64. */
static int put_b64(struct buf *b, const void *s, size_t n)
{
    size_t m = dump_b64_len(n);
    if (buf_reserve(b, m + 2) != 0)
        return -1;
    char *o = buf_tail(b);
    o[0] = '"';
    dump_b64_encode(s, n, o + 1);
    o[m + 1] = '"';
    buf_commit(b, m + 2);
    return 0;
}

/* put_bytes appends ,"name":"text" or ,"name_b64":"base64" for the bytes s[0..n). */
static int put_bytes(struct buf *b, const char *name, const char *s, size_t n)
{
    char key[40];
    if (utf8_ok(s, n)) {
        snprintf(key, sizeof key, ",\"%s\":", name);
        return put(b, key) || put_str(b, s, n);
    }
    snprintf(key, sizeof key, ",\"%s_b64\":", name);
    return put(b, key) || put_b64(b, s, n);
}

int dump_write_header(struct buf *b, int64_t created, const char *server)
{
    char h[96];
    snprintf(h, sizeof h, "{\"spur_dump\":%d,\"created\":%" PRId64 ",\"server\":", DUMP_VERSION,
             created);
    if (server == NULL)
        server = "";
    return put(b, h) || put_str(b, server, utf8_ok(server, strlen(server)) ? strlen(server) : 0) ||
           put(b, "}\n");
}

static const char *const prio_names[] = {"high", "normal", "low"};

size_t dump_job_line_max(const struct dump_job *j)
{
    return 200 + 6 * (j->func_len + j->unique_len + j->reducer_len) + dump_b64_len(j->data_len) +
           j->meta_len;
}

int dump_write_job(struct buf *b, const struct dump_job *j)
{
    char h[160];
    int prio = j->prio >= 0 && j->prio <= 2 ? j->prio : 1;
    snprintf(h, sizeof h, "{\"type\":\"job\",\"id\":%" PRIu64, j->id);
    if (buf_reserve(b, dump_job_line_max(j)) != 0 || put(b, h) ||
        put_bytes(b, "func", j->func, j->func_len) ||
        put_bytes(b, "unique", j->unique, j->unique_len) ||
        put_bytes(b, "reducer", j->reducer, j->reducer_len))
        return -1;
    snprintf(h, sizeof h, ",\"priority\":\"%s\",\"when\":%" PRId64 ",\"payload_b64\":",
             prio_names[prio], j->when);
    if (put(b, h) || put_b64(b, j->data, j->data_len))
        return -1;
    if (j->meta_len > 0 && (put(b, ",\"meta\":") || buf_append(b, j->meta, j->meta_len) != 0))
        return -1;
    return put(b, "}\n");
}

int dump_write_record(struct buf *b, const struct dump_record *r)
{
    char h[64];
    snprintf(h, sizeof h, "{\"type\":\"record\",\"kind\":%d", r->kind);
    if (put(b, h) || put_bytes(b, "key", r->key, r->key_len) || put(b, ",\"value_b64\":") ||
        put_b64(b, r->value, r->value_len))
        return -1;
    return put(b, "}\n");
}

int dump_write_end(struct buf *b, uint64_t jobs, uint64_t records)
{
    char h[96];
    snprintf(h, sizeof h, "{\"type\":\"end\",\"jobs\":%" PRIu64 ",\"records\":%" PRIu64 "}\n",
             jobs, records);
    return put(b, h);
}

/* ------------------------------------------------------------ parsing */

/* struct field is one bytes field being parsed: where its decoded bytes go in mem. */
struct field {
    const char *text; /* JSON string value (plain) or base64 text */
    size_t len;
    int is_b64;
    size_t off, n; /* decoded place in mem */
};

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return -1;
}

/* get_bytes finds name or name_b64 in o (required: one of them must be there). Returns 0, 1 when
 * absent and not required, -1 on error. */
static int get_bytes(json_t *o, const char *name, int required, struct field *f, char *err,
                     size_t errlen)
{
    char k[40];
    snprintf(k, sizeof k, "%s_b64", name);
    json_t *plain = json_object_get(o, name), *enc = json_object_get(o, k);
    memset(f, 0, sizeof *f);
    if (plain != NULL && enc != NULL)
        return fail(err, errlen, "both a field and its _b64 twin");
    json_t *v = plain ? plain : enc;
    if (v == NULL) {
        if (required) {
            snprintf(err, errlen, "missing %s", name);
            return -1;
        }
        f->text = "";
        return 1;
    }
    if (!json_is_string(v)) {
        snprintf(err, errlen, "%s is not a string", name);
        return -1;
    }
    f->text = json_string_value(v);
    f->len = json_string_length(v);
    f->is_b64 = enc != NULL;
    f->n = f->is_b64 ? f->len / 4 * 3 : f->len;
    return 0;
}

/* decode_into copies or decodes f into mem at *at. */
static int decode_into(struct field *f, char *mem, size_t *at, const char *name, char *err,
                       size_t errlen)
{
    f->off = *at;
    if (f->is_b64) {
        long n = dump_b64_decode(f->text, f->len, mem + *at);
        if (n < 0) {
            snprintf(err, errlen, "%s is not base64", name);
            return -1;
        }
        f->n = (size_t)n;
    } else {
        memcpy(mem + *at, f->text, f->len);
    }
    *at += f->n;
    return 0;
}

static int get_uint(json_t *o, const char *name, uint64_t *v, int required, char *err,
                    size_t errlen)
{
    json_t *x = json_object_get(o, name);
    if (x == NULL) {
        *v = 0;
        if (!required)
            return 0;
        snprintf(err, errlen, "missing %s", name);
        return -1;
    }
    if (!json_is_integer(x) || json_integer_value(x) < 0) {
        snprintf(err, errlen, "%s is not a non-negative integer", name);
        return -1;
    }
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

static int parse_job(json_t *o, struct dump_line *out, char *err, size_t errlen)
{
    struct dump_job *j = &out->job;
    uint64_t id, when;
    if (get_uint(o, "id", &id, 1, err, errlen) || get_uint(o, "when", &when, 0, err, errlen))
        return -1;
    if (when > INT64_MAX)
        return fail(err, errlen, "when out of range");
    j->id = id;
    j->when = (int64_t)when;
    json_t *p = json_object_get(o, "priority");
    j->prio = 1;
    if (p != NULL) {
        const char *s = json_is_string(p) ? json_string_value(p) : "";
        for (j->prio = 0; j->prio < 3 && strcmp(s, prio_names[j->prio]) != 0; j->prio++)
            ;
        if (j->prio == 3)
            return fail(err, errlen, "priority is not high, normal or low");
    }
    struct field func, uniq, red, data;
    if (get_bytes(o, "func", 1, &func, err, errlen) < 0 ||
        get_bytes(o, "unique", 0, &uniq, err, errlen) < 0 ||
        get_bytes(o, "reducer", 0, &red, err, errlen) < 0)
        return -1;
    json_t *d = json_object_get(o, "payload_b64");
    if (d == NULL || !json_is_string(d))
        return fail(err, errlen, "missing payload_b64");
    data.text = json_string_value(d);
    data.len = json_string_length(d);
    data.is_b64 = 1;
    data.n = data.len / 4 * 3;
    char *meta = NULL;
    size_t meta_len = 0;
    json_t *m = json_object_get(o, "meta");
    if (m != NULL) {
        if (!json_is_object(m))
            return fail(err, errlen, "meta is not an object");
        if (json_object_size(m) > 0) {
            meta = json_dumps(m, JSON_COMPACT);
            if (meta == NULL)
                return fail(err, errlen, "out of memory");
            meta_len = strlen(meta);
            if (meta_len > DUMP_META_MAX) {
                free(meta);
                return fail(err, errlen, "meta too long");
            }
        }
    }
    size_t total = func.n + uniq.n + red.n + data.n + meta_len + 1, at = 0;
    out->mem = malloc(total);
    if (out->mem == NULL) {
        free(meta);
        return fail(err, errlen, "out of memory");
    }
    if (decode_into(&func, out->mem, &at, "func", err, errlen) ||
        decode_into(&uniq, out->mem, &at, "unique", err, errlen) ||
        decode_into(&red, out->mem, &at, "reducer", err, errlen) ||
        decode_into(&data, out->mem, &at, "payload", err, errlen)) {
        free(meta);
        free(out->mem);
        out->mem = NULL;
        return -1;
    }
    if (meta_len > 0)
        memcpy(out->mem + at, meta, meta_len);
    free(meta);
    j->func = out->mem + func.off;
    j->func_len = func.n;
    j->unique = out->mem + uniq.off;
    j->unique_len = uniq.n;
    j->reducer = out->mem + red.off;
    j->reducer_len = red.n;
    j->data = out->mem + data.off;
    j->data_len = data.n;
    j->meta = out->mem + at;
    j->meta_len = meta_len;
    if (j->func_len == 0) {
        free(out->mem);
        out->mem = NULL;
        return fail(err, errlen, "empty func");
    }
    return 0;
}

static int parse_record(json_t *o, struct dump_line *out, char *err, size_t errlen)
{
    uint64_t kind;
    if (get_uint(o, "kind", &kind, 1, err, errlen))
        return -1;
    if (kind < 1 || kind >= DUMP_KINDS)
        return fail(err, errlen, "kind out of range");
    struct field key, val;
    if (get_bytes(o, "key", 1, &key, err, errlen) < 0)
        return -1;
    json_t *v = json_object_get(o, "value_b64");
    if (v == NULL || !json_is_string(v))
        return fail(err, errlen, "missing value_b64");
    val.text = json_string_value(v);
    val.len = json_string_length(v);
    val.is_b64 = 1;
    val.n = val.len / 4 * 3;
    size_t at = 0;
    out->mem = malloc(key.n + val.n + 1);
    if (out->mem == NULL)
        return fail(err, errlen, "out of memory");
    if (decode_into(&key, out->mem, &at, "key", err, errlen) ||
        decode_into(&val, out->mem, &at, "value", err, errlen)) {
        free(out->mem);
        out->mem = NULL;
        return -1;
    }
    out->rec.kind = (int)kind;
    out->rec.key = out->mem + key.off;
    out->rec.key_len = key.n;
    out->rec.value = out->mem + val.off;
    out->rec.value_len = val.n;
    if (key.n == 0 || key.n > DUMP_KEY_MAX || val.n > DUMP_META_MAX) {
        free(out->mem);
        out->mem = NULL;
        return fail(err, errlen, "record key or value too long");
    }
    return 0;
}

int dump_parse(const char *line, size_t len, struct dump_line *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (o == NULL) {
        snprintf(err, errlen, "not JSON: %s", je.text);
        return -1;
    }
    int rc = -1;
    json_t *t = json_object_get(o, "type");
    json_t *h = json_object_get(o, "spur_dump");
    if (!json_is_object(o)) {
        fail(err, errlen, "not a JSON object");
    } else if (h != NULL) {
        if (!json_is_integer(h) || json_integer_value(h) != DUMP_VERSION) {
            fail(err, errlen, "not a version 1 dump");
        } else {
            out->type = DUMP_HEADER;
            out->version = DUMP_VERSION;
            rc = 0;
        }
    } else if (!json_is_string(t)) {
        fail(err, errlen, "no type");
    } else if (strcmp(json_string_value(t), "job") == 0) {
        out->type = DUMP_JOB;
        rc = parse_job(o, out, err, errlen);
    } else if (strcmp(json_string_value(t), "record") == 0) {
        out->type = DUMP_RECORD;
        rc = parse_record(o, out, err, errlen);
    } else if (strcmp(json_string_value(t), "end") == 0) {
        out->type = DUMP_END;
        rc = get_uint(o, "jobs", &out->njobs, 1, err, errlen) ||
                     get_uint(o, "records", &out->nrecords, 1, err, errlen)
                 ? -1
                 : 0;
    } else {
        fail(err, errlen, "unknown type");
    }
    json_decref(o);
    if (rc != 0) {
        free(out->mem);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

void dump_line_free(struct dump_line *l)
{
    free(l->mem);
    l->mem = NULL;
}

int dump_verify_file(FILE *f, char *err, size_t errlen)
{
    char *line = NULL, why[256];
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0, jobs = 0, records = 0;
    int rc = -1, ended = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        struct dump_line l;
        lineno++;
        if (ended) {
            snprintf(err, errlen, "line %" PRIu64 ": a line after the end line", lineno);
            goto out;
        }
        if (dump_parse(line, (size_t)n, &l, why, sizeof why) != 0) {
            snprintf(err, errlen, "line %" PRIu64 ": %s", lineno, why);
            goto out;
        }
        int header = l.type == DUMP_HEADER;
        jobs += l.type == DUMP_JOB;
        records += l.type == DUMP_RECORD;
        if (l.type == DUMP_END) {
            ended = 1;
            if (l.njobs != jobs || l.nrecords != records) {
                snprintf(err, errlen, "the end line counts %" PRIu64 " jobs and %" PRIu64
                         " records, the file holds %" PRIu64 " and %" PRIu64, l.njobs,
                         l.nrecords, jobs, records);
                dump_line_free(&l);
                goto out;
            }
        }
        dump_line_free(&l);
        if ((lineno == 1) != header) {
            snprintf(err, errlen, "line %" PRIu64 ": %s", lineno,
                     lineno == 1 ? "not a spur dump (no header line)" : "a second header");
            goto out;
        }
    }
    if (!ended)
        snprintf(err, errlen, "cut short (no end line after %" PRIu64 " lines)", lineno);
    else
        rc = 0;
out:
    free(line);
    return rc;
}

/* ------------------------------------------------------------ meta */

static int find_id(const uint64_t *olds, size_t n, uint64_t id, size_t *at)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (olds[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo < n && olds[lo] == id;
}

int dump_meta_renumber(const char *meta, size_t len, const uint64_t *olds, const uint64_t *news,
                       size_t n, char **out, size_t *outlen)
{
    json_t *o = json_loadb(meta, len, JSON_REJECT_DUPLICATES, NULL);
    if (o == NULL || !json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    int rc = 0;
    json_t *a = json_object_get(o, "after");
    if (a != NULL) {
        json_t *na = json_array();
        size_t i;
        json_t *v;
        rc = json_is_array(a) && na != NULL ? 0 : -1;
        json_array_foreach(a, i, v) {
            size_t at;
            if (rc != 0 || !json_is_integer(v) || json_integer_value(v) < 0) {
                rc = -1;
                break;
            }
            if (find_id(olds, n, (uint64_t)json_integer_value(v), &at) &&
                json_array_append_new(na, json_integer((json_int_t)news[at])) != 0)
                rc = -1;
        }
        if (rc == 0 && json_object_set_new(o, "after", na) != 0)
            rc = -1;
        else if (rc != 0)
            json_decref(na);
    }
    char *s = rc == 0 ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (s == NULL)
        return -1;
    *out = s;
    *outlen = strlen(s);
    return 0;
}

int dump_idmap_add(struct dump_idmap *m, uint64_t old, uint64_t nw)
{
    if (m->n > 0 && old <= m->olds[m->n - 1])
        return 0; /* out of order: not renumbered */
    size_t cap = m->cap;
    if (array_grow((void **)&m->olds, &cap, m->n + 1, sizeof *m->olds, 256) != 0)
        return -1;
    size_t cap2 = m->cap;
    if (array_grow((void **)&m->news, &cap2, m->n + 1, sizeof *m->news, 256) != 0)
        return -1;
    m->cap = cap < cap2 ? cap : cap2;
    m->olds[m->n] = old;
    m->news[m->n++] = nw;
    return 0;
}

void dump_idmap_free(struct dump_idmap *m)
{
    free(m->olds);
    free(m->news);
    *m = (struct dump_idmap){0};
}
