/* SPDX-License-Identifier: BSD-3-Clause */
/* core: buffers, the reply FIFO, server lists, error codes and the small value types of the API.
 * Pure: no sockets. */
#include "lgc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- byte buffer */

char *lgc_buf_reserve(struct lgc_buf *b, size_t n)
{
    if (b->start == b->end)
        b->start = b->end = 0;
    if (b->cap - b->end >= n)
        return b->data + b->end;
    size_t pending = b->end - b->start;
    if (b->start > 0 && b->cap - pending >= n) {
        memmove(b->data, b->data + b->start, pending);
        b->start = 0;
        b->end = pending;
        return b->data + b->end;
    }
    if (n > SIZE_MAX / 2 - pending)
        return NULL;
    size_t want = pending + n;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < want)
        cap *= 2;
    char *p = malloc(cap);
    if (p == NULL)
        return NULL;
    if (pending)
        memcpy(p, b->data + b->start, pending);
    free(b->data);
    b->data = p;
    b->cap = cap;
    b->start = 0;
    b->end = pending;
    return b->data + b->end;
}

void lgc_buf_consume(struct lgc_buf *b, size_t n)
{
    if (n >= b->end - b->start) {
        b->start = b->end = 0;
        return;
    }
    b->start += n;
}

void lgc_buf_clear(struct lgc_buf *b)
{
    b->start = b->end = 0;
    if (b->cap > (1u << 20)) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
}

