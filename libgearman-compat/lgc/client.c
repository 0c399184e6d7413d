/* SPDX-License-Identifier: BSD-3-Clause */
/* client: the client object, its tasks, run_tasks and the blocking helpers built on it
 * (do*, do_background*, job_status, echo, execute). */
#include "lgc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* struct lgc_client is the state behind a gearman_client_st. */
struct lgc_client {
    gearman_client_st *shell;       /* the user's handle */
    struct lgc_universal u;         /* servers, timeout, last error */
    bool free_tasks;                /* GEARMAN_CLIENT_FREE_TASKS */
    bool generate_unique;           /* GEARMAN_CLIENT_GENERATE_UNIQUE */
    bool exceptions;                /* GEARMAN_CLIENT_EXCEPTION */
    bool unbuffered;                /* GEARMAN_CLIENT_UNBUFFERED_RESULT (accepted, ignored) */
    void *context;                  /* gearman_client_set_context */
    struct lgc_task *head, *tail;   /* every task, in add order */
    gearman_workload_fn *workload_fn;        /* accepted, never called */
    struct lgc_task_fns fns;                 /* task callbacks, copied into each new task */
    gearman_task_context_free_fn *context_free_fn; /* called with a task's context at free */
    char do_handle[GEARMAN_JOB_HANDLE_SIZE]; /* handle of the last do* job */
    uint32_t do_numerator;          /* last do* status */
    uint32_t do_denominator;        /* last do* status */
    gearman_return_t dispatch_rc;   /* first failure met while dispatching packets */
    bool cancel_answered;           /* the LGC_PEND_CANCEL request was answered */
    gearman_return_t cancel_rc;     /* ... with this: GEARMAN_SUCCESS or the ERROR's code */
};

/* CLIENT returns the state behind a shell, or NULL. */
static struct lgc_client *CLIENT(const gearman_client_st *shell)
{
    return shell != NULL ? (struct lgc_client *)shell->_impl : NULL;
}

/* TASK returns the state behind a task shell, or NULL. */
static struct lgc_task *TASK(const gearman_task_st *shell)
{
    return shell != NULL ? (struct lgc_task *)shell->_impl : NULL;
}

/* ---------------------------------------------------------------- create and free */

/* add_server_cb adds one entry of a server list. */
static gearman_return_t add_server_cb(void *ctx, const char *host, in_port_t port)
{
    return lgc_add_server(ctx, host, port);
}

/* client_new allocates the state (and the shell when shell is NULL). */
static gearman_client_st *client_new(gearman_client_st *shell)
{
    struct lgc_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    bool allocated = false;
    if (shell == NULL) {
        shell = calloc(1, sizeof *shell);
        if (shell == NULL) {
            free(c);
            return NULL;
        }
        allocated = true;
    }
    shell->options.is_allocated = allocated;
    shell->options.is_initialized = true;
    shell->_impl = c;
    c->shell = shell;
    lgc_universal_init(&c->u);
    return shell;
}

gearman_client_st *gearman_client_create(gearman_client_st *client)
{
    gearman_client_st *shell = client_new(client);
    if (shell == NULL)
        return NULL;
    const char *env = getenv("GEARMAN_SERVERS");
    if (env != NULL && lgc_parse_servers(env, add_server_cb, &CLIENT(shell)->u) != GEARMAN_SUCCESS) {
        gearman_client_free(shell);
        return NULL;
    }
    return shell;
}

gearman_client_st *gearman_client_clone(gearman_client_st *client, const gearman_client_st *from)
{
    const struct lgc_client *src = CLIENT(from);
    if (src == NULL)
        return gearman_client_create(client);
    gearman_client_st *shell = client_new(client);
    if (shell == NULL)
        return NULL;
    struct lgc_client *c = CLIENT(shell);
    if (lgc_universal_copy(&c->u, &src->u) != 0) {
        gearman_client_free(shell);
        return NULL;
    }
    c->free_tasks = src->free_tasks;
    c->generate_unique = src->generate_unique;
    c->exceptions = src->exceptions;
    c->unbuffered = src->unbuffered;
    c->workload_fn = src->workload_fn;
    c->fns = src->fns;
    c->context_free_fn = src->context_free_fn;
    return shell;
}

/* task_destroy unlinks and frees t (and its shell if the library allocated it). */
static void task_destroy(struct lgc_task *t)
{
    struct lgc_client *c = t->client;
    if (c->context_free_fn != NULL && t->context != NULL)
        c->context_free_fn(t->shell, t->context);
    if (t->conn != NULL)
        lgc_fifo_forget(&t->conn->pend, t);
    if (t->prev != NULL)
        t->prev->next = t->next;
    else
        c->head = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
    else
        c->tail = t->prev;
    gearman_task_st *shell = t->shell;
    lgc_buf_free(&t->packet);
    free(t->function);
    free(t->data);
    lgc_result_free(&t->result);
    lgc_result_free(&t->exception);
    free(t);
    shell->_impl = NULL;
    if (shell->options.is_allocated)
        free(shell);
}

void gearman_client_task_free_all(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return;
    while (c->head != NULL)
        task_destroy(c->head);
}

void gearman_client_free(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return;
    gearman_client_task_free_all(client);
    lgc_universal_free(&c->u);
    free(c);
    client->_impl = NULL;
    client->options.is_initialized = false;
    if (client->options.is_allocated)
        free(client);
}

/* ---------------------------------------------------------------- errors, options, settings */

const char *gearman_client_error(const gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return "invalid client";
    return c->u.error[0] != '\0' ? c->u.error : NULL;
}

gearman_return_t gearman_client_error_code(const gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    return c != NULL ? c->u.error_code : GEARMAN_INVALID_ARGUMENT;
}

int gearman_client_errno(const gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    return c != NULL ? c->u.last_errno : 0;
}

gearman_client_options_t gearman_client_options(const gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    int o = 0;
    if (c == NULL)
        return (gearman_client_options_t)0;
    if (client->options.is_allocated)
        o |= GEARMAN_CLIENT_ALLOCATED;
    if (c->u.non_blocking)
        o |= GEARMAN_CLIENT_NON_BLOCKING;
    if (c->u.ssl)
        o |= GEARMAN_CLIENT_SSL;
    if (c->unbuffered)
        o |= GEARMAN_CLIENT_UNBUFFERED_RESULT;
    if (c->free_tasks)
        o |= GEARMAN_CLIENT_FREE_TASKS;
    if (c->generate_unique)
        o |= GEARMAN_CLIENT_GENERATE_UNIQUE;
    if (c->exceptions)
        o |= GEARMAN_CLIENT_EXCEPTION;
    return (gearman_client_options_t)o;
}

