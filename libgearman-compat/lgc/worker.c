/* SPDX-License-Identifier: BSD-3-Clause */
/* worker: the worker object, its functions, grabbing jobs, and the job API. */
#include "lgc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* struct lgc_function is one function the worker can do. */
struct lgc_function {
    struct lgc_function *next; /* next function: the last registered comes first, as in
                                  libgearman, so a new connection announces them in its order */
    char *name;                /* owned, NUL-terminated */
    size_t name_len;           /* bytes of name */
    uint32_t timeout;          /* CAN_DO_TIMEOUT value, 0 for plain CAN_DO */
    gearman_function_t fn;     /* callback (kind NULL for gearman_worker_register) */
    void *context;             /* passed to the callback */
};

/* struct lgc_worker is the state behind a gearman_worker_st. */
struct lgc_worker {
    gearman_worker_st *shell;        /* the user's handle */
    struct lgc_universal u;          /* servers, timeout, last error */
    struct lgc_function *functions;  /* registered functions */
    uint32_t grab_cmd;               /* GRAB_JOB, GRAB_JOB_UNIQ (default) or GRAB_JOB_ALL */
    bool timeout_return;             /* GEARMAN_WORKER_TIMEOUT_RETURN */
    void *context;                   /* gearman_worker_set_context */
};

/* struct lgc_job is the state behind a gearman_job_st. */
struct lgc_job {
    gearman_job_st *shell;      /* the user's handle */
    struct lgc_worker *worker;  /* the worker that grabbed it (must outlive the job) */
    struct lgc_conn *conn;      /* the server it came from */
    unsigned conn_gen;          /* conn->generation at assignment */
    char handle[GEARMAN_JOB_HANDLE_SIZE]; /* NUL-terminated handle */
    char *function;             /* owned function name */
    char *unique;               /* owned unique ("" when none was sent) */
    char *workload;             /* owned workload, NUL-terminated, NULL when empty */
    size_t workload_size;       /* bytes of workload */
    bool finished;              /* WORK_COMPLETE/FAIL/EXCEPTION was sent */
    bool cancelled;             /* Spur: JOB_CANCELLED came for it (gearman_job_is_cancelled) */
};

/* WORKER returns the state behind a shell, or NULL. */
static struct lgc_worker *WORKER(const gearman_worker_st *shell)
{
    return shell != NULL ? (struct lgc_worker *)shell->_impl : NULL;
}

/* JOB returns the state behind a job shell, or NULL. */
static struct lgc_job *JOB(const gearman_job_st *shell)
{
    return shell != NULL ? (struct lgc_job *)shell->_impl : NULL;
}

/* ---------------------------------------------------------------- create and free */

/* add_server_cb adds one entry of a server list. */
static gearman_return_t add_server_cb(void *ctx, const char *host, in_port_t port)
{
    return lgc_add_server(ctx, host, port);
}

static gearman_return_t announce(void *owner, struct lgc_conn *conn);

/* worker_new allocates the state (and the shell when shell is NULL). */
static gearman_worker_st *worker_new(gearman_worker_st *shell)
{
    struct lgc_worker *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    bool allocated = false;
    if (shell == NULL) {
        shell = calloc(1, sizeof *shell);
        if (shell == NULL) {
            free(w);
            return NULL;
        }
        allocated = true;
    }
    shell->options.is_allocated = allocated;
    shell->options.is_initialized = true;
    shell->_impl = w;
    w->shell = shell;
    w->grab_cmd = CMD_GRAB_JOB_UNIQ;
    lgc_universal_init(&w->u);
    w->u.on_connect = announce;
    w->u.is_worker = true;
    w->u.owner = w;
    return shell;
}

gearman_worker_st *gearman_worker_create(gearman_worker_st *worker)
{
    gearman_worker_st *shell = worker_new(worker);
    if (shell == NULL)
        return NULL;
    const char *env = getenv("GEARMAN_SERVERS");
    if (env != NULL && lgc_parse_servers(env, add_server_cb, &WORKER(shell)->u) != GEARMAN_SUCCESS) {
        gearman_worker_free(shell);
        return NULL;
    }
    return shell;
}

/* function_add registers (or replaces) a function and tells the connected servers. */
static gearman_return_t function_add(struct lgc_worker *w, const char *name, size_t len,
                                     gearman_function_t fn, uint32_t timeout, void *context);