void lgc_buf_free(struct lgc_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

int lgc_buf_append_packet(struct lgc_buf *b, uint32_t cmd, const struct proto_arg *args, int nargs)
{
    size_t body = proto_body_size(args, nargs);
    if (body == SIZE_MAX)
        return -1;
    char *p = lgc_buf_reserve(b, PROTO_HEADER_SIZE + body);
    if (p == NULL)
        return -1;
    b->end += proto_encode((unsigned char *)p, PROTO_MAGIC_REQ, cmd, args, nargs);
    return 0;
}

/* ---------------------------------------------------------------- reply FIFO */

int lgc_fifo_push(struct lgc_fifo *f, enum lgc_pend_kind kind, struct lgc_task *task)
{
    if (f->len == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct lgc_pend *items = malloc(cap * sizeof *items);
        if (items == NULL)
            return -1;
        for (size_t i = 0; i < f->len; i++)
            items[i] = f->items[(f->head + i) % f->cap];
        free(f->items);
        f->items = items;
        f->cap = cap;
        f->head = 0;
    }
    struct lgc_pend *slot = &f->items[(f->head + f->len) % f->cap];
    slot->kind = kind;
    slot->task = task;
    f->len++;
    return 0;
}

struct lgc_pend *lgc_fifo_peek(struct lgc_fifo *f)
{
    return f->len ? &f->items[f->head] : NULL;
}

void lgc_fifo_pop(struct lgc_fifo *f)
{
    if (f->len == 0)
        return;
    f->head = (f->head + 1) % f->cap;
    f->len--;
}

void lgc_fifo_forget(struct lgc_fifo *f, const struct lgc_task *task)
{
    for (size_t i = 0; i < f->len; i++) {
        struct lgc_pend *p = &f->items[(f->head + i) % f->cap];
        if (p->task == task)
            p->task = NULL;
    }
}

void lgc_fifo_clear(struct lgc_fifo *f)
{
    f->head = 0;
    f->len = 0;
}

void lgc_fifo_free(struct lgc_fifo *f)
{
    free(f->items);
    memset(f, 0, sizeof *f);
}

/* ---------------------------------------------------------------- errors and shared state */

gearman_return_t lgc_set_error(struct lgc_universal *u, gearman_return_t code, const char *fmt, ...)
{
    u->error_code = code;
    u->last_errno = 0;
    int n = snprintf(u->error, sizeof u->error, "%s: ", gearman_strerror(code));
    if (n < 0 || (size_t)n >= sizeof u->error)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->error + n, sizeof u->error - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

gearman_return_t lgc_set_timeout(struct lgc_universal *u, unsigned nservers)
{
    u->error_code = GEARMAN_TIMEOUT;
    u->last_errno = 0;
    /* The text libgearman 1.1's gearman_wait() gives, source location included. */
    snprintf(u->error, sizeof u->error,
             "gearman_wait(GEARMAN_TIMEOUT) timeout reached, %u servers were poll(), no servers "
             "were available, pipe:%s -> libgearman/universal.cc:346: pid(%ld)",
             nservers, u->is_worker ? "true" : "false", (long)getpid());
    return GEARMAN_TIMEOUT;
}

gearman_return_t lgc_set_errno(struct lgc_universal *u, gearman_return_t code, int err,
                               const char *what)
{
    lgc_set_error(u, code, "%s: %s", what, strerror(err));
    u->last_errno = err;
    return code;
}

void lgc_clear_error(struct lgc_universal *u)
{
    u->error_code = GEARMAN_SUCCESS;
    u->last_errno = 0;
    u->error[0] = '\0';
}

void lgc_universal_init(struct lgc_universal *u)
{
    memset(u, 0, sizeof *u);
    u->timeout = -1;
}

void lgc_remove_servers(struct lgc_universal *u)
{
    struct lgc_conn *c = u->conns;
    while (c != NULL) {
        struct lgc_conn *next = c->next;
        lgc_conn_close(c);
        lgc_buf_free(&c->in);
        lgc_buf_free(&c->out);
        lgc_fifo_free(&c->pend);
        free(c->host);
        free(c);
        c = next;
    }
    u->conns = NULL;
}

void lgc_universal_free(struct lgc_universal *u)
{
    lgc_remove_servers(u);
    lgc_tls_free(u);
    free(u->identifier);
    for (size_t i = 0; i < u->noptions; i++)
        free(u->options[i]);
    free(u->options);
    memset(u, 0, sizeof *u);
}

int lgc_universal_copy(struct lgc_universal *u, const struct lgc_universal *from)
{
    u->timeout = from->timeout;
    u->non_blocking = from->non_blocking;
    if (lgc_tls_copy(u, from) != 0)
        return -1;
    for (const struct lgc_conn *c = from->conns; c != NULL; c = c->next) {
        if (lgc_add_server(u, c->host, (in_port_t)atoi(c->port)) != GEARMAN_SUCCESS)
            return -1;
    }
    if (from->identifier != NULL &&
        lgc_set_identifier(u, from->identifier, from->identifier_len) != GEARMAN_SUCCESS)
        return -1;
    for (size_t i = 0; i < from->noptions; i++) {
        if (lgc_add_option(u, from->options[i], strlen(from->options[i])) != 0)
            return -1;
    }
    return 0;
}

gearman_return_t lgc_add_server(struct lgc_universal *u, const char *host, in_port_t port)
{
    struct lgc_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "adding a server");
    c->host = strdup(host != NULL && host[0] != '\0' ? host : GEARMAN_DEFAULT_TCP_HOST);
    if (c->host == NULL) {
        free(c);
        return lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "adding a server");
    }
    snprintf(c->port, sizeof c->port, "%u", port != 0 ? (unsigned)port : GEARMAN_DEFAULT_TCP_PORT);
    c->fd = -1;
    struct lgc_conn **tail = &u->conns;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = c;
    return GEARMAN_SUCCESS;
}