bool gearman_client_set_server_option(gearman_client_st *client, const char *option_arg,
                                      size_t option_arg_size)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL || option_arg == NULL || option_arg_size == 0 ||
        option_arg_size > GEARMAN_OPTION_SIZE)
        return false;
    if (lgc_add_option(&c->u, option_arg, option_arg_size) != 0)
        return false;
    /* Connections already open get the option now; new ones get it when they connect. */
    for (struct lgc_conn *conn = c->u.conns; conn != NULL; conn = conn->next) {
        if (conn->fd < 0)
            continue;
        struct proto_arg a = {option_arg, option_arg_size};
        if (lgc_conn_queue(&c->u, conn, CMD_OPTION_REQ, &a, 1) != GEARMAN_SUCCESS ||
            lgc_fifo_push(&conn->pend, LGC_PEND_OPTION, NULL) != 0)
            return false;
    }
    return true;
}

void gearman_client_add_options(gearman_client_st *client, gearman_client_options_t options)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return;
    if (options & GEARMAN_CLIENT_NON_BLOCKING)
        c->u.non_blocking = true;
    if (options & GEARMAN_CLIENT_SSL)
        c->u.ssl = true; /* connections made from now on */
    if (options & GEARMAN_CLIENT_UNBUFFERED_RESULT)
        c->unbuffered = true;
    if (options & GEARMAN_CLIENT_FREE_TASKS)
        c->free_tasks = true;
    if (options & GEARMAN_CLIENT_GENERATE_UNIQUE)
        c->generate_unique = true;
    if ((options & GEARMAN_CLIENT_EXCEPTION) && !c->exceptions)
        c->exceptions = gearman_client_set_server_option(client, "exceptions", 10);
}

void gearman_client_remove_options(gearman_client_st *client, gearman_client_options_t options)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return;
    if (options & GEARMAN_CLIENT_NON_BLOCKING)
        c->u.non_blocking = false;
    if (options & GEARMAN_CLIENT_SSL)
        c->u.ssl = false;
    if (options & GEARMAN_CLIENT_UNBUFFERED_RESULT)
        c->unbuffered = false;
    if (options & GEARMAN_CLIENT_FREE_TASKS)
        c->free_tasks = false;
    if (options & GEARMAN_CLIENT_GENERATE_UNIQUE)
        c->generate_unique = false;
    /* A server cannot be told to stop forwarding exceptions; the flag stays (as in libgearman). */
}

void gearman_client_set_options(gearman_client_st *client, gearman_client_options_t options)
{
    const int settable = GEARMAN_CLIENT_NON_BLOCKING | GEARMAN_CLIENT_SSL | GEARMAN_CLIENT_UNBUFFERED_RESULT |
                         GEARMAN_CLIENT_FREE_TASKS | GEARMAN_CLIENT_GENERATE_UNIQUE |
                         GEARMAN_CLIENT_EXCEPTION;
    gearman_client_add_options(client, (gearman_client_options_t)(options & settable));
    gearman_client_remove_options(client, (gearman_client_options_t)(~options & settable));
}

bool gearman_client_has_option(gearman_client_st *client, gearman_client_options_t option)
{
    return (gearman_client_options(client) & option) != 0;
}

void gearman_client_set_ssl(gearman_client_st *client, bool ssl, const char *ca_file,
                            const char *certificate, const char *key_file)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL && lgc_tls_set(&c->u, ssl, ca_file, certificate, key_file) != 0)
        lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "gearman_client_set_ssl");
}

int gearman_client_timeout(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    return c != NULL ? c->u.timeout : -1;
}

void gearman_client_set_timeout(gearman_client_st *client, int timeout)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->u.timeout = timeout < 0 ? -1 : timeout;
}

void *gearman_client_context(const gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    return c != NULL ? c->context : NULL;
}

void gearman_client_set_context(gearman_client_st *client, void *context)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->context = context;
}

void gearman_client_set_log_fn(gearman_client_st *client, gearman_log_fn *function, void *context,
                               gearman_verbose_t verbose)
{
    (void)client;
    (void)function;
    (void)context;
    (void)verbose;
}

gearman_return_t gearman_client_set_identifier(gearman_client_st *client, const char *id,
                                               size_t id_size)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_return_t rc = lgc_set_identifier(&c->u, id, id_size);
    if (rc != GEARMAN_SUCCESS || c->u.identifier == NULL)
        return rc;
    for (struct lgc_conn *conn = c->u.conns; conn != NULL; conn = conn->next) {
        struct proto_arg a = {c->u.identifier, c->u.identifier_len};
        if (conn->fd >= 0 &&
            (rc = lgc_conn_queue(&c->u, conn, CMD_SET_CLIENT_ID, &a, 1)) != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

gearman_return_t gearman_client_add_server(gearman_client_st *client, const char *host,
                                           in_port_t port)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    return lgc_add_server(&c->u, host, port);
}

gearman_return_t gearman_client_add_servers(gearman_client_st *client, const char *servers)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_return_t rc = lgc_parse_servers(servers, add_server_cb, &c->u);
    if (rc == GEARMAN_INVALID_ARGUMENT)
        lgc_set_error(&c->u, rc, "bad server list \"%s\"", servers);
    return rc;
}

/* fail_tasks_on finishes every unfinished task sent on conn (any generation) with code. */
static void fail_tasks_on(struct lgc_client *c, const struct lgc_conn *conn, gearman_return_t code);

void gearman_client_remove_servers(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return;
    for (struct lgc_conn *conn = c->u.conns; conn != NULL; conn = conn->next)
        fail_tasks_on(c, conn, GEARMAN_LOST_CONNECTION);
    for (struct lgc_task *t = c->head; t != NULL; t = t->next)
        t->conn = NULL;
    lgc_remove_servers(&c->u);
}

gearman_return_t gearman_client_wait(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    return lgc_wait(&c->u);
}

/* ---------------------------------------------------------------- callbacks */

void gearman_client_set_workload_fn(gearman_client_st *client, gearman_workload_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->workload_fn = function;
}

void gearman_client_set_created_fn(gearman_client_st *client, gearman_created_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.created = function;
}

void gearman_client_set_data_fn(gearman_client_st *client, gearman_data_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.data = function;
}

void gearman_client_set_warning_fn(gearman_client_st *client, gearman_warning_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.warning = function;
}

void gearman_client_set_status_fn(gearman_client_st *client, gearman_universal_status_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.status = function;
}

void gearman_client_set_complete_fn(gearman_client_st *client, gearman_complete_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.complete = function;
}

void gearman_client_set_exception_fn(gearman_client_st *client, gearman_exception_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.exception = function;
}

void gearman_client_set_fail_fn(gearman_client_st *client, gearman_fail_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->fns.fail = function;
}

void gearman_client_clear_fn(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return;
    c->workload_fn = NULL;
    memset(&c->fns, 0, sizeof c->fns);
}

void gearman_client_set_task_context_free_fn(gearman_client_st *client,
                                             gearman_task_context_free_fn *function)
{
    struct lgc_client *c = CLIENT(client);
    if (c != NULL)
        c->context_free_fn = function;
}