gearman_worker_st *gearman_worker_clone(gearman_worker_st *worker, const gearman_worker_st *from)
{
    const struct lgc_worker *src = WORKER(from);
    if (src == NULL)
        return gearman_worker_create(worker);
    gearman_worker_st *shell = worker_new(worker);
    if (shell == NULL)
        return NULL;
    struct lgc_worker *w = WORKER(shell);
    if (lgc_universal_copy(&w->u, &src->u) != 0)
        goto fail;
    w->grab_cmd = src->grab_cmd;
    w->timeout_return = src->timeout_return;
    for (const struct lgc_function *f = src->functions; f != NULL; f = f->next) {
        if (function_add(w, f->name, f->name_len, f->fn, f->timeout, f->context) != GEARMAN_SUCCESS)
            goto fail;
    }
    struct lgc_function *reversed = NULL; /* function_add put each first: restore src's order */
    while (w->functions != NULL) {
        struct lgc_function *f = w->functions;
        w->functions = f->next;
        f->next = reversed;
        reversed = f;
    }
    w->functions = reversed;
    return shell;
fail:
    gearman_worker_free(shell);
    return NULL;
}

/* functions_free frees every function. */
static void functions_free(struct lgc_worker *w)
{
    while (w->functions != NULL) {
        struct lgc_function *f = w->functions;
        w->functions = f->next;
        free(f->name);
        free(f);
    }
}

void gearman_worker_free(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return;
    functions_free(w);
    lgc_universal_free(&w->u);
    free(w);
    worker->_impl = NULL;
    worker->options.is_initialized = false;
    if (worker->options.is_allocated)
        free(worker);
}

/* ---------------------------------------------------------------- errors, options, settings */

const char *gearman_worker_error(const gearman_worker_st *worker)
{
    const struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return "invalid worker";
    return w->u.error[0] != '\0' ? w->u.error : NULL;
}

gearman_return_t gearman_worker_error_code(const gearman_worker_st *worker)
{
    const struct lgc_worker *w = WORKER(worker);
    return w != NULL ? w->u.error_code : GEARMAN_INVALID_ARGUMENT;
}

int gearman_worker_errno(gearman_worker_st *worker)
{
    const struct lgc_worker *w = WORKER(worker);
    return w != NULL ? w->u.last_errno : 0;
}

gearman_worker_options_t gearman_worker_options(const gearman_worker_st *worker)
{
    const struct lgc_worker *w = WORKER(worker);
    int o = 0;
    if (w == NULL)
        return (gearman_worker_options_t)0;
    if (worker->options.is_allocated)
        o |= GEARMAN_WORKER_ALLOCATED;
    if (w->u.non_blocking)
        o |= GEARMAN_WORKER_NON_BLOCKING;
    if (w->u.ssl)
        o |= GEARMAN_WORKER_SSL;
    if (w->grab_cmd == CMD_GRAB_JOB_UNIQ)
        o |= GEARMAN_WORKER_GRAB_UNIQ;
    if (w->grab_cmd == CMD_GRAB_JOB_ALL)
        o |= GEARMAN_WORKER_GRAB_ALL;
    if (w->timeout_return)
        o |= GEARMAN_WORKER_TIMEOUT_RETURN;
    if (w->u.identifier != NULL)
        o |= GEARMAN_WORKER_IDENTIFIER;
    return (gearman_worker_options_t)o;
}

/* send_identifier queues SET_CLIENT_ID on every connected server. */
static gearman_return_t send_identifier(struct lgc_worker *w)
{
    if (w->u.identifier == NULL)
        return GEARMAN_SUCCESS;
    for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
        struct proto_arg a = {w->u.identifier, w->u.identifier_len};
        gearman_return_t rc;
        if (conn->fd >= 0 &&
            (rc = lgc_conn_queue(&w->u, conn, CMD_SET_CLIENT_ID, &a, 1)) != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

void gearman_worker_add_options(gearman_worker_st *worker, gearman_worker_options_t options)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return;
    if (options & GEARMAN_WORKER_NON_BLOCKING)
        w->u.non_blocking = true;
    if (options & GEARMAN_WORKER_SSL)
        w->u.ssl = true; /* connections made from now on */
    if (options & GEARMAN_WORKER_GRAB_UNIQ)
        w->grab_cmd = CMD_GRAB_JOB_UNIQ;
    if (options & GEARMAN_WORKER_GRAB_ALL)
        w->grab_cmd = CMD_GRAB_JOB_ALL;
    if (options & GEARMAN_WORKER_TIMEOUT_RETURN)
        w->timeout_return = true;
    if ((options & GEARMAN_WORKER_IDENTIFIER) && w->u.identifier == NULL) {
        char id[GEARMAN_MAX_UUID_SIZE + 1];
        lgc_make_uuid(id);
        if (lgc_set_identifier(&w->u, id, strlen(id)) == GEARMAN_SUCCESS)
            (void)send_identifier(w);
    }
}

void gearman_worker_remove_options(gearman_worker_st *worker, gearman_worker_options_t options)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return;
    if (options & GEARMAN_WORKER_NON_BLOCKING)
        w->u.non_blocking = false;
    if (options & GEARMAN_WORKER_SSL)
        w->u.ssl = false;
    if ((options & GEARMAN_WORKER_GRAB_UNIQ) && w->grab_cmd == CMD_GRAB_JOB_UNIQ)
        w->grab_cmd = CMD_GRAB_JOB;
    if ((options & GEARMAN_WORKER_GRAB_ALL) && w->grab_cmd == CMD_GRAB_JOB_ALL)
        w->grab_cmd = CMD_GRAB_JOB;
    if (options & GEARMAN_WORKER_TIMEOUT_RETURN) {
        w->timeout_return = false;
        w->u.timeout = GEARMAN_WORKER_WAIT_TIMEOUT;
    }
    if (options & GEARMAN_WORKER_IDENTIFIER)
        (void)lgc_set_identifier(&w->u, NULL, 0);
}

