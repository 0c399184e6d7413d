/* SPDX-License-Identifier: BSD-3-Clause */
/* http_mhd: the HTTP front-end's libmicrohttpd glue (http_mhd.h): the daemon in external-polling
 * epoll mode (its watchers on the loop are http_ev.c's), connection deadlines, the checks of a request's head,
 * queueing answers, the disconnect watch. The routes and requests are http.c's. */
#include "http_mhd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "http_mhd.h"

#define GONE_EVENTS 64 /* disconnect notices handled per http_run */

/* struct hconn is one HTTP connection's deadline for its current request
 * (--http-request-timeout): armed when the request begins (the connection is accepted, or the
 * first byte of a kept-alive connection's next request arrives), disarmed once the request line,
 * headers and body are all in (it is answered or waits on its job). MHD's socket context. */
struct hconn {
    struct list_node node;     /* on h->slow while armed */
    struct http *h;            /* owner */
    int fd;                    /* the socket (MHD's: only watched and shut down here) */
    double deadline;           /* CLOCK_MONOTONIC second by which the request must be in */
    char ip[48];               /* the client's address, for the log */
    unsigned armed : 1;        /* node is linked */
    unsigned watched : 1;      /* fd is in h->gone_fd, for the next request's first byte */
    unsigned expired : 1;      /* shut down by the deadline: MHD closes it */
};

struct log_limit http_log_limit = {1.0, 0, 0, 0, 0};
static struct log_limit slow_limit = {1.0, 0, 0, 0, 0}; /* --http-request-timeout closes */

/* ------------------------------------------------------------ request deadlines */

/* HCONN_TAG marks an hconn in h->gone_fd's event data (a req is untagged; both are aligned). */
#define HCONN_TAG 1u

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void http_client_ip(struct MHD_Connection *mc, char *ip, size_t len)
{
    snprintf(ip, len, "-");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, (socklen_t)len);
}

static struct hconn *hconn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

/* hconn_arm starts c's deadline, unless it runs already (or the option is 0). */
static void hconn_arm(struct hconn *c)
{
    double t = c->h->cfg->http_request_timeout;
    if (c->armed || c->expired || t <= 0)
        return;
    c->deadline = mono_now() + t;
    c->armed = 1;
    list_push_back(&c->h->slow, &c->node);
}

static void hconn_disarm(struct hconn *c)
{
    if (!c->armed)
        return;
    c->armed = 0;
    list_del(&c->node);
}

/* hconn_watch waits for the first byte of the kept-alive connection's next request, which
 * starts its deadline (check_gone). */
static void hconn_watch(struct hconn *c)
{
    if (c->watched || c->expired || c->fd < 0 || c->h->cfg->http_request_timeout <= 0)
        return;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = (uint64_t)(uintptr_t)c | HCONN_TAG;
    if (epoll_ctl(c->h->gone_fd, EPOLL_CTL_ADD, c->fd, &ev) == 0)
        c->watched = 1;
    else
        hconn_arm(c); /* cannot watch: the deadline runs from now */
}

static void hconn_unwatch(struct hconn *c)
{
    if (!c->watched)
        return;
    c->watched = 0;
    epoll_ctl(c->h->gone_fd, EPOLL_CTL_DEL, c->fd, NULL);
}

void http_request_in(struct MHD_Connection *mc)
{
    struct hconn *c = hconn_of(mc);
    if (c != NULL)
        hconn_disarm(c);
}

void http_request_over(struct MHD_Connection *mc)
{
    struct hconn *c = hconn_of(mc);
    if (c != NULL) { /* a kept-alive connection's next request starts with its first byte */
        hconn_disarm(c);
        hconn_watch(c);
    }
}

/* on_connection is MHD's notice of a connection starting (its deadline runs from the accept)
 * and closing. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        struct hconn *c = calloc(1, sizeof *c);
        if (c == NULL)
            return; /* no deadline for this one: --http-idle-timeout still applies */
        c->h = h;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = ci != NULL ? ci->connect_fd : -1;
        http_client_ip(mc, c->ip, sizeof c->ip);
        hconn_arm(c);
        *socket_context = c;
        return;
    }
    struct hconn *c = *socket_context;
    if (c == NULL)
        return;
    hconn_disarm(c);
    hconn_unwatch(c);
    free(c);
    *socket_context = NULL;
}

/* sweep_slow shuts down the connections whose request is not in by its deadline; MHD then
 * reads the end of the stream and closes them (on_completed, on_connection). */
static void sweep_slow(struct http *h)
{
    if (list_empty(&h->slow))
        return;
    double now = mono_now();
    while (!list_empty(&h->slow)) {
        struct hconn *c = container_of(list_first(&h->slow), struct hconn, node);
        if (c->deadline > now)
            break;
        hconn_disarm(c);
        hconn_unwatch(c);
        c->expired = 1;
        h->eng->stats.http_request_timeouts++;
        log_limited(&slow_limit, LOG_WARNING, __FILE__, __LINE__,
                    "closing HTTP connection fd %d (%s): its request was not in after %gs "
                    "(--http-request-timeout)",
                    c->fd, c->ip, h->cfg->http_request_timeout);
        if (c->fd >= 0)
            shutdown(c->fd, SHUT_RDWR);
    }
}