/* ---------------------------------------------------------------- adding tasks */

/* task_new creates a task in the NEW state at the end of c's list, encoding its request now so
 * that the caller's buffers may go away. epoch is for SUBMIT_JOB_EPOCH, reducer for
 * SUBMIT_REDUCE_JOB*. Returns the task, or NULL with the error recorded. */
static struct lgc_task *task_new(struct lgc_client *c, gearman_task_st *shell, void *context,
                                 enum lgc_task_kind kind, uint32_t cmd, const char *function,
                                 size_t function_len, const char *unique, size_t unique_len,
                                 const void *workload, size_t workload_size, time_t epoch,
                                 const char *reducer, size_t reducer_len)
{
    bool reduce = cmd == CMD_SUBMIT_REDUCE_JOB || cmd == CMD_SUBMIT_REDUCE_JOB_BACKGROUND;
    if (cmd != CMD_GET_STATUS) {
        if (function == NULL || function_len == 0) {
            lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT, "function name is empty");
            return NULL;
        }
        if (function_len > GEARMAN_FUNCTION_MAX_SIZE) {
            lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT, "function name longer than %d bytes",
                          GEARMAN_FUNCTION_MAX_SIZE);
            return NULL;
        }
        if (reduce && (reducer == NULL || reducer_len == 0)) {
            lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT, "reducer function name is empty");
            return NULL;
        }
        if (reduce && reducer_len > GEARMAN_FUNCTION_MAX_SIZE) {
            lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT, "reducer name longer than %d bytes",
                          GEARMAN_FUNCTION_MAX_SIZE);
            return NULL;
        }
        if (unique_len > GEARMAN_MAX_UNIQUE_SIZE) {
            lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT, "unique longer than %d bytes",
                          GEARMAN_MAX_UNIQUE_SIZE);
            return NULL;
        }
        if (workload == NULL && workload_size > 0) {
            lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT, "workload size without data");
            return NULL;
        }
        if (workload_size > UINT32_MAX - 2 * 1024) {
            lgc_set_error(&c->u, GEARMAN_ARGUMENT_TOO_LARGE, "workload over 4 GiB");
            return NULL;
        }
    }
    struct lgc_task *t = calloc(1, sizeof *t);
    if (t == NULL) {
        lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "task");
        return NULL;
    }
    bool allocated = false;
    if (shell == NULL) {
        shell = calloc(1, sizeof *shell);
        if (shell == NULL) {
            free(t);
            lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "task");
            return NULL;
        }
        allocated = true;
    }
    shell->options.is_allocated = allocated;
    shell->_impl = t;
    t->shell = shell;
    t->client = c;
    t->kind = kind;
    t->fns = c->fns;
    t->state = LGC_TASK_NEW;
    t->cmd = cmd;
    t->context = context;
    t->result_rc = GEARMAN_UNKNOWN_STATE;
    t->background = cmd == CMD_SUBMIT_JOB_BG || cmd == CMD_SUBMIT_JOB_HIGH_BG ||
                    cmd == CMD_SUBMIT_JOB_LOW_BG || cmd == CMD_SUBMIT_JOB_EPOCH ||
                    cmd == CMD_SUBMIT_REDUCE_JOB_BACKGROUND;
    int rc;
    if (cmd == CMD_GET_STATUS) {
        size_t hl = strnlen(unique, GEARMAN_JOB_HANDLE_SIZE - 1); /* the handle, see callers */
        memcpy(t->handle, unique, hl);
        t->handle[hl] = '\0';
        struct proto_arg a = {t->handle, hl};
        rc = lgc_buf_append_packet(&t->packet, cmd, &a, 1);
    } else {
        t->function = malloc(function_len + 1);
        rc = t->function == NULL ? -1 : 0;
        if (rc == 0) {
            memcpy(t->function, function, function_len);
            t->function[function_len] = '\0';
            if (unique_len > 0) {
                memcpy(t->unique, unique, unique_len);
                t->unique[unique_len] = '\0';
            } else if (c->generate_unique || t->background || reduce) {
                lgc_make_uuid(t->unique);
            }
            char when[32];
            snprintf(when, sizeof when, "%lld", (long long)epoch);
            struct proto_arg args[4] = {{t->function, function_len},
                                        {t->unique, strlen(t->unique)},
                                        {when, strlen(when)},
                                        {workload, workload_size}};
            if (cmd == CMD_SUBMIT_JOB_EPOCH) {
                rc = lgc_buf_append_packet(&t->packet, cmd, args, 4);
            } else if (reduce) { /* function, unique, reducer, aggregator (empty), workload */
                struct proto_arg rargs[5] = {args[0], args[1], {reducer, reducer_len}, {"", 0},
                                             args[3]};
                rc = lgc_buf_append_packet(&t->packet, cmd, rargs, 5);
            } else {
                args[2] = args[3];
                rc = lgc_buf_append_packet(&t->packet, cmd, args, 3);
            }
        }
    }
    t->prev = c->tail;
    if (c->tail != NULL)
        c->tail->next = t;
    else
        c->head = t;
    c->tail = t;
    if (rc != 0) {
        t->context = NULL;
        task_destroy(t);
        lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "task");
        return NULL;
    }
    return t;
}

/* add_task is the body of the gearman_client_add_task* family. */
static gearman_task_st *add_task(gearman_client_st *client, gearman_task_st *task, void *context,
                                 uint32_t cmd, const char *function_name, const char *unique,
                                 const void *workload, size_t workload_size,
                                 gearman_return_t *ret_ptr)
{
    gearman_return_t unused;
    if (ret_ptr == NULL)
        ret_ptr = &unused;
    struct lgc_client *c = CLIENT(client);
    if (c == NULL) {
        *ret_ptr = GEARMAN_INVALID_ARGUMENT;
        return NULL;
    }
    struct lgc_task *t =
        task_new(c, task, context, LGC_KIND_ADD_TASK, cmd, function_name,
                 function_name ? strlen(function_name) : 0, unique, unique ? strlen(unique) : 0,
                 workload, workload_size, 0, NULL, 0);
    *ret_ptr = t != NULL ? GEARMAN_SUCCESS : c->u.error_code;
    return t != NULL ? t->shell : NULL;
}

gearman_task_st *gearman_client_add_task(gearman_client_st *client, gearman_task_st *task,
                                         void *context, const char *function_name,
                                         const char *unique, const void *workload,
                                         size_t workload_size, gearman_return_t *ret_ptr)
{
    return add_task(client, task, context, CMD_SUBMIT_JOB, function_name, unique, workload,
                    workload_size, ret_ptr);
}

gearman_task_st *gearman_client_add_task_high(gearman_client_st *client, gearman_task_st *task,
                                              void *context, const char *function_name,
                                              const char *unique, const void *workload,
                                              size_t workload_size, gearman_return_t *ret_ptr)
{
    return add_task(client, task, context, CMD_SUBMIT_JOB_HIGH, function_name, unique, workload,
                    workload_size, ret_ptr);
}