void gearman_worker_set_options(gearman_worker_st *worker, gearman_worker_options_t options)
{
    const int settable = GEARMAN_WORKER_NON_BLOCKING | GEARMAN_WORKER_SSL | GEARMAN_WORKER_GRAB_UNIQ |
                         GEARMAN_WORKER_GRAB_ALL | GEARMAN_WORKER_TIMEOUT_RETURN |
                         GEARMAN_WORKER_IDENTIFIER;
    gearman_worker_remove_options(worker, (gearman_worker_options_t)(~options & settable));
    gearman_worker_add_options(worker, (gearman_worker_options_t)(options & settable));
}

void gearman_worker_set_ssl(gearman_worker_st *worker, bool ssl, const char *ca_file,
                            const char *certificate, const char *key_file)
{
    struct lgc_worker *w = WORKER(worker);
    if (w != NULL && lgc_tls_set(&w->u, ssl, ca_file, certificate, key_file) != 0)
        lgc_set_error(&w->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "gearman_worker_set_ssl");
}

int gearman_worker_timeout(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    return w != NULL ? w->u.timeout : -1;
}

void gearman_worker_set_timeout(gearman_worker_st *worker, int timeout)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return;
    w->timeout_return = true;
    w->u.timeout = timeout < 0 ? -1 : timeout;
}

void *gearman_worker_context(const gearman_worker_st *worker)
{
    const struct lgc_worker *w = WORKER(worker);
    return w != NULL ? w->context : NULL;
}

void gearman_worker_set_context(gearman_worker_st *worker, void *context)
{
    struct lgc_worker *w = WORKER(worker);
    if (w != NULL)
        w->context = context;
}

void gearman_worker_set_log_fn(gearman_worker_st *worker, gearman_log_fn *function, void *context,
                               gearman_verbose_t verbose)
{
    (void)worker;
    (void)function;
    (void)context;
    (void)verbose;
}

gearman_return_t gearman_worker_add_server(gearman_worker_st *worker, const char *host,
                                           in_port_t port)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    return lgc_add_server(&w->u, host, port);
}

gearman_return_t gearman_worker_add_servers(gearman_worker_st *worker, const char *servers)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_return_t rc = lgc_parse_servers(servers, add_server_cb, &w->u);
    if (rc == GEARMAN_INVALID_ARGUMENT)
        lgc_set_error(&w->u, rc, "bad server list \"%s\"", servers);
    return rc;
}

void gearman_worker_remove_servers(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    if (w != NULL)
        lgc_remove_servers(&w->u);
}

gearman_return_t gearman_worker_wait(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    return lgc_wait(&w->u);
}

gearman_return_t gearman_worker_set_identifier(gearman_worker_st *worker, const char *id,
                                               size_t id_size)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_return_t rc = lgc_set_identifier(&w->u, id, id_size);
    return rc != GEARMAN_SUCCESS ? rc : send_identifier(w);
}

/* ---------------------------------------------------------------- functions */

/* queue_can_do queues CAN_DO (or CAN_DO_TIMEOUT) for f on conn. */
static gearman_return_t queue_can_do(struct lgc_worker *w, struct lgc_conn *conn,
                                     const struct lgc_function *f)
{
    if (f->timeout == 0) {
        struct proto_arg a = {f->name, f->name_len};
        return lgc_conn_queue(&w->u, conn, CMD_CAN_DO, &a, 1);
    }
    char num[16];
    snprintf(num, sizeof num, "%u", (unsigned)f->timeout);
    struct proto_arg a[2] = {{f->name, f->name_len}, {num, strlen(num)}};
    return lgc_conn_queue(&w->u, conn, CMD_CAN_DO_TIMEOUT, a, 2);
}

