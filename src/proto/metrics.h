/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics: renders the server's counters and state as text for operators: memcached-style
 * `STAT name value` lines, JSON documents (jansson) and the Prometheus text exposition format.
 * Pure functions over the engine and its peers: no socket, no libev, callable from the admin
 * port (admin.c) or any other front-end (an HTTP listener). Each appends to a struct buf at
 * most max bytes (0: no limit) and returns 0, METRICS_NO_MEMORY, or METRICS_TOO_LARGE when the
 * document would pass max; on an error what was appended must be discarded. Memory stays within
 * about max plus one function's worth: JSON is built and dumped a row at a time. The document
 * schemas and every metric are in docs/OBSERVABILITY.md. */
#ifndef SPUR_METRICS_H
#define SPUR_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "docout.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct engine_snapshot;
struct hist;
struct job;

#define METRICS_NO_MEMORY DOCOUT_NO_MEMORY /* out of memory */
#define METRICS_TOO_LARGE DOCOUT_TOO_LARGE /* the document would pass the byte limit */

/* ------------------------------------------------------------ the counter table
 * Every counter and gauge of `stats`, `stats json` and `metrics` is one struct metrics_row: its
 * three names side by side, its help text, its Prometheus type and where its value is read.
 * The core's rows are in metrics.c; a feature adds its own table (metrics_add) where it is
 * attached. The per-function series, the queue gauges named as the gearman exporters name
 * them and the per-function histograms are not simple counters and stay written out in
 * metrics.c (docs/OBSERVABILITY.md, "Adding a counter"). */

/* What a row's value is, which decides how each output writes it. */
enum metrics_type {
    METRICS_U64 = 0, /* an unsigned integer: `%llu` in stats and metrics, a JSON integer */
    METRICS_REAL,    /* a double: `%.6f` in stats, a JSON real, `%.17g` in metrics */
    METRICS_BOOL,    /* 0 or 1: a number in stats and metrics, false or true in JSON */
    METRICS_TEXT,    /* a string: stats and JSON only */
    METRICS_HIST,    /* a histogram (hist.h): JSON and metrics only */
};

/* The Prometheus TYPE of a row's family. */
enum metrics_kind { METRICS_COUNTER = 0, METRICS_GAUGE, METRICS_HISTOGRAM };

/* The outputs, indexing struct metrics_row.at. */
enum { METRICS_AT_TEXT = 0, METRICS_AT_JSON, METRICS_AT_PROM, METRICS_OUTPUTS };

/* struct metrics_src is what a getter reads: the engine, its snapshot and the time. */
struct metrics_src {
    const struct engine *e;           /* the server */
    const struct engine_snapshot *s;  /* engine_stats_get of e, taken once per document */
    double now;                       /* engine_now */
};

/* struct metrics_value is a row's value; the member its type names is set. */
struct metrics_value {
    uint64_t u;                       /* METRICS_U64, METRICS_BOOL */
    double d;                         /* METRICS_REAL */
    const char *text;                 /* METRICS_TEXT, borrowed */
    const struct hist *h;             /* METRICS_HIST, borrowed */
    const double *bounds;             /* METRICS_HIST: its bucket bounds (hist_seconds...) */
};

/* struct metrics_row is one value in the three outputs. */
struct metrics_row {
    const char *text;   /* the `stats` name (STAT text value); NULL: not in stats */
    const char *json;   /* the `stats json` path, its keys (each under 64 bytes) joined by
                           '.'; NULL: not there */
    const char *prom;   /* the `metrics` sample: the family name (under 96 bytes) and any
                           labels, as in spur_x_total{result="ok"}; the rows of a family must
                           be next to each other in metrics order; NULL: not there */
    const char *help;   /* the HELP text of the family, written before its first sample */
    enum metrics_kind kind; /* the TYPE of the family */
    enum metrics_type type; /* of the value */
    size_t offset;      /* without get: the field's offset in struct engine_snapshot
                           (METRICS_FIELD) */
    unsigned char size; /* without get: the field's size: 4 or 8 (an unsigned integer, or the
                           double of METRICS_REAL) */
    unsigned char n;    /* without get: that many fields from offset, summed (0 means 1) */
    void (*get)(const struct metrics_src *src, struct metrics_value *v); /* computes the value;
                           NULL: read the field */
    int at[METRICS_OUTPUTS]; /* the place in each output (METRICS_AT_*): rows are written by
                           increasing place, a row at 0 after every placed one, equal places in
                           the order the tables were added */
};

/* struct metrics_table is a feature's rows. */
struct metrics_table {
    const struct metrics_row *rows; /* the rows (static) */
    size_t n;                       /* how many */
};

/* METRICS_FIELD fills offset and size of a row from a field of struct engine_snapshot. */
#define METRICS_FIELD(f)                                                                      \
    .offset = offsetof(struct engine_snapshot, f),                                             \
    .size = (unsigned char)sizeof(((struct engine_snapshot *)0)->f)

/* metrics_add adds table t (static, kept by pointer) to the rows e's outputs render, after the
 * core's and those added before; adding a table twice adds it once. Returns 0, or -1 when e
 * has ENGINE_EXT_COUNTERS tables already. */
int metrics_add(struct engine *e, const struct metrics_table *t);

/* metrics_stats_text appends the `stats` reply: `STAT name value\r\n` lines, then `END\r\n`.
 * now is engine_now (for uptime). O(functions). */
int metrics_stats_text(const struct engine *e, double now, struct buf *out, size_t max);

/* metrics_stats_functions appends the `stats functions` reply: for each function in creation
 * order, `STAT NAME:counter value\r\n` lines; then `END\r\n`. O(functions). */
int metrics_stats_functions(const struct engine *e, struct buf *out, size_t max);

/* metrics_json_stats appends the `stats json` document and a newline. O(functions). */
int metrics_json_stats(const struct engine *e, double now, struct buf *out, size_t max);

/* metrics_json_status appends the `status json` document (every function's queue state, as
 * `status` and `prioritystatus`) and a newline. O(functions). */
int metrics_json_status(const struct engine *e, struct buf *out, size_t max);

/* metrics_json_workers appends the `workers json` document (every connection, as `workers`)
 * and a newline. O(connections + abilities). */
int metrics_json_workers(const struct engine *e, struct buf *out, size_t max);

/* metrics_json_job appends one job of `show jobs json` as a JSON object (no newline). O(1);
 * returns 0 or METRICS_NO_MEMORY. */
int metrics_json_job(const struct engine *e, const struct job *j, struct buf *out);

/* metrics_prometheus appends the Prometheus text exposition (format 0.0.4) of every metric:
 * the queue gauges named as gearman exporters name them (gearman_jobs, gearman_jobs_running,
 * gearman_jobs_waiting, gearman_workers, label function) and the spur_* counters, gauges and
 * histograms. now is engine_now. O(functions). */
int metrics_prometheus(const struct engine *e, double now, struct buf *out, size_t max);

/* metrics_sanitize copies name[0..len) into out (at least 4 * len + 1 bytes) as valid UTF-8:
 * valid sequences as they are, every other byte as the four characters \xNN. NUL-terminated;
 * returns the length. Function names and uniques are bytes; JSON and Prometheus want text. */
size_t metrics_sanitize(const char *name, size_t len, char *out);

#ifdef __cplusplus
}
#endif
#endif
