/* SPDX-License-Identifier: BSD-3-Clause */
/* http: the HTTP front-end (docs/HTTP.md). libmicrohttpd parses the requests, driven from the
 * caller's loop (no thread of its own: http_mhd.c is its glue, http_ev.c its watchers on the
 * shell's loop); http.c routes them. GET routes answer pages (/healthz, and the slots the
 * observability renderers fill); POST /FUNC submits a job the way
 * gearmand's -r http does: each such request is an internal client of the engine (a struct peer
 * with its own peer_ops) fed a SUBMIT_JOB* packet through session_process, whose replies
 * (JOB_CREATED, WORK_DATA, WORK_COMPLETE, WORK_FAIL, WORK_EXCEPTION, ERROR) its encoder turns
 * into the HTTP response from their values, not from encoded bytes. So coalescing, priorities,
 * durability and worker loss behave as for a binary client.
 *
 * The shell (server.c) has it watched (http_ev_start), hands it the accepted sockets (http_add),
 * forwards its engine_ops to the peers' own peer_ops, and calls http_flush before the loop
 * sleeps. */
#ifndef SPUR_HTTP_H
#define SPUR_HTTP_H

#include <stddef.h>

#include "http_mhd.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct engine;

/* struct http_page is what a GET route answers. */
struct http_page {
    unsigned status;  /* HTTP status; 200 unless the route sets another */
    const char *type; /* Content-Type (a static string); text/plain unless the route sets one */
    char *body;       /* malloc'd body, freed by http.c; NULL for an empty body */
    size_t len;       /* bytes in body */
};

/* http_page_fn fills pg from the engine's state (read only), a body of at most max bytes (0: no
 * limit; --max-output-buffer). Returns 0, or -1 when out of memory, or -2 when the body would
 * pass max: the request is answered 500 with the reason. */
typedef int (*http_page_fn)(struct engine *e, struct http_page *pg, size_t max);

/* struct http_route is one GET path of the route table (http.c, http_routes). A path that is
 * not in the table is a function name for POST/PUT submission. */
struct http_route {
    const char *path;  /* exact path, e.g. "/healthz" */
    http_page_fn page; /* answers GET and HEAD; NULL: a slot not wired in this build (501) */
};

/* http_routes is the route table, ended by a NULL path. */
extern const struct http_route http_routes[];

/* http_new starts the HTTP engine for e with cfg's limits (--http-max-connections,
 * --http-max-header-size, --http-max-body, --http-idle-timeout); connections are handed to it
 * with http_add. Returns NULL with a message in err. */
struct http *http_new(struct engine *e, const struct config *cfg, char *err, size_t errlen);

/* http_destroy answers or abandons every request (a waiting one's peer is detached, as a
 * vanished client), closes every HTTP connection and frees h. NULL is a no-op. */
void http_destroy(struct http *h);

/* http_flush settles the HTTP requests the engine answered, queued admin text to, or closed
 * since the last call, resuming the requests that waited; called once per loop iteration
 * before the writes. Returns how many requests it resumed: when more than 0, http_run must run
 * soon (a watched h kicks itself; a caller driving it by hand calls http_run). */
size_t http_flush(struct http *h);

/* http_same_origin reports whether the Origin header origin ("scheme://host[:port]") names
 * the server the request was sent to: its host and port are the Host header host (case
 * insensitive). NULL host, "null" and anything without "://" are not the same origin. */
int http_same_origin(const char *origin, const char *host);

/* http_requests returns how many requests are alive (received, waiting or being answered). */
size_t http_requests(const struct http *h);

#ifdef __cplusplus
}
#endif
#endif
