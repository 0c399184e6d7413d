/* SPDX-License-Identifier: BSD-3-Clause */
/* spur: submit jobs to a Gearman job server, or run a command as a worker.
 * The common cases of gearman(1) from gearman-tools, built on libgearman-compat.
 *
 * Client mode: spur [-h host] [-p port] [-t ms] -f FUNC [-f FUNC...] [-b] [-I|-L] [-u unique]
 *                   [-s] [-n|-N] [-P] [-v] [--timeout MS] [--ttl S] [DATA...]
 *   Each DATA argument is one job per function; without DATA the job's workload is standard
 *   input (-s: empty; -n: one job per line; -N: the same without the newline). Results
 *   (WORK_DATA and WORK_COMPLETE) go to standard output, warnings and exceptions to standard
 *   error, status as "N% Complete". -b submits in the background (-v prints the handles).
 *   --timeout and --ttl give each job a timeout and a time to live (the options job-timeout
 *   and job-ttl, docs/JOB-LIFETIME.md: Spur only; gearmand refuses them).
 *   Exit status: 0 if every job succeeded, 1 otherwise, 2 for a usage error.
 *   -h /PATH connects to a unix-domain socket (spurd --unix=PATH). spur --version prints the
 *   version.
 * Worker mode: spur -w [-h host] [-p port] -f FUNC [-f FUNC...] [-c count] [-n|-N] [-i id]
 *                   [--] [COMMAND [ARGS...]]
 *   For each job COMMAND runs with the workload on its standard input; its standard output is
 *   the result (-n/-N: each line is sent as WORK_DATA as it appears). A non-zero exit fails the
 *   job. Without COMMAND the workload is printed and sent back unchanged. -c stops after count
 *   jobs. */
#include <libgearman/gearman.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FUNCTIONS 64

/* struct args is the parsed command line. */
struct args {
    const char *host;                     /* -h */
    in_port_t port;                       /* -p */
    int timeout;                          /* -t, -1 unset */
    const char *functions[MAX_FUNCTIONS]; /* -f, in order */
    int nfunctions;                       /* count of -f */
    int background;                       /* -b */
    int priority;                         /* -I: 1, -L: -1, else 0 */
    const char *unique;                   /* -u */
    int no_input;                         /* -s */
    int per_line;                         /* -n or -N */
    int strip_newline;                    /* -N */
    int prefix;                           /* -P */
    int verbose;                          /* -v */
    int worker;                           /* -w */
    long count;                           /* -c, -1: forever */
    const char *identifier;               /* -i */
    int ssl;                              /* -S: TLS (files from the environment) */
    long job_timeout;                     /* --timeout: each job's timeout in ms, -1 unset */
    long job_ttl;                         /* --ttl: each job's time to live in s, -1 unset */
    char **command;                       /* worker command and its arguments, or NULL */
};

static struct args A = {.host = "localhost", .port = 0, .timeout = -1, .count = -1,
                        .job_timeout = -1, .job_ttl = -1};
static int job_failures;

/* usage prints the help text to stream. */
static void usage(FILE *stream)
{
    fprintf(stream,
            "Client mode: spur [options] [<data>...]\n"
            "Worker mode: spur -w [options] [<command> [<args> ...]]\n"
            "\nCommon options:\n"
            "\t-f <function> - Function name to use for jobs (can give many)\n"
            "\t-h <host>     - Job server host (default localhost; /PATH: a unix socket)\n"
            "\t-p <port>     - Job server port (default 4730)\n"
            "\t-t <timeout>  - Timeout in milliseconds\n"
            "\t-v            - Print diagnostic information\n"
            "\t-S            - Enable SSL connections (files: $GEARMAND_CA_CERTIFICATE,\n"
            "\t                $GEARMAN_CLIENT_PEM, $GEARMAN_CLIENT_KEY)\n"
            "\t-H            - Print this help\n"
            "\t--version     - Print spur's version and exit\n"
            "\nClient options:\n"
            "\t-b            - Run jobs in the background\n"
            "\t-I            - Run jobs as high priority\n"
            "\t-L            - Run jobs as low priority\n"
            "\t-n            - Run one job per line\n"
            "\t-N            - Same as -n, but strip off the newline\n"
            "\t-P            - Prefix all output lines with functions names\n"
            "\t-s            - Send job without reading from standard input\n"
            "\t-u <unique>   - Unique key to use for job\n"
            "\t--timeout <ms> - Spur: fail each job this long after a worker starts it\n"
            "\t--ttl <s>     - Spur: expire each job no worker started within this time\n"
            "\nWorker options:\n"
            "\t-c <count>    - Number of jobs for worker to run before exiting\n"
            "\t-i <id>       - Worker identifier (SET_CLIENT_ID)\n"
            "\t-n            - Send a data packet for each line\n"
            "\t-N            - Same as -n, but strip off the newline\n"
            "\t-w            - Run in worker mode\n");
}

