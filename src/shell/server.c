/* SPDX-License-Identifier: BSD-3-Clause */
/* server: the libev shell around the engine: listeners, connections, flushing, signals. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acl.h"
#include "admin.h"
#include "cmd.h"
#include "conn.h"
#include "feature_set.h"
#include "file.h"
#include "flow.h"
#include "log.h"
#include "notify.h"
#include "recur.h"
#include "store.h"
#include "transport.h"

static struct log_limit accept_limit = {5.0, 0, 0, 0, 0};

/* ------------------------------------------------------------ engine callbacks */

/* The engine's output, close and resume go to the peer's owner (peer_ops: net/conn.c for a
 * connection, the HTTP front-end for a request). */

static void eng_output(struct engine *e, struct peer *p)
{
    (void)e;
    p->ops->output(p);
}

static void eng_close(struct engine *e, struct peer *p)
{
    (void)e;
    p->ops->close(p);
}

static void close_listeners(struct server *s)
{
    for (int i = 0; i < s->nlis; i++) {
        ev_io_stop(s->loop, &s->lis_io[i]);
        close(s->lis[i].fd);
    }
    s->nlis = 0;
    ev_timer_stop(s->loop, &s->resume_timer);
}

static void shutdown_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct server *s = w->data;
    log_warn("graceful shutdown: %zu jobs still running after %.0fs; stopping",
             s->eng.nrunning, s->cfg->shutdown_timeout);
    ev_break(loop, EVBREAK_ALL);
}

static void eng_shutdown(struct engine *e, int graceful)
{
    struct server *s = e->shell;
    if (!s->stop_after_flush)
        notify_stopping();
    s->stop_after_flush = 1;
    if (!graceful)
        return;
    /* graceful: accept nothing new, assign nothing new, let running jobs finish */
    engine_begin_shutdown(e);
    close_listeners(s);
    ev_timer_set(&s->shutdown_timer, s->cfg->shutdown_timeout, 0.);
    ev_timer_start(s->loop, &s->shutdown_timer);
    log_notice("graceful shutdown: waiting for %zu running jobs", e->nrunning);
}

static void eng_resume(struct engine *e, struct peer *p)
{
    (void)e;
    p->ops->resume(p);
}

static double eng_now(struct engine *e)
{
    struct server *s = e->shell;
    return ev_now(s->loop);
}

/* ------------------------------------------------------------ accepting */

/* pause_listeners stops accepting: on every listener (all: the fd limit), or only on the
 * Gearman ones (--max-connections, which HTTP connections do not count against). */
static void pause_listeners(struct server *s, int all)
{
    for (int i = 0; i < s->nlis; i++)
        if (all || s->lis[i].proto == LISTEN_GEARMAN)
            ev_io_stop(s->loop, &s->lis_io[i]);
    s->paused = 1;
}

static void resume_listeners(struct server *s)
{
    if (!s->paused)
        return;
    for (int i = 0; i < s->nlis; i++)
        ev_io_start(s->loop, &s->lis_io[i]);
    s->paused = 0;
}

static void resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    if (conn_count(&s->conns) < s->cfg->max_connections)
        resume_listeners(s);
}

/* tune_socket sets the per-connection socket options. */
static void tune_socket(struct server *s, int fd, int family)
{
    if (family != AF_INET && family != AF_INET6)
        return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    const struct config *c = s->cfg;
    if (c->keepalive_idle > 0)
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &c->keepalive_idle, sizeof(int));
    if (c->keepalive_interval > 0)
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &c->keepalive_interval, sizeof(int));
    if (c->keepalive_count > 0)
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &c->keepalive_count, sizeof(int));
    /* keepalive probes wait for the send queue to drain: a peer that vanished with our data
     * unacknowledged (a NOOP to a dead worker) is only caught by TCP_USER_TIMEOUT */
    if (s->user_timeout_ms > 0)
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &s->user_timeout_ms, sizeof(unsigned));
}

