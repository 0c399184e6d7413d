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

#include "buf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct job;

#define METRICS_NO_MEMORY (-1)  /* out of memory */
#define METRICS_TOO_LARGE (-2)  /* the document would pass the byte limit */

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
