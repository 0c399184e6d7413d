/* SPDX-License-Identifier: BSD-3-Clause */
/* lgc_driver: runs one libgearman API scenario per subcommand, for the wire tests.
 * Uses only libgearman's public API, so the same source also builds against libgearman.
 *
 * usage: lgc_driver [-s host:port,...] [-t timeout_ms] [-P high|low] [-u unique] [-z size]
 *                   [-c count] [-m mode] [-e seconds] [-x] [-n] [-i id] [-T can_do_timeout]
 *                   [-S] [-F ca:cert:key] COMMAND [ARGS...]
 * -S: TLS (GEARMAN_CLIENT_SSL / GEARMAN_WORKER_SSL; files from the environment, as libgearman);
 * -F: the client's TLS files through gearman_client_set_ssl (empty fields: the environment).
 * Commands (FUNC is a function name, DATA a payload; -z replaces DATA by -z bytes of a pattern):
 *   do FUNC DATA        gearman_client_do{,_high,_low}; prints rc, handle and the result
 *   bg FUNC DATA        gearman_client_do{,_high,_low}_background; prints rc and handle
 *   status HANDLE       gearman_client_job_status
 *   echo DATA           gearman_client_echo;  wecho DATA: gearman_worker_echo
 *   tasks FUNC N        N tasks (mixed priorities, foreground) in one run_tasks, all callbacks
 *                       (-n: non-blocking, run_tasks/gearman_client_wait until done)
 *   bgtasks FUNC N      N background tasks in one run_tasks
 *   taskstatus HANDLE   gearman_client_add_task_status + run_tasks
 *   execute FUNC DATA   gearman_execute (foreground; -e N: epoch now+N; -b: background)
 *   worker FUNC         a worker; -m reverse|fail|exception|hang|chatty|die|v2|shutdown|nullresult
 *                       (hang: one WORK_STATUS 0/1, then no answer for 60 s);
 *                       -c jobs to do; -T CAN_DO_TIMEOUT; -i identifier; -t wait timeout
 *   grab FUNC...        register FUNCs, gearman_worker_grab_job once (-n non-blocking, -t timeout)
 *   register FUNC...    register functions, unregister the first, unregister_all; prints rcs
 *   selftest            checks that need no server (options, names, values, accessors)
 * Output: "key=value" lines on stdout. Exit status 0 unless the scenario itself broke. */
#include <libgearman/gearman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* struct opts is the parsed command line. */
struct opts {
    const char *servers;   /* -s */
    int timeout;           /* -t, -1 unset */
    const char *priority;  /* -P */
    const char *unique;    /* -u */
    long size;             /* -z, -1 unset */
    long count;            /* -c */
    const char *mode;      /* -m */
    long epoch;            /* -e, -1 unset */
    int background;        /* -b */
    int exceptions;        /* -x */
    int non_blocking;      /* -n */
    const char *identifier; /* -i */
    uint32_t can_do_timeout; /* -T */
    int ssl;               /* -S */
    char *ssl_files;       /* -F ca:cert:key */
};

static struct opts O = {"127.0.0.1:4730", -1, "normal", NULL, -1, -1, "reverse", -1, 0, 0, 0,
                        NULL, 0, 0, NULL};

/* pattern returns n bytes of a deterministic pattern (malloc()ed). */
static char *pattern(size_t n)
{
    char *p = malloc(n + 1);
    if (p == NULL)
        exit(3);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)('a' + (i * 7 + i / 26) % 26);
    p[n] = '\0';
    return p;
}

/* payload returns the payload: -z bytes of pattern, or arg. */
static char *payload(const char *arg, size_t *n)
{
    if (O.size >= 0) {
        *n = (size_t)O.size;
        return pattern(*n);
    }
    *n = strlen(arg);
    char *p = malloc(*n + 1);
    if (p == NULL)
        exit(3);
    memcpy(p, arg, *n + 1);
    return p;
}

/* is_reverse reports whether r (rn bytes) is d (dn bytes) reversed. */
static int is_reverse(const char *d, size_t dn, const char *r, size_t rn)
{
    if (dn != rn)
        return 0;
    for (size_t i = 0; i < dn; i++) {
        if (d[i] != r[dn - 1 - i])
            return 0;
    }
    return 1;
}