gearman_return_t lgc_parse_servers(const char *servers, lgc_server_fn fn, void *ctx)
{
    if (servers == NULL)
        return GEARMAN_SUCCESS;
    const char *p = servers;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        /* trim spaces around the entry */
        const char *a = p, *z = end;
        while (a < z && (*a == ' ' || *a == '\t'))
            a++;
        while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
            z--;
        if (a < z) {
            char host[1025];
            const char *host_end, *port_start = NULL;
            if (*a == '[') {
                const char *close = memchr(a, ']', (size_t)(z - a));
                if (close == NULL)
                    return GEARMAN_INVALID_ARGUMENT;
                host_end = close;
                a++;
                if (close + 1 < z) {
                    if (close[1] != ':')
                        return GEARMAN_INVALID_ARGUMENT;
                    port_start = close + 2;
                }
            } else {
                const char *colon = memchr(a, ':', (size_t)(z - a));
                host_end = colon ? colon : z;
                port_start = colon ? colon + 1 : NULL;
            }
            size_t hl = (size_t)(host_end - a);
            if (hl >= sizeof host)
                return GEARMAN_INVALID_ARGUMENT;
            memcpy(host, a, hl);
            host[hl] = '\0';
            unsigned long port = 0;
            if (port_start != NULL) {
                if (port_start == z)
                    return GEARMAN_INVALID_ARGUMENT;
                for (const char *q = port_start; q < z; q++) {
                    if (*q < '0' || *q > '9')
                        return GEARMAN_INVALID_ARGUMENT;
                    port = port * 10 + (unsigned long)(*q - '0');
                    if (port > 65535)
                        return GEARMAN_INVALID_ARGUMENT;
                }
            }
            gearman_return_t rc = fn(ctx, host, (in_port_t)port);
            if (rc != GEARMAN_SUCCESS)
                return rc;
        }
        p = *end == ',' ? end + 1 : end;
    }
    return GEARMAN_SUCCESS;
}

gearman_return_t lgc_set_identifier(struct lgc_universal *u, const char *id, size_t len)
{
    free(u->identifier);
    u->identifier = NULL;
    u->identifier_len = 0;
    if (id == NULL || len == 0)
        return GEARMAN_SUCCESS;
    if (len > GEARMAN_MAX_IDENTIFIER)
        return lgc_set_error(u, GEARMAN_ARGUMENT_TOO_LARGE, "identifier longer than %d bytes",
                             GEARMAN_MAX_IDENTIFIER);
    u->identifier = malloc(len + 1);
    if (u->identifier == NULL)
        return lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "identifier");
    memcpy(u->identifier, id, len);
    u->identifier[len] = '\0';
    u->identifier_len = len;
    return GEARMAN_SUCCESS;
}

int lgc_add_option(struct lgc_universal *u, const char *name, size_t len)
{
    for (size_t i = 0; i < u->noptions; i++) {
        if (strlen(u->options[i]) == len && memcmp(u->options[i], name, len) == 0)
            return 0;
    }
    char **opts = realloc(u->options, (u->noptions + 1) * sizeof *opts);
    if (opts == NULL)
        return -1;
    u->options = opts;
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, name, len);
    copy[len] = '\0';
    u->options[u->noptions++] = copy;
    return 0;
}

gearman_return_t lgc_return_from_server_code(const char *code, size_t len)
{
    if (len > 8 && strncmp(code, "GEARMAN_", 8) == 0) {
        code += 8;
        len -= 8;
    }
    for (int rc = GEARMAN_SUCCESS; rc < GEARMAN_MAX_RETURN; rc++) {
        const char *name = gearman_strerror((gearman_return_t)rc) + 8; /* skip "GEARMAN_" */
        if (strlen(name) == len && strncasecmp(name, code, len) == 0)
            return (gearman_return_t)rc;
    }
    return GEARMAN_SERVER_ERROR;
}

uint32_t lgc_submit_cmd(gearman_job_priority_t priority, bool background)
{
    switch (priority) {
    case GEARMAN_JOB_PRIORITY_HIGH:
        return background ? CMD_SUBMIT_JOB_HIGH_BG : CMD_SUBMIT_JOB_HIGH;
    case GEARMAN_JOB_PRIORITY_LOW:
        return background ? CMD_SUBMIT_JOB_LOW_BG : CMD_SUBMIT_JOB_LOW;
    case GEARMAN_JOB_PRIORITY_NORMAL:
    case GEARMAN_JOB_PRIORITY_MAX:
    default:
        return background ? CMD_SUBMIT_JOB_BG : CMD_SUBMIT_JOB;
    }
}

