/* SPDX-License-Identifier: BSD-3-Clause */
/* http_ev: the HTTP front-end's libev watchers (http_ev.h). */
#include "http_ev.h"

#include <stdio.h>

#include "dash.h"

/* arm points the timer at libmicrohttpd's next timeout (at_once: now). */
static void arm(struct http_ev *w, int at_once)
{
    long long ms = at_once ? 0 : http_timeout_ms(w->h);
    ev_timer_stop(w->loop, &w->timer);
    if (ms < 0)
        return;
    ev_timer_set(&w->timer, (double)ms / 1000.0, 0.);
    ev_timer_start(w->loop, &w->timer);
}

/* kick is the front-end's kick: run it at once. */
static void kick(void *arg)
{
    arm(arg, 1);
}

/* io_cb runs libmicrohttpd when one of its descriptors is readable. */
static void io_cb(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct http_ev *w = io->data;
    http_run(w->h);
    arm(w, 0);
}

/* timer_cb runs libmicrohttpd when its timeout is due. */
static void timer_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct http_ev *w = t->data;
    http_run(w->h);
    arm(w, 0);
}

/* sample_cb adds a sample to the dashboard's history. */
static void sample_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct http_ev *w = t->data;
    dash_tick(w->h->dash);
}

int http_ev_start(struct http_ev *w, struct http *h, struct ev_loop *loop, char *err,
                  size_t errlen)
{
    int mhd_fd, gone_fd;
    http_fds(h, &mhd_fd, &gone_fd);
    if (mhd_fd < 0) {
        snprintf(err, errlen, "the HTTP engine has no epoll descriptor");
        return -1;
    }
    w->h = h;
    w->loop = loop;
    ev_io_init(&w->mhd_io, io_cb, mhd_fd, EV_READ);
    w->mhd_io.data = w;
    ev_io_start(loop, &w->mhd_io);
    ev_io_init(&w->gone_io, io_cb, gone_fd, EV_READ);
    w->gone_io.data = w;
    ev_io_start(loop, &w->gone_io);
    ev_timer_init(&w->timer, timer_cb, 0., 0.);
    w->timer.data = w;
    ev_timer_init(&w->sample, sample_cb, 1., 1.);
    w->sample.data = w;
    ev_timer_start(loop, &w->sample);
    h->kick = kick;
    h->kick_arg = w;
    return 0;
}

void http_ev_stop(struct http_ev *w)
{
    if (w->h == NULL)
        return;
    ev_io_stop(w->loop, &w->mhd_io);
    ev_io_stop(w->loop, &w->gone_io);
    ev_timer_stop(w->loop, &w->timer);
    ev_timer_stop(w->loop, &w->sample);
    w->h->kick = NULL;
    w->h->kick_arg = NULL;
    w->h = NULL;
}
