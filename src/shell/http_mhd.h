/* SPDX-License-Identifier: BSD-3-Clause */
/* http_mhd: the lower half of the HTTP front-end (the shell reaches it through http.h, which
 * includes it). http_mhd.c is the libmicrohttpd glue: the daemon in external-polling
 * epoll mode, connection deadlines (--http-request-timeout), the checks
 * of a request's head, queueing answers, the disconnect watch. http.c, the API above it, is
 * the GET routes and the requests that submit jobs or admin lines as internal clients of the
 * engine; it hands its callbacks to http_mhd_start and sets struct http's req_gone, so this
 * module calls nothing of http.c. */
#ifndef SPUR_HTTP_MHD_H
#define SPUR_HTTP_MHD_H

#include <microhttpd.h>
#include <stddef.h>
#include <sys/socket.h>

#include "list.h"
#include "log.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct engine;

#define HTTP_TEXT_PLAIN "text/plain; charset=utf-8"

struct http;
struct dash;

/* http_gone_fn handles a disconnect reported on gone_fd for a waiting request (the event's
 * data as the API registered it). */
typedef void (*http_gone_fn)(struct http *h, void *req);

/* struct http is the HTTP engine: the MHD daemon and the live requests. */
struct http {
    struct engine *eng;        /* the engine requests submit to (borrowed) */
    const struct config *cfg;  /* limits (borrowed) */
    struct MHD_Daemon *d;      /* libmicrohttpd, external polling through its epoll fd */
    int gone_fd;               /* epoll: sockets of suspended requests, for EOF (EPOLLRDHUP) */
    size_t max_body;           /* --http-max-body (or --max-packet-size) */
    struct list_node dirty;    /* requests with replies or a close to look at (req.dnode) */
    struct list_node all;      /* every live submission request (req.anode) */
    struct list_node slow;     /* connections whose request deadline runs (hconn.node), in
                                  deadline order: one --http-request-timeout for all */
    size_t nreqs;              /* entries in all */
    size_t resumed;            /* requests resumed by the last http_flush */
    int stopping;              /* http_destroy runs: new requests are answered 503 */
    http_gone_fn req_gone;     /* the API's handler of a waiting request's disconnect */
    void (*kick)(void *arg);   /* libmicrohttpd has work now (a connection added, answers
                                  resumed): whoever runs it (http_ev.c) runs it soon; NULL when
                                  the caller drives it by hand (unit tests, the fuzzer) */
    void *kick_arg;            /* kick's argument */
    struct dash *dash;         /* the web dashboard (dash.h): GET / and /dash/..., its history */
};

/* http_log_limit rate-limits the front-end's log lines about clients. */
extern struct log_limit http_log_limit;

/* http_nul_marker is the request context (set when the request line is in) of a request whose
 * path has %00: http_head_refused answers it 400. */
extern char http_nul_marker;

/* http_answer queues status with body (taken over: malloc'd, freed by MHD) of type (NULL:
 * text/plain) and the optional X-Gearman-Job-Handle (NULL or ""), X-Gearman-Command and Allow
 * headers; the request is in (its deadline stops). Returns MHD's result. */
enum MHD_Result http_answer(struct MHD_Connection *mc, unsigned status, char *body, size_t len,
                            const char *type, const char *handle, const char *command,
                            const char *allow);

/* http_answer_text queues status with a short text body formatted from fmt (at most 511
 * bytes). */
enum MHD_Result http_answer_text(struct MHD_Connection *mc, unsigned status, const char *allow,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* http_request_in notes that mc's request is all in (answered, or waiting on its job): its
 * deadline stops. */
void http_request_in(struct MHD_Connection *mc);

/* http_request_over notes that mc's request is over: a kept-alive connection's deadline
 * restarts with the first byte of its next request. */
void http_request_over(struct MHD_Connection *mc);

/* http_client_ip writes mc's client address into ip ("-" when unknown). */
void http_client_ip(struct MHD_Connection *mc, char *ip, size_t len);

/* http_head_refused checks a request's head before anything acts on it (nul: its path has
 * %00; an over-long head; an ambiguous body length). Returns 1 after queueing the refusal
 * (*rc), which closes the connection, else 0. */
int http_head_refused(struct http *h, struct MHD_Connection *mc, int nul, enum MHD_Result *rc);

/* http_mhd_start starts h's daemon (h's eng, cfg set; its lists initialised) with the API's
 * access handler and completion notice (called with h), and the disconnect watch. Returns 0,
 * or -1 with a message in err. */
int http_mhd_start(struct http *h, MHD_AccessHandlerCallback on_request,
                   MHD_RequestCompletedCallback on_completed, char *err, size_t errlen);

/* http_mhd_stop stops the watchers, writes what it can in a few non-blocking rounds, stops the
 * daemon (each request's completion notice runs) and closes the disconnect watch. The API has
 * answered and resumed every request first. */
void http_mhd_stop(struct http *h);

/* http_fds gives the two descriptors to watch for reading: libmicrohttpd's epoll fd, and the
 * epoll fd on which the sockets of requests waiting on a job report a disconnect. */
void http_fds(const struct http *h, int *mhd_fd, int *gone_fd);

/* http_kick tells whoever runs h (its kick) that libmicrohttpd has work now. */
void http_kick(struct http *h);

/* http_add hands an accepted socket (non-blocking) to the HTTP engine, which owns it from now on
 * (closes it also on failure), and kicks it. Returns 0, or -1 (at --http-max-connections, out
 * of memory). */
int http_add(struct http *h, int fd, const struct sockaddr *sa, socklen_t salen);

/* http_run does the HTTP work that is due: reads, parses, answers, writes, time-outs, and
 * notices requests whose client went away while they waited on a job. Never blocks. */
void http_run(struct http *h);

/* http_timeout_ms returns within how many milliseconds http_run must be called even if no
 * descriptor is readable (0: at once), or -1 when only the descriptors matter. */
long long http_timeout_ms(struct http *h);

/* http_path_has_nul reports whether the path of uri, a request target as sent (not yet
 * URL-decoded), has a %00: decoded, it would cut the function name at the NUL. */
int http_path_has_nul(const char *uri);

#ifdef __cplusplus
}
#endif
#endif