void lgc_make_uuid(char out[GEARMAN_MAX_UUID_SIZE + 1])
{
    unsigned char r[16];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        got += (size_t)n;
    }
    if (got < sizeof r) { /* no entropy source: time, pid and a counter still give uniqueness */
        static unsigned counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t mix[2] = {(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                           ((uint64_t)getpid() << 32) | ++counter};
        memcpy(r, mix, sizeof r);
    }
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[r[i] >> 4];
        *o++ = hex[r[i] & 15];
    }
    *o = '\0';
}

uint32_t lgc_parse_u32(const char *s, size_t len)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > UINT32_MAX)
            return UINT32_MAX;
    }
    return (uint32_t)v;
}

/* ---------------------------------------------------------------- results */

int lgc_result_append(struct gearman_result_st *r, const void *data, size_t size)
{
    if (size == 0)
        return 0;
    if (size >= SIZE_MAX - r->size - 1)
        return -1;
    if (r->size + size + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 64;
        while (cap < r->size + size + 1)
            cap *= 2;
        char *p = realloc(r->value, cap);
        if (p == NULL)
            return -1;
        r->value = p;
        r->cap = cap;
    }
    memcpy(r->value + r->size, data, size);
    r->size += size;
    r->value[r->size] = '\0';
    return 0;
}

void lgc_result_free(struct gearman_result_st *r)
{
    free(r->value);
    memset(r, 0, sizeof *r);
}

const char *gearman_result_value(const gearman_result_st *result)
{
    return result != NULL ? result->value : NULL;
}

size_t gearman_result_size(const gearman_result_st *result)
{
    return result != NULL ? result->size : 0;
}

gearman_string_t gearman_result_string(const gearman_result_st *result)
{
    gearman_string_t s = {NULL, 0};
    if (result != NULL) {
        s.c_str = result->value;
        s.size = result->size;
    }
    return s;
}

bool gearman_result_is_null(const gearman_result_st *result)
{
    return result == NULL || result->size == 0;
}

int64_t gearman_result_integer(const gearman_result_st *result)
{
    if (result == NULL || result->value == NULL)
        return 0;
    return (int64_t)strtoll(result->value, NULL, 10);
}

bool gearman_result_boolean(const gearman_result_st *result)
{
    if (result == NULL || result->size == 0)
        return false;
    return !(result->size == 1 && result->value[0] == '0');
}

/* ---------------------------------------------------------------- small value types */

gearman_task_attr_t gearman_task_attr_init(gearman_job_priority_t priority)
{
    gearman_task_attr_t a;
    memset(&a, 0, sizeof a);
    a.kind = GEARMAN_TASK_ATTR_FOREGROUND;
    a.priority = priority;
    return a;
}

gearman_task_attr_t gearman_task_attr_init_epoch(time_t epoch, gearman_job_priority_t priority)
{
    gearman_task_attr_t a;
    memset(&a, 0, sizeof a);
    a.kind = GEARMAN_TASK_ATTR_EPOCH;
    a.priority = priority;
    a.options.epoch.value = epoch;
    return a;
}

gearman_task_attr_t gearman_task_attr_init_background(gearman_job_priority_t priority)
{
    gearman_task_attr_t a;
    memset(&a, 0, sizeof a);
    a.kind = GEARMAN_TASK_ATTR_BACKGROUND;
    a.priority = priority;
    return a;
}

gearman_argument_t gearman_argument_make(const char *name, const size_t name_length,
                                         const char *value, const size_t value_size)
{
    gearman_argument_t arg;
    arg.name.c_str = name;
    arg.name.size = name_length;
    arg.value.c_str = value;
    arg.value.size = value_size;
    return arg;
}

