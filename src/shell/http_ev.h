/* SPDX-License-Identifier: BSD-3-Clause */
/* http_ev: the HTTP front-end's watchers on the shell's libev loop: libmicrohttpd's epoll fd,
 * the disconnect watch's epoll fd and a timer to http_timeout_ms, each calling http_run; the
 * front-end's kick sets the timer to 0. Kept apart from http.c and http_mhd.c so those stay
 * free of libev (the fuzzer and the unit tests drive them by hand). */
#ifndef SPUR_HTTP_EV_H
#define SPUR_HTTP_EV_H

#include <ev.h>
#include <stddef.h>

#include "http_mhd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* struct http_ev is the watchers of one HTTP front-end; its owner embeds it. */
struct http_ev {
    struct http *h;        /* the front-end it runs (borrowed), NULL when not started */
    struct ev_loop *loop;  /* the loop the watchers run on */
    ev_io mhd_io;          /* libmicrohttpd's epoll fd is readable */
    ev_io gone_io;         /* a waiting request's socket hung up, or a kept-alive
                              connection's next request began */
    ev_timer timer;        /* libmicrohttpd's next timeout, or work to do at once (kick) */
    ev_timer sample;       /* once a second: the dashboard's history (dash_tick) */
};

/* http_ev_start has loop watch h through w (h's kick is pointed at w). Returns 0, or -1 with a
 * message in err. */
int http_ev_start(struct http_ev *w, struct http *h, struct ev_loop *loop, char *err,
                  size_t errlen);

/* http_ev_stop stops w's watchers and unhooks h's kick (before http_destroy). A w never
 * started is a no-op. */
void http_ev_stop(struct http_ev *w);

#ifdef __cplusplus
}
#endif
#endif