gearman_task_st *gearman_client_add_task_low(gearman_client_st *client, gearman_task_st *task,
                                             void *context, const char *function_name,
                                             const char *unique, const void *workload,
                                             size_t workload_size, gearman_return_t *ret_ptr)
{
    return add_task(client, task, context, CMD_SUBMIT_JOB_LOW, function_name, unique, workload,
                    workload_size, ret_ptr);
}

gearman_task_st *gearman_client_add_task_background(gearman_client_st *client,
                                                    gearman_task_st *task, void *context,
                                                    const char *function_name, const char *unique,
                                                    const void *workload, size_t workload_size,
                                                    gearman_return_t *ret_ptr)
{
    return add_task(client, task, context, CMD_SUBMIT_JOB_BG, function_name, unique, workload,
                    workload_size, ret_ptr);
}

gearman_task_st *gearman_client_add_task_high_background(gearman_client_st *client,
                                                         gearman_task_st *task, void *context,
                                                         const char *function_name,
                                                         const char *unique, const void *workload,
                                                         size_t workload_size,
                                                         gearman_return_t *ret_ptr)
{
    return add_task(client, task, context, CMD_SUBMIT_JOB_HIGH_BG, function_name, unique,
                    workload, workload_size, ret_ptr);
}

gearman_task_st *gearman_client_add_task_low_background(gearman_client_st *client,
                                                        gearman_task_st *task, void *context,
                                                        const char *function_name,
                                                        const char *unique, const void *workload,
                                                        size_t workload_size,
                                                        gearman_return_t *ret_ptr)
{
    return add_task(client, task, context, CMD_SUBMIT_JOB_LOW_BG, function_name, unique,
                    workload, workload_size, ret_ptr);
}

gearman_task_st *gearman_client_add_task_status(gearman_client_st *client, gearman_task_st *task,
                                                void *context, const char *job_handle,
                                                gearman_return_t *ret_ptr)
{
    gearman_return_t unused;
    if (ret_ptr == NULL)
        ret_ptr = &unused;
    struct lgc_client *c = CLIENT(client);
    if (c == NULL || job_handle == NULL) {
        *ret_ptr = GEARMAN_INVALID_ARGUMENT;
        return NULL;
    }
    struct lgc_task *t = task_new(c, task, context, LGC_KIND_ADD_TASK, CMD_GET_STATUS, NULL, 0,
                                  job_handle, 0, NULL, 0, 0, NULL, 0);
    *ret_ptr = t != NULL ? GEARMAN_SUCCESS : c->u.error_code;
    return t != NULL ? t->shell : NULL;
}

/* ---------------------------------------------------------------- running tasks */

static void fail_tasks_on(struct lgc_client *c, const struct lgc_conn *conn, gearman_return_t code)
{
    for (struct lgc_task *t = c->head; t != NULL; t = t->next) {
        if (t->conn == conn && (t->state == LGC_TASK_SUBMITTED || t->state == LGC_TASK_WORKING))
            lgc_task_fail(t, code);
    }
}

/* submit queues t's request on the first server that is connected or accepts a connection (the
 * next server is tried when one refuses). Returns GEARMAN_SUCCESS or the last connect error. */
static gearman_return_t submit(struct lgc_client *c, struct lgc_task *t)
{
    if (c->u.conns == NULL) {
        lgc_task_fail(t, GEARMAN_NO_SERVERS);
        return lgc_set_error(&c->u, GEARMAN_NO_SERVERS, "no servers added");
    }
    gearman_return_t rc = GEARMAN_COULD_NOT_CONNECT;
    for (struct lgc_conn *conn = c->u.conns; conn != NULL; conn = conn->next) {
        if (conn->fd < 0) {
            rc = lgc_conn_connect(&c->u, conn);
            if (rc == GEARMAN_MEMORY_ALLOCATION_FAILURE)
                return rc;
            if (rc != GEARMAN_SUCCESS)
                continue;
        }
        char *p = lgc_buf_reserve(&conn->out, lgc_buf_len(&t->packet));
        if (p == NULL ||
            lgc_fifo_push(&conn->pend,
                          t->cmd == CMD_GET_STATUS ? LGC_PEND_STATUS : LGC_PEND_SUBMIT, t) != 0)
            return lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "submit");
        memcpy(p, lgc_buf_head(&t->packet), lgc_buf_len(&t->packet));
        conn->out.end += lgc_buf_len(&t->packet);
        lgc_buf_free(&t->packet);
        t->conn = conn;
        t->conn_gen = conn->generation;
        t->state = LGC_TASK_SUBMITTED;
        return GEARMAN_SUCCESS;
    }
    return rc;
}

/* run_callback calls the user's callback for ev on t. Returns its failure, or GEARMAN_SUCCESS
 * (also when there is no callback). A gearman_task_free(t) inside the callback is deferred. */
static gearman_return_t run_callback(struct lgc_client *c, struct lgc_task *t, enum lgc_event ev)
{
    gearman_return_t (*fn)(gearman_task_st *) = NULL;
    switch (ev) {
    case LGC_EV_CREATED: fn = t->fns.created; break;
    case LGC_EV_DATA: fn = t->fns.data; break;
    case LGC_EV_WARNING: fn = t->fns.warning; break;
    case LGC_EV_STATUS: fn = t->fns.status; break;
    case LGC_EV_COMPLETE: fn = t->fns.complete; break;
    case LGC_EV_EXCEPTION: fn = t->fns.exception; break;
    case LGC_EV_FAIL: fn = t->fns.fail; break;
    case LGC_EV_NONE: return GEARMAN_SUCCESS;
    case LGC_EV_NOMEM: return lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "result");
    }
    if (fn == NULL || t->kind == LGC_KIND_DO)
        return GEARMAN_SUCCESS;
    t->in_callback = true;
    gearman_return_t rc = fn(t->shell);
    t->in_callback = false;
    if (rc != GEARMAN_SUCCESS && rc != GEARMAN_IO_WAIT)
        lgc_set_error(&c->u, rc, "a task callback returned %s", gearman_strerror(rc));
    else
        rc = GEARMAN_SUCCESS;
    return rc;
}

/* deliver applies pkt to t, runs the callback and frees t when it finished and should go.
 * Returns the callback's failure or GEARMAN_SUCCESS. */
static gearman_return_t deliver(struct lgc_client *c, struct lgc_task *t, const struct pb_packet *pkt)
{
    enum lgc_event ev = lgc_task_apply(t, pkt);
    gearman_return_t rc = run_callback(c, t, ev);
    if (t->free_requested) {
        task_destroy(t);
    } else if (t->state == LGC_TASK_FINISHED && c->free_tasks && t->kind == LGC_KIND_ADD_TASK) {
        task_destroy(t);
    }
    return rc;
}