gearman_return_t gearman_status_return(const gearman_status_t status)
{
    return status.status_.mesg_.result_rc;
}

bool gearman_status_is_known(const gearman_status_t status)
{
    return status.status_.mesg_.is_known;
}

bool gearman_status_is_running(const gearman_status_t status)
{
    return status.status_.mesg_.is_running;
}

uint32_t gearman_status_numerator(const gearman_status_t status)
{
    return status.status_.mesg_.numerator;
}

uint32_t gearman_status_denominator(const gearman_status_t status)
{
    return status.status_.mesg_.denominator;
}

gearman_function_t gearman_function_create(gearman_function_fn func)
{
    return gearman_function_create_v2(func);
}

gearman_function_t gearman_function_create_v1(gearman_worker_fn func)
{
    gearman_function_t f;
    memset(&f, 0, sizeof f);
    f.kind = GEARMAN_WORKER_FUNCTION_V1;
    f.callback.function_v1.func = func;
    return f;
}

gearman_function_t gearman_function_create_v2(gearman_function_fn func)
{
    gearman_function_t f;
    memset(&f, 0, sizeof f);
    f.kind = GEARMAN_WORKER_FUNCTION_V2;
    f.callback.function_v2.func = func;
    return f;
}

/* ---------------------------------------------------------------- names */