/* ------------------------------------------------------------ answers */

enum MHD_Result http_answer(struct MHD_Connection *mc, unsigned status, char *body, size_t len,
                            const char *type, const char *handle, const char *command,
                            const char *allow)
{
    http_request_in(mc);
    struct MHD_Response *rsp;
    if (body != NULL)
        rsp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    else
        rsp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (rsp == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, type ? type : HTTP_TEXT_PLAIN);
    if (handle != NULL && handle[0] != '\0')
        MHD_add_response_header(rsp, "X-Gearman-Job-Handle", handle);
    if (command != NULL)
        MHD_add_response_header(rsp, "X-Gearman-Command", command);
    if (allow != NULL)
        MHD_add_response_header(rsp, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result r = MHD_queue_response(mc, status, rsp);
    MHD_destroy_response(rsp);
    return r;
}

enum MHD_Result http_answer_text(struct MHD_Connection *mc, unsigned status, const char *allow,
                                 const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof text)
        n = (int)sizeof text - 1;
    char *body = NULL;
    if (n > 0) {
        body = malloc((size_t)n);
        if (body == NULL)
            return MHD_NO;
        memcpy(body, text, (size_t)n);
    }
    return http_answer(mc, status, body, (size_t)n, NULL, NULL, NULL, allow);
}

/* refuse_close queues status with text and closes the connection after it: for a request
 * whose framing or head cannot be trusted, so nothing after it on the connection is read. */
static enum MHD_Result refuse_close(struct MHD_Connection *mc, unsigned status, const char *text)
{
    http_request_in(mc);
    struct MHD_Response *rsp = MHD_create_response_from_buffer(strlen(text), (void *)text,
                                                               MHD_RESPMEM_PERSISTENT);
    if (rsp == NULL)
        return MHD_NO;
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, HTTP_TEXT_PLAIN);
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(mc, status, rsp);
    MHD_destroy_response(rsp);
    return r;
}

/* ------------------------------------------------------------ request heads */

char http_nul_marker;

int http_path_has_nul(const char *uri)
{
    for (const char *t = uri; *t != '\0' && *t != '?'; t++)
        if (t[0] == '%' && t[1] == '0' && t[2] == '0')
            return 1;
    return 0;
}

/* on_uri is MHD's call as soon as a request line is in, with the URI as sent (not yet
 * decoded): a kept-alive connection's request whose first byte came with the previous one
 * starts its deadline here; a path with %00 is marked for a 400 (the decoded path would be cut
 * at the NUL). Returns the request's first context. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
    (void)cls;
    struct hconn *c = hconn_of(mc);
    if (c != NULL) {
        hconn_unwatch(c);
        hconn_arm(c);
    }
    return http_path_has_nul(uri) ? &http_nul_marker : NULL;
}

/* struct framing is what count_framing found in a request's headers. */
struct framing {
    const char *length; /* the first Content-Length value */
    const char *bad;    /* why the body's length cannot be trusted, or NULL */
    int encodings;      /* Transfer-Encoding headers */
};

/* is_token reports whether key is an HTTP field name (RFC 9110 token): no space before the
 * colon, no control byte. A proxy may read "Transfer-Encoding :" differently. */
static int is_token(const char *key)
{
    if (*key == '\0')
        return 0;
    for (const unsigned char *t = (const unsigned char *)key; *t != '\0'; t++)
        if (*t <= 0x20 || *t >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *t) != NULL)
            return 0;
    return 1;
}

/* count_framing looks at one request header for head_refused (MHD_KeyValueIterator). */
static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    struct framing *f = cls;
    if (value == NULL)
        value = "";
    if (!is_token(key)) {
        f->bad = "a header name with a space or a control byte\n";
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (value[0] == '\0' || strspn(value, "0123456789") != strlen(value))
            f->bad = "a Content-Length that is not a number\n";
        else if (f->length != NULL && strcmp(f->length, value) != 0)
            f->bad = "Content-Length headers that differ\n";
        f->length = value;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->encodings++;
        if (strcasecmp(value, "chunked") != 0)
            f->bad = "a Transfer-Encoding other than chunked\n";
    }
    return MHD_YES;
}

/* http_head_refused: see http_mhd.h. The checks: a request line and headers over
 * --http-max-header-size (libmicrohttpd's pool is larger), and an ambiguous body length
 * (RFC 9112 section 6.3: Content-Length headers that differ, one with Transfer-Encoding, a
 * Transfer-Encoding other than one "chunked", a Content-Length that is not digits, a header
 * name with a space before the colon; a proxy in front may frame the body the other way, so the
 * connection is closed). */