/* find returns the function called name, or NULL. */
static struct lgc_function *find(const struct lgc_worker *w, const char *name, size_t len)
{
    for (struct lgc_function *f = w->functions; f != NULL; f = f->next) {
        if (f->name_len == len && memcmp(f->name, name, len) == 0)
            return f;
    }
    return NULL;
}

static gearman_return_t function_add(struct lgc_worker *w, const char *name, size_t len,
                                     gearman_function_t fn, uint32_t timeout, void *context)
{
    if (name == NULL || len == 0)
        return lgc_set_error(&w->u, GEARMAN_INVALID_ARGUMENT, "function name is empty");
    if (len > GEARMAN_FUNCTION_MAX_SIZE)
        return lgc_set_error(&w->u, GEARMAN_INVALID_ARGUMENT, "function name longer than %d bytes",
                             GEARMAN_FUNCTION_MAX_SIZE);
    struct lgc_function *f = find(w, name, len);
    if (f == NULL) {
        f = calloc(1, sizeof *f);
        if (f == NULL || (f->name = malloc(len + 1)) == NULL) {
            free(f);
            return lgc_set_error(&w->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "function");
        }
        memcpy(f->name, name, len);
        f->name[len] = '\0';
        f->name_len = len;
        f->next = w->functions;
        w->functions = f;
    }
    f->timeout = timeout;
    f->fn = fn;
    f->context = context;
    for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
        gearman_return_t rc;
        if (conn->fd >= 0 && (rc = queue_can_do(w, conn, f)) != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

gearman_return_t gearman_worker_register(gearman_worker_st *worker, const char *function_name,
                                         uint32_t timeout)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL || function_name == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_function_t none;
    memset(&none, 0, sizeof none);
    return function_add(w, function_name, strlen(function_name), none, timeout, NULL);
}

gearman_return_t gearman_worker_add_function(gearman_worker_st *worker, const char *function_name,
                                             uint32_t timeout, gearman_worker_fn *function,
                                             void *context)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL || function_name == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    if (function == NULL)
        return lgc_set_error(&w->u, GEARMAN_INVALID_ARGUMENT, "no callback given");
    return function_add(w, function_name, strlen(function_name),
                        gearman_function_create_v1(function), timeout, context);
}

gearman_return_t gearman_worker_define_function(gearman_worker_st *worker,
                                                const char *function_name,
                                                const size_t function_name_length,
                                                const gearman_function_t function,
                                                const uint32_t timeout, void *context)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    if ((function.kind == GEARMAN_WORKER_FUNCTION_V1 && function.callback.function_v1.func == NULL) ||
        (function.kind == GEARMAN_WORKER_FUNCTION_V2 && function.callback.function_v2.func == NULL) ||
        (function.kind != GEARMAN_WORKER_FUNCTION_V1 && function.kind != GEARMAN_WORKER_FUNCTION_V2))
        return lgc_set_error(&w->u, GEARMAN_INVALID_ARGUMENT, "unsupported or empty callback");
    return function_add(w, function_name, function_name_length, function, timeout, context);
}

bool gearman_worker_function_exist(gearman_worker_st *worker, const char *function_name,
                                   size_t function_length)
{
    struct lgc_worker *w = WORKER(worker);
    return w != NULL && function_name != NULL && find(w, function_name, function_length) != NULL;
}