const char *gearman_strerror(gearman_return_t rc)
{
    static const char *const names[GEARMAN_MAX_RETURN] = {
        [GEARMAN_SUCCESS] = "GEARMAN_SUCCESS",
        [GEARMAN_IO_WAIT] = "GEARMAN_IO_WAIT",
        [GEARMAN_SHUTDOWN] = "GEARMAN_SHUTDOWN",
        [GEARMAN_SHUTDOWN_GRACEFUL] = "GEARMAN_SHUTDOWN_GRACEFUL",
        [GEARMAN_ERRNO] = "GEARMAN_ERRNO",
        [GEARMAN_EVENT] = "GEARMAN_EVENT",
        [GEARMAN_TOO_MANY_ARGS] = "GEARMAN_TOO_MANY_ARGS",
        [GEARMAN_NO_ACTIVE_FDS] = "GEARMAN_NO_ACTIVE_FDS",
        [GEARMAN_INVALID_MAGIC] = "GEARMAN_INVALID_MAGIC",
        [GEARMAN_INVALID_COMMAND] = "GEARMAN_INVALID_COMMAND",
        [GEARMAN_INVALID_PACKET] = "GEARMAN_INVALID_PACKET",
        [GEARMAN_UNEXPECTED_PACKET] = "GEARMAN_UNEXPECTED_PACKET",
        [GEARMAN_GETADDRINFO] = "GEARMAN_GETADDRINFO",
        [GEARMAN_NO_SERVERS] = "GEARMAN_NO_SERVERS",
        [GEARMAN_LOST_CONNECTION] = "GEARMAN_LOST_CONNECTION",
        [GEARMAN_MEMORY_ALLOCATION_FAILURE] = "GEARMAN_MEMORY_ALLOCATION_FAILURE",
        [GEARMAN_JOB_EXISTS] = "GEARMAN_JOB_EXISTS",
        [GEARMAN_JOB_QUEUE_FULL] = "GEARMAN_JOB_QUEUE_FULL",
        [GEARMAN_SERVER_ERROR] = "GEARMAN_SERVER_ERROR",
        [GEARMAN_WORK_ERROR] = "GEARMAN_WORK_ERROR",
        [GEARMAN_WORK_DATA] = "GEARMAN_WORK_DATA",
        [GEARMAN_WORK_WARNING] = "GEARMAN_WORK_WARNING",
        [GEARMAN_WORK_STATUS] = "GEARMAN_WORK_STATUS",
        [GEARMAN_WORK_EXCEPTION] = "GEARMAN_WORK_EXCEPTION",
        [GEARMAN_WORK_FAIL] = "GEARMAN_WORK_FAIL",
        [GEARMAN_NOT_CONNECTED] = "GEARMAN_NOT_CONNECTED",
        [GEARMAN_COULD_NOT_CONNECT] = "GEARMAN_COULD_NOT_CONNECT",
        [GEARMAN_SEND_IN_PROGRESS] = "GEARMAN_SEND_IN_PROGRESS",
        [GEARMAN_RECV_IN_PROGRESS] = "GEARMAN_RECV_IN_PROGRESS",
        [GEARMAN_NOT_FLUSHING] = "GEARMAN_NOT_FLUSHING",
        [GEARMAN_DATA_TOO_LARGE] = "GEARMAN_DATA_TOO_LARGE",
        [GEARMAN_INVALID_FUNCTION_NAME] = "GEARMAN_INVALID_FUNCTION_NAME",
        [GEARMAN_INVALID_WORKER_FUNCTION] = "GEARMAN_INVALID_WORKER_FUNCTION",
        [GEARMAN_NO_REGISTERED_FUNCTION] = "GEARMAN_NO_REGISTERED_FUNCTION",
        [GEARMAN_NO_REGISTERED_FUNCTIONS] = "GEARMAN_NO_REGISTERED_FUNCTIONS",
        [GEARMAN_NO_JOBS] = "GEARMAN_NO_JOBS",
        [GEARMAN_ECHO_DATA_CORRUPTION] = "GEARMAN_ECHO_DATA_CORRUPTION",
        [GEARMAN_NEED_WORKLOAD_FN] = "GEARMAN_NEED_WORKLOAD_FN",
        [GEARMAN_PAUSE] = "GEARMAN_PAUSE",
        [GEARMAN_UNKNOWN_STATE] = "GEARMAN_UNKNOWN_STATE",
        [GEARMAN_PTHREAD] = "GEARMAN_PTHREAD",
        [GEARMAN_PIPE_EOF] = "GEARMAN_PIPE_EOF",
        [GEARMAN_QUEUE_ERROR] = "GEARMAN_QUEUE_ERROR",
        [GEARMAN_FLUSH_DATA] = "GEARMAN_FLUSH_DATA",
        [GEARMAN_SEND_BUFFER_TOO_SMALL] = "GEARMAN_SEND_BUFFER_TOO_SMALL",
        [GEARMAN_IGNORE_PACKET] = "GEARMAN_IGNORE_PACKET",
        [GEARMAN_UNKNOWN_OPTION] = "GEARMAN_UNKNOWN_OPTION",
        [GEARMAN_TIMEOUT] = "GEARMAN_TIMEOUT",
        [GEARMAN_ARGUMENT_TOO_LARGE] = "GEARMAN_ARGUMENT_TOO_LARGE",
        [GEARMAN_INVALID_ARGUMENT] = "GEARMAN_INVALID_ARGUMENT",
        [GEARMAN_IN_PROGRESS] = "GEARMAN_IN_PROGRESS",
        [GEARMAN_INVALID_SERVER_OPTION] = "GEARMAN_INVALID_SERVER_OPTION",
        [GEARMAN_JOB_NOT_FOUND] = "GEARMAN_JOB_NOT_FOUND",
    };
    if ((unsigned)rc >= GEARMAN_MAX_RETURN || names[rc] == NULL)
        return "GEARMAN_MAX_RETURN";
    return names[rc];
}

const char *gearman_version(void)
{
    return LIBGEARMAN_VERSION_STRING;
}

const char *gearman_bugreport(void)
{
    return "the Spur project's issue tracker (libgearman-compat)";
}

const char *gearman_verbose_name(gearman_verbose_t verbose)
{
    static const char *const names[GEARMAN_VERBOSE_MAX] = {"NEVER", "FATAL", "ERROR",
                                                           "INFO",  "DEBUG", "CRAZY"};
    if ((unsigned)verbose >= GEARMAN_VERBOSE_MAX)
        return "UNKNOWN";
    return names[verbose];
}
