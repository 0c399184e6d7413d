/* SPDX-License-Identifier: BSD-3-Clause */
/* flow_spec: the text of flow control settings (flow_spec.h). Pure: libc only. */
#include "flow_spec.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void flow_defaults(struct flow_settings *s)
{
    memset(s, 0, sizeof *s);
    s->rate.unit = s->key_rate.unit = 1;
    s->weight = 1;
}

/* parse_u32 parses a decimal number 0..FLOW_MAX_LIMIT from s[0..len). Returns 0 or -1. */
static int parse_u32(const char *s, size_t len, uint32_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 7)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > FLOW_MAX_LIMIT)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int flow_parse_rate(const char *s, size_t len, struct flow_rate *r)
{
    if (len < 3 || s[len - 2] != '/')
        return -1;
    uint32_t unit;
    switch (s[len - 1]) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    default: return -1;
    }
    uint32_t n;
    if (parse_u32(s, len - 2, &n) != 0 || n == 0)
        return -1;
    r->count = n;
    r->unit = unit;
    return 0;
}

const char *flow_format_rate(const struct flow_rate *r, char *out, size_t cap)
{
    if (r->count == 0)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%u/%c", r->count, r->unit == 1 ? 's' : r->unit == 60 ? 'm' : 'h');
    return out;
}

/* spec_item applies one "key=value" of a spec onto out. Returns 0 or -1. */
static int spec_item(const char *k, size_t kl, const char *v, size_t vl,
                     struct flow_settings *out)
{
#define IS(name) (kl == sizeof name - 1 && memcmp(k, name, kl) == 0)
    struct flow_rate off = {0, 1};
    if (IS("concurrency"))
        return parse_u32(v, vl, &out->concurrency);
    if (IS("key-concurrency"))
        return parse_u32(v, vl, &out->key_concurrency);
    if (IS("rate") || IS("key-rate")) {
        struct flow_rate *r = IS("rate") ? &out->rate : &out->key_rate;
        if (vl == 1 && v[0] == '0') {
            *r = off;
            return 0;
        }
        return flow_parse_rate(v, vl, r);
    }
    if (IS("weight"))
        return parse_u32(v, vl, &out->weight) != 0 || out->weight == 0 ? -1 : 0;
    if (IS("paused")) {
        if (vl != 1 || (v[0] != '0' && v[0] != '1'))
            return -1;
        out->paused = (uint8_t)(v[0] == '1');
        return 0;
    }
#undef IS
    return -1;
}

int flow_parse_spec(const char *s, size_t len, struct flow_settings *out, char *err,
                    size_t errlen)
{
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && s[j] != ',')
            j++;
        const char *eq = memchr(s + i, '=', j - i);
        if (eq == NULL || spec_item(s + i, (size_t)(eq - (s + i)), eq + 1,
                                    (size_t)(s + j - eq - 1), out) != 0) {
            snprintf(err, errlen, "bad setting '%.*s' (concurrency=N, rate=R/s|m|h, "
                     "key-concurrency=N, key-rate=R/s|m|h, weight=W, paused=0|1; N and R at most "
                     "%d, 0 for none)", (int)(j - i > 60 ? 60 : j - i), s + i, FLOW_MAX_LIMIT);
            return -1;
        }
        i = j + 1;
    }
    return 0;
}

size_t flow_format_spec(const struct flow_settings *s, char *out, size_t cap)
{
    size_t n = 0;
    char r[32];
    out[0] = '\0';
#define ADD(...)                                                                              \
    do {                                                                                      \
        int k = snprintf(out + n, cap - n, "%s", n > 0 ? "," : "");                        \
        n += k > 0 && (size_t)k < cap - n ? (size_t)k : 0;                                  \
        k = snprintf(out + n, cap - n, __VA_ARGS__);                                          \
        n += k > 0 && (size_t)k < cap - n ? (size_t)k : 0;                                  \
    } while (0)
    if (s->concurrency)
        ADD("concurrency=%u", s->concurrency);
    if (s->rate.count)
        ADD("rate=%s", flow_format_rate(&s->rate, r, sizeof r));
    if (s->key_concurrency)
        ADD("key-concurrency=%u", s->key_concurrency);
    if (s->key_rate.count)
        ADD("key-rate=%s", flow_format_rate(&s->key_rate, r, sizeof r));
    if (s->weight != 1)
        ADD("weight=%u", s->weight);
    if (s->paused)
        ADD("paused=1");
#undef ADD
    return n;
}

