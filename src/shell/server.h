/* SPDX-License-Identifier: BSD-3-Clause */
/* server: the libev shell around the engine: listeners, connections, flushing, signals. */
#ifndef SPUR_SERVER_H
#define SPUR_SERVER_H

#include <ev.h>
#include <stddef.h>

#include "config.h"
#include "conn.h"
#include "engine.h"
#include "http.h"
#include "http_ev.h"
#include "listen.h"
#include "spin.h"
#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* struct server owns the loop and everything attached to it. */
struct server {
    struct ev_loop *loop;             /* the one event loop */
    const struct config *cfg;         /* settings (borrowed) */
    struct engine eng;                /* the pure server state */
    struct listener lis[LISTEN_MAX];  /* listening sockets */
    ev_io lis_io[LISTEN_MAX];         /* their watchers */
    int nlis;                         /* listening sockets in use */
    int port;                         /* bound TCP port */
    int http_port;                    /* bound HTTP port, -1 without HTTP */
    struct http *http;                /* the HTTP front-end (http.h), NULL when off */
    struct http_ev http_ev;           /* its watchers on the loop (http_ev.h) */
    int unix_bound;                   /* this process bound the --unix socket */
    struct listen_unix_id unix_id;    /* which file that is, so only it is removed */
    unsigned user_timeout_ms;         /* TCP_USER_TIMEOUT for accepted sockets, 0 = OS default */
    int paused;                       /* listeners stopped (fd limit or max connections) */
    ev_timer resume_timer;            /* restarts listeners after EMFILE */
    ev_prepare flush_watcher;         /* runs before_sleep: the work before the loop polls */
    ev_async store_async;             /* the store's committer thread wakes the loop */
    ev_idle listing_idle;             /* keeps the loop polling while admin listings remain */
    ev_timer job_timer;               /* armed to the engine's earliest timer deadline */
    double job_timer_at;              /* the deadline job_timer is armed for, or -1 */
    ev_timer store_timer;             /* fires when a reply held on the store has waited
                                         --store-wait + --store-timeout (store_expire) */
    ev_signal sig_term, sig_int, sig_hup, sig_usr1; /* signal watchers */
    struct conn_ctx conns;            /* the connections and their flush lists (conn.h) */
    ev_idle lazy_idle;                /* runs when a poll finds no input: write the lazy list? */
    ev_timer lazy_timer;              /* writes the lazy list --reply-batch after lazy_since */
    struct spin spin;                 /* adaptive busy polling (--busy-poll) */
    ev_idle spin_idle;                /* active while the loop polls instead of sleeping */
    int loadavg_fd;                   /* /proc/loadavg, the run queue the busy poll samples, or -1 */
    int exit_code;                    /* what main returns */
    int stop_after_flush;             /* admin shutdown: stop once replies are written */
    ev_timer shutdown_timer;          /* bounds a graceful shutdown */
    ev_timer idle_timer;              /* once a second: --idle-timeout and TLS handshake sweeps */
    ev_timer watchdog_timer;          /* sd_notify WATCHDOG=1 at half $WATCHDOG_USEC (notify.h) */
    int ready_told;                   /* READY=1 was sent (after the store replay) */
    void *transport_state[TRANSPORT_MAX]; /* each transport kind's per-server state (its init),
                                             NULL when the kind is not in use */
};

/* server_init opens the listeners and sets up the loop, starting no thread (a daemon forks
 * after it). Returns 0, or -1 with a message in err; server_destroy cleans up either way. */
int server_init(struct server *s, const struct config *cfg, char *err, size_t errlen);

/* server_start opens the store (which starts its committer thread and replays the stored jobs).
 * Call after server_init and after any fork. Returns 0, or -1 with a message in err. */
int server_start(struct server *s, char *err, size_t errlen);

/* server_write_port_file writes the bound port to --port-file, if one is set. Scripts and tests
 * take that file as the sign that spurd is up, so main calls it last, once the store is open and
 * the pid file is written. Returns 0, or -1 with a message in err. */
int server_write_port_file(struct server *s, char *err, size_t errlen);

/* server_run runs the loop until shutdown. Returns the exit code. */
int server_run(struct server *s);

/* server_destroy closes everything. */
void server_destroy(struct server *s);

#ifdef __cplusplus
}
#endif
#endif