gearman_return_t gearman_worker_unregister(gearman_worker_st *worker, const char *function_name)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL || function_name == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    size_t len = strlen(function_name);
    struct lgc_function **pp = &w->functions;
    while (*pp != NULL && !((*pp)->name_len == len && memcmp((*pp)->name, function_name, len) == 0))
        pp = &(*pp)->next;
    if (*pp == NULL)
        return lgc_set_error(&w->u, GEARMAN_NO_REGISTERED_FUNCTION, "%s is not registered",
                             function_name);
    struct lgc_function *f = *pp;
    *pp = f->next;
    free(f->name);
    free(f);
    for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
        struct proto_arg a = {function_name, len};
        gearman_return_t rc;
        if (conn->fd >= 0 && (rc = lgc_conn_queue(&w->u, conn, CMD_CANT_DO, &a, 1)) != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

gearman_return_t gearman_worker_unregister_all(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    if (w->functions == NULL)
        return lgc_set_error(&w->u, GEARMAN_NO_REGISTERED_FUNCTIONS, "no functions registered");
    functions_free(w);
    for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
        gearman_return_t rc;
        if (conn->fd >= 0 &&
            (rc = lgc_conn_queue(&w->u, conn, CMD_RESET_ABILITIES, NULL, 0)) != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

/* ---------------------------------------------------------------- grabbing jobs */

/* announce queues every CAN_DO on a fresh connection (the universal's on_connect hook). */
static gearman_return_t announce(void *owner, struct lgc_conn *conn)
{
    struct lgc_worker *w = owner;
    for (const struct lgc_function *f = w->functions; f != NULL; f = f->next) {
        gearman_return_t rc = queue_can_do(w, conn, f);
        if (rc != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

/* worker_connect connects conn; announce queues the functions. */
static gearman_return_t worker_connect(struct lgc_worker *w, struct lgc_conn *conn)
{
    return lgc_conn_connect(&w->u, conn);
}

/* copy_str returns a NUL-terminated copy of len bytes, or NULL. */
static char *copy_str(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p != NULL) {
        if (len > 0)
            memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* make_job builds a job from a JOB_ASSIGN* packet. Returns the shell, or NULL (out of memory). */
static gearman_job_st *make_job(struct lgc_worker *w, struct lgc_conn *conn,
                                const struct pb_packet *pkt, gearman_job_st *shell)
{
    struct lgc_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    size_t hl = pkt->len[0] < GEARMAN_JOB_HANDLE_SIZE - 1 ? pkt->len[0] : GEARMAN_JOB_HANDLE_SIZE - 1;
    memcpy(j->handle, pkt->arg[0], hl);
    j->handle[hl] = '\0';
    j->function = copy_str(pkt->arg[1], pkt->len[1]);
    j->unique = pkt->cmd == CMD_JOB_ASSIGN ? copy_str("", 0) : copy_str(pkt->arg[2], pkt->len[2]);
    if (pkt->data_len > 0)
        j->workload = copy_str(pkt->data, pkt->data_len);
    j->workload_size = pkt->data_len;
    bool allocated = false;
    if (shell == NULL) {
        shell = calloc(1, sizeof *shell);
        allocated = true;
    }
    if (shell == NULL || j->function == NULL || j->unique == NULL ||
        (pkt->data_len > 0 && j->workload == NULL)) {
        free(j->function);
        free(j->unique);
        free(j->workload);
        free(j);
        if (allocated)
            free(shell);
        return NULL;
    }
    shell->options.is_allocated = allocated;
    shell->options.is_initialized = true;
    shell->_impl = j;
    j->shell = shell;
    j->worker = w;
    j->conn = conn;
    j->conn_gen = conn->generation;
    return shell;
}

/* on_idle_packet handles packets that arrive while no GRAB is outstanding. */
static void on_idle_packet(void *owner, struct lgc_conn *conn, const struct pb_packet *pkt)
{
    (void)owner;
    if (pkt->cmd == CMD_NOOP)
        conn->noop = true;
}

gearman_job_st *gearman_worker_grab_job(gearman_worker_st *worker, gearman_job_st *job,
                                        gearman_return_t *ret_ptr)
{
    gearman_return_t unused;
    if (ret_ptr == NULL)
        ret_ptr = &unused;
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL) {
        *ret_ptr = GEARMAN_INVALID_ARGUMENT;
        return NULL;
    }
    lgc_clear_error(&w->u);
    if (w->u.conns == NULL) {
        *ret_ptr = lgc_set_error(&w->u, GEARMAN_NO_SERVERS, "no servers added");
        return NULL;
    }
    if (w->functions == NULL) {
        *ret_ptr = lgc_set_error(&w->u, GEARMAN_NO_REGISTERED_FUNCTIONS, "no functions registered");
        return NULL;
    }
    for (;;) {
        /* Ask each server in turn, as libgearman does, so at most one job is assigned at once. */
        gearman_return_t last = GEARMAN_COULD_NOT_CONNECT;
        int alive = 0;
        for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
            gearman_return_t rc;
            if (conn->fd < 0 && (rc = worker_connect(w, conn)) != GEARMAN_SUCCESS) {
                last = rc;
                if (rc == GEARMAN_MEMORY_ALLOCATION_FAILURE) {
                    *ret_ptr = rc;
                    return NULL;
                }
                continue;
            }
            conn->sleeping = false;
            if ((rc = lgc_conn_queue(&w->u, conn, w->grab_cmd, NULL, 0)) != GEARMAN_SUCCESS) {
                *ret_ptr = rc;
                return NULL;
            }
            for (;;) {
                struct pb_packet pkt;
                size_t used;
                rc = lgc_conn_recv(&w->u, conn, &pkt, &used);
                if (rc == GEARMAN_TIMEOUT) {
                    lgc_conn_close(conn); /* a late JOB_ASSIGN would be lost: let the server requeue */
                    *ret_ptr = rc;
                    return NULL;
                }
                if (rc != GEARMAN_SUCCESS) {
                    last = rc;
                    lgc_conn_close(conn);
                    break;
                }
                if (pkt.cmd == CMD_JOB_ASSIGN || pkt.cmd == CMD_JOB_ASSIGN_UNIQ ||
                    pkt.cmd == CMD_JOB_ASSIGN_ALL) {
                    gearman_job_st *got = make_job(w, conn, &pkt, job);
                    lgc_conn_consume(conn, used);
                    *ret_ptr = got != NULL ? GEARMAN_SUCCESS
                                           : lgc_set_error(&w->u, GEARMAN_MEMORY_ALLOCATION_FAILURE,
                                                           "job");
                    if (got == NULL)
                        lgc_conn_close(conn); /* the server requeues the job */
                    return got;
                }
                bool no_job = pkt.cmd == CMD_NO_JOB;
                if (pkt.cmd == CMD_ERROR)
                    lgc_set_error(&w->u, lgc_return_from_server_code(pkt.arg[0], pkt.len[0]),
                                  "%.*s: %.*s", (int)pkt.len[0], pkt.arg[0], (int)pkt.len[1],
                                  pkt.arg[1]);
                lgc_conn_consume(conn, used);
                if (no_job) {
                    alive++;
                    break;
                }
            }
        }
        if (alive == 0) {
            *ret_ptr = last;
            if (w->u.error_code != last)
                lgc_set_error(&w->u, last, "no server could be reached");
            return NULL;
        }
        if (w->u.non_blocking) {
            *ret_ptr = lgc_set_error(&w->u, GEARMAN_NO_JOBS, "no job available");
            return NULL;
        }
        for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
            if (conn->fd < 0)
                continue;
            conn->noop = false;
            conn->sleeping = true;
            if (lgc_conn_queue(&w->u, conn, CMD_PRE_SLEEP, NULL, 0) != GEARMAN_SUCCESS) {
                *ret_ptr = GEARMAN_MEMORY_ALLOCATION_FAILURE;
                return NULL;
            }
            (void)lgc_conn_write(&w->u, conn);
        }
        /* Sleep until a server sends NOOP, one goes away, or the timeout passes. */
        bool wake = false;
        while (!wake) {
            gearman_return_t rc = lgc_wait(&w->u);
            if (rc == GEARMAN_TIMEOUT) {
                if (w->timeout_return) {
                    *ret_ptr = rc;
                    return NULL;
                }
                break;
            }
            if (rc == GEARMAN_NO_ACTIVE_FDS)
                break;
            if (rc != GEARMAN_SUCCESS) {
                *ret_ptr = rc;
                return NULL;
            }
            for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
                struct pb_packet pkt;
                size_t used;
                while (lgc_conn_packet(&w->u, conn, &pkt, &used) > 0) {
                    on_idle_packet(w, conn, &pkt);
                    lgc_conn_consume(conn, used);
                }
                if (conn->noop || (conn->sleeping && conn->fd < 0))
                    wake = true;
            }
        }
        lgc_clear_error(&w->u);
    }
}

/* ---------------------------------------------------------------- running jobs */

/* job_send queues one WORK_* packet for j and waits until it is written. A final packet marks
 * the job finished; after that final packets are not sent again. */
static gearman_return_t job_send(struct lgc_job *j, uint32_t cmd, const struct proto_arg *args,
                                 int nargs, bool final)
{
    if (j == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    if (j->finished)
        return GEARMAN_SUCCESS;
    struct lgc_worker *w = j->worker;
    if (j->conn->fd < 0 || j->conn->generation != j->conn_gen)
        return lgc_set_error(&w->u, GEARMAN_LOST_CONNECTION,
                             "the connection job %s came on is gone", j->handle);
    gearman_return_t rc = lgc_conn_queue(&w->u, j->conn, cmd, args, nargs);
    if (rc == GEARMAN_SUCCESS)
        rc = lgc_conn_flush(&w->u, j->conn);
    if (rc == GEARMAN_TIMEOUT)
        lgc_conn_close(j->conn); /* half a packet may be out: the stream is unusable */
    if (rc == GEARMAN_SUCCESS && final)
        j->finished = true;
    return rc;
}

gearman_return_t gearman_job_send_data(gearman_job_st *job, const void *data, size_t data_size)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL || (data == NULL && data_size > 0))
        return GEARMAN_INVALID_ARGUMENT;
    struct proto_arg a[2] = {{j->handle, strlen(j->handle)}, {data, data_size}};
    return job_send(j, CMD_WORK_DATA, a, 2, false);
}

gearman_return_t gearman_job_send_warning(gearman_job_st *job, const void *warning,
                                          size_t warning_size)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL || (warning == NULL && warning_size > 0))
        return GEARMAN_INVALID_ARGUMENT;
    struct proto_arg a[2] = {{j->handle, strlen(j->handle)}, {warning, warning_size}};
    return job_send(j, CMD_WORK_WARNING, a, 2, false);
}

