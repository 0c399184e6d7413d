/* SPDX-License-Identifier: BSD-3-Clause */
/* opt: declarative option tables: generic parsing, bounds, error texts and --help. */
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPT_VAL_BASE 1000 /* getopt's val of row i of the flattened list is OPT_VAL_BASE + i */
#define OPT_HELP_COL 29   /* the column where --help texts start */

int opt_errf(struct opt_ctx *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, x->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int opt_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int opt_parse_size(const char *s, unsigned long long lo, unsigned long long hi,
                   unsigned long long *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1ull << 10, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1ull << 20, end++;
    else if (*end == 'g' || *end == 'G')
        mul = 1ull << 30, end++;
    if (*end != '\0' || v > hi / mul || v * mul < lo || v * mul > hi)
        return -1;
    *out = v * mul;
    return 0;
}

int opt_parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

void opt_set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = strdup(src);
}

/* field returns the address of o's field in cfg. */
static void *field(void *cfg, const struct opt *o)
{
    return (char *)cfg + o->off;
}

/* put stores the number v in o's field (a DOUBLE field gets v / scale). */
static void put(void *cfg, const struct opt *o, double v, long long iv)
{
    void *f = field(cfg, o);
    switch (o->field) {
    case OPT_F_NONE: break;
    case OPT_F_INT: *(int *)f = (int)iv; break;
    case OPT_F_LONG: *(long *)f = (long)iv; break;
    case OPT_F_UINT: *(unsigned *)f = (unsigned)iv; break;
    case OPT_F_U32: *(uint32_t *)f = (uint32_t)iv; break;
    case OPT_F_SIZE: *(size_t *)f = (size_t)iv; break;
    case OPT_F_DOUBLE: *(double *)f = o->scale != 0 ? v / o->scale : v; break;
    }
}

/* bad reports o's error for the value arg; returns -1. */
static int bad(struct opt_ctx *x, const struct opt *o, const char *arg)
{
    if (o->err == NULL)
        return opt_errf(x, "invalid --%s '%s'", o->name, arg);
    return opt_errf(x, o->err, arg);
}

/* set_list appends arg to o's array. */
static int set_list(struct opt_ctx *x, const struct opt *o, const char *arg)
{
    int *n = (int *)(void *)((char *)x->cfg + o->count_off);
    if (*n >= o->hi)
        return opt_errf(x, o->err, (int)o->hi);
    char **a = field(x->cfg, o);
    a[(*n)++] = strdup(arg);
    return 0;
}

/* set_enum sets o's field to the value of the choice named arg. */
static int set_enum(struct opt_ctx *x, const struct opt *o, const char *arg)
{
    for (const struct opt_choice *ch = o->choices; ch->name != NULL; ch++)
        if (strcmp(arg, ch->name) == 0) {
            *(int *)field(x->cfg, o) = ch->value;
            return 0;
        }
    return bad(x, o, arg);
}

/* set applies row o with value arg (NULL when it takes none). Returns as a custom row's set. */
static int set(struct opt_ctx *x, const struct opt *o, const char *arg)
{
    long v;
    unsigned long long sz;
    double d;
    switch (o->parse) {
    case OPT_P_FLAG:
        if (o->field == OPT_F_INT)
            *(int *)field(x->cfg, o) = 1;
        return 0;
    case OPT_P_LONG:
        if (opt_parse_long(arg, (long)o->lo, (long)o->hi, &v) != 0 ||
            (v == 0 && (o->flags & OPT_NOT_ZERO)))
            return bad(x, o, arg);
        put(x->cfg, o, (double)v, v);
        return 0;
    case OPT_P_SIZE:
        if (opt_parse_size(arg, (unsigned long long)o->lo, (unsigned long long)o->hi, &sz) != 0)
            return bad(x, o, arg);
        put(x->cfg, o, (double)sz, (long long)sz);
        return 0;
    case OPT_P_SECONDS:
        if (opt_parse_seconds(arg, &d) != 0 || d > (o->dmax != 0 ? o->dmax : 1e9) ||
            (d < o->dmin && !(d == 0 && (o->flags & OPT_OR_ZERO))))
            return bad(x, o, arg);
        put(x->cfg, o, d, 0);
        return 0;
    case OPT_P_STRING: opt_set_str(field(x->cfg, o), arg); return 0;
    case OPT_P_LIST: return set_list(x, o, arg);
    case OPT_P_ENUM: return set_enum(x, o, arg);
    case OPT_P_CUSTOM: return o->set(x, arg);
    case OPT_P_USAGE: break;
    }
    return opt_errf(x, "unknown option '--%s'", o->name);
}

/* takes_arg reports whether o is written with a value. */
static int takes_arg(const struct opt *o)
{
    if (o->parse == OPT_P_FLAG || o->parse == OPT_P_CUSTOM)
        return o->has_arg;
    return 1;
}

/* struct flat is every option row of a parse, in one array getopt_long can use. */
struct flat {
    const struct opt *row[OPT_MAX_ROWS];     /* row i answers getopt's OPT_VAL_BASE + i */
    struct option lo[OPT_MAX_ROWS + 1];      /* getopt_long's table, {0} last */
    char so[2 + 3 * OPT_MAX_ROWS + 1];       /* getopt's short options: "-:" and "b:" ... */
    int n;                                   /* rows */
};