int http_head_refused(struct http *h, struct MHD_Connection *mc, int nul, enum MHD_Result *rc)
{
    if (nul) {
        *rc = refuse_close(mc, MHD_HTTP_BAD_REQUEST, "a NUL byte (%00) in the path\n");
        return 1;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci != NULL && ci->header_size > h->cfg->http_max_header) {
        *rc = refuse_close(mc, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
                           "the request line and headers are larger than "
                           "--http-max-header-size\n");
        return 1;
    }
    struct framing f = {NULL, NULL, 0};
    MHD_get_connection_values(mc, MHD_HEADER_KIND, count_framing, &f);
    if (f.bad == NULL && f.encodings > 1)
        f.bad = "more than one Transfer-Encoding\n";
    if (f.bad == NULL && f.length != NULL && f.encodings > 0)
        f.bad = "Content-Length with Transfer-Encoding\n";
    if (f.bad != NULL) {
        *rc = refuse_close(mc, MHD_HTTP_BAD_REQUEST, f.bad);
        return 1;
    }
    return 0;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char text[300];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = '\0';
    log_limited(&http_log_limit, LOG_DEBUG, __FILE__, __LINE__, "libmicrohttpd: %s", text);
}

void http_kick(struct http *h)
{
    if (h->kick != NULL)
        h->kick(h->kick_arg);
}

void http_fds(const struct http *h, int *mhd_fd, int *gone_fd)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    *mhd_fd = di != NULL ? di->epoll_fd : -1;
    *gone_fd = h->gone_fd;
}

/* ------------------------------------------------------------ the shell's calls */

int http_mhd_start(struct http *h, MHD_AccessHandlerCallback on_request,
                   MHD_RequestCompletedCallback on_completed, char *err, size_t errlen)
{
    const struct config *cfg = h->cfg;
    list_node_init(&h->slow);
    h->gone_fd = epoll_create1(EPOLL_CLOEXEC);
    if (h->gone_fd < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        return -1;
    }
    /* the pool holds the request line and headers plus MHD's read and write buffers */
    size_t pool = 2 * cfg->http_max_header + 8192;
    h->d = MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                                MHD_USE_ERROR_LOG,
                            0, NULL, NULL, on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, /* first: all messages */
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->http_max_connections,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
                            MHD_OPTION_CONNECTION_TIMEOUT, cfg->http_idle_timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
                            MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(err, errlen, "cannot start the HTTP engine (libmicrohttpd)");
        close(h->gone_fd);
        return -1;
    }
    return 0;
}

void http_mhd_stop(struct http *h)
{
    /* a few non-blocking rounds write the answers to clients that read them */
    for (int i = 0; i < 4; i++)
        MHD_run(h->d);
    MHD_stop_daemon(h->d); /* frees the requests (their completed callback) */
    close(h->gone_fd);
}

int http_add(struct http *h, int fd, const struct sockaddr *sa, socklen_t salen)
{
    if (MHD_add_connection(h->d, fd, sa, salen) != MHD_YES) { /* MHD closed fd */
        log_limited(&http_log_limit, LOG_WARNING, __FILE__, __LINE__,
                    "HTTP connection refused: %s (--http-max-connections %zu)", strerror(errno),
                    h->cfg->http_max_connections);
        return -1;
    }
    http_kick(h); /* libmicrohttpd takes the new connection in its next run */
    return 0;
}

/* check_gone looks at the sockets of suspended requests that reported a hang-up, and of
 * kept-alive connections whose next request began. */
static void check_gone(struct http *h)
{
    struct epoll_event ev[GONE_EVENTS];
    int n = epoll_wait(h->gone_fd, ev, GONE_EVENTS, 0);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 & HCONN_TAG) { /* a kept-alive connection's next request began */
            struct hconn *c = (struct hconn *)(uintptr_t)(ev[i].data.u64 & ~(uint64_t)HCONN_TAG);
            hconn_unwatch(c);
            hconn_arm(c);
            continue;
        }
        h->req_gone(h, (void *)(uintptr_t)ev[i].data.u64);
    }
}

void http_run(struct http *h)
{
    check_gone(h);
    sweep_slow(h);
    MHD_run(h->d);
}

long long http_timeout_ms(struct http *h)
{
    MHD_UNSIGNED_LONG_LONG t;
    long long ms = -1;
    if (MHD_get_timeout(h->d, &t) == MHD_YES)
        ms = t > (MHD_UNSIGNED_LONG_LONG)LLONG_MAX ? LLONG_MAX : (long long)t;
    if (!list_empty(&h->slow)) { /* the first request deadline */
        double left = container_of(list_first(&h->slow), struct hconn, node)->deadline -
                      mono_now();
        long long d = left <= 0 ? 0 : (long long)(left * 1000.0) + 1;
        if (ms < 0 || d < ms)
            ms = d;
    }
    return ms;
}