gearman_return_t gearman_job_send_status(gearman_job_st *job, uint32_t numerator,
                                         uint32_t denominator)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    char num[16], den[16];
    snprintf(num, sizeof num, "%u", (unsigned)numerator);
    snprintf(den, sizeof den, "%u", (unsigned)denominator);
    struct proto_arg a[3] = {{j->handle, strlen(j->handle)}, {num, strlen(num)}, {den, strlen(den)}};
    return job_send(j, CMD_WORK_STATUS, a, 3, false);
}

gearman_return_t gearman_job_send_complete(gearman_job_st *job, const void *result,
                                           size_t result_size)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL || (result == NULL && result_size > 0))
        return GEARMAN_INVALID_ARGUMENT;
    struct proto_arg a[2] = {{j->handle, strlen(j->handle)}, {result, result_size}};
    return job_send(j, CMD_WORK_COMPLETE, a, 2, true);
}

gearman_return_t gearman_job_send_exception(gearman_job_st *job, const void *exception,
                                            size_t exception_size)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL || (exception == NULL && exception_size > 0))
        return GEARMAN_INVALID_ARGUMENT;
    struct proto_arg a[2] = {{j->handle, strlen(j->handle)}, {exception, exception_size}};
    return job_send(j, CMD_WORK_EXCEPTION, a, 2, true);
}