/* dispatch handles one packet from conn: replies go to the request at the head of conn's FIFO,
 * WORK_* packets to the task with that handle. Failures are kept in c->dispatch_rc. */
static void dispatch(void *owner, struct lgc_conn *conn, const struct pb_packet *pkt)
{
    struct lgc_client *c = owner;
    struct lgc_pend *head = lgc_fifo_peek(&conn->pend);
    gearman_return_t rc = GEARMAN_SUCCESS;
    switch (pkt->cmd) {
    case CMD_JOB_CREATED:
    case CMD_STATUS_RES:
    case CMD_OPTION_RES:
    case CMD_JOB_CANCELLED:
    case CMD_ERROR: {
        if (head == NULL) {
            if (pkt->cmd == CMD_ERROR)
                rc = lgc_set_error(&c->u, lgc_return_from_server_code(pkt->arg[0], pkt->len[0]),
                                   "%.*s: %.*s", (int)pkt->len[0], pkt->arg[0], (int)pkt->len[1],
                                   pkt->arg[1]);
            break;
        }
        struct lgc_task *t = head->task;
        enum lgc_pend_kind kind = head->kind;
        lgc_fifo_pop(&conn->pend);
        if (kind == LGC_PEND_CANCEL) { /* answered to gearman_client_cancel_job, not here */
            c->cancel_answered = true;
            c->cancel_rc = GEARMAN_SUCCESS;
            if (pkt->cmd == CMD_ERROR)
                c->cancel_rc = lgc_set_error(
                    &c->u, lgc_return_from_server_code(pkt->arg[0], pkt->len[0]), "%.*s: %.*s",
                    (int)pkt->len[0], pkt->arg[0], (int)pkt->len[1], pkt->arg[1]);
            break;
        }
        if (pkt->cmd == CMD_ERROR) {
            rc = lgc_return_from_server_code(pkt->arg[0], pkt->len[0]);
            lgc_set_error(&c->u, rc, "%.*s: %.*s", (int)pkt->len[0], pkt->arg[0],
                          (int)pkt->len[1], pkt->arg[1]);
            if (kind == LGC_PEND_OPTION && rc == GEARMAN_SERVER_ERROR)
                rc = GEARMAN_INVALID_SERVER_OPTION;
            if (t != NULL) {
                lgc_task_fail(t, rc);
                if (c->free_tasks && t->kind == LGC_KIND_ADD_TASK && !t->in_callback)
                    task_destroy(t);
            }
            break;
        }
        bool expected = (pkt->cmd == CMD_JOB_CREATED && kind == LGC_PEND_SUBMIT) ||
                        (pkt->cmd == CMD_STATUS_RES && kind == LGC_PEND_STATUS) ||
                        (pkt->cmd == CMD_OPTION_RES && kind == LGC_PEND_OPTION);
        if (!expected) {
            rc = lgc_set_error(&c->u, GEARMAN_UNEXPECTED_PACKET, "%s:%s sent %s out of order",
                               conn->host, conn->port, proto_cmd_name(pkt->cmd));
            lgc_conn_close(conn);
            break;
        }
        if (t != NULL)
            rc = deliver(c, t, pkt);
        break;
    }
    case CMD_WORK_DATA:
    case CMD_WORK_WARNING:
    case CMD_WORK_STATUS:
    case CMD_WORK_COMPLETE:
    case CMD_WORK_EXCEPTION:
    case CMD_WORK_FAIL:
        for (struct lgc_task *t = c->head; t != NULL; t = t->next) {
            if (t->conn == conn && t->state == LGC_TASK_WORKING &&
                lgc_handle_matches(t->handle, pkt->arg[0], pkt->len[0])) {
                rc = deliver(c, t, pkt);
                break;
            }
        }
        break;
    default:
        break; /* NOOP, ECHO_RES without a request, ...: nothing to do */
    }
    if (rc != GEARMAN_SUCCESS && c->dispatch_rc == GEARMAN_SUCCESS)
        c->dispatch_rc = rc;
}

/* process dispatches every whole packet buffered on conn; it stops early after a failure (the
 * rest stays buffered for the next call). */
static void process(struct lgc_client *c, struct lgc_conn *conn)
{
    struct pb_packet pkt;
    size_t used;
    while (c->dispatch_rc == GEARMAN_SUCCESS) {
        int r = lgc_conn_packet(&c->u, conn, &pkt, &used);
        if (r < 0) { /* not a packet: the connection was closed */
            fail_tasks_on(c, conn, GEARMAN_INVALID_PACKET);
            c->dispatch_rc = GEARMAN_INVALID_PACKET;
        }
        if (r <= 0)
            return;
        dispatch(c, conn, &pkt);
        lgc_conn_consume(conn, used);
    }
}

/* sweep fails the tasks whose connection went away. Returns GEARMAN_LOST_CONNECTION if any. */
static gearman_return_t sweep(struct lgc_client *c)
{
    gearman_return_t rc = GEARMAN_SUCCESS;
    struct lgc_task *t = c->head;
    while (t != NULL) {
        struct lgc_task *next = t->next;
        if ((t->state == LGC_TASK_SUBMITTED || t->state == LGC_TASK_WORKING) &&
            (t->conn == NULL || t->conn->fd < 0 || t->conn->generation != t->conn_gen)) {
            lgc_task_fail(t, GEARMAN_LOST_CONNECTION);
            rc = GEARMAN_LOST_CONNECTION;
            if (c->free_tasks && t->kind == LGC_KIND_ADD_TASK)
                task_destroy(t);
        }
        t = next;
    }
    if (rc != GEARMAN_SUCCESS && c->u.error_code != GEARMAN_LOST_CONNECTION)
        lgc_set_error(&c->u, rc, "a server went away while jobs were running on it");
    return rc;
}

/* active_tasks counts unfinished tasks. */
static size_t active_tasks(const struct lgc_client *c)
{
    size_t n = 0;
    for (const struct lgc_task *t = c->head; t != NULL; t = t->next)
        n += t->state != LGC_TASK_FINISHED;
    return n;
}

/* run drives every task until exit_task finishes (or, with exit_task NULL, all tasks finish).
 * exit_task must not be freed meanwhile (it is an internal DO task or the caller's). */
