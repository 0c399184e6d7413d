/* SPDX-License-Identifier: BSD-3-Clause */
/* opt: declarative option tables. Each option is one row (name, type, field, bounds, default,
 * error text, help); opt_apply parses a command line (or one config-file line) against a list
 * of tables with getopt_long, and opt_usage writes the --help text from the same rows. The
 * tables are assembled by whoever knows every module (shell/options.c): config.c owns the
 * server's rows; the TLS transport, the HTTP front-end, the features and each store backend
 * own theirs, each in a *_opt.c of its layer. Pure: libc only. */
#ifndef SPUR_OPT_H
#define SPUR_OPT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPT_MAX_ROWS 256 /* rows in all the tables of one parse, at most */

/* enum opt_parse says how a row's value is read. */
enum opt_parse {
    OPT_P_FLAG = 0, /* no value: the int field (if any) is set to 1 */
    OPT_P_LONG,     /* a whole decimal number in [lo, hi] */
    OPT_P_SIZE,     /* a whole number in [lo, hi], with an optional k, M or G suffix */
    OPT_P_SECONDS,  /* a number >= 0 (at most 1e9) in [dmin, dmax] */
    OPT_P_STRING,   /* any text, copied into a char * field (the old value freed) */
    OPT_P_LIST,     /* any text, appended to a char *[hi] array; the int count is at count_off */
    OPT_P_ENUM,     /* one of choices' names (case matters); the int field gets its value */
    OPT_P_CUSTOM,   /* set parses it (options with real logic) */
    OPT_P_USAGE,    /* not an option: one more entry of --help (a second form of an option) */
};

/* enum opt_field is the C type of a row's field. */
enum opt_field {
    OPT_F_NONE = 0, /* none: the value is checked and dropped (accepted for compatibility) */
    OPT_F_INT,      /* int */
    OPT_F_LONG,     /* long */
    OPT_F_UINT,     /* unsigned */
    OPT_F_U32,      /* uint32_t */
    OPT_F_SIZE,     /* size_t */
    OPT_F_DOUBLE,   /* double (value / scale) */
};

#define OPT_NOT_ZERO 1u /* LONG: 0 is refused although within [lo, hi] */
#define OPT_OR_ZERO 2u  /* SECONDS: 0 is accepted although below dmin */

/* struct opt_choice is one value of an OPT_P_ENUM row. */
struct opt_choice {
    const char *name; /* as written on the command line */
    int value;        /* what the field gets */
};

struct opt_ctx;

/* struct opt is one option. Rows are static const tables; a field not named is 0. */
struct opt {
    const char *name;        /* the long name without "--" */
    char short_name;         /* the one-letter form, or 0 */
    enum opt_parse parse;    /* how its value is read */
    enum opt_field field;    /* the type of the field at off */
    size_t off;              /* offsetof the field in the configuration */
    size_t count_off;        /* OPT_P_LIST: offsetof its int count */
    long long lo, hi;        /* LONG, SIZE: the bounds; LIST: hi is the most entries */
    double dmin, dmax;       /* SECONDS: the bounds (dmax 0: 1e9) */
    double scale;            /* a DOUBLE field gets value / scale (0: 1) */
    double def;              /* the default of a numeric field (opt_defaults) */
    unsigned flags;          /* OPT_NOT_ZERO, OPT_OR_ZERO */
    const struct opt_choice *choices; /* OPT_P_ENUM: the values, ending with {NULL, 0} */
    /* OPT_P_CUSTOM: parses arg (NULL for an option without a value) into x->cfg; returns 0, 1
     * to stop the parse successfully (--help), or -1 with a message in x->err */
    int (*set)(struct opt_ctx *x, const char *arg);
    int has_arg;             /* OPT_P_CUSTOM and OPT_P_FLAG: 1 when it takes a value */
    const char *err;         /* the error, a printf format with one %s (the value); LIST: with
                                one %d (hi), said when full. NULL: "invalid --NAME '%s'" */
    const char *arg;         /* in --help: the value's name ("N", "FILE"), NULL for none */
    const char *help;        /* in --help: the text, lines separated by \n; NULL: not shown */
    int section;             /* in --help: the part (an index of opt_usage's headers) */
    int rank;                /* in --help: the place within the part, lowest first */
};

/* struct opt_table is one module's rows. */
struct opt_table {
    const struct opt *rows; /* the rows */
    size_t n;               /* how many */
};

/* struct opt_ctx is one parse: what a custom row may read and change. */
struct opt_ctx {
    void *cfg;                             /* the configuration the fields are in */
    const struct opt_table *const *tables; /* every table, NULL-terminated (for --help) */
    const char *const *headers;            /* opt_usage's section headers (for --help) */
    int in_file;                           /* 1: the words are one line of a config file */
    FILE *out;                             /* where --help and --version print */
    char *err;                             /* the error message buffer */
    size_t errlen;                         /* its size */
    void *user;                            /* the caller's own state (config.c: the files) */
    /* word handles a word that is not an option (argv order); returns as set */
    int (*word)(struct opt_ctx *x, const char *word);
};

/* opt_apply parses argv (argv[0] is skipped; argc words) against x->tables into x->cfg. Errors:
 * the row's error text, "option 'W' needs a value", "unknown option 'W'" (ambiguous
 * abbreviations too). Returns 0, 1 when a custom row stopped it (--help), or -1 with a
 * message in x->err. */
int opt_apply(struct opt_ctx *x, int argc, char **argv);

/* opt_usage writes the --help entries of every row of tables (NULL-terminated) to out, part by
 * part: headers[i] (NULL-terminated list) first, then the rows of section i by rank. An entry
 * is "  -S, --NAME=ARG" (or "      --NAME=ARG") padded to column 29 (two spaces when it reaches it),
 * then the help text, its further lines indented to column 29. */
void opt_usage(const struct opt_table *const *tables, const char *const *headers, FILE *out);

/* opt_defaults sets every numeric field of t's rows that has a field to the row's default. */
void opt_defaults(const struct opt_table *t, void *cfg);

/* opt_errf formats a message into x->err; returns -1. */
int opt_errf(struct opt_ctx *x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* opt_parse_long parses a whole decimal integer within [lo, hi]. Returns 0 or -1. */
int opt_parse_long(const char *s, long lo, long hi, long *out);

/* opt_parse_size parses a whole decimal size within [lo, hi], with an optional k/M/G suffix
 * (binary). Returns 0 or -1. */
int opt_parse_size(const char *s, unsigned long long lo, unsigned long long hi,
                   unsigned long long *out);

/* opt_parse_seconds parses a number of seconds, 0 to 1e9. Returns 0 or -1. */
int opt_parse_seconds(const char *s, double *out);

/* opt_set_str replaces the string *dst (freed) with a copy of src. */
void opt_set_str(char **dst, const char *src);

#ifdef __cplusplus
}
#endif
#endif
