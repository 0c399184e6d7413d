/* SPDX-License-Identifier: BSD-3-Clause */
/* flow_spec: the settings of flow control (flow.h) and their text, as --limit, the stored
 * records and a dump write them: "concurrency=N,rate=R/s,...". Pure: libc only, so the option
 * table (flow_opt.c) links it alone. */
#ifndef SPUR_FLOW_SPEC_H
#define SPUR_FLOW_SPEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOW_MAX_LIMIT 1000000  /* the largest concurrency, rate count or weight */

/* struct flow_rate is a rate limit: count jobs per unit seconds (1, 60 or 3600); count 0 =
 * none. */
struct flow_rate {
    uint32_t count; /* jobs per unit */
    uint32_t unit;  /* seconds: 1 (/s), 60 (/m) or 3600 (/h) */
};

/* struct flow_settings is what can be set for a function: the admin commands, --limit and a
 * stored record all fill one. */
struct flow_settings {
    uint32_t concurrency;      /* jobs running at once, 0 = no limit */
    struct flow_rate rate;     /* job starts per unit of time */
    uint32_t key_concurrency;  /* jobs of one key running at once, 0 = no limit */
    struct flow_rate key_rate; /* job starts of one key per unit of time */
    uint32_t weight;           /* share among a worker's functions, 1 = default */
    uint8_t paused;            /* nothing is handed out */
};

/* flow_defaults fills *s with the defaults (no limit, weight 1, not paused). */
void flow_defaults(struct flow_settings *s);

/* flow_parse_rate parses "R/s", "R/m" or "R/h" (R 1..FLOW_MAX_LIMIT) from s[0..len). Returns 0
 * or -1. */
int flow_parse_rate(const char *s, size_t len, struct flow_rate *r);

/* flow_parse_spec applies "k=v,k=v..." (concurrency=N, rate=R/s, key-concurrency=N,
 * key-rate=R/s, weight=W, paused=0|1; N 0 = none) from s[0..len) onto *out. Returns 0, or -1
 * with the reason in err. */
int flow_parse_spec(const char *s, size_t len, struct flow_settings *out, char *err,
                    size_t errlen);

/* flow_format_spec writes the non-default settings of s as flow_parse_spec reads them into out
 * (cap bytes, NUL-terminated; "" for none); returns the length. */
size_t flow_format_spec(const struct flow_settings *s, char *out, size_t cap);

/* flow_format_rate writes r as "R/s" ("-" for none) into out (cap bytes); returns out. */
const char *flow_format_rate(const struct flow_rate *r, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