/* print_bytes prints key=value with the value escaped (non-printables as \xNN), capped. */
static void print_bytes(const char *key, const void *data, size_t n)
{
    const unsigned char *p = data;
    printf("%s=", key);
    for (size_t i = 0; i < n && i < 200; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
    printf("\n");
}

/* client_new creates a client with -s, -t and -x applied. */
static gearman_client_st *client_new(void)
{
    gearman_client_st *c = gearman_client_create(NULL);
    if (c == NULL)
        exit(3);
    if (gearman_failed(gearman_client_add_servers(c, O.servers))) {
        fprintf(stderr, "add_servers: %s\n", gearman_client_error(c));
        exit(3);
    }
    if (O.timeout >= 0)
        gearman_client_set_timeout(c, O.timeout);
    if (O.exceptions)
        gearman_client_add_options(c, GEARMAN_CLIENT_EXCEPTION);
    if (O.ssl)
        gearman_client_add_options(c, GEARMAN_CLIENT_SSL);
    if (O.ssl_files != NULL) {
        char *f = strdup(O.ssl_files);
        char *ca = f, *cert = strchr(ca, ':'), *key = NULL;
        if (cert != NULL) {
            *cert++ = '\0';
            if ((key = strchr(cert, ':')) != NULL)
                *key++ = '\0';
        }
        gearman_client_set_ssl(c, true, ca, cert, key);
        free(f);
    }
    return c;
}

/* worker_new creates a worker with -s, -t and -S applied. */
static gearman_worker_st *worker_new(void)
{
    gearman_worker_st *w = gearman_worker_create(NULL);
    if (w == NULL)
        exit(3);
    gearman_worker_add_servers(w, O.servers);
    if (O.timeout >= 0)
        gearman_worker_set_timeout(w, O.timeout);
    if (O.ssl)
        gearman_worker_add_options(w, GEARMAN_WORKER_SSL);
    return w;
}

/* ---------------------------------------------------------------- client scenarios */

static int cmd_do(const char *func, const char *arg)
{
    gearman_client_st *c = client_new();
    size_t n, rsize = 0;
    char *data = payload(arg, &n);
    gearman_return_t rc;
    char *r;
    if (strcmp(O.priority, "high") == 0)
        r = gearman_client_do_high(c, func, O.unique, data, n, &rsize, &rc);
    else if (strcmp(O.priority, "low") == 0)
        r = gearman_client_do_low(c, func, O.unique, data, n, &rsize, &rc);
    else
        r = gearman_client_do(c, func, O.unique, data, n, &rsize, &rc);
    printf("rc=%s\n", gearman_strerror(rc));
    printf("handle=%s\n", gearman_client_do_job_handle(c));
    uint32_t num, den;
    gearman_client_do_status(c, &num, &den);
    printf("status=%u/%u\n", num, den);
    printf("result_size=%zu\n", rsize);
    printf("reversed=%d\n", r != NULL && is_reverse(data, n, r, rsize));
    if (O.size < 0)
        print_bytes("result", r != NULL ? r : "", rsize);
    if (gearman_failed(rc))
        printf("error=%s\n", gearman_client_error(c) ? gearman_client_error(c) : "");
    free(r);
    free(data);
    gearman_client_free(c);
    return 0;
}

static int cmd_bg(const char *func, const char *arg)
{
    gearman_client_st *c = client_new();
    size_t n;
    char *data = payload(arg, &n);
    gearman_job_handle_t h = "";
    gearman_return_t rc;
    if (strcmp(O.priority, "high") == 0)
        rc = gearman_client_do_high_background(c, func, O.unique, data, n, h);
    else if (strcmp(O.priority, "low") == 0)
        rc = gearman_client_do_low_background(c, func, O.unique, data, n, h);
    else
        rc = gearman_client_do_background(c, func, O.unique, data, n, h);
    printf("rc=%s\nhandle=%s\n", gearman_strerror(rc), rc == GEARMAN_SUCCESS ? h : "");
    if (gearman_failed(rc))
        printf("error=%s\n", gearman_client_error(c) ? gearman_client_error(c) : "");
    free(data);
    gearman_client_free(c);
    return 0;
}

static int cmd_status(const char *handle)
{
    gearman_client_st *c = client_new();
    bool known = false, running = false;
    uint32_t num = 0, den = 0;
    gearman_return_t rc = gearman_client_job_status(c, handle, &known, &running, &num, &den);
    printf("rc=%s\nknown=%d\nrunning=%d\nstatus=%u/%u\n", gearman_strerror(rc), known, running,
           num, den);
    rc = gearman_client_job_status(c, handle, NULL, NULL, NULL, NULL);
    printf("rc_summary=%s\n", gearman_strerror(rc));
    gearman_client_free(c);
    return 0;
}

static int cmd_echo(const char *arg, int worker)
{
    size_t n;
    char *data = payload(arg, &n);
    gearman_return_t rc;
    if (worker) {
        gearman_worker_st *w = worker_new();
        rc = gearman_worker_echo(w, data, n);
        if (gearman_failed(rc))
            printf("error=%s\n", gearman_worker_error(w) ? gearman_worker_error(w) : "");
        gearman_worker_free(w);
    } else {
        gearman_client_st *c = client_new();
        rc = gearman_client_echo(c, data, n);
        if (gearman_failed(rc))
            printf("error=%s\n", gearman_client_error(c) ? gearman_client_error(c) : "");
        gearman_client_free(c);
    }
    printf("rc=%s\n", gearman_strerror(rc));
    free(data);
    return 0;
}

/* struct tally counts callbacks over a run of tasks. */
struct tally {
    int created, data, warning, status, complete, exception, fail;
    int wrong;       /* completes whose result was not the reversed workload */
    size_t bytes;    /* data bytes seen in data callbacks */
};
static struct tally T;

/* struct task_ctx remembers one task's workload to check its result. */
struct task_ctx {
    char payload[64]; /* workload sent */
    char got[128];    /* bytes received via WORK_DATA */
    size_t got_len;   /* bytes in got */
};

static gearman_return_t on_created(gearman_task_st *t)
{
    T.created += gearman_task_job_handle(t)[0] != '\0';
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_data(gearman_task_st *t)
{
    struct task_ctx *ctx = gearman_task_context(t);
    size_t n = gearman_task_data_size(t);
    T.data++;
    T.bytes += n;
    if (ctx != NULL && ctx->got_len + n < sizeof ctx->got) {
        memcpy(ctx->got + ctx->got_len, gearman_task_data(t), n);
        ctx->got_len += n;
    }
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_warning(gearman_task_st *t)
{
    (void)t;
    T.warning++;
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_status(gearman_task_st *t)
{
    T.status += gearman_task_denominator(t) > 0 || gearman_task_is_known(t) ||
                !gearman_task_is_known(t);
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_complete(gearman_task_st *t)
{
    struct task_ctx *ctx = gearman_task_context(t);
    T.complete++;
    if (ctx != NULL) {
        const char *d = gearman_task_data(t);
        size_t n = gearman_task_data_size(t);
        if (n > 0 && ctx->got_len + n < sizeof ctx->got) {
            memcpy(ctx->got + ctx->got_len, d, n);
            ctx->got_len += n;
        }
        if (!is_reverse(ctx->payload, strlen(ctx->payload), ctx->got, ctx->got_len))
            T.wrong++;
    }
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_exception(gearman_task_st *t)
{
    T.exception++;
    print_bytes("exception_data", gearman_task_data(t), gearman_task_data_size(t));
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_fail(gearman_task_st *t)
{
    (void)t;
    T.fail++;
    return GEARMAN_SUCCESS;
}

/* set_callbacks installs the counting callbacks. */
static void set_callbacks(gearman_client_st *c)
{
    gearman_client_set_created_fn(c, on_created);
    gearman_client_set_data_fn(c, on_data);
    gearman_client_set_warning_fn(c, on_warning);
    gearman_client_set_status_fn(c, on_status);
    gearman_client_set_complete_fn(c, on_complete);
    gearman_client_set_exception_fn(c, on_exception);
    gearman_client_set_fail_fn(c, on_fail);
}

/* print_tally prints the callback counts. */
static void print_tally(void)
{
    printf("created=%d\ndata=%d\nwarning=%d\nstatus=%d\ncomplete=%d\nexception=%d\nfail=%d\n"
           "wrong=%d\n",
           T.created, T.data, T.warning, T.status, T.complete, T.exception, T.fail, T.wrong);
}

static int cmd_tasks(const char *func, long n, int background)
{
    gearman_client_st *c = client_new();
    set_callbacks(c);
    struct task_ctx *ctx = calloc((size_t)n, sizeof *ctx);
    gearman_task_st **tasks = calloc((size_t)n, sizeof *tasks);
    if (ctx == NULL || tasks == NULL)
        return 3;
    int added = 0;
    for (long i = 0; i < n; i++) {
        snprintf(ctx[i].payload, sizeof ctx[i].payload, "task-%ld-payload", i);
        gearman_return_t rc;
        const char *p = ctx[i].payload;
        size_t len = strlen(p);
        switch (i % 3) {
        case 0:
            tasks[i] = background
                           ? gearman_client_add_task_background(c, NULL, &ctx[i], func, NULL, p, len, &rc)
                           : gearman_client_add_task(c, NULL, &ctx[i], func, NULL, p, len, &rc);
            break;
        case 1:
            tasks[i] = background ? gearman_client_add_task_high_background(c, NULL, &ctx[i], func,
                                                                            NULL, p, len, &rc)
                                  : gearman_client_add_task_high(c, NULL, &ctx[i], func, NULL, p,
                                                                 len, &rc);
            break;
        default:
            tasks[i] = background ? gearman_client_add_task_low_background(c, NULL, &ctx[i], func,
                                                                           NULL, p, len, &rc)
                                  : gearman_client_add_task_low(c, NULL, &ctx[i], func, NULL, p,
                                                                len, &rc);
            break;
        }
        added += rc == GEARMAN_SUCCESS && tasks[i] != NULL;
    }
    printf("added=%d\n", added);
    printf("has_tasks=%d\n", gearman_client_has_tasks(c));
    if (O.non_blocking)
        gearman_client_add_options(c, GEARMAN_CLIENT_NON_BLOCKING);
    gearman_return_t rc = gearman_client_run_tasks(c);
    int io_waits = 0;
    while (O.non_blocking && rc == GEARMAN_IO_WAIT && io_waits < 100000) {
        io_waits++;
        rc = gearman_client_wait(c);
        if (rc == GEARMAN_SUCCESS)
            rc = gearman_client_run_tasks(c);
    }
    printf("io_waits=%d\n", io_waits);
    printf("rc=%s\n", gearman_strerror(rc));
    print_tally();
    int ok = 0, handles = 0;
    for (long i = 0; i < n; i++) {
        ok += gearman_task_return(tasks[i]) == GEARMAN_SUCCESS;
        handles += gearman_task_job_handle(tasks[i])[0] != '\0';
    }
    printf("task_success=%d\nhandles=%d\n", ok, handles);
    printf("active=%d\n", gearman_client_has_active_tasks(c));
    if (background && n > 0)
        printf("first_handle=%s\n", gearman_task_job_handle(tasks[0]));
    for (long i = 0; i < n; i++)
        gearman_task_free(tasks[i]);
    printf("has_tasks_after_free=%d\n", gearman_client_has_tasks(c));
    free(tasks);
    free(ctx);
    gearman_client_free(c);
    return 0;
}

static int cmd_taskstatus(const char *handle)
{
    gearman_client_st *c = client_new();
    set_callbacks(c);
    gearman_return_t rc;
    gearman_task_st *t = gearman_client_add_task_status(c, NULL, NULL, handle, &rc);
    printf("add_rc=%s\n", gearman_strerror(rc));
    rc = gearman_client_run_tasks(c);
    printf("rc=%s\nknown=%d\nrunning=%d\nstatus=%u/%u\ncallbacks=%d\n", gearman_strerror(rc),
           gearman_task_is_known(t), gearman_task_is_running(t), gearman_task_numerator(t),
           gearman_task_denominator(t), T.status);
    gearman_client_free(c); /* frees the task too */
    return 0;
}

static int cmd_execute(const char *func, const char *arg)
{
    gearman_client_st *c = client_new();
    size_t n;
    char *data = payload(arg, &n);
    gearman_job_priority_t prio = strcmp(O.priority, "high") == 0  ? GEARMAN_JOB_PRIORITY_HIGH
                                  : strcmp(O.priority, "low") == 0 ? GEARMAN_JOB_PRIORITY_LOW
                                                                   : GEARMAN_JOB_PRIORITY_NORMAL;
    gearman_task_attr_t attr = O.epoch >= 0 ? gearman_task_attr_init_epoch(time(NULL) + O.epoch, prio)
                               : O.background ? gearman_task_attr_init_background(prio)
                                              : gearman_task_attr_init(prio);
    gearman_argument_t value = gearman_argument_make(NULL, 0, data, n);
    gearman_task_st *t = gearman_execute(c, func, strlen(func), O.unique,
                                         O.unique ? strlen(O.unique) : 0, &attr, &value, NULL);
    if (t == NULL) {
        printf("task=null\nerror=%s\n", gearman_client_error(c) ? gearman_client_error(c) : "");
    } else {
        printf("rc=%s\nhandle=%s\n", gearman_strerror(gearman_task_return(t)),
               gearman_task_job_handle(t));
        gearman_result_st *r = gearman_task_result(t);
        if (r != NULL)
            print_bytes("result", gearman_result_value(r), gearman_result_size(r));
        gearman_task_free(t);
    }
    free(data);
    gearman_client_free(c);
    return 0;
}

/* ---------------------------------------------------------------- worker scenarios */

/* job_reverse returns the reversed workload, or NULL for an empty one. */
static char *job_reverse(gearman_job_st *job, size_t *n)
{
    const char *in = gearman_job_workload(job);
    *n = gearman_job_workload_size(job);
    if (*n == 0)
        return NULL;
    char *out = malloc(*n);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < *n; i++)
        out[i] = in[*n - 1 - i];
    return out;
}

static void *work_v1(gearman_job_st *job, void *context, size_t *result_size,
                     gearman_return_t *ret_ptr)
{
    const char *mode = context;
    *ret_ptr = GEARMAN_SUCCESS;
    if (strcmp(mode, "fail") == 0) {
        *ret_ptr = GEARMAN_WORK_FAIL;
        return NULL;
    }
    if (strcmp(mode, "exception") == 0) {
        gearman_job_send_exception(job, "boom", 4);
        *ret_ptr = GEARMAN_WORK_EXCEPTION;
        return NULL;
    }
    if (strcmp(mode, "hang") == 0) {
        /* One WORK_STATUS 0/1, then silence; the test kills us (or we give up after 60 s). */
        gearman_job_send_status(job, 0, 1);
        for (int i = 0; i < 600; i++)
            usleep(100 * 1000);
        exit(0);
    }
    if (strcmp(mode, "die") == 0) {
        fflush(stdout);
        _exit(0);
    }
    if (strcmp(mode, "chatty") == 0) {
        size_t n;
        char *out = job_reverse(job, &n);
        gearman_job_send_warning(job, "careful", 7);
        gearman_job_send_status(job, 1, 2);
        if (n > 1)
            gearman_job_send_data(job, out, n / 2);
        gearman_job_send_status(job, 2, 2);
        /* the rest goes with WORK_COMPLETE */
        char *rest = NULL;
        *result_size = n - n / 2;
        if (*result_size > 0) {
            rest = malloc(*result_size);
            if (rest != NULL)
                memcpy(rest, out + n / 2, *result_size);
        }
        free(out);
        return rest;
    }
    if (strcmp(mode, "shutdown") == 0) {
        *ret_ptr = GEARMAN_SHUTDOWN;
        return job_reverse(job, result_size);
    }
    if (strcmp(mode, "nullresult") == 0) {
        *result_size = 0;
        return NULL;
    }
    return job_reverse(job, result_size);
}

static gearman_return_t work_v2(gearman_job_st *job, void *context)
{
    (void)context;
    size_t n;
    char *out = job_reverse(job, &n);
    gearman_return_t rc = gearman_job_send_complete(job, out, n);
    free(out);
    return gearman_success(rc) ? GEARMAN_SUCCESS : GEARMAN_FATAL;
}

static int cmd_worker(const char *func)
{
    gearman_worker_st *w = worker_new();
    if (O.identifier != NULL)
        gearman_worker_set_identifier(w, O.identifier, strlen(O.identifier));
    gearman_return_t rc;
    if (strcmp(O.mode, "v2") == 0)
        rc = gearman_worker_define_function(w, func, strlen(func), gearman_function_create(work_v2),
                                            O.can_do_timeout, NULL);
    else
        rc = gearman_worker_add_function(w, func, O.can_do_timeout, work_v1, (void *)O.mode);
    if (gearman_failed(rc)) {
        printf("rc=%s\n", gearman_strerror(rc));
        return 1;
    }
    long done = 0;
    for (;;) {
        rc = gearman_worker_work(w);
        if (rc == GEARMAN_SUCCESS || rc == GEARMAN_WORK_FAIL || rc == GEARMAN_WORK_EXCEPTION)
            done++;
        if (rc == GEARMAN_TIMEOUT && O.count >= 0)
            continue; /* -t with -c: re-grab until the count is reached */
        bool job_failed = rc == GEARMAN_WORK_FAIL || rc == GEARMAN_WORK_EXCEPTION;
        if ((rc != GEARMAN_SUCCESS && !job_failed) || (O.count >= 0 && done >= O.count))
            break;
    }
    printf("rc=%s\ndone=%ld\n", gearman_strerror(rc), done);
    gearman_worker_free(w);
    return 0;
}

static int cmd_grab(int nfuncs, char **funcs)
{
    gearman_worker_st *w = worker_new();
    if (O.non_blocking)
        gearman_worker_add_options(w, GEARMAN_WORKER_NON_BLOCKING);
    if (O.identifier != NULL)
        gearman_worker_set_identifier(w, O.identifier, strlen(O.identifier));
    for (int i = 0; i < nfuncs; i++)
        gearman_worker_register(w, funcs[i], 0);
    gearman_return_t rc;
    gearman_job_st *job = gearman_worker_grab_job(w, NULL, &rc);
    printf("rc=%s\n", gearman_strerror(rc));
    if (job != NULL) {
        printf("handle=%s\nfunction=%s\nunique=%s\n", gearman_job_handle(job),
               gearman_job_function_name(job), gearman_job_unique(job));
        print_bytes("workload", gearman_job_workload(job), gearman_job_workload_size(job));
        size_t n;
        char *out = job_reverse(job, &n);
        printf("complete_rc=%s\n", gearman_strerror(gearman_job_send_complete(job, out, n)));
        printf("again_rc=%s\n", gearman_strerror(gearman_job_send_fail(job)));
        free(out);
        gearman_job_free(job);
    }
    gearman_worker_free(w);
    return 0;
}

static int cmd_register(int argc, char **argv)
{
    gearman_worker_st *w = gearman_worker_create(NULL);
    gearman_worker_add_servers(w, O.servers);
    if (O.identifier != NULL)
        gearman_worker_set_identifier(w, O.identifier, strlen(O.identifier));
    for (int i = 0; i < argc; i++)
        printf("register_%s=%s\n", argv[i],
               gearman_strerror(gearman_worker_register(w, argv[i], O.can_do_timeout)));
    printf("exist=%d\n", gearman_worker_function_exist(w, argv[0], strlen(argv[0])));
    /* connect and announce: an echo makes the worker connect */
    printf("echo_rc=%s\n", gearman_strerror(gearman_worker_echo(w, "x", 1)));
    printf("unregister_rc=%s\n", gearman_strerror(gearman_worker_unregister(w, argv[0])));
    printf("unregister_again_rc=%s\n", gearman_strerror(gearman_worker_unregister(w, argv[0])));
    printf("exist_after=%d\n", gearman_worker_function_exist(w, argv[0], strlen(argv[0])));
    printf("echo2_rc=%s\n", gearman_strerror(gearman_worker_echo(w, "y", 1)));
    /* the caller inspects the server's "workers" list here */
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (fgets(line, sizeof line, stdin) == NULL)
        line[0] = '\0';
    printf("unregister_all_rc=%s\n", gearman_strerror(gearman_worker_unregister_all(w)));
    printf("unregister_all_again_rc=%s\n", gearman_strerror(gearman_worker_unregister_all(w)));
    printf("echo3_rc=%s\n", gearman_strerror(gearman_worker_echo(w, "z", 1)));
    printf("ready2\n");
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL)
        line[0] = '\0';
    gearman_worker_free(w);
    return 0;
}

/* ---------------------------------------------------------------- no server */

static int failures;

/* check prints and counts a failed expectation. */
static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

static int cmd_selftest(void)
{
    check(GEARMAN_SUCCESS == 0 && GEARMAN_IO_WAIT == 1 && GEARMAN_LOST_CONNECTION == 14 &&
              GEARMAN_WORK_FAIL == 24 && GEARMAN_COULD_NOT_CONNECT == 26 && GEARMAN_TIMEOUT == 47 &&
              GEARMAN_JOB_NOT_FOUND == 52 && GEARMAN_MAX_RETURN == 53 &&
              GEARMAN_FATAL == GEARMAN_WORK_FAIL && GEARMAN_ERROR == GEARMAN_WORK_ERROR,
          "gearman_return_t values");
    check(strcmp(gearman_strerror(GEARMAN_TIMEOUT), "GEARMAN_TIMEOUT") == 0, "strerror TIMEOUT");
    check(strcmp(gearman_strerror(GEARMAN_SUCCESS), "GEARMAN_SUCCESS") == 0, "strerror SUCCESS");
    check(strcmp(gearman_strerror(GEARMAN_MAX_RETURN), "GEARMAN_MAX_RETURN") == 0, "strerror MAX");
    check(gearman_success(GEARMAN_SUCCESS) && !gearman_success(GEARMAN_TIMEOUT), "success");
    check(gearman_failed(GEARMAN_TIMEOUT) && !gearman_failed(GEARMAN_SUCCESS), "failed");
    check(gearman_continue(GEARMAN_IO_WAIT) && gearman_continue(GEARMAN_IN_PROGRESS) &&
              gearman_continue(GEARMAN_JOB_EXISTS) && !gearman_continue(GEARMAN_SUCCESS),
          "continue");
    check(strcmp(gearman_verbose_name(GEARMAN_VERBOSE_ERROR), "ERROR") == 0, "verbose_name");
    check(strcmp(gearman_verbose_name(GEARMAN_VERBOSE_MAX), "UNKNOWN") == 0, "verbose_name max");
    check(gearman_version() != NULL && gearman_version()[0] != '\0', "version");

    gearman_client_st stack;
    gearman_client_st *c = gearman_client_create(&stack);
    check(c == &stack, "client create on stack");
    int ctx = 7;
    gearman_client_set_context(c, &ctx);
    check(gearman_client_context(c) == &ctx, "client context");
    gearman_client_set_timeout(c, 1234);
    check(gearman_client_timeout(c) == 1234, "client timeout");
    gearman_client_add_options(c, GEARMAN_CLIENT_NON_BLOCKING);
    check(gearman_client_has_option(c, GEARMAN_CLIENT_NON_BLOCKING), "non-blocking set");
    gearman_client_remove_options(c, GEARMAN_CLIENT_NON_BLOCKING);
    check(!gearman_client_has_option(c, GEARMAN_CLIENT_NON_BLOCKING), "non-blocking cleared");
    gearman_client_set_options(c, GEARMAN_CLIENT_FREE_TASKS);
    check(gearman_client_has_option(c, GEARMAN_CLIENT_FREE_TASKS), "free tasks set");
    gearman_client_st *clone = gearman_client_clone(NULL, c);
    check(clone != NULL && gearman_client_timeout(clone) == 1234, "clone keeps the timeout");
    check(clone != NULL && gearman_client_has_option(clone, GEARMAN_CLIENT_FREE_TASKS),
          "clone keeps options");
    gearman_client_free(clone);
    gearman_return_t rc;
    gearman_task_st *t = gearman_client_add_task(c, NULL, NULL, "f", NULL, "w", 1, &rc);
    check(t != NULL && rc == GEARMAN_SUCCESS, "add_task");
    check(strcmp(gearman_task_function_name(t), "f") == 0, "task function name");
    check(gearman_task_return(t) == GEARMAN_UNKNOWN_STATE, "new task state");
    check(gearman_client_has_tasks(c), "has tasks");
    rc = gearman_client_run_tasks(c);
    check(rc == GEARMAN_NO_SERVERS, "run_tasks without servers");
    gearman_client_free(c);

    gearman_client_st *c2 = gearman_client_create(NULL);
    size_t sz;
    void *r = gearman_client_do(c2, "f", NULL, "x", 1, &sz, &rc);
    check(r == NULL && rc == GEARMAN_NO_SERVERS, "do without servers");
    check(gearman_client_error(c2) != NULL, "error text");
    gearman_client_free(c2);

    gearman_worker_st *w = gearman_worker_create(NULL);
    check(gearman_worker_unregister_all(w) == GEARMAN_NO_REGISTERED_FUNCTIONS, "unregister_all none");
    check(gearman_worker_unregister(w, "nope") == GEARMAN_NO_REGISTERED_FUNCTION, "unregister none");
    gearman_worker_set_timeout(w, 10);
    check(gearman_worker_timeout(w) == 10, "worker timeout");
    check(gearman_worker_options(w) & GEARMAN_WORKER_TIMEOUT_RETURN, "timeout return set");
    gearman_worker_set_context(w, &ctx);
    check(gearman_worker_context(w) == &ctx, "worker context");
    gearman_job_st *job = gearman_worker_grab_job(w, NULL, &rc);
    check(job == NULL && rc == GEARMAN_NO_SERVERS, "grab without servers");
    gearman_worker_free(w);

    gearman_task_attr_t a = gearman_task_attr_init_epoch(12345, GEARMAN_JOB_PRIORITY_HIGH);
    check(a.kind == GEARMAN_TASK_ATTR_EPOCH && a.options.epoch.value == 12345, "attr epoch");
    gearman_argument_t arg = gearman_argument_make(NULL, 0, "abc", 3);
    check(arg.value.size == 3 && arg.value.c_str[0] == 'a', "argument_make");
    printf("failures=%d\n", failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "s:t:P:u:z:c:m:e:bxni:T:SF:")) != -1) {
        switch (c) {
        case 's': O.servers = optarg; break;
        case 't': O.timeout = atoi(optarg); break;
        case 'P': O.priority = optarg; break;
        case 'u': O.unique = optarg; break;
        case 'z': O.size = atol(optarg); break;
        case 'c': O.count = atol(optarg); break;
        case 'm': O.mode = optarg; break;
        case 'e': O.epoch = atol(optarg); break;
        case 'b': O.background = 1; break;
        case 'x': O.exceptions = 1; break;
        case 'n': O.non_blocking = 1; break;
        case 'i': O.identifier = optarg; break;
        case 'T': O.can_do_timeout = (uint32_t)atol(optarg); break;
        case 'S': O.ssl = 1; break;
        case 'F': O.ssl_files = optarg; break;
        default: return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int n = argc - optind;
    char **a = argv + optind;
    const char *arg1 = n > 1 ? a[1] : "";
    const char *arg2 = n > 2 ? a[2] : "";
    if (n < 1)
        return 2;
    if (strcmp(a[0], "do") == 0)
        return cmd_do(arg1, arg2);
    if (strcmp(a[0], "bg") == 0)
        return cmd_bg(arg1, arg2);
    if (strcmp(a[0], "status") == 0)
        return cmd_status(arg1);
    if (strcmp(a[0], "echo") == 0)
        return cmd_echo(arg1, 0);
    if (strcmp(a[0], "wecho") == 0)
        return cmd_echo(arg1, 1);
    if (strcmp(a[0], "tasks") == 0)
        return cmd_tasks(arg1, atol(arg2), 0);
    if (strcmp(a[0], "bgtasks") == 0)
        return cmd_tasks(arg1, atol(arg2), 1);
    if (strcmp(a[0], "taskstatus") == 0)
        return cmd_taskstatus(arg1);
    if (strcmp(a[0], "execute") == 0)
        return cmd_execute(arg1, arg2);
    if (strcmp(a[0], "worker") == 0)
        return cmd_worker(arg1);
    if (strcmp(a[0], "grab") == 0 && n > 1)
        return cmd_grab(n - 1, a + 1);
    if (strcmp(a[0], "register") == 0 && n > 1)
        return cmd_register(n - 1, a + 1);
    if (strcmp(a[0], "selftest") == 0)
        return cmd_selftest();
    return 2;
}