/* accept_gearman makes a Gearman connection (conn + peer) over the listener's transport. */
static void accept_gearman(struct server *s, const struct listener *lis, int fd,
                           const struct sockaddr *sa, socklen_t sl)
{
    (void)sa;
    (void)sl;
    struct transport t;
    if (lis->transport->wrap(&t, fd, lis->transport_arg) != 0) {
        s->eng.stats.accept_errors++;
        close(fd);
        return;
    }
    struct conn *c = conn_new(&s->conns, &t);
    if (c == NULL) {
        s->eng.stats.accept_errors++;
    } else {
        c->peer.listener = lis->name;
        if (lis->transport->traits & TRANSPORT_SECURE)
            c->peer.flags |= PEER_TLS;
    }
}

/* accept_http hands the socket to the HTTP front-end, which does its own I/O. */
static void accept_http(struct server *s, const struct listener *lis, int fd,
                        const struct sockaddr *sa, socklen_t sl)
{
    (void)lis;
    http_add(s->http, fd, sa, sl);
}

/* accept_proto makes the connection for a socket accepted on a listener of each protocol (the
 * table a new kind of listener adds its entry to). */
static void (*const accept_proto[LISTEN_PROTO_MAX])(struct server *s, const struct listener *lis,
                                                    int fd, const struct sockaddr *sa,
                                                    socklen_t sl) = {
    [LISTEN_GEARMAN] = accept_gearman,
    [LISTEN_HTTP] = accept_http,
};

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct server *s = w->data;
    const struct listener *lis = &s->lis[w - s->lis_io];
    spin_input(&s->spin, ev_now(loop));
    for (int burst = 0; burst < 64; burst++) {
        /* HTTP connections are bounded by --http-max-connections, in http_add */
        if (lis->proto == LISTEN_GEARMAN && conn_count(&s->conns) >= s->cfg->max_connections) {
            log_limited(&accept_limit, LOG_WARNING, __FILE__, __LINE__,
                        "--max-connections (%zu) reached; not accepting", s->cfg->max_connections);
            pause_listeners(s, 0);
            return;
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                s->eng.stats.accept_errors++;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                log_limited(&accept_limit, LOG_ERROR, __FILE__, __LINE__,
                            "accept: %s; pausing accepts for 1s", strerror(errno));
                pause_listeners(s, 1);
                ev_timer_stop(s->loop, &s->resume_timer);
                ev_timer_set(&s->resume_timer, 1.0, 0.);
                ev_timer_start(s->loop, &s->resume_timer);
            }
            return;
        }
        tune_socket(s, fd, ss.ss_family);
        accept_proto[lis->proto](s, lis, fd, (struct sockaddr *)&ss, sl);
    }
}

/* ------------------------------------------------------------ loop hooks */

/* tell_ready tells systemd (notify.h) once that spurd serves: listeners bound, stored jobs back. */
static void tell_ready(struct server *s)
{
    if (s->ready_told || store_replaying(&s->eng))
        return;
    s->ready_told = 1;
    if (notify_ready() < 0)
        log_warn("sd_notify READY=1: %s", strerror(errno));
}

static void watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    notify_watchdog();
}

static void store_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    store_complete(&s->eng);
    tell_ready(s);
}

/* store_notify runs on the committer thread: ev_async_send is the thread-safe wake-up. */
static void store_notify(void *arg)
{
    struct server *s = arg;
    ev_async_send(s->loop, &s->store_async);
}

static void idle_sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct server *s = w->data;
    conn_idle_sweep(&s->conns, ev_now(loop));
    conn_handshake_sweep(&s->conns, ev_now(loop));
}

/* idle_cb does nothing: an active idle watcher only keeps the loop from blocking. */
static void idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

/* arm_job_timer points the job timer at the earliest of the engine's deadlines and the next
 * schedule's due time. */
static void arm_job_timer(struct server *s)
{
    double at = engine_next_timer(&s->eng);
    double sat = recur_next_due(&s->eng);
    if (sat >= 0 && (at < 0 || sat < at))
        at = sat;
    if (at == s->job_timer_at)
        return;
    ev_timer_stop(s->loop, &s->job_timer);
    s->job_timer_at = at;
    if (at < 0)
        return;
    double delay = at - ev_now(s->loop);
    ev_timer_set(&s->job_timer, delay > 0 ? delay : 0, 0.);
    ev_timer_start(s->loop, &s->job_timer);
}