/* flatten fills f from x->tables. Returns 0, or -1 when there are more than OPT_MAX_ROWS. */
static int flatten(struct opt_ctx *x, struct flat *f)
{
    size_t sl = 0;
    f->so[sl++] = '-'; /* a word that is not an option comes back as 1, in order (@FILE) */
    f->so[sl++] = ':';
    f->n = 0;
    for (const struct opt_table *const *t = x->tables; *t != NULL; t++)
        for (size_t i = 0; i < (*t)->n; i++) {
            const struct opt *o = &(*t)->rows[i];
            if (o->parse == OPT_P_USAGE)
                continue;
            if (f->n == OPT_MAX_ROWS)
                return opt_errf(x, "too many options (at most %d)", OPT_MAX_ROWS);
            int has = takes_arg(o);
            f->row[f->n] = o;
            f->lo[f->n] = (struct option){o->name, has ? required_argument : no_argument, NULL,
                                          OPT_VAL_BASE + f->n};
            if (o->short_name != 0) {
                f->so[sl++] = o->short_name;
                if (has)
                    f->so[sl++] = ':';
            }
            f->n++;
        }
    f->lo[f->n] = (struct option){NULL, 0, NULL, 0};
    f->so[sl] = '\0';
    return 0;
}

/* lookup returns the row getopt answered opt for, or NULL. */
static const struct opt *lookup(const struct flat *f, int opt)
{
    if (opt >= OPT_VAL_BASE && opt < OPT_VAL_BASE + f->n)
        return f->row[opt - OPT_VAL_BASE];
    for (int i = 0; i < f->n; i++)
        if (opt != 0 && f->row[i]->short_name == opt)
            return f->row[i];
    return NULL;
}

int opt_apply(struct opt_ctx *x, int argc, char **argv)
{
    struct flat *f = malloc(sizeof *f);
    if (f == NULL)
        return opt_errf(x, "out of memory");
    int rc = flatten(x, f);
    int opt;
    optind = 0; /* GNU getopt: reinitialise */
    opterr = 0;
    while (rc == 0 && (opt = getopt_long(argc, argv, f->so, f->lo, NULL)) != -1) {
        const struct opt *o = lookup(f, opt);
        if (opt == 1)
            rc = x->word(x, optarg);
        else if (opt == ':')
            rc = opt_errf(x, "option '%s' needs a value", argv[optind - 1]);
        else if (o == NULL)
            rc = opt_errf(x, "unknown option '%s'", argv[optind - 1]);
        else
            rc = set(x, o, takes_arg(o) ? optarg : NULL);
    }
    if (rc == 0 && optind < argc)
        rc = opt_errf(x, "unexpected argument '%s'", argv[optind]);
    free(f);
    return rc;
}

/* by_place orders --help entries by section, then rank. */
static int by_place(const void *a, const void *b)
{
    const struct opt *x = *(const struct opt *const *)a, *y = *(const struct opt *const *)b;
    if (x->section != y->section)
        return x->section < y->section ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* usage_entry writes one row's --help entry. */
static void usage_entry(const struct opt *o, FILE *out)
{
    char left[128];
    int n;
    if (o->short_name != 0)
        n = snprintf(left, sizeof left, "  -%c, --%s%s%s", o->short_name, o->name,
                     o->arg ? "=" : "", o->arg ? o->arg : "");
    else
        n = snprintf(left, sizeof left, "      --%s%s%s", o->name, o->arg ? "=" : "",
                     o->arg ? o->arg : "");
    fprintf(out, "%s%*s", left, n < OPT_HELP_COL ? OPT_HELP_COL - n : 2, "");
    for (const char *p = o->help; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(out, "%.*s\n", (int)len, p);
        if (nl == NULL)
            break;
        p = nl + 1;
        fprintf(out, "%*s", OPT_HELP_COL, "");
    }
}

void opt_usage(const struct opt_table *const *tables, const char *const *headers, FILE *out)
{
    const struct opt *rows[OPT_MAX_ROWS];
    size_t n = 0;
    for (const struct opt_table *const *t = tables; *t != NULL; t++)
        for (size_t i = 0; i < (*t)->n && n < OPT_MAX_ROWS; i++)
            if ((*t)->rows[i].help != NULL)
                rows[n++] = &(*t)->rows[i];
    qsort(rows, n, sizeof rows[0], by_place);
    size_t r = 0;
    for (int s = 0; headers[s] != NULL; s++) {
        fputs(headers[s], out);
        for (; r < n && rows[r]->section == s; r++)
            usage_entry(rows[r], out);
    }
}

void opt_defaults(const struct opt_table *t, void *cfg)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct opt *o = &t->rows[i];
        if (o->parse == OPT_P_LONG || o->parse == OPT_P_SIZE || o->parse == OPT_P_SECONDS) {
            if (o->field == OPT_F_DOUBLE)
                *(double *)field(cfg, o) = o->def; /* the stored value, not scaled */
            else
                put(cfg, o, o->def, (long long)o->def);
        }
    }
}