static gearman_return_t run(struct lgc_client *c, struct lgc_task *exit_task, bool blocking)
{
    c->dispatch_rc = GEARMAN_SUCCESS;
    for (;;) {
        for (struct lgc_task *t = c->head; t != NULL; t = t->next) {
            if (t->state != LGC_TASK_NEW)
                continue;
            gearman_return_t rc = submit(c, t);
            if (rc != GEARMAN_SUCCESS)
                return rc;
        }
        for (struct lgc_conn *conn = c->u.conns; conn != NULL; conn = conn->next) {
            if (conn->fd >= 0 && lgc_buf_len(&conn->out) > 0)
                (void)lgc_conn_write(&c->u, conn);
            if (conn->fd >= 0)
                (void)lgc_conn_read(&c->u, conn);
            process(c, conn);
            if (c->dispatch_rc != GEARMAN_SUCCESS)
                return c->dispatch_rc;
        }
        gearman_return_t lost = sweep(c);
        if (exit_task != NULL && exit_task->state == LGC_TASK_FINISHED)
            return GEARMAN_SUCCESS;
        if (lost != GEARMAN_SUCCESS)
            return lost;
        if (exit_task == NULL && active_tasks(c) == 0)
            return GEARMAN_SUCCESS;
        if (!blocking)
            return lgc_set_error(&c->u, GEARMAN_IO_WAIT, "waiting for the servers");
        gearman_return_t rc = lgc_wait(&c->u);
        if (rc != GEARMAN_SUCCESS)
            return rc;
    }
}

gearman_return_t gearman_client_run_tasks(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    if (c->head == NULL)
        return GEARMAN_SUCCESS;
    lgc_clear_error(&c->u);
    return run(c, NULL, !c->u.non_blocking);
}

bool gearman_client_has_tasks(const gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    return c != NULL && c->head != NULL;
}

bool gearman_client_has_active_tasks(gearman_client_st *client)
{
    const struct lgc_client *c = CLIENT(client);
    return c != NULL && active_tasks(c) > 0;
}

/* ---------------------------------------------------------------- blocking helpers */

/* do_job runs one DO task to its end and returns it (still to be freed), or NULL when it could
 * not be created (*rc set). */
static struct lgc_task *do_job(struct lgc_client *c, uint32_t cmd, const char *function,
                               const char *unique, const void *workload, size_t size,
                               gearman_return_t *rc)
{
    lgc_clear_error(&c->u);
    struct lgc_task *t =
        task_new(c, NULL, NULL, LGC_KIND_DO, cmd, function, function ? strlen(function) : 0,
                 unique, unique ? strlen(unique) : 0, workload, size, 0, NULL, 0);
    if (t == NULL) {
        *rc = c->u.error_code;
        return NULL;
    }
    *rc = run(c, t, true);
    if (*rc == GEARMAN_SUCCESS)
        *rc = t->result_rc;
    if (*rc != GEARMAN_SUCCESS && c->u.error_code == GEARMAN_SUCCESS)
        lgc_set_error(&c->u, *rc, "job %s", t->handle[0] ? t->handle : "not created");
    memcpy(c->do_handle, t->handle, sizeof c->do_handle);
    c->do_numerator = t->numerator;
    c->do_denominator = t->denominator;
    return t;
}

/* client_do is the body of gearman_client_do*. */
static void *client_do(gearman_client_st *client, uint32_t cmd, const char *function,
                       const char *unique, const void *workload, size_t size,
                       size_t *result_size, gearman_return_t *ret_ptr)
{
    size_t unused_size;
    gearman_return_t unused_rc;
    if (result_size == NULL)
        result_size = &unused_size;
    if (ret_ptr == NULL)
        ret_ptr = &unused_rc;
    *result_size = 0;
    struct lgc_client *c = CLIENT(client);
    if (c == NULL) {
        *ret_ptr = GEARMAN_INVALID_ARGUMENT;
        return NULL;
    }
    struct lgc_task *t = do_job(c, cmd, function, unique, workload, size, ret_ptr);
    if (t == NULL)
        return NULL;
    void *result = NULL;
    if (*ret_ptr == GEARMAN_SUCCESS && t->result.size > 0) {
        result = t->result.value;
        *result_size = t->result.size;
        t->result.value = NULL;
        t->result.size = t->result.cap = 0;
    }
    task_destroy(t);
    return result;
}

void *gearman_client_do(gearman_client_st *client, const char *function_name, const char *unique,
                        const void *workload, size_t workload_size, size_t *result_size,
                        gearman_return_t *ret_ptr)
{
    return client_do(client, CMD_SUBMIT_JOB, function_name, unique, workload, workload_size,
                     result_size, ret_ptr);
}

void *gearman_client_do_high(gearman_client_st *client, const char *function_name,
                             const char *unique, const void *workload, size_t workload_size,
                             size_t *result_size, gearman_return_t *ret_ptr)
{
    return client_do(client, CMD_SUBMIT_JOB_HIGH, function_name, unique, workload, workload_size,
                     result_size, ret_ptr);
}

void *gearman_client_do_low(gearman_client_st *client, const char *function_name,
                            const char *unique, const void *workload, size_t workload_size,
                            size_t *result_size, gearman_return_t *ret_ptr)
{
    return client_do(client, CMD_SUBMIT_JOB_LOW, function_name, unique, workload, workload_size,
                     result_size, ret_ptr);
}

const char *gearman_client_do_job_handle(gearman_client_st *client)
{
    struct lgc_client *c = CLIENT(client);
    return c != NULL ? c->do_handle : "";
}

void gearman_client_do_status(gearman_client_st *client, uint32_t *numerator,
                              uint32_t *denominator)
{
    struct lgc_client *c = CLIENT(client);
    if (numerator != NULL)
        *numerator = c != NULL ? c->do_numerator : 0;
    if (denominator != NULL)
        *denominator = c != NULL ? c->do_denominator : 0;
}

/* client_do_background is the body of gearman_client_do*_background. */
static gearman_return_t client_do_background(gearman_client_st *client, uint32_t cmd,
                                             const char *function, const char *unique,
                                             const void *workload, size_t size,
                                             gearman_job_handle_t job_handle)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_return_t rc;
    struct lgc_task *t = do_job(c, cmd, function, unique, workload, size, &rc);
    if (t == NULL)
        return rc;
    if (job_handle != NULL) {
        if (rc == GEARMAN_SUCCESS)
            memcpy(job_handle, t->handle, GEARMAN_JOB_HANDLE_SIZE);
        else
            job_handle[0] = '\0';
    }
    task_destroy(t);
    return rc;
}

gearman_return_t gearman_client_do_background(gearman_client_st *client, const char *function_name,
                                              const char *unique, const void *workload,
                                              size_t workload_size,
                                              gearman_job_handle_t job_handle)
{
    return client_do_background(client, CMD_SUBMIT_JOB_BG, function_name, unique, workload,
                                workload_size, job_handle);
}

gearman_return_t gearman_client_do_high_background(gearman_client_st *client,
                                                   const char *function_name, const char *unique,
                                                   const void *workload, size_t workload_size,
                                                   gearman_job_handle_t job_handle)
{
    return client_do_background(client, CMD_SUBMIT_JOB_HIGH_BG, function_name, unique, workload,
                                workload_size, job_handle);
}