/* arm_store_timer starts the store timer for the oldest held reply's deadline, if it is not
 * running: a running one fires no later than that (replies held since are newer), and when it
 * fires early store_expire answers nothing and the timer is armed again. */
static void arm_store_timer(struct server *s)
{
    if (ev_is_active(&s->store_timer))
        return;
    double left = store_deadline(&s->eng);
    if (left < 0)
        return;
    ev_timer_set(&s->store_timer, left + 0.001, 0.);
    ev_timer_start(s->loop, &s->store_timer);
}

static void store_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    store_expire(&s->eng);
}

static void job_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct server *s = w->data;
    s->job_timer_at = -1;
    engine_run_timers(&s->eng, ev_now(loop));
    recur_run(&s->eng, ev_now(loop));
}

/* flush_lazy writes the output of every conn on the lazy list. */
static void flush_lazy(struct server *s)
{
    ev_timer_stop(s->loop, &s->lazy_timer);
    conn_flush_lazy(&s->conns);
}

/* spin_cb runs when a busy poll found nothing: poll again while the window is open. */
static void spin_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    struct server *s = w->data;
    if (!spin_more(&s->spin, ev_time()))
        ev_idle_stop(loop, w);
}

/* lazy_cb runs when a poll found no input. With no job running, no result is on its way and
 * the lazy output is written now; else it waits for the timer (or more input). */
static void lazy_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    struct server *s = w->data;
    ev_idle_stop(loop, w);
    if (s->eng.nrunning == 0 && list_empty(&s->eng.woken)) {
        /* no job runs and no woken worker is on its way: no result can carry them */
        flush_lazy(s);
        return;
    }
    double since = 0;
    conn_have_lazy(&s->conns, &since);
    double left = since + spin_batch(&s->spin, s->cfg->reply_batch) - ev_now(loop);
    ev_timer_set(&s->lazy_timer, left > 0 ? left : 0, 0.);
    ev_timer_start(loop, &s->lazy_timer);
}

static void lazy_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    flush_lazy(w->data);
}

/* ------------------------------------------------------------ before the loop sleeps
 *
 * before_sleep (the ev_prepare watcher: libev runs it once per loop iteration, after every
 * callback of the iteration and before it polls) does the work those callbacks left, in this
 * order:
 *
 *  1. input that waited (conn_run_deferred): connections whose input stopped at a reply quota
 *     get one more turn; then admin listings (admin_continue) write their next slice. First,
 *     because what they produce (replies, durable submits, wake-ups) must join the steps below
 *     in this same iteration. The engine's pending wake-ups are done here too
 *     (engine_drain_ready): a handler drains its own, but a durable batch or the replay
 *     (store_async_cb) makes jobs ready outside any handler.
 *     HTTP requests whose replies arrived (http_flush) get their answers: a finished request
 *     leaves the engine (its teardown may add work to the steps below) and its connection is
 *     resumed, for libmicrohttpd to write in the next iteration (http_flush sets its timer to
 *     0).
 *  2. store hand-off (store_flush): the durable submits of this iteration go to the committer
 *     thread as one batch (group commit); their JOB_CREATED waits for its answer
 *     (store_async_cb). After 1, which may add to the batch; before 3, so the batch is on its
 *     way while we write.
 *  3. writes (conn_flush_dirty): every connection with output to send now, PEER_URGENT first
 *     (a worker's next job, a client's result), one writev each; then the lazy batch if its
 *     first reply has waited --reply-batch.
 *  4. closes (conn_free_closed): connections closed during the iteration are freed here, never
 *     inside a callback. A free re-queues a lost worker's jobs and may wake other workers: their
 *     output is written right after each free. After 3, so output queued for a connection
 *     before it closed (an ERROR) was written.
 *  5. timers (arm_job_timer): the one job timer is pointed at the engine's earliest deadline,
 *     after every step that may have added or removed one; the store timer (arm_store_timer)
 *     at the time the oldest reply held on the store has waited --store-timeout.
 *  6. how to wait: the loop keeps polling without sleeping while listings or deferred input
 *     remain, while lazy replies wait for a poll that finds no input (lazy_cb), or while busy
 *     polling (spin.h); otherwise it sleeps in its poll. Stopping writes the lazy replies now.
 *  7. stop or resume: after an admin shutdown, stop once the replies are written (graceful: and
 *     no job runs any more); otherwise listeners paused at --max-connections resume once a
 *     close made room.
 */