gearman_return_t gearman_job_send_fail(gearman_job_st *job)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    struct proto_arg a = {j->handle, strlen(j->handle)};
    return job_send(j, CMD_WORK_FAIL, &a, 1, true);
}

void gearman_job_free(gearman_job_st *job)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL)
        return;
    free(j->function);
    free(j->unique);
    free(j->workload);
    free(j);
    job->_impl = NULL;
    job->options.is_initialized = false;
    if (job->options.is_allocated)
        free(job);
}

const char *gearman_job_handle(const gearman_job_st *job)
{
    const struct lgc_job *j = JOB(job);
    return j != NULL ? j->handle : NULL;
}

const char *gearman_job_function_name(const gearman_job_st *job)
{
    const struct lgc_job *j = JOB(job);
    return j != NULL ? j->function : NULL;
}

const char *gearman_job_unique(const gearman_job_st *job)
{
    const struct lgc_job *j = JOB(job);
    return j != NULL ? j->unique : NULL;
}

const void *gearman_job_workload(const gearman_job_st *job)
{
    const struct lgc_job *j = JOB(job);
    return j != NULL ? j->workload : NULL;
}

size_t gearman_job_workload_size(const gearman_job_st *job)
{
    const struct lgc_job *j = JOB(job);
    return j != NULL ? j->workload_size : 0;
}

void *gearman_job_take_workload(gearman_job_st *job, size_t *data_size)
{
    struct lgc_job *j = JOB(job);
    size_t unused;
    if (data_size == NULL)
        data_size = &unused;
    *data_size = 0;
    if (j == NULL)
        return NULL;
    void *p = j->workload;
    *data_size = j->workload_size;
    j->workload = NULL;
    j->workload_size = 0;
    return p;
}

const char *gearman_job_error(gearman_job_st *job)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL)
        return NULL;
    return j->worker->u.error[0] != '\0' ? j->worker->u.error : NULL;
}

/* run_v1 runs a gearman_worker_fn and sends its outcome. Returns what gearman_worker_work
 * returns. */
static gearman_return_t run_v1(struct lgc_worker *w, struct lgc_function *f, gearman_job_st *job)
{
    struct lgc_job *j = JOB(job);
    size_t size = 0;
    gearman_return_t fret = GEARMAN_SUCCESS;
    void *result = f->fn.callback.function_v1.func(job, f->context, &size, &fret);
    gearman_return_t out;
    if (fret == GEARMAN_SUCCESS || fret == GEARMAN_SHUTDOWN) {
        gearman_return_t rc = gearman_job_send_complete(job, result, result != NULL ? size : 0);
        if (rc == GEARMAN_SUCCESS || rc == GEARMAN_LOST_CONNECTION)
            out = fret;
        else
            out = rc;
    } else if (fret == GEARMAN_LOST_CONNECTION) {
        lgc_conn_close(j->conn); /* give the job back: the server requeues it */
        out = GEARMAN_SUCCESS;
    } else {
        (void)gearman_job_send_fail(job);
        out = lgc_set_error(&w->u, fret, "function %s failed the job", f->name);
    }
    free(result);
    return out;
}

