/* SPDX-License-Identifier: BSD-3-Clause */
/* dash: the web dashboard's routes and assets (dash.h). */
#include "dash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "dash_data.h"
#include "engine.h"
#include "http_mhd.h"
#include "metrics.h"

/* struct dash_asset is one file of the page, as scripts/embed-assets.sh writes it. */
struct dash_asset {
    const char *path;          /* the path it is served at */
    const char *type;          /* its Content-Type */
    const unsigned char *data; /* its bytes */
    size_t len;                /* how many */
    const unsigned char *gz;   /* the same, gzipped */
    size_t gz_len;             /* how many */
};

#include "src/shell/dash_assets.inc" /* generated from src/shell/dash/ (include.am) */

/* struct dash is the dashboard of one engine. */
struct dash {
    struct engine *eng;         /* the server (borrowed) */
    struct dash_sampler sample; /* the charts' history */
};

struct dash *dash_new(struct engine *e)
{
    struct dash *d = malloc(sizeof *d);
    if (d == NULL)
        return NULL;
    d->eng = e;
    dash_sampler_init(&d->sample);
    dash_sample(&d->sample, e, engine_now(e)); /* primes the counters */
    return d;
}

void dash_free(struct dash *d)
{
    free(d);
}

void dash_tick(struct dash *d)
{
    dash_sample(&d->sample, d->eng, engine_now(d->eng));
}

/* reply_as queues status with body (len bytes; static when !owned, else malloc'd and taken)
 * and the dashboard's headers; admin: X-Spur-Dashboard-Admin says actions are on. */
static enum MHD_Result reply_as(struct MHD_Connection *mc, unsigned status, const char *type,
                                const void *body, size_t len, int owned, int gz, int admin)
{
    http_request_in(mc);
    struct MHD_Response *rsp = MHD_create_response_from_buffer(
        len, (void *)(uintptr_t)body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (rsp == NULL) {
        if (owned)
            free((void *)(uintptr_t)body);
        return MHD_NO;
    }
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(rsp, "Content-Security-Policy", DASH_CSP);
    MHD_add_response_header(rsp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(rsp, "X-Frame-Options", "DENY");
    MHD_add_response_header(rsp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(rsp, "Cache-Control", "no-store");
    MHD_add_response_header(rsp, "Vary", "Accept-Encoding");
    MHD_add_response_header(rsp, "X-Spur-Dashboard-Admin", admin ? "1" : "0");
    if (gz)
        MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    enum MHD_Result r = MHD_queue_response(mc, status, rsp);
    MHD_destroy_response(rsp);
    return r;
}

/* reply queues with body (len bytes; static when !owned, else malloc'd and taken) and
 * the dashboard's headers. */
static enum MHD_Result reply(struct MHD_Connection *mc, unsigned status, const char *type,
                             const void *body, size_t len, int owned, int gz)
{
    return reply_as(mc, status, type, body, len, owned, gz, 0);
}

static enum MHD_Result reply_text(struct MHD_Connection *mc, unsigned status, const char *text)
{
    return reply(mc, status, HTTP_TEXT_PLAIN, text, strlen(text), 0, 0);
}

/* accepts_gzip reports whether the request's Accept-Encoding names gzip. */
static int accepts_gzip(struct MHD_Connection *mc)
{
    const char *v =
        MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    return v != NULL && strstr(v, "gzip") != NULL;
}

/* arg returns the query argument name, or NULL. */
static const char *arg(struct MHD_Connection *mc, const char *name)
{
    return MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, name);
}

/* arg_size returns the query argument name as a count, or def when absent or malformed. */
static size_t arg_size(struct MHD_Connection *mc, const char *name, size_t def)
{
    const char *v = arg(mc, name);
    if (v == NULL || *v < '0' || *v > '9')
        return def;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n > (unsigned long long)SIZE_MAX / 2)
        return def;
    return (size_t)n;
}

/* api renders the document of path (after "/dash/api/") into b: 0, a METRICS_* error, or 1
 * for an unknown path. */
static int api(struct dash *d, const struct config *cfg, struct MHD_Connection *mc,
               const char *path, struct buf *b)
{
    struct engine *e = d->eng;
    size_t max = cfg->max_output;
    size_t off = arg_size(mc, "offset", 0), lim = arg_size(mc, "limit", 50);
    if (strcmp(path, "overview") == 0) {
        const char *desc = arg(mc, "desc");
        struct dash_query q = {off, lim, arg(mc, "q"), dash_sort_parse(arg(mc, "sort")),
                               desc != NULL && strcmp(desc, "1") == 0, cfg->http_admin};
        return dash_json_overview(e, engine_now(e), &q, b, max);
    }
    if (strcmp(path, "series") == 0)
        return dash_json_series(&d->sample, b, max);
    if (strcmp(path, "function") == 0) {
        const char *n = arg(mc, "name");
        return dash_json_function(e, engine_now(e), n ? n : "", n ? strlen(n) : 0, b, max);
    }
    if (strcmp(path, "failed") == 0)
        return dash_json_failed(e, off, lim, b, max);
    if (strcmp(path, "waiting") == 0)
        return dash_json_waiting(e, off, lim, b, max);
    if (strcmp(path, "schedules") == 0)
        return dash_json_schedules(e, b, max);
    if (strcmp(path, "job") == 0) {
        const char *h = arg(mc, "handle"), *u = arg(mc, "unique");
        const char *k = h != NULL ? h : u != NULL ? u : "";
        return dash_json_job(e, engine_now(e), k, strlen(k), h == NULL && u != NULL, b, max);
    }
    return 1;
}

int dash_answer(struct dash *d, const struct config *cfg, struct MHD_Connection *mc,
                const char *url, enum MHD_Result *rc)
{
    if (d == NULL || (strcmp(url, "/") != 0 && strncmp(url, "/dash/", 6) != 0))
        return 0;
    for (const struct dash_asset *a = dash_assets; a->path != NULL; a++)
        if (strcmp(a->path, url) == 0) {
            int gz = accepts_gzip(mc);
            *rc = reply(mc, MHD_HTTP_OK, a->type, gz ? a->gz : a->data, gz ? a->gz_len : a->len,
                        0, gz);
            return 1;
        }
    if (strncmp(url, "/dash/api/", 10) != 0) {
        *rc = reply_text(mc, MHD_HTTP_NOT_FOUND, "no such page of the dashboard\n");
        return 1;
    }
    struct buf b = {0};
    int r = api(d, cfg, mc, url + 10, &b);
    if (r == 1)
        *rc = reply_text(mc, MHD_HTTP_NOT_FOUND, "no such document of the dashboard\n");
    else if (r != 0)
        *rc = reply_text(mc, MHD_HTTP_INTERNAL_SERVER_ERROR,
                         r == METRICS_TOO_LARGE ? "reply too large (--max-output-buffer)\n"
                                                : "out of memory\n");
    else {
        size_t len = buf_len(&b);
        char *body = malloc(len > 0 ? len : 1);
        if (body != NULL && len > 0)
            memcpy(body, buf_head(&b), len);
        *rc = body == NULL ? MHD_NO
                           : reply_as(mc, MHD_HTTP_OK, "application/json", body, len, 1, 0,
                                      cfg->http_admin);
    }
    buf_free(&b);
    return 1;
}