/* write_output is step 3: the dirty list, then the lazy batch once it has waited long enough. */
static void write_output(struct server *s)
{
    double lazy_since = 0;
    conn_flush_dirty(&s->conns);
    if (conn_have_lazy(&s->conns, &lazy_since) &&
        ev_now(s->loop) - lazy_since >= spin_batch(&s->spin, s->cfg->reply_batch))
        flush_lazy(s);
}

/* sample_run_queue feeds the busy poll the machine's runnable threads other than ours (the
 * running count of /proc/loadavg, "0.52 0.58 0.59 3/219 12345", less this one), at most once a
 * millisecond: while they fill the cores the loop neither spins nor batches replies (spin.h). */
static void sample_run_queue(struct server *s)
{
    double now = ev_now(s->loop);
    if (s->loadavg_fd < 0 || !spin_sample_due(&s->spin, now))
        return;
    char buf[128];
    ssize_t n = pread(s->loadavg_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    int running = 0;
    if (sscanf(buf, "%*s %*s %*s %d/", &running) == 1)
        spin_runnable(&s->spin, now, running - 1);
}

/* cpus_allowed returns how many cores this process may run on. */
static int cpus_allowed(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* choose_wait is step 6: start the idle watchers that keep the loop polling, stop the others. */
static void choose_wait(struct server *s)
{
    sample_run_queue(s);
    if (admin_ready(&s->eng) || conn_have_deferred(&s->conns))
        ev_idle_start(s->loop, &s->listing_idle); /* more to do: poll, do not sleep */
    else
        ev_idle_stop(s->loop, &s->listing_idle);
    if (conn_have_lazy(&s->conns, NULL) && s->stop_after_flush)
        flush_lazy(s);
    if (conn_have_lazy(&s->conns, NULL) && !ev_is_active(&s->lazy_timer))
        ev_idle_start(s->loop, &s->lazy_idle); /* poll without blocking: is more input ready? */
    else
        ev_idle_stop(s->loop, &s->lazy_idle);
    /* out of work: maybe poll a little longer before sleeping (spin.h) */
    if (s->spin.max > 0 && !ev_is_active(&s->lazy_idle) && !ev_is_active(&s->listing_idle) &&
        spin_dry(&s->spin, ev_time()))
        ev_idle_start(s->loop, &s->spin_idle);
    else
        ev_idle_stop(s->loop, &s->spin_idle);
}

/* stop_or_resume is step 7; freed is how many connections step 4 freed. */
static void stop_or_resume(struct server *s, size_t freed)
{
    if (s->stop_after_flush && (!s->eng.shutting_down || s->eng.nrunning == 0)) {
        ev_break(s->loop, EVBREAK_ALL);
        return;
    }
    if (freed > 0 && s->paused && conn_count(&s->conns) < s->cfg->max_connections &&
        !ev_is_active(&s->resume_timer))
        resume_listeners(s);
}

static void before_sleep(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    conn_run_deferred(&s->conns);                /* 1. input that waited */
    engine_drain_ready(&s->eng);                 /*    wake-ups left by the store */
    admin_continue(&s->eng);                     /*    and admin listings */
    if (s->http != NULL) /* and HTTP answers (http_flush kicks libmicrohttpd to write them) */
        http_flush(s->http);
    store_flush(&s->eng);                        /* 2. store hand-off */
    write_output(s);                             /* 3. writes */
    size_t freed = conn_free_closed(&s->conns);  /* 4. closes */
    arm_job_timer(s);                            /* 5. timers */
    arm_store_timer(s);
    choose_wait(s);                              /* 6. how to wait */
    stop_or_resume(s, freed);                    /* 7. stop or resume */
}

static void term_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)revents;
    log_notice("signal %d: stopping", w->signum);
    notify_stopping();
    ev_break(loop, EVBREAK_ALL);
}

