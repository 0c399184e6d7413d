/* SPDX-License-Identifier: BSD-3-Clause */
/* schedule: parsing a schedule and computing its firings (see schedule.h). */
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int schedule_parse_duration(const char *s, size_t len, int64_t *out)
{
    static const struct {
        char unit;
        int64_t secs;
    } units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
    if (len == 0 || len > 32)
        return -1;
    int64_t total = 0;
    size_t i = 0;
    size_t next_unit = 0; /* units must come in decreasing order, each at most once */
    while (i < len) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        int64_t v = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (s[i++] - '0');
            if (v > SCHEDULE_EVERY_MAX)
                return -1;
        }
        int64_t mult = 1;
        if (i < len) {
            size_t u = next_unit;
            while (u < sizeof units / sizeof units[0] && units[u].unit != s[i])
                u++;
            if (u == sizeof units / sizeof units[0])
                return -1;
            mult = units[u].secs;
            next_unit = u + 1;
            i++;
        } else if (next_unit > 0) {
            return -1; /* "1h30": a number without its unit after others */
        }
        total += v * mult;
        if (total > SCHEDULE_EVERY_MAX)
            return -1;
    }
    if (total < 1)
        return -1;
    *out = total;
    return 0;
}

/* word returns the length of the word at text[*i] (up to a space) and skips spaces after it. */
static size_t word(const char *text, size_t len, size_t *i, size_t *start)
{
    while (*i < len && text[*i] == ' ')
        (*i)++;
    *start = *i;
    while (*i < len && text[*i] != ' ')
        (*i)++;
    return *i - *start;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return -1;
}

int schedule_parse(const char *text, size_t len, struct schedule *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->prio = 1;
    out->next = -1;
    size_t i = 0, s, n;
    n = word(text, len, &i, &s);
    if (n == 0)
        return fail(err, errlen, "usage: NAME (CRON|@every DURATION) FUNC [OPTIONS] PAYLOAD");
    if (n > SCHEDULE_NAME_MAX)
        return fail(err, errlen, "schedule name longer than 64 bytes");
    for (size_t k = s; k < s + n; k++)
        if ((unsigned char)text[k] < 0x21 || (unsigned char)text[k] > 0x7e)
            return fail(err, errlen, "schedule name must be printable ASCII without spaces");
    size_t name_at = s, name_len = n;
    /* the spec: "@every D", one @macro word, or five fields */
    size_t spec_at, spec_end;
    n = word(text, len, &i, &s);
    if (n == 0)
        return fail(err, errlen, "missing schedule (five cron fields, @daily..., @every DURATION)");
    spec_at = s;
    char cerr[128];
    if (n == 6 && memcmp(text + s, "@every", 6) == 0) {
        n = word(text, len, &i, &s);
        if (n == 0 || schedule_parse_duration(text + s, n, &out->every) != 0)
            return fail(err, errlen, "@every wants a duration from 1s to 366d (90s, 5m, 1h30m, 2d)");
        spec_end = s + n;
    } else {
        if (text[s] != '@') {
            for (int f = 1; f < 5; f++)
                if (word(text, len, &i, &s) == 0)
                    return fail(err, errlen, "a cron schedule has five fields");
            n = i - s;
        }
        spec_end = s + n;
        char spec[CRON_EXPR_MAX + 1];
        if (spec_end - spec_at > CRON_EXPR_MAX)
            return fail(err, errlen, "schedule longer than 256 bytes");
        memcpy(spec, text + spec_at, spec_end - spec_at);
        spec[spec_end - spec_at] = '\0';
        if (cron_expr_parse(spec, &out->cron, cerr, sizeof cerr) != 0 ||
            cron_expr_never(&out->cron, cerr, sizeof cerr)) {
            snprintf(err, errlen, "bad schedule: %s", cerr);
            return -1;
        }
    }
    n = word(text, len, &i, &s);
    if (n == 0)
        return fail(err, errlen, "missing function name");
    if (out->every == 0 && text[spec_at] != '@' && cron_field_like(text + s, n)) {
        /* "0 0 12 * * ?" (seconds first, Quartz) or a year after the five fields */
        snprintf(err, errlen, "a cron schedule has five fields (minute hour day-of-month month "
                 "weekday): '%.*s' after them is a sixth field, not a function name",
                 (int)(n < 32 ? n : 32), text + s);
        return -1;
    }
    size_t func_at = s, func_len = n;
    const char *unique = NULL;
    size_t unique_len = 0;
    for (;;) {
        size_t save = i;
        n = word(text, len, &i, &s);
        if (n < 2 || text[s] != '-' || text[s + 1] != '-') {
            i = save;
            break;
        }
        if (n == 2)
            break; /* "--": the payload follows */
        if (n == 10 && memcmp(text + s, "--priority", 10) == 0) {
            n = word(text, len, &i, &s);
            if (n == 4 && memcmp(text + s, "high", 4) == 0)
                out->prio = 0;
            else if (n == 6 && memcmp(text + s, "normal", 6) == 0)
                out->prio = 1;
            else if (n == 3 && memcmp(text + s, "low", 3) == 0)
                out->prio = 2;
            else
                return fail(err, errlen, "--priority wants high, normal or low");
        } else if (n == 8 && memcmp(text + s, "--unique", 8) == 0) {
            n = word(text, len, &i, &s);
            if (n == 0)
                return fail(err, errlen, "--unique wants a value");
            unique = text + s;
            unique_len = n;
        } else if (n == 9 && memcmp(text + s, "--nohaste", 9) == 0) {
            out->nohaste = 1;
        } else {
            snprintf(err, errlen, "unknown option '%.*s'", (int)n, text + s);
            return -1;
        }
    }
    /* the payload: everything after the one space that ends the last word */
    if (i < len && text[i] == ' ')
        i++;
    out->name = dup_n(text + name_at, name_len);
    out->spec = dup_n(text + spec_at, spec_end - spec_at);
    out->func = dup_n(text + func_at, func_len);
    out->unique = unique ? dup_n(unique, unique_len) : dup_n(text + name_at, name_len);
    out->payload_len = len - i;
    out->payload = dup_n(text + i, len - i);
    if (!out->name || !out->spec || !out->func || !out->unique || !out->payload) {
        schedule_free(out);
        return fail(err, errlen, "out of memory");
    }
    return 0;
}

void schedule_free(struct schedule *s)
{
    free(s->name);
    free(s->spec);
    free(s->func);
    free(s->unique);
    free(s->payload);
    s->name = s->spec = s->func = s->unique = s->payload = NULL;
}

int64_t schedule_next(const struct schedule *s, int64_t after)
{
    if (s->every == 0)
        return cron_expr_next(&s->cron, after);
    if (after < s->anchor)
        return s->anchor;
    return s->anchor + ((after - s->anchor) / s->every + 1) * s->every;
}

void schedule_start(struct schedule *s, int64_t now)
{
    s->anchor = now;
    s->next = s->every > 0 && !s->nohaste ? now : schedule_next(s, now);
}

void schedule_fired(struct schedule *s, int64_t now)
{
    int64_t after = now > s->next ? now : s->next;
    s->next = schedule_next(s, after);
}

int schedule_resume(struct schedule *s, int64_t now, enum schedule_catchup c)
{
    if (s->next < 0 || s->next > now)
        return 0;
    int missed = s->next < now; /* due exactly now is not missed: it fires */
    s->next = schedule_next(s, now);
    return !missed || c == SCHEDULE_ONCE;
}