gearman_return_t gearman_client_do_low_background(gearman_client_st *client,
                                                  const char *function_name, const char *unique,
                                                  const void *workload, size_t workload_size,
                                                  gearman_job_handle_t job_handle)
{
    return client_do_background(client, CMD_SUBMIT_JOB_LOW_BG, function_name, unique, workload,
                                workload_size, job_handle);
}

gearman_return_t gearman_client_job_status(gearman_client_st *client,
                                           const gearman_job_handle_t job_handle, bool *is_known,
                                           bool *is_running, uint32_t *numerator,
                                           uint32_t *denominator)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL || job_handle == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    lgc_clear_error(&c->u);
    struct lgc_task *t = task_new(c, NULL, NULL, LGC_KIND_DO, CMD_GET_STATUS, NULL, 0, job_handle,
                                  0, NULL, 0, 0, NULL, 0);
    if (t == NULL)
        return c->u.error_code;
    gearman_return_t rc = run(c, t, true);
    if (rc == GEARMAN_SUCCESS)
        rc = t->result_rc;
    bool ok = rc == GEARMAN_SUCCESS;
    if (is_known != NULL)
        *is_known = ok && t->is_known;
    if (is_running != NULL)
        *is_running = ok && t->is_running;
    if (numerator != NULL)
        *numerator = ok ? t->numerator : 0;
    if (denominator != NULL)
        *denominator = ok ? t->denominator : 0;
    if (ok && is_known == NULL && is_running == NULL) {
        if (t->is_running)
            rc = GEARMAN_IN_PROGRESS;
        else if (t->is_known)
            rc = GEARMAN_JOB_EXISTS;
    }
    task_destroy(t);
    return rc;
}

gearman_return_t gearman_client_echo(gearman_client_st *client, const void *workload,
                                     size_t workload_size)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL || (workload == NULL && workload_size > 0))
        return GEARMAN_INVALID_ARGUMENT;
    lgc_clear_error(&c->u);
    c->dispatch_rc = GEARMAN_SUCCESS;
    gearman_return_t rc = lgc_echo(&c->u, workload, workload_size, dispatch, c);
    (void)sweep(c);
    return rc;
}

/* execute is the body of gearman_execute and gearman_execute_by_partition: submits one job
 * (SUBMIT_REDUCE_JOB* with reducer when reducer_len > 0) and runs the client's tasks until it has
 * finished. */
static gearman_task_st *execute(struct lgc_client *c, uint32_t cmd, time_t epoch,
                                const char *function_name, size_t function_name_length,
                                const char *reducer, size_t reducer_len, const char *unique,
                                size_t unique_length, gearman_argument_t *arguments,
                                void *context)
{
    const char *workload = arguments != NULL ? arguments->value.c_str : NULL;
    size_t size = arguments != NULL ? arguments->value.size : 0;
    if (unique == NULL)
        unique_length = 0;
    struct lgc_task *t = task_new(c, NULL, context, LGC_KIND_EXECUTE, cmd, function_name,
                                  function_name != NULL ? function_name_length : 0, unique,
                                  unique_length, workload, size, epoch, reducer, reducer_len);
    if (t == NULL)
        return NULL;
    gearman_return_t rc = run(c, NULL, !c->u.non_blocking);
    if (rc != GEARMAN_SUCCESS && rc != GEARMAN_IO_WAIT && t->state == LGC_TASK_NEW) {
        task_destroy(t); /* never sent: report through gearman_client_error */
        return NULL;
    }
    return t->shell;
}

gearman_task_st *gearman_execute(gearman_client_st *client, const char *function_name,
                                 size_t function_name_length, const char *unique,
                                 size_t unique_length, gearman_task_attr_t *attr,
                                 gearman_argument_t *arguments, void *context)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return NULL;
    lgc_clear_error(&c->u);
    uint32_t cmd = CMD_SUBMIT_JOB;
    time_t epoch = 0;
    if (attr != NULL) {
        switch (attr->kind) {
        case GEARMAN_TASK_ATTR_FOREGROUND: cmd = lgc_submit_cmd(attr->priority, false); break;
        case GEARMAN_TASK_ATTR_BACKGROUND: cmd = lgc_submit_cmd(attr->priority, true); break;
        case GEARMAN_TASK_ATTR_EPOCH:
            cmd = CMD_SUBMIT_JOB_EPOCH;
            epoch = attr->options.epoch.value;
            break;
        }
    }
    return execute(c, cmd, epoch, function_name, function_name_length, NULL, 0, unique,
                   unique_length, arguments, context);
}

gearman_task_st *gearman_execute_by_partition(gearman_client_st *client,
                                              const char *partition_function,
                                              const size_t partition_function_length,
                                              const char *function_name,
                                              const size_t function_name_length,
                                              const char *unique_str, const size_t unique_length,
                                              gearman_task_attr_t *attr,
                                              gearman_argument_t *arguments, void *context)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL)
        return NULL;
    lgc_clear_error(&c->u);
    uint32_t cmd = CMD_SUBMIT_REDUCE_JOB; /* the wire has no priority for it: attr's is unused */
    if (attr != NULL && attr->kind == GEARMAN_TASK_ATTR_BACKGROUND)
        cmd = CMD_SUBMIT_REDUCE_JOB_BACKGROUND;
    if (attr != NULL && attr->kind == GEARMAN_TASK_ATTR_EPOCH) {
        lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT,
                      "EPOCH is not currently supported for gearman_client_execute_reduce()");
        return NULL;
    }
    return execute(c, cmd, 0, partition_function, partition_function_length, function_name,
                   function_name != NULL ? function_name_length : 0, unique_str, unique_length,
                   arguments, context);
}

/* ---------------------------------------------------------------- task accessors */

void gearman_task_free(gearman_task_st *task)
{
    struct lgc_task *t = TASK(task);
    if (t == NULL)
        return;
    if (t->in_callback) {
        t->free_requested = true;
        return;
    }
    task_destroy(t);
}

void *gearman_task_context(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->context : NULL;
}

void gearman_task_set_context(gearman_task_st *task, void *context)
{
    struct lgc_task *t = TASK(task);
    if (t != NULL)
        t->context = context;
}

const char *gearman_task_function_name(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->function : NULL;
}

const char *gearman_task_unique(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->unique : NULL;
}

const char *gearman_task_job_handle(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->handle : NULL;
}

bool gearman_task_is_known(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL && t->is_known;
}

bool gearman_task_is_running(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL && t->is_running;
}

uint32_t gearman_task_numerator(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->numerator : 0;
}

uint32_t gearman_task_denominator(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->denominator : 0;
}

const void *gearman_task_data(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->data : NULL;
}

size_t gearman_task_data_size(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->data_size : 0;
}

void *gearman_task_take_data(gearman_task_st *task, size_t *data_size)
{
    struct lgc_task *t = TASK(task);
    size_t unused;
    if (data_size == NULL)
        data_size = &unused;
    *data_size = 0;
    if (t == NULL || t->data == NULL)
        return NULL;
    void *data = t->data;
    *data_size = t->data_size;
    t->data = NULL;
    t->data_size = 0;
    return data;
}