static void usr1_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    if (!s->eng.shutting_down) {
        log_notice("SIGUSR1: graceful shutdown");
        s->eng.ops.shutdown(&s->eng, 1);
    }
}

/* reload_transports has each transport kind in use re-read its files (SIGHUP). */
static void reload_transports(struct server *s)
{
    for (int k = 0; k < TRANSPORT_MAX; k++)
        if (transport_kinds[k]->reload != NULL && s->transport_state[k] != NULL)
            transport_kinds[k]->reload(s->transport_state[k]);
}

/* server_reload_policy re-reads the --policy file; a bad file keeps the old policy. */
static void server_reload_policy(struct server *s)
{
    char err[512];
    if (s->eng.acl == NULL || s->eng.acl->policy_path == NULL)
        return;
    if (acl_reload(s->eng.acl, err, sizeof err) != 0)
        log_error("SIGHUP: policy not reloaded, the old one stays: %s", err);
    else
        log_notice("SIGHUP: policy %s reloaded (%zu rules)", s->eng.acl->policy_path,
                   s->eng.acl->policy->nrules);
}

static void hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    if (log_reopen() != 0)
        log_error("SIGHUP: cannot reopen the log file");
    else
        log_notice("SIGHUP: log file reopened");
    reload_transports(s);
    server_reload_policy(s);
}

/* ------------------------------------------------------------ lifecycle */

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* open_http opens the HTTP listeners (--http-listen, --http-port) and the HTTP front-end with
 * its watchers. Returns 0, or -1 with a message in err. */
static int open_http(struct server *s, char *err, size_t errlen)
{
    const struct config *cfg = s->cfg;
    int n = listen_tcp(cfg->http_listen, cfg->nhttp_listen, config_http_port(cfg), cfg->backlog,
                       &s->lis[s->nlis], LISTEN_MAX - s->nlis, &s->http_port, err, errlen);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        s->lis[s->nlis + i].proto = LISTEN_HTTP;
    s->nlis += n;
    s->http = http_new(&s->eng, cfg, err, errlen);
    if (s->http == NULL)
        return -1;
    return http_ev_start(&s->http_ev, s->http, s->loop, err, errlen);
}

/* init_transports runs each transport kind's init. Returns 0, or -1 with a message in err. */
static int init_transports(struct server *s, char *err, size_t errlen)
{
    for (int k = 0; k < TRANSPORT_MAX; k++)
        if (transport_kinds[k]->init != NULL &&
            transport_kinds[k]->init(s->cfg, &s->transport_state[k], err, errlen) != 0)
            return -1;
    return 0;
}

/* destroy_transports frees each transport kind's state. */
static void destroy_transports(struct server *s)
{
    for (int k = 0; k < TRANSPORT_MAX; k++) {
        if (transport_kinds[k]->destroy != NULL)
            transport_kinds[k]->destroy(s->transport_state[k]);
        s->transport_state[k] = NULL;
    }
}

/* set_transport makes listener i carry transport kind k, with the kind's state. */
static void set_transport(struct server *s, int i, enum transport_id k)
{
    s->lis[i].transport = transport_kinds[k];
    s->lis[i].transport_arg = s->transport_state[k];
}

/* secure_in_use reports whether a kind with the TRANSPORT_SECURE trait (a handshake to bound)
 * is in use. */
static int secure_in_use(const struct server *s)
{
    for (int k = 0; k < TRANSPORT_MAX; k++)
        if ((transport_kinds[k]->traits & TRANSPORT_SECURE) && s->transport_state[k] != NULL)
            return 1;
    return 0;
}

