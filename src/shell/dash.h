/* SPDX-License-Identifier: BSD-3-Clause */
/* dash: the web dashboard on the HTTP listener (docs/DASHBOARD.md): GET / serves a small
 * single-page app whose assets are compiled into spurd (src/shell/dash/, embedded at build time
 * by scripts/embed-assets.sh, gzipped for browsers that accept it), and GET /dash/api/...
 * its JSON documents (ext/dash_data.c renders them, paged). Every answer carries a
 * Content-Security-Policy that allows nothing from another host and no inline script. The
 * dashboard only reads; its actions are POST /admin requests (http.c: --http-admin, the
 * X-Spur-Admin header, the Origin check, --admin-allow). It also keeps the charts' history:
 * http_ev.c calls dash_tick once a second. */
#ifndef SPUR_DASH_H
#define SPUR_DASH_H

#include <microhttpd.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct engine;
struct dash;

/* dash_new returns the dashboard of e (its history empty), or NULL when out of memory. */
struct dash *dash_new(struct engine *e);

/* dash_free frees d. NULL is a no-op. */
void dash_free(struct dash *d);

/* dash_tick samples the engine into d's history (dash_sample); once a second. */
void dash_tick(struct dash *d);

/* dash_answer answers a GET or HEAD of url when it is the dashboard's ("/", "/dash/..."):
 * returns 1 with MHD's result in *rc, else 0 (not a dashboard path). cfg gives
 * --max-output-buffer and --http-admin. */
int dash_answer(struct dash *d, const struct config *cfg, struct MHD_Connection *mc,
                const char *url, enum MHD_Result *rc);

/* DASH_CSP is the Content-Security-Policy of every dashboard answer: this server only, no
 * inline script or style, no framing, no form posts, no plugins. */
#define DASH_CSP                                                                                  \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "            \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

#ifdef __cplusplus
}
#endif
#endif