size_t gearman_task_recv_data(gearman_task_st *task, void *data, size_t data_size,
                              gearman_return_t *ret_ptr)
{
    struct lgc_task *t = TASK(task);
    if (t == NULL || (data == NULL && data_size > 0)) {
        if (ret_ptr != NULL)
            *ret_ptr = GEARMAN_INVALID_ARGUMENT;
        return 0;
    }
    size_t n = t->data_size < data_size ? t->data_size : data_size;
    if (n > 0)
        memcpy(data, t->data, n);
    if (ret_ptr != NULL)
        *ret_ptr = GEARMAN_SUCCESS;
    return n;
}

const char *gearman_task_error(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    if (t == NULL || t->result_rc == GEARMAN_SUCCESS || t->result_rc == GEARMAN_UNKNOWN_STATE)
        return NULL;
    return gearman_strerror(t->result_rc);
}

gearman_result_st *gearman_task_result(gearman_task_st *task)
{
    struct lgc_task *t = TASK(task);
    if (t == NULL || t->result.size == 0)
        return NULL;
    return &t->result;
}

gearman_return_t gearman_task_return(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? t->result_rc : GEARMAN_INVALID_ARGUMENT;
}

const char *gearman_task_strstate(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL ? lgc_task_state_name(t->state) : "invalid";
}

bool gearman_task_has_exception(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL && t->exception.size > 0;
}

gearman_string_t gearman_task_exception(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    gearman_string_t s = {NULL, 0};
    if (t != NULL && t->exception.size > 0) {
        s.c_str = t->exception.value;
        s.size = t->exception.size;
    }
    return s;
}

bool gearman_task_is_finished(const gearman_task_st *task)
{
    const struct lgc_task *t = TASK(task);
    return t != NULL && t->state == LGC_TASK_FINISHED;
}

/* ---------------------------------------------------------------- Spur's extensions (spur.h) */

/* set_keyed_option replaces the stored OPTION_REQ "key=..." by "key=value" and sends it on the
 * open connections (gearman_client_set_server_option). */
static gearman_return_t set_keyed_option(struct lgc_client *c, const char *key, uint32_t value)
{
    char opt[48];
    int n = snprintf(opt, sizeof opt, "%s=%u", key, (unsigned)value);
    size_t kl = strlen(key);
    for (size_t i = 0; i < c->u.noptions;) {
        if (strncmp(c->u.options[i], key, kl) == 0 && c->u.options[i][kl] == '=') {
            free(c->u.options[i]);
            memmove(&c->u.options[i], &c->u.options[i + 1],
                    (c->u.noptions - i - 1) * sizeof c->u.options[0]);
            c->u.noptions--;
        } else {
            i++;
        }
    }
    if (!gearman_client_set_server_option(c->shell, opt, (size_t)n))
        return lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "option %s", opt);
    return GEARMAN_SUCCESS;
}

gearman_return_t gearman_client_set_job_timeout(gearman_client_st *client, uint32_t timeout_ms)
{
    struct lgc_client *c = CLIENT(client);
    return c != NULL ? set_keyed_option(c, "job-timeout", timeout_ms) : GEARMAN_INVALID_ARGUMENT;
}

gearman_return_t gearman_client_set_job_ttl(gearman_client_st *client, uint32_t ttl_seconds)
{
    struct lgc_client *c = CLIENT(client);
    return c != NULL ? set_keyed_option(c, "job-ttl", ttl_seconds) : GEARMAN_INVALID_ARGUMENT;
}

/* cancel_step sends one request of a cancel (cmd with one argument) on conn and waits for its
 * answer, handling whatever else arrives meanwhile (the task's WORK_FAIL). Returns the answer
 * (c->cancel_rc) or a connection error. */
static gearman_return_t cancel_step(struct lgc_client *c, struct lgc_conn *conn, uint32_t cmd,
                                    const char *arg, size_t len)
{
    struct proto_arg a = {arg, len};
    gearman_return_t rc = lgc_conn_queue(&c->u, conn, cmd, &a, 1);
    if (rc != GEARMAN_SUCCESS)
        return rc;
    if (lgc_fifo_push(&conn->pend, LGC_PEND_CANCEL, NULL) != 0)
        return lgc_set_error(&c->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "cancel");
    c->cancel_answered = false;
    c->dispatch_rc = GEARMAN_SUCCESS;
    unsigned gen = conn->generation;
    for (;;) {
        if (conn->fd >= 0 && lgc_buf_len(&conn->out) > 0)
            (void)lgc_conn_write(&c->u, conn);
        if (conn->fd >= 0)
            (void)lgc_conn_read(&c->u, conn);
        process(c, conn);
        if (c->cancel_answered)
            return c->cancel_rc;
        if (c->dispatch_rc != GEARMAN_SUCCESS)
            return c->dispatch_rc;
        if (conn->fd < 0 || conn->generation != gen) {
            (void)sweep(c);
            return lgc_set_error(&c->u, GEARMAN_LOST_CONNECTION,
                                 "%s:%s went away before answering the cancel", conn->host,
                                 conn->port);
        }
        if ((rc = lgc_wait(&c->u)) != GEARMAN_SUCCESS)
            return rc;
    }
}

gearman_return_t gearman_client_cancel_job(gearman_client_st *client, const char *job_handle)
{
    struct lgc_client *c = CLIENT(client);
    if (c == NULL || job_handle == NULL || job_handle[0] == '\0')
        return GEARMAN_INVALID_ARGUMENT;
    lgc_clear_error(&c->u);
    const struct lgc_task *t = c->head;
    while (t != NULL && (t->conn == NULL || strcmp(t->handle, job_handle) != 0))
        t = t->next;
    if (t == NULL)
        return lgc_set_error(&c->u, GEARMAN_INVALID_ARGUMENT,
                             "no task of this client has the job handle %s", job_handle);
    struct lgc_conn *conn = t->conn;
    if (conn->fd < 0 || conn->generation != t->conn_gen)
        return lgc_set_error(&c->u, GEARMAN_LOST_CONNECTION,
                             "the connection the job was submitted on is gone");
    /* gearmand closes the connection on a command it does not know: ask first */
    gearman_return_t rc = cancel_step(c, conn, CMD_OPTION_REQ, "cancel-job", 10);
    if (rc != GEARMAN_SUCCESS && c->cancel_answered)
        return lgc_set_error(&c->u, GEARMAN_INVALID_SERVER_OPTION,
                             "%s:%s cannot cancel jobs (it refused OPTION_REQ cancel-job)",
                             conn->host, conn->port);
    if (rc != GEARMAN_SUCCESS)
        return rc;
    return cancel_step(c, conn, CMD_CANCEL_JOB, job_handle, strlen(job_handle));
}