/* open_tls opens the --ssl-listen listeners, TLS only. Returns 0, or -1 with a message in err. */
static int open_tls(struct server *s, char *err, size_t errlen)
{
    const struct config *cfg = s->cfg;
    for (int i = 0; i < cfg->nssl_listen; i++) {
        char host[256];
        int port, bound;
        if (config_split_hostport(cfg->ssl_listen[i], host, sizeof host, &port) != 0) {
            snprintf(err, errlen, "invalid --ssl-listen '%s'", cfg->ssl_listen[i]);
            return -1;
        }
        char *hosts[1] = {host[0] != '\0' ? host : NULL};
        int n = listen_tcp(hosts, 1, port, cfg->backlog, &s->lis[s->nlis], LISTEN_MAX - s->nlis,
                           &bound, err, errlen);
        if (n < 0)
            return -1;
        for (int k = 0; k < n; k++) {
            set_transport(s, s->nlis + k, TRANSPORT_TLS);
            log_notice("spurd listening for TLS on %s", s->lis[s->nlis + k].name);
        }
        s->nlis += n;
    }
    return 0;
}

/* open_tcp opens the TCP listeners, retrying a busy port once a second for --listen-retry
 * seconds. Returns how many, or -1 with a message in err. */
static int open_tcp(struct server *s, char *err, size_t errlen)
{
    const struct config *cfg = s->cfg;
    double deadline = mono_now() + cfg->listen_retry;
    for (int tries = 0;; tries++) {
        int n = listen_tcp(cfg->listen, cfg->nlisten, cfg->port, cfg->backlog, s->lis,
                           LISTEN_MAX, &s->port, err, errlen);
        if (n >= 0 || errno != EADDRINUSE || mono_now() + 1 > deadline)
            return n;
        if (tries == 0)
            log_warn("%s; retrying once a second for up to %d s (--listen-retry)", err,
                     cfg->listen_retry);
        sleep(1);
    }
}