/* read_all reads fd to its end into a malloc()ed buffer. Returns it (NUL-terminated) or NULL. */
static char *read_all(int fd, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    if (buf == NULL)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *p = realloc(buf, cap * 2 + 1);
            if (p == NULL) {
                free(buf);
                return NULL;
            }
            buf = p;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* write_all writes n bytes to fd. Returns 0 or -1. */
static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* report prints a connection error from libgearman-compat, and what to check when the cause is
 * a likely one (a TLS port spoken to in plain text, a missing client certificate, no server). */
static void report(const char *err)
{
    if (err == NULL)
        err = "failed";
    const char *hint = "";
    if (strstr(err, "certificate required") != NULL)
        hint = " (the server requires a client certificate: $GEARMAN_CLIENT_PEM and "
               "$GEARMAN_CLIENT_KEY)";
    else if (!A.ssl && (strstr(err, "Connection reset by peer") != NULL ||
                        strstr(err, "closed the connection") != NULL))
        hint = " (is this a TLS port? use -S)";
    else if (A.ssl && (getenv("GEARMAN_CLIENT_PEM") == NULL ||
                       getenv("GEARMAN_CLIENT_PEM")[0] == '\0') &&
             (strstr(err, "Connection reset by peer") != NULL ||
              strstr(err, "closed the connection") != NULL))
        hint = " (does the server require a client certificate? $GEARMAN_CLIENT_PEM and "
               "$GEARMAN_CLIENT_KEY)";
    else if (A.ssl && strstr(err, "wrong version number") != NULL)
        hint = " (is this a plain, not a TLS, port? drop -S)";
    else if (strstr(err, "Connection refused") != NULL ||
             strstr(err, "No such file or directory") != NULL)
        hint = " (is the server running and listening there? see -h and -p)";
    fprintf(stderr, "spur: %s%s\n", err, hint);
}

/* ---------------------------------------------------------------- client mode */

/* prefix prints "function: " before output when -P is set. */
static void prefix(FILE *stream, gearman_task_st *task)
{
    if (A.prefix)
        fprintf(stream, "%s: ", gearman_task_function_name(task));
}

static gearman_return_t on_created(gearman_task_st *task)
{
    if (A.verbose)
        printf("Task created: %s\n", gearman_task_job_handle(task));
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_data(gearman_task_st *task)
{
    if (gearman_task_data_size(task) == 0)
        return GEARMAN_SUCCESS;
    prefix(stdout, task);
    fflush(stdout);
    if (write_all(STDOUT_FILENO, gearman_task_data(task), gearman_task_data_size(task)) != 0)
        return GEARMAN_ERRNO;
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_warning(gearman_task_st *task)
{
    prefix(stderr, task);
    fflush(stderr);
    if (write_all(STDERR_FILENO, gearman_task_data(task), gearman_task_data_size(task)) != 0)
        return GEARMAN_ERRNO;
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_status(gearman_task_st *task)
{
    uint32_t den = gearman_task_denominator(task);
    prefix(stdout, task);
    printf("%u%% Complete\n", den ? (unsigned)((uint64_t)gearman_task_numerator(task) * 100 / den) : 0);
    fflush(stdout);
    return GEARMAN_SUCCESS;
}

static gearman_return_t on_exception(gearman_task_st *task)
{
    job_failures++;
    return on_warning(task);
}

static gearman_return_t on_fail(gearman_task_st *task)
{
    job_failures++;
    prefix(stderr, task);
    fprintf(stderr, "Job failed\n");
    return GEARMAN_SUCCESS;
}

/* add_jobs adds one task per function for one workload. Returns 0 or -1. */
static int add_jobs(gearman_client_st *client, const char *workload, size_t size)
{
    for (int i = 0; i < A.nfunctions; i++) {
        gearman_return_t rc;
        const char *f = A.functions[i];
        gearman_task_st *t;
        if (A.background) {
            if (A.priority > 0)
                t = gearman_client_add_task_high_background(client, NULL, NULL, f, A.unique,
                                                            workload, size, &rc);
            else if (A.priority < 0)
                t = gearman_client_add_task_low_background(client, NULL, NULL, f, A.unique,
                                                           workload, size, &rc);
            else
                t = gearman_client_add_task_background(client, NULL, NULL, f, A.unique, workload,
                                                       size, &rc);
        } else {
            if (A.priority > 0)
                t = gearman_client_add_task_high(client, NULL, NULL, f, A.unique, workload, size,
                                                 &rc);
            else if (A.priority < 0)
                t = gearman_client_add_task_low(client, NULL, NULL, f, A.unique, workload, size,
                                                &rc);
            else
                t = gearman_client_add_task(client, NULL, NULL, f, A.unique, workload, size, &rc);
        }
        if (t == NULL) {
            report(gearman_client_error(client));
            return -1;
        }
    }
    return 0;
}

/* run_jobs runs the queued tasks and counts those that did not succeed. Returns 0 or -1. */
static int run_jobs(gearman_client_st *client)
{
    gearman_return_t rc = gearman_client_run_tasks(client);
    if (gearman_failed(rc)) {
        const char *err = gearman_client_error(client);
        report(err != NULL ? err : gearman_strerror(rc));
        return -1;
    }
    return 0;
}

static int client_main(int argc, char **argv)
{
    gearman_client_st *client = gearman_client_create(NULL);
    if (client == NULL) {
        fprintf(stderr, "spur: out of memory\n");
        return 1;
    }
    int status = 0;
    if (gearman_failed(gearman_client_add_server(client, A.host, A.port))) {
        report(gearman_client_error(client));
        gearman_client_free(client);
        return 1;
    }
    if (A.timeout >= 0)
        gearman_client_set_timeout(client, A.timeout);
    for (int i = 0; i < 2; i++) { /* --timeout, --ttl: options of the connection */
        long v = i == 0 ? A.job_timeout : A.job_ttl;
        char opt[48];
        int n = snprintf(opt, sizeof opt, "job-%s=%ld", i == 0 ? "timeout" : "ttl", v);
        if (v >= 0 && !gearman_client_set_server_option(client, opt, (size_t)n)) {
            fprintf(stderr, "spur: out of memory\n");
            gearman_client_free(client);
            return 1;
        }
    }
    if (A.ssl)
        gearman_client_add_options(client, GEARMAN_CLIENT_SSL);
    gearman_client_add_options(client, GEARMAN_CLIENT_FREE_TASKS);
    gearman_client_set_created_fn(client, on_created);
    gearman_client_set_data_fn(client, on_data);
    gearman_client_set_warning_fn(client, on_warning);
    gearman_client_set_status_fn(client, on_status);
    gearman_client_set_complete_fn(client, on_data);
    gearman_client_set_exception_fn(client, on_exception);
    gearman_client_set_fail_fn(client, on_fail);
    if (argc > 0) {
        for (int i = 0; i < argc && status == 0; i++) {
            if (add_jobs(client, argv[i], strlen(argv[i])) != 0 || run_jobs(client) != 0)
                status = 1;
        }
    } else if (A.no_input) {
        if (add_jobs(client, NULL, 0) != 0 || run_jobs(client) != 0)
            status = 1;
    } else if (A.per_line) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while (status == 0 && (n = getline(&line, &cap, stdin)) > 0) {
            size_t len = (size_t)n;
            if (A.strip_newline && line[len - 1] == '\n')
                len--;
            if (add_jobs(client, line, len) != 0 || run_jobs(client) != 0)
                status = 1;
        }
        free(line);
    } else {
        size_t len = 0;
        char *data = read_all(STDIN_FILENO, &len);
        if (data == NULL || add_jobs(client, data, len) != 0 || run_jobs(client) != 0)
            status = 1;
        free(data);
    }
    gearman_client_free(client);
    fflush(stdout);
    return status != 0 || job_failures > 0 ? 1 : 0;
}

/* ---------------------------------------------------------------- worker mode */

/* send_lines sends each complete line of buf[0..*len) as WORK_DATA and keeps the rest.
 * Returns 0 or -1. */
static int send_lines(gearman_job_st *job, char *buf, size_t *len, int flush)
{
    size_t start = 0;
    for (size_t i = 0; i < *len; i++) {
        if (buf[i] != '\n')
            continue;
        size_t n = i + 1 - start - (A.strip_newline ? 1 : 0);
        if (gearman_failed(gearman_job_send_data(job, buf + start, n)))
            return -1;
        start = i + 1;
    }
    if (flush && start < *len) {
        if (gearman_failed(gearman_job_send_data(job, buf + start, *len - start)))
            return -1;
        start = *len;
    }
    memmove(buf, buf + start, *len - start);
    *len -= start;
    return 0;
}

/* run_command runs A.command with the workload on its standard input and collects its standard
 * output (or streams it line by line with -n/-N). Returns the output (malloc()ed) and sets *size
 * and *ok (0 when the command failed). */
static char *run_command(gearman_job_st *job, size_t *size, int *ok)
{
    int in[2], out[2];
    *ok = 0;
    *size = 0;
    if (pipe(in) != 0)
        return NULL;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return NULL;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execvp(A.command[0], A.command);
        fprintf(stderr, "spur: cannot run %s: %s\n", A.command[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    const char *w = gearman_job_workload(job);
    size_t wlen = gearman_job_workload_size(job), woff = 0;
    if (wlen == 0) {
        close(in[1]);
        in[1] = -1;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    int failed = buf == NULL;
    /* Feed the workload and drain the output together, so neither pipe can fill up and block. */
    while (!failed) {
        struct pollfd p[2] = {{out[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
        if (poll(p, in[1] >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            failed = 1;
            break;
        }
        if (in[1] >= 0 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t k = write(in[1], w + woff, wlen - woff);
            if (k > 0)
                woff += (size_t)k;
            if (k < 0 || woff == wlen) {
                close(in[1]);
                in[1] = -1;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (n == cap) {
                char *q = realloc(buf, cap * 2 + 1);
                if (q == NULL) {
                    failed = 1;
                    break;
                }
                buf = q;
                cap *= 2;
            }
            ssize_t k = read(out[0], buf + n, cap - n);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            n += (size_t)k;
            if (A.per_line && send_lines(job, buf, &n, 0) != 0)
                failed = 1;
        }
    }
    if (in[1] >= 0)
        close(in[1]);
    close(out[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (!failed && A.per_line && send_lines(job, buf, &n, 1) != 0)
        failed = 1;
    *ok = !failed && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
    *size = n;
    return buf;
}

/* work runs one job: the command's output (or the workload itself) is the result. */
static void *work(gearman_job_st *job, void *context, size_t *result_size,
                  gearman_return_t *ret_ptr)
{
    (void)context;
    *result_size = 0;
    if (A.verbose)
        fprintf(stderr, "spur: job %s for %s (%zu bytes)\n", gearman_job_handle(job),
                gearman_job_function_name(job), gearman_job_workload_size(job));
    if (A.command == NULL) {
        size_t n = gearman_job_workload_size(job);
        char *copy = malloc(n + 1);
        if (copy == NULL) {
            *ret_ptr = GEARMAN_WORK_FAIL;
            return NULL;
        }
        if (n > 0)
            memcpy(copy, gearman_job_workload(job), n);
        write_all(STDOUT_FILENO, copy, n);
        *result_size = n;
        *ret_ptr = GEARMAN_SUCCESS;
        return copy;
    }
    int ok;
    size_t n;
    char *out = run_command(job, &n, &ok);
    if (!ok) {
        free(out);
        *ret_ptr = GEARMAN_WORK_FAIL;
        return NULL;
    }
    *ret_ptr = GEARMAN_SUCCESS;
    *result_size = n;
    return out;
}

static int worker_main(int argc, char **argv)
{
    A.command = argc > 0 ? argv : NULL;
    signal(SIGPIPE, SIG_IGN);
    gearman_worker_st *worker = gearman_worker_create(NULL);
    if (worker == NULL) {
        fprintf(stderr, "spur: out of memory\n");
        return 1;
    }
    int status = 0;
    if (gearman_failed(gearman_worker_add_server(worker, A.host, A.port)))
        goto error;
    if (A.timeout >= 0)
        gearman_worker_set_timeout(worker, A.timeout);
    if (A.ssl)
        gearman_worker_add_options(worker, GEARMAN_WORKER_SSL);
    if (A.identifier != NULL &&
        gearman_failed(gearman_worker_set_identifier(worker, A.identifier, strlen(A.identifier))))
        goto error;
    for (int i = 0; i < A.nfunctions; i++) {
        if (gearman_failed(gearman_worker_add_function(worker, A.functions[i], 0, work, NULL)))
            goto error;
    }
    for (long done = 0; A.count < 0 || done < A.count;) {
        gearman_return_t rc = gearman_worker_work(worker);
        if (rc == GEARMAN_SUCCESS || rc == GEARMAN_WORK_FAIL) {
            done++;
            continue;
        }
        if (rc == GEARMAN_TIMEOUT && A.count < 0)
            continue;
        goto error;
    }
    gearman_worker_free(worker);
    return status;
error:
    report(gearman_worker_error(worker) ? gearman_worker_error(worker) : "worker failed");
    gearman_worker_free(worker);
    return 1;
}

int main(int argc, char **argv)
{
    int c;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("spur (Spur) %s\n", PACKAGE_VERSION);
        return 0;
    }
    static const struct option longopts[] = {
        {"timeout", required_argument, NULL, 'T'},
        {"ttl", required_argument, NULL, 'E'},
        {NULL, 0, NULL, 0},
    };
    while ((c = getopt_long(argc, argv, "+h:p:t:f:bILnNPsu:vwc:i:HS", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': A.host = optarg; break;
        case 'p': A.port = (in_port_t)atoi(optarg); break;
        case 't': A.timeout = atoi(optarg); break;
        case 'f':
            if (A.nfunctions == MAX_FUNCTIONS) {
                fprintf(stderr, "spur: too many functions\n");
                return 2;
            }
            A.functions[A.nfunctions++] = optarg;
            break;
        case 'b': A.background = 1; break;
        case 'I': A.priority = 1; break;
        case 'L': A.priority = -1; break;
        case 'n': A.per_line = 1; break;
        case 'N': A.per_line = 1; A.strip_newline = 1; break;
        case 'P': A.prefix = 1; break;
        case 's': A.no_input = 1; break;
        case 'u': A.unique = optarg; break;
        case 'v': A.verbose = 1; break;
        case 'w': A.worker = 1; break;
        case 'c': A.count = atol(optarg); break;
        case 'i': A.identifier = optarg; break;
        case 'H': usage(stdout); return 0;
        case 'S': A.ssl = 1; break;
        case 'T':
        case 'E': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || v < 0 ||
                v > (c == 'T' ? 4294967295L : 31536000L)) {
                fprintf(stderr, "spur: --%s wants %s\n", c == 'T' ? "timeout" : "ttl",
                        c == 'T' ? "milliseconds (0..4294967295)" : "seconds (0..31536000)");
                return 2;
            }
            if (c == 'T')
                A.job_timeout = v;
            else
                A.job_ttl = v;
            break;
        }
        default: usage(stderr); return 2;
        }
    }
    if (A.nfunctions == 0) {
        fprintf(stderr, "spur: no function given (-f)\n\n");
        usage(stderr);
        return 2;
    }
    if (A.worker)
        return worker_main(argc - optind, argv + optind);
    return client_main(argc - optind, argv + optind);
}
