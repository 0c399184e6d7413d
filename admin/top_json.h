/* SPDX-License-Identifier: BSD-3-Clause */
/* top_json: reads the replies of `stats json` and `status json` into a top_view snapshot.
 *
 * Pure: no I/O; jansson does the parsing. A field the reply lacks counts as 0, so a server that
 * adds fields, or an older one, still shows what it has; but a reply to `stats json` that is
 * not a JSON object with "uptime_seconds" and "functions_by_name" is not from Spur.
 */
#ifndef SPUR_ADMIN_TOP_JSON_H
#define SPUR_ADMIN_TOP_JSON_H

#include <stddef.h>

#include "top_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* top_json_stats fills s (which must be zeroed, or freed with top_snap_free) from the reply to
 * `stats json`, text[0..len). Returns 0, or -1 with a one-line reason in err (errlen bytes):
 * the reply is not the JSON of a Spur server, or memory ran out. On -1, s may hold functions
 * and must still be freed. */
int top_json_stats(const char *text, size_t len, struct top_snap *s, char *err, size_t errlen);

/* top_json_status adds the queue gauges of the reply to `status json` to s (after
 * top_json_stats): queued, running and workers per function, adding functions `stats json` did
 * not list. Leaves s->funcs sorted by name. Returns 0, or -1 with a reason in err. */
int top_json_status(const char *text, size_t len, struct top_snap *s, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