int server_init(struct server *s, const struct config *cfg, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->loadavg_fd = -1;
    s->cfg = cfg;
    s->user_timeout_ms = config_tcp_user_timeout_ms(cfg);
    s->loop = ev_default_loop(EVFLAG_AUTO);
    if (s->loop == NULL) {
        snprintf(err, errlen, "cannot create the event loop");
        return -1;
    }
    static const struct engine_ops ops = {eng_output, eng_close, eng_shutdown, eng_now,
                                         eng_resume};
    if (engine_init(&s->eng, cfg, &ops, s) != 0) {
        snprintf(err, errlen, "cannot initialise the job engine");
        return -1;
    }
    engine_set_sink(&s->eng, &cmd_sink);
    if (cfg->schedule_tz != NULL) { /* cron schedules (and SUBMIT_JOB_SCHED) are read in this zone */
        setenv("TZ", cfg->schedule_tz, 1);
        tzset();
    }
    if (features_attach(&s->eng) != 0) { /* feature_set.c: hooks, admin commands, counters */
        snprintf(err, errlen, "out of memory, or too many admin or counter tables");
        return -1;
    }
    if (acl_new(cfg, &s->eng.acl, err, errlen) != 0)
        return -1;
    if (conn_ctx_init(&s->conns, s->loop, &s->eng, cfg, &s->spin) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    ev_timer_init(&s->store_timer, store_timer_cb, 0., 0.);
    s->store_timer.data = s;
    ev_async_init(&s->store_async, store_async_cb);
    s->store_async.data = s;
    ev_async_start(s->loop, &s->store_async);

    if (init_transports(s, err, errlen) != 0)
        return -1;
    int n = open_tcp(s, err, errlen);
    if (n < 0)
        return -1;
    s->nlis = n;
    for (int i = 0; i < n; i++) /* --ssl makes them TLS, as gearmand */
        set_transport(s, i, cfg->ssl ? TRANSPORT_TLS : TRANSPORT_PLAIN);
    if (open_tls(s, err, errlen) != 0)
        return -1;
    if (cfg->unix_path != NULL) {
        int fd = listen_unix(cfg->unix_path, cfg->backlog, &s->unix_id, err, errlen);
        if (fd < 0)
            return -1;
        s->unix_bound = 1;
        memset(&s->lis[s->nlis], 0, sizeof s->lis[s->nlis]);
        s->lis[s->nlis].fd = fd;
        s->lis[s->nlis].family = AF_UNIX;
        s->lis[s->nlis].proto = LISTEN_GEARMAN;
        set_transport(s, s->nlis, TRANSPORT_PLAIN); /* always plain */
        snprintf(s->lis[s->nlis].name, sizeof s->lis[s->nlis].name, "unix:%s", cfg->unix_path);
        s->nlis++;
    }
    s->http_port = -1;
    if (config_http_enabled(cfg) && open_http(s, err, errlen) != 0)
        return -1;
    for (int i = 0; i < s->nlis; i++) {
        if (s->lis[i].transport == NULL) /* HTTP, which does its own I/O */
            s->lis[i].transport = transport_kinds[TRANSPORT_PLAIN];
        ev_io_init(&s->lis_io[i], accept_cb, s->lis[i].fd, EV_READ);
        s->lis_io[i].data = s;
        ev_io_start(s->loop, &s->lis_io[i]);
    }
    ev_timer_init(&s->resume_timer, resume_cb, 1.0, 0.);
    s->resume_timer.data = s;
    ev_idle_init(&s->listing_idle, idle_cb);
    ev_idle_init(&s->lazy_idle, lazy_cb);
    s->lazy_idle.data = s;
    ev_init(&s->lazy_timer, lazy_timer_cb);
    s->lazy_timer.data = s;
    ev_idle_init(&s->spin_idle, spin_cb);
    s->spin_idle.data = s;
    spin_init(&s->spin, cfg->busy_poll);
    spin_cpus(&s->spin, cpus_allowed());
    /* the run queue, sampled while polling may spin or batch (no file, no sampling: as if quiet) */
    s->loadavg_fd = cfg->busy_poll > 0 ? open("/proc/loadavg", O_RDONLY | O_CLOEXEC) : -1;
    ev_timer_init(&s->idle_timer, idle_sweep_cb, 1.0, 1.0);
    s->idle_timer.data = s;
    if (cfg->idle_timeout > 0 || (secure_in_use(s) && cfg->ssl_handshake_timeout > 0))
        ev_timer_start(s->loop, &s->idle_timer);
    ev_timer_init(&s->shutdown_timer, shutdown_timeout_cb, 0., 0.);
    s->shutdown_timer.data = s;
    ev_timer_init(&s->job_timer, job_timer_cb, 0., 0.);
    s->job_timer.data = s;
    s->job_timer_at = -1;
    ev_prepare_init(&s->flush_watcher, before_sleep);
    s->flush_watcher.data = s;
    ev_prepare_start(s->loop, &s->flush_watcher);

    ev_signal_init(&s->sig_term, term_cb, SIGTERM);
    ev_signal_init(&s->sig_int, term_cb, SIGINT);
    ev_signal_init(&s->sig_hup, hup_cb, SIGHUP);
    s->sig_hup.data = s;
    ev_signal_init(&s->sig_usr1, usr1_cb, SIGUSR1);
    s->sig_usr1.data = s;
    ev_signal_start(s->loop, &s->sig_usr1);
    ev_signal_start(s->loop, &s->sig_term);
    ev_signal_start(s->loop, &s->sig_int);
    ev_signal_start(s->loop, &s->sig_hup);
    return 0;
}

int server_start(struct server *s, char *err, size_t errlen)
{
    if (store_open(&s->eng, &cmd_store_sink, store_notify, s, err, errlen) != 0)
        return -1;
    if (recur_apply_config(&s->eng, err, errlen) != 0) /* after the store: they are stored */
        return -1;
    if (flow_apply_config(&s->eng, err, errlen) != 0) /* --limit: after the store too */
        return -1;
    log_notice("spurd listening on port %d", s->port);
    if (s->http != NULL)
        log_notice("spurd serving HTTP on port %d", s->http_port);
    return 0;
}

int server_write_port_file(struct server *s, char *err, size_t errlen)
{
    const struct config *cfg = s->cfg;
    if (cfg->http_port_file != NULL && s->http != NULL) { /* before the port file: the sign */
        char text[32];
        snprintf(text, sizeof text, "%d\n", s->http_port);
        if (file_write_atomic(cfg->http_port_file, text) != 0) {
            snprintf(err, errlen, "cannot write --http-port-file %s: %s", cfg->http_port_file,
                     strerror(errno));
            return -1;
        }
    }
    if (cfg->port_file != NULL) {
        char text[32];
        snprintf(text, sizeof text, "%d\n", s->port);
        if (file_write_atomic(cfg->port_file, text) != 0) {
            snprintf(err, errlen, "cannot write --port-file %s: %s", cfg->port_file,
                     strerror(errno));
            return -1;
        }
    }
    return 0;
}

int server_run(struct server *s)
{
    double wd = notify_watchdog_interval();
    if (wd > 0) {
        ev_timer_init(&s->watchdog_timer, watchdog_cb, wd, wd);
        ev_timer_start(s->loop, &s->watchdog_timer);
        ev_unref(s->loop); /* the watchdog alone does not keep the loop running */
    }
    tell_ready(s);
    ev_run(s->loop, 0);
    if (ev_is_active(&s->watchdog_timer)) {
        ev_ref(s->loop);
        ev_timer_stop(s->loop, &s->watchdog_timer);
    }
    const struct engine *e = &s->eng;
    log_notice("buffers: peak %zu bytes held (--max-buffer-memory %zu); %llu connections shed "
               "holding %llu bytes; %llu unsent WORK_STATUS replaced",
               e->buffered_peak, s->cfg->max_buffer_memory, (unsigned long long)e->stats.shed,
               (unsigned long long)e->stats.shed_bytes,
               (unsigned long long)e->stats.status_coalesced);
    return s->exit_code;
}

void server_destroy(struct server *s)
{
    if (s->loop == NULL)
        return;
    /* the store first: what finished before the stop is written now, and the teardown below
     * (workers lost, jobs freed) is not a failure of any job, so it must not delete stored ones */
    store_close(&s->eng);
    ev_timer_stop(s->loop, &s->store_timer);
    if (s->http != NULL) { /* every HTTP request leaves the engine before the engine goes */
        http_ev_stop(&s->http_ev);
        http_destroy(s->http);
        s->http = NULL;
    }
    conn_ctx_destroy(&s->conns); /* every connection, then the shared buffer */
    destroy_transports(s);
    close_listeners(s);
    ev_timer_stop(s->loop, &s->shutdown_timer);
    /* only the socket this process bound, and only if it is still there (not replaced) */
    if (s->unix_bound && listen_unix_remove(s->cfg->unix_path, &s->unix_id) != 0)
        log_notice("unix socket %s was removed or replaced; left alone", s->cfg->unix_path);
    s->unix_bound = 0;
    ev_timer_stop(s->loop, &s->resume_timer);
    ev_timer_stop(s->loop, &s->job_timer);
    ev_idle_stop(s->loop, &s->listing_idle);
    ev_idle_stop(s->loop, &s->lazy_idle);
    ev_timer_stop(s->loop, &s->lazy_timer);
    ev_idle_stop(s->loop, &s->spin_idle);
    if (s->loadavg_fd >= 0)
        close(s->loadavg_fd);
    s->loadavg_fd = -1;
    if (s->spin.max > 0)
        log_info("busy poll: %lu spins, %lu found input; calmed %lu times (preempted)",
                 s->spin.spins, s->spin.hits, s->spin.preemptions);
    ev_timer_stop(s->loop, &s->idle_timer);
    ev_prepare_stop(s->loop, &s->flush_watcher);
    ev_signal_stop(s->loop, &s->sig_term);
    ev_signal_stop(s->loop, &s->sig_int);
    ev_signal_stop(s->loop, &s->sig_hup);
    ev_signal_stop(s->loop, &s->sig_usr1);
    ev_async_stop(s->loop, &s->store_async);
    engine_destroy(&s->eng); /* (and the features, through engine_ext.destroy) */
    acl_free(s->eng.acl);
    s->eng.acl = NULL;
    ev_loop_destroy(s->loop);
    s->loop = NULL;
}