/* run_v2 runs a gearman_function_fn and sends its outcome. */
static gearman_return_t run_v2(struct lgc_worker *w, struct lgc_function *f, gearman_job_st *job)
{
    struct lgc_job *j = JOB(job);
    gearman_return_t fret = f->fn.callback.function_v2.func(job, f->context);
    switch (fret) {
    case GEARMAN_SUCCESS:
    case GEARMAN_SHUTDOWN: {
        gearman_return_t rc = gearman_job_send_complete(job, NULL, 0);
        return rc == GEARMAN_SUCCESS || rc == GEARMAN_LOST_CONNECTION ? fret : rc;
    }
    case GEARMAN_ERROR:
        lgc_conn_close(j->conn); /* retry: the server requeues the job */
        return GEARMAN_SUCCESS;
    default:
        (void)gearman_job_send_fail(job);
        return lgc_set_error(&w->u, GEARMAN_WORK_FAIL, "function %s failed the job (%s)", f->name,
                             gearman_strerror(fret));
    }
}

gearman_return_t gearman_worker_work(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    gearman_return_t rc;
    gearman_job_st *job = gearman_worker_grab_job(worker, NULL, &rc);
    if (job == NULL)
        return rc;
    struct lgc_job *j = JOB(job);
    struct lgc_function *f = find(w, j->function, strlen(j->function));
    if (f == NULL || f->fn.kind == GEARMAN_WORKER_FUNCTION_NULL) {
        (void)gearman_job_send_fail(job);
        rc = lgc_set_error(&w->u, GEARMAN_INVALID_FUNCTION_NAME, "no callback for function %s",
                           j->function);
    } else if (f->fn.kind == GEARMAN_WORKER_FUNCTION_V1) {
        rc = run_v1(w, f, job);
    } else {
        rc = run_v2(w, f, job);
    }
    gearman_job_free(job);
    return rc;
}

gearman_return_t gearman_worker_echo(gearman_worker_st *worker, const void *workload,
                                     size_t workload_size)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL || (workload == NULL && workload_size > 0))
        return GEARMAN_INVALID_ARGUMENT;
    lgc_clear_error(&w->u);
    return lgc_echo(&w->u, workload, workload_size, on_idle_packet, w);
}

/* ---------------------------------------------------------------- Spur's extensions (spur.h) */

gearman_return_t gearman_worker_set_cancel_notify(gearman_worker_st *worker)
{
    struct lgc_worker *w = WORKER(worker);
    if (w == NULL)
        return GEARMAN_INVALID_ARGUMENT;
    if (lgc_add_option(&w->u, "cancel-notify", 13) != 0)
        return lgc_set_error(&w->u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "option");
    /* open connections get it now (their answer is read and ignored by the next grab), new
     * ones when they connect, before their CAN_DOs */
    struct proto_arg a = {"cancel-notify", 13};
    for (struct lgc_conn *conn = w->u.conns; conn != NULL; conn = conn->next) {
        gearman_return_t rc;
        if (conn->fd >= 0 &&
            (rc = lgc_conn_queue(&w->u, conn, CMD_OPTION_REQ, &a, 1)) != GEARMAN_SUCCESS)
            return rc;
    }
    return GEARMAN_SUCCESS;
}

bool gearman_job_is_cancelled(gearman_job_st *job)
{
    struct lgc_job *j = JOB(job);
    if (j == NULL)
        return false;
    struct lgc_conn *conn = j->conn;
    if (j->cancelled || conn->fd < 0 || conn->generation != j->conn_gen)
        return true;
    if (lgc_conn_read(&j->worker->u, conn) != 0) /* without waiting */
        return true;
    /* look through what has arrived without taking it: the grab loop skips it later */
    const char *p = lgc_buf_head(&conn->in);
    size_t n = lgc_buf_len(&conn->in);
    struct pb_packet pkt;
    size_t used;
    for (;;) {
        enum pb_status st = pb_parse(p, n, PROTO_MAGIC_RES, UINT32_MAX, &pkt, &used);
        if (st == PB_OK && pkt.cmd == CMD_JOB_CANCELLED &&
            lgc_handle_matches(j->handle, pkt.arg[0], pkt.len[0])) {
            j->cancelled = true;
            return true;
        }
        if (st != PB_OK && st != PB_BAD_COMMAND)
            return false;
        p += used;
        n -= used;
    }
}
